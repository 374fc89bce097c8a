# SPDX-License-Identifier: MIT
"""An attacker on the end of an authenticated bench's data streams
(issue 23, "What an on-path attacker can still do"): at and after the
deadline, where a race between TEST_STOP and the stream's failure once let
a tampered test print its results as a success.

EndRelay is test_attacker.AttackRelay with its own attacks on one data
connection (the target: connection index and the direction of its data).
It holds the last HOLD DATA records of that stream back, and when the END
record comes it does one of:

  end-flip   flip a bit in the END record's tag
  end-drop   drop the END record (the end of file still follows)
  cut        drop the last CUT DATA records and END, then end the stream
  flip-last  flip a bit in the last DATA record
  reorder    swap the last two DATA records
  inject     forward END, then a copy of the last DATA record after it
  mid-flip   (not at the end) flip a bit in DATA record MID

"none" forwards everything through the same path: the control.

For each attack, in each mode (forward with -t and with -n, -P 4, --bidir
with the attack on either direction, reverse), REPEAT runs: every one exits
1 with one 'linerate bench: ' line naming the failure of the attacked
stream, within DETECT_S of the tampering; nothing of a result is printed
(no sender/receiver summary, no "Done"); the server logs the test as failed
with the same reason, never "ok".
"""

import concurrent.futures
import functools
import re
import struct
import subprocess
import time

import pytest

from lrproc import describe, run_bench, strict_json
from test_attacker import token_file  # noqa: F401 (a fixture)
from test_attacker import (AttackRelay, C2S, HS_INIT, HS_RESP, LOOP,
                           REC_DATA, REC_END, S2C, TAG_LEN, _recv_exact,
                           clean_env)

REPEAT = 20
WORKERS = 6        # runs at once, each with its own relay
HOLD = 4           # DATA records held back before a stream's END
CUT = 2            # cut: these last DATA records never arrive
MID = 4            # mid-flip: this DATA record
DETECT_S = 2.0     # from the tampering to the client's exit
RUN_BOUND = 30     # seconds one bench may take at all
ERROR_PREFIX = "linerate bench: "
AUTH = "record failed authentication"
CUT_SHORT = "cut short"
AFTER_END = "data after the stream's END"
DETECTED_RE = re.compile(f"{AUTH}|{CUT_SHORT}|{re.escape(AFTER_END)}")
# what a success prints: the summary's lines and the last one
SUCCESS_RE = re.compile(r"(sender|receiver)$|^linerate Done", re.M)

KINDS = {
    "end-flip": AUTH,
    "end-drop": CUT_SHORT,
    "cut": CUT_SHORT,
    "flip-last": AUTH,
    "reorder": AUTH,
    "inject": AFTER_END,
    "mid-flip": AUTH,
}

# mode: (bench arguments, (connection index, direction) attacked). Data
# connections are numbered from 1 in the order they connect, which is the
# streams' order; --bidir's first half sends client to server.
MODES = {
    "forward-t": (["-t", "0.3", "-l", "64K", "-b", "100m"], (1, C2S)),
    "forward-n": (["-n", "2M", "-l", "64K"], (1, C2S)),
    "P4": (["-P", "4", "-n", "4M", "-l", "32K", "-b", "200m"], (3, C2S)),
    "bidir-c2s": (["--bidir", "-t", "0.3", "-l", "64K", "-b", "100m"],
                  (1, C2S)),
    "bidir-s2c": (["--bidir", "-n", "2M", "-l", "64K"], (2, S2C)),
    "reverse": (["-R", "-n", "2M", "-l", "64K"], (1, S2C)),
}


class EndRelay(AttackRelay):
    """See the module docstring.  tampered_at is the time.monotonic() of
    the tampering, taken before the tampered bytes leave."""

    def __init__(self, upstream_port, kind, target):
        assert kind == "none" or kind in KINDS
        self.kind = kind
        self.target = target
        self.tampered_at = None
        self.ended = False           # the target's END came
        super().__init__(upstream_port)

    def ctrl_port(self):
        """The port the server sees the control connection come from."""
        with self.lock:
            return self.socks[1].getsockname()[1]

    def _tamper(self):
        self.tampered_at = time.monotonic()
        self.applied.set()

    def _records(self, idx, direction, src, out):
        if (idx, direction) != self.target or not self._opening(
                idx, direction, src, out):
            self._raw(src, out)
            return
        self._stream(src, out)
        self._raw(src, out)          # after END; after a cut, a drain

    def _opening(self, idx, direction, src, out):
        """The preamble and the handshake's message, forwarded; whether
        records follow (test_attacker.AttackRelay reads them the same)."""
        out.send(_recv_exact(src, 8))
        hdr = _recv_exact(src, 8)
        (n,) = struct.unpack_from(">I", hdr, 4)
        if n > 4096:
            self.problems.append(f"conn {idx} {direction}: first message "
                                 f"of {n} bytes")
            return False
        out.send(hdr + (_recv_exact(src, n) if n else b""))
        return hdr[0] == (HS_INIT if direction == C2S else HS_RESP)

    def _stream(self, src, out):
        held = []
        ndata = 0
        while True:
            rh = _recv_exact(src, 4)
            rlen = int.from_bytes(rh[1:4], "big")
            rec = rh + _recv_exact(src, rlen + TAG_LEN)
            if rh[0] == REC_END:
                self.ended = True
                self._at_end(held, rec, out)
                return
            if rh[0] != REC_DATA:     # DATA_OPEN, in a CTRL record
                out.send(rec)
                continue
            ndata += 1
            if self.kind == "mid-flip" and ndata == MID:
                for h in held:
                    out.send(h)
                held = []
                rec[4 + rlen // 2] ^= 0x10
                self._tamper()
                out.send(rec)
                continue
            held.append(rec)
            if len(held) > HOLD:
                out.send(held.pop(0))

    def _at_end(self, held, end, out):
        k = self.kind
        if len(held) < HOLD and k not in ("none", "mid-flip"):
            self.problems.append(f"only {len(held)} DATA records held")
        if k == "cut":
            for h in held[:-CUT]:
                out.send(h)
            self._tamper()
            out.shutdown()
            return
        if k == "flip-last":
            held[-1][4 + (len(held[-1]) - 4 - TAG_LEN) // 2] ^= 0x10
        if k == "reorder":
            held[-2], held[-1] = held[-1], held[-2]
        for h in held[:-2]:
            out.send(h)
        if k in ("flip-last", "reorder"):
            self._tamper()
        for h in held[-2:]:
            out.send(h)
        if k == "end-drop":
            self._tamper()
            return                   # the end of file follows as it comes
        if k == "end-flip":
            end[4 + TAG_LEN // 2] ^= 0x10
            self._tamper()
        out.send(end)
        if k == "inject":
            self._tamper()
            out.send(bytes(held[-1]))


def bench(binary, *args):
    run = functools.partial(subprocess.run, env=clean_env())
    return run_bench(binary, *args, timeout=RUN_BOUND, run=run)


@pytest.fixture
def srv(serve, token_file):
    return serve("-B", LOOP, "--token-file", token_file, "--max-duration",
                 "20", "--max-tests", str(2 * WORKERS))


def server_line(srv, relay, since):
    """The server's line for the relay's test."""
    return srv.wait_log(rf"test \d+ from 127\.0\.0\.1:{relay.ctrl_port()}: "
                        rf".*: (ok|failed: .*)$", since=since, timeout=15)


def attacked_run(srv, binary, token, mode, kind, lateness):
    """One attacked bench; a list of what went wrong (empty: detected).
    The time from the tampering to the client's exit goes to lateness."""
    args, target = MODES[mode]
    since = srv.log.mark()
    with EndRelay(srv.port, kind, target) as relay:
        res = bench(binary, "--token-file", token, "-i", "0", *args,
                    f"{LOOP}:{relay.port}")
        exited = time.monotonic()
        what = describe(res)
        if not relay.applied.is_set() or relay.problems:
            return [f"relay: not applied or {relay.problems}: {what}"]
        bad = []
        errors = [ln for ln in res.stderr.splitlines()
                  if ln.startswith(ERROR_PREFIX)]
        if res.returncode != 1 or len(errors) != 1:
            bad.append(f"exit {res.returncode}, errors {errors}")
        elif KINDS[kind] not in errors[0] or \
                f"stream {target[0]}: " not in errors[0]:
            bad.append(f"error line {errors[0]!r}")
        if SUCCESS_RE.search(res.stdout):
            bad.append("printed as a success")
        late = exited - relay.tampered_at
        lateness.append(late)
        if late > DETECT_S:
            bad.append(f"exit {late:.2f} s after the tampering")
        try:
            m = server_line(srv, relay, since)
            if m.group(1) == "ok" or not DETECTED_RE.search(m.group(1)):
                bad.append(f"server: {m.group(0)}")
        except (TimeoutError, EOFError) as exc:
            bad.append(f"server: {exc}")
    return [f"{mode} {kind}: {b}; {what}" for b in bad]


def repeated(fn, n):
    """fn() n times, WORKERS at once; the complaints of each run that had
    any."""
    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
        runs = [pool.submit(fn) for _ in range(n)]
        res = [r.result(timeout=4 * RUN_BOUND) for r in runs]
    return [b for b in res if b]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", MODES)
def test_tampered_end_is_detected(srv, linerate_bin, token_file, mode, kind):
    lateness = []
    bad = repeated(lambda: attacked_run(srv, linerate_bin, token_file, mode,
                                        kind, lateness), REPEAT)
    print(f"{mode} {kind}: detected {max(lateness, default=0):.3f} s at "
          f"most after the tampering")
    assert not bad, (f"{len(bad)} of {REPEAT} runs failed; the first: " +
                     "\n".join(bad[0]))
    assert srv.alive(), srv.log.text()


def clean_run(srv, binary, token, mode):
    """One bench through the relay's attack path with no attack."""
    args, target = MODES[mode]
    since = srv.log.mark()
    with EndRelay(srv.port, "none", target) as relay:
        res = bench(binary, "-J", "--token-file", token, "-i", "0", *args,
                    f"{LOOP}:{relay.port}")
        if res.returncode != 0 or not relay.ended or relay.problems:
            return [f"{mode}: {relay.problems} {describe(res)}"]
        end = strict_json(res.stdout)["end"]
        bad = []
        if not end["linerate"]["authenticated"]:
            bad.append("not authenticated")
        if end["sum_received"]["bytes"] != end["sum_sent"]["bytes"]:
            bad.append(f"sent {end['sum_sent']['bytes']}, received "
                       f"{end['sum_received']['bytes']}")
        m = server_line(srv, relay, since)
        if m.group(1) != "ok":
            bad.append(f"server: {m.group(0)}")
    return [f"{mode}: {b}" for b in bad]


@pytest.mark.parametrize("mode", MODES)
def test_untouched_streams_pass(srv, linerate_bin, token_file, mode):
    bad = repeated(lambda: clean_run(srv, linerate_bin, token_file, mode), 4)
    assert not bad, "\n".join(bad[0])


def test_json_carries_the_integrity_error(srv, linerate_bin, token_file):
    """-J: the error is the document's "error"; no totals in "end"."""
    since = srv.log.mark()
    with EndRelay(srv.port, "end-flip", (1, S2C)) as relay:
        res = bench(linerate_bin, "-J", "--token-file", token_file, "-R",
                    "-n", "2M", "-l", "64K", f"{LOOP}:{relay.port}")
        assert relay.applied.is_set(), describe(res)
        assert res.returncode == 1, describe(res)
        doc = strict_json(res.stdout)
        assert "stream 1: " + AUTH in doc["error"], doc["error"]
        assert "sum_received" not in doc["end"], doc["end"]
        m = server_line(srv, relay, since)
        assert m.group(1).startswith("failed: the client ended it: stream "
                                     "1: " + AUTH), m.group(0)
