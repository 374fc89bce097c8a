# SPDX-License-Identifier: MIT
"""A file appears under its final name only complete and verified, and
running the same command again finishes the job (issue 15): the cases an
independent peer and fault trials found, through the real binaries, the
server in host B (198.18.0.2), the client in host A (198.18.0.1).
"""

import os
import re
import stat
import struct
import subprocess
import time

from lrproc import describe
from util import wait_until
from xferutil import (MiB, output, json_events, kill_and_reap, same_file,
                      temp_leftovers, tree_files, wait_partial, write_random)

T_NS = 1_650_000_000_000_000_001  # a fixed mtime the source keeps




def journal_chunks(path):
    """The chunk index of each record of a journal (docs/PROTOCOL.md 7.8:
    a 40-byte header, then 24-byte records starting with chunk:u32)."""
    try:
        data = open(path, "rb").read()
    except FileNotFoundError:
        return []
    recs = data[40:]
    return [struct.unpack(">I", recs[i:i + 4])[0]
            for i in range(0, len(recs) - len(recs) % 24, 24)]


def put_chunk(path, data, at=0):
    """Overwrite bytes at AT with DATA, keeping size and mtime."""
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(data)
    os.utime(path, ns=(T_NS, T_NS))


# 2 --------------------------------------------------------------------

def test_journal_latest_record_wins(xsrv):
    """A chunk re-sent in a resumed run gets a second journal record; the
    next resume must hold the chunk's latest data, not its first."""
    x = xsrv
    size, chunk = 8 * MiB, 1 * MiB
    src = write_random(x.src / "j.bin", size)
    a = open(src, "rb").read(chunk)
    b = os.urandom(chunk)
    os.utime(src, ns=(T_NS, T_NS))
    journal = x.root / ".j.bin.lrjournal"

    def slow_push_until(pred, what):
        proc, out, err = x.popen_send("--limit", "1M", "-q", src, x.dest())
        try:
            wait_until(pred, 30, what=what)
        finally:
            kill_and_reap(proc)

    # chunk 0 journaled with A
    slow_push_until(lambda: 0 in journal_chunks(journal),
                    "chunk 0 in the journal")
    # the source's chunk 0 becomes B, size and mtime kept: the resume
    # sends it again and journals it a second time
    put_chunk(src, b)
    slow_push_until(lambda: journal_chunks(journal).count(0) >= 2,
                    "a second record of chunk 0")
    # A back, size and mtime kept: the file holds B at chunk 0, which the
    # sender must be told, so that it sends A
    put_chunk(src, a)
    x.send_ok("-q", src, x.dest())
    same_file(src, x.root / "j.bin")
    assert not temp_leftovers(x.root)


# 10 -------------------------------------------------------------------

def test_fifo_at_the_journal_name(xsrv):
    """A FIFO planted where the journal goes must not block the receiver."""
    x = xsrv
    src = write_random(x.src / "f.bin", 4 * MiB)
    os.mkfifo(x.root / ".f.bin.lrjournal")
    os.mkfifo(x.root / ".f.bin.lrpart")
    res = x.send("-q", src, x.dest(), timeout=40)
    assert res.returncode == 0, describe(res)
    same_file(src, x.root / "f.bin")


# 7 --------------------------------------------------------------------

def test_get_never_serves_temporary_files(xsrv):
    """An interrupted push leaves .NAME.lrpart and .NAME.lrjournal in the
    server's tree; a pull of that directory must not hand them out."""
    x = xsrv
    part = x.root / "part"
    part.mkdir()
    write_random(part / "done.bin", 10_000)
    write_random(part / ".big.iso.lrpart", 100_000)
    write_random(part / ".big.iso.lrjournal", 64)
    write_random(part / ".other.lrjournal", 40)
    dest = x.tmp / "gp"
    res = x.get_ok("--json", x.dest("part"), dest)
    assert sorted(tree_files(dest)) == ["part", "part/done.bin"], (
        tree_files(dest))
    start = [e for e in json_events(res.stdout) if e["event"] == "start"]
    assert start and start[0]["files_total"] == 2, start  # part, done.bin


# 5 --------------------------------------------------------------------

def test_symlinks_the_same_command_finishes(xsrv):
    """A re-run of a finished tree with symlinks exits 0; a symlink that
    cannot be made is a failed file, told as one."""
    x = xsrv
    top = x.src / "t"
    top.mkdir()
    write_random(top / "f", 1000)
    os.symlink("f", top / "l")
    x.send_ok("-q", top, x.dest())
    res = x.send("--json", top, x.dest())  # the same command again
    assert res.returncode == 0, describe(res)
    # the destination's link now points elsewhere: the symlink fails, and
    # its event says so (not "done"), with the flag that helps
    os.unlink(x.root / "t" / "l")
    os.symlink("elsewhere", x.root / "t" / "l")
    res = x.send("--json", top, x.dest())
    assert res.returncode == 1, describe(res)
    evs = [e for e in json_events(res.stdout)
           if e["event"] == "file" and e["path"] == "t/l"]
    assert [e["status"] for e in evs] == ["failed"], evs
    assert "exists" in evs[0]["error"], evs
    assert "--overwrite" in output(res), output(res)
    x.send_ok("-q", "--overwrite", top, x.dest())
    assert os.readlink(x.root / "t" / "l") == "f"
    # the same on the receiving side of a pull
    dest = x.tmp / "pulled"
    x.get_ok("-q", x.dest("t"), dest)
    x.get_ok("-q", x.dest("t"), dest)  # again: exit 0
    os.unlink(dest / "t" / "l")
    os.symlink("other", dest / "t" / "l")
    res = x.get("--json", x.dest("t"), dest)
    assert res.returncode == 1, describe(res)
    evs = [e for e in json_events(res.stdout)
           if e["event"] == "file" and e["path"] == "t/l"]
    assert [e["status"] for e in evs] == ["failed"], evs


# 1 --------------------------------------------------------------------

def test_same_name_twice_in_one_push(xsrv):
    """`send a/f b/f host:` puts two files under one name: the first wins
    whole, the second is refused in one line while the first is in
    flight (before, the second took the first's temporary file), as cp
    refuses to write over a file it just made."""
    x = xsrv
    (x.src / "a").mkdir()
    (x.src / "b").mkdir()
    fa = write_random(x.src / "a" / "f", 3 * MiB)
    write_random(x.src / "b" / "f", 5 * MiB)
    res = x.send("--limit", "2M", fa, x.src / "b" / "f", x.dest(),
                 timeout=30)
    assert res.returncode == 1, describe(res)
    assert re.search(r"f: at the receiver: refused: exists already in "
                     r"this transfer",
                     output(res)), (
        output(res))
    same_file(fa, x.root / "f")
    assert tree_files(x.root) == ["f"], tree_files(x.root)
    # the same size and mtime do not make the second resume the first's
    # temporary file
    fb = x.src / "b" / "f"
    write_random(fb, 3 * MiB)
    st = os.stat(fa)
    os.utime(fb, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.unlink(x.root / "f")
    res = x.send("--limit", "2M", fa, fb, x.dest(), timeout=30)
    assert res.returncode == 1, describe(res)
    same_file(fa, x.root / "f")
    assert not temp_leftovers(x.root)


# 11 -------------------------------------------------------------------

def test_names_escaped_once_bidi_escaped(xenv):
    """A name with terminal controls reaches the first-failure line escaped
    once (\\x1b, not \\x5cx1b), and recv escapes the bidirectional controls
    (U+202E would show "a<RLO>txt.exe" as "aexe.txt")."""
    x = xenv
    x.start_server()
    evil = x.src / "\x1b]0;TITLE\x07"
    write_random(evil, 100)
    res = x.send("-q", evil, x.dest())
    assert res.returncode == 1, describe(res)
    out = output(res)
    assert "first: \\x1b]0;TITLE\\x07: at the receiver: refused" in out, out
    assert "\\x5c" not in out and "\x1b" not in out, out

    from lrproc import LineCollector
    from xferutil import env_without_token
    dest = x.tmp / "inbox"
    dest.mkdir()
    name = "a\u202etxt.exe"
    (dest / name).write_bytes(b"already here")
    recv = x.h.popen_b([x.bin, "recv", dest, "-p", "0"],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=env_without_token())
    rout = LineCollector(recv.stdout, "recv stdout")
    rerr = LineCollector(recv.stderr, "recv stderr")
    try:
        token = rout.wait_for(r"^\s+token: (\S+)$", 10).group(1)
        port = int(rout.wait_for(r"^\s+port: (\d+)$", 10).group(1))
        src = x.src / name
        write_random(src, 100)
        res = x.send("-q", src, f"{x.h.addr_b}:", port=port, token=False,
                     env=env_without_token({"LINERATE_TOKEN": token}))
        assert res.returncode == 1, describe(res)
        recv.wait(timeout=30)
    finally:
        kill_and_reap(recv)
    text = rout.text() + rerr.text()
    assert "\u202e" not in text and "\u202e" not in output(res), text
    assert "a\\xe2\\x80\\xaetxt.exe" in text, text


# 6 --------------------------------------------------------------------

def start_recv(x, dest, port):
    """`linerate recv DEST -p PORT` in host B; (proc, token, stdout,
    stderr collectors)."""
    from lrproc import LineCollector
    from xferutil import env_without_token
    proc = x.h.popen_b([x.bin, "recv", str(dest), "-p", str(port)],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=env_without_token())
    out = LineCollector(proc.stdout, "recv stdout")
    err = LineCollector(proc.stderr, "recv stderr")
    try:
        token = out.wait_for(r"^\s+token: (\S+)$", 10).group(1)
        got = int(out.wait_for(r"^\s+port: (\d+)$", 10).group(1))
    except BaseException:
        kill_and_reap(proc)
        raise
    return proc, token, got, out, err


def test_recv_the_same_command_resumes(xenv):
    """recv killed mid-transfer, then the same recv command and the
    sender's same command (its token) finish the job; the kept token is
    gone once the transfer completes."""
    from xferutil import env_without_token
    x = xenv
    dest = x.tmp / "inbox"  # not there yet: made when the transfer starts
    src = write_random(x.src / "big.bin", 16 * MiB)
    recv, token, port, rout, rerr = start_recv(x, dest, 0)
    env = env_without_token({"LINERATE_TOKEN": token})
    argv = [x.bin, "send", "-p", str(port), "--limit", "2M", "-q",
            str(src), f"{x.h.addr_b}:"]
    send = x.h.popen_a(argv, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=env)
    try:
        wait_partial(dest, "big.bin", 1 * MiB, timeout=30)
        kept = dest / ".linerate-recv.lrtoken"
        assert kept.exists(), sorted(os.listdir(dest))
        assert stat.S_IMODE(os.lstat(kept).st_mode) == 0o600
        recv.kill()
        recv.wait(timeout=10)
        send.wait(timeout=30)
    finally:
        kill_and_reap(send)
        kill_and_reap(recv)
    assert not (dest / "big.bin").exists()
    # the same command again: the same token
    recv, token2, port2, rout, rerr = start_recv(x, dest, port)
    try:
        assert token2 == token, (token, token2)
        assert "unfinished transfer" in rout.text(), rout.text()
        res = x.h.run_a(argv[:4] + argv[6:], stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        text=True, timeout=60, env=env)
        assert res.returncode == 0, describe(res)
        assert recv.wait(timeout=30) == 0, rerr.text()
    finally:
        kill_and_reap(recv)
    same_file(src, dest / "big.bin")
    assert sorted(os.listdir(dest)) == ["big.bin"], os.listdir(dest)
    # completed: the next recv into DIR makes a new token
    recv, token3, _, _, _ = start_recv(x, dest, 0)
    kill_and_reap(recv)
    assert token3 != token
    assert sorted(os.listdir(dest)) == ["big.bin"], os.listdir(dest)


# 8 --------------------------------------------------------------------

def test_nothing_left_behind_by_failures(xsrv):
    """A destination is made only when the first file is about to be
    written: a get with a wrong token or of a missing path, a recv that
    gets nothing, a push that fails first leave no directory behind."""
    x = xsrv
    write_random(x.root / "there.bin", 1000)
    other = x.tmp / "other-token"
    other.write_text(x.new_token() + "\n")
    gdest = x.tmp / "gdest"
    res = x.h.run_a(
        [x.bin, "get", "-p", str(x.srv.port), "--token-file", str(other),
         x.dest("there.bin"), str(gdest)], stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        timeout=30)
    assert res.returncode != 0, describe(res)
    assert not gdest.exists(), "get with a wrong token made its DEST"
    res = x.get(x.dest("not-there"), gdest)
    assert res.returncode != 0, describe(res)
    assert not gdest.exists(), "get of a missing path made its DEST"
    # one file pulled into a missing DEST takes its name (scp's, rsync's)
    x.get_ok("-q", x.dest("there.bin"), gdest)
    same_file(x.root / "there.bin", gdest)

    # recv that gets nothing
    rdest = x.tmp / "never"
    recv, _, _, _, _ = start_recv(x, rdest, 0)
    recv.terminate()
    recv.wait(timeout=10)
    assert not rdest.exists(), "recv that got nothing made its DIR"

    # a push refused before any file: no directory on the server
    res = x.send("-q", x.src / "missing.bin", x.dest("newdir/sub"))
    assert res.returncode != 0, describe(res)
    assert not (x.root / "newdir").exists(), sorted(os.listdir(x.root))
    # and a push that does send makes it
    x.send_ok("-q", x.root / "there.bin", x.dest("newdir/sub/"))
    same_file(x.root / "there.bin", x.root / "newdir" / "sub" / "there.bin")


def serve_cmd(x, *args):
    """`linerate serve --root ROOT ARGS` in host B, to its end."""
    return x.h.run_b([x.bin, "serve", "--root", str(x.root), *map(str, args)],
                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True, timeout=30)


def age(path, seconds):
    """Make PATH look unchanged for SECONDS."""
    t = time.time() - seconds
    os.utime(path, (t, t))


def test_partial_files_listed_cleaned_and_swept(xsrv):
    """Killed pushes leave .NAME.lrpart and .NAME.lrjournal: serve
    --list-partial shows them, --clean-partial removes them except one a
    transfer is writing, and a server removes those older than
    --partial-max-age, then the oldest over --partial-max-size, at its
    start; a second push of a name being received is refused, not mixed."""
    x = xsrv
    (x.root / "isos").mkdir()
    src = write_random(x.src / "big.iso", 12 * MiB)
    proc, _, _ = x.popen_send("--limit", "200K", "-q", src, x.dest("isos"))
    try:
        wait_partial(x.root / "isos", "big.iso", 1 * MiB, timeout=30)
        # while it is written: listed as in use, kept by a clean, and a
        # second push of the same name is refused
        res = serve_cmd(x, "--list-partial")
        assert res.returncode == 0, describe(res)
        assert re.search(r"isos/\.big\.iso\.lrpart.*in use", res.stdout), (
            res.stdout)
        res = serve_cmd(x, "--clean-partial")
        assert res.returncode == 0, describe(res)
        assert "kept isos/.big.iso.lrpart: in use" in res.stdout, res.stdout
        assert (x.root / "isos" / ".big.iso.lrpart").exists()
        # (after waiting, bounded, for the other session to end: one
        # whose sender was killed ends at once)
        res = x.send(src, x.dest("isos"), timeout=60)
        assert res.returncode == 1, describe(res)
        assert "another transfer is receiving it now" in output(res), (
            output(res))
    finally:
        kill_and_reap(proc)
    assert proc.poll() is not None
    x.srv.stop()
    # killed: listed, not in use
    res = serve_cmd(x, "--list-partial")
    assert res.returncode == 0, describe(res)
    line = [ln for ln in res.stdout.splitlines() if "big.iso" in ln]
    assert line and "in use" not in line[0], res.stdout
    assert "1 partial file below the root" in res.stdout, res.stdout

    # a server with --partial-max-age 1h removes the one unchanged for 2 h
    old = x.root / "isos" / ".big.iso.lrpart"
    age(old, 7200)
    age(x.root / "isos" / ".big.iso.lrjournal", 7200)
    write_random(x.root / ".fresh.bin.lrpart", 64 * 1024)
    (x.root / "keep.lrpart").write_bytes(b"not a side name")
    srv = x.start_server("--partial-max-age", "1h")
    srv.wait_log(r"partial files: removed 1 \(", timeout=15)
    assert not old.exists()
    assert not (x.root / "isos" / ".big.iso.lrjournal").exists()
    assert (x.root / ".fresh.bin.lrpart").exists()
    srv.stop()
    # then the oldest go until all fit --partial-max-size
    write_random(x.root / ".second.bin.lrpart", 64 * 1024)
    age(x.root / ".fresh.bin.lrpart", 600)
    srv = x.start_server("--partial-max-size", "100K")
    srv.wait_log(r"partial files: removed 1 \(", timeout=15)
    assert not (x.root / ".fresh.bin.lrpart").exists()
    assert (x.root / ".second.bin.lrpart").exists()
    srv.stop()
    res = serve_cmd(x, "--clean-partial")
    assert res.returncode == 0, describe(res)
    assert "1 partial file removed" in res.stdout, res.stdout
    assert (x.root / "keep.lrpart").exists()
    os.unlink(x.root / "keep.lrpart")
    assert not temp_leftovers(x.root)
    # the push finishes from scratch
    x.start_server()
    x.send_ok("-q", src, x.dest("isos"))
    same_file(src, x.root / "isos" / "big.iso")


# 3 --------------------------------------------------------------------

def rewrite_keeping_mtime(path, offsets, data):
    """Overwrite DATA at each offset, then put the mtime back (the ctime
    still moves)."""
    st = os.stat(path)
    with open(path, "r+b") as f:
        for at in offsets:
            f.seek(at)
            f.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def acked_bytes(lines):
    """The highest bytes_done of the progress events printed so far."""
    done = [int(m.group(1)) for ln in lines
            for m in [re.search(r'"event":"progress".*"bytes_done":(\d+)',
                                ln)] if m]
    return max(done, default=0)


def test_file_changed_while_read_is_read_again(xsrv):
    """A file overwritten at 1 MiB and at 35 MiB while it is read, its
    mtime put back: never a mix that never existed; it is read again and
    arrives as it is now, exit 0."""
    x = xsrv
    src = write_random(x.src / "big.bin", 40 * MiB)
    proc, out, err = x.popen_send("--json", "--limit", "10M", src,
                                  x.dest())
    try:
        # past the first rewritten region, far from the second
        wait_until(lambda: acked_bytes(out.lines) >= 4 * MiB, 20,
                   what="4 MiB acknowledged")
        rewrite_keeping_mtime(src, [1 * MiB, 35 * MiB], b"X" * 4096)
        rc = proc.wait(timeout=60)
    finally:
        kill_and_reap(proc)
    assert rc == 0, out.text() + err.text()
    same_file(src, x.root / "big.bin")
    evs = [e for e in json_events(out.text()) if e["event"] == "file"]
    assert [e["status"] for e in evs] == ["done"], evs
    assert not temp_leftovers(x.root)


def test_file_always_changing_fails_alone(xsrv):
    """A file that changes on every read fails after three reads ("file
    changed as we read it"), the rest of the tree arrives, exit 1, and
    nothing stands under its name."""
    import threading
    x = xsrv
    top = x.src / "t"
    top.mkdir()
    write_random(top / "a.bin", 100_000)
    hot = write_random(top / "hot.bin", 8 * MiB)
    stop = threading.Event()

    def churn():
        for _ in range(400):  # at most 400 x 0.1 s
            if stop.wait(0.1):
                return
            rewrite_keeping_mtime(hot, [0], os.urandom(4096))

    t = threading.Thread(target=churn, daemon=True)
    t.start()
    try:
        res = x.send("--limit", "8M", top, x.dest(), timeout=60)
    finally:
        stop.set()
        t.join(timeout=10)
    assert res.returncode == 1, describe(res)
    assert "t/hot.bin: file changed as we read it" in output(res), (
        output(res))
    same_file(top / "a.bin", x.root / "t" / "a.bin")
    assert not (x.root / "t" / "hot.bin").exists()
    assert not temp_leftovers(x.root)


def test_source_vanished_is_one_line(xsrv):
    """A source counted, then removed before it is read: one line for it,
    the rest arrives, exit 1 (not the end of the push)."""
    x = xsrv
    d = x.src / "d"
    d.mkdir()
    # more entries than a window of 1,024, so the victim is announced
    # (and looked at) only after the removal
    for i in range(1600):
        write_random(d / f"f{i:04d}", 4 * 1024)
    victim = write_random(x.src / "victim.bin", 1000)
    proc, out, err = x.popen_send("--limit", "1M", d, victim, x.dest())
    try:
        wait_until(lambda: (x.root / "d").is_dir(), 20,
                   what="the push under way")
        os.unlink(victim)
        rc = proc.wait(timeout=60)
    finally:
        kill_and_reap(proc)
    text = out.text() + err.text()
    assert rc == 1, text
    assert "victim.bin: vanished before it was read" in text, text
    assert len(os.listdir(x.root / "d")) == 1600
