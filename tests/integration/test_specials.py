# SPDX-License-Identifier: MIT
"""--specials, --devices and -D (issue 20), between the namespace hosts:
FIFOs and sockets in a tree made by a receiver running as root, device
nodes only with its consent (serve --allow-devices), each refused in one
line otherwise; without the options each is told and left out, as
before; a receiver that is not root makes none. Compared with the source
by lstat (type, device numbers, mode, mtime).
"""

import contextlib
import os
import pwd
import shutil
import socket
import stat
import tempfile

import pytest

from lrproc import describe
from xferutil import (as_nobody, end_event, json_events, output,
                      temp_leftovers)


@pytest.fixture(autouse=True)
def as_root():
    if os.geteuid() != 0:
        pytest.skip("device nodes are made only as root (run as root)")


def special_tree(top):
    """A file, a FIFO, a socket, a character device (1:3, as /dev/null)
    in a subdirectory and a block device (7:200)."""
    (top / "d").mkdir(parents=True)
    (top / "f").write_text("f\n")
    os.mkfifo(top / "fifo", 0o640)
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(top / "sock"))
    s.close()
    os.mknod(top / "d" / "null", 0o620 | stat.S_IFCHR, os.makedev(1, 3))
    os.mknod(top / "blk", 0o600 | stat.S_IFBLK, os.makedev(7, 200))
    for p in ("fifo", "sock", "d/null", "blk"):
        os.utime(top / p, (1_600_000_000, 1_600_000_000),
                 follow_symlinks=False)


def nodes(top):
    out = {}
    for d, dirs, files in os.walk(top):
        for n in dirs + files:
            p = os.path.join(d, n)
            st = os.lstat(p)
            if stat.S_ISDIR(st.st_mode):
                continue
            out[os.path.relpath(p, top)] = (
                stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode),
                st.st_rdev if stat.S_ISCHR(st.st_mode) or
                stat.S_ISBLK(st.st_mode) else 0,
                int(st.st_mtime) if not stat.S_ISREG(st.st_mode) else 0)
    return out


def test_d_to_a_server_that_allows_devices(xsrv):
    x = xsrv
    x.start_server("--allow-devices")
    top = x.src / "t"
    special_tree(top)
    res = x.send_ok("--json", "-D", str(top) + "/", x.dest("all"))
    end = end_event(res.stdout)
    assert end["files_failed"] == 0 and end["files_special"] == 0, end
    assert nodes(x.root / "all") == nodes(top)
    # a second run finds them made
    x.send_ok("-q", "-D", str(top) + "/", x.dest("all"))
    assert nodes(x.root / "all") == nodes(top)


def test_devices_need_the_receivers_consent(xsrv):
    """serve without --allow-devices: each device node is refused in
    one line (exit 1), the FIFO and the socket are made."""
    x = xsrv
    top = x.src / "t"
    special_tree(top)
    res = x.send("-D", str(top) + "/", x.dest("c"))
    assert res.returncode == 1, describe(res)
    assert output(res).count("device nodes need the receiver's "
                             "consent (serve --allow-devices") >= 2, \
        describe(res)
    got = nodes(x.root / "c")
    assert set(got) == {"f", "fifo", "sock"}, got
    assert got["fifo"] == nodes(top)["fifo"]
    # --specials alone: no device is even sent; they are told, skipped
    res = x.send_ok("--specials", str(top) + "/", x.dest("s"))
    assert "skipping d/null (a character device, not sent)" in \
        output(res), describe(res)
    assert set(nodes(x.root / "s")) == {"f", "fifo", "sock"}


def test_without_options_each_is_told_and_left_out(xsrv):
    x = xsrv
    top = x.src / "t"
    special_tree(top)
    res = x.send_ok("--json", str(top) + "/", x.dest("n"))
    assert end_event(res.stdout)["files_special"] == 4
    assert set(nodes(x.root / "n")) == {"f"}


def test_pull_with_d(xsrv):
    """get -D: the client, root here, makes them all (its own -D is its
    consent)."""
    x = xsrv
    top = x.root / "t"
    special_tree(top)
    got = x.tmp / "got"
    got.mkdir()
    x.get_ok("-q", "-D", x.dest("t/"), got)
    assert nodes(got) == nodes(top)


def test_a_receiver_that_is_not_root_makes_none(xsrv):
    x = xsrv
    top = x.root / "t"
    special_tree(top)
    with as_nobody(x, "lr-specials-") as (dest, get):
        res = get("-D", x.dest("t/"))
        assert res.returncode == 1, describe(res)
        assert "made only by a receiver running as root" in output(res)
        assert sorted(os.listdir(dest)) == ["d", "f"]


def test_a_is_not_d(xsrv):
    """-a keeps owners and groups; special files need -D, asked apart
    (an older receiver, or one without consent, would refuse them)."""
    x = xsrv
    top = x.src / "t"
    special_tree(top)
    res = x.send_ok("--json", "-a", str(top) + "/", x.dest("a"))
    assert end_event(res.stdout)["files_special"] == 4
    assert set(nodes(x.root / "a")) == {"f"}


def test_a_node_with_another_name_is_not_changed_in_place(xsrv):
    """A FIFO there that is also a name outside the destination is not
    given the sender's mode or owner: it is not "already made"."""
    x = xsrv
    top = x.src / "h"
    top.mkdir()
    os.mkfifo(top / "p", 0o666)
    os.chmod(top / "p", 0o666)
    outside = x.tmp / "outside.fifo"
    os.mkfifo(outside, 0o600)
    (x.root / "h").mkdir()
    os.link(outside, x.root / "h" / "p")
    res = x.send("-D", "-a", str(top) + "/", x.dest("h"))
    assert res.returncode == 1 and "exists" in output(res), describe(res)
    st = os.lstat(outside)
    assert (stat.S_IMODE(st.st_mode), st.st_uid) == (0o600, 0)
    # with --overwrite the name gets a node of its own, the other stays
    x.send_ok("-q", "-D", "--overwrite", str(top) + "/", x.dest("h"))
    assert stat.S_IMODE(os.lstat(x.root / "h" / "p").st_mode) == 0o666
    assert not os.path.samefile(outside, x.root / "h" / "p")
    assert stat.S_IMODE(os.lstat(outside).st_mode) == 0o600


@contextlib.contextmanager
def served_as_nobody(x, *extra):
    """`linerate serve --root ROOT EXTRA...` in host B as the user nobody
    (no root, no groups), ROOT nobody's, in a directory of its own
    (base) that holds only ROOT and the token; yields (base, root)."""
    nobody = pwd.getpwnam("nobody")
    base = tempfile.mkdtemp(prefix="lr-specials-srv-")
    try:
        os.chmod(base, 0o755)
        root = os.path.join(base, "root")
        os.mkdir(root)
        os.chown(root, nobody.pw_uid, nobody.pw_gid)
        tok = os.path.join(base, "token")
        shutil.copy(x.token_file, tok)
        os.chown(tok, nobody.pw_uid, nobody.pw_gid)
        os.chmod(tok, 0o600)

        def popen(argv, **kw):
            return x.h.popen_b(["setpriv", f"--reuid={nobody.pw_uid}",
                                f"--regid={nobody.pw_gid}", "--clear-groups",
                                *argv], **kw)

        x.srv = x._serve("-B", x.h.addr_b, "--token-file", tok, "--root",
                         root, *extra, popen=popen, port=0)
        try:
            yield base, root
        finally:
            x.srv.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("consent", [False, True],
                         ids=["plain", "allow-devices"])
def test_push_to_a_server_that_is_not_root_makes_none(xenv, consent):
    """send -D to a server running as nobody: the FIFO and the device
    node are each refused in one line (exit 1), with its consent
    (--allow-devices) too: it is not root. Nothing is made, in the root
    or beside it; the plain file arrives."""
    x = xenv
    top = x.src / "t"
    (top / "d").mkdir(parents=True)
    (top / "d" / "f").write_text("f\n")
    os.mkfifo(top / "fifo", 0o666)
    os.mknod(top / "d" / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    nobody = pwd.getpwnam("nobody")
    extra = ["--allow-devices"] if consent else []
    with served_as_nobody(x, *extra) as (base, root):
        res = x.send("--json", "-D", str(top) + "/", x.dest("n"))
        assert res.returncode == 1, describe(res)
        why = ("at the receiver: refused: FIFOs, sockets and device nodes "
               "are made only by a receiver running as root")
        files = {e["path"]: (e["status"], e.get("error"))
                 for e in json_events(res.stdout) if e["event"] == "file"}
        assert files == {"d": ("done", None), "d/f": ("done", None),
                         "fifo": ("failed", why),
                         "d/null": ("failed", why)}, describe(res)
        end = end_event(res.stdout)
        assert (end["files_ok"], end["files_failed"]) == (1, 2), end
        assert "--allow-devices" not in output(res), describe(res)
        got = {os.path.relpath(os.path.join(d, n), root):
               stat.S_IFMT(os.lstat(os.path.join(d, n)).st_mode)
               for d, ds, fs in os.walk(root) for n in ds + fs}
        assert got == {"n": stat.S_IFDIR, "n/d": stat.S_IFDIR,
                       "n/d/f": stat.S_IFREG}, got
        st = os.stat(os.path.join(root, "n", "d", "f"))
        assert (st.st_uid, st.st_gid) == (nobody.pw_uid, nobody.pw_gid)
        assert not temp_leftovers(root)
        assert sorted(os.listdir(base)) == ["root", "token"]
