# SPDX-License-Identifier: MIT
"""linerate's --json has every key of iperf3 3.12's -J, with its JSON type,
mode by mode (needs root for the namespace hosts and Debian's iperf3;
skipped with the reason otherwise).

For each mode, stock `iperf3 -c -J` runs against a stock `iperf3 -s` and
`linerate bench --json` against `linerate serve` between the same two
hosts, and `linerate bench --json --iperf3` against the stock server. Every
key path of iperf3's document (a list's elements merged under "[]") must
be in linerate's with the same JSON type; linerate may write more keys.
Nothing here asserts a speed.
"""


import pytest

from ip3util import (finish_iperf3_server, iperf3_doc, run_iperf3_client,
                     start_iperf3_server, strict_json)
from lrproc import describe, run_bench
from util import wait_for_listen

IPERF3_PORT = 5311
LR_PORT = 7361

# name: arguments common to iperf3 -c and linerate bench (short tests at a
# bounded rate, so that the two shared cores are not the subject)
MODES = {
    "tcp": ["-t", "1", "-b", "1G"],
    "parallel4": ["-t", "1", "-b", "250M", "-P", "4"],
    "reverse": ["-t", "1", "-b", "1G", "-R"],
    "bidir": ["-t", "1", "-b", "500M", "--bidir"],
    "omit": ["-t", "1", "-b", "1G", "-O", "1"],
    "no-intervals": ["-t", "1", "-b", "1G", "-i", "0"],
    "mss": ["-t", "1", "-b", "1G", "-M", "1200"],
    "udp": ["-u", "-t", "1", "-b", "50M", "-l", "1400"],
    "udp-reverse": ["-u", "-t", "1", "-b", "50M", "-l", "1400", "-R"],
}


def json_type(v):
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if v is None:
        return "null"
    return "object" if isinstance(v, dict) else "array"


def key_paths(doc, path="", out=None):
    """{path: set of JSON types} of every key below doc; the elements of a
    list are merged under PATH[]."""
    if out is None:
        out = {}
    if isinstance(doc, dict):
        for k, v in doc.items():
            p = f"{path}.{k}" if path else k
            out.setdefault(p, set()).add(json_type(v))
            key_paths(v, p, out)
    elif isinstance(doc, list):
        for v in doc:
            key_paths(v, path + "[]", out)
    return out


def missing_keys(ref, doc):
    """The key paths of ref that doc lacks or holds with another type."""
    want, have = key_paths(ref), key_paths(doc)
    return sorted(f"{p} ({'/'.join(sorted(t))})" for p, t in want.items()
                  if not t & have.get(p, set()))


def test_key_paths_see_what_is_missing():
    """The comparison itself: a key gone, a type changed or a list
    element's key gone is found; extra keys are fine."""
    ref = {"a": 1, "b": {"c": "x", "d": [{"e": 1.5}, {"f": True}]}}
    assert missing_keys(ref, ref) == []
    assert missing_keys(ref, {**ref, "g": 1}) == []
    assert missing_keys(ref, {"a": 1, "b": {"c": "x", "d": [{"e": 2}]}}) \
        == ["b.d[].f (bool)"]
    assert missing_keys(ref, {"a": "1", "b": ref["b"]}) == ["a (number)"]
    assert missing_keys(ref, {"b": {"c": "x", "d": []}}) == \
        ["a (number)", "b.d[].e (number)", "b.d[].f (bool)"]


def iperf3_reference(hosts, args):
    srv = start_iperf3_server(hosts, IPERF3_PORT, json=False)
    res = run_iperf3_client(hosts, IPERF3_PORT, *args)
    finish_iperf3_server(srv)
    return iperf3_doc(res)


def lr_json(res):
    assert res.returncode == 0, describe(res)
    doc = strict_json(res.stdout)
    assert "error" not in doc, doc["error"]
    return doc


@pytest.mark.parametrize("mode", MODES.keys())
def test_linerate_json_has_every_iperf3_key(hosts, serve, linerate_bin,
                                            iperf3, mode):
    args = MODES[mode]
    ref = iperf3_reference(hosts, args)

    srv = serve("-B", hosts.addr_b, "-p", str(LR_PORT), "--no-iperf3",
                popen=hosts.popen_b)
    wait_for_listen(hosts.run_b, LR_PORT, timeout=10)
    native = lr_json(run_bench(linerate_bin, "--json", "-p", str(LR_PORT),
                               *args, hosts.addr_b, run=hosts.run_a))
    srv.stop()
    gone = missing_keys(ref, native)
    assert not gone, f"linerate -> linerate serve lacks: {gone}"

    ip3srv = start_iperf3_server(hosts, IPERF3_PORT, json=False)
    mixed = run_bench(linerate_bin, "--json", "--iperf3", "-p",
                      str(IPERF3_PORT), *args, hosts.addr_b, run=hosts.run_a)
    finish_iperf3_server(ip3srv)
    gone = missing_keys(ref, lr_json(mixed))
    assert not gone, f"linerate --iperf3 -> iperf3 -s lacks: {gone}"
