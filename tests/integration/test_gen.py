# SPDX-License-Identifier: MIT
"""`linerate gen`: exact sizes, no silent overwrite, compressibility as
asked, standard output, and usage errors (exit 2 naming the value)."""

import gzip
import os
import resource
import signal
import subprocess

import pytest

MiB = 1 << 20


def run_gen(binary, *args, **kw):
    return subprocess.run([binary, "gen", *args], stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=120, **kw)


def gzip1_ratio(path):
    with open(path, "rb") as f:
        data = f.read()
    return len(gzip.compress(data, compresslevel=1)) / len(data)


def test_exact_size(linerate_bin, tmp_path):
    out = tmp_path / "data"
    res = run_gen(linerate_bin, str(out), "64M")
    assert res.returncode == 0, res.stderr
    assert out.stat().st_size == 64 * MiB
    # one summary line, no progress line (stderr is not a terminal)
    lines = res.stderr.decode().splitlines()
    assert len(lines) == 1 and "67108864 bytes" in lines[0], lines


@pytest.mark.parametrize("size,want", [("0", 0), ("1", 1), ("4095", 4095),
                                       (str(MiB + 3), MiB + 3)])
def test_odd_sizes(linerate_bin, tmp_path, size, want):
    out = tmp_path / "data"
    res = run_gen(linerate_bin, "-q", str(out), size)
    assert res.returncode == 0, res.stderr
    assert res.stderr == b""
    assert out.stat().st_size == want


def test_refuses_overwrite(linerate_bin, tmp_path):
    out = tmp_path / "data"
    out.write_bytes(b"keep me")
    res = run_gen(linerate_bin, str(out), "1M")
    assert res.returncode == 1, res.stderr
    assert b"--force" in res.stderr
    assert out.read_bytes() == b"keep me"
    res = run_gen(linerate_bin, "--force", str(out), "1M")
    assert res.returncode == 0, res.stderr
    assert out.stat().st_size == MiB


def test_default_incompressible(linerate_bin, tmp_path):
    out = tmp_path / "data"
    assert run_gen(linerate_bin, str(out), "16M").returncode == 0
    assert gzip1_ratio(out) >= 0.99


def test_compressible_50(linerate_bin, tmp_path):
    out = tmp_path / "data"
    res = run_gen(linerate_bin, "--compressible", "50", str(out), "16M")
    assert res.returncode == 0, res.stderr
    assert 0.40 <= gzip1_ratio(out) <= 0.65


def test_two_runs_differ(linerate_bin, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert run_gen(linerate_bin, str(a), "64K").returncode == 0
    assert run_gen(linerate_bin, str(b), "64K").returncode == 0
    assert a.read_bytes() != b.read_bytes()


def test_stdout(linerate_bin, tmp_path):
    res = run_gen(linerate_bin, "-c", "100", "-", "3M")
    assert res.returncode == 0, res.stderr
    assert res.stdout == bytes(3 * MiB)
    assert not any(p.name == "-" for p in tmp_path.iterdir())


def test_progress_forced(linerate_bin, tmp_path):
    out = tmp_path / "data"
    res = run_gen(linerate_bin, "--progress", str(out), "1M")
    assert res.returncode == 0, res.stderr
    assert b"1.00 MiB (1048576 bytes) in" in res.stderr, res.stderr


def test_write_error_exit_1(linerate_bin):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    res = run_gen(linerate_bin, "--force", "/dev/full", "1M")
    assert res.returncode == 1
    assert res.stderr.decode().startswith("linerate gen: write")
    assert os.path.exists("/dev/full")  # --force never deletes the target


def _small_fsize_limit():
    resource.setrlimit(resource.RLIMIT_FSIZE, (MiB, MiB))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() gets EFBIG


def test_partial_file_removed(linerate_bin, tmp_path):
    out = tmp_path / "data"
    res = run_gen(linerate_bin, str(out), "4M",
                  preexec_fn=_small_fsize_limit)
    assert res.returncode == 1, res.stderr
    assert res.stderr.decode().startswith("linerate gen: write")
    assert not out.exists()


@pytest.mark.parametrize("args,names", [
    (["FILE", "ten"], "'ten'"),
    (["FILE", "2T"], "'2T'"),
    (["-c", "101", "FILE", "1M"], "'101'"),
    (["--compressible", "x", "FILE", "1M"], "--compressible"),
    ([], "missing FILE"),
    (["FILE"], "missing SIZE"),
    (["FILE", "1M", "extra"], "'extra'"),
    (["--bogus", "FILE", "1M"], "--bogus"),
    (["FILE", "1M", "-c"], "-c"),
])
def test_usage_errors(linerate_bin, tmp_path, args, names):
    args = [str(tmp_path / "f") if a == "FILE" else a for a in args]
    res = run_gen(linerate_bin, *args)
    assert res.returncode == 2, res.stderr
    assert names in res.stderr.decode()
    assert not (tmp_path / "f").exists()


def test_help(linerate_bin):
    res = run_gen(linerate_bin, "--help")
    assert res.returncode == 0
    assert b"usage: linerate gen" in res.stdout
