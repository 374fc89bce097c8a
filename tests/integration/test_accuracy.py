# SPDX-License-Identifier: MIT
"""Every figure of a bench test exact (docs/PROTOCOL.md, "Durations"): the
sender's and the receiver's seconds of one stream differ by no more than
1 ms, one round trip, what one write leaves in flight and 10 ms for the
receiving thread to be scheduled on this machine's two shared cores (the
bugs this guards against were 40-60 ms); the bytes agree
(all of them, or with -O what crossed the omitted period's end in that
time); the intervals add up to the totals of the side that printed them;
the last interval never ends after the total.

linerate against linerate serve, on loopback and between two namespace
hosts (root; skipped with the reason otherwise), at a bounded rate so
that the two shared cores are not the subject; both mixed pairs (`linerate
bench --iperf3` against a stock iperf3 -s, a stock iperf3 -c against
linerate serve), whose bytes may differ by what was in flight when
iperf3's side stopped; `linerate bench --iperf3` timed by a stock server
as its own client is; and, unpaced on the 1 Gbit/s link, the drain after
the deadline bounded by what the senders' sockets may still hold then. A
relation is asserted, never a speed.
"""

import statistics

import pytest

from ip3util import (finish_iperf3_server, iperf3_doc, run_iperf3_client,
                     start_iperf3_server, strict_json)
from lrproc import bench_json, describe, run_bench
from util import wait_for_listen

LOOP = "127.0.0.1"
SCHED_S = 0.010
# what a timed sender's socket may still hold unsent at the deadline
# (src/core/bench/lowat.c)
LOWAT_BYTES = 128 * 1024
NS_PORT = 7371
IPERF3_PORT = 5321

# name: arguments; the rate is per stream
MODES = {
    "forward": ["-t", "2", "-b", "1G"],
    "reverse": ["-t", "2", "-b", "1G", "-R"],
    "bidir": ["-t", "2", "-b", "500M", "--bidir"],
    "parallel4": ["-t", "2", "-b", "250M", "-P", "4"],
    "omit": ["-t", "2", "-b", "1G", "-O", "1"],
    # an omitted period that ends inside a millisecond, intervals that do
    # not divide the test
    "omit-odd": ["-t", "2", "-b", "1G", "-O", "1.0005", "-i", "0.333"],
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


def slack_of(doc, args):
    """(rate, blksize, slack): the slack of two seconds of one stream is
    1 ms + the largest RTT + one write at the rate + SCHED_S (the
    receiver stamps a byte when its thread reads it: on two shared cores
    it may be scheduled a few ms late after the deadline)."""
    rate = rate_bps(args)
    blk = doc["start"]["test_start"]["blksize"]
    rtt = max([st.get("sender", {}).get("max_rtt", 0)
               for st in doc["end"]["streams"]] + [0]) / 1e6
    return rate, blk, 0.001 + rtt + blk * 8 / rate + SCHED_S


def check_streams(doc, args):
    """Each stream's two sides: seconds within 1 ms + RTT + one write in
    flight; bytes equal (TCP), or within what the omitted period's end
    let through in that time (-O)."""
    udp = "-u" in args
    rate, blk, slack = slack_of(doc, args)
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


def check_mixed(doc, args):
    """A test between linerate and a stock iperf3: the sender's and the
    receiver's seconds agree as between two linerates; iperf3's receiver
    stops reading at its own deadline, so the bytes may fall short of the
    sent ones by what was in flight then: one round trip at the rate,
    what the sender's socket may hold unsent, and a write on the way."""
    udp = "-u" in args
    rate, blk, slack = slack_of(doc, args)
    flight = rate / 8 * slack + LOWAT_BYTES + 2 * blk
    end = doc["end"]
    pairs = [(st["sender"], st["receiver"]) for st in end["streams"]
             if not udp]
    pairs += [(end[s], end[r]) for s, r in
              (("sum_sent", "sum_received"),
               ("sum_sent_bidir_reverse", "sum_received_bidir_reverse"))
              if s in end]
    assert pairs, end
    for snd, rcv in pairs:
        assert abs(snd["seconds"] - rcv["seconds"]) <= slack, (snd, rcv,
                                                               slack)
        if udp:
            continue
        assert rcv["bytes"] <= snd["bytes"], (snd, rcv)
        n = max(1, doc["start"]["test_start"]["num_streams"]) \
            if snd in (end.get("sum_sent"),
                       end.get("sum_sent_bidir_reverse")) else 1
        assert snd["bytes"] - rcv["bytes"] <= n * flight, (snd, rcv, flight)


def check_intervals(doc):
    """The intervals follow each other from 0, add up to this side's
    totals, and the last never ends after the total."""
    end = doc["end"]
    kept = [iv for iv in doc["intervals"] if not iv["sum"]["omitted"]]
    assert kept, doc["intervals"]
    # from 0, one after the other, none backwards
    assert kept[0]["sum"]["start"] == 0, kept[0]["sum"]
    for a, b in zip(kept, kept[1:]):
        assert b["sum"]["start"] == a["sum"]["end"], (a["sum"], b["sum"])
    for iv in kept:
        assert iv["sum"]["end"] >= iv["sum"]["start"], iv["sum"]
    for ivkey, endkey in local_pairs(doc):
        got = sum(iv[ivkey]["bytes"] for iv in kept)
        assert got == end[endkey]["bytes"], (ivkey, got, end[endkey])
        # (it may end before the total when no byte moved after it)
        assert kept[-1][ivkey]["end"] <= end[endkey]["end"] + 1e-6, \
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


def test_a_test_as_long_as_the_limit_is_whole(serve, linerate_bin):
    """-t as long as the server's --max-duration: the whole test, not
    truncated, and no note of a limit."""
    srv = serve("-B", LOOP, "--max-duration", "2")
    doc = run_and_check(linerate_bin, ["-t", "2", "-b", "1G"],
                        f"{LOOP}:{srv.port}")
    assert doc["end"]["linerate"]["truncated"] is False
    assert doc["end"]["sum_sent"]["seconds"] == 2


def test_interval_zero_is_the_whole_test(serve, linerate_bin):
    """-i 0: one interval, from 0 to the total's end, holding every
    byte."""
    srv = serve("-B", LOOP)
    doc = bench_json(linerate_bin, "-t", "1", "-b", "1G", "-i", "0",
                     f"{LOOP}:{srv.port}")
    assert len(doc["intervals"]) == 1, doc["intervals"]
    check_intervals(doc)
    assert doc["intervals"][0]["sum"]["start"] == 0


def _server_seconds(doc):
    end = doc["end"]
    return max(end[k]["seconds"] for k in ("sum_sent", "sum_received")
               if k in end)


@pytest.mark.parametrize("mode", ["forward", "reverse", "bidir"])
def test_iperf3_server_times_linerate_as_its_own_client(hosts, linerate_bin,
                                                        iperf3, mode):
    """A stock iperf3 -s measures a test of `linerate bench --iperf3` as
    long as one of a stock iperf3 -c: the server's own duration is no
    further from -t than with iperf3 -c, plus 2 ms (medians of 5,
    alternated); linerate's client reports exactly -t / -i intervals."""
    args = MODES[mode]
    far = {"linerate": [], "iperf3": []}
    for i in range(5):
        for who in (("linerate", "iperf3") if i % 2 else
                    ("iperf3", "linerate")):
            srv = start_iperf3_server(hosts, IPERF3_PORT)
            if who == "linerate":
                res = run_bench(linerate_bin, "-J", "--iperf3", "-p",
                                str(IPERF3_PORT), *args, hosts.addr_b,
                                run=hosts.run_a, timeout=60)
            else:
                res = run_iperf3_client(hosts, IPERF3_PORT, *args)
            rc, out, err = finish_iperf3_server(srv)
            assert res.returncode == 0 and rc == 0, describe(res) + out + err
            if who == "linerate":
                lr = strict_json(res.stdout)
                assert len(lr["intervals"]) == 2, lr["intervals"]
            far[who].append(abs(_server_seconds(strict_json(out)) - 2.0))
    med = {k: statistics.median(v) for k, v in far.items()}
    print(f"{mode}: |server seconds - 2| medians {med}, runs {far}")
    assert med["linerate"] <= med["iperf3"] + 0.002, far


@pytest.mark.parametrize("mode", ["forward", "reverse", "bidir", "parallel4",
                                  "udp"])
@pytest.mark.parametrize("pair", ["linerate-iperf3", "iperf3-linerate"])
def test_mixed_pairs_agree_between_hosts(hosts, serve, linerate_bin, iperf3,
                                         pair, mode):
    """linerate bench --iperf3 against a stock iperf3 -s, and a stock
    iperf3 -c against linerate serve: the client's document (which holds
    both sides' figures) agrees with itself (check_mixed), and linerate's
    intervals add up to its totals."""
    args = MODES[mode]
    if pair == "linerate-iperf3":
        srv = start_iperf3_server(hosts, IPERF3_PORT)
        res = run_bench(linerate_bin, "-J", "--iperf3", "-p",
                        str(IPERF3_PORT), *args, hosts.addr_b,
                        run=hosts.run_a, timeout=60)
        rc, out, err = finish_iperf3_server(srv)
        assert res.returncode == 0 and rc == 0, describe(res) + out + err
        doc = strict_json(res.stdout)
        check_intervals(doc)
    else:
        serve("-B", hosts.addr_b, "-p", str(NS_PORT), "--iperf3-port",
              str(IPERF3_PORT), popen=hosts.popen_b)
        wait_for_listen(hosts.run_b, IPERF3_PORT, timeout=10)
        doc = iperf3_doc(run_iperf3_client(hosts, IPERF3_PORT, *args))
    check_mixed(doc, args)


def test_the_drain_after_the_deadline_is_short(shaped_hosts, serve,
                                               linerate_bin):
    """Unpaced on the 1 Gbit/s link, four streams: at the deadline each
    sender's socket holds at most LOWAT_BYTES unsent (src/core/bench/
    lowat.c), so the receiver's period ends within one round trip (the
    link's queue included) plus those bytes at the link's rate of the
    sender's (without the tail: four send buffers, ~70 ms here)."""
    h = shaped_hosts
    serve("-B", h.addr_b, "-p", str(NS_PORT), "--no-iperf3",
          popen=h.popen_b)
    wait_for_listen(h.run_b, NS_PORT, timeout=10)
    doc = bench_json(linerate_bin, "-t", "2", "-P", "4",
                     f"{h.addr_b}:{NS_PORT}", run=h.run_a)
    check_intervals(doc)
    end = doc["end"]
    blk = doc["start"]["test_start"]["blksize"]
    rtt = max(st["sender"]["max_rtt"] for st in end["streams"]) / 1e6
    queued = 4 * (max(LOWAT_BYTES, blk) + blk)
    bound = 0.001 + rtt + queued * 8 / 0.9e9 + SCHED_S
    late = end["sum_received"]["seconds"] - end["sum_sent"]["seconds"]
    print(f"receiver - sender {late * 1e3:.2f} ms, bound {bound * 1e3:.2f}")
    assert 0 <= late <= bound, (late, bound, end["sum_sent"],
                                end["sum_received"])
    assert end["sum_sent"]["bytes"] == end["sum_received"]["bytes"]
