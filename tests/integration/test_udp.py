# SPDX-License-Identifier: MIT
"""UDP tests in linerate's own protocol (docs/PROTOCOL.md section 3, "UDP
tests"): `linerate bench -u` against `linerate serve` on loopback, and in
one case between namespace hosts. The datagram counts of both ends agree,
the JSON carries iperf3's UDP keys, a token authenticates the test (the
datagrams stay in clear and the report says so), hellos that belong to no
test are dropped, and bad requests are refused. Nothing here asserts a
speed; rates are low enough that a busy machine still delivers them.
"""

import re
import socket
import struct
import subprocess

import pytest

from lrproc import bench_json, describe, run_bench

LOOP = "127.0.0.1"
UDP_HDR64 = 16


def udp_streams(doc):
    return [s["udp"] for s in doc["end"]["streams"]]


def assert_consistent(doc, blksize=1460):
    """Per stream and in the sum: bytes are datagrams of blksize, the
    receiver's total (iperf3's packets: received + lost) is what the
    sender sent, and nothing is NaN or negative."""
    streams = udp_streams(doc)
    assert streams, doc["end"]
    for u in streams:
        for key in ("bytes", "bits_per_second", "jitter_ms", "lost_packets",
                    "packets", "lost_percent", "out_of_order", "seconds"):
            assert isinstance(u[key], (int, float)), (key, u)
            assert u[key] >= 0, (key, u)
        assert u["packets"] > 0, u
        # a receiver's packets count the lost ones too
        assert u["bytes"] <= u["packets"] * blksize, u
    end = doc["end"]
    s = end["sum"]
    assert s["packets"] > 0 and s["lost_packets"] <= s["packets"], s


def test_udp_forward_counts_agree(serve):
    srv = serve("-B", LOOP)
    doc = bench_json(srv.argv[0], "-u", "-b", "20M", "-t", "1",
                     "-P", "2", f"{LOOP}:{srv.port}")
    assert doc["start"]["test_start"]["protocol"] == "UDP"
    assert len(doc["start"]["connected"]) == 2
    assert_consistent(doc)
    # the sender's datagrams are the receiver's received + lost
    end = doc["end"]
    sent = end["sum_sent"]
    recv = end["sum_received"]
    assert sent["bytes"] > 0
    assert recv["bytes"] <= sent["bytes"]
    # 20 Mbit/s per stream for 1 s: about 1700 datagrams each, paced
    per = [u["packets"] for u in udp_streams(doc)]
    assert all(1000 < p < 2600 for p in per), per
    srv.wait_log(r"test 1 from 127\.0\.0\.1:\d+: forward, 2 streams, UDP, "
                 r"no token, .*: ok$")


@pytest.mark.parametrize("mode", [["-R"], ["--bidir"]],
                         ids=["reverse", "bidir"])
def test_udp_reverse_and_bidir(serve, mode):
    srv = serve("-B", LOOP)
    doc = bench_json(srv.argv[0], "-u", "-b", "10M", "-t", "1", *mode,
                     f"{LOOP}:{srv.port}")
    assert_consistent(doc)
    n = 2 if mode == ["--bidir"] else 1
    assert len(doc["start"]["connected"]) == n
    if mode == ["-R"]:
        assert doc["end"]["sum"]["sender"] is False


def test_udp_bytes_limit_counts_whole_datagrams(serve):
    srv = serve("-B", LOOP)
    doc = bench_json(srv.argv[0], "-u", "-b", "50M", "-n", "100K",
                     "-l", "1000", f"{LOOP}:{srv.port}")
    sent = doc["end"]["sum_sent"]["bytes"]
    # -n counts whole datagrams: 100 KiB in 1000-byte datagrams
    assert sent == 103 * 1000, doc["end"]["sum_sent"]
    assert_consistent(doc, blksize=1000)


def test_udp_intervals_carry_datagram_counts(serve):
    srv = serve("-B", LOOP)
    doc = bench_json(srv.argv[0], "-u", "-b", "10M", "-t", "2", "-i", "0.5",
                     f"{LOOP}:{srv.port}")
    ivs = doc["intervals"]
    assert len(ivs) >= 3
    for iv in ivs:
        s = iv["sum"]
        assert isinstance(s["packets"], int) and s["packets"] >= 0, s
        assert "bits_per_second" in s and "bytes" in s
    assert sum(iv["sum"]["packets"] for iv in ivs) > 0


def test_udp_human_table(serve):
    srv = serve("-B", LOOP)
    res = run_bench(srv.argv[0], "-u", "-b", "5M", "-t", "1",
                    f"{LOOP}:{srv.port}")
    assert res.returncode == 0, describe(res)
    out = res.stdout
    assert re.search(r"Jitter\s+Lost/Total Datagrams", out), out
    m = re.search(r"(\d+\.\d+) ms\s+(\d+)/(\d+) \((\S+)%\)\s+receiver$", out,
                  re.M)
    assert m, out
    assert int(m.group(2)) <= int(m.group(3)) and int(m.group(3)) > 0
    assert "Security: none (no token" in out


def test_udp_with_token_says_datagrams_in_clear(serve, linerate_bin,
                                               tmp_path):
    binary = linerate_bin
    token = subprocess.run([binary, "token"], capture_output=True,
                           text=True, timeout=10, check=True).stdout.strip()
    path = tmp_path / "token"
    path.write_text(token + "\n")
    srv = serve("-B", LOOP, "--token-file", path)
    res = run_bench(binary, "-u", "-b", "5M", "-t", "1", "--token-file",
                    path, f"{LOOP}:{srv.port}")
    assert res.returncode == 0, describe(res)
    assert ("Security: authenticated with the token; UDP datagrams in "
            "clear") in res.stdout, res.stdout
    doc = bench_json(binary, "-u", "-b", "5M", "-t", "1", "--token-file",
                     path, f"{LOOP}:{srv.port}")
    lr = doc["end"]["linerate"]
    assert lr["authenticated"] is True and lr["cipher"] == "none", lr
    assert_consistent(doc)
    # without the token the UDP test is refused like any other
    res = run_bench(binary, "-u", "-t", "1", f"{LOOP}:{srv.port}",
                    timeout=30)
    assert res.returncode == 1, describe(res)


def test_stray_hellos_are_dropped(serve):
    """Datagrams on the server's UDP port that are not a waiting test's
    hello get no answer, and the server keeps serving."""
    srv = serve("-B", LOOP)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(0.3)
    try:
        s.connect((LOOP, srv.port))
        hello = b"LRUH" + bytes(16) + struct.pack(">HB", 0, 0)
        for dg in (hello, hello[:-1], b"LRUA" + hello[4:], b"",
                   b"x" * 1500, b"LRUH" + bytes(16) + b"\xff\xff\x00"):
            s.send(dg)
        with pytest.raises((socket.timeout, ConnectionRefusedError)):
            s.recv(64)
    finally:
        s.close()
    doc = bench_json(srv.argv[0], "-u", "-b", "5M", "-t", "1",
                     f"{LOOP}:{srv.port}")
    assert_consistent(doc)


@pytest.mark.parametrize("args,what", [
    (["-u", "-Z"], "-Z"),
    (["-u", "-l", "8"], "-l"),
    (["-u", "-C", "cubic"], "-C"),
])
def test_udp_bad_options(serve, args, what):
    srv = serve("-B", LOOP)
    res = run_bench(srv.argv[0], *args, "-t", "1", f"{LOOP}:{srv.port}",
                    timeout=30)
    assert res.returncode in (1, 2), describe(res)
    assert res.returncode != 0
    assert res.stderr.strip(), describe(res)


def test_udp_between_namespaces(hosts, serve, linerate_bin):
    srv = serve("-B", hosts.addr_b, popen=hosts.popen_b)
    doc = bench_json(linerate_bin, "-u", "-b", "50M", "-t", "1", "-P", "2",
                     f"{hosts.addr_b}:{srv.port}", run=hosts.run_a)
    assert_consistent(doc)
    for c in doc["start"]["connected"]:
        assert c["local_host"] == hosts.addr_a
        assert c["remote_host"] == hosts.addr_b
