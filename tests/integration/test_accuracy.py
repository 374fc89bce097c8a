# SPDX-License-Identifier: MIT
"""Every figure of a bench test exact (docs/PROTOCOL.md, "Durations"): the
sender's and the receiver's seconds of one stream differ by no more than
1 ms, one round trip and what one write leaves in flight; the bytes agree
(all of them, or with -O what crossed the omitted period's end in that
time); the intervals add up to the totals of the side that printed them;
the last interval never ends after the total.

linerate against linerate serve, on loopback and between two namespace
hosts (root; skipped with the reason otherwise), at a bounded rate so
that the two shared cores are not the subject. A relation is asserted,
never a speed.
"""

import pytest

from lrproc import bench_json
from util import wait_for_listen

LOOP = "127.0.0.1"
NS_PORT = 7371

# name: arguments; the rate is per stream
MODES = {
    "forward": ["-t", "2", "-b", "1G"],
    "reverse": ["-t", "2", "-b", "1G", "-R"],
    "bidir": ["-t", "2", "-b", "500M", "--bidir"],
    "parallel4": ["-t", "2", "-b", "250M", "-P", "4"],
    "omit": ["-t", "2", "-b", "1G", "-O", "1"],
    "udp": ["-u", "-t", "2", "-b", "200M", "-l", "1400"],
    "udp-reverse": ["-u", "-t", "2", "-b", "200M", "-l", "1400", "-R"],
}


def rate_bps(args):
    b = args[args.index("-b") + 1]
    return {"G": 1e9, "M": 1e6}[b[-1]] * float(b[:-1])


def local_pairs(doc):
    """(interval key, end key) of the figures this side counted."""
    ts = doc["start"]["test_start"]
    if ts["bidir"]:
        return [("sum", "sum_sent"),
                ("sum_bidir_reverse", "sum_received_bidir_reverse")]
    return [("sum", "sum_received" if ts["reverse"] else "sum_sent")]


def check_streams(doc, args):
    """Each stream's two sides: seconds within 1 ms + RTT + one write in
    flight; bytes equal (TCP), or within what the omitted period's end
    let through in that time (-O)."""
    udp = "-u" in args
    rate = rate_bps(args)
    blk = doc["start"]["test_start"]["blksize"]
    rtt = max([st.get("sender", {}).get("max_rtt", 0)
               for st in doc["end"]["streams"]] + [0]) / 1e6
    slack = 0.001 + rtt + blk * 8 / rate
    for st in doc["end"]["streams"]:
        if udp:
            continue  # one object per UDP stream, one side: see the sums
        snd, rcv = st["sender"], st["receiver"]
        assert abs(snd["seconds"] - rcv["seconds"]) <= slack, (snd, rcv,
                                                               slack)
        if "-O" in args:
            # a paced sender's write of blk bytes may straddle the
            # omitted period's end on one side and not the other
            assert abs(snd["bytes"] - rcv["bytes"]) <= \
                2 * blk + rate / 8 * slack, (snd, rcv)
        else:
            assert snd["bytes"] == rcv["bytes"], (snd, rcv)
    end = doc["end"]
    for sent, recv in (("sum_sent", "sum_received"),
                       ("sum_sent_bidir_reverse",
                        "sum_received_bidir_reverse")):
        if sent not in end:
            continue
        s, r = end[sent], end[recv]
        assert abs(s["seconds"] - r["seconds"]) <= slack, (s, r, slack)
        assert r["end"] <= s["end"] + slack, (s, r)
        if not udp and "-O" not in args:
            assert s["bytes"] == r["bytes"], (s, r)


def check_intervals(doc):
    """The intervals add up to this side's totals, in the sum and per
    stream, and the last ends where the total does."""
    end = doc["end"]
    kept = [iv for iv in doc["intervals"] if not iv["sum"]["omitted"]]
    assert kept, doc["intervals"]
    for ivkey, endkey in local_pairs(doc):
        got = sum(iv[ivkey]["bytes"] for iv in kept)
        assert got == end[endkey]["bytes"], (ivkey, got, end[endkey])
        assert kept[-1][ivkey]["end"] <= end[endkey]["end"] + 1e-6, \
            (kept[-1][ivkey], end[endkey])
        assert kept[-1][ivkey]["end"] >= end[endkey]["end"] - 1e-6, \
            (kept[-1][ivkey], end[endkey])


def run_and_check(binary, args, target, run=None):
    kw = {"run": run} if run else {}
    doc = bench_json(binary, *args, target, **kw)
    check_intervals(doc)
    check_streams(doc, args)
    return doc


@pytest.mark.parametrize("mode", MODES.keys())
def test_figures_agree_on_loopback(serve, linerate_bin, mode):
    srv = serve("-B", LOOP)
    run_and_check(linerate_bin, MODES[mode], f"{LOOP}:{srv.port}")


@pytest.mark.parametrize("mode", ["forward", "reverse", "bidir", "omit",
                                  "udp"])
def test_figures_agree_between_hosts(hosts, serve, linerate_bin, mode):
    serve("-B", hosts.addr_b, "-p", str(NS_PORT), "--no-iperf3",
          popen=hosts.popen_b)
    wait_for_listen(hosts.run_b, NS_PORT, timeout=10)
    run_and_check(linerate_bin, MODES[mode], f"{hosts.addr_b}:{NS_PORT}",
                  run=hosts.run_a)


def test_interval_zero_is_the_whole_test(serve, linerate_bin):
    """-i 0: one interval, from 0 to the total's end, holding every
    byte."""
    srv = serve("-B", LOOP)
    doc = bench_json(linerate_bin, "-t", "1", "-b", "1G", "-i", "0",
                     f"{LOOP}:{srv.port}")
    assert len(doc["intervals"]) == 1, doc["intervals"]
    check_intervals(doc)
    assert doc["intervals"][0]["sum"]["start"] == 0
