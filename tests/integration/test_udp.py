# SPDX-License-Identifier: MIT
"""UDP tests in linerate's own protocol (docs/PROTOCOL.md section 3, "UDP
tests"): `linerate bench -u` against `linerate serve` on loopback, and in
one case between namespace hosts. The datagram counts of both ends agree,
the JSON carries iperf3's UDP keys, a token authenticates the test (the
datagrams stay in clear and the report says so), hellos that belong to no
test are dropped, and bad requests are refused. Nothing here asserts a
speed; rates are low enough that a busy machine still delivers them.
"""

import json
import re
import socket
import struct
import subprocess
import threading
import time

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


# ---- a receiver's out-of-order and duplicate counts ----------------------
#
# A scripted iperf3 server (its protocol: docs/PROTOCOL.md section 10) that
# sends `linerate bench --iperf3 -u -R` a known sequence: 4 comes after 5
# (one out of order, no loss once it came) and 6 comes twice (a
# duplicate). The client's report must say so per interval and in total.

SEQ = [1, 2, 3, 5, 4, 6, 6, 7, 8, 9, 10]


def _recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError(f"closed after {len(buf)} of {n} bytes")
        buf += chunk
    return buf


def _scripted_iperf3_server(tcp, udp, length, done):
    ctrl, _ = tcp.accept()
    ctrl.settimeout(10)
    try:
        _recv_exact(ctrl, 37)                      # cookie
        ctrl.sendall(bytes([9]))                   # PARAM_EXCHANGE
        n = struct.unpack(">I", _recv_exact(ctrl, 4))[0]
        _recv_exact(ctrl, n)
        ctrl.sendall(bytes([10]))                  # CREATE_STREAMS
        hello, peer = udp.recvfrom(16)
        assert len(hello) == 4, hello
        udp.connect(peer)
        udp.send(struct.pack("=I", 0x39383736))    # UDP_CONNECT_REPLY
        ctrl.sendall(bytes([1, 2]))                # TEST_START, RUNNING
        now = time.time()
        for seq in SEQ:
            hdr = struct.pack(">III", int(now), int(now % 1 * 1e6), seq)
            udp.send(hdr + bytes(length - len(hdr)))
        assert _recv_exact(ctrl, 1) == bytes([4])  # TEST_END
        ctrl.sendall(bytes([13]))                  # EXCHANGE_RESULTS
        n = struct.unpack(">I", _recv_exact(ctrl, 4))[0]
        _recv_exact(ctrl, n)
        ours = json.dumps({
            "cpu_util_total": 1.0, "cpu_util_user": 0.5,
            "cpu_util_system": 0.5, "sender_has_retransmits": -1,
            "streams": [{"id": 1, "bytes": len(SEQ) * length,
                         "retransmits": -1, "jitter": 0, "errors": 0,
                         "packets": len(SEQ), "start_time": 0,
                         "end_time": 1}]}).encode()
        ctrl.sendall(struct.pack(">I", len(ours)) + ours)
        ctrl.sendall(bytes([14]))                  # DISPLAY_RESULTS
        assert _recv_exact(ctrl, 1) == bytes([16])  # IPERF_DONE
        done.append(True)
    finally:
        ctrl.close()


def _run_against_script(linerate_bin, *args):
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    tcp.bind((LOOP, 0))
    tcp.listen(4)
    tcp.settimeout(15)
    port = tcp.getsockname()[1]
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind((LOOP, port))
    udp.settimeout(15)
    done = []
    t = threading.Thread(target=_scripted_iperf3_server,
                         args=(tcp, udp, 100, done), daemon=True)
    t.start()
    try:
        res = run_bench(linerate_bin, "--iperf3", "-p", str(port), "-u",
                        "-R", "-t", "1", "-l", "100", *args, LOOP,
                        timeout=30)
    finally:
        t.join(20)
        tcp.close()
        udp.close()
    assert done, "the scripted server did not finish its script"
    return res


def test_out_of_order_and_duplicates_reported(linerate_bin):
    res = _run_against_script(linerate_bin, "-J")
    assert res.returncode == 0, describe(res)
    doc = json.loads(res.stdout)
    u = doc["end"]["streams"][0]["udp"]
    assert (u["out_of_order"], u["duplicates"], u["lost_packets"]) == \
        (1, 1, 0), u
    # iperf3's packets of a receiver: the highest sequence number
    assert u["packets"] == max(SEQ), u
    ivs = [iv["streams"][0] for iv in doc["intervals"]]
    assert sum(s["out_of_order"] for s in ivs) == 1, ivs
    assert sum(s["duplicates"] for s in ivs) == 1, ivs

    res = _run_against_script(linerate_bin)
    assert res.returncode == 0, describe(res)
    lines = re.findall(r"^\[\s*1\]\s+0\.00-\s*\S+\s+sec\s+1 datagram "
                       r"received out-of-order, 1 duplicate$", res.stdout,
                       re.M)
    assert lines, res.stdout


@pytest.mark.parametrize("mode", [[], ["-R"]], ids=["forward", "reverse"])
def test_tcp_bitrate_caps_each_stream(serve, mode):
    """-b paces TCP streams too (as iperf3's -b): what is sent stays under
    RATE per stream, plus a little slack; a cap, not a speed."""
    srv = serve("-B", LOOP)
    doc = bench_json(srv.argv[0], "-b", "40M", "-P", "2", "-t", "2", *mode,
                     f"{LOOP}:{srv.port}")
    sent = doc["end"]["sum_sent"]
    assert 0 < sent["bits_per_second"] <= 2 * 40e6 * 1.1, sent
    assert doc["start"]["test_start"]["protocol"] == "TCP"


def test_udp_lost_answers_do_not_fail_the_test(hosts, serve, linerate_bin):
    """The server's answers to the streams' hellos (23-byte datagrams from
    its port) are all dropped on the way back: the client takes TEST_START,
    which the server sends once every stream is attached, as the answer,
    and the test runs (docs/PROTOCOL.md section 3, UDP tests)."""
    srv = serve("-B", hosts.addr_b, popen=hosts.popen_b)
    dev = hosts.if_b
    # htb sends the answers (IPv4 total length 51 = 20 + 8 + 23, UDP, from
    # the server's port) to a class whose pfifo holds nothing: dropped
    # (this kernel has no tc drop action)
    tc = [["qdisc", "add", "dev", dev, "root", "handle", "1:", "htb",
           "default", "1", "r2q", "10000"],
          ["class", "add", "dev", dev, "parent", "1:", "classid", "1:1",
           "htb", "rate", "10gbit"],
          ["class", "add", "dev", dev, "parent", "1:", "classid", "1:2",
           "htb", "rate", "10gbit"],
          ["qdisc", "add", "dev", dev, "parent", "1:2", "handle", "20:",
           "pfifo", "limit", "0"],
          ["filter", "add", "dev", dev, "parent", "1:", "protocol", "ip",
           "prio", "1", "u32", "match", "ip", "protocol", "17", "0xff",
           "match", "ip", "sport", str(srv.port), "0xffff", "match", "u16",
           "51", "0xffff", "at", "2", "flowid", "1:2"]]
    for args in tc:
        res = hosts.run_b(["tc", *args], capture_output=True, text=True,
                          timeout=10)
        if res.returncode:
            pytest.skip(f"tc {' '.join(args[:2])}: {res.stderr.strip()}")
    doc = bench_json(linerate_bin, "-u", "-b", "10M", "-t", "1", "-P", "2",
                     f"{hosts.addr_b}:{srv.port}", run=hosts.run_a,
                     timeout=60)
    assert_consistent(doc)
    stats = hosts.run_b(["tc", "-s", "qdisc", "show", "dev", dev],
                        capture_output=True, text=True, timeout=10).stdout
    # the answers were dropped (the test would be moot otherwise): two
    # streams, one answer each at least
    m = re.search(r"qdisc pfifo 20:.*\n\s*Sent \d+ bytes \d+ pkt "
                  r"\(dropped (\d+)", stats)
    assert m and int(m.group(1)) >= 2, stats
