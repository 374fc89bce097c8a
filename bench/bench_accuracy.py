#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""bench_accuracy.py - how exact the figures of one test are: linerate
bench against linerate serve, and iperf3 -c against iperf3 -s, side by
side on loopback, printed as a Markdown table.

usage: bench/bench_accuracy.py [--repeat N] [-t SEC] [--rate RATE]

For each mode (forward, -R, --bidir, -P 4, -O 1, UDP) both tools run
--repeat times (default 5), alternating which goes first; every cell is
the median. From each client's -J document, for the test's direction:

  sender s, receiver s   end.sum_sent / end.sum_received .seconds
  diff ms                receiver minus sender seconds
  bytes recv/sent        end.sum_received.bytes / end.sum_sent.bytes
  iv sum / total         the client's non-omitted interval bytes over the
                         total of the side that printed them (1 = exact)

A bounded rate (--rate, default 1G per stream) keeps the two cores from
being the subject. Traffic goes to 127.0.0.1 only; every run has a
timeout. This measures; it never fails on a figure. Environment:
LINERATE (default build/linerate of this tree), IPERF3 (default iperf3).
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
LINERATE = os.environ.get("LINERATE", os.path.join(TOP, "build", "linerate"))
IPERF3 = os.environ.get("IPERF3", "iperf3")
HOST = "127.0.0.1"


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def wait_listen(port, timeout=5.0):
    """Until a socket listens on port (asked of ss, not by connecting: a
    one-shot server would take a probe for its test)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        out = subprocess.run(["ss", "-Hltn", f"sport = :{port}"],
                             capture_output=True, text=True).stdout
        if out.strip():
            return
        time.sleep(0.02)
    raise RuntimeError(f"nothing listens on {port}")


def run_once(tool, args):
    port = free_port()
    if tool == "linerate":
        srv = [LINERATE, "serve", "-1", "-B", HOST, "-p", str(port),
               "--no-iperf3"]
        cli = [LINERATE, "bench", "-J", "-p", str(port), *args, HOST]
    else:
        srv = [IPERF3, "-s", "-1", "-B", HOST, "-p", str(port)]
        cli = [IPERF3, "-c", HOST, "-p", str(port), "-J", *args]
    sp = subprocess.Popen(srv, stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listen(port)
        res = subprocess.run(cli, stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=120)
    finally:
        try:
            sp.wait(timeout=10)
        except subprocess.TimeoutExpired:
            sp.kill()
            sp.wait()
    doc = json.loads(res.stdout)
    if res.returncode or "error" in doc:
        raise RuntimeError(f"{tool} {args}: {doc.get('error', res.stderr)}")
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("-t", type=float, default=2)
    ap.add_argument("--rate", default="1G")
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
    print("# Accuracy: one test's figures, linerate and iperf3\n")
    print(f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"- command: `bench/bench_accuracy.py --repeat {a.repeat} "
          f"-t {a.t:g} --rate {a.rate}`; medians of {a.repeat}, "
          "alternated; loopback\n")
    print("| mode | tool | sender s | receiver s | receiver - sender ms "
          "| bytes received / sent | interval bytes / total |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for name, args in modes:
        got = {"linerate": [], "iperf3": []}
        for i in range(a.repeat):
            order = ("linerate", "iperf3") if i % 2 == 0 else \
                ("iperf3", "linerate")
            for tool in order:
                got[tool].append(figures(run_once(tool, args)))
        for tool in ("linerate", "iperf3"):
            m = {k: statistics.median(f[k] for f in got[tool])
                 for k in got[tool][0]}
            print(f"| {name} | {tool} | {m['snd_s']:.4f} | {m['rcv_s']:.4f} "
                  f"| {m['diff_ms']:+.2f} | {m['bytes']:.5f} "
                  f"| {m['iv']:.5f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
