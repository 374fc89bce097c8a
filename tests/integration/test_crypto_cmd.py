# SPDX-License-Identifier: MIT
"""`linerate crypto`: the human table, the JSON document and usage errors.
Asserts shape and sanity only, never a speed."""

import json
import math
import os
import platform
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
    assert "carry-less multiply" in autos[0]


def test_openssl_masks_decide_auto(linerate_bin):
    """OPENSSL_ia32cap / OPENSSL_armcap masking AES (as OpenSSL obeys
    them too) makes auto pick ChaCha20-Poly1305, and says so."""
    machine = platform.machine()
    if machine in ("x86_64", "i686", "i386"):
        var, val = "OPENSSL_ia32cap", "~0x200000200000000"
    elif machine.startswith(("aarch64", "arm")):
        var, val = "OPENSSL_armcap", "0"
    else:
        pytest.skip(f"no AES instructions to mask on {machine}")
    res = subprocess.run([linerate_bin, "crypto", "--json", *SHORT],
                         stdin=subprocess.DEVNULL, capture_output=True,
                         text=True, timeout=60,
                         env=dict(os.environ, **{var: val}))
    assert res.returncode == 0, describe(res)
    auto = _no_nan(res.stdout)["auto"]
    assert auto["peer_with_aes"] == "chacha20-poly1305", auto
    assert var in auto["why"] and "lacks AES" in auto["why"], auto


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
