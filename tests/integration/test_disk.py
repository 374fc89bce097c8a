# SPDX-License-Identifier: MIT
"""`linerate disk`: measures a real directory and /dev/shm, names tmpfs,
leaves no test file behind (also when interrupted by SIGINT or SIGTERM),
and rejects bad usage with exit 2. Speeds are only checked to be > 0."""

import json
import os
import shutil
import signal
import subprocess
import time

import pytest

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
        deadline = time.monotonic() + 20
        while not leftovers(tmp_path):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no test file appeared"
            time.sleep(0.005)
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


def test_not_a_directory(linerate_bin, tmp_path):
    f = tmp_path / "file"
    f.write_bytes(b"x")
    res = run_disk(linerate_bin, str(f), "--size", "4M")
    assert res.returncode == 1
    assert b"not a directory" in res.stderr
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
