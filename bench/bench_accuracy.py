#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""bench_accuracy.py - how exact the figures of one test are, for every
pair of client and server: linerate bench against linerate serve, iperf3
-c against iperf3 -s, and the two mixed pairs (linerate bench --iperf3
against iperf3 -s, iperf3 -c against linerate serve), side by side,
printed as a Markdown table.

usage: bench/bench_accuracy.py [--repeat N] [-t SEC] [--rate RATE] [--hosts]
                               [--modes forward,-R,--bidir,-P 4,-O 1,UDP]

For each mode (forward, -R, --bidir, -P 4, -O 1, UDP; --modes: some of
them, comma separated) every pair runs
--repeat times (default 5), the order of the pairs rotating from one
round to the next; every cell is the median. From each client's -J
document, for the test's direction:

  sender s, receiver s   end.sum_sent / end.sum_received .seconds
  diff ms                receiver minus sender seconds
  bytes recv/sent        end.sum_received.bytes / end.sum_sent.bytes
  iv sum / total         the client's non-omitted interval bytes over the
                         total of the side that printed them (1 = exact)

A bounded rate (--rate, default 1G per stream) keeps the two cores from
being the subject. Without --hosts traffic goes to 127.0.0.1; with
--hosts (root) between two test hosts in network namespaces this script
creates (198.18.0.1 and 198.18.0.2, a veth pair shaped to 1 Gbit/s by
tbf) and removes, also on failure. Every run has a timeout. This
measures; it never fails on a figure. Environment: LINERATE (default
build/linerate of this tree), IPERF3 (default iperf3).
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "tests", "integration"))
LINERATE = os.environ.get("LINERATE", os.path.join(TOP, "build", "linerate"))
IPERF3 = os.environ.get("IPERF3", "iperf3")

# (client, server): who asks and who answers
PAIRS = [("linerate", "linerate"), ("iperf3", "iperf3"),
         ("linerate", "iperf3"), ("iperf3", "linerate")]


class Loopback:
    """Both ends on this host's loopback."""
    srv_addr = "127.0.0.1"

    def popen_b(self, argv, **kw):
        return subprocess.Popen(argv, **kw)

    def run_a(self, argv, **kw):
        return subprocess.run(argv, **kw)

    def run_b(self, argv, **kw):
        return subprocess.run(argv, **kw)

    def free_port(self):
        with socket.socket() as s:
            s.bind((self.srv_addr, 0))
            return s.getsockname()[1]


class Hosts(Loopback):
    """Client on test host A, server on test host B."""

    def __init__(self, th):
        self.th = th
        self.srv_addr = th.addr_b
        self.next_port = 20000

    def popen_b(self, argv, **kw):
        return self.th.popen_b(argv, **kw)

    def run_a(self, argv, **kw):
        return self.th.run_a(argv, **kw)

    def run_b(self, argv, **kw):
        return self.th.run_b(argv, **kw)

    def free_port(self):
        # a fresh namespace: nothing else binds there
        self.next_port += 1
        return self.next_port


def wait_listen(where, port, timeout=5.0):
    """Until a socket listens on port (asked of ss, not by connecting: a
    one-shot server would take a probe for its test)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        out = where.run_b(["ss", "-Hltn", f"sport = :{port}"],
                          capture_output=True, text=True, timeout=5).stdout
        if out.strip():
            return
        time.sleep(0.02)
    raise RuntimeError(f"nothing listens on {port}")


def commands(pair, host, port, args):
    cli, srv = pair
    if srv == "linerate":
        own = port + 1000 if cli == "iperf3" else port
        s = [LINERATE, "serve", "-1", "-B", host, "-p", str(own)]
        s += ["--iperf3-port", str(port)] if cli == "iperf3" else \
            ["--no-iperf3"]
    else:
        s = [IPERF3, "-s", "-1", "-B", host, "-p", str(port)]
    if cli == "linerate":
        c = [LINERATE, "bench", "-J", "-p", str(port), *args, host]
        if srv == "iperf3":
            c.insert(2, "--iperf3")
    else:
        c = [IPERF3, "-c", host, "-p", str(port), "-J", *args]
    return s, c


def run_once(where, pair, args):
    port = where.free_port()
    srv, cli = commands(pair, where.srv_addr, port, args)
    sp = where.popen_b(srv, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listen(where, port)
        res = where.run_a(cli, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)
    finally:
        try:
            sp.wait(timeout=10)
        except subprocess.TimeoutExpired:
            sp.kill()
            sp.wait()
    doc = json.loads(res.stdout)
    if res.returncode or "error" in doc:
        raise RuntimeError(f"{pair} {args}: {doc.get('error', res.stderr)}")
    return doc


def figures(doc):
    end = doc["end"]
    s, r = end["sum_sent"], end["sum_received"]
    ts = doc["start"]["test_start"]
    key, total = ("sum", r["bytes"] if ts["reverse"] else s["bytes"])
    ivs = sum(iv[key]["bytes"] for iv in doc["intervals"]
              if not iv[key].get("omitted"))
    return {"snd_s": s["seconds"], "rcv_s": r["seconds"],
            "diff_ms": (r["seconds"] - s["seconds"]) * 1e3,
            "bytes": r["bytes"] / s["bytes"] if s["bytes"] else 0,
            "iv": ivs / total if total else 0}


def table(where, a, modes):
    print("| mode | client -> server | sender s | receiver s "
          "| receiver - sender ms | bytes received / sent "
          "| interval bytes / total |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for name, args in modes:
        got = {p: [] for p in PAIRS}
        for i in range(a.repeat):
            k = i % len(PAIRS)
            for pair in PAIRS[k:] + PAIRS[:k]:
                got[pair].append(figures(run_once(where, pair, args)))
        for pair in PAIRS:
            m = {k: statistics.median(f[k] for f in got[pair])
                 for k in got[pair][0]}
            print(f"| {name} | {pair[0]} -> {pair[1]} | {m['snd_s']:.4f} "
                  f"| {m['rcv_s']:.4f} | {m['diff_ms']:+.2f} "
                  f"| {m['bytes']:.5f} | {m['iv']:.5f} |", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("-t", type=float, default=2)
    ap.add_argument("--rate", default="1G")
    ap.add_argument("--hosts", action="store_true",
                    help="between two namespace hosts on a 1 Gbit/s link")
    ap.add_argument("--modes", default="",
                    help="comma-separated modes of the table (default all)")
    a = ap.parse_args()
    if not 1 <= a.repeat <= 50 or not 0.5 <= a.t <= 60:
        print("bench_accuracy: --repeat 1-50, -t 0.5-60", file=sys.stderr)
        return 2
    t = ["-t", f"{a.t:g}"]
    modes = [
        ("forward", t + ["-b", a.rate]),
        ("-R", t + ["-b", a.rate, "-R"]),
        ("--bidir", t + ["-b", a.rate, "--bidir"]),
        ("-P 4", t + ["-b", a.rate, "-P", "4"]),
        ("-O 1", t + ["-b", a.rate, "-O", "1"]),
        ("UDP 200M", t + ["-u", "-b", "200M", "-l", "1400"]),
    ]
    if a.modes:
        want = a.modes.split(",")
        unknown = [m for m in want if m not in dict(modes)]
        if unknown:
            print(f"bench_accuracy: --modes: no mode {unknown}",
                  file=sys.stderr)
            return 2
        modes = [m for m in modes if m[0] in want]
    where_s = "two namespace hosts, 1 Gbit/s tbf" if a.hosts else "loopback"
    print("# Accuracy: one test's figures, every client and server pair\n")
    print(f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"- command: `bench/bench_accuracy.py --repeat {a.repeat} "
          f"-t {a.t:g} --rate {a.rate}{' --hosts' if a.hosts else ''}"
          f"{' --modes ' + repr(a.modes) if a.modes else ''}`; "
          f"medians of {a.repeat}, order rotated; {where_s}\n")
    if not a.hosts:
        table(Loopback(), a, modes)
        return 0
    from testhosts import TestHosts, netns_skip_reason
    why = netns_skip_reason()
    if why:
        print(f"bench_accuracy: --hosts: {why}", file=sys.stderr)
        return 2
    with TestHosts(rate="1gbit") as th:
        table(Hosts(th), a, modes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
