# SPDX-License-Identifier: MIT
"""Delta of a changed file (rsync's default for a file it replaces):
the receiver holds the chunks of its old copy whose digests the sender's
chunks have, and only the others travel. Between the namespace hosts,
push (`send` in host A to `serve --root` in host B) and pull (`get`);
each result compared with the source byte for byte. Needs root for the
namespaces (the fixtures skip with the reason otherwise).
"""

import hashlib
import os
import shutil
import subprocess

import pytest

from lrproc import describe
from xferutil import (MiB, end_event, json_events, kill_and_reap,
                      same_file, temp_leftovers, wait_journal, write_random)

BIG = 256 * MiB
# unaligned 1 MiB changes: each covers two chunks of 1 MiB
PLACES = (10 * MiB + 12345, 100 * MiB + 777, 200 * MiB + 3)


def overwrite(path, places, seed):
    with open(path, "r+b") as f:
        for i, off in enumerate(places):
            f.seek(off)
            f.write(hashlib.shake_256(b"%d-%d" % (seed, i)).digest(MiB))


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(4 * MiB)
            if not b:
                return h.hexdigest()
            h.update(b)


def copy_file(src, dst):
    with open(src, "rb") as a, open(dst, "wb") as b:
        while True:
            buf = a.read(4 * MiB)
            if not buf:
                break
            b.write(buf)


def changes():
    """(name, change the source, chunks that must travel)"""
    def in_place(p):
        overwrite(p, PLACES, 1)

    def appended(p):
        with open(p, "ab") as f:
            f.write(os.urandom(MiB))

    def truncated(p):
        os.truncate(p, BIG - MiB - 123)

    # three unaligned MiB: two chunks each; an appended MiB: one new
    # chunk; a cut end: every whole chunk is held, the new short last
    # one travels (the digest of part of an old chunk is never told)
    return [("in-place", in_place, 6 * MiB),
            ("appended", appended, MiB),
            ("truncated", truncated, MiB - 123)]


@pytest.fixture
def big_pair(xsrv):
    """A 256 MiB file at the source and the same at the destination."""
    x = xsrv
    src = write_random(x.src / "big.bin", BIG)
    x.send_ok("-q", src, x.dest())
    same_file(src, x.root / "big.bin")
    return x, src


@pytest.mark.parametrize("mode", ["push", "pull"])
@pytest.mark.parametrize("case", [c[0] for c in changes()])
def test_delta_sends_only_the_chunks_that_differ(big_pair, tmp_path, mode,
                                                 case):
    x, src = big_pair
    change, want = {c[0]: (c[1], c[2]) for c in changes()}[case]
    if mode == "pull":
        # the server's copy changes; host A's copy is the old one
        old = tmp_path / "got"
        old.mkdir()
        copy_file(src, old / "big.bin")
        change(x.root / "big.bin")
        res = x.get_ok("--json", "--update", x.dest("big.bin"), old)
        newf, got = x.root / "big.bin", old / "big.bin"
    else:
        change(src)
        res = x.send_ok("--json", "--update", src, x.dest())
        newf, got = src, x.root / "big.bin"
    end = end_event(res.stdout)
    size = os.path.getsize(newf)
    assert end["ok"] is True and end["files_ok"] == 1, end
    assert end["bytes"] == want, end
    assert end["bytes_already_held"] == size - want, end
    same_file(newf, got)
    assert not temp_leftovers(got.parent)


def _loop_written(mnt):
    """Bytes written so far to the loop device mounted at mnt."""
    dev = subprocess.run(["findmnt", "-n", "-o", "SOURCE", str(mnt)],
                         capture_output=True, text=True,
                         timeout=10).stdout.strip()
    with open(f"/sys/block/{os.path.basename(dev)}/stat") as f:
        return int(f.read().split()[6]) * 512


@pytest.mark.parametrize("fs", ["btrfs", "xfs"])
def test_held_chunks_are_cloned_where_extents_are_shared(xenv, tmp_path,
                                                         fs):
    """On a file system that shares extents (btrfs; XFS made with
    reflink, mkfs.xfs's default) the chunks a replaced file keeps are
    cloned from its old copy, never written: a file of 64 MiB and a
    short last chunk, with three unaligned MiB changed, writes a few MB to
    its device (the loop device's own count), and the copy is exact.
    With -W the whole file is written (so the count can tell)."""
    if os.geteuid() != 0:
        pytest.skip("a loop mount needs root")
    if not shutil.which(f"mkfs.{fs}"):
        pytest.skip(f"mkfs.{fs} is missing (package "
                    f"{'btrfs-progs' if fs == 'btrfs' else 'xfsprogs'}; "
                    f"scripts/deps.sh installs it)")
    x = xenv
    img, mnt = tmp_path / f"{fs}.img", tmp_path / fs
    img.write_bytes(b"")
    os.truncate(img, 512 * MiB)
    mkfs = subprocess.run([f"mkfs.{fs}", "-q", "-f", str(img)],
                          capture_output=True, text=True, timeout=60)
    assert mkfs.returncode == 0, describe(mkfs)
    mnt.mkdir()
    mount = subprocess.run(["mount", "-o", "loop", str(img), str(mnt)],
                           capture_output=True, text=True, timeout=60)
    if mount.returncode:
        pytest.skip(f"this kernel mounts no {fs}: {mount.stderr.strip()}")
    try:
        x.start_server(root=mnt)
        # a short last chunk: cloned up to the end of both files
        src = write_random(x.src / "big.bin", 64 * MiB + 12345)
        x.send_ok("-q", src, x.dest())
        overwrite(src, (5 * MiB + 1234, 30 * MiB + 5, 50 * MiB + 77), 7)
        subprocess.run(["sync", "-f", str(mnt)], check=True, timeout=60)
        w0 = _loop_written(mnt)
        res = x.send_ok("--json", "--update", src, x.dest())
        subprocess.run(["sync", "-f", str(mnt)], check=True, timeout=60)
        cloned = _loop_written(mnt) - w0
        end = end_event(res.stdout)
        assert end["bytes"] == 6 * MiB, end
        same_file(src, mnt / "big.bin")
        assert cloned < 24 * MiB, f"{cloned} bytes written for 6 MiB"
        # the whole file, for comparison: written in full
        overwrite(src, (9 * MiB,), 8)
        w0 = _loop_written(mnt)
        x.send_ok("-q", "-W", "--update", src, x.dest())
        subprocess.run(["sync", "-f", str(mnt)], check=True, timeout=60)
        assert _loop_written(mnt) - w0 >= 64 * MiB
        same_file(src, mnt / "big.bin")
        assert not temp_leftovers(mnt)
    finally:
        if x.srv:
            x.srv.stop()
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True,
                       timeout=60)


@pytest.mark.parametrize("mode", ["push", "pull"])
def test_delta_of_several_files(xsrv, tmp_path, mode):
    """Four changed files in one message, one unchanged, one new: the
    plans of the delta files go as each is ready, the sender reads ahead
    of them; only the changed chunks and the new file travel."""
    x = xsrv
    d = x.src / "set"
    d.mkdir()
    for i in range(5):
        write_random(d / ("f%d" % i), 32 * MiB)
    x.send_ok("-q", d, x.dest())
    new = write_random(d / "new", 3 * MiB + 5)
    for i in range(4):  # f4 stays as it is
        overwrite(d / ("f%d" % i), (i * MiB + 4097,), 10 + i)
    if mode == "pull":
        # the server's tree is the new one; host A holds the old
        old = tmp_path / "got"
        old.mkdir()
        x.get_ok("-q", x.dest("set"), old)
        for i in range(4):
            copy_file(d / ("f%d" % i), x.root / "set" / ("f%d" % i))
        copy_file(new, x.root / "set" / "new")
        # the server's copies newer than host A's
        for name in ["f0", "f1", "f2", "f3", "new"]:
            os.utime(x.root / "set" / name, ns=(0, 2 * 10**18))
        res = x.get_ok("--json", "--update", x.dest("set"), old)
        got, want_dir = old / "set", x.root / "set"
    else:
        res = x.send_ok("--json", "--update", d, x.dest())
        got, want_dir = x.root / "set", d
    end = end_event(res.stdout)
    assert end["ok"] is True and end["files_ok"] == 5, end
    assert end["files_skipped"] == 1, end
    assert end["bytes"] == 4 * 2 * MiB + 3 * MiB + 5, end
    for name in ["f0", "f1", "f2", "f3", "f4", "new"]:
        same_file(want_dir / name, got / name)
    assert not temp_leftovers(got)


def test_whole_file_sends_everything(big_pair):
    x, src = big_pair
    overwrite(src, PLACES[:1], 2)
    res = x.send_ok("--json", "--update", "-W", src, x.dest())
    end = end_event(res.stdout)
    assert end["bytes"] == BIG and end["bytes_already_held"] == 0, end
    same_file(src, x.root / "big.bin")


def test_delta_with_checksum_and_overwrite(big_pair):
    """-c finds the content changed under the same size and mtime; the
    delta then moves only the changed chunks. --overwrite replaces by
    delta as well."""
    x, src = big_pair
    st = os.stat(src)
    overwrite(src, PLACES[1:2], 3)
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    res = x.send_ok("--json", "--update", src, x.dest())
    assert end_event(res.stdout)["files_skipped"] == 1  # quick check
    res = x.send_ok("--json", "--update", "-c", src, x.dest())
    end = end_event(res.stdout)
    assert end["bytes"] == 2 * MiB and end["files_ok"] == 1, end
    same_file(src, x.root / "big.bin")
    overwrite(src, PLACES[2:], 4)
    res = x.send_ok("--json", "--overwrite", src, x.dest())
    assert end_event(res.stdout)["bytes"] == 2 * MiB
    same_file(src, x.root / "big.bin")


def test_dry_run_says_delta_or_whole(xsrv):
    x = xsrv
    big = write_random(x.src / "big.bin", 4 * MiB)
    small = write_random(x.src / "small.bin", 1000)
    x.send_ok("-q", big, small, x.dest())
    for p in (big, small):  # newer than the destination's copies
        t = os.stat(x.root / p.name).st_mtime + 10
        os.utime(p, (t, t))
    res = x.send_ok("-n", "--update", big, small, x.dest())
    assert "would replace (delta) big.bin" in res.stdout + res.stderr, \
        describe(res)
    res = x.send_ok("-n", "--json", "--update", big, small, x.dest())
    ev = {e["path"]: e for e in json_events(res.stdout)
          if e.get("event") == "file"}
    assert ev["big.bin"]["status"] == "would_replace", ev
    assert ev["big.bin"]["method"] == "delta", ev
    assert ev["small.bin"]["method"] == "whole", ev  # one chunk
    res = x.send_ok("-n", "--json", "-W", "--update", big, x.dest())
    ev = [e for e in json_events(res.stdout) if e.get("event") == "file"]
    assert ev[0]["method"] == "whole", ev


def test_holes_over_held_chunks(xsrv):
    """A sparse source whose holes lie where the old copy had data: the
    holes travel as ZERO records and must clear the held old bytes."""
    x = xsrv
    name = "sparse.bin"
    old = write_random(x.root / name, 8 * MiB)
    src = x.src / name
    with open(src, "wb") as f:
        f.truncate(8 * MiB)
        f.seek(3 * MiB)
        f.write(old.read_bytes()[3 * MiB:4 * MiB])  # chunk 3 as there
    res = x.send_ok("--json", "--overwrite", src, x.dest())
    end = end_event(res.stdout)
    assert end["bytes_already_held"] == MiB, end
    same_file(src, old, mtime=False)


def test_interrupted_delta_keeps_the_old_file_and_resumes(xsrv):
    """Killed in the middle of a delta, the old file is still whole under
    its name; the same command again resumes from the chunks held and
    received so far."""
    x = xsrv
    size = 64 * MiB
    src = write_random(x.src / "d.bin", size)
    x.send_ok("-q", src, x.dest())
    dst = x.root / "d.bin"
    before = sha(dst)
    # the second half changes: 32 chunks travel, 32 are held
    with open(src, "r+b") as f:
        f.seek(size // 2)
        f.write(os.urandom(size // 2))
    x.shape_a("160mbit")
    proc, out, err = x.popen_send("--json", "--update", "--limit", "10M",
                                  src, x.dest())
    # the 32 held chunks, then received ones (journaled once their data
    # reached the disk)
    wait_journal(x.root, "d.bin", 32 + 3, timeout=30)
    assert proc.poll() is None, f"{out.text()} {err.text()}"
    kill_and_reap(proc)
    assert sha(dst) == before, "the old file changed before the new one"
    assert (x.root / ".d.bin.lrpart").exists(), os.listdir(x.root)
    x.unshape_a()
    res = x.send_ok("--json", "--update", src, x.dest(), timeout=60)
    end = end_event(res.stdout)
    assert end["ok"] is True, end
    assert end["bytes"] < size // 2, end
    assert end["bytes_already_held"] == size - end["bytes"], end
    same_file(src, dst)
    assert not temp_leftovers(x.root)
