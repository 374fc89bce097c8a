#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""doctor's destination figure against dd bs=1M conv=fdatasync in the
same directory, alternated, medians and their ratio: the check that the
probe measures the way a receiver writes (issue 22: within 25%). Speed
lives here, not in the tests: on this VM one write of any tool now and
then lands on fresh pages and takes 3x longer.

usage: bench/doctor_disk.py [--local] [--size MIB] [--repeat N] DIR
  --local   doctor --local DIR (its own server); else a `linerate serve
            --root DIR` on loopback with a fresh token
Traffic: loopback only (or doctor --local's own namespaces)."""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

BIN = os.environ.get("LINERATE_BIN", "build/linerate")


def dd_rate(out, size):
    res = subprocess.run(["dd", "if=/dev/zero", f"of={out}", "bs=1M",
                          f"count={size >> 20}", "conv=fdatasync"],
                         capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, LC_ALL="C"), check=True)
    m = re.search(r"^(\d+) bytes .* copied, ([\d.e-]+) s", res.stderr, re.M)
    os.unlink(out)
    return size / float(m.group(2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--local", action="store_true")
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("dir")
    a = ap.parse_args()
    size = a.size << 20
    srv = None
    with tempfile.TemporaryDirectory() as tmp:
        tok = os.path.join(tmp, "token")
        with open(tok, "w") as f:
            f.write(subprocess.run([BIN, "token"], capture_output=True,
                                   text=True, check=True).stdout)
        if not a.local:
            srv = subprocess.Popen([BIN, "serve", "-B", "127.0.0.1", "-p",
                                    "0", "--no-iperf3", "--root", a.dir,
                                    "--token-file", tok],
                                   stdout=subprocess.PIPE, text=True)
            port = re.search(r"port (\d+)", srv.stdout.readline()).group(1)
        try:
            doc_bps, dd_bps = [], []
            for i in range(a.repeat):
                os.sync()
                argv = ([BIN, "doctor", "--local", a.dir] if a.local else
                        [BIN, "doctor", "-p", port, "--token-file", tok,
                         "--no-ssh", "127.0.0.1"])
                res = subprocess.run(argv + ["--json", "-t", "0.5",
                                             "--size", f"{a.size}M"],
                                     capture_output=True, text=True,
                                     timeout=300, check=True)
                import json
                doc_bps.append(json.loads(res.stdout)["stages"]
                               ["destination_write"]["bytes_per_second"])
                os.sync()
                dd_bps.append(dd_rate(os.path.join(a.dir, f"dd{i}"), size))
        finally:
            if srv:
                srv.terminate()
                srv.wait(timeout=10)
    d, r = statistics.median(doc_bps), statistics.median(dd_bps)
    print(f"doctor{' --local' if a.local else ''} destination, MB/s: "
          f"{[round(b / 1e6) for b in doc_bps]}")
    print(f"dd bs=1M conv=fdatasync, MB/s:      "
          f"{[round(b / 1e6) for b in dd_bps]}")
    print(f"medians: doctor {d / 1e6:.0f}, dd {r / 1e6:.0f}; doctor / dd "
          f"{d / r:.2f} (issue 22: 0.75 to 1.25)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
