# SPDX-License-Identifier: MIT
"""A hostile sender holding the token against `linerate serve --root`
(docs/SECURITY.md: the receiver trusts no one).

tests/tools/hostile_send.c (built as build/tests/unit/hostile_send)
authenticates with the server's token, pushes to the root and breaks the
rules as its CASE says: absolute and '..' paths, a NUL or control
characters in names, symlinks leading out of the root, lengths and totals
that lie, chunks nobody asked for, wrong digests.  After each case:

* nothing appeared outside the root: a sentinel directory beside it (the
  target of the absolute paths and of the symlinks) stays empty, the
  directory holding both has nothing else, /tmp/x does not appear;
* entries that were refused have no final file, and no temporary file
  (".NAME.lrpart") or journal is left behind;
* hostile_send ran to the end (exit 0: the receiver answered every step
  within its deadlines; 3 means the receiver hung);
* the server or hostile_send names a clear reason;
* names from the sender reach the server's log escaped (no raw ESC);
* the server still serves: a normal `linerate send` of a small file works.

Every test starts its own server (127.0.0.1) with its own token and root.
"""

import functools
import os
import pathlib
import re
import resource
import stat
import subprocess

import pytest

from lrproc import LineCollector, describe

LOOP = "127.0.0.1"
CHUNK = 64 << 10  # what hostile_send asks for
HOSTILE_TIMEOUT = 200  # s; each act of a case is bounded at 30 s

# What each case must leave, and the reason it must give.
#   present:  {path below the root: size}  files that must land (regular)
#   absent:   paths below the root that must not exist at all
#   maybe10:  files that may land only complete and verified (10 bytes)
#   content:  {path below the root: bytes}  what a present file must hold
#   reason:   regexes, each to be found in hostile_send's output or the
#             server log
#   xattrs:   {path below the root: {name: bytes, or None: not there}}
#             the extended attributes a present file must (not) have
REFUSED_PATH = r"refused: "


def in_act(no, rx):
    """RX in what hostile_send printed for its act NO (before the next)."""
    return rf"(?m)^== act {no}: .*\n(?:(?!== act ).*\n)*?(?!== act ).*{rx}"


SENT = r"ERROR: the sender sent "
XA_MALFORMED = (SENT + r"malformed extended attributes \(names in user\., "
                r"trusted\. or security\., in order")
CASES = {
    "abs_path": dict(
        present={"ok_abs_path": 10},
        absent=[],
        reason=[REFUSED_PATH + r"absolute path"]),
    "dotdot": dict(
        present={"ok_dotdot": 10},
        absent=[],
        reason=[REFUSED_PATH + r'"\." or "\.\." component']),
    "dotdot_mid": dict(
        present={"ok_dotdot_mid": 10},
        absent=["a", "escape"],
        reason=[REFUSED_PATH + r'"\." or "\.\." component']),
    "nul_in_path": dict(
        present={"ok_nul_in_path": 10},
        absent=["nul", "nul_tail"],
        reason=[REFUSED_PATH + r"NUL in path"]),
    "control_chars": dict(
        present={"ok_control_chars": 10},
        absent=["a", "b"],
        reason=[REFUSED_PATH + r"control character"]),
    "empty_component": dict(
        present={"ok_empty_component": 10},
        absent=["a", "trail"],
        reason=[REFUSED_PATH + r"empty component"]),
    "symlink_then_write": dict(
        present={"ok_symlink_then_write": 10, "f": 10},
        absent=[],
        reason=[r"link2/pwned: cannot open its directory: "
                r"(Not a directory|Too many levels of symbolic links)"]),
    "symlink_escape_dir": dict(
        present={"ok_symlink_escape_dir": 10},
        absent=["d2/x", "d2/sub"],
        reason=[r"d2\S*: .*(Not a directory|Too many levels of symbolic "
                r"links)"]),
    "dest_escape": dict(
        present={},
        absent=["x", "dl/sub"],
        reason=[r"the receiver refused the session: destination 'dl': "
                r"(Not a directory|a symlink \(never written through\))",
                r"the receiver refused the session: .*(refused|malformed)"]),
    # LONE_FILE (send FILE HOST:NAME): one file takes the name; a tree,
    # two files or a path with a slash make NAME a directory; a symlink
    # at NAME is refused, never written through
    "lone_file": dict(
        present={"lone_a": 10, "lone_b/sub/z": 10, "lone_c/p": 10,
                 "lone_c/q": 10},
        absent=["x", "y", "lone_a/d", "d", "lone_dotdot", "z"],
        reason=[r"destination 'lone_l': a symlink \(never written through\)",
                r"destination 'lone_l/below': (Not a directory|a symlink)",
                r"(Not a directory|File exists)",
                r"the receiver refused the session: .*(refused|malformed)"]),
    "planted_temp": dict(
        present={"g": 5 * CHUNK - 7},
        absent=[".g.lrpart", ".g.lrjournal"],
        reason=[]),
    "oversize_length": dict(
        present={},
        absent=["over_zero", "over_data", "aaaaa"],
        reason=[r"malformed entry",
                r"chunk length does not match its record"]),
    "more_bytes": dict(
        present={},
        absent=[],
        maybe10=[f"more_bytes_{i}" for i in range(1, 6)],
        reason=[r"not asked for \(entry 0, chunk 0\): cut off",
                r"not asked for \(entry 0, chunk 1\): cut off",
                # a record over its bound: framing, not the cipher's
                r"stream 1: a record of the wrong type or length for this "
                r"stream"]),
    # -H: a hard link only to a file of the session flagged LINKED,
    # made beneath the root, never to a file that failed verification
    "hardlink_targets": dict(
        present={"ok_hl": 10, "ok_hl_link": 10, "ok_hl_2": 10,
                 "hl_plain": 10},
        absent=["hl_a", "hl_b", "escape_hl", "x", "hl_fw", "hl_after",
                "hl_unasked"],
        links=[("ok_hl", "ok_hl_link")],
        reason=[r"hl_a: refused: a hard link to an entry that is not a "
                r"file others may link to",
                REFUSED_PATH + r'"\." or "\.\." component',
                REFUSED_PATH + r"absolute path",
                r"malformed",
                r"announced a hard link, which this transfer did not ask for"]),
    "hardlink_unverified": dict(
        present={},
        absent=["hl_sum", "hl_sum_link"],
        reason=[r"entry 1: not linked: hl_sum was not received"]),
    "hardlink_over_symlink": dict(
        present={"hl_src": 10, "hl_sym": 10},
        absent=[],
        links=[("hl_src", "hl_sym")],
        reason=[]),
    # -o/-g: root's setuid bits stay the receiver's consent; owners only
    # when asked, names only of the allowed characters
    "owner_cases": dict(
        present={"own_suid": 10},
        absent=["own_unasked", "own_badname"],
        modes={"own_suid": 0o755, "own_sgid_dir": 0o777},
        reason=[r"owner out of place \(only with -o or -g",
                r"sent a malformed owner \(a name is 1\.\.32 bytes"]),
    # -D: device nodes only with the receiver's consent (the test server
    # runs as root without --allow-devices), a FIFO without setuid bits,
    # nothing asked for without the options
    "special_cases": dict(
        present={"ok_special_cases": 10},
        absent=["sp_dev", "sp_escape", "sp_unasked", "sp_dev2"],
        modes={"sp_fifo": 0o666},
        reason=[r"sp_dev: refused: device nodes need the receiver's "
                r"consent",
                REFUSED_PATH + r'"\." or "\.\." component',
                r"announced a FIFO, socket or device node, which this "
                r"transfer did not ask for"]),
    # -X/-A: names in user., trusted. and security. only, in order; items
    # only when asked, only before a file or directory of their idx, a
    # default ACL only before a directory (each refusal ends its session);
    # security.capability set only with the setid consent (the test
    # server runs as root without --allow-setid): the file kept without it
    "xattr_cases": dict(
        present={"xa_cap": 10},
        absent=["xa_sys", "xa_os2", "xa_bare", "xa_order", "xa_link",
                "xa_dflt", "xa_unasked", "xa_unasked_acl", "xa_other",
                "xa_other_1", "xa_hl_src", "xa_hl"],
        xattrs={"xa_cap": {"user.kept": b"yes",
                           "security.capability": None}},
        reason=[in_act(1, XA_MALFORMED),
                in_act(2, XA_MALFORMED),
                in_act(3, XA_MALFORMED),
                in_act(4, XA_MALFORMED),
                in_act(5, SENT + r"extended attributes or an ACL for an "
                       r"entry that is not a file or directory"),
                in_act(6, SENT + r"a default ACL for an entry that is not a "
                       r"directory"),
                in_act(7, SENT + r"extended attributes out of place \(only "
                       r"with -X\)"),
                in_act(8, SENT + r"an ACL out of place \(only with -A\)"),
                in_act(9, SENT + r"extended attributes or an ACL for another "
                       r"entry than the one that follows them"),
                in_act(10, r"DONE: ok 1 failed 0"),
                in_act(10, r"DONE: kept without all their attributes: 1 "
                       r"\(xa_cap: its trusted\. and security\. names "
                       r"need the setid consent"),
                in_act(11, SENT + r"extended attributes or an ACL for an "
                       r"entry that is not a file or directory")]),
    # an item whose flags say the sender could not read every attribute:
    # the up-to-date copy keeps its own (said and counted); without an
    # item, its user. names go
    "xattr_partial": dict(
        present={"xp_keep": 10, "xp_gone": 10},
        absent=[],
        xattrs={"xp_keep": {"user.x": b"v"}, "xp_gone": {"user.x": None}},
        reason=[in_act(2, r"DONE: ok 0 failed 0"),
                in_act(2, r"DONE: kept without all their attributes: 1 "
                       r"\(xp_keep: the sender could not read or send all "
                       r"its attributes")]),
    "more_files": dict(
        present={},
        absent=[f"more_files_{i}" for i in range(1, 5)],
        reason=[r"announced more than the 1 entries it said: cut off",
                r"announced more bytes than the 10 it said: cut off"]),
    "unasked_chunk": dict(
        present={},
        absent=["unasked"],
        reason=[r"not asked for \(entry 7, chunk 0\): cut off"]),
    "wrong_digest_forever": dict(
        present={},
        absent=["wrong_digest", "wrong_digest_2", "flood_failed"],
        reason=[r"chunk 0 failed verification 4 times",
                r"sent 4 times, BAD answered 3 times",
                r"keeps sending chunks of files that failed: cut off"]),
    "bad_sum": dict(
        present={},
        absent=["bad_sum"],
        reason=[r"bad_sum: file digest mismatch"]),
    # a hole reads as zeros: over a chunk an earlier attempt wrote, and as
    # the one chunk of a file that is not sparse (its size set)
    "zero_one_chunk": dict(
        present={"zero_one": 10},
        absent=[],
        content={"zero_one": b"\0" * 10},
        reason=[]),
    "zero_over_held": dict(
        present={"zero_held": 5 * CHUNK},
        absent=[],
        content={"zero_held": b"\0" * CHUNK + b"A" * (4 * CHUNK)},
        reason=[r"gone, the file unfinished", r"entry 0: RESUME"]),
    "first_message": dict(
        present={},
        absent=["first_files", "first_big"],
        reason=[r"ERROR: expected XFER_TOTALS first, got XFER_FILES",
                r"ERROR: malformed XFER_TOTALS"]),
    # XFER_END with a file still open, then one more XFER_FILES
    "files_after_end": dict(
        present={},
        absent=["after_end", "after_end_2"],
        reason=[r"ERROR: FILES after END"]),
    "pipe_short_sum": dict(
        present={},
        absent=["pipe_short"],
        # the SUM (control connection) and chunk 1 (a data stream) race:
        # chunk 1 after the SUM is one the SUM did not ask for
        reason=[r"a pipe's SUM does not match the lengths of its chunks|"
                r"not asked for \(entry 0, chunk 1\): cut off"]),
}


@pytest.fixture
def hostile_bin(linerate_bin):
    env = os.environ.get("HOSTILE_SEND")
    path = (pathlib.Path(env) if env else
            pathlib.Path(linerate_bin).parent / "tests" / "unit" /
            "hostile_send")
    if not path.is_file() or not os.access(path, os.X_OK):
        pytest.skip(f"hostile_send not found at {path}; build it first "
                    f"(ninja -C build) or set HOSTILE_SEND")
    return str(path)


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k != "LINERATE_TOKEN"}
    env.update(extra)
    return env


@pytest.fixture
def token(linerate_bin):
    res = subprocess.run([linerate_bin, "token"], stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=30,
                         env=clean_env())
    assert res.returncode == 0, describe(res)
    return res.stdout.strip()


@pytest.fixture
def token_file(tmp_path, token):
    path = tmp_path / "token"
    path.write_text(token + "\n")
    path.chmod(0o600)
    return str(path)


@pytest.fixture
def area(tmp_path):
    """base/root (the server's root) and base/outside (the sentinel),
    siblings so that "../outside" from the root is the sentinel."""
    base = tmp_path / "base"
    root, outside = base / "root", base / "outside"
    root.mkdir(parents=True)
    outside.mkdir()
    return base, root, outside


def tree(path):
    """Every path below PATH (relative, sorted), symlinks not followed."""
    out = []
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            out.append(os.path.relpath(full, path))
    return sorted(out)


def leftovers(root):
    return [p for p in tree(root)
            if re.search(r"(^|/)\.[^/]*\.(lrpart|lrjournal)$", p)]


def normal_send(linerate_bin, srv, token_file, tmp_path, dest):
    """A well-behaved `linerate send` of one small file into DEST/."""
    src = tmp_path / "hello.txt"
    src.write_bytes(b"hello after a hostile sender\n")
    res = subprocess.run(
        [linerate_bin, "send", "-q", "-p", str(srv.port), "--token-file",
         token_file, str(src), f"{LOOP}:{dest}/"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=60, env=clean_env())
    return res, src.read_bytes()


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_sender(case, linerate_bin, hostile_bin, serve, token,
                        token_file, area, tmp_path):
    exp = CASES[case]
    base, root, outside = area
    tmp_x = pathlib.Path("/tmp/x")
    tmp_x_before = os.path.lexists(tmp_x)
    srv = serve("-B", LOOP, "--root", str(root), "--token-file", token_file)

    res = subprocess.run(
        [hostile_bin, LOOP, str(srv.port), case, str(outside)],
        stdin=subprocess.DEVNULL, capture_output=True, timeout=HOSTILE_TIMEOUT,
        env=clean_env(LINERATE_TOKEN=token))
    out = res.stdout.decode("utf-8", errors="replace")
    err = res.stderr.decode("utf-8", errors="replace")
    # hostile_send may be gone before the receiver has cleaned up: wait
    # for the server to log the end of each of its sessions
    acts = len(re.findall(r"^== act ", out, re.M))
    for i in range(1, acts + 1):
        try:
            srv.wait_log(rf"transfer {i} from ", timeout=15)
        except (TimeoutError, EOFError):
            break
    what = (f"hostile_send {case} exited {res.returncode}\n--- its output\n"
            f"{out}\n--- its stderr\n{err}\n--- server log\n"
            f"{srv.log.text()}\n--- root\n{tree(root)}")

    # nothing outside the root
    assert os.listdir(outside) == [], f"written OUTSIDE the root!\n{what}"
    assert sorted(os.listdir(base)) == ["outside", "root"], \
        f"written beside the root!\n{what}"
    if not tmp_x_before:
        assert not os.path.lexists(tmp_x), f"/tmp/x appeared!\n{what}"
    assert not [n for n in os.listxattr(outside)
                if n.startswith("system.posix_acl_")], \
        f"an ACL was given OUTSIDE the root!\n{what}"

    assert res.returncode != 3, f"the receiver hung\n{what}"
    assert res.returncode == 0, what
    assert srv.alive(), f"the server died\n{what}"

    # what must and must not be below the root
    for rel, size in exp["present"].items():
        st = os.lstat(root / rel) if os.path.lexists(root / rel) else None
        assert st is not None and stat.S_ISREG(st.st_mode) and \
            st.st_size == size, f"{rel}: expected a {size}-byte file\n{what}"
    for rel in exp["absent"]:
        assert not os.path.lexists(root / rel), f"{rel} exists\n{what}"
    for rel, data in exp.get("content", {}).items():
        got = (root / rel).read_bytes()
        assert got == data, (f"{rel} holds {got[:32]!r}... ({len(got)} "
                             f"bytes), not what was sent\n{what}")
    for rel, mode in exp.get("modes", {}).items():
        got = stat.S_IMODE(os.lstat(root / rel).st_mode)
        assert got == mode, f"{rel}: mode {got:o}, not {mode:o}\n{what}"
    for rel, want in exp.get("xattrs", {}).items():
        names = os.listxattr(root / rel, follow_symlinks=False)
        for name, value in want.items():
            got = (os.getxattr(root / rel, name, follow_symlinks=False)
                   if name in names else None)
            assert got == value, \
                f"{rel}: {name} is {got!r}, not {value!r}\n{what}"
    for one, two in exp.get("links", []):
        assert os.path.samefile(root / one, root / two), \
            f"{two} is not a hard link to {one}\n{what}"
    for rel in exp.get("maybe10", []):
        if os.path.lexists(root / rel):
            data = (root / rel).read_bytes()
            assert data == b"A" * 10, f"{rel} holds {data[:64]!r}\n{what}"
    assert leftovers(root) == [], f"temporary files left\n{what}"
    for p in tree(root):
        assert not re.search(r"[\x00-\x1f\x7f]", p), \
            f"a name with a control character was made: {p!r}\n{what}"
    for p in tree(root):
        full = root / p
        if os.path.islink(full):
            # a symlink is data; it must not have been written through
            assert not os.listdir(outside)

    # a clear reason
    text = out + "\n" + srv.log.text()
    assert "memory: Operation not permitted" not in text, \
        (f"the session was cut off with a bogus 'memory' error instead of "
         f"failing the one entry\n{what}")
    for rx in exp["reason"]:
        assert re.search(rx, text), f"no {rx!r} in the output\n{what}"

    # names from the sender reach the log escaped
    raw_log = srv.log.text() + srv.out.text()
    assert "\x1b" not in raw_log and "\x07" not in raw_log, \
        f"a raw control character in the server's output\n{what}"

    # and the server still serves
    dest = f"after_{case}"
    res2, content = normal_send(linerate_bin, srv, token_file, tmp_path,
                                dest)
    assert res2.returncode == 0, f"{describe(res2)}\n{what}"
    assert (root / dest / "hello.txt").read_bytes() == content
    assert srv.alive()
    assert os.listdir(outside) == []


def test_symlink_in_root_is_not_followed_by_overwrite(
        linerate_bin, hostile_bin, serve, token, token_file, area):
    """After symlink_then_write, 'f' (a symlink to OUTSIDE/target that a
    later --overwrite session replaced by a file) is a plain file and the
    target was never made; 'link2' is still the sender's symlink."""
    base, root, outside = area
    srv = serve("-B", LOOP, "--root", str(root), "--token-file", token_file)
    res = subprocess.run(
        [hostile_bin, LOOP, str(srv.port), "symlink_then_write",
         str(outside)],
        stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=HOSTILE_TIMEOUT, env=clean_env(LINERATE_TOKEN=token))
    assert res.returncode == 0, describe(res)
    assert os.path.islink(root / "link2")
    assert os.readlink(root / "link2") == str(outside)
    assert os.path.islink(root / "rel")
    assert not os.path.islink(root / "f") and (root / "f").is_file()
    assert (root / "f").read_bytes() == b"A" * 10
    assert os.listdir(outside) == [], res.stdout
    # 'link' was made a directory by 'link/pwned' first: the symlink of
    # the same name then failed, and pwned landed inside the root
    assert (root / "link").is_dir() and not os.path.islink(root / "link")
    assert (root / "link" / "pwned").read_bytes() == b"B" * 10



@pytest.mark.parametrize("swap", ["file", "symlink"])
def test_hardlink_to_a_file_changed_since_received(
        swap, linerate_bin, hostile_bin, serve, token, token_file, area):
    """-H links are made at the end of the session, only to the inode this
    session received and verified (hardlink.c, leader_open): 'hl_f' is
    received whole, then, while hostile_send holds back XFER_END, replaced
    (renamed over) by another file, or by a symlink to a file outside the
    root.  The link 'hl_g' is not made, its failure says why, and the file
    outside keeps its content and its one name."""
    base, root, outside = area
    secret = outside / "secret"
    secret.write_bytes(b"outside the root, never to be linked\n")
    secret_before = os.lstat(secret)
    srv = serve("-B", LOOP, "--root", str(root), "--token-file", token_file)
    proc = subprocess.Popen(
        [hostile_bin, LOOP, str(srv.port), "hardlink_changed", str(outside)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
        env=clean_env(LINERATE_TOKEN=token))
    out = LineCollector(proc.stdout, "hostile")
    try:
        out.wait_for(r"^paused before END", 30)
        received = os.lstat(root / "hl_f")
        assert stat.S_ISREG(received.st_mode), out.text()
        assert (root / "hl_f").read_bytes() == b"A" * 10
        tmp = root / "hl_f.swap"
        if swap == "file":
            tmp.write_bytes(b"put here after it was verified\n")
        else:
            os.symlink(secret, tmp)
        os.rename(tmp, root / "hl_f")
        swapped = os.lstat(root / "hl_f")
        assert swapped.st_ino != received.st_ino
        proc.stdin.write("go on\n")
        proc.stdin.close()
        rc = proc.wait(timeout=HOSTILE_TIMEOUT)
        out.wait_for(r"^DONE: ", 15)
        srv.wait_log(r"transfer 1 from ", timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    what = (f"hostile_send exited {proc.returncode}\n--- its output\n"
            f"{out.text()}\n--- server log\n{srv.log.text()}\n--- root\n"
            f"{tree(root)}")
    assert rc == 0, what

    # no name made for the replacement, nor for what it points to
    assert not os.path.lexists(root / "hl_g"), \
        f"hl_g was made after hl_f changed\n{what}"
    now = os.lstat(root / "hl_f")
    assert (now.st_ino, now.st_nlink) == (swapped.st_ino, 1), what
    if swap == "symlink":
        assert os.readlink(root / "hl_f") == str(secret), what
    else:
        assert (root / "hl_f").read_bytes() == \
            b"put here after it was verified\n", what
    after = os.lstat(secret)
    assert (after.st_ino, after.st_nlink) == \
        (secret_before.st_ino, secret_before.st_nlink), \
        f"the file outside the root got another name\n{what}"
    assert secret.read_bytes() == b"outside the root, never to be linked\n"
    assert os.listdir(outside) == ["secret"], what
    assert sorted(os.listdir(base)) == ["outside", "root"], what
    assert tree(root) == ["hl_f"], what

    # the reason, to the sender and in the outcome
    assert re.search(r"(?m)^failed: entry 1: not linked: hl_f changed since "
                     r"it was received$", out.text()), what
    assert re.search(r"(?m)^DONE: ok 1 failed 1 ", out.text()), what
    assert re.search(r"hl_g: not linked: hl_f changed since it was "
                     r"received", srv.log.text()), what
    assert srv.alive()

def vm_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


@pytest.mark.parametrize("sessions,window", [(1, None), (4, None),
                                             (1, 1024), (4, 1024)])
def test_memory_bound_on_huge_announcements(sessions, window, linerate_bin,
                                            hostile_bin, serve, token,
                                            token_file, area):
    """A window of SPARSE files of 256 GiB announced in ~10 KB of messages
    (256 when the sender asks for no window, 1,024 when it asks for more),
    no data (issue 15, item 9): the receiver's memory does not grow with
    what is announced. Before, each session took 2 GiB (2 bytes a chunk
    zeroed up front); the bound is 16 MiB a session, 64 MiB with four,
    with the window of 1,024 24 and 96 MiB."""
    base, root, outside = area
    n = window or 256
    srv = serve("-B", LOOP, "--root", str(root), "--token-file", token_file,
                "--max-tests", "4")
    pid = srv.proc.pid
    before = vm_kib(pid, "VmRSS")
    procs = [subprocess.Popen(
        [hostile_bin, LOOP, str(srv.port), "huge_sparse", str(outside)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
        env=clean_env(LINERATE_TOKEN=token, HOSTILE_HOLD_S="6",
                      **({"HOSTILE_WINDOW": str(window)} if window else {})))
        for _ in range(sessions)]
    outs = [LineCollector(p.stdout, f"hostile {i}")
            for i, p in enumerate(procs)]
    try:
        for o in outs:
            o.wait_for(r"holding", 30)
        planned = [o.wait_for(r"planned (\d+) of", 1).group(1) for o in outs]
        assert planned == [str(n)] * sessions, [o.text() for o in outs]
        rss = vm_kib(pid, "VmRSS")
        for p in procs:
            assert p.wait(timeout=40) == 0, [o.text() for o in outs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=10)
    bound = (16 if n == 256 else 24) * 1024 * (1 if sessions == 1 else 4)
    print(f"server RSS {before} KiB idle, {rss} KiB with {sessions} "
          f"session(s) holding {n} x 256 GiB announced")
    assert rss < bound, (
        f"server RSS {rss} KiB with {sessions} session(s) holding {n} x "
        f"256 GiB announced (before: {before} KiB; bound {bound} KiB)")
    assert srv.alive()
    assert os.listdir(outside) == []


@pytest.mark.parametrize("asked,agreed", [(None, 256), (1024, 1024),
                                          (4096, 1024), (300, 300)])
def test_window_is_the_agreed_one(asked, agreed, linerate_bin, hostile_bin,
                                  serve, token, token_file, area):
    """The window of files in flight is what the request asked, at most
    the receiver's 1,024, and 256 when it asked none (docs/PROTOCOL.md
    7.2); one entry past it ends the session with the window named, and
    nothing is written outside the root."""
    base, root, outside = area
    srv = serve("-B", LOOP, "--root", str(root), "--token-file", token_file)
    res = subprocess.run(
        [hostile_bin, LOOP, str(srv.port), "window_overrun", str(outside)],
        stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=HOSTILE_TIMEOUT,
        env=clean_env(LINERATE_TOKEN=token,
                      **({"HOSTILE_WINDOW": str(asked)} if asked else {})))
    assert res.returncode == 0, describe(res)
    assert f"window {agreed}\n" in res.stdout, describe(res)
    assert f"planned {agreed} of {agreed + 1}" in res.stdout, describe(res)
    assert (f"overran the window of {agreed} files") in res.stdout, \
        describe(res)
    assert srv.alive()
    assert os.listdir(outside) == []


@pytest.mark.parametrize("max_tests,agreed", [(1, 424), (4, 256)])
def test_window_fits_the_servers_descriptors(max_tests, agreed, linerate_bin,
                                             hostile_bin, serve, token,
                                             token_file, area):
    """A server whose descriptor limit is 1,024 (a router's) agrees to no
    more files in flight than its descriptors hold with every test slot
    taken: (1,024 - 176) / 2 = 424 for one slot, the protocol's 256 for
    four, however many the sender asks."""
    base, root, outside = area

    def low_nofile():
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))

    srv = serve("-B", LOOP, "--root", str(root), "--token-file", token_file,
                "--max-tests", str(max_tests),
                popen=functools.partial(subprocess.Popen,
                                        preexec_fn=low_nofile))
    res = subprocess.run(
        [hostile_bin, LOOP, str(srv.port), "window_overrun", str(outside)],
        stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=HOSTILE_TIMEOUT,
        env=clean_env(LINERATE_TOKEN=token, HOSTILE_WINDOW="1024"))
    assert res.returncode == 0, describe(res)
    assert f"window {agreed}\n" in res.stdout, describe(res)
    assert f"overran the window of {agreed} files" in res.stdout, \
        describe(res)
    assert srv.alive()
    assert os.listdir(outside) == []


def test_closed_control_lets_its_slot_go(linerate_bin, hostile_bin, serve,
                                         token, token_file, area, tmp_path):
    """A client that closes its control connection right after
    XFER_ACCEPT, with no data stream, frees its slot at once (before, it
    held it 10 s): with --max-tests 1 the next transfer is served."""
    base, root, outside = area
    srv = serve("-B", LOOP, "--root", str(root), "--token-file", token_file,
                "--max-tests", "1")
    res = subprocess.run(
        [hostile_bin, LOOP, str(srv.port), "ctrl_closed_after_accept",
         str(outside)], stdin=subprocess.DEVNULL, capture_output=True,
        text=True, timeout=HOSTILE_TIMEOUT,
        env=clean_env(LINERATE_TOKEN=token))
    assert res.returncode == 0, describe(res)
    srv.wait_log(r"closed its control connection with 0 of \d+ data "
                 r"streams connected", timeout=5)
    res2, content = normal_send(linerate_bin, srv, token_file, tmp_path, "")
    assert res2.returncode == 0, describe(res2)
    assert (root / "hello.txt").read_bytes() == content
    assert not (root / "gone").exists()
