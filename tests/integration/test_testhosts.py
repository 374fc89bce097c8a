# SPDX-License-Identifier: MIT
"""Tests of the namespace test-host harness itself."""

import json
import shutil
import subprocess

import pytest

from testhosts import TestHosts, netns_skip_reason
from util import wait_for_line, wait_for_listen

IPERF3_PORT = 5201


def netns_names():
    res = subprocess.run(["ip", "netns", "list"], capture_output=True,
                         text=True, check=True, timeout=10)
    return {line.split(" ", 1)[0] for line in res.stdout.splitlines()}


def require_tool(name):
    if shutil.which(name) is None:
        pytest.skip(f"'{name}' not installed")


def test_names_short_and_unique():
    a, b = TestHosts(), TestHosts()
    names = [a.ns_a, a.ns_b, a.if_a, a.if_b, b.ns_a, b.ns_b, b.if_a, b.if_b]
    assert len(set(names)) == len(names)
    assert all(len(n) <= 15 for n in names)
    assert (a.addr_a, a.addr_b) == ("198.18.0.1", "198.18.0.2")


def test_hosts_reach_each_other(hosts):
    require_tool("ping")
    res = hosts.run_a(["ping", "-c1", "-W2", hosts.addr_b],
                      capture_output=True, text=True, timeout=10)
    assert res.returncode == 0, res.stdout + res.stderr
    res = hosts.run_b(["ip", "-o", "-4", "addr", "show", "dev", hosts.if_b],
                      capture_output=True, text=True, check=True, timeout=10)
    assert f"{hosts.addr_b}/24" in res.stdout


def test_cleanup_removes_namespaces_and_processes():
    reason = netns_skip_reason()
    if reason:
        pytest.skip(reason)
    with TestHosts() as h:
        assert {h.ns_a, h.ns_b} <= netns_names()
        proc = h.popen_b(["sleep", "60"])
    assert proc.poll() is not None, "popen'd process survived cleanup"
    assert not {h.ns_a, h.ns_b} & netns_names()
    h.down()  # idempotent


def test_cleanup_on_exception_and_two_instances():
    reason = netns_skip_reason()
    if reason:
        pytest.skip(reason)
    with pytest.raises(RuntimeError, match="boom"):
        with TestHosts() as h1, TestHosts() as h2:
            assert {h1.ns_a, h1.ns_b, h2.ns_a, h2.ns_b} <= netns_names()
            raise RuntimeError("boom")
    assert not {h1.ns_a, h1.ns_b, h2.ns_a, h2.ns_b} & netns_names()


def test_shaped_hosts_have_tbf_and_no_offloads(shaped_hosts):
    h = shaped_hosts
    for run, ifname in ((h.run_a, h.if_a), (h.run_b, h.if_b)):
        res = run(["tc", "qdisc", "show", "dev", ifname],
                  capture_output=True, text=True, check=True, timeout=10)
        assert "qdisc tbf" in res.stdout and "rate 1Gbit" in res.stdout, \
            res.stdout
        assert "overhead 24" in res.stdout, res.stdout
        res = run(["ethtool", "-k", ifname],
                  capture_output=True, text=True, check=True, timeout=10)
        for feature in ("tcp-segmentation-offload",
                        "generic-segmentation-offload",
                        "generic-receive-offload"):
            assert f"{feature}: off" in res.stdout, feature


def test_wait_for_line(hosts):
    proc = hosts.popen_a(["sh", "-c", "echo one; echo ready 42; exec cat"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    m = wait_for_line(proc.stdout, r"ready (\d+)", timeout=5)
    assert m.group(1) == "42"
    proc.stdin.close()  # cat exits on EOF
    with pytest.raises(EOFError):
        wait_for_line(proc.stdout, r"never", timeout=5)
    assert proc.wait(timeout=5) == 0


def test_iperf3_shaped_rate(shaped_hosts):
    require_tool("iperf3")
    h = shaped_hosts
    server = h.popen_b(["iperf3", "-s", "-1", "-B", h.addr_b,
                        "-p", str(IPERF3_PORT)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    wait_for_listen(h.run_b, IPERF3_PORT, timeout=5)
    res = h.run_a(["iperf3", "-c", h.addr_b, "-p", str(IPERF3_PORT),
                   "-t", "3", "-J"],
                  capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr
    result = json.loads(res.stdout)
    mbps = result["end"]["sum_received"]["bits_per_second"] / 1e6
    print(f"iperf3 over 1gbit tbf: {mbps:.1f} Mbit/s (receiver)")
    out, _ = server.communicate(timeout=10)
    assert server.returncode == 0, out
    assert 850 <= mbps <= 1000, f"{mbps:.1f} Mbit/s"
