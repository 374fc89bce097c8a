# SPDX-License-Identifier: MIT
"""`linerate disk`: measures a real directory and /dev/shm, names tmpfs,
leaves no test file behind (also when interrupted by SIGINT or SIGTERM),
and rejects bad usage with exit 2. Given a regular file, only reads it:
the whole file or --size bytes, a short last block included, the file
unchanged; symbolic links and other non-regular files are refused. Speeds
are only checked to be > 0."""

import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile

import pytest

from util import wait_until

MiB = 1 << 20


def run_disk(binary, *args):
    return subprocess.run([binary, "disk", *args], stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=120)


def leftovers(path):
    return [n for n in os.listdir(path) if n.startswith(".linerate-disk")]


def check_json(res, size):
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    for phase in ("write", "read"):
        assert doc[phase]["bytes"] == size
        assert doc[phase]["seconds"] > 0
        assert doc[phase]["bytes_per_second"] > 0
    return doc


def test_tmp_dir_human(linerate_bin, tmp_path):
    res = run_disk(linerate_bin, str(tmp_path), "--size", "16M")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.decode().splitlines()
    assert lines[0].startswith("Device: "), lines
    assert lines[1].startswith("write ") and "B/s" in lines[1], lines
    assert lines[2].startswith("read ") and "B/s" in lines[2], lines
    assert leftovers(tmp_path) == []


def test_tmp_dir_json(linerate_bin, tmp_path):
    res = run_disk(linerate_bin, str(tmp_path), "--size", "16M", "--bs",
                   "256K", "--json")
    doc = check_json(res, 16 * MiB)
    assert doc["bs"] == 256 * 1024
    assert doc["device"]["fstype"]
    assert leftovers(tmp_path) == []


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm")
def test_dev_shm_is_tmpfs(linerate_bin):
    before = set(leftovers("/dev/shm"))
    res = run_disk(linerate_bin, "/dev/shm", "--size", "16M", "--json")
    doc = check_json(res, 16 * MiB)
    assert doc["device"]["kind"] == "tmpfs"
    assert doc["device"]["fstype"] == "tmpfs"
    res = run_disk(linerate_bin, "/dev/shm", "--size", "16M")
    assert res.returncode == 0, res.stderr
    assert "tmpfs" in res.stdout.decode().splitlines()[0]
    # only this run's own file could be there; others' runs are not ours
    assert set(leftovers("/dev/shm")) <= before


def test_default_path_is_cwd(linerate_bin, tmp_path):
    res = subprocess.run([linerate_bin, "disk", "--size", "4M", "--json"],
                         cwd=tmp_path, stdin=subprocess.DEVNULL,
                         capture_output=True, timeout=120)
    check_json(res, 4 * MiB)
    assert json.loads(res.stdout)["path"] == "."
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130),
                                      (signal.SIGTERM, 143)])
def test_interrupt_removes_file(linerate_bin, tmp_path, sig, code):
    if shutil.disk_usage(tmp_path).free < 3 << 30:
        pytest.skip(f"{tmp_path}: less than 3 GiB free")
    proc = subprocess.Popen([linerate_bin, "disk", str(tmp_path), "--size",
                             "2G"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        def test_file_there():
            assert proc.poll() is None, proc.communicate()
            return leftovers(tmp_path)

        wait_until(test_file_there, 20, interval=0.005,
                   what="the test file to appear")
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code, err
    assert b"interrupted" in err
    assert out == b""
    assert leftovers(tmp_path) == []


def make_file(path, size):
    """size bytes of varied data at path; returns (sha256, stat)."""
    block = bytes(range(256)) * 4096  # 1 MiB
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, len(block))
            f.write(block[:n])
            left -= n
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    return fingerprint(path)


def fingerprint(path):
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    st = os.stat(path)
    return digest, st.st_size, st.st_mtime_ns, st.st_ino


def check_file_json(res, size, path):
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["write"] is None
    assert doc["path"] == str(path)
    assert doc["size"] == size
    assert doc["read"]["bytes"] == size
    assert doc["read"]["seconds"] > 0
    assert doc["read"]["bytes_per_second"] > 0
    assert doc["read"]["mode"] in ("O_DIRECT", "fadvise_dontneed")
    return doc


def test_file_read(linerate_bin, tmp_path):
    f = tmp_path / "source.bin"
    before = make_file(f, 8 * MiB)
    res = run_disk(linerate_bin, str(f))
    assert res.returncode == 0, res.stderr
    lines = res.stdout.decode().splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith("Device: "), lines
    assert lines[1].startswith("read ") and "B/s" in lines[1], lines
    res = run_disk(linerate_bin, str(f), "--json", "--bs", "256K")
    doc = check_file_json(res, 8 * MiB, f)
    assert doc["bs"] == 256 * 1024
    assert doc["device"]["fstype"]
    # nothing written, nothing left behind, the file untouched
    assert fingerprint(f) == before
    assert sorted(os.listdir(tmp_path)) == ["source.bin"]


def test_file_short_tail(linerate_bin, tmp_path):
    f = tmp_path / "odd.bin"
    size = 5 * MiB + 12345
    before = make_file(f, size)
    res = run_disk(linerate_bin, str(f), "--bs", "1M", "--json")
    check_file_json(res, size, f)
    # a --size above the file's size reads the whole file
    res = run_disk(linerate_bin, str(f), "--bs", "1M", "--size", "64M",
                   "--json")
    check_file_json(res, size, f)
    assert fingerprint(f) == before


def test_bs_not_dividing_the_default_size(linerate_bin, tmp_path):
    # without --size, any --bs works: the default 256M is not the user's
    f = tmp_path / "odd_bs.bin"
    size = 3 * MiB
    before = make_file(f, size)
    res = run_disk(linerate_bin, str(f), "--bs", "12K", "--json")
    check_file_json(res, size, f)
    assert fingerprint(f) == before
    # a directory run with such a --bs takes the largest multiple in 256M
    res = run_disk(linerate_bin, str(tmp_path), "--bs", "12K", "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["size"] == (256 * MiB) // (12 * 1024) * 12 * 1024
    # a --size given by the user must still be a multiple
    res = run_disk(linerate_bin, str(f), "--bs", "12K", "--size", "1M")
    assert res.returncode == 2 and b"multiple" in res.stderr


def test_file_size_limit(linerate_bin, tmp_path):
    f = tmp_path / "big.bin"
    before = make_file(f, 6 * MiB + 100)
    res = run_disk(linerate_bin, str(f), "--size", "2M", "--bs", "512K",
                   "--json")
    check_file_json(res, 2 * MiB, f)
    assert fingerprint(f) == before


def test_file_progress(linerate_bin, tmp_path):
    f = tmp_path / "p.bin"
    make_file(f, 4 * MiB)
    res = run_disk(linerate_bin, str(f), "--progress", "--bs", "4K")
    assert res.returncode == 0, res.stderr
    for line in res.stderr.decode().splitlines():
        assert line.startswith("read "), line


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm")
def test_file_on_dev_shm(linerate_bin):
    # tmpfs: no real direct I/O (older kernels refuse O_DIRECT: the
    # fadvise path; 6.6 and later take it); either way the read works
    fd, name = tempfile.mkstemp(prefix="linerate-disk-test-", dir="/dev/shm")
    os.close(fd)
    try:
        before = make_file(name, 3 * MiB + 7)
        res = run_disk(linerate_bin, name, "--json")
        doc = check_file_json(res, 3 * MiB + 7, name)
        assert doc["device"]["kind"] == "tmpfs"
        assert fingerprint(name) == before
    finally:
        os.unlink(name)


def test_file_symlink_refused(linerate_bin, tmp_path):
    f = tmp_path / "real.bin"
    before = make_file(f, MiB)
    link = tmp_path / "link.bin"
    link.symlink_to(f)
    res = run_disk(linerate_bin, str(link))
    assert res.returncode == 1, res.stderr
    assert b"symbolic link" in res.stderr, res.stderr
    assert res.stdout == b""
    res = run_disk(linerate_bin, str(link), "--json")
    assert res.returncode == 1
    assert "symbolic link" in json.loads(res.stdout)["error"]
    assert fingerprint(f) == before


def test_not_a_file_or_directory(linerate_bin, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (str(fifo), "/dev/null"):
        res = run_disk(linerate_bin, path, "--size", "4M")
        assert res.returncode == 1, res.stderr
        assert b"not a directory or a regular file" in res.stderr
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    res = run_disk(linerate_bin, str(empty))
    assert res.returncode == 1
    assert b"empty" in res.stderr
    res = run_disk(linerate_bin, str(tmp_path / "missing"), "--size", "4M",
                   "--json")
    assert res.returncode == 1
    assert "error" in json.loads(res.stdout)


@pytest.mark.parametrize("args,what", [
    (["--size", "3M", "--bs", "2M"], b"multiple of --bs"),
    (["--bs", "1000"], b"--bs"),
    (["--bs", "6K", "--size", "12K"], b"multiple of 4K"),
    (["--size", "lots"], b"--size"),
    (["--size", "2T"], b"--size"),
    (["--bogus"], b"--bogus"),
    (["--size"], b"--size"),
    ([".", "extra"], b"extra"),
    (["--json", "--progress"], b"exclude"),
])
def test_usage_errors(linerate_bin, tmp_path, args, what):
    res = run_disk(linerate_bin, *args)
    assert res.returncode == 2, res.stderr
    assert what in res.stderr, res.stderr
    assert res.stdout == b""
    assert leftovers(tmp_path) == []


def test_help(linerate_bin):
    res = run_disk(linerate_bin, "--help")
    assert res.returncode == 0
    assert b"usage: linerate disk" in res.stdout


def test_buffered_goes_through_the_page_cache(linerate_bin, tmp_path):
    """--buffered: the way a transfer uses the disk, never O_DIRECT."""
    res = run_disk(linerate_bin, str(tmp_path), "--size", "8M", "--json",
                   "--buffered")
    doc = check_json(res, 8 * MiB)
    assert doc["write"]["mode"] == "buffered+fdatasync", doc
    assert doc["read"]["mode"] == "fadvise_dontneed", doc
    assert leftovers(tmp_path) == []
    f = tmp_path / "source.bin"
    before = make_file(f, 4 * MiB)
    res = run_disk(linerate_bin, str(f), "--json", "--buffered")
    doc = check_file_json(res, 4 * MiB, f)
    assert doc["read"]["mode"] == "fadvise_dontneed", doc
    assert fingerprint(f) == before
    res = run_disk(linerate_bin, str(tmp_path), "--buffered")
    assert res.returncode == 0, res.stderr
    assert "(buffered + fdatasync)" in res.stdout.decode(), res.stdout
