# SPDX-License-Identifier: MIT
"""linerate and stock iperf3 (Debian's iperf3) as peers, between two
network namespaces (needs root and iperf3; skipped with the reason
otherwise):

1. `linerate bench --iperf3` in host A against `iperf3 -s -1 -J` in B:
   both finish and their two reports of the same test agree;
2. `iperf3 -c -J` in A against `linerate serve --iperf3-port` in B;
3. two iperf3 clients at once against one linerate serve;
4. linerate's --json read the way perfSONAR's pScheduler iperf3 parser
   reads iperf3 -J (with stock iperf3's own output as the control);
5. bad input on serve's iperf3 port (raw sockets from A): an error state
   or a close within a bounded time, and the server goes on serving.

Byte counts: the bytes sent agree exactly between the two reports, the
bytes received within one block (-l); see ip3util.assert_reports_agree.
Nothing here asserts a speed.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from ip3util import (assert_reports_agree, describe, error_or_close,
                     finish_iperf3_server, iperf3_doc, perfsonar_read,
                     run_iperf3_client, start_iperf3_server, strict_json)
from lrproc import LinerateServer, run_bench
from util import wait_for_line, wait_for_listen, wait_until

IPERF3_SERVER_PORT = 5301   # stock `iperf3 -s` in host B
LR_IPERF3_PORT = 5401       # linerate serve's iperf3 port in host B
TCP_LEN = 128 * 1024
UDP_LEN = 1460
NBYTES = 20 * 1024 * 1024
IP3UTIL = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "ip3util.py")

# name: (arguments common to linerate bench and iperf3 -c, expectations)
MODES = {
    "tcp": (["-t", "2", "-l", "128K"], {}),
    "reverse": (["-t", "2", "-l", "128K", "-R"], {"reverse": True}),
    "bidir": (["-t", "2", "-l", "128K", "--bidir"], {"bidir": True}),
    "parallel4": (["-t", "2", "-l", "128K", "-P", "4"], {"streams": 4}),
    "bytes20M": (["-n", "20M", "-l", "128K"], {"exact_sent": NBYTES}),
    "tuned": (["-t", "2", "-l", "128K", "-O", "1", "-w", "512K", "-C",
               "cubic", "-M", "1400", "-Z"], {"omit": True}),
    "udp": (["-u", "-b", "50M", "-t", "2", "-l", str(UDP_LEN)],
            {"udp": True}),
    "udp-reverse": (["-u", "-b", "50M", "-t", "2", "-l", str(UDP_LEN), "-R"],
                    {"udp": True, "reverse": True}),
    "udp-bidir": (["-u", "-b", "50M", "-t", "2", "-l", str(UDP_LEN),
                   "--bidir"], {"udp": True, "bidir": True}),
    "udp-64bit": (["-u", "-b", "50M", "-t", "2", "-l", str(UDP_LEN),
                   "--udp-counters-64bit"], {"udp": True}),
}


def blksize(expect):
    return UDP_LEN if expect.get("udp") else TCP_LEN


def lr_iperf3_bench(linerate_bin, hosts, port, *args, timeout=60):
    """`linerate bench -J -p PORT ARGS --iperf3 HOST_B` in host A."""
    return run_bench(linerate_bin, "-J", "-p", str(port), *args, "--iperf3",
                     hosts.addr_b, run=hosts.run_a, timeout=timeout)


def lr_doc(res, extra=""):
    assert res.returncode == 0, describe(res) + extra
    doc = strict_json(res.stdout)
    assert "error" not in doc, f"linerate reported {doc['error']}\n" + \
        describe(res) + extra
    return doc


def peer_re(hosts):
    """Host A as serve's log lines name it: "198.18.0.1", maybe with a
    port, maybe followed by ", iperf3 protocol" or the like."""
    return rf"{re.escape(hosts.addr_a)}(?::\d+)?(?:, [^:]*)?"


def start_lr_serve(serve, hosts, *args, port=LR_IPERF3_PORT):
    """linerate serve in host B with its iperf3 port on PORT (TCP and
    UDP both listening before this returns)."""
    srv = serve("-B", hosts.addr_b, "--iperf3-port", str(port), *args,
                popen=hosts.popen_b)
    try:
        wait_for_listen(hosts.run_b, port, timeout=10, proto="tcp")
        wait_for_listen(hosts.run_b, port, timeout=10, proto="udp")
    except TimeoutError as exc:
        raise AssertionError(f"{exc}; server output: {srv.out.text()!r}; "
                             f"log: {srv.log.text()!r}") from None
    return srv


# ---------------- 1. linerate client -> stock iperf3 -s ----------------

@pytest.mark.parametrize("mode", MODES.keys())
def test_linerate_client_against_iperf3_server(hosts, linerate_bin, iperf3,
                                               mode):
    args, expect = MODES[mode]
    srv = start_iperf3_server(hosts, IPERF3_SERVER_PORT)
    res = lr_iperf3_bench(linerate_bin, hosts, IPERF3_SERVER_PORT, *args)
    rc, out, err = finish_iperf3_server(srv)
    server_text = f"\n--- iperf3 -s (exit {rc})\n{out}\n{err}"
    lr = lr_doc(res, server_text)
    assert rc == 0, describe(res) + server_text
    ip = strict_json(out)
    assert "error" not in ip, ip["error"]

    # the iperf3 server saw the test linerate asked for
    ts = ip["start"]["test_start"]
    assert ts["protocol"] == ("UDP" if expect.get("udp") else "TCP"), ts
    assert ts["num_streams"] == expect.get("streams", 1), ts
    assert ts["blksize"] == blksize(expect), ts
    assert ts["reverse"] == (1 if expect.get("reverse") else 0), ts
    if "-n" in args:
        assert (ts["bytes"], ts["duration"]) == (NBYTES, 0), ts
    else:
        assert ts["duration"] == 2, ts
    if expect.get("udp"):
        assert ts["target_bitrate"] == 50_000_000, ts
    if "-O" in args:
        assert ts["omit"] == 1, ts
        assert ip["end"]["sender_tcp_congestion" if expect.get("reverse")
                         else "receiver_tcp_congestion"] == "cubic", \
            ip["end"]
    nconn = expect.get("streams", 1) * (2 if expect.get("bidir") else 1)
    assert len(ip["start"]["connected"]) == nconn, ip["start"]["connected"]
    assert len(lr["start"]["connected"]) == nconn, lr["start"]["connected"]

    assert_reports_agree(lr, ip, blksize=blksize(expect),
                         linerate_side="client", **expect)


@pytest.mark.parametrize("server_json", [True, False],
                         ids=["server-json", "server-text"])
def test_linerate_client_title_and_server_output(hosts, linerate_bin,
                                                 iperf3, server_json):
    """-T and --get-server-output with --iperf3: the JSON carries "title"
    and the server's own report as iperf3 -J does: "server_output_json"
    (an object) from a `iperf3 -s -J`, else "server_output_text"."""
    srv = start_iperf3_server(hosts, IPERF3_SERVER_PORT,
                              json=server_json)
    res = lr_iperf3_bench(linerate_bin, hosts, IPERF3_SERVER_PORT, "-t", "1",
                          "-T", "lr-title", "--get-server-output")
    rc, out, err = finish_iperf3_server(srv)
    doc = lr_doc(res, f"\n--- iperf3 -s (exit {rc})\n{out}\n{err}")
    assert rc == 0, err
    assert doc.get("title") == "lr-title", sorted(doc)
    if server_json:
        assert "server_output_json" in doc, \
            f"no server_output_json; top-level keys {sorted(doc)}"
        sj = doc["server_output_json"]
        assert isinstance(sj, dict), sj
        # the server's own report of this test: its bytes received
        assert sj["end"]["sum_received"]["bytes"] == \
            doc["end"]["sum_received"]["bytes"] == \
            strict_json(out)["end"]["sum_received"]["bytes"]
    else:
        assert "server_output_text" in doc, \
            f"no server_output_text; top-level keys {sorted(doc)}"
        text = doc["server_output_text"]
        assert isinstance(text, str) and "receiver" in text, text
        assert text.strip() in out, (text, out)


def test_linerate_client_udp_counters_64bit(hosts, linerate_bin, iperf3):
    """--udp-counters-64bit: the iperf3 server reads 64-bit sequence
    numbers (with the wrong width its packet counts go astray)."""
    srv = start_iperf3_server(hosts, IPERF3_SERVER_PORT)
    res = lr_iperf3_bench(linerate_bin, hosts, IPERF3_SERVER_PORT, "-u",
                          "-b", "20M", "-t", "2", "-l", str(UDP_LEN),
                          "--udp-counters-64bit")
    rc, out, err = finish_iperf3_server(srv)
    lr = lr_doc(res, f"\n--- iperf3 -s (exit {rc})\n{out}\n{err}")
    assert rc == 0, err
    ip = strict_json(out)
    assert_reports_agree(lr, ip, blksize=UDP_LEN, udp=True)
    # iperf3's receiver counts out-of-order datagrams; a misread
    # sequence number shows up there or as loss beyond what was sent
    for st in ip["end"]["streams"]:
        assert st["udp"]["out_of_order"] == 0, st


# ---------------- 2. stock iperf3 -c -> linerate serve -----------------

# "... test N from 198.18.0.1:PORT: <what>, sent X, received Y ...": one
# line per test in serve's log (stderr); the byte figures are checked
# against the client's report where the line states them.
SIZE_RE = r"([\d.]+) ([KMGT]?)Bytes"


def _size(num, unit):
    return float(num) * 1024 ** " KMGT".index(unit or " ")


def check_serve_log_line(line, doc, expect):
    """The byte figures of serve's log line match iperf3's report (the
    line rounds to 3 significant digits: 1% slack)."""
    ct = doc["end"]
    sent_m = re.search(r"sent\s+" + SIZE_RE, line)
    recv_m = re.search(r"received\s+" + SIZE_RE, line)
    assert sent_m or recv_m, f"no byte counts in serve's log line: {line}"
    # the server's own role: in the primary direction it receives unless -R
    srv_sent = srv_recv = 0
    if expect.get("reverse"):
        srv_sent += ct["sum_sent"]["bytes"]
    else:
        srv_recv += ct["sum_received"]["bytes"]
    if expect.get("bidir"):
        srv_sent += ct["sum_sent_bidir_reverse"]["bytes"]
    if srv_sent:
        assert sent_m, f"serve's log line lacks the bytes sent: {line}"
        assert _size(*sent_m.groups()) == pytest.approx(srv_sent, rel=0.01,
                                                        abs=1024), line
    if srv_recv:
        assert recv_m, f"serve's log line lacks the bytes received: {line}"
        assert _size(*recv_m.groups()) == pytest.approx(srv_recv, rel=0.01,
                                                        abs=1024), line


@pytest.mark.parametrize("mode", MODES.keys())
def test_iperf3_client_against_linerate_serve(hosts, serve, iperf3, mode):
    args, expect = MODES[mode]
    if "exact_sent" in expect:
        # a stock iperf3 client may send past -n: its multisend loop
        # (up to 10 writes a round) checks the byte count only between
        # writes while more rounds remain, so a round can add blocks
        # after the count is reached; our server takes whatever comes
        expect = dict(expect, sent_slack=9 * blksize(expect))
    srv = start_lr_serve(serve, hosts)
    since = srv.log.mark()
    res = run_iperf3_client(hosts, LR_IPERF3_PORT, *args)
    log = f"\n--- serve log\n{srv.log.text()}"
    assert res.returncode == 0, describe(res) + log
    doc = iperf3_doc(res)
    assert_reports_agree(doc, None, blksize=blksize(expect),
                         linerate_side="server", **expect)
    nconn = expect.get("streams", 1) * (2 if expect.get("bidir") else 1)
    assert len(doc["start"]["connected"]) == nconn
    # the server's figures reached the client: the side it played is
    # non-zero in iperf3's report (assert_reports_agree), and its CPU
    assert doc["end"]["cpu_utilization_percent"]["remote_total"] >= 0
    m = srv.wait_log(rf"test \d+ from {peer_re(hosts)}: "
                     rf"(\w+), (\d+) streams?,.*: (ok|failed.*)$",
                     timeout=15, since=since)
    line = m.string
    assert m.group(3) == "ok", line
    kind = ("bidir" if expect.get("bidir") else
            "reverse" if expect.get("reverse") else "forward")
    assert m.group(1) == kind, line
    if not expect.get("bidir"):
        assert int(m.group(2)) == expect.get("streams", 1), line
    check_serve_log_line(line, doc, expect)
    assert srv.alive(), srv.log.text()


@pytest.mark.parametrize("udp", [False, True], ids=["tcp", "udp"])
def test_iperf3_client_gets_serve_output_and_title(hosts, serve, iperf3,
                                                   udp):
    """iperf3 -c --get-server-output -T against serve: the results carry
    serve's own report of the test (its receiver line with the bytes it
    counted), and iperf3 puts its title in the JSON."""
    srv = start_lr_serve(serve, hosts)
    args = ["-t", "1", "--get-server-output", "-T", "ip3-title"]
    if udp:
        args += ["-u", "-b", "10M"]
    doc = iperf3_doc(run_iperf3_client(hosts, LR_IPERF3_PORT, *args))
    assert doc.get("title") == "ip3-title", sorted(doc)
    text = doc.get("server_output_text")
    assert isinstance(text, str) and text, sorted(doc)
    got = int(doc["end"]["sum_received" if not udp else "sum"]["bytes"])
    assert got > 0
    m = re.search(r"^\[\s*\w+\]\s+0\.00-\s*\S+\s+sec\s+(\S+) (\S*)Bytes\b.*"
                  r"receiver$", text, re.M)
    assert m, text
    assert srv.alive()


def test_iperf3_client_bitrate_is_a_cap(hosts, serve, linerate_bin, iperf3):
    """iperf3 -c -b RATE (TCP) against serve, and linerate bench -b RATE
    against stock iperf3 -s: each stream is paced, so what is sent stays
    under the rate (plus one block of slack); a cap, not a speed."""
    srv = start_lr_serve(serve, hosts)
    doc = iperf3_doc(run_iperf3_client(hosts, LR_IPERF3_PORT, "-t", "2",
                                       "-b", "40M", "-P", "2"))
    sent = doc["end"]["sum_sent"]
    assert 0 < sent["bits_per_second"] <= 2 * 40e6 * 1.1, sent
    assert srv.alive()
    ip = hosts.popen_b(["iperf3", "-s", "-1", "-B", hosts.addr_b, "-p",
                        str(IPERF3_SERVER_PORT)], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_listen(hosts.run_b, IPERF3_SERVER_PORT, timeout=10)
        doc = lr_doc(lr_iperf3_bench(linerate_bin, hosts,
                                     IPERF3_SERVER_PORT, "-t", "2", "-b",
                                     "40M", "-P", "2"))
        sent = doc["end"]["sum_sent"]
        assert 0 < sent["bits_per_second"] <= 2 * 40e6 * 1.1, sent
        assert ip.wait(timeout=15) == 0
    finally:
        if ip.poll() is None:
            ip.kill()
            ip.wait(timeout=10)


def test_serve_default_iperf3_port_taken(hosts, linerate_bin, iperf3):
    """serve's default iperf3 port (5201) held by a stock iperf3 -s: serve
    warns and answers linerate clients; asked for that port by name, it
    refuses to start (exit 1)."""
    ip = start_iperf3_server(hosts, 5201)
    try:
        lr = hosts.popen_b([linerate_bin, "serve", "-B", hosts.addr_b, "-p",
                            "0"], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        try:
            m = wait_for_line(lr.stdout, LinerateServer.LISTEN_RE, 10)
            warn = wait_for_line(lr.stderr, r"warning: not answering "
                                 r"iperf3 clients: port 5201", 10)
            assert "Address already in use" in warn.string, warn.string
            res = run_bench(linerate_bin, "-t", "0.5", "-i", "0",
                            f"{hosts.addr_b}:{m.group(2)}",
                            run=hosts.run_a, timeout=30)
            assert res.returncode == 0, describe(res)
        finally:
            lr.terminate()
            lr.communicate(timeout=10)
        res = hosts.run_b([linerate_bin, "serve", "-B", hosts.addr_b, "-p",
                           "0", "--iperf3-port", "5201"],
                          stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=15)
        assert res.returncode == 1, describe(res)
        assert "iperf3 port 5201" in res.stderr, res.stderr
    finally:
        ip.kill()
        ip.communicate(timeout=10)


def test_serve_listening_lines_tell_ports_apart(hosts, serve, linerate_bin,
                                               iperf3):
    """serve prints "Server listening on ADDR port N" for its linerate
    port, which scripts and lrproc.LinerateServer read back (-p 0); the
    line for the iperf3 port must not be one they can take for it."""
    srv = start_lr_serve(serve, hosts)
    srv.out.wait_for(r"^Server listening.*\b%d\b" % LR_IPERF3_PORT, 10)
    plain = [m for m in srv.out.find(LinerateServer.LISTEN_RE)]
    assert [int(m.group(2)) for m in plain] == [srv.port], \
        f"serve's stdout: {srv.out.lines!r}"
    assert srv.port != LR_IPERF3_PORT, srv.out.lines
    res = run_bench(linerate_bin, "-t", "0.5", "-i", "0",
                    f"{hosts.addr_b}:{srv.port}", run=hosts.run_a,
                    timeout=30)
    assert res.returncode == 0, describe(res)


# ---------------- 3. two iperf3 clients at once ------------------------

def _established(hosts, port):
    res = hosts.run_b(["ss", "-Htn", "state", "established",
                       f"sport = :{port}"], capture_output=True, text=True,
                      timeout=10)
    return [ln for ln in res.stdout.splitlines() if ln.strip()]


def test_two_iperf3_clients_at_once(hosts, serve, iperf3):
    srv = start_lr_serve(serve, hosts)
    first = hosts.popen_a(["iperf3", "-c", hosts.addr_b, "-p",
                           str(LR_IPERF3_PORT), "-J", "-t", "3"],
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    try:
        # the first test is running (control and data connection up)
        # before the second client starts: stock iperf3 -s would refuse
        # the second one ("the server is busy running a test")
        wait_until(lambda: len(_established(hosts, LR_IPERF3_PORT)) >= 2,
                   timeout=10, what="the first iperf3 client's streams")
        second = run_iperf3_client(hosts, LR_IPERF3_PORT, "-t", "1",
                                   timeout=30)
        assert first.poll() is None, \
            "the first test ended before the second: they did not overlap"
        out, err = first.communicate(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate(timeout=10)
    log = f"\n--- serve log\n{srv.log.text()}"
    d2 = iperf3_doc(second)
    assert first.returncode == 0, f"first iperf3 -c: exit " \
        f"{first.returncode}\n{out}\n{err}{log}"
    d1 = strict_json(out)
    assert "error" not in d1, d1["error"] + log
    for d in (d1, d2):
        assert d["end"]["sum_sent"]["bytes"] > 0, log
        assert d["end"]["sum_received"]["bytes"] > 0, log
    assert srv.alive()


# ---------------- 4. perfSONAR-style reading of --json -----------------

PERFSONAR_CASES = {
    # name: (peer, args, udp)
    "linerate-serve-tcp": ("linerate", ["-t", "2", "-P", "2"], False),
    "linerate-serve-tcp-reverse": ("linerate", ["-t", "2", "-R"], False),
    "linerate-serve-udp": ("linerate", ["-u", "-b", "20M", "-t", "2"],
                           True),
    "linerate-serve-udp-reverse": ("linerate", ["-u", "-b", "20M", "-t",
                                                "2", "-R"], True),
    "iperf3-server-tcp": ("iperf3", ["-t", "2", "-P", "2"], False),
    "iperf3-server-tcp-reverse": ("iperf3", ["-t", "2", "-R"], False),
    "iperf3-server-udp": ("iperf3", ["-u", "-b", "20M", "-t", "2"], True),
    "iperf3-server-udp-reverse": ("iperf3", ["-u", "-b", "20M", "-t", "2",
                                             "-R"], True),
}


@pytest.mark.parametrize("case", PERFSONAR_CASES.keys())
def test_json_reads_like_iperf3_for_perfsonar(hosts, serve, linerate_bin,
                                              iperf3, case):
    peer, args, udp = PERFSONAR_CASES[case]
    # control: stock iperf3 against itself, same options, same reader
    srv = start_iperf3_server(hosts, IPERF3_SERVER_PORT)
    ctl = run_iperf3_client(hosts, IPERF3_SERVER_PORT, *args)
    finish_iperf3_server(srv)
    control = perfsonar_read(iperf3_doc(ctl), udp)
    assert control["intervals"] and control["summary"]["streams"]

    if peer == "linerate":
        # --no-iperf3: its own "Server listening" line could be taken for
        # the linerate port's (test_serve_listening_lines_tell_ports_apart)
        lsrv = serve("-B", hosts.addr_b, "--no-iperf3", popen=hosts.popen_b)
        res = run_bench(linerate_bin, "--json", *args,
                        f"{hosts.addr_b}:{lsrv.port}", run=hosts.run_a,
                        timeout=60)
        extra = f"\n--- serve log\n{lsrv.log.text()}"
    else:
        srv = start_iperf3_server(hosts, IPERF3_SERVER_PORT)
        res = run_bench(linerate_bin, "--json", "-p",
                        str(IPERF3_SERVER_PORT), *args, "--iperf3",
                        hosts.addr_b, run=hosts.run_a, timeout=60)
        rc, out, err = finish_iperf3_server(srv)
        extra = f"\n--- iperf3 -s (exit {rc})\n{out}\n{err}"
    doc = lr_doc(res, extra)
    got = perfsonar_read(doc, udp)
    # the same shape as the control: a summary per stream, and an
    # interval per second (-t 2, 1 s reports: 2, maybe a short third)
    assert len(got["summary"]["streams"]) == \
        len(control["summary"]["streams"])
    assert 2 <= len(got["intervals"]) <= 3, len(got["intervals"])
    for key in ("throughput-bytes", "throughput-bits"):
        assert key in got["summary"]["summary"], got["summary"]["summary"]
    if udp:
        for key in ("jitter", "lost", "sent"):
            assert all(key in s for s in got["summary"]["streams"]), \
                got["summary"]["streams"]
    else:
        assert all("rtt" in s and "retransmits" in s
                   for s in got["summary"]["streams"]), \
            got["summary"]["streams"]


# ---------------- 5. bad input on serve's iperf3 port ------------------

def raw_client(hosts, scenario, port=LR_IPERF3_PORT, wait=15.0):
    """Run ip3util's raw client in host A; returns its result dict."""
    res = hosts.run_a([sys.executable, IP3UTIL, "raw", scenario,
                       hosts.addr_b, str(port), str(wait)],
                      capture_output=True, text=True, timeout=wait + 30)
    assert res.returncode == 0, describe(res)
    return json.loads(res.stdout)


def assert_still_serves(hosts, srv):
    assert srv.alive(), srv.log.text()
    since = srv.log.mark()
    res = run_iperf3_client(hosts, LR_IPERF3_PORT, "-t", "1", timeout=30)
    assert res.returncode == 0, describe(res) + \
        f"\n--- serve log\n{srv.log.text()}"
    doc = iperf3_doc(res)
    assert doc["end"]["sum_sent"]["bytes"] > 0
    assert doc["end"]["sum_received"]["bytes"] > 0
    srv.wait_log(rf"test \d+ from {peer_re(hosts)}: "
                 rf".*: ok$", since=since)
    assert srv.alive()


BAD_INPUT = {
    # name: (scenario, seconds the server has to answer or close)
    "wrong-cookie": ("wrong-cookie", 10),
    "short-cookie-then-close": ("short-cookie", 10),
    "json-length-0xffffffff": ("len-ffffffff", 10),
    "json-length-0xffffffff-then-data": ("len-ffffffff-then-data", 10),
    "json-length-0": ("len-0", 10),
    "json-wrong-types": ('json:{"tcp":true,"parallel":"4"}', 10),
    "json-tcp-as-string": ('json:{"tcp":"true","time":1,"parallel":1}', 10),
    "json-parallel-100000": (
        'json:{"tcp":true,"time":1,"parallel":100000,"len":131072}', 10),
    "json-len-0": ('json:{"tcp":true,"time":1,"parallel":1,"len":0}', 10),
    "json-time-negative": (
        'json:{"tcp":true,"time":-1,"parallel":1,"len":131072}', 10),
    "json-fraction": (
        'json:{"tcp":true,"time":1.5,"parallel":1,"len":131072}', 10),
    "json-array": ('json:[1,2,3]', 10),
    "json-string": ('json:"tcp"', 10),
    "json-number": ('json:42', 10),
    "json-truncated": ('json:{"tcp":true,"time":', 10),
    "json-not-json": ("json:hello, iperf3", 10),
    "params-then-no-streams": ("no-streams", 20),
}


@pytest.fixture
def lr_iperf3_srv(hosts, serve, iperf3):
    return start_lr_serve(serve, hosts, "--handshake-timeout", "2")


@pytest.mark.parametrize("case", BAD_INPUT.keys())
def test_bad_input_gets_error_or_close(hosts, lr_iperf3_srv, case):
    scenario, wait = BAD_INPUT[case]
    srv = lr_iperf3_srv
    since = srv.log.mark()
    res = raw_client(hosts, scenario, wait=wait)
    problem = error_or_close(res)
    assert not problem, f"{case}: {problem}; raw client: {res}\n" \
        f"--- serve log\n{srv.log.text()}"
    if scenario.startswith(("json", "len", "no-streams")):
        # got as far as PARAM_EXCHANGE (and CREATE_STREAMS for valid
        # parameters): the cookie was taken
        assert res["steps"][0] == 9, res
    # one log line says what went wrong
    srv.wait_log(rf"{peer_re(hosts)}: (.*: )?"
                 rf"(failed|rejected): \S", timeout=10, since=since)
    assert_still_serves(hosts, srv)


def test_stray_udp_datagrams(hosts, lr_iperf3_srv):
    """Datagrams on the iperf3 UDP port with no UDP test waiting for
    them (junk, a bare 4-byte hello, a data header) are dropped; a UDP
    test afterwards works."""
    srv = lr_iperf3_srv
    res = hosts.run_a([sys.executable, IP3UTIL, "udp-junk", hosts.addr_b,
                       str(LR_IPERF3_PORT)], capture_output=True, text=True,
                      timeout=30)
    assert res.returncode == 0, describe(res)
    assert srv.alive(), srv.log.text()
    since = srv.log.mark()
    res = run_iperf3_client(hosts, LR_IPERF3_PORT, "-u", "-b", "10M", "-t",
                            "1", timeout=30)
    assert res.returncode == 0, describe(res) + \
        f"\n--- serve log\n{srv.log.text()}"
    doc = iperf3_doc(res)
    assert doc["end"]["sum_received"]["packets"] > 0, doc["end"]
    srv.wait_log(rf"test \d+ from {peer_re(hosts)}: "
                 rf".*: ok$", since=since)
    assert_still_serves(hosts, srv)


def test_client_vanishing_mid_test(hosts, lr_iperf3_srv):
    srv = lr_iperf3_srv
    res = raw_client(hosts, "vanish", wait=5)
    assert "error" not in res, res
    assert res["steps"] == [9, 10, 1, 2], res
    # the server notices (its log line for the test) and serves on
    srv.wait_log(rf"test \d+ from {peer_re(hosts)}: .*"
                 rf"failed", timeout=20)
    assert_still_serves(hosts, srv)


def test_iperf3_client_killed_mid_test(hosts, lr_iperf3_srv):
    srv = lr_iperf3_srv
    client = hosts.popen_a(["iperf3", "-c", hosts.addr_b, "-p",
                            str(LR_IPERF3_PORT), "-t", "10",
                            "--forceflush"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    try:
        wait_for_line(client.stdout, r"^\[\s*\d+\]\s+0\.00-1\.0\d\s+sec",
                      timeout=15)
        client.send_signal(signal.SIGKILL)
        assert client.wait(timeout=10) == -signal.SIGKILL
    finally:
        if client.poll() is None:
            client.kill()
            client.wait(timeout=10)
    srv.wait_log(rf"test \d+ from {peer_re(hosts)}: .*"
                 rf"failed", timeout=20)
    # no connection of the dead test is left established on the server
    wait_until(lambda: not _established(hosts, LR_IPERF3_PORT), timeout=20,
               what="the killed client's connections to close")
    assert_still_serves(hosts, srv)


def test_many_idle_connections_do_not_block(hosts, serve, iperf3):
    """50 connections that never send a cookie, open at once: a real
    iperf3 test beside them still runs, and all of them are dropped
    within a bounded time (the handshake timeout, not 50 of them)."""
    srv = start_lr_serve(serve, hosts, "--handshake-timeout", "3")
    idle = hosts.popen_a([sys.executable, IP3UTIL, "idle-many",
                          hosts.addr_b, str(LR_IPERF3_PORT), "50", "30"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        wait_for_line(idle.stdout, r"^ready 50$", timeout=15)
        t0 = time.monotonic()
        res = run_iperf3_client(hosts, LR_IPERF3_PORT, "-t", "1",
                                timeout=60)
        took = time.monotonic() - t0
        assert res.returncode == 0, describe(res) + \
            f"\n--- serve log\n{srv.log.text()}"
        iperf3_doc(res)
        out, err = idle.communicate(timeout=60)
    finally:
        if idle.poll() is None:
            idle.kill()
            idle.communicate(timeout=10)
    assert idle.returncode == 0, err
    r = json.loads(out.strip().splitlines()[-1])
    print(f"iperf3 -t 1 beside 50 idle connections took {took:.1f} s; "
          f"idle connections: {r}")
    # all dropped, by the server, within a few handshake timeouts
    assert r["closed"] == 50, r
    assert r["last_close"] <= 10, r
    # and the test did not queue behind them (50 x 3 s)
    assert took < 10, f"iperf3 -t 1 took {took:.1f} s beside 50 idle " \
        f"connections"
    assert_still_serves(hosts, srv)


def _idle_beside_a_test(hosts, srv, bind=None):
    """An idle connection (from BIND, else host A's address) opened
    first, then `iperf3 -c -t 1` from host A.  Returns (seconds the
    test took, whether the idle connection was still open when it
    ended, the idle client's result)."""
    argv = [sys.executable, IP3UTIL, "raw", "idle", hosts.addr_b,
            str(LR_IPERF3_PORT), "20"] + ([bind] if bind else [])
    idle = hosts.popen_a(argv, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        wait_until(lambda: _established(hosts, LR_IPERF3_PORT), timeout=10,
                   what="the idle connection")
        t0 = time.monotonic()
        res = run_iperf3_client(hosts, LR_IPERF3_PORT, "-t", "1",
                                timeout=40)
        took = time.monotonic() - t0
        assert res.returncode == 0, describe(res) + \
            f"\n--- serve log\n{srv.log.text()}"
        iperf3_doc(res)
        still_open = idle.poll() is None
        out, err = idle.communicate(timeout=40)
    finally:
        if idle.poll() is None:
            idle.kill()
            idle.communicate(timeout=10)
    assert idle.returncode == 0, err
    r = json.loads(out)
    problem = error_or_close(r)
    assert not problem, f"idle connection: {problem}; {r}"
    print(f"iperf3 -t 1 took {took:.1f} s beside an idle connection "
          f"(dropped after {r['result']['elapsed']} s)")
    return took, still_open, r


def test_idle_connection_neither_blocks_nor_stays(hosts, serve, iperf3):
    """An idle connection from another address (CVE-2023-7250: a silent
    client hung the single-test server): a test runs beside it, and it
    is dropped within a bounded time."""
    # the default handshake timeout (5 s): long enough for a whole test
    # to run beside the idle connection
    srv = start_lr_serve(serve, hosts)
    other = "198.18.0.3"
    hosts.run_a(["ip", "addr", "add", f"{other}/24", "dev", hosts.if_a],
                check=True, timeout=10)
    took, still_open, r = _idle_beside_a_test(hosts, srv, bind=other)
    assert still_open, \
        f"the iperf3 test (-t 1) took {took:.1f} s: it waited until " \
        f"the idle connection was dropped ({r})\n--- serve log\n" \
        f"{srv.log.text()}"
    assert r["result"]["elapsed"] <= 10, r
    assert_still_serves(hosts, srv)


def test_idle_connection_same_host_delays_at_most_handshake(hosts, serve,
                                                            iperf3):
    """An idle connection from the client's own address: serve hands
    out one host's connections in accept order (as iperf3 numbers its
    streams), so a test may wait for it, but no longer than the
    handshake timeout."""
    srv = start_lr_serve(serve, hosts, "--handshake-timeout", "3")
    took, _, r = _idle_beside_a_test(hosts, srv)
    assert r["result"]["elapsed"] <= 3 + 2, r
    # the test (-t 1, about 1.2 s alone) waited at most the 3 s
    assert took < 3 + 5, f"iperf3 -t 1 took {took:.1f} s"
    assert_still_serves(hosts, srv)


def test_max_duration_holds_against_an_endless_iperf3_client(hosts, serve,
                                                             iperf3):
    """`iperf3 -c -t 0` has no end of its own: linerate serve
    --max-duration 2 ends it (SERVER_TERMINATE) at its limit, not later,
    and says so in its log."""
    srv = start_lr_serve(serve, hosts, "--max-duration", "2")
    since = srv.log.mark()
    t0 = time.monotonic()
    res = run_iperf3_client(hosts, LR_IPERF3_PORT, "-t", "0", "-b", "100M",
                            timeout=30)
    took = time.monotonic() - t0
    log = f"\n--- serve log\n{srv.log.text()}"
    # the limit, the client's start and its last report
    assert 2.0 <= took <= 3.5, f"{took:.2f} s\n" + describe(res) + log
    srv.wait_log(r"--max-duration", timeout=10, since=since)
