# SPDX-License-Identifier: MIT
"""`linerate crypto`: the human table, the JSON document and usage errors.
Asserts shape and sanity only, never a speed."""

import json
import math
import subprocess

import pytest

from lrproc import describe

SHORT = ["--seconds", "0.05"]


def run_linerate(binary, *args, timeout=60):
    return subprocess.run([binary, *args], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)


def test_human_output(linerate_bin):
    res = run_linerate(linerate_bin, "crypto", *SHORT)
    assert res.returncode == 0, describe(res)
    assert "AES-256-GCM" in res.stdout
    assert "ChaCha20-Poly1305" in res.stdout
    autos = [ln for ln in res.stdout.splitlines() if ln.startswith("auto: ")]
    assert len(autos) == 1, res.stdout
    assert "AES instructions" in autos[0]


def _no_nan(text):
    def bad(const):
        raise ValueError(f"non-finite JSON number {const}")
    return json.loads(text, parse_constant=bad)


def test_json_output(linerate_bin):
    res = run_linerate(linerate_bin, "crypto", "--json", *SHORT)
    assert res.returncode == 0, describe(res)
    doc = _no_nan(res.stdout)
    seen = set()
    for cell in doc["results"]:
        for key in ("mbytes_per_second", "seconds", "bytes",
                    "cores_for_1gbe"):
            v = cell[key]
            assert isinstance(v, (int, float)) and math.isfinite(v)
            assert v > 0, cell
        seen.add((cell["cipher"], cell["op"], cell["record_bytes"]))
    for cipher in ("aes-256-gcm", "chacha20-poly1305"):
        for op in ("seal", "open"):
            for record in (512 * 1024, 16 * 1024):
                assert (cipher, op, record) in seen
    assert doc["auto"]["peer_without_aes"] == "chacha20-poly1305"
    assert doc["auto"]["peer_with_aes"] in ("aes-256-gcm",
                                            "chacha20-poly1305")
    assert isinstance(doc["cpu"]["features"]["aes"], bool)


@pytest.mark.parametrize("args", [
    ["--seconds", "0.01"],
    ["--seconds", "11"],
    ["--seconds", "fast"],
    ["--seconds"],
    ["--bogus"],
    ["-x"],
    ["extra"],
])
def test_usage_errors(linerate_bin, args):
    res = run_linerate(linerate_bin, "crypto", *args)
    assert res.returncode == 2, describe(res)
    assert res.stdout == ""
    assert "linerate crypto: " in res.stderr
    assert "--help" in res.stderr


def test_help(linerate_bin):
    res = run_linerate(linerate_bin, "crypto", "--help")
    assert res.returncode == 0, describe(res)
    assert res.stdout.startswith("usage: linerate crypto")
