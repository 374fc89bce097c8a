# SPDX-License-Identifier: MIT
"""The static builds against musl (scripts/cross.sh static-TARGET, which
runs this with LINERATE_STATIC_BIN and LINERATE_STATIC_NAME set): the
binary is statically linked and under 3 MB, runs in a chroot holding
nothing but itself (and, for another architecture, qemu's static
emulator), names the OpenSSL it carries, and `--copy-self` takes it to a
far end over a real sshd in test host B whose PATH has no linerate.
Skipped, with the reason, without those variables; scripts/static.sh
fails on any skip.
"""

import os
import re
import shutil
import subprocess

import pytest

from lrproc import describe
from sshutil import SshHost, ssh_skip_reason
from xferutil import MiB, same_file, write_random

# EM_* of each static target, its ELF class, and qemu's static emulator
TARGETS = {"x86_64": (62, 2, None), "aarch64": (183, 2, "qemu-aarch64-static"),
           "mipsel": (8, 1, "qemu-mipsel-static")}
LIMIT = 3_000_000  # bytes, stripped


@pytest.fixture(scope="module")
def static():
    path = os.environ.get("LINERATE_STATIC_BIN")
    name = os.environ.get("LINERATE_STATIC_NAME", "")
    if not path or name not in TARGETS:
        pytest.skip("LINERATE_STATIC_BIN and LINERATE_STATIC_NAME not set: "
                    "run scripts/cross.sh static-TARGET, which sets them")
    return path, name


def program_headers(path):
    """(e_machine, class, [p_type...]) of an ELF file, little-endian."""
    with open(path, "rb") as f:
        h = f.read(64)
        assert h[:4] == b"\x7fELF" and h[5] == 1, h[:8]
        wide = h[4] == 2
        machine = int.from_bytes(h[18:20], "little")
        if wide:
            phoff = int.from_bytes(h[32:40], "little")
            entsize = int.from_bytes(h[54:56], "little")
            num = int.from_bytes(h[56:58], "little")
        else:
            phoff = int.from_bytes(h[28:32], "little")
            entsize = int.from_bytes(h[42:44], "little")
            num = int.from_bytes(h[44:46], "little")
        types = []
        for i in range(num):
            f.seek(phoff + i * entsize)
            types.append(int.from_bytes(f.read(4), "little"))
    return machine, h[4], types


def test_statically_linked_and_small(static):
    path, name = static
    out = subprocess.run(["file", "-b", path], capture_output=True,
                         text=True, timeout=30).stdout
    assert "statically linked" in out or "static-pie" in out, out
    machine, cls, types = program_headers(path)
    em, want_cls, _ = TARGETS[name]
    assert (machine, cls) == (em, want_cls), (machine, cls)
    assert 3 not in types, "a PT_INTERP header: it needs a loader"  # 3
    assert 2 not in types, "a PT_DYNAMIC header"
    size = os.path.getsize(path)
    assert size < LIMIT, f"{size} bytes"


def test_mips_has_no_fpu_instruction(static):
    """An MT7621 has no FPU and OpenWrt's kernel does not emulate one:
    the MIPS build is soft-float (its ELF says so) and holds no FPU
    instruction. (Its integration subset runs under qemu's 24Kc, a CPU
    without an FPU, where one would be SIGILL.)"""
    path, name = static
    if name != "mipsel":
        return  # an FPU is part of x86-64 and aarch64
    tools = {t: shutil.which(f"mipsel-linux-gnu-{t}")
             for t in ("readelf", "objdump")}
    assert all(tools.values()), f"{tools} (Debian binutils-mipsel-linux-gnu)"
    out = subprocess.run([tools["readelf"], "-A", path], capture_output=True,
                         text=True, timeout=60).stdout
    assert "FP ABI: Soft float" in out, out
    dis = subprocess.run([tools["objdump"], "-d", path], capture_output=True,
                         text=True, timeout=300).stdout
    fpu = re.findall(r"\t(?:(?:add|sub|mul|div|sqrt|abs|neg|mov|madd|msub|"
                     r"cvt|trunc|round|floor|ceil|c)\.[a-z]|[ls][wd]c1\b|"
                     r"m[tf]h?c1\b|[ct]fc1\b|bc1[ft]\b)", dis)
    assert len(dis) > 100_000 and not fpu, fpu[:10]


def test_runs_in_a_chroot_with_nothing_else(static, tmp_path):
    """version (the OpenSSL it carries), token (the random generator
    with no /dev), crypto and gen in a chroot holding the binary alone."""
    if os.geteuid() != 0:
        pytest.skip("chroot needs root")
    path, name = static
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(path, root / "linerate")
    argv0 = ["/linerate"]
    emu = TARGETS[name][2]
    if emu:
        found = shutil.which(emu)
        assert found, f"{emu} missing (Debian package qemu-user-static)"
        shutil.copy(found, root / emu)
        argv0 = [f"/{emu}", "/linerate"]
    assert sorted(os.listdir(root)) == sorted(
        ["linerate"] + ([emu] if emu else []))

    def run(*args):
        res = subprocess.run(["chroot", str(root), *argv0, *args],
                             capture_output=True, text=True, timeout=120,
                             stdin=subprocess.DEVNULL)
        assert res.returncode == 0, describe(res)
        return res.stdout

    assert re.search(r"\(OpenSSL 3\.\d+\.\d+ ", run("version")), run("version")
    assert len(run("token").strip().split("-")) == 8
    out = run("crypto", "-s", "0.05")
    assert "ChaCha20-Poly1305" in out and "AES-256-GCM" in out, out
    run("gen", "-q", "/g.bin", "1M")
    assert os.path.getsize(root / "g.bin") == MiB


@pytest.fixture
def sh(hosts, linerate_bin):
    why = ssh_skip_reason()
    if why:
        pytest.skip(why)
    with SshHost(hosts, linerate_bin) as s:
        yield s


def test_copy_self_takes_the_static_build(static, sh, tmp_path):
    """--copy-self=STATIC to a far end without linerate: an x86-64 build
    is copied there and carries the push; another architecture's is
    refused, named, for this x86-64 far end."""
    path, name = static
    src = write_random(tmp_path / "s.bin", 2 * MiB + 1)
    dest = os.path.join(sh.dir, "st")
    res = sh.run_client(["send", f"--copy-self={path}", "-q", str(src),
                         f"root@{sh.hosts.addr_b}:{dest}"], remote_path=False)
    err = res.stderr.decode()
    if name == "x86_64":
        assert res.returncode == 0, err
        assert "there for this run" in err and "dynamically" not in err, err
        same_file(src, os.path.join(dest, "s.bin"))
    else:
        assert res.returncode == 1, err
        assert f"ELF machine {TARGETS[name][0]}" in err, err
        assert not os.path.exists(dest)
