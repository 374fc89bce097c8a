# SPDX-License-Identifier: MIT
"""A linerate built for another architecture (scripts/cross.sh), run
under qemu-user, against this machine's own build: the short subset of
the boards issue. LINERATE_CROSS_BIN names a program that runs the
target's linerate (build-TARGET/linerate-qemu), LINERATE_BIN this
machine's. Every transfer goes both ways across the two builds (the
target's client against this machine's server, and the other way), so
with s390x every wire encoder and decoder meets one of the other byte
order. Skipped, with the reason, without LINERATE_CROSS_BIN.
"""

import os
import subprocess

import pytest

from lrproc import LinerateServer, describe, strict_json
from xferutil import (MiB, XferEnv, compare_tree, end_event, kill_and_reap,
                      make_tree, same_file, wait_resumable, write_random)


# what `linerate crypto --json` says of each target's CPU under qemu
ARCH = {"aarch64": "aarch64", "armhf": "arm", "mipsel": "other",
        "s390x": "other", "i386": "i386",
        # the static builds against musl (scripts/static.sh)
        "static-x86_64": "x86_64", "static-aarch64": "aarch64",
        "static-mipsel": "other"}


@pytest.fixture(scope="module")
def cross_bin():
    """The target's linerate, checked to be the target's."""
    path = os.environ.get("LINERATE_CROSS_BIN")
    name = os.environ.get("LINERATE_CROSS_NAME", "")
    if not path or name not in ARCH:
        pytest.skip("LINERATE_CROSS_BIN and LINERATE_CROSS_NAME not set: "
                    "run scripts/cross.sh TARGET, which sets them")
    assert os.access(path, os.X_OK), path
    res = run([path, "crypto", "--json", "-s", "0.05"], text=True)
    assert res.returncode == 0, describe(res)
    arch = strict_json(res.stdout)["cpu"]["arch"]
    assert arch == ARCH[name], f"{path} is {arch}, not a {name} build"
    return path


@pytest.fixture
def cross_serve(cross_bin):
    servers = []

    def start(*args, **kw):
        srv = LinerateServer(cross_bin, *args, start_timeout=30, **kw)
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        srv.stop()


@pytest.fixture(params=["target-client", "target-server"])
def pair(request, hosts, linerate_bin, cross_bin, serve, cross_serve,
         tmp_path):
    """Transfers between the two builds: the target's linerate as the
    client (this machine's serves), then as the server."""
    if request.param == "target-client":
        return XferEnv(hosts, cross_bin, serve, tmp_path)
    return XferEnv(hosts, linerate_bin, cross_serve, tmp_path)


def run(argv, timeout=120, **kw):
    return subprocess.run(argv, capture_output=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, **kw)


def test_token_crypto_gen_disk(cross_bin, tmp_path):
    res = run([cross_bin, "token"], text=True)
    assert res.returncode == 0, describe(res)
    tok = res.stdout.strip()
    assert len(tok.split("-")) == 8, tok
    res = run([cross_bin, "crypto", "--json", "-s", "0.1"], text=True)
    assert res.returncode == 0, describe(res)
    doc = strict_json(res.stdout)
    rates = [r for r in doc["results"] if r["mbytes_per_second"] > 0]
    assert len(rates) == len(doc["results"]) >= 2, doc
    out = tmp_path / "g.bin"
    res = run([cross_bin, "gen", "-q", str(out), "3M"])
    assert res.returncode == 0, describe(res)
    data = out.read_bytes()
    assert len(data) == 3 * MiB and data.count(0) < len(data) // 100
    res = run([cross_bin, "disk", "--json", "--size", "8M", str(tmp_path)],
              text=True)
    assert res.returncode == 0, describe(res)
    assert strict_json(res.stdout), res.stdout
    assert not [n for n in os.listdir(tmp_path) if "linerate-disk" in n]


def test_bench_over_loopback(cross_bin, cross_serve):
    """The target's bench against the target's server: -P 2, --bidir."""
    srv = cross_serve("-B", "127.0.0.1")
    for extra in (["-P", "2"], ["--bidir"]):
        res = run([cross_bin, "bench", "-J", "-t", "1", "-b", "200M",
                   "-p", str(srv.port), *extra, "127.0.0.1"], text=True)
        assert res.returncode == 0, describe(res)
        doc = strict_json(res.stdout)
        assert doc["end"]["sum_received"]["bytes"] > 0, doc["end"]


def test_bench_across_builds(hosts, linerate_bin, cross_bin, serve,
                             cross_serve, tmp_path):
    """A bench between the two builds, each way, with a token: the
    control messages, the sealed records and TEST_RESULTS across."""
    tf = tmp_path / "token"
    tf.write_text(run([linerate_bin, "token"], text=True).stdout)
    for client, start in ((cross_bin, serve), (linerate_bin, cross_serve)):
        srv = start("-B", hosts.addr_b, "--token-file", tf,
                    popen=hosts.popen_b)
        # TCP with two streams, and UDP (its datagrams' header too)
        for extra in (["-P", "2"], ["-u", "-l", "1200"]):
            res = hosts.run_a([client, "bench", "-J", "-t", "1", "-b",
                               "100M", *extra, "--token-file", str(tf),
                               "-p", str(srv.port), hosts.addr_b],
                              capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)
            assert res.returncode == 0, describe(res)
            doc = strict_json(res.stdout)
            assert doc["end"]["sum_received"]["bytes"] > 0, doc["end"]
            if "-u" in extra:
                got = doc["end"]["sum_received"]
                assert got["lost_packets"] < got["packets"] // 2, got
        srv.stop()


def test_push_and_pull_a_file_and_a_tree(pair):
    x = pair
    x.start_server()
    src = write_random(x.src / "f.bin", 5 * MiB + 7)
    res = x.send_ok("--json", src, x.dest("in/"), timeout=120)
    assert end_event(res.stdout)["ok"] is True
    same_file(src, x.root / "in" / "f.bin")
    top = x.src / "tree"
    make_tree(str(top))
    x.send_ok("-q", top, x.dest("in"), timeout=120)
    compare_tree(str(top), str(x.root / "in" / "tree"))
    back = x.tmp / "back"
    x.get_ok("-q", x.dest("in/f.bin"), x.dest("in/tree"), back, timeout=120)
    same_file(src, back / "f.bin")
    compare_tree(str(top), str(back / "tree"))


def _push_killed_and_resumed(x, src, sub, limit):
    """Push src to SUB at LIMIT, kill the sender once the journal holds a
    record (a chunk reached the far disk), push again: the end event of
    the resume, which kept what was there."""
    proc, out, err = x.popen_send("--json", "--limit", limit, src,
                                  x.dest(sub + "/"))
    wait_resumable(x.root / sub, src.name, 2 * MiB, timeout=60)
    assert proc.poll() is None, f"{out.text()} {err.text()}"
    kill_and_reap(proc)
    res = x.send_ok("--json", src, x.dest(sub + "/"), timeout=300)
    end = end_event(res.stdout)
    assert end["ok"] is True and end["bytes_already_held"] > 0, end
    return end


def test_resume_after_the_sender_is_killed(pair):
    x = pair
    x.start_server()
    src = write_random(x.src / "r.bin", 32 * MiB)
    _push_killed_and_resumed(x, src, "r", "8M")
    same_file(src, x.root / "r" / src.name)


def test_cipher_rule_follows_openssls_masks(cross_bin):
    """auto on the target: OpenSSL's capability variable saying AES and
    carry-less multiply are there gives AES-256-GCM, saying they are not
    gives ChaCha20-Poly1305, whatever qemu's CPU model has; MIPS and s390x
    (no rule for their instructions) always ChaCha20."""
    name = os.environ["LINERATE_CROSS_NAME"].removeprefix("static-")
    if name in ("aarch64", "armhf"):
        var, on, off = "OPENSSL_armcap", "0x24", "0"
    elif name in ("i386", "x86_64"):
        var, on, off = ("OPENSSL_ia32cap", "0x200000200000000",
                        "~0x200000200000000")
    else:
        var = None
    cases = [(on, "aes-256-gcm"), (off, "chacha20-poly1305")] if var else \
        [(None, "chacha20-poly1305")]
    for val, want in cases:
        env = dict(os.environ)
        if var:
            env[var] = val
        res = run([cross_bin, "crypto", "--json", "-s", "0.05"], text=True,
                  env=env)
        assert res.returncode == 0, describe(res)
        auto = strict_json(res.stdout)["auto"]
        assert auto["peer_with_aes"] == want, (var, val, auto)
        if var:
            assert var in auto["why"], auto


GiB = 1024 * MiB
BIG = 5 * GiB  # past every 32-bit size and offset
DATA = ((0, 4 * MiB), (4 * GiB + 512 * MiB, 12 * MiB))  # (offset, length)


def _sparse_big(path):
    """A 5 GiB sparse file: random data at 0 and past 4 GiB, holes
    elsewhere (the data regions are what travels)."""
    with open(path, "wb") as f:
        for off, n in DATA:
            f.seek(off)
            f.write(os.urandom(n))
        f.truncate(BIG)
    return path


def _same_big(src, dst):
    assert os.stat(dst).st_size == BIG, os.stat(dst).st_size
    with open(src, "rb") as a, open(dst, "rb") as b:
        for off, n in DATA:
            assert os.pread(a.fileno(), n, off) == os.pread(b.fileno(), n,
                                                            off), off
        # and the holes read as zeros on both sides of 4 GiB
        for off in (GiB, 4 * GiB - MiB, 4 * GiB, BIG - MiB):
            assert os.pread(b.fileno(), MiB, off) == bytes(MiB), off


def test_a_5_gib_file_and_its_resume(pair):
    """Sizes, offsets and counters past 4 GiB on every target (32-bit
    ones above all): a sparse 5 GiB file whose data lies before and after
    4 GiB is pushed, interrupted, resumed, and arrives whole; its end
    event counts 5 GiB."""
    x = pair
    x.start_server()
    src = _sparse_big(x.src / "big.bin")
    end = _push_killed_and_resumed(x, src, "b", "4M")
    assert end["bytes"] + end["bytes_already_held"] == BIG, end
    _same_big(src, x.root / "b" / src.name)


def test_bench_of_5_gib(cross_bin, cross_serve):
    """bench -n 5G: the byte counters of both ends past 2^32."""
    srv = cross_serve("-B", "127.0.0.1", "--max-duration", "300")
    res = run([cross_bin, "bench", "-J", "-n", "5G", "-p", str(srv.port),
               "127.0.0.1"], text=True, timeout=300)
    assert res.returncode == 0, describe(res)
    end = strict_json(res.stdout)["end"]
    assert end["sum_sent"]["bytes"] == BIG, end["sum_sent"]
    assert end["sum_received"]["bytes"] == BIG, end["sum_received"]
