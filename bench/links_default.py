#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""links_default.py - what keeping hard links by default costs a tree
without links: `linerate send` (links kept, the default) against
`linerate send --no-hard-links` (every name a file of its own), each a
first copy into an empty destination and a re-sync of the unchanged
tree, A B A B over loopback into the server's root on a tmpfs.

For each run: wall seconds, and the machine's busy CPU seconds over the
run from /proc/stat (user, nice, system, irq, softirq, steal: both ends
share this machine). Prints the medians and the ratios default ÷
--no-hard-links. Traffic: loopback only.

With --links PCT, PCT of every 100 names are second names (hard links)
of files of the same directory, and a third run of each is timed: a
re-sync onto a destination of copies (made by --no-hard-links), where
links kept by default send each such name as a file of its own (asked
for with FILE_AGAIN, docs/PROTOCOL.md 7.3), as --no-hard-links does.

usage: bench/links_default.py [--files N] [--repeat N] [--links PCT]

  --files N    names in the tree, 4 KiB each, 1,000 a directory
               (default 10000)
  --repeat N   alternated runs of each, medians (default 7; one warm-up
               run of each first, not counted)
  --links PCT  second names per 100 names, 0..50 (default 0)

Exit status: 0 done, 1 a run failed or a copy differed, 2 usage
"""

import argparse
import filecmp
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

BIN = os.environ.get("LINERATE_BIN", "build/linerate")


def busy_jiffies():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal
    return v[0] + v[1] + v[2] + v[5] + v[6] + v[7]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_tree(top, files, links):
    block = os.urandom(4096)
    for i in range(files):
        d = os.path.join(top, "d%03d" % (i // 1000))
        os.makedirs(d, exist_ok=True)
        name = os.path.join(d, "f%05d" % i)
        if i % 100 >= 100 - links:  # a second name of one before it
            os.link(os.path.join(d, "f%05d" % (i - 50)), name)
            continue
        with open(name, "wb") as f:
            f.write(block[i % 4096:] + block[:i % 4096])


def same_tree(a, b):
    c = filecmp.dircmp(a, b)
    if c.left_only or c.right_only or c.diff_files or c.funny_files:
        return False
    return all(same_tree(os.path.join(a, s), os.path.join(b, s))
               for s in c.common_dirs)


def run(cmd):
    hz = os.sysconf("SC_CLK_TCK")
    j0, t0 = busy_jiffies(), time.monotonic()
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    t1, j1 = time.monotonic(), busy_jiffies()
    if res.returncode:
        sys.exit("links_default: %s exited %d: %s" %
                 (" ".join(cmd), res.returncode, res.stderr.strip()))
    return t1 - t0, (j1 - j0) / hz


def main():
    ap = argparse.ArgumentParser(add_help=True)
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--links", type=int, default=0)
    a = ap.parse_args()
    if not 1000 <= a.files <= 200000 or not 1 <= a.repeat <= 50 or \
            not 0 <= a.links <= 50:
        print("links_default: --files 1000..200000, --repeat 1..50, "
              "--links 0..50", file=sys.stderr)
        return 2
    if not os.access(BIN, os.X_OK):
        print("links_default: no linerate binary at " + BIN,
              file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="lr-links-", dir="/dev/shm")
    srv = None
    try:
        src, root = os.path.join(work, "src"), os.path.join(work, "root")
        os.mkdir(root)
        make_tree(src, a.files, a.links)
        tok = os.path.join(work, "token")
        with open(tok, "w") as f:
            f.write(subprocess.run([BIN, "token"], capture_output=True,
                                   text=True, check=True).stdout)
        port = free_port()
        srv = subprocess.Popen([BIN, "serve", "-B", "127.0.0.1", "-p",
                                str(port), "--root", root,
                                "--token-file", tok],
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        seen = []
        for line in srv.stdout:  # up to "listening on ...", or its end
            seen.append(line)
            if "listening" in line:
                break
        else:
            sys.exit("links_default: the server: " + "".join(seen))
        # the rest of its log, read so that it never waits on the pipe
        threading.Thread(target=srv.stdout.read, daemon=True).start()
        kinds = ("default", "--no-hard-links")
        steps = ("first", "resync") + (("copies",) if a.links else ())
        figures = {(k, s): [] for k in kinds for s in steps}
        dest = os.path.join(root, "out")
        for i in range(a.repeat + 1):
            for k in kinds:
                cmd = [BIN, "send", "-q", "-p", str(port), "--token-file",
                       tok] + ([] if k == "default" else [k]) + \
                    [src + "/", "127.0.0.1:out"]
                shutil.rmtree(dest, ignore_errors=True)
                got = {"first": run(cmd), "resync": run(cmd)}
                if a.links:  # onto copies
                    shutil.rmtree(dest, ignore_errors=True)
                    run(cmd[:-2] + ["--no-hard-links"] + cmd[-2:])
                    got["copies"] = run(cmd)
                if not same_tree(src, dest):
                    sys.exit("links_default: the copy differs (%s)" % k)
                for s in steps if i else ():  # the first round warms up
                    figures[(k, s)].append(got[s])
        print("%d names of 4 KiB, %d of every 100 second names, medians "
              "of %d alternated runs" % (a.files, a.links, a.repeat))
        print("%-16s %-7s %8s %10s" % ("", "", "wall s", "CPU s"))
        for s in steps:
            med = {}
            for k in kinds:
                w = statistics.median(x[0] for x in figures[(k, s)])
                c = statistics.median(x[1] for x in figures[(k, s)])
                med[k] = (w, c)
                print("%-16s %-7s %8.3f %10.3f" % (k, s, w, c))
            d, n = med["default"], med["--no-hard-links"]
            print("%-16s %-7s %7.2fx %9.2fx" %
                  ("default ÷ none", s, d[0] / n[0],
                   d[1] / n[1] if n[1] else float("nan")))
        return 0
    finally:
        if srv:
            srv.terminate()
            srv.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
