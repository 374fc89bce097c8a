# SPDX-License-Identifier: MIT
"""`linerate send / get / recv / serve --root` as users run them: the
server (or one-shot receiver) in host B (198.18.0.2), the client in host A
(198.18.0.1), files in the test's tmp dir.  Needs root for the namespaces
(the fixtures skip with the reason otherwise); the IPv6 case runs on
loopback.
"""

import contextlib
import os
import re
import signal
import socket
import stat
import subprocess
import time

import pytest

from lrproc import LineCollector, describe
from util import wait_until
from xferutil import (MiB, output, compare_tree, end_event, env_without_token,
                      immutable,
                      json_events, kill_and_reap, make_tree, same_file,
                      set_link, sh_quote, sha256_file, temp_leftovers,
                      tree_files, wait_exit, wait_resumable, write_random)




# 1 ---------------------------------------------------------------------

def test_single_file_push(xsrv):
    x = xsrv
    src = write_random(x.src / "big.bin", 20 * MiB)
    os.chmod(src, 0o640)
    os.utime(src, ns=(1_650_000_000_987_654_321,) * 2)
    x.send_ok("-P", "4", "-q", src, x.dest("in/"))
    same_file(src, x.root / "in" / "big.bin")
    # HOST:DIR/ is HOST:DIR, as rsync and scp read it; "//", "/./" too
    x.send_ok("-q", src, x.dest("slash//"))
    same_file(src, x.root / "slash" / "big.bin")
    x.send_ok("-q", src, x.dest("./a//b/./c/."))
    same_file(src, x.root / "a" / "b" / "c" / "big.bin")
    assert not temp_leftovers(x.root)


# 2 ---------------------------------------------------------------------

@pytest.mark.parametrize("streams", [[], ["-P", "4"]],
                         ids=["default-streams", "four-streams"])
def test_tree_push(xsrv, streams):
    x = xsrv
    top = x.src / "tree"
    make_tree(top)
    x.send_ok("-q", *streams, top, x.dest("d"))
    dst = x.root / "d" / "tree"
    compare_tree(top, dst)
    # symlinks arrive as symlinks, never followed
    assert os.readlink(dst / "link_out") == "/etc/passwd"
    assert os.readlink(dst / "link_rel") == "a/b/c/deep.bin"
    assert os.path.islink(dst / "link_dangling")
    # setuid dropped by default
    assert stat.S_IMODE(os.lstat(dst / "suid.bin").st_mode) == 0o755
    # sparse: content equal (compare_tree) and holes kept
    sp = os.stat(dst / "sparse.img")
    assert sp.st_size == 64 * MiB
    assert sp.st_blocks * 512 < 8 * MiB, (
        f"sparse file arrived with {sp.st_blocks * 512} bytes allocated")
    assert not temp_leftovers(x.root)


def test_tree_push_keep_setid(xenv):
    x = xenv
    x.start_server("--allow-setid")
    top = x.src / "tree"
    make_tree(top)
    x.send_ok("-q", "--keep-setid", top, x.dest("k"))
    dst = x.root / "k" / "tree"
    compare_tree(top, dst, keep_setid=True)
    assert stat.S_IMODE(os.lstat(dst / "suid.bin").st_mode) == 0o4755


def test_keep_setid_needs_server_consent(xsrv):
    """A token holder cannot plant setuid files on its own say: a server
    without --allow-setid refuses the push, and nothing is written."""
    x = xsrv
    top = x.src / "tree"
    make_tree(top)
    res = x.send("-q", "--keep-setid", top, x.dest("k"))
    assert res.returncode == 1, describe(res)
    assert "--allow-setid" in output(res), describe(res)
    assert not (x.root / "k").exists()
    # the same push without the flag goes through, bits dropped
    x.send_ok("-q", top, x.dest("k"))
    dst = x.root / "k" / "tree"
    assert stat.S_IMODE(os.lstat(dst / "suid.bin").st_mode) == 0o755


# 3 ---------------------------------------------------------------------

def test_empty_file_alone(xsrv):
    x = xsrv
    src = x.src / "empty"
    src.touch()
    os.utime(src, ns=(1_500_000_000_000_000_001,) * 2)
    x.send_ok("-q", src, x.dest())
    same_file(src, x.root / "empty")


def test_empty_dir_alone(xsrv):
    x = xsrv
    src = x.src / "nothing"
    src.mkdir(mode=0o750)
    os.chmod(src, 0o750)
    os.utime(src, ns=(1_500_000_000_000_000_002,) * 2)
    x.send_ok("-q", src, x.dest("e"))
    dst = x.root / "e" / "nothing"
    assert dst.is_dir() and not dst.is_symlink()
    assert os.listdir(dst) == []
    compare_tree(src, dst)


# 4 ---------------------------------------------------------------------

def test_pipe_in(xsrv):
    x = xsrv
    src = write_random(x.src / "piped", 5 * MiB)
    res = x.shell_a(f"cat {sh_quote(src)} | "
                    f"{sh_quote(*x.client_argv('send', '-q', '-'))} "
                    f"{sh_quote(x.dest('dir/name.bin'))}")
    assert res.returncode == 0, describe(res)
    dst = x.root / "dir" / "name.bin"
    assert sha256_file(dst) == sha256_file(src)
    # a file named '-' where the sender runs changes nothing: '-' is
    # standard input, named by HOST:DIR/NAME, never a lone file's DIR
    (x.src / "-").write_bytes(b"not this")
    res = x.shell_a(f"cd {sh_quote(x.src)} && "
                    f"cat {sh_quote(src)} | "
                    f"{sh_quote(*x.client_argv('send', '-q', '-'))} "
                    f"{sh_quote(x.dest('dir2/name.bin'))}")
    assert res.returncode == 0, describe(res)
    assert sha256_file(x.root / "dir2" / "name.bin") == sha256_file(src)


def test_pipe_in_from_head(xsrv):
    x = xsrv
    res = x.shell_a(f"head -c 5M /dev/urandom | tee {sh_quote(x.src / 'h')}"
                    f" | {sh_quote(*x.client_argv('send', '-q', '-'))} "
                    f"{sh_quote(x.dest('dir/head.bin'))}")
    assert res.returncode == 0, describe(res)
    assert os.path.getsize(x.src / "h") == 5 * MiB
    assert sha256_file(x.root / "dir" / "head.bin") == \
        sha256_file(x.src / "h")


def test_recv_stdout(xenv):
    x = xenv
    h = x.h
    src = write_random(x.src / "out.bin", 6 * MiB)
    sink = open(x.tmp / "sink", "wb")
    try:
        recv = h.popen_b([x.bin, "recv", "--stdout", "--token-file",
                          x.token_file, "-p", "0", "-B", h.addr_b],
                         stdin=subprocess.DEVNULL, stdout=sink,
                         stderr=subprocess.PIPE, env=env_without_token())
    finally:
        sink.close()
    err = LineCollector(recv.stderr, "recv stderr")
    try:
        port = int(err.wait_for(r"^\s*port: (\d+)", 10).group(1))
        res = x.send("-q", src, x.dest(), port=port, timeout=60)
        assert res.returncode == 0, describe(res)
        rc = recv.wait(timeout=30)
        assert rc == 0, err.text()
    finally:
        kill_and_reap(recv)
    assert sha256_file(x.tmp / "sink") == sha256_file(src)


def test_get_to_stdout(xsrv):
    x = xsrv
    src = write_random(x.root / "pub.bin", 3 * MiB + 5)
    res = x.get("-q", x.dest("pub.bin"), "-", text=False)
    assert res.returncode == 0, describe(res)
    assert res.stdout == src.read_bytes()


# 5 ---------------------------------------------------------------------

@pytest.mark.parametrize("streams", ["1", "4"])
def test_pull_tree(xsrv, streams):
    x = xsrv
    make_tree(x.root / "tree")
    dest = x.tmp / "pulled"
    dest.mkdir()
    x.get_ok("-q", "-P", streams, x.dest("tree"), dest)
    compare_tree(x.root / "tree", dest / "tree")
    sp = os.stat(dest / "tree" / "sparse.img")
    assert sp.st_blocks * 512 < 8 * MiB


def test_pull_single_file(xsrv):
    x = xsrv
    src = write_random(x.root / "one.bin", 2 * MiB)
    os.utime(src, ns=(1_600_000_000_000_000_123,) * 2)
    dest = x.tmp / "pulled"
    dest.mkdir()
    x.get_ok("-q", x.dest("one.bin"), dest)
    same_file(src, dest / "one.bin")


def test_pull_one_file_takes_dest_name(xsrv):
    """get HOST:FILE DEST as scp and rsync read it: DEST missing (or a
    file) and no trailing slash names the file DEST; a directory pulled,
    several paths, DEST/ or a DIR/ pull make DEST a directory; a file
    there is replaced only as any file is."""
    x = xsrv
    src = write_random(x.root / "one.bin", 3 * MiB + 5)
    os.utime(src, ns=(1_600_000_000_000_000_123,) * 2)
    (x.root / "dir").mkdir()
    write_random(x.root / "dir" / "a", 1000)
    out = x.tmp / "out"
    out.mkdir()
    # a missing DEST: the file itself, its time kept
    x.get_ok("-q", x.dest("one.bin"), out / "copy.bin")
    assert (out / "copy.bin").is_file()
    same_file(src, out / "copy.bin")
    # again: up to date, skipped
    res = x.get_ok(x.dest("one.bin"), out / "copy.bin")
    assert "1 up to date" in res.stderr + res.stdout, describe(res)
    # a different file there: refused without --overwrite, then replaced
    (out / "other.bin").write_bytes(b"not the same")
    res = x.get(x.dest("one.bin"), out / "other.bin")
    assert res.returncode == 1, describe(res)
    assert "exists (use --overwrite or --update)" in res.stderr, \
        describe(res)
    assert (out / "other.bin").read_bytes() == b"not the same"
    x.get_ok("-q", "--overwrite", x.dest("one.bin"), out / "other.bin")
    same_file(src, out / "other.bin")
    # DEST/ with a slash, and a directory pulled: DEST is a directory
    x.get_ok("-q", x.dest("one.bin"), str(out / "d1") + "/")
    same_file(src, out / "d1" / "one.bin")
    x.get_ok("-q", x.dest("dir"), out / "d2")
    assert (out / "d2" / "dir" / "a").is_file()
    x.get_ok("-q", x.dest("dir") + "/", out / "d3")
    assert (out / "d3" / "a").is_file()
    # two paths: DEST a directory of both
    x.get_ok("-q", x.dest("one.bin"), x.dest("dir"), out / "d4")
    assert (out / "d4" / "one.bin").is_file()
    assert (out / "d4" / "dir" / "a").is_file()
    # a directory pulled onto a file: refused, the file kept
    res = x.get(x.dest("dir"), out / "copy.bin")
    assert res.returncode != 0, describe(res)
    assert "Not a directory" in res.stderr, describe(res)
    same_file(src, out / "copy.bin")
    # a dry run names the file as it would be
    res = x.get_ok("-n", "-v", x.dest("one.bin"), out / "dry.bin")
    assert "dry.bin" in res.stdout + res.stderr, describe(res)
    assert not (out / "dry.bin").exists()
    # a dry run of a directory onto a file fails as the run would
    res = x.get("-n", x.dest("dir"), out / "copy.bin")
    assert res.returncode != 0, describe(res)
    assert "Not a directory" in res.stderr, describe(res)
    # a symlink to a file, a dangling one, a FIFO: refused before work,
    # nothing written through them
    (out / "target.bin").write_bytes(b"target")
    os.symlink("target.bin", out / "link.bin")
    os.symlink("nowhere", out / "dangling")
    os.mkfifo(out / "fifo")
    for name, words in (("link.bin", "a symlink to no directory"),
                        ("dangling", "a symlink to no directory"),
                        ("fifo", "neither a directory nor a regular file")):
        res = x.get(x.dest("one.bin"), out / name)
        assert res.returncode == 1, describe(res)
        assert words in res.stderr, describe(res)
    assert (out / "target.bin").read_bytes() == b"target"
    assert os.readlink(out / "link.bin") == "target.bin"
    assert not (out / "nowhere").exists()


def test_push_one_file_takes_dest_name(xsrv):
    """send FILE HOST:NAME as scp and rsync read it: NAME missing (or a
    file) and no trailing slash names the file NAME, its missing parents
    made; an existing directory NAME, NAME/, a directory sent or several
    sources put what is sent into NAME; a file there is replaced only as
    any file is; what is not a file or directory there is refused."""
    x = xsrv
    src = write_random(x.src / "one.bin", 3 * MiB + 5)
    os.utime(src, ns=(1_600_000_000_000_000_321,) * 2)
    # missing: the file itself, its time kept; missing parents made
    x.send_ok("-q", src, x.dest("copy.bin"))
    assert (x.root / "copy.bin").is_file()
    same_file(src, x.root / "copy.bin")
    x.send_ok("-q", src, x.dest("a/b/deep.bin"))
    same_file(src, x.root / "a" / "b" / "deep.bin")
    # again: up to date, skipped
    res = x.send_ok(src, x.dest("copy.bin"))
    assert "1 up to date" in output(res), describe(res)
    # a different file there: refused without --overwrite, then replaced
    (x.root / "other.bin").write_bytes(b"not the same")
    res = x.send(src, x.dest("other.bin"))
    assert res.returncode == 1, describe(res)
    assert "--overwrite" in output(res), describe(res)
    assert (x.root / "other.bin").read_bytes() == b"not the same"
    x.send_ok("-q", "--overwrite", src, x.dest("other.bin"))
    same_file(src, x.root / "other.bin")
    # an existing directory, NAME/ or NAME/.: into it
    (x.root / "box").mkdir()
    x.send_ok("-q", src, x.dest("box"))
    same_file(src, x.root / "box" / "one.bin")
    x.send_ok("-q", src, x.dest("d1/"))
    same_file(src, x.root / "d1" / "one.bin")
    x.send_ok("-q", src, x.dest("d2/."))
    same_file(src, x.root / "d2" / "one.bin")
    # a directory sent, two files sent: NAME is a directory
    (x.src / "tree").mkdir()
    write_random(x.src / "tree" / "a", 1000)
    x.send_ok("-q", x.src / "tree", x.dest("d3"))
    assert (x.root / "d3" / "tree" / "a").is_file()
    two = write_random(x.src / "two.bin", 1000)
    x.send_ok("-q", src, two, x.dest("d4"))
    assert (x.root / "d4" / "two.bin").is_file()
    # a tree onto a file there fails, the file kept
    res = x.send(x.src / "tree", x.dest("copy.bin"))
    assert res.returncode != 0, describe(res)
    assert "Not a directory" in output(res), describe(res)
    same_file(src, x.root / "copy.bin")
    # a symlink or a FIFO there: refused, nothing written through them
    (x.root / "target.bin").write_bytes(b"target")
    os.symlink("target.bin", x.root / "link.bin")
    os.mkfifo(x.root / "fifo")
    for name, words in (("link.bin", "a symlink (never written through)"),
                        ("fifo", "Not a directory"),
                        ("copy.bin/below", "Not a directory")):
        res = x.send(src, x.dest(name))
        assert res.returncode != 0, describe(res)
        assert f"destination '{name}': {words}" in output(res), \
            describe(res)
    assert (x.root / "target.bin").read_bytes() == b"target"
    assert os.readlink(x.root / "link.bin") == "target.bin"
    assert not temp_leftovers(x.root)


# 6 ---------------------------------------------------------------------

def test_existing_file(xsrv):
    x = xsrv
    src = write_random(x.src / "f.bin", MiB)
    dst = x.root / "f.bin"
    dst.write_bytes(b"old content")
    res = x.send("-q", src, x.dest())
    assert res.returncode == 1, describe(res)
    assert "f.bin" in output(res)
    assert re.search(r"exist", output(res)), output(res)
    assert "--overwrite" in output(res), output(res)  # the flag that helps
    assert dst.read_bytes() == b"old content"
    assert not temp_leftovers(x.root)

    x.send_ok("-q", "--overwrite", src, x.dest())
    same_file(src, dst)

    res = x.send_ok("--json", "--update", src, x.dest())
    end = end_event(res.stdout)
    assert end["ok"] is True and end["files_skipped"] == 1, end
    assert end["bytes"] == 0, end
    same_file(src, dst)

    # --update replaces a file whose size or mtime differ
    write_random(src, MiB + 1)
    res = x.send_ok("--json", "--update", src, x.dest())
    end = end_event(res.stdout)
    assert end["files_skipped"] == 0 and end["files_ok"] == 1, end
    same_file(src, dst)


# 7 ---------------------------------------------------------------------

RESUME_SIZE = 64 * MiB


def _start_slow_push(x, src, name=None):
    # --limit slows it as the user would; the link is shaped as well so
    # that the interruption lands mid-transfer whatever --limit does.
    # With name: `send FILE HOST:r/NAME`, the file named NAME.
    x.shape_a("160mbit")
    proc, out, err = x.popen_send("--json", "--limit", "20M", src,
                                  x.dest(f"r/{name}" if name else "r/"))
    # a journal record names chunks that reached the disk: only then has
    # the resume something to keep
    wait_resumable(x.root / "r", name or src.name, 4 * MiB)
    assert proc.poll() is None, (
        f"the transfer finished before it could be interrupted: "
        f"{out.text()} {err.text()}")
    return proc, out, err


def _check_interrupted(x, name):
    d = x.root / "r"
    assert not (d / name).exists(), "final name present after interruption"
    assert (d / f".{name}.lrpart").exists(), os.listdir(d)
    assert (d / f".{name}.lrjournal").exists(), os.listdir(d)


def _resume(x, src, name=None):
    x.unshape_a()
    res = x.send_ok("--json", src,
                    x.dest(f"r/{name}" if name else "r/"), timeout=60)
    end = end_event(res.stdout)
    assert end["ok"] is True, end
    assert end["bytes_already_held"] > 0, end
    assert end["bytes"] < RESUME_SIZE, end
    same_file(src, x.root / "r" / (name or src.name))
    assert not temp_leftovers(x.root)


def test_resume_of_a_file_named_by_dest(xsrv):
    """send FILE HOST:r/NAME killed, then again: resumed under NAME (its
    journal is NAME's), never left as r/NAME/FILE."""
    x = xsrv
    src = write_random(x.src / "resume.bin", RESUME_SIZE)
    proc, _out, _err = _start_slow_push(x, src, "named.bin")
    kill_and_reap(proc)
    _check_interrupted(x, "named.bin")
    _resume(x, src, "named.bin")
    assert sorted(os.listdir(x.root / "r")) == ["named.bin"]


def test_resume_after_sender_killed(xsrv):
    x = xsrv
    src = write_random(x.src / "resume.bin", RESUME_SIZE)
    proc, _out, _err = _start_slow_push(x, src)
    kill_and_reap(proc)
    _check_interrupted(x, src.name)
    _resume(x, src)


def test_resume_after_server_killed(xsrv):
    x = xsrv
    src = write_random(x.src / "resume.bin", RESUME_SIZE)
    proc, out, err = _start_slow_push(x, src)
    port = x.srv.port
    kill_and_reap(x.srv.proc)
    rc, _ = wait_exit(proc, 60)
    assert rc == 1, f"{out.text()} {err.text()}"
    _check_interrupted(x, src.name)
    x.start_server(port=port)
    _resume(x, src)


# 8 ---------------------------------------------------------------------

def test_resume_after_link_cut(xsrv):
    x = xsrv
    src = write_random(x.src / "resume.bin", RESUME_SIZE)
    proc, out, err = _start_slow_push(x, src)
    set_link(x.h, up=False)
    try:
        rc, waited = wait_exit(proc, 75)
    except subprocess.TimeoutExpired:
        kill_and_reap(proc)
        pytest.fail("the sender did not give up within 75 s of the link "
                    "going down")
    finally:
        set_link(x.h, up=True)
    assert rc == 1, f"{out.text()} {err.text()}"
    assert waited <= 60, f"the sender took {waited:.1f} s to give up"
    _check_interrupted(x, src.name)
    _resume(x, src)


# 9 ---------------------------------------------------------------------

@contextlib.contextmanager
def small_tmpfs(x, name, size="16m"):
    """A tmpfs of SIZE mounted at x.tmp/NAME for the server's root (the
    test is skipped when it cannot be mounted); the server is stopped and
    the tmpfs unmounted on the way out."""
    small = x.tmp / name
    small.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}",
                          "tmpfs", small], capture_output=True, text=True,
                         timeout=10)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {res.stderr.strip()}")
    try:
        x.start_server(root=small)
        yield small
    finally:
        if x.srv is not None:
            x.srv.stop()
        r = subprocess.run(["umount", small], capture_output=True,
                           timeout=30)
        if r.returncode != 0:
            subprocess.run(["umount", "-l", small], capture_output=True,
                           timeout=30)


def test_destination_full(xenv):
    x = xenv
    with small_tmpfs(x, "small") as small:
        src = write_random(x.src / "huge.bin", 40 * MiB)
        res = x.send("-q", src, x.dest(), timeout=60)
        assert res.returncode == 1, describe(res)
        assert re.search(r"no space", output(res), re.I), output(res)
        # the size in the file commands' unit, not a raw byte count
        assert "(40.0 MiB needed)" in output(res), output(res)
        assert tree_files(small) == [], tree_files(small)


def test_destination_fills_during_transfer(xenv):
    # Each file fits on the 16 MiB tmpfs by itself, so both pass the free
    # space check made when they are planned; together they do not, and
    # the write that finds the disk full must fail loudly with no partial
    # file under a final name.
    x = xenv
    with small_tmpfs(x, "small2") as small:
        srcdir = x.src / "pair"
        srcdir.mkdir()
        a = write_random(srcdir / "a.bin", 10 * MiB)
        b = write_random(srcdir / "b.bin", 10 * MiB)
        res = x.send("-q", srcdir, x.dest(), timeout=60)
        assert res.returncode == 1, describe(res)
        assert re.search(r"no space", output(res), re.I), output(res)
        # final names: at most the one file that fit, and complete; a
        # temporary (dot) name may stay behind for a resume
        final = [n for n in tree_files(small)
                 if (small / n).is_file()
                 and not os.path.basename(n).startswith(".")]
        assert len(final) <= 1, tree_files(small)
        for name in final:
            want = {"a.bin": a, "b.bin": b}[os.path.basename(name)]
            assert (small / name).read_bytes() == want.read_bytes(), name


def test_unlimited_tmpfs_destination(xenv):
    # A tmpfs mounted with size=0 has no limit and reports 0 blocks: the
    # free-space check that replaces fallocate there must not refuse.
    x = xenv
    with small_tmpfs(x, "unlimited", size="0") as dst:
        src = write_random(x.src / "three.bin", 3 * MiB + 5)
        x.send_ok("-q", src, x.dest())
        assert sha256_file(dst / "three.bin") == sha256_file(src)

# 10 --------------------------------------------------------------------

def test_no_token(xsrv):
    x = xsrv
    src = write_random(x.src / "f.bin", 4096)
    res = x.send("-q", src, x.dest(), token=False, timeout=30)
    # a missing token is a usage error, as a malformed one is (exit 2)
    assert res.returncode == 2, describe(res)
    assert re.search(r"token", output(res), re.I), output(res)
    assert "Try 'linerate send --help'." in res.stderr, describe(res)
    assert tree_files(x.root) == []


def test_wrong_token(xsrv):
    x = xsrv
    src = write_random(x.src / "f.bin", 4096)
    env = env_without_token({"LINERATE_TOKEN": x.new_token()})
    res = x.send("-q", src, x.dest(), token=False, env=env, timeout=30)
    assert res.returncode == 1, describe(res)
    assert "authentication failed" in output(res), output(res)
    assert tree_files(x.root) == []


def test_server_without_root(xenv):
    x = xenv
    x.start_server(with_root=False)
    src = write_random(x.src / "f.bin", 4096)
    res = x.send("-q", src, x.dest(), timeout=30)
    assert res.returncode == 1, describe(res)
    assert "--root" in output(res), output(res)
    res = x.get("-q", x.dest("f.bin"), x.tmp, timeout=30)
    assert res.returncode == 1, describe(res)
    assert "--root" in output(res), output(res)


def test_read_only(xenv):
    x = xenv
    x.start_server("--read-only")
    pub = write_random(x.root / "pub.bin", MiB)
    src = write_random(x.src / "f.bin", 4096)
    res = x.send("-q", src, x.dest(), timeout=30)
    assert res.returncode == 1, describe(res)
    assert "read-only" in output(res), output(res)
    assert tree_files(x.root) == ["pub.bin"]
    dest = x.tmp / "pulled"
    dest.mkdir()
    x.get_ok("-q", x.dest("pub.bin"), dest)
    same_file(pub, dest / "pub.bin")


# 11 --------------------------------------------------------------------

def test_json_events(xsrv):
    x = xsrv
    top = x.src / "j"
    (top / "sub").mkdir(parents=True)
    sizes = {"a.bin": 3 * MiB, "sub/b.bin": 1234, "sub/c.bin": 0}
    for rel, n in sizes.items():
        write_random(top / rel, n)
    res = x.send_ok("--json", top, x.dest())
    events = json_events(res.stdout)
    kinds = [e["event"] for e in events]
    assert kinds[0] == "start" and kinds[-1] == "end", kinds
    assert kinds.count("start") == 1 and kinds.count("end") == 1, kinds
    end = events[-1]
    assert end["ok"] is True, end
    assert end["bytes"] == sum(sizes.values()), end
    assert end["seconds"] > 0, end
    assert end["files_ok"] == len(sizes), end
    assert end["files_failed"] == 0, end
    compare_tree(top, x.root / "j")


# 12 --------------------------------------------------------------------

def _ipv6_loopback_reason():
    if not socket.has_ipv6:
        return "no IPv6 support in Python"
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
    except OSError as exc:
        return f"cannot bind [::1]: {exc}"
    return None


def test_ipv6_loopback(linerate_bin, serve, tmp_path):
    reason = _ipv6_loopback_reason()
    if reason:
        print(f"skipping: {reason}")
        pytest.skip(reason)
    root, srcdir = tmp_path / "root", tmp_path / "src"
    root.mkdir()
    srcdir.mkdir()
    tok = tmp_path / "token"
    res = subprocess.run([linerate_bin, "token"], capture_output=True,
                         text=True, timeout=10)
    tok.write_text(res.stdout)
    srv = serve("-B", "::1", "--root", root, "--token-file", tok)
    src = write_random(srcdir / "six.bin", 3 * MiB)
    res = subprocess.run([linerate_bin, "send", "-q", "-p", str(srv.port),
                          "--token-file", tok, src, "[::1]:v6/"],
                         stdin=subprocess.DEVNULL, capture_output=True,
                         text=True, timeout=60, env=env_without_token())
    assert res.returncode == 0, describe(res)
    same_file(src, root / "v6" / "six.bin")


# 13 --------------------------------------------------------------------

def test_recv_one_shot(xenv):
    x = xenv
    h = x.h
    dest = x.tmp / "inbox"
    recv = h.popen_b([x.bin, "recv", dest, "-p", "0"],
                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, env=env_without_token())
    out = LineCollector(recv.stdout, "recv stdout")
    err = LineCollector(recv.stderr, "recv stderr")
    try:
        token = out.wait_for(r"^\s+token: (\S+)$", 10).group(1)
        port = int(out.wait_for(r"^\s+port: (\d+)$", 10).group(1))
        src = write_random(x.src / "gift.bin", 4 * MiB)
        res = x.send("-q", src, f"{h.addr_b}:", port=port, token=False,
                     env=env_without_token({"LINERATE_TOKEN": token}))
        assert res.returncode == 0, describe(res)
        rc = recv.wait(timeout=30)
        assert rc == 0, f"{out.text()}\n{err.text()}"
    finally:
        kill_and_reap(recv)
    same_file(src, dest / "gift.bin")


# --limit ---------------------------------------------------------------

LIMIT = 8e6  # "8M": bytes/s per `send --help` ("e.g. 50M (bytes/s)")


def _assert_limited(end):
    bps = end["bytes_per_second"]
    assert 0.5 * LIMIT <= bps <= 1.25 * LIMIT, (
        f"--limit 8M: {end['bytes']} bytes in {end['seconds']:.2f} s = "
        f"{bps / 1e6:.2f} MB/s, want about 8 MB/s")


def test_send_limit_caps_rate(xsrv):
    x = xsrv
    top = x.src / "lim"
    top.mkdir()
    write_random(top / "f.bin", 4 * MiB)
    res = x.send_ok("--json", "--limit", "8M", top, x.dest(), timeout=60)
    _assert_limited(end_event(res.stdout))


def test_get_limit_caps_rate(xsrv):
    x = xsrv
    write_random(x.root / "lim.bin", 4 * MiB)
    dest = x.tmp / "pulled"
    dest.mkdir()
    res = x.get_ok("--json", "--limit", "8M", x.dest("lim.bin"), dest,
                   timeout=60)
    _assert_limited(end_event(res.stdout))


# streams chosen by default --------------------------------------------

def test_default_streams_follow_the_source(xsrv):
    # Many small files get two streams, a big file four; the sender decides
    # from the first entries it counts while it connects, so a tree larger
    # than that sample is checked too (1,500 files of 2 KiB).
    x = xsrv
    small = x.src / "small"
    for d in range(3):
        (small / f"d{d}").mkdir(parents=True)
        for i in range(500):
            (small / f"d{d}" / f"f{i}").write_bytes(os.urandom(2048))
    res = x.send_ok("--json", small, x.dest())
    end = end_event(res.stdout)
    assert end["streams"] == 2 and end["files_ok"] == 1500, end
    compare_tree(small, x.root / "small")
    assert not temp_leftovers(x.root)

    big = write_random(x.src / "big.bin", 8 * MiB)
    end = end_event(x.send_ok("--json", big, x.dest()).stdout)
    assert end["streams"] == 4 and end["files_ok"] == 1, end

    # -P wins over the choice
    end = end_event(x.send_ok("--json", "-P", "3", "--overwrite", big,
                              x.dest()).stdout)
    assert end["streams"] == 3, end


def test_same_tree_twice_in_one_push(xsrv):
    # The second copy of each name meets the first: refused ("exists"),
    # never written over, in a directory this session made as in any other.
    x = xsrv
    top = x.src / "twice"
    (top / "sub").mkdir(parents=True)
    for i in range(40):
        (top / "sub" / f"f{i}").write_bytes(os.urandom(3000))
    big = write_random(top / "big.bin", 5 * MiB)
    res = x.send("-q", top, top, x.dest(), timeout=60)
    assert res.returncode == 1, describe(res)
    assert re.search(r"exists", output(res)), output(res)
    compare_tree(top, x.root / "twice")
    assert sha256_file(x.root / "twice" / "big.bin") == sha256_file(big)
    assert not temp_leftovers(x.root)


def test_special_files_in_a_tree_are_told_and_skipped(xsrv):
    """A FIFO and a socket inside a sent tree: each named in one line (and
    a JSON file event), counted in the end event, never made at the
    destination; the rest arrives, the exit status is 0; an excluded one
    is not mentioned."""
    x = xsrv
    t = x.src / "sp"
    (t / "sub").mkdir(parents=True)
    (t / "a.txt").write_bytes(b"abc")
    os.mkfifo(t / "sub" / "fifo")
    os.mkfifo(t / "left-out.fifo")
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(t / "sock"))
        res = x.send_ok("--json", "--exclude", "*.fifo", t, x.dest())
        events = json_events(res.stdout)
        skipped = {e["path"]: e for e in events
                   if e.get("event") == "file" and e["status"] == "special"}
        assert set(skipped) == {"sp/sub/fifo", "sp/sock"}, events
        assert skipped["sp/sub/fifo"]["reason"] == "a FIFO, not sent"
        assert skipped["sp/sock"]["reason"] == "a socket, not sent"
        end = end_event(res.stdout)
        assert end["files_special"] == 2 and end["files_failed"] == 0, end
        assert (x.root / "sp" / "a.txt").read_bytes() == b"abc"
        assert not os.path.lexists(x.root / "sp" / "sub" / "fifo")
        assert not os.path.lexists(x.root / "sp" / "sock")
        # human: one line each, and the count at the end
        res = x.send_ok("--overwrite", "--stats", "--exclude", "*.fifo", t,
                        x.dest())
        text = res.stdout + res.stderr
        assert "skipping sp/sub/fifo (a FIFO, not sent)" in text, text
        assert "skipping sp/sock (a socket, not sent)" in text, text
        assert "left-out" not in text, text
        assert "2 special skipped" in text, text
        assert re.search(r"special \(FIFO, socket, device\), not sent: 2",
                         text), text
    finally:
        s.close()


@pytest.mark.parametrize("mode", ["push", "pull"])
def test_limit_is_named_as_what_held_it(xsrv, tmp_path, mode):
    """A transfer held to the user's --limit says so at the end (human
    and JSON), not "network"."""
    x = xsrv
    src = write_random(x.src / "capped.bin", 3 * MiB)
    if mode == "push":
        res = x.send_ok("--limit", "2M", src, x.dest())
        jres = x.send_ok("--json", "--limit", "2M", "-W", "--overwrite",
                         src, x.dest())
    else:
        x.send_ok("-q", src, x.dest())
        res = x.get_ok("--limit", "2M", x.dest("capped.bin"), tmp_path)
        os.unlink(tmp_path / "capped.bin")
        jres = x.get_ok("--json", "--limit", "2M", x.dest("capped.bin"),
                        tmp_path)
    text = res.stdout + res.stderr
    # said in the unit it was given in: 2M is 2 MiB/s, not "2.1 MB/s"
    assert "limited by: your --limit (2.00 MiB/s)" in text, text
    # the summary's amount and rate in the same (binary) units
    assert re.search(r"(sent|received) 3\.00 MiB in [\d.]+ s: [\d.]+ "
                     r"[KM]iB/s", text), text
    end = end_event(jres.stdout)
    assert end["limited_by"] == "your --limit", end
    assert 0.85 <= end["limited_by_share"] <= 1.0, end
    # and the server's log says the same of the client's cap
    x.srv.wait_log(rf"transfer \d+ from .*: {mode}, .*, held to the "
                   r"client's --limit \(2\.00 MiB/s\).*: ok$")


def _get_to_tty(x, *args, both=False):
    """`linerate get ARGS` in host A with standard output a terminal (a
    pty; standard error too with both), read while it runs; (exit status,
    what the terminal got, stderr)."""
    import pty
    import threading
    master, slave = pty.openpty()
    chunks = []

    def drain():
        while True:
            try:
                b = os.read(master, 65536)
            except OSError:  # EIO: the other side is closed
                return
            if not b:
                return
            chunks.append(b)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        argv = x.client_argv("get", *args)
        res = x.h.run_a(argv, stdin=subprocess.DEVNULL, stdout=slave,
                        stderr=slave if both else subprocess.PIPE,
                        timeout=60, env=env_without_token())
        os.close(slave)
        slave = -1
        reader.join(timeout=30)
        assert not reader.is_alive(), "the terminal did not close"
        return res.returncode, b"".join(chunks), (
            "" if both else res.stderr.decode(errors="replace"))
    finally:
        if slave >= 0:
            os.close(slave)
        reader.join(timeout=30)
        os.close(master)


def test_get_to_a_terminal_refuses_binary(xsrv):
    """`get HOST:FILE -` to a terminal writes text but refuses binary
    data (a NUL byte in its first chunk), as curl does, unless
    --force-tty; the refusal says how to get it."""
    x = xsrv
    (x.root / "notes.txt").write_bytes(b"hello terminal\n" * 10)
    (x.root / "blob.bin").write_bytes(b"\x00\x01binary" * 1000)
    rc, got, err = _get_to_tty(x, x.dest("notes.txt"), "-")
    assert rc == 0, err
    assert b"hello terminal" in got
    rc, got, err = _get_to_tty(x, x.dest("blob.bin"), "-")
    assert rc == 1, err
    assert b"binary" not in got
    assert "not written to a terminal" in err and "--force-tty" in err, err
    rc, got, err = _get_to_tty(x, "--force-tty", x.dest("blob.bin"), "-")
    assert rc == 0, err
    assert b"binary" in got
    # a pipe is not a terminal: no refusal
    res = x.get_ok(x.dest("blob.bin"), "-", text=False)
    assert res.stdout == b"\x00\x01binary" * 1000


def test_get_to_a_terminal_draws_no_progress_into_the_data(xsrv):
    """`get HOST:FILE -` with the data on the terminal the progress line
    would be drawn on: no progress line (curl's rule), the text arrives
    whole, and the summary follows it; --progress still asks for it."""
    x = xsrv
    lines = b"".join(b"line %06d of the text\n" % i for i in range(110000))
    (x.root / "long.txt").write_bytes(lines)  # 2.6 MiB: over 2 s at 1M
    rc, got, _ = _get_to_tty(x, "--limit", "1M", x.dest("long.txt"), "-",
                             both=True)
    assert rc == 0, got[-2000:]
    assert b"\x1b[K" not in got and b"entries" not in got, got[-2000:]
    text = got.replace(b"\r\n", b"\n")  # the terminal's own line ends
    assert text.startswith(lines), text[:200]
    assert b"received 2." in text[len(lines):], text[len(lines):]


@pytest.mark.parametrize("mode", ["push", "pull"])
def test_the_far_ends_refusal_is_said_as_the_far_ends(xsrv, tmp_path, mode):
    """A receiver's disk that refuses a file (a directory made immutable)
    is named as the receiver's at the sending end ("at the receiver:"),
    not as a problem of the machine that prints it; the receiver says it
    in its own words."""
    x = xsrv
    src = write_random(x.src / "f.bin", 4096)
    if mode == "push":
        locked = x.root / "locked"
    else:
        x.send_ok("-q", src, x.dest("p/"))
        locked = tmp_path / "locked"
    locked.mkdir()
    with immutable(locked):
        if mode == "push":
            res = x.send(src, x.dest("locked/"))
            text = output(res)
            assert res.returncode == 1, text
            assert re.search(r"f\.bin: at the receiver: .*Operation not "
                             r"permitted", text), text
        else:
            res = x.get(x.dest("p/f.bin"), str(locked) + "/")
            text = output(res)
            assert res.returncode == 1, text
            assert "Operation not permitted" in text, text
            assert "at the receiver" not in text, text  # its own disk
            x.srv.wait_log(r"transfer \d+ from .*: pull, .*: failed: .*"
                           r"f\.bin: at the receiver: .*Operation not "
                           r"permitted")


def test_pipe_progress_takes_its_size(xsrv):
    """`send -` has no total; --size SIZE (pv's -s) gives its progress one
    (JSON bytes_total), and is refused where there is no pipe."""
    x = xsrv
    data = os.urandom(3 * MiB)
    src = x.src / "pipe.in"
    src.write_bytes(data)
    for extra, want in (([], None), (["--size", "3M"], 3 * MiB)):
        with open(src, "rb") as f:
            res = x.run("send", "--json", "--limit", "4M", *extra, "-",
                        x.dest("piped.bin"), stdin=f)
        assert res.returncode == 0, describe(res)
        prog = [e for e in json_events(res.stdout)
                if e.get("event") == "progress"]
        assert prog, res.stdout
        assert all(e.get("bytes_total") == want for e in prog), prog
        assert (x.root / "piped.bin").read_bytes() == data
        os.unlink(x.root / "piped.bin")
    res = x.send("--size", "3M", src, x.dest())
    assert res.returncode == 2 and "--size is for" in res.stderr, \
        describe(res)


def test_paths_below_the_root_in_words(xsrv, tmp_path):
    """'..' in a path on the server is refused before connecting, in the
    user's words (not "malformed XFER_REQUEST"); '~' is the server's root,
    never a directory named '~'."""
    x = xsrv
    src = write_random(x.src / "n.txt", 1000)
    for args in (("send", src, x.dest("../escape")),
                 ("send", src, x.dest("a/../ok")),
                 ("get", x.dest("../x"), tmp_path)):
        res = x.run(*args)
        assert res.returncode == 2, describe(res)
        assert "may not leave its root" in res.stderr, describe(res)
        assert "malformed" not in res.stderr, describe(res)
    assert not (x.root / "ok").exists() and not (x.root / "a").exists()
    x.send_ok("-q", src, x.dest("~/t/"))
    assert (x.root / "t" / "n.txt").exists() and not (x.root / "~").exists()
    x.get_ok("-q", x.dest("~/t/n.txt"), tmp_path)
    same_file(src, tmp_path / "n.txt")
    # ~/NAME names the one file sent, below the root
    x.send_ok("-q", src, x.dest("~/named.txt"))
    same_file(src, x.root / "named.txt")
    assert not (x.root / "~").exists()


def test_timeout_ends_a_silent_session(xsrv):
    """--timeout SEC (rsync's): a receiver silent that long ends the
    send, saying so, instead of the default 30 s."""
    x = xsrv
    src = write_random(x.src / "slow.bin", 8 * MiB)
    argv = x.client_argv("send", "--timeout", "10", "--limit", "1M", src,
                         x.dest())
    proc = x.h.popen_a(argv, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env=env_without_token())
    # the transfer under way: the receiver's temporary file holds data
    wait_until(lambda: any(p.name.endswith(".lrpart") and
                           p.stat().st_size > 0
                           for p in x.root.iterdir()), 20,
               what="the transfer under way")
    os.kill(x.srv.proc.pid, signal.SIGSTOP)
    t0 = time.monotonic()
    try:
        out, err = proc.communicate(timeout=60)
        elapsed = time.monotonic() - t0
    finally:
        os.kill(x.srv.proc.pid, signal.SIGCONT)
    assert proc.returncode == 1, (out, err)
    assert "for 10 s" in err, err
    assert 9 <= elapsed < 20, f"ended after {elapsed:.1f} s"


@pytest.mark.parametrize("value,low,high", [("1000", 0.9, 5),
                                            ("300ms", 0.25, 0.9)])
def test_send_connect_timeout(tmp_path, linerate_bin, value, low, high):
    """--connect-timeout MS as bench's (iperf3's unit) for send."""
    f = tmp_path / "f"
    f.write_bytes(b"x")
    tok = tmp_path / "tok"
    tok.write_text(subprocess.run([linerate_bin, "token"],
                                  capture_output=True, text=True).stdout)
    with socket.socket() as lsock, socket.socket() as filler:
        lsock.bind(("127.0.0.1", 0))
        lsock.listen(0)
        port = lsock.getsockname()[1]
        filler.settimeout(5)
        filler.connect(("127.0.0.1", port))  # the queue is full now
        t0 = time.monotonic()
        res = subprocess.run([linerate_bin, "send", "--connect-timeout",
                              value, "--token-file", str(tok), "-p",
                              str(port), str(f), "127.0.0.1:"],
                             stdin=subprocess.DEVNULL, capture_output=True,
                             text=True, timeout=30, env=env_without_token())
        elapsed = time.monotonic() - t0
    assert res.returncode == 1, describe(res)
    assert "timed out" in res.stderr, describe(res)
    assert low <= elapsed < high, f"{value} took {elapsed:.2f} s"


def test_command_line_sources_that_are_not_files(xsrv):
    """/dev/stdin and /dev/fd/0 (links to a descriptor) and a FIFO named
    as sources: refused before connecting (exit 2) with the way to send
    what they carry ('-'); nothing made at the destination (no dangling
    symlink, no "0 files" success)."""
    x = xsrv
    fifo = x.src / "named.fifo"
    os.mkfifo(fifo)
    for link in ("/dev/stdin", "/dev/fd/0"):
        res = x.send(link, x.dest("x"))
        assert res.returncode == 2, describe(res)
        assert "give '-'" in res.stderr, describe(res)
    res = x.send(fifo, x.dest("y"))
    assert res.returncode == 2, describe(res)
    assert "a FIFO" in res.stderr and "linerate send -" in res.stderr, \
        describe(res)
    assert not os.path.lexists(x.root / "x")
    assert not os.path.lexists(x.root / "y")


def _progress_in_pty(x, src, cols, resize_to=None, args=None, whole=False):
    """`send --limit 2M SRC` (or `send ARGS SRC`) with its output on a pty
    of COLS columns (resized to RESIZE_TO after 1 s, with SIGWINCH):
    [(seconds, text drawn)] of every redraw, escape sequences taken out;
    with WHOLE, all that was drawn as one text."""
    import fcntl
    import pty
    import struct
    import termios
    master, slave = pty.openpty()

    def size(n):
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, n,
                                                           0, 0))
    size(cols)
    if args is None:
        args = ["--limit", "2M", "--overwrite", "-W"]
    argv = x.client_argv("send", *args, src, x.dest())
    proc = x.h.popen_a(argv, stdin=subprocess.DEVNULL, stdout=slave,
                       stderr=slave, env=env_without_token())
    os.close(slave)
    t0, got, resized = time.monotonic(), [], resize_to is None
    try:
        while True:
            if not resized and time.monotonic() - t0 > 1:
                fcntl.ioctl(master, termios.TIOCSWINSZ,
                            struct.pack("HHHH", 24, resize_to, 0, 0))
                proc.send_signal(signal.SIGWINCH)
                resized = True
                got.append((time.monotonic() - t0, "\x00RESIZED"))
            try:
                b = os.read(master, 65536)
            except OSError:
                break
            if not b:
                break
            got.append((time.monotonic() - t0, b.decode(errors="replace")))
    finally:
        os.close(master)
        proc.wait(timeout=60)
    assert proc.returncode == 0
    if whole:
        return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "",
                      "".join(c for _, c in got if c != "\x00RESIZED"))
    out, after = [], False
    for t, chunk in got:
        if chunk == "\x00RESIZED":
            after = True
            continue
        for seg in re.split(r"[\r\n]", re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "",
                                               chunk)):
            if seg:
                out.append((after, seg))
    # the progress line's redraws only (the end's lines are text that
    # a terminal wraps)
    return [(a, seg) for a, seg in out
            if re.match(r"^ *[0-9.]+ [KMGT]?i?B( / +[0-9.]+ [KMGT]?i?B +[0-9]+%)?"
                        r"( |$)", seg)]


def test_progress_rates_count_what_this_run_moved(xsrv):
    """A send that finds most of the file already there (--update, one
    changed chunk) under --limit 1M: the progress line's rates are what
    this run moved, as the summary's, never the bytes already there
    taken as moved; the first redraw's rate agrees with its average; the
    amount there is said."""
    x = xsrv
    src = write_random(x.src / "held.bin", 6 * MiB)
    x.send_ok("-q", src, x.dest())
    with open(src, "r+b") as f:
        f.seek(5 * MiB)
        f.write(os.urandom(MiB))
    st = os.stat(src)
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
    text = _progress_in_pty(x, src, 200, args=["--update", "--limit", "1M"],
                            whole=True)
    lines = [seg for seg in re.split(r"[\r\n]", text) if seg.strip()]
    rates = [re.search(r"%\s+([\d.]+ \w?i?B)/s\s+ETA \S+\s+avg\s+"
                       r"([\d.]+ \w?i?B)/s", seg) for seg in lines]
    rates = [m for m in rates if m]
    assert rates, text

    def mib(v):
        n, u = v.split()
        return float(n) * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20,
                           "GiB": 1 << 30}[u] / MiB
    # the first redraw has no rate of the moment yet: it shows the
    # average, never "0 B/s" beside a higher one
    assert rates[0].group(1) == rates[0].group(2), rates[0].group(0)
    for m in rates:
        assert mib(m.group(2)) <= 1.3, m.group(0)  # not 6 MiB/s
    assert any("5.00 MiB already there" in seg for seg in lines), text
    summary = [seg for seg in lines if seg.startswith("sent ")]
    assert summary, text
    m = re.match(r"sent ([\d.]+ \w?i?B) in [\d.]+ s: ([\d.]+ \w?i?B)/s",
                 summary[0])
    assert m and mib(m.group(1)) == 1.0, summary[0]
    assert mib(m.group(2)) <= 1.3, summary[0]
    assert "5.00 MiB already there" in summary[0], summary[0]


@pytest.mark.parametrize("cols", [50, 132])
def test_progress_line_fits_the_terminal(xsrv, cols):
    """No progress line reaches the terminal's width (it would wrap and
    stack); a wide one shows every field, a narrow one drops the last
    ones (files first)."""
    x = xsrv
    src = write_random(x.src / "w.bin", 5 * MiB)
    segs = _progress_in_pty(x, src, cols)
    progress = [s for _, s in segs]
    assert len(progress) >= 3, segs
    assert all(len(s) < cols for _, s in segs), \
        [s for _, s in segs if len(s) >= cols]
    if cols >= 132:
        assert any("entries 0/1" in s for s in progress), progress
    else:
        assert not any("entries" in s for s in progress), progress


def test_progress_line_follows_a_resize(xsrv):
    x = xsrv
    src = write_random(x.src / "r.bin", 6 * MiB)
    segs = _progress_in_pty(x, src, 132, resize_to=40)
    after = [s for a, s in segs if a]
    assert after and all(len(s) < 40 for s in after), after
    assert any(len(s) >= 60 for a, s in segs if not a), segs


def test_progress_options_when_not_a_terminal(xsrv):
    """Not on a terminal: no progress line unless --progress (a plain
    line every few seconds); --no-progress: none."""
    x = xsrv
    src = write_random(x.src / "p.bin", 12 * MiB)
    res = x.send_ok("--limit", "2M", src, x.dest())
    assert "ETA" not in res.stderr, res.stderr
    res = x.send_ok("--progress", "--limit", "2M", "--overwrite", "-W", src,
                    x.dest())
    lines = [ln for ln in res.stderr.splitlines() if "ETA" in ln]
    assert lines and "\r" not in res.stderr, res.stderr
