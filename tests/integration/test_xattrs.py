# SPDX-License-Identifier: MIT
"""-X (extended attributes) and -A (POSIX ACLs), issue 20, between the
namespace hosts: kept on files and directories of a push and a pull, to
an ext4 image made by the test (a loop device) and to tmpfs; compared
with the source by getfattr and getfacl. What the source no longer has is
removed on the next run; a value too large for the destination and a file
system without attributes are said in one line and counted, the files
kept; file capabilities need the setid consent; ACL names are mapped on
the receiving machine (--numeric-ids: the ids as they are); a resumed
file and a file rebuilt by the delta get them too. Needs root (mounts,
trusted. names, namespaces).
"""

import os
import pathlib
import pwd
import shutil
import struct
import subprocess
import tempfile

import pytest

from lrproc import describe
from test_hardlinks import same_bytes
from test_owners import fake_ids, get_elsewhere
from xferutil import (MiB, as_nobody, end_event, env_without_token,
                      json_events, output, push_killed_midway,
                      temp_leftovers)


@pytest.fixture(autouse=True)
def as_root():
    if os.geteuid() != 0:
        pytest.skip("mounts and trusted. attributes need root (run as "
                    "root)")
    for tool in ("getfattr", "setfacl", "getfacl", "mkfs.ext4", "debugfs"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is missing (packages attr, acl, e2fsprogs; "
                        f"scripts/deps.sh installs them)")


def run(*argv):
    res = subprocess.run([str(a) for a in argv], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, describe(res)
    return res.stdout


class Mounts:
    """File systems mounted by a test, unmounted at its end."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.points = []

    def ext4(self, name, size="64M", before=None):
        """An ext4 image mounted at tmp/name; before(img) runs on the
        image before it is mounted."""
        img = self.tmp / f"{name}.img"
        run("truncate", "-s", size, img)
        run("mkfs.ext4", "-q", "-F", img)
        if before:
            before(img)
        return self._mount(name, "-o", "loop", img)

    def tmpfs(self, name):
        return self._mount(name, "-t", "tmpfs", "-o", "size=128M", "none")

    def ramfs(self, name):
        return self._mount(name, "-t", "ramfs", "none")

    def _mount(self, name, *args):
        point = self.tmp / name
        point.mkdir()
        run("mount", *args, point)
        self.points.append(point)
        return point

    def close(self):
        for p in reversed(self.points):
            subprocess.run(["umount", "-l", str(p)], capture_output=True,
                           timeout=30)


@pytest.fixture
def mounts(tmp_path):
    m = Mounts(tmp_path)
    yield m
    m.close()


def attrs(path):
    """The user. and trusted. attributes of path, as getfattr dumps them."""
    out = subprocess.run(["getfattr", "--absolute-names", "-h", "-d", "-e",
                          "hex", "-m", "^(user|trusted)\\.", str(path)],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, describe(out)
    return sorted(line for line in out.stdout.splitlines()
                  if line and not line.startswith("#"))


def acl(path, numeric=False):
    out = run("getfacl", "--omit-header", "--absolute-names", "-p",
              *(["-n"] if numeric else []), path)
    return out.strip()


def entries(top):
    for d, dirs, files in os.walk(top):
        for n in sorted(dirs + files):
            p = os.path.join(d, n)
            if not os.path.islink(p):
                yield os.path.relpath(p, top)


def same_meta(src, dst, numeric=False):
    names = list(entries(src))
    assert names == list(entries(dst))
    for rel in names:
        s, d = os.path.join(src, rel), os.path.join(dst, rel)
        assert attrs(d) == attrs(s), rel
        assert acl(d, numeric) == acl(s, numeric), rel
        assert os.stat(d).st_mode == os.stat(s).st_mode, rel


def attr_tree(top):
    """f: user. and trusted. names (one binary), an ACL for daemon and
    bin; d: a name, an ACL and a default ACL; d/plain: nothing; ro: a
    read-only file with a name; l: a symlink (nothing of its own)."""
    (top / "d").mkdir(parents=True)
    (top / "f").write_bytes(b"f" * 1000)
    (top / "d" / "plain").write_text("plain\n")
    (top / "ro").write_text("ro\n")
    os.symlink("f", top / "l")
    os.setxattr(top / "f", "user.color", b"blue")
    os.setxattr(top / "f", "user.bin", b"\x00\x01\xff")
    os.setxattr(top / "f", "trusted.t", b"root only")
    os.setxattr(top / "d", "user.dir", b"a directory's")
    os.setxattr(top / "ro", "user.ro", b"1")
    run("setfacl", "-m", "u:daemon:rw-,g:bin:r--", top / "f")
    run("setfacl", "-m", "u:daemon:r-x", top / "d")
    run("setfacl", "-d", "-m", "u:daemon:rwx,g:bin:r-x", top / "d")
    os.chmod(top / "ro", 0o444)


@pytest.mark.parametrize("fs", ["ext4", "tmpfs"])
def test_push_keeps_attributes_and_acls(xenv, mounts, fs):
    x = xenv
    root = getattr(mounts, fs)("dest")
    # trusted. names are kept with the setid consent of both ends
    x.start_server("--allow-setid", root=root)
    top = x.src / "t"
    attr_tree(top)
    res = x.send_ok("--json", "-X", "-A", "--keep-setid", str(top) + "/",
                    x.dest("xa"))
    assert end_event(res.stdout)["xattrs_failed"] == 0
    same_meta(top, root / "xa")
    # without it: the user. names, and the one entry without all of
    # its own counted and said once
    res = x.send_ok("--json", "-X", "-A", str(top) + "/", x.dest("nc"))
    end = end_event(res.stdout)
    assert end["xattrs_failed"] == 1, end
    assert "need the setid consent" in end["xattrs_why"], end
    assert attrs(root / "nc" / "f") == [
        a for a in attrs(top / "f") if a.startswith("user.")]
    assert acl(root / "nc" / "f") == acl(top / "f")
    # without the options: none of them, as before
    x.send_ok("-q", str(top) + "/", x.dest("none"))
    assert attrs(root / "none" / "f") == []
    assert "user:daemon" not in acl(root / "none" / "f")
    assert "default:" not in acl(root / "none" / "d")
    # -X alone: attributes, no ACL; -A alone: the reverse
    x.send_ok("-q", "-X", "--keep-setid", str(top) + "/", x.dest("x"))
    assert attrs(root / "x" / "f") == attrs(top / "f")
    assert "user:daemon" not in acl(root / "x" / "f")
    x.send_ok("-q", "-A", str(top) + "/", x.dest("a"))
    assert attrs(root / "a" / "f") == []
    assert acl(root / "a" / "d") == acl(top / "d")


def test_a_new_run_makes_the_destination_the_source(xenv):
    """Up-to-date files and directories get what changed: names added and
    removed, an ACL removed, one added at the destination removed."""
    x = xenv
    x.start_server("--allow-setid")
    top = x.src / "t"
    attr_tree(top)
    x.send_ok("-q", "-X", "-A", "--keep-setid", str(top) + "/", x.dest("s"))
    dst = x.root / "s"
    os.removexattr(top / "f", "user.color")
    os.setxattr(top / "f", "user.new", b"new")
    os.setxattr(top / "d", "user.dir", b"changed")
    run("setfacl", "-b", top / "f")
    run("setfacl", "-k", top / "d")
    os.setxattr(dst / "d" / "plain", "user.extra", b"not in the source")
    run("setfacl", "-m", "u:daemon:rwx", dst / "d" / "plain")
    res = x.send_ok("--json", "-X", "-A", "--keep-setid", str(top) + "/",
                    x.dest("s"))
    end = end_event(res.stdout)
    assert end["files_skipped"] == 3 and end["bytes"] == 0, end
    same_meta(top, dst)


def test_what_the_destination_cannot_hold(xenv, mounts):
    """A value past an ext4 block, and a file system without attributes
    (ramfs): said in one line, counted, the files kept."""
    x = xenv
    src = mounts.tmpfs("srcfs")
    top = src / "t"
    top.mkdir()
    for n in ("big", "small", "third"):
        (top / n).write_text(n + "\n")
    os.setxattr(top / "big", "user.big", b"b" * 8000)
    os.setxattr(top / "big", "user.fits", b"fits")
    os.setxattr(top / "small", "user.s", b"s")
    os.setxattr(top / "third", "user.t", b"t")
    ext4 = mounts.ext4("ext4")
    x.start_server(root=ext4)
    res = x.send_ok("--json", "-X", str(top) + "/", x.dest("e"))
    end = end_event(res.stdout)
    assert end["files_ok"] == 3 and end["xattrs_failed"] == 1, end
    assert "user.big too large for the destination's file system" in \
        res.stdout + res.stderr, describe(res)
    assert os.getxattr(ext4 / "e" / "small", "user.s") == b"s"
    assert os.getxattr(ext4 / "e" / "big", "user.fits") == b"fits"
    same_bytes(top, ext4 / "e")
    x.srv.stop()
    ram = mounts.ramfs("ram")
    x.start_server(root=ram)
    res = x.send_ok("-X", str(top) + "/", x.dest("r"))
    said = (res.stdout + res.stderr).count("does not hold extended "
                                          "attributes")
    assert said == 1, describe(res)
    assert "3 without all their attributes" in res.stdout + res.stderr, \
        describe(res)
    same_bytes(top, ram / "r")


def test_a_destination_without_acls(xenv, mounts):
    """-A to ramfs (no ACLs there), a push and a pull: the files arrive,
    the ones with an ACL without it, said in one line, each counted in
    xattrs_failed; exit 0. A file with no ACL of its own is not
    counted."""
    x = xenv
    top = x.src / "t"
    top.mkdir()
    for n in ("a1", "a2", "plain"):
        (top / n).write_text(n + "\n")
    run("setfacl", "-m", "u:daemon:rw-", top / "a1")
    run("setfacl", "-m", "g:bin:r--", top / "a2")
    why = "the destination's file system does not hold ACLs"

    def arrived_without(dst):
        same_bytes(top, dst)
        for n in ("a1", "a2", "plain"):
            # the mode's three entries only (the source's mask is the
            # copy's group bits)
            assert [e.split(":")[0] + ":" + e.split(":")[1]
                    for e in acl(dst / n).splitlines()] == \
                ["user:", "group:", "other:"], n
            assert os.stat(dst / n).st_mode == os.stat(top / n).st_mode, n

    ram = mounts.ramfs("ram")
    x.start_server(root=ram)
    res = x.send("--json", "-A", str(top) + "/", x.dest("r"))
    assert res.returncode == 0, describe(res)
    end = end_event(res.stdout)
    assert end["ok"] is True and end["files_ok"] == 3, end
    assert end["xattrs_failed"] == 2, end
    # the pushing side has the count and the first reason from the
    # receiver
    assert end["xattrs_why"] in (f"the receiver: a1: {why}",
                                 f"the receiver: a2: {why}"), end
    arrived_without(ram / "r")
    res = x.send("-A", str(top) + "/", x.dest("h"))
    assert res.returncode == 0, describe(res)
    assert output(res).count(why) == 1, describe(res)
    assert "2 without all their attributes" in res.stderr, describe(res)
    arrived_without(ram / "h")
    # a pull: the client is the receiver, and says it itself, once
    x.srv.stop()
    x.start_server(root=x.src)
    (ram / "g").mkdir()
    res = x.get("--json", "-A", x.dest("t/"), ram / "g")
    assert res.returncode == 0, describe(res)
    end = end_event(res.stdout)
    assert end["files_ok"] == 3 and end["xattrs_failed"] == 2, end
    assert end["xattrs_why"] in (f"a1: {why}", f"a2: {why}"), end
    said = [e for e in json_events(res.stdout)
            if e["event"] == "file" and why in e.get("reason", "")]
    assert len(said) == 1, describe(res)
    assert said[0]["path"] in ("a1", "a2"), said
    arrived_without(ram / "g")


def test_the_bounds_of_one_entry(xenv, mounts):
    """Names past the item's 32 KiB: left out and said by the sender, the
    entry counted once by the receiver. The first value fills the item
    to the byte, so the next name finds no room at all (a read of size 0
    asks for a length: it must not be taken for a value)."""
    x = xenv
    src = mounts.tmpfs("srcfs")
    (src / "t").mkdir()
    f = src / "t" / "f"
    f.write_text("f\n")
    # 32,768 - 7 (idx flags n) - 3 - 6 ("user.a") - 9: "user.b" meets
    # exactly no room
    os.setxattr(f, "user.a", b"a" * (32768 - 7 - 9 - 9))
    os.setxattr(f, "user.b", b"b" * 1000)
    os.setxattr(f, "user.c", b"c" * 10)
    root = mounts.tmpfs("dest")
    x.start_server(root=root)
    res = x.send_ok("--json", "-X", f"{src / 't'}/", x.dest("b"))
    end = end_event(res.stdout)
    assert end["files_ok"] == 1 and end["xattrs_failed"] == 1, end
    assert "past 128 or 32 KiB in all: not sent" in end["xattrs_why"], end
    got = root / "b" / "f"
    assert os.getxattr(got, "user.a") == os.getxattr(f, "user.a")
    assert sorted(os.listxattr(got)) == ["user.a"]
    assert got.read_text() == "f\n"


def capability(bit):
    """security.capability, version 2, effective: one permitted bit."""
    return struct.pack("<IIIII", 0x02000001, 1 << bit, 0, 0, 0)


def test_file_capabilities_need_the_setid_consent(xenv):
    x = xenv
    top = x.src / "t"
    top.mkdir()
    (top / "ping").write_text("a program\n")
    os.setxattr(top / "ping", "security.capability", capability(13))
    os.setxattr(top / "ping", "user.u", b"u")
    x.start_server()
    res = x.send_ok("-X", str(top) + "/", x.dest("no"))
    assert "security. names need the setid consent" in \
        res.stdout + res.stderr, describe(res)
    got = x.root / "no" / "ping"
    assert "security.capability" not in os.listxattr(got)
    assert os.getxattr(got, "user.u") == b"u"
    x.srv.stop()
    x.start_server("--allow-setid")
    x.send_ok("-q", "-X", "--keep-setid", str(top) + "/", x.dest("yes"))
    assert os.getxattr(x.root / "yes" / "ping", "security.capability") == \
        capability(13)


def test_pull_maps_acl_names_on_the_receiving_machine(xsrv):
    x = xsrv
    top = x.root / "t"
    attr_tree(top)
    pw, gr = fake_ids(x.tmp, 4001, 4002)
    got = x.tmp / "got"
    got.mkdir()
    res = get_elsewhere(x, pw, gr, "-q", "-X", "-A", "--keep-setid",
                        x.dest("t/"), got)
    assert res.returncode == 0, describe(res)
    assert attrs(got / "f") == attrs(top / "f")
    # there, daemon is 4001 and bin 4002
    assert "user:4001:rw-" in acl(got / "f", numeric=True)
    assert "group:4002:r--" in acl(got / "f", numeric=True)
    assert "default:user:4001:rwx" in acl(got / "d", numeric=True)
    num = x.tmp / "num"
    num.mkdir()
    res = get_elsewhere(x, pw, gr, "-q", "-A", "--numeric-ids",
                        x.dest("t/"), num)
    assert res.returncode == 0, describe(res)
    same_meta_acl = [acl(num / n, True) == acl(top / n, True)
                     for n in ("f", "d", "d/plain", "ro")]
    assert all(same_meta_acl)


def test_a_receiver_that_is_not_root(xsrv):
    """get -X -A as the user nobody: user. names and ACLs kept (a
    read-only file's too), trusted. names left out without a word."""
    x = xsrv
    top = x.root / "t"
    attr_tree(top)
    with as_nobody(x, "lr-xattrs-") as (dest, get):
        res = get("--json", "-X", "-A", x.dest("t/"))
        assert res.returncode == 0, describe(res)
        assert end_event(res.stdout)["xattrs_failed"] == 0, describe(res)
        user_only = [a for a in attrs(top / "f") if a.startswith("user.")]
        assert attrs(os.path.join(dest, "f")) == user_only
        assert attrs(os.path.join(dest, "ro")) == attrs(top / "ro")
        for n in ("f", "d", "d/plain"):
            # the owner's entries are nobody's there: compare the rest
            assert acl(os.path.join(dest, n)) == acl(top / n), n


def odd_acl(tmp):
    """An access ACL for /f written straight into an ext4 image, its
    entries out of the kernel's order (USER after GROUP_OBJ): the kernel
    hands it out as it is, as it does from FUSE or a network file
    system."""
    def write(img):
        mnt = tmp / "prep"
        mnt.mkdir()
        run("mount", "-o", "loop", img, mnt)
        try:
            (mnt / "f").write_text("odd\n")
            (mnt / "g").write_text("plain\n")
            os.setxattr(mnt / "f", "user.kept", b"yes")
        finally:
            run("umount", mnt)
        blob = struct.pack("<I", 2)
        for tag, perm, uid in ((1, 6, 0xffffffff), (4, 4, 0xffffffff),
                               (2, 6, 1), (16, 6, 0xffffffff),
                               (32, 4, 0xffffffff)):
            blob += struct.pack("<HHI", tag, perm, uid)
        (tmp / "acl.bin").write_bytes(blob)
        run("debugfs", "-w", "-R",
            f"ea_set -f {tmp / 'acl.bin'} /f system.posix_acl_access", img)
    return write


def test_an_acl_the_wire_cannot_carry_is_said_not_fatal(xenv, mounts):
    x = xenv
    src = mounts.ext4("odd", "16M", before=odd_acl(x.tmp))
    x.start_server()
    res = x.send_ok("--json", "-X", "-A", str(src) + "/", x.dest("o"))
    end = end_event(res.stdout)
    assert end["files_ok"] == 2 and end["xattrs_failed"] == 1, end
    assert "an ACL of a form this end cannot send" in end["xattrs_why"], end
    assert os.getxattr(x.root / "o" / "f", "user.kept") == b"yes"
    assert (x.root / "o" / "g").read_text() == "plain\n"


def test_acl_names_that_meet_on_one_id_leave_the_copy_alone(xsrv):
    """Two users of an ACL that the receiving machine knows by one id:
    the ACL is not given, said once for the entry, and the copy there
    keeps the ACL it had."""
    x = xsrv
    top = x.root / "t"
    (top / "d").mkdir(parents=True)
    run("setfacl", "-m", "u:daemon:rwx,u:bin:r-x", top / "d")
    got = x.tmp / "got"
    (got / "d").mkdir(parents=True)
    run("setfacl", "-m", "u:12345:rwx", got / "d")
    before = acl(got / "d", numeric=True)
    pw, gr = x.tmp / "passwd", x.tmp / "group"
    pw.write_text("root:x:0:0:root:/:/bin/sh\n"
                  "daemon:x:4001:4001:daemon:/:/bin/false\n"
                  "bin:x:4001:4001:bin:/:/bin/false\n")
    gr.write_text("root:x:0:\n")
    res = get_elsewhere(x, pw, gr, "--json", "-A", x.dest("t/"), got)
    assert res.returncode == 0, describe(res)
    end = end_event(res.stdout)
    assert end["xattrs_failed"] == 1, end
    assert "name one id here" in end["xattrs_why"], end
    assert acl(got / "d", numeric=True) == before


def test_what_the_sender_could_not_read_is_not_removed(xsrv):
    """A directory the sending user cannot open: its attributes and ACLs
    are unknown, so the copy there keeps its own (rsync removes them)."""
    x = xsrv
    nobody = pwd.getpwnam("nobody")
    dst = x.root / "p"
    (dst / "locked").mkdir(parents=True)
    (dst / "open").mkdir()
    for d in ("locked", "open"):
        os.setxattr(dst / d, "user.extra", b"there")
        run("setfacl", "-m", "u:12345:rwx", dst / d)
    base = pathlib.Path(tempfile.mkdtemp(prefix="lr-xattrs-"))
    try:
        os.chmod(base, 0o755)
        (base / "t" / "locked").mkdir(parents=True)
        (base / "t" / "open").mkdir()
        os.setxattr(base / "t" / "open", "user.o", b"o")
        os.chmod(base / "t" / "locked", 0o700)  # root's: nobody cannot
        for p in (base / "t", base / "t" / "open"):
            os.chown(p, nobody.pw_uid, nobody.pw_gid)
        tok = base / "token"
        shutil.copy(x.token_file, tok)
        os.chown(tok, nobody.pw_uid, nobody.pw_gid)
        argv = [x.bin, "send", "-p", str(x.srv.port), "--token-file", tok,
                "--json", "-X", "-A", f"{base / 't'}/", x.dest("p")]
        res = x.h.run_a(["setpriv", f"--reuid={nobody.pw_uid}",
                         f"--regid={nobody.pw_gid}", "--clear-groups",
                         *argv], stdin=subprocess.DEVNULL,
                        capture_output=True, text=True, timeout=60,
                        env=env_without_token())
        assert res.returncode == 23, describe(res)  # a source not read
        assert os.getxattr(dst / "locked", "user.extra") == b"there"
        assert "user:12345:rwx" in acl(dst / "locked", numeric=True)
        # the one it read: the copy is the source
        assert attrs(dst / "open") == attrs(base / "t" / "open")
        assert "12345" not in acl(dst / "open", numeric=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_resume_and_delta_keep_them(xsrv):
    """A file killed mid-transfer and finished by a second run, and one
    rebuilt from the old copy by the delta, get their attributes."""
    x = xsrv
    top = x.src / "t"
    top.mkdir()
    big = top / "big"
    with open(big, "wb") as f:
        f.write(os.urandom(32 * MiB))
    os.setxattr(big, "user.v", b"1")
    run("setfacl", "-m", "u:daemon:r--", big)
    push_killed_midway(x, x.root / "r", "big", "--json", "-X", "-A",
                       str(top) + "/", x.dest("r"))
    res = x.send_ok("--json", "-X", "-A", str(top) + "/", x.dest("r"))
    assert end_event(res.stdout)["bytes_already_held"] > 0
    same_meta(top, x.root / "r")
    # the delta: a few bytes changed, a name changed
    with open(big, "r+b") as f:
        f.seek(5 * MiB)
        f.write(b"changed")
    os.setxattr(big, "user.v", b"2")
    res = x.send_ok("--json", "-X", "-A", "--update", str(top) + "/",
                    x.dest("r"))
    end = end_event(res.stdout)
    assert end["bytes"] < 8 * MiB and end["bytes_already_held"] > 0, end
    same_meta(top, x.root / "r")
    same_bytes(top, x.root / "r")
    assert not temp_leftovers(x.root)


def test_without_proc_up_to_date_files_keep_theirs_said(xenv):
    """A receiver where /proc is not mounted (a minimal container) cannot
    give an up-to-date file its new attributes (it would go through
    /proc/self/fd of an O_PATH descriptor): each such file keeps the old
    ones, said and counted (xattrs_failed, xattrs_why), the run still
    ends well; a file it writes gets them as always."""
    x = xenv

    def no_proc(argv, **kw):
        return x.h.popen_b(["unshare", "-m", "--propagation", "private",
                            "sh", "-c", 'umount -l /proc && exec "$@"',
                            "sh", *argv], **kw)

    x.srv = x._serve("-B", x.h.addr_b, "--token-file", x.token_file,
                     "--root", x.root, popen=no_proc, port=0)
    f = x.src / "f.txt"
    f.write_bytes(b"kept\n")
    os.setxattr(f, "user.a", b"one")
    x.send_ok("-q", "-X", f, x.dest("d/"))
    dst = x.root / "d" / "f.txt"
    assert os.getxattr(dst, "user.a") == b"one"
    os.setxattr(f, "user.a", b"two")
    os.setxattr(f, "user.b", b"new")
    g = x.src / "g.txt"
    g.write_bytes(b"new file\n")
    os.setxattr(g, "user.c", b"three")
    res = x.send_ok("--json", "-X", f, g, x.dest("d/"))
    end = end_event(res.stdout)
    assert end["ok"] is True and end["files_skipped"] == 1, end
    assert end["files_ok"] == 1 and end["xattrs_failed"] == 1, end
    assert ("f.txt: up-to-date files keep their attributes where /proc is "
            "not mounted") in end["xattrs_why"], end
    assert os.getxattr(dst, "user.a") == b"one"
    assert "user.b" not in os.listxattr(dst)
    assert os.getxattr(x.root / "d" / "g.txt", "user.c") == b"three"


def test_standard_output_refuses_them(xsrv):
    x = xsrv
    (x.root / "f").write_text("x\n")
    res = x.get("-X", x.dest("f"), "-")
    assert res.returncode == 2, describe(res)
    assert "-X and -A need a destination directory" in res.stderr, \
        describe(res)
