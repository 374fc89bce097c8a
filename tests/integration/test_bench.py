# SPDX-License-Identifier: MIT
"""`linerate bench` against `linerate serve` on loopback (no root needed):
the iperf3-style table, the JSON documents, the options, the server log,
and a server shared by several clients.

Every test starts its own server on port 0 (the `serve` fixture) and reads
the port back.  Nothing here asserts a speed.
"""

import re
import signal
import socket

import pytest

from lrproc import (BenchProc, bench_json, describe, run_bench, strict_json)

LOOP = "127.0.0.1"
MIB = 1 << 20

CONNECTED_RE = re.compile(
    r"^\[\s*(\d+)\](\[(?:TX|RX)-C\])? local (\S+) port (\d+) connected to "
    r"(\S+) port (\d+)$")
# "[  1][TX-C]   0.00-1.00   sec  1.59 GBytes  13.7 Gbits/sec ..."
ROW_RE = re.compile(
    r"^\[\s*(\d+|SUM)\](\[(?:TX|RX)-C\])?\s+(\d+\.\d+)-\s*(\d+\.\d+)\s+sec"
    r"\s+\S+ \S*Bytes\s+\S+ \S*bits/sec\b(.*)$")
SEP = "- " * 24 + "-"
LOG_TEST_RE = (r"test (\d+) from (\S+): (forward|reverse|bidir), (\d+) "
               r"streams?\b.*: (ok|failed: .*)$")


def parse_human(stdout):
    """Split the human output into connected lines, interval rows and the
    final sender/receiver rows: lists of tuples (id, role tag, rest)."""
    connected, intervals, totals = [], [], []
    for line in stdout.splitlines():
        m = CONNECTED_RE.match(line)
        if m:
            connected.append((m.group(1), m.group(2) or "", m.group(3),
                              m.group(5), int(m.group(6))))
            continue
        m = ROW_RE.match(line)
        if not m:
            continue
        rest = m.group(5).rstrip()
        row = (m.group(1), m.group(2) or "", rest)
        if rest.endswith("sender") or rest.endswith("receiver"):
            totals.append(row + (rest.split()[-1],))
        else:
            intervals.append(row)
    return connected, intervals, totals


def total_rows(totals):
    """{(id, tag, 'sender'|'receiver'): count}"""
    out = {}
    for sid, tag, _rest, role in totals:
        out[(sid, tag, role)] = out.get((sid, tag, role), 0) + 1
    return out


def bench_ok(binary, *args, timeout=60):
    res = run_bench(binary, *args, timeout=timeout)
    assert res.returncode == 0, describe(res)
    return res


def local_interval_pairs(doc):
    """(interval sum key, end sum key) pairs counted by this (the local)
    side, i.e. the figures the client's own interval samples add up to."""
    ts = doc["start"]["test_start"]
    if ts["bidir"]:
        return [("sum", "sum_sent"),
                ("sum_bidir_reverse", "sum_received_bidir_reverse")]
    if ts["reverse"]:
        return [("sum", "sum_received")]
    return [("sum", "sum_sent")]


def check_intervals_vs_totals(doc, interval_s):
    """The non-omitted intervals add up exactly to the totals this side
    counted, in the sum and stream by stream, and the last one ends where
    the total does, never after it (docs/PROTOCOL.md, "Durations")."""
    end = doc["end"]
    kept = [iv for iv in doc["intervals"] if not iv["sum"]["omitted"]]
    assert kept, doc["intervals"]
    for ivkey, endkey in local_interval_pairs(doc):
        reported = sum(iv[ivkey]["bytes"] for iv in kept)
        total = end[endkey]["bytes"]
        assert reported == total, (ivkey, endkey, reported, total)
        assert kept[-1][ivkey]["end"] <= end[endkey]["end"] + 1e-6, \
            (kept[-1][ivkey], end[endkey])
        assert kept[-1][ivkey]["end"] - kept[-1][ivkey]["start"] <= \
            interval_s + 0.05, kept[-1][ivkey]
    for i, st in enumerate(end["streams"]):
        side = st["sender"] if st["sender"]["sender"] else st["receiver"]
        sock = side["socket"]
        got = sum(s["bytes"] for iv in kept for s in iv["streams"]
                  if s["socket"] == sock)
        assert got == side["bytes"], (sock, got, side["bytes"])


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# ---------------- the human table ----------------

def test_basic_run_prints_iperf3_table(serve, linerate_bin):
    srv = serve()
    res = bench_ok(linerate_bin, "-t", "1", f"{LOOP}:{srv.port}")
    out = res.stdout
    assert res.stderr == ""
    assert f"Connecting to host {LOOP}, port {srv.port}" in out
    connected, intervals, totals = parse_human(out)
    assert [(c[0], c[2], c[3], c[4]) for c in connected] == \
        [("1", LOOP, LOOP, srv.port)]
    assert re.search(r"^\[ ID\] Interval\s+Transfer\s+Bitrate\s+Retr\s+Cwnd"
                     r"\s+RTT$", out, re.M), out
    assert intervals and all(sid == "1" for sid, _, _ in intervals), out
    assert SEP in out
    assert total_rows(totals) == {("1", "", "sender"): 1,
                                  ("1", "", "receiver"): 1}, out
    assert "CPU Utilization: local" in out
    assert out.rstrip().endswith("linerate Done.")
    srv.wait_log(r"test 1 from 127\.0\.0\.1:\d+: forward, 1 stream, .*: ok$")


def test_parallel_streams_have_sum_rows(serve, linerate_bin):
    srv = serve()
    res = bench_ok(linerate_bin, "-t", "1", "-P", "3", f"{LOOP}:{srv.port}")
    connected, intervals, totals = parse_human(res.stdout)
    assert [c[0] for c in connected] == ["1", "2", "3"]
    assert len({c[3] for c in connected}) == 1  # one server address
    assert {sid for sid, _, _ in intervals} == {"1", "2", "3", "SUM"}
    rows = total_rows(totals)
    for sid in ("1", "2", "3", "SUM"):
        assert rows.get((sid, "", "sender")) == 1, res.stdout
        assert rows.get((sid, "", "receiver")) == 1, res.stdout
    srv.wait_log(r"test 1 from .*: forward, 3 streams, .*: ok$")


def test_reverse_mode(serve, linerate_bin):
    srv = serve()
    res = bench_ok(linerate_bin, "-t", "1", "-R", f"{LOOP}:{srv.port}")
    out = res.stdout
    assert f"Reverse mode, remote host {LOOP} is sending" in out
    # this side only receives: no Retr/Cwnd/RTT columns per interval
    assert re.search(r"^\[ ID\] Interval\s+Transfer\s+Bitrate$", out, re.M)
    _, intervals, totals = parse_human(out)
    assert intervals
    assert total_rows(totals) == {("1", "", "sender"): 1,
                                  ("1", "", "receiver"): 1}, out
    srv.wait_log(r"test 1 from .*: reverse, 1 stream, .*: ok$")


def test_bidir_has_tx_and_rx_rows(serve, linerate_bin):
    srv = serve()
    res = bench_ok(linerate_bin, "-t", "1", "--bidir", f"{LOOP}:{srv.port}")
    connected, intervals, totals = parse_human(res.stdout)
    assert [(c[0], c[1]) for c in connected] == [("1", "[TX-C]"),
                                                 ("2", "[RX-C]")]
    assert re.search(r"^\[ ID\]\[Role\] Interval", res.stdout, re.M)
    assert {(sid, tag) for sid, tag, _ in intervals} == \
        {("1", "[TX-C]"), ("2", "[RX-C]")}
    assert total_rows(totals) == {
        ("1", "[TX-C]", "sender"): 1, ("1", "[TX-C]", "receiver"): 1,
        ("2", "[RX-C]", "sender"): 1, ("2", "[RX-C]", "receiver"): 1,
    }, res.stdout
    srv.wait_log(r"test 1 from .*: bidir, 1 stream, .*sent .*received .*"
                 r": ok$")


@pytest.mark.parametrize("streams", [2, 4])
def test_bidir_parallel_sums_per_direction(serve, linerate_bin, streams):
    srv = serve()
    res = bench_ok(linerate_bin, "-t", "1", "-i", "0", "--bidir", "-P",
                   str(streams), f"{LOOP}:{srv.port}")
    connected, _, totals = parse_human(res.stdout)
    assert [(c[0], c[1]) for c in connected] == (
        [(str(i), "[TX-C]") for i in range(1, streams + 1)] +
        [(str(i), "[RX-C]") for i in range(streams + 1, 2 * streams + 1)])
    rows = total_rows(totals)
    for tag in ("[TX-C]", "[RX-C]"):
        assert rows.get(("SUM", tag, "sender")) == 1, res.stdout
        assert rows.get(("SUM", tag, "receiver")) == 1, res.stdout


def test_interval_zero_prints_one_interval(serve, linerate_bin):
    """-i 0, as iperf3 3.12: no report while the test runs, then one
    interval covering the test, whose bytes are the totals'."""
    srv = serve()
    res = bench_ok(linerate_bin, "-t", "1", "-i", "0", f"{LOOP}:{srv.port}")
    _, intervals, totals = parse_human(res.stdout)
    assert len(intervals) == 1, res.stdout
    assert re.search(r"^\[\s*1\]\s+0\.00-1\.00\s+sec(?!.*(sender|receiver))",
                     res.stdout, re.M), res.stdout
    assert len(totals) == 2
    doc = bench_json(linerate_bin, "-t", "0.5", "-i", "0",
                     f"{LOOP}:{srv.port}")
    assert len(doc["intervals"]) == 1, doc["intervals"]
    iv = doc["intervals"][0]["sum"]
    end = doc["end"]["sum_sent"]
    assert iv["start"] == 0 and iv["end"] == end["end"], (iv, end)
    assert iv["bytes"] == end["bytes"] > 0, (iv, end)


def test_omitted_intervals_are_flagged_and_left_out(serve, linerate_bin):
    srv = serve()
    doc = bench_json(linerate_bin, "-O", "1", "-t", "2",
                     f"{LOOP}:{srv.port}")
    assert doc["start"]["test_start"]["omit"] == 1
    flags = [iv["sum"]["omitted"] for iv in doc["intervals"]]
    assert True in flags and False in flags, flags
    # omitted ones come first, and are flagged on every stream too
    assert flags == sorted(flags, reverse=True), flags
    for iv in doc["intervals"]:
        assert {s["omitted"] for s in iv["streams"]} == {iv["sum"]["omitted"]}
    end = doc["end"]
    everything = sum(iv["sum"]["bytes"] for iv in doc["intervals"])
    omitted = sum(iv["sum"]["bytes"] for iv in doc["intervals"]
                  if iv["sum"]["omitted"])
    assert omitted > 0
    assert end["sum_sent"]["bytes"] < everything
    assert end["sum_received"]["bytes"] < everything
    # the totals' clock restarts when the omitted period ends
    assert end["sum_sent"]["seconds"] < 2.5
    check_intervals_vs_totals(doc, 1.0)
    # the human table marks them
    res = bench_ok(linerate_bin, "-O", "0.5", "-t", "1", "-i", "0.5",
                   f"{LOOP}:{srv.port}")
    _, intervals, _ = parse_human(res.stdout)
    assert intervals[0][2].endswith("(omitted)"), res.stdout
    assert not intervals[-1][2].endswith("(omitted)"), res.stdout


# ---------------- exact byte counts ----------------

@pytest.mark.parametrize("mode", [[], ["-P", "3"], ["-R"], ["--bidir"]],
                         ids=["forward", "parallel", "reverse", "bidir"])
def test_bytes_limit_is_exact(serve, linerate_bin, mode):
    srv = serve()
    doc = bench_json(linerate_bin, "-n", "50M", *mode, f"{LOOP}:{srv.port}")
    end = doc["end"]
    assert doc["start"]["test_start"]["bytes"] == 50 * MIB
    assert end["sum_sent"]["bytes"] == 50 * MIB
    assert end["sum_received"]["bytes"] == 50 * MIB
    if "--bidir" in mode:
        assert end["sum_sent_bidir_reverse"]["bytes"] == 50 * MIB
        assert end["sum_received_bidir_reverse"]["bytes"] == 50 * MIB
    for st in end["streams"]:
        assert st["sender"]["bytes"] == st["receiver"]["bytes"], st
    srv.wait_log(r"test 1 from .*: ok$")


# ---------------- JSON ----------------

JSON_MODES = {
    "forward": [],
    "parallel": ["-P", "3"],
    "reverse": ["-R"],
    "bidir": ["--bidir"],
}


@pytest.mark.parametrize("mode", JSON_MODES.values(), ids=JSON_MODES.keys())
def test_json_document(serve, linerate_bin, mode):
    srv = serve()
    doc = bench_json(linerate_bin, "-t", "1", "-i", "0.5", *mode,
                     f"{LOOP}:{srv.port}")
    assert set(doc) >= {"start", "intervals", "end"}
    start, end = doc["start"], doc["end"]
    ts = start["test_start"]
    per_dir = 3 if "-P" in mode else 1
    nconn = per_dir * (2 if "--bidir" in mode else 1)
    assert ts["num_streams"] == per_dir
    assert ts["protocol"] == "TCP" and ts["blksize"] == 512 * 1024  # the default -l
    assert ts["duration"] == 1
    assert ts["reverse"] == int("-R" in mode)
    assert ts["bidir"] == int("--bidir" in mode)
    assert start["connecting_to"] == {"host": LOOP, "port": srv.port}
    assert len(start["connected"]) == nconn
    for i, c in enumerate(start["connected"]):
        assert c["socket"] == i + 1
        assert c["local_host"] == LOOP and c["remote_host"] == LOOP
        assert c["remote_port"] == srv.port
        assert 0 < c["local_port"] < 65536
    assert start["version"].startswith("linerate ")

    assert doc["intervals"], "no intervals with -t 1 -i 0.5"
    for iv in doc["intervals"]:
        assert len(iv["streams"]) == nconn
        s = iv["sum"]
        assert s["seconds"] == pytest.approx(s["end"] - s["start"], abs=1e-6)
        main = [st for st in iv["streams"]
                if "--bidir" not in mode or st["socket"] <= per_dir]
        assert s["bytes"] == sum(st["bytes"] for st in main)
        if "--bidir" in mode:
            assert iv["sum_bidir_reverse"]["bytes"] == sum(
                st["bytes"] for st in iv["streams"] if st["socket"] > per_dir)
    check_intervals_vs_totals(doc, 0.5)

    assert len(end["streams"]) == nconn
    local_sends = "-R" not in mode
    for i, st in enumerate(end["streams"]):
        snd, rcv = st["sender"], st["receiver"]
        assert snd["socket"] == rcv["socket"] == i + 1
        for side in (snd, rcv):
            assert is_number(side["bytes"]) and side["bytes"] > 0
            assert is_number(side["seconds"]) and side["seconds"] > 0
            assert is_number(side["bits_per_second"])
        for k in ("retransmits", "max_snd_cwnd", "min_rtt", "mean_rtt",
                  "max_rtt"):
            assert is_number(snd[k]), k
        if "--bidir" in mode:
            local_sends = i < per_dir
        assert snd["sender"] is rcv["sender"] is local_sends
    sent = [st["sender"]["bytes"] for st in end["streams"]][:per_dir]
    rcvd = [st["receiver"]["bytes"] for st in end["streams"]][:per_dir]
    assert end["sum_sent"]["bytes"] == sum(sent)
    assert end["sum_received"]["bytes"] == sum(rcvd)
    assert end["sum_sent"]["sender"] is ("-R" not in mode)
    if "--bidir" in mode:
        assert end["sum_sent_bidir_reverse"]["bytes"] == sum(
            st["sender"]["bytes"] for st in end["streams"][per_dir:])
    else:
        assert "sum_sent_bidir_reverse" not in end

    cpu = end["cpu_utilization_percent"]
    for k in ("host_total", "host_user", "host_system", "remote_total",
              "remote_user", "remote_system"):
        assert is_number(cpu[k]) and cpu[k] >= 0, (k, cpu)
    assert end["sender_tcp_congestion"] and end["receiver_tcp_congestion"]
    lr = end["linerate"]
    assert lr["server_version"].startswith("linerate ")
    assert lr["overlapping_tests"] == 0
    assert is_number(lr["local_cpu_seconds"])
    assert is_number(lr["remote_cpu_seconds"])
    link = lr["link"]
    assert link["interface"] == "lo" and link["virtual"] is True
    assert link["tcp_ceiling_bits_per_second"] == 0  # speed unknown


def test_strict_json_rejects_non_finite_numbers():
    # the checker itself: a NaN or Infinity anywhere fails the parse
    for bad in ('{"a": NaN}', '{"a": [Infinity]}', '{"a": -Infinity}'):
        with pytest.raises(ValueError):
            strict_json(bad)


def test_json_stream_events(serve, linerate_bin):
    srv = serve()
    res = bench_ok(linerate_bin, "-t", "1", "-i", "0.5", "--json-stream",
                   f"{LOOP}:{srv.port}")
    lines = res.stdout.splitlines()
    events = []
    for line in lines:
        obj = strict_json(line)
        assert isinstance(obj, dict), line
        assert obj["event"] in ("start", "interval", "end"), line
        assert isinstance(obj["data"], dict)
        events.append(obj)
    names = [e["event"] for e in events]
    assert names[0] == "start" and names[-1] == "end", names
    assert names.count("start") == names.count("end") == 1
    assert "interval" in names
    assert events[0]["data"]["test_start"]["num_streams"] == 1
    assert "sum" in events[1]["data"]
    assert events[-1]["data"]["sum_received"]["bytes"] > 0


def test_json_error_document(linerate_bin):
    # a failed run still prints one JSON document (iperf3 -J style: the
    # message in "error"), or an "error" event with --json-stream
    with socket.socket() as holder:  # bound, not listening: refused
        holder.bind((LOOP, 0))
        port = holder.getsockname()[1]
        res = run_bench(linerate_bin, "-J", "-t", "1", f"{LOOP}:{port}",
                        timeout=30)
        assert res.returncode == 1, describe(res)
        doc = strict_json(res.stdout)
        assert doc["error"] == f"connect {LOOP}:{port}: Connection refused"
        assert set(doc) == {"error", "start", "intervals", "end"}
        res = run_bench(linerate_bin, "--json-stream", "-t", "1",
                        f"{LOOP}:{port}", timeout=30)
        assert res.returncode == 1, describe(res)
        lines = res.stdout.splitlines()
        assert len(lines) == 1, res.stdout
        assert strict_json(lines[0]) == {
            "event": "error",
            "data": f"connect {LOOP}:{port}: Connection refused"}


# ---------------- options ----------------

@pytest.mark.parametrize("zc,code", [("-Z", 2), ("-Zsendfile", 1),
                                     ("--zerocopy=sendfile", 1),
                                     ("-Z=sendfile", 1), ("-Zmsg", 2),
                                     ("-Z=msg", 2), ("--zerocopy=msg", 2)])
def test_zerocopy(serve, linerate_bin, zc, code):
    srv = serve()
    doc = bench_json(linerate_bin, "-t", "0.5", "-i", "0", zc,
                     f"{LOOP}:{srv.port}")
    assert doc["start"]["test_start"]["zerocopy"] == code
    assert doc["end"]["sum_received"]["bytes"] > 0


def test_window(serve, linerate_bin):
    srv = serve()
    doc = bench_json(linerate_bin, "-t", "0.5", "-i", "0", "-w", "256K",
                     f"{LOOP}:{srv.port}")
    assert doc["start"]["sock_bufsize"] == 256 * 1024
    # the kernel doubles SO_SNDBUF/SO_RCVBUF for its bookkeeping
    assert doc["start"]["sndbuf_actual"] >= 256 * 1024
    assert doc["end"]["sum_received"]["bytes"] > 0


def test_congestion_control(serve, linerate_bin):
    try:
        with open("/proc/sys/net/ipv4/tcp_available_congestion_control") as f:
            available = f.read().split()
    except OSError as exc:
        pytest.skip(f"cannot read available congestion controls: {exc}")
    if "cubic" not in available:
        pytest.skip(f"cubic not available (only {available})")
    srv = serve()
    doc = bench_json(linerate_bin, "-t", "0.5", "-i", "0", "-C", "cubic",
                     f"{LOOP}:{srv.port}")
    assert doc["end"]["sender_tcp_congestion"] == "cubic"
    assert doc["end"]["receiver_tcp_congestion"] == "cubic"
    res = bench_ok(linerate_bin, "-t", "0.5", "-i", "0", "-C", "cubic", "-R",
                   f"{LOOP}:{srv.port}")
    assert "TCP congestion control: local cubic, remote cubic" in res.stdout


def test_mss(serve, linerate_bin):
    srv = serve()
    doc = bench_json(linerate_bin, "-t", "0.5", "-i", "0", "-M", "1000",
                     f"{LOOP}:{srv.port}")
    # iperf3's key for what -M asked; the MSS in use is linerate's own
    assert doc["start"]["tcp_mss"] == 1000, doc["start"]
    assert "tcp_mss_default" not in doc["start"]
    assert 0 < doc["end"]["linerate"]["tcp_mss"] <= 1000
    assert doc["end"]["sum_received"]["bytes"] > 0


def test_length(serve, linerate_bin):
    srv = serve()
    doc = bench_json(linerate_bin, "-n", "1M", "-l", "1000", "-i", "0",
                     f"{LOOP}:{srv.port}")
    assert doc["start"]["test_start"]["blksize"] == 1000
    assert doc["end"]["sum_received"]["bytes"] == MIB


def ipv6_loopback_reason():
    if not socket.has_ipv6:
        return "Python built without IPv6"
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
    except OSError as exc:
        return f"no IPv6 loopback (::1): {exc}"
    return None


def test_ipv6_loopback(serve, linerate_bin):
    reason = ipv6_loopback_reason()
    if reason:
        pytest.skip(reason)
    srv = serve()
    doc = bench_json(linerate_bin, "-6", "-t", "1", f"[::1]:{srv.port}")
    c = doc["start"]["connected"][0]
    assert c["local_host"] == "::1" and c["remote_host"] == "::1"
    assert doc["end"]["sum_received"]["bytes"] > 0
    srv.wait_log(r"test 1 from \[::1\]:\d+: forward, .*: ok$")
    # -4 with an IPv6 literal cannot work: a clean runtime error
    res = run_bench(linerate_bin, "-4", "-t", "1", f"[::1]:{srv.port}",
                    timeout=30)
    assert res.returncode == 1, describe(res)
    assert res.stderr.startswith("linerate bench: ")


def test_bind_address(serve, linerate_bin):
    srv = serve("-B", LOOP)
    assert srv.out.lines[0] == f"Server listening on {LOOP} port {srv.port}"
    doc = bench_json(linerate_bin, "-t", "0.5", "-i", "0", "-B", LOOP,
                     f"{LOOP}:{srv.port}")
    assert doc["start"]["connected"][0]["local_host"] == LOOP


# ---------------- the server ----------------

def test_server_logs_one_line_per_test(serve, linerate_bin):
    srv = serve()
    runs = [["-t", "0.5"], ["-t", "0.5", "-R", "-P", "2"],
            ["-n", "10M", "--bidir"]]
    for args in runs:
        bench_ok(linerate_bin, "-i", "0", *args, f"{LOOP}:{srv.port}")
    srv.wait_log(r"test 3 from ")
    tests = srv.log.find(LOG_TEST_RE)
    assert [(m.group(1), m.group(3), m.group(4), m.group(5))
            for m in tests] == [("1", "forward", "1", "ok"),
                                ("2", "reverse", "2", "ok"),
                                ("3", "bidir", "1", "ok")], srv.log.text()
    assert len(srv.log.lines) == 3, srv.log.text()
    for m in tests:
        assert m.group(2).startswith("127.0.0.1:")
    assert srv.stop() == 0  # SIGTERM is a clean stop


def test_serve_once_exits_with_test_status(serve, linerate_bin):
    srv = serve("--once")
    bench_ok(linerate_bin, "-t", "0.5", "-i", "0", f"{LOOP}:{srv.port}")
    assert srv.wait_exit(15) == 0
    srv.wait_log(r"test 1 from .*: ok$", timeout=1)

    srv = serve("--once", "--max-duration", "2")
    res = run_bench(linerate_bin, "-t", "5", f"{LOOP}:{srv.port}")
    assert res.returncode == 1, describe(res)
    assert srv.wait_exit(15) == 1
    srv.wait_log(r"test 1 from .*: failed: .*--max-duration", timeout=1)


def test_busy_server_rejects_second_client(serve, linerate_bin):
    srv = serve("--max-tests", "1")
    with BenchProc(linerate_bin, "-t", "5", f"{LOOP}:{srv.port}") as first:
        # the first test is running once it reports an interval
        first.out.wait_for(r"^\[\s*1\]\s+0\.00-", timeout=15)
        second = run_bench(linerate_bin, "-t", "1", f"{LOOP}:{srv.port}",
                           timeout=30)
        assert first.proc.poll() is None, "first test ended too early"
        assert second.returncode == 1, describe(second)
        err = second.stderr.splitlines()
        assert len(err) == 1, second.stderr
        assert err[0].startswith("linerate bench: server busy"), err
        srv.wait_log(r"127\.0\.0\.1:\d+: rejected: server busy")
        res = first.finish(timeout=30)
    assert res.returncode == 0, describe(res)
    assert "linerate Done." in res.stdout
    srv.wait_log(r"test 1 from .*: forward, 1 stream, .*: ok$")
    assert len(srv.log.find(LOG_TEST_RE)) == 1, srv.log.text()
    assert srv.alive()


def test_overlapping_tests_both_succeed_and_say_so(serve, linerate_bin):
    srv = serve()
    with BenchProc(linerate_bin, "-t", "3", f"{LOOP}:{srv.port}") as first:
        first.out.wait_for(r"^\[\s*1\]\s+0\.00-", timeout=15)
        doc = bench_json(linerate_bin, "-t", "1", "-i", "0",
                         f"{LOOP}:{srv.port}")
        res = first.finish(timeout=30)
    assert res.returncode == 0, describe(res)
    assert doc["end"]["linerate"]["overlapping_tests"] >= 1
    assert doc["end"]["sum_received"]["bytes"] > 0
    m = re.search(r"^Note: (\d+) other tests? ran on the server during this "
                  r"one", res.stdout, re.M)
    assert m and int(m.group(1)) >= 1, res.stdout
    srv.wait_log(r"test 2 from .*: ok$")
    srv.wait_log(r"test 1 from .*overlapped 1 other test: ok$")


def test_refused_test_is_logged_with_its_request(serve, linerate_bin):
    srv = serve("--max-duration", "5")
    res = run_bench(linerate_bin, "-t", "10", "-R", "-P", "4",
                    f"{LOOP}:{srv.port}", timeout=30)
    assert res.returncode == 1, describe(res)
    m = srv.wait_log(r"test 1 from .*: failed: .*--max-duration")
    assert re.search(r": reverse, 4 streams: failed: ", m.string), m.string


def stop_server_mid_test(srv, linerate_bin, sig):
    """Start a -t 10 test, deliver SIG to the server once the first
    interval is reported; returns the client's CompletedProcess."""
    with BenchProc(linerate_bin, "-t", "10", f"{LOOP}:{srv.port}") as bench:
        bench.out.wait_for(r"^\[\s*1\]\s+0\.00-", timeout=15)
        srv.proc.send_signal(sig)
        return bench.finish(timeout=15)


def test_server_stopped_during_test(serve, linerate_bin):
    srv = serve()
    res = stop_server_mid_test(srv, linerate_bin, signal.SIGTERM)
    assert res.returncode == 1, describe(res)
    err = res.stderr.splitlines()
    assert len(err) == 1 and err[0].startswith("linerate bench: "), err
    assert srv.wait_exit(15) == 0  # SIGTERM is a clean stop
    srv.wait_log(r"test 1 from .*: failed: server shutting down$",
                 timeout=1)


def test_server_stop_tells_the_client_why(serve, linerate_bin):
    srv = serve()
    res = stop_server_mid_test(srv, linerate_bin, signal.SIGTERM)
    assert res.returncode == 1, describe(res)
    assert "shutting down" in res.stderr, res.stderr


def test_server_killed_during_test(serve, linerate_bin):
    srv = serve()
    res = stop_server_mid_test(srv, linerate_bin, signal.SIGKILL)
    assert res.returncode == 1, describe(res)
    # the control connection or a data stream notices first
    err = res.stderr.splitlines()
    assert len(err) == 1, res.stderr
    assert re.match(r"linerate bench: (server closed the connection during "
                    r"the test|stream 1: )", err[0]), err


def test_many_streams_keep_the_requested_duration(serve, linerate_bin):
    srv = serve()
    doc = bench_json(linerate_bin, "-P", "128", "--bidir", "-t", "0.5",
                     "-i", "0.1", f"{LOOP}:{srv.port}", timeout=90)
    end = doc["end"]
    assert len(end["streams"]) == 256
    first = doc["intervals"][0]["sum"]
    # generous: 1.5 s of slack on a 0.1 s interval and a 0.5 s test
    assert first["end"] < 1.6, f"first 0.1 s interval ended at {first['end']}"
    for key in ("sum_sent", "sum_received", "sum_sent_bidir_reverse",
                "sum_received_bidir_reverse"):
        assert end[key]["seconds"] < 2.0, (key, end[key]["seconds"])
