# SPDX-License-Identifier: MIT
"""-o/-g/-a and --numeric-ids (issue 20), between the namespace hosts:
owners and groups kept when the receiver runs as root, by name (each
machine's id of the name, the id as sent when the name is not known
there) or by number, on files, directories and symlinks; an up-to-date
file given its new owner; a receiver that is not root keeps its own; and
the setuid consent rule holds for files owned by root. Compared with the
source by stat. Needs root (the namespaces, chown, and a second passwd
file in a mount namespace of its own for the receiving client).
"""

import grp
import os
import pwd
import stat
import subprocess

import pytest

from lrproc import describe
from xferutil import (MiB, as_nobody, end_event, env_without_token,
                      push_killed_midway, sha256_file, temp_leftovers,
                      write_random)

# Debian's: a user and a group that have names on every machine
USER, GROUP = "daemon", "bin"


@pytest.fixture(autouse=True)
def as_root():
    if os.geteuid() != 0:
        pytest.skip("owners can be given only as root (run as root)")


def owned_tree(top):
    """f 1234:5678 (no names), d 2345:6789, l (a symlink) 3456:7890,
    d/named daemon:bin."""
    (top / "d").mkdir(parents=True)
    (top / "f").write_text("f\n")
    (top / "d" / "named").write_text("named\n")
    os.symlink("f", top / "l")
    os.chown(top / "f", 1234, 5678)
    os.chown(top / "d", 2345, 6789)
    os.lchown(top / "l", 3456, 7890)
    os.chown(top / "d" / "named", pwd.getpwnam(USER).pw_uid,
             grp.getgrnam(GROUP).gr_gid)


def ids(top):
    out = {}
    for d, dirs, files in os.walk(top):
        for n in dirs + files:
            p = os.path.join(d, n)
            st = os.lstat(p)
            out[os.path.relpath(p, top)] = (st.st_uid, st.st_gid)
    return out


def test_push_keeps_owners_and_groups(xsrv):
    x = xsrv
    top = x.src / "t"
    owned_tree(top)
    x.send_ok("-q", "-o", "-g", str(top) + "/", x.dest("og"))
    assert ids(x.root / "og") == ids(top)
    x.send_ok("-q", "-a", str(top) + "/", x.dest("a"))
    assert ids(x.root / "a") == ids(top)
    # -g alone: the owner stays the receiver's
    x.send_ok("-q", "-g", str(top) + "/", x.dest("g"))
    assert {k: v[1] for k, v in ids(x.root / "g").items()} == \
        {k: v[1] for k, v in ids(top).items()}
    assert all(v[0] == 0 for v in ids(x.root / "g").values())
    # without: everything is the receiving user's, as before
    x.send_ok("-q", str(top) + "/", x.dest("none"))
    assert set(ids(x.root / "none").values()) == {(0, 0)}


def fake_ids(where, uid, gid):
    """A passwd and a group file in which USER and GROUP have other ids."""
    pw = where / "passwd"
    gr = where / "group"
    pw.write_text(f"root:x:0:0:root:/:/bin/sh\n"
                  f"{USER}:x:{uid}:{gid}:{USER}:/:/bin/false\n")
    gr.write_text(f"root:x:0:\n{GROUP}:x:{gid}:\n")
    return pw, gr


def get_elsewhere(x, pw, gr, *args):
    """linerate get in host A, in a mount namespace of its own whose
    /etc/passwd and /etc/group are pw and gr: another machine's names."""
    argv = ["unshare", "-m", "sh", "-c",
            'mount --bind "$1" /etc/passwd && mount --bind "$2" /etc/group'
            ' && shift 2 && exec "$@"', "sh", str(pw), str(gr),
            *x.client_argv("get", *args)]
    return x.h.run_a(argv, stdin=subprocess.DEVNULL, capture_output=True,
                     text=True, timeout=60, env=env_without_token())


def test_names_are_mapped_on_the_receiving_machine(xsrv):
    x = xsrv
    top = x.root / "t"
    owned_tree(top)
    pw, gr = fake_ids(x.tmp, 4001, 4002)
    got = x.tmp / "got"
    got.mkdir()
    res = get_elsewhere(x, pw, gr, "-q", "-a", x.dest("t/"), got)
    assert res.returncode == 0, describe(res)
    want = ids(top)
    want["d/named"] = (4001, 4002)  # the names' ids there
    assert ids(got) == want
    # --numeric-ids: the ids as they are
    num = x.tmp / "num"
    num.mkdir()
    res = get_elsewhere(x, pw, gr, "-q", "-a", "--numeric-ids",
                        x.dest("t/"), num)
    assert res.returncode == 0, describe(res)
    assert ids(num) == ids(top)


def test_an_up_to_date_file_gets_its_new_owner(xsrv):
    x = xsrv
    top = x.src / "t"
    owned_tree(top)
    x.send_ok("-q", "-a", str(top) + "/", x.dest("o"))
    os.chown(top / "f", 2222, 3333)
    res = x.send_ok("--json", "-a", str(top) + "/", x.dest("o"))
    end = end_event(res.stdout)
    assert end["bytes"] == 0 and end["files_skipped"] == 2, end
    assert ids(x.root / "o") == ids(top)


def test_a_receiver_that_is_not_root_keeps_its_own(xsrv):
    """get -a as the user nobody: the files are nobody's, groups it is
    not a member of are not given, and the transfer succeeds."""
    x = xsrv
    top = x.root / "t"
    owned_tree(top)
    nobody = pwd.getpwnam("nobody")
    with as_nobody(x, "lr-owners-") as (dest, get):
        res = get("-q", "-a", x.dest("t/"))
        assert res.returncode == 0, describe(res)
        got = ids(dest)
        assert set(got) == set(ids(top)), got
        assert set(got.values()) == {(nobody.pw_uid, nobody.pw_gid)}, got


def test_root_owner_keeps_setuid_only_with_consent(xsrv):
    x = xsrv
    top = x.src / "s"
    top.mkdir()
    (top / "suid").write_text("#!/bin/sh\n")
    os.chown(top / "suid", 0, 0)
    os.chmod(top / "suid", 0o4755)
    x.send_ok("-q", "-a", str(top) + "/", x.dest("s1"))
    st = os.stat(x.root / "s1" / "suid")
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o755)
    x.start_server("--allow-setid")
    x.send_ok("-q", "-a", "--keep-setid", str(top) + "/", x.dest("s2"))
    st = os.stat(x.root / "s2" / "suid")
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o4755)


def test_numeric_ids_alone_is_a_usage_error(xsrv):
    res = xsrv.send("--numeric-ids", str(xsrv.src), xsrv.dest())
    assert res.returncode == 2, describe(res)
    assert "--numeric-ids goes with -o, -g, -a or -A" in res.stderr


def test_setuid_consented_stays_when_an_up_to_date_file_changes_group(
        xsrv):
    """A chown clears setuid bits: an up-to-date file given a new group
    keeps the bits the receiver consented to."""
    x = xsrv
    x.start_server("--allow-setid")
    top = x.src / "s"
    top.mkdir()
    (top / "tool").write_text("#!/bin/sh\n")
    os.chown(top / "tool", 0, 0)
    os.chmod(top / "tool", 0o4755)
    x.send_ok("-q", "-a", "--keep-setid", str(top) + "/", x.dest("s"))
    os.chown(top / "tool", 0, grp.getgrnam(GROUP).gr_gid)
    os.chmod(top / "tool", 0o4755)  # the chown cleared it here too
    res = x.send_ok("--json", "-a", "--keep-setid", str(top) + "/",
                    x.dest("s"))
    assert end_event(res.stdout)["files_skipped"] == 1
    st = os.stat(x.root / "s" / "tool")
    assert (st.st_gid, stat.S_IMODE(st.st_mode)) == \
        (grp.getgrnam(GROUP).gr_gid, 0o4755)


def test_update_leaves_the_owner_of_a_newer_copy(xsrv):
    x = xsrv
    top = x.src / "u"
    top.mkdir()
    (top / "f").write_text("old\n")
    os.chown(top / "f", 1234, 1234)
    os.utime(top / "f", (1_600_000_000, 1_600_000_000))
    (x.root / "u").mkdir()
    (x.root / "u" / "f").write_text("edited at the destination\n")
    x.send_ok("-q", "-a", "--update", str(top) + "/", x.dest("u"))
    st = os.stat(x.root / "u" / "f")
    assert (st.st_uid, st.st_gid) == (0, 0)
    assert (x.root / "u" / "f").read_text() == "edited at the destination\n"


def test_an_up_to_date_file_with_another_name_is_not_given_an_owner(xsrv):
    """Its inode may be outside the destination: a file there with two
    names keeps its owner (a token holder must not change a file it did
    not send, through a name below the root)."""
    x = xsrv
    top = x.src / "h"
    top.mkdir()
    (top / "secret").write_bytes(b"\0" * 18)
    os.chown(top / "secret", 1234, 1234)
    os.utime(top / "secret", (1_600_000_000, 1_600_000_000))
    outside = x.tmp / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"\0" * 18)
    os.chmod(outside / "secret", 0o600)
    os.utime(outside / "secret", (1_600_000_000, 1_600_000_000))
    (x.root / "h").mkdir()
    os.link(outside / "secret", x.root / "h" / "secret")
    res = x.send_ok("--json", "-a", str(top) + "/", x.dest("h"))
    assert end_event(res.stdout)["files_skipped"] == 1
    st = os.stat(outside / "secret")
    assert (st.st_uid, st.st_gid) == (0, 0)


def test_an_owner_that_cannot_be_given_keeps_the_entry(xsrv):
    """Root in a user namespace of its own has no id 1234 to give: every
    entry arrives all the same, each said in one line, counted in
    owners_failed."""
    x = xsrv
    top = x.root / "t"
    owned_tree(top)
    got = x.tmp / "got"
    got.mkdir()
    argv = ["unshare", "-U", "-r", *x.client_argv("get", "--json", "-a",
                                                    x.dest("t/"), got)]
    res = x.h.run_a(argv, stdin=subprocess.DEVNULL, capture_output=True,
                    text=True, timeout=60, env=env_without_token())
    assert res.returncode == 0, describe(res)
    end = end_event(res.stdout)
    assert end["files_ok"] == 2 and end["owners_failed"] >= 3, end
    assert set(ids(got)) == set(ids(top))
    assert "its owner and group could not be given" in res.stdout


def test_a_resumed_file_gets_its_owner_and_group(xsrv):
    """send -o -g killed while a large file travels (its journal holds
    chunks), then the same command again: the file is resumed, not sent
    again, and has the source's owner and group and bytes."""
    x = xsrv
    top = x.src / "t"
    top.mkdir()
    big = top / "big"
    write_random(big, 32 * MiB)
    nobody = pwd.getpwnam("nobody")
    gid = grp.getgrnam(GROUP).gr_gid
    assert gid != nobody.pw_gid
    os.chown(big, nobody.pw_uid, gid)
    os.chmod(big, 0o640)
    argv = ["--json", "-o", "-g", str(top) + "/", x.dest("r")]
    push_killed_midway(x, x.root / "r", "big", *argv)
    assert not (x.root / "r" / "big").exists()
    res = x.send_ok(*argv)
    end = end_event(res.stdout)
    assert end["bytes_already_held"] > 0 and end["files_ok"] == 1, end
    assert end["owners_failed"] == 0, end
    st = os.stat(x.root / "r" / "big")
    assert (st.st_uid, st.st_gid) == (nobody.pw_uid, gid)
    assert stat.S_IMODE(st.st_mode) == 0o640
    assert sha256_file(x.root / "r" / "big") == sha256_file(big)
    assert not temp_leftovers(x.root)
