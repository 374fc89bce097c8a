# SPDX-License-Identifier: MIT
"""linerate between two network namespaces (needs root; the fixtures skip
with the reason otherwise): server in B on 198.18.0.2, client in A.

The shaped test compares linerate's measurement with stock iperf3's on
the same 1 Gbit/s link in the same test: a check of measurement
accuracy, not a speed claim.
"""

import json
import re
import shutil
import subprocess

import pytest

from lrproc import bench_json, describe, run_bench
from util import wait_for_listen

IPERF3_PORT = 5201  # inside the test's own namespace: nothing to collide


@pytest.mark.parametrize("mode", [[], ["-R"], ["-P", "2"]],
                         ids=["forward", "reverse", "parallel"])
def test_between_namespaces(hosts, serve, linerate_bin, mode):
    srv = serve("-B", hosts.addr_b, popen=hosts.popen_b)
    doc = bench_json(linerate_bin, "-t", "2", *mode,
                     f"{hosts.addr_b}:{srv.port}", run=hosts.run_a)
    nstreams = 2 if "-P" in mode else 1
    assert len(doc["start"]["connected"]) == nstreams
    for c in doc["start"]["connected"]:
        assert c["local_host"] == hosts.addr_a
        assert (c["remote_host"], c["remote_port"]) == (hosts.addr_b,
                                                        srv.port)
    end = doc["end"]
    assert end["sum_sent"]["bytes"] > 0
    assert end["sum_received"]["bytes"] > 0
    assert end["sum_sent"]["sender"] is ("-R" not in mode)
    link = end["linerate"]["link"]
    assert link["interface"] == hosts.if_a and link["virtual"] is True
    kind = "reverse" if "-R" in mode else "forward"
    srv.wait_log(rf"test 1 from {re.escape(hosts.addr_a)}:\d+: {kind}, "
                 rf"{nstreams} streams?, .*: ok$")


def iperf3_once(h, seconds):
    """One stock iperf3 test A -> B; returns its parsed -J document."""
    srv = h.popen_b(["iperf3", "-s", "-1", "-B", h.addr_b, "-p",
                     str(IPERF3_PORT)], stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_listen(h.run_b, IPERF3_PORT, timeout=10)
        res = h.run_a(["iperf3", "-c", h.addr_b, "-p", str(IPERF3_PORT),
                       "-t", str(seconds), "-J"], capture_output=True,
                      text=True, timeout=60)
        assert res.returncode == 0, describe(res)
        assert srv.wait(timeout=15) == 0
        return json.loads(res.stdout)
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait(timeout=10)


# Rounds of (iperf3, linerate) on the shaped link.  Other processes on the
# machine can take CPU from one run and not the other, which moves the
# pair apart without either tool measuring wrongly; agreement in one round
# shows the measurement is right, and every round is reported on failure.
AGREEMENT_ROUNDS = 3


def test_shaped_link_agrees_with_iperf3(shaped_hosts, serve, linerate_bin):
    if shutil.which("iperf3") is None:
        pytest.skip("'iperf3' not installed")
    h = shaped_hosts
    srv = serve("-B", h.addr_b, popen=h.popen_b)
    rounds = []
    for _ in range(AGREEMENT_ROUNDS):
        iperf = iperf3_once(h, 5)
        iperf_bps = iperf["end"]["sum_received"]["bits_per_second"]
        doc = bench_json(linerate_bin, "-t", "5", "--link-speed", "1gbit",
                         f"{h.addr_b}:{srv.port}", run=h.run_a)
        lr_bps = doc["end"]["sum_received"]["bits_per_second"]
        rounds.append((iperf_bps, lr_bps))
        print(f"iperf3 {iperf_bps / 1e6:.1f} Mbit/s, linerate "
              f"{lr_bps / 1e6:.1f} Mbit/s")
        if lr_bps == pytest.approx(iperf_bps, rel=0.05):
            break
    assert iperf_bps > 0
    assert lr_bps == pytest.approx(iperf_bps, rel=0.05), (
        "linerate and iperf3 disagree by more than 5% on the same link in "
        "every round (Mbit/s, iperf3 vs linerate): " + ", ".join(
            f"{i / 1e6:.1f} vs {r / 1e6:.1f}" for i, r in rounds))

    link = doc["end"]["linerate"]["link"]
    assert link["speed_bits_per_second"] == 1e9
    assert link["mtu"] == 1500
    # 1 Gbit/s Ethernet, MTU 1500, IPv4 + TCP timestamps: 1448/1538
    assert link["tcp_ceiling_bits_per_second"] == pytest.approx(941.5e6,
                                                                rel=0.005)
    assert 0 < link["percent_of_ceiling"] == pytest.approx(
        100 * lr_bps / link["tcp_ceiling_bits_per_second"], rel=1e-3)

    res = run_bench(linerate_bin, "-t", "1", "-i", "0", "--link-speed",
                    "1gbit", f"{h.addr_b}:{srv.port}", run=h.run_a)
    assert res.returncode == 0, describe(res)
    m = re.search(r"^Link (\S+): 1\.00 Gbits/sec, MTU 1500, TCP ceiling\s+"
                  r"(\d+) Mbits/sec; received [\d.]+% of it$", res.stdout,
                  re.M)
    assert m, res.stdout
    assert m.group(1) == h.if_a and m.group(2) in ("941", "942")
