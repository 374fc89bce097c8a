# SPDX-License-Identifier: MIT
"""Tampering at the ends of a transfer is found at once (issue 23: "What an
on-path attacker can still do"): an attacker between `linerate send` /
`linerate get` and `linerate serve --root` on loopback drops or cuts the
last records of a data stream, adds bytes after its END, drops a PLAN or
FILES message, or tampers with the pull's XFER_DONE.

docs/PROTOCOL.md section 6: a sender ends a data stream with END and shuts
its side; the receiver reads to the end of file; a stream that ends
without END is "stream cut short", anything after END is an error.
Section 7.9: a sealed connection that carried nothing for a second
carries a heartbeat (XFER_ALIVE on control, an empty DATA record on a
sender's data stream); records are numbered, so the heartbeat after a
dropped record fails to open ("record failed authentication").

Every attacked transfer: exit 1, an end event (--json) that is not ok
and carries an integrity message, detected within
DETECT_BOUND seconds of the relay's action (measured from the action to
the client's exit), the server logs it as failed, and nothing is under
the final name unless it is the source's exact bytes (a file is named
only once verified; an attack on the very end comes after that).  The
pull's XFER_DONE tampered with (or lost) after the client verified its
file: the client succeeds, and the server logs that the client finished
and its last message was lost or tampered with, not a failure.

The relay is test_attacker.AttackRelay with its record loop replaced
(TamperRelay): one record picked by a function of (connection, direction,
record type, length, its number among the records of that type that
carry something) is dropped, flipped, cut at, or followed by injected
bytes.  One data stream (-P 1) and 64 KiB chunks: a file of 1 MiB is 16
DATA records, the 16th the last.
"""

import dataclasses
import os
import re
import struct
import subprocess
import time

import pytest

from lrproc import describe
from test_attacker import (AttackRelay, C2S, HS_INIT, HS_RESP, REC_CTRL,
                           REC_DATA, REC_END, S2C, TAG_LEN, LOOP,
                           _recv_exact)
from xferutil import MiB, env_without_token, json_events, write_random

SIZE = 1 * MiB
CHUNK = 64 << 10
NCHUNKS = SIZE // CHUNK
NAME = "f.bin"
DETECT_BOUND = 2.0     # seconds from the relay's action to the exit
RUN_BOUND = 20         # seconds a client may run at all
MSG_HDR = 8            # a control record of an empty message (END, ALIVE)
AUTH = "record failed authentication"
LOST_DONE = (r"ok \(the client finished; its last message was lost or "
             r"tampered with\)$")
SERVER_FAIL_RE = (r"transfer \d+ from 127\.0\.0\.1:\d+: (?:push|pull)"
                  r"(?:,.*)?: failed: (.*)$")
# a record that looks like one, after END
JUNK = bytes([REC_DATA, 0, 0, 16]) + b"\xa5" * (16 + TAG_LEN)


class TamperRelay(AttackRelay):
    """AttackRelay whose record loop applies one ACTION ("drop", "flip",
    "cut", "inject") to the first record PICK(relay, conn, direction,
    rtype, rlen, n) accepts, n being the record's number among those of
    its type on that connection and direction that carry something
    (control: a message with a body; DATA: not a heartbeat; END: all).
    Empty DATA records (heartbeats) are counted in self.heartbeats."""

    def __init__(self, upstream_port, pick=None, action=None):
        super().__init__(upstream_port)
        # read by the pumps when a connection arrives: set before the
        # client starts, so race-free
        self.pick = pick
        self.action = action
        self.applied_at = None
        self.heartbeats = {}             # (conn, direction) -> count
        self.full = {}                   # (conn, direction, rtype) -> n

    def data_records(self, conn, direction):
        """DATA records that carried chunks (heartbeats left out)."""
        with self.lock:
            return self.full.get((conn, direction, REC_DATA), 0)

    def _take(self, idx, direction, rtype, rlen):
        """Count the record; True when it is the one to attack."""
        carries = rlen > (MSG_HDR if rtype == REC_CTRL else 0) or \
            rtype == REC_END
        with self.lock:
            d = self.records.setdefault((idx, direction), {})
            d[rtype] = d.get(rtype, 0) + 1
            if rtype == REC_DATA and not rlen:
                k = (idx, direction)
                self.heartbeats[k] = self.heartbeats.get(k, 0) + 1
            n = 0
            if carries:
                k = (idx, direction, rtype)
                n = self.full[k] = self.full.get(k, 0) + 1
        if not carries or self.pick is None or self.applied.is_set():
            return False
        if not self.pick(self, idx, direction, rtype, rlen, n):
            return False
        with self.lock:
            if self.applied.is_set():
                return False
            # the flag goes up before the tampered bytes leave
            self.applied_at = time.monotonic()
            self.applied.set()
        return True

    def _records(self, idx, direction, src, out):
        out.send(_recv_exact(src, 8))                       # preamble
        hdr = _recv_exact(src, 8)
        (n,) = struct.unpack_from(">I", hdr, 4)
        if n > 4096:
            self.problems.append(f"conn {idx} {direction}: first message "
                                 f"of {n} bytes")
            self._raw(src, out)
            return
        out.send(hdr + (_recv_exact(src, n) if n else b""))
        if hdr[0] != (HS_INIT if direction == C2S else HS_RESP):
            self._raw(src, out)                              # ERROR etc.
            return
        while True:
            rh = _recv_exact(src, 4)
            rtype = rh[0]
            rlen = int.from_bytes(rh[1:4], "big")
            rec = rh + _recv_exact(src, rlen + TAG_LEN)
            if not self._take(idx, direction, rtype, rlen):
                out.send(rec)
                continue
            if self.action == "drop":
                continue
            if self.action == "flip":
                rec[4 + rlen // 2] ^= 0x10
                out.send(rec)
            elif self.action == "inject":
                out.send(rec)
                out.send(JUNK)
            elif self.action == "cut":
                out.shutdown()
                return                                       # drain
            else:
                raise AssertionError(self.action)


# ---------------- picks ----------------

def data_dir(op):
    return C2S if op == "push" else S2C


def on_data(rtype, nth):
    """The NTH record of RTYPE on data stream 1, in the data's way."""
    def pick(relay, conn, direction, t, rlen, n):
        return conn == 1 and t == rtype and n == nth
    return pick


def ctrl_msg(direction, nth):
    """The NTH control message with a body in DIRECTION."""
    def pick(relay, conn, d, t, rlen, n):
        return conn == 0 and d == direction and t == REC_CTRL and n == nth
    return pick


def ctrl_after_end(direction, data_direction):
    """The first control message with a body in DIRECTION once the data
    stream's END has passed (the receiver's XFER_DONE)."""
    def pick(relay, conn, d, t, rlen, n):
        return (conn == 0 and d == direction and t == REC_CTRL and
                relay.count(1, data_direction, REC_END) >= 1)
    return pick


# ---------------- the world of one test ----------------

class World:
    def __init__(self, tmp_path, serve, linerate_bin):
        self.bin = linerate_bin
        self.root = tmp_path / "root"
        self.src = tmp_path / "src"
        self.dst = tmp_path / "dst"
        for d in (self.root, self.src, self.dst):
            d.mkdir()
        res = subprocess.run([linerate_bin, "token"], capture_output=True,
                             text=True, timeout=10)
        assert res.returncode == 0, describe(res)
        self.token = tmp_path / "token"
        self.token.write_text(res.stdout)
        self.token.chmod(0o600)
        self.push_src = write_random(self.src / NAME, SIZE)
        self.pull_src = write_random(self.root / NAME, SIZE)
        self.srv = serve("-B", LOOP, "--token-file", self.token,
                         "--root", self.root, "--max-duration", "20")

    def paths(self, op):
        """(source, destination directory, final path) of OP."""
        if op == "push":
            return self.push_src, self.root / "in", self.root / "in" / NAME
        return self.pull_src, self.dst, self.dst / NAME

    def run(self, op, port):
        """The client, to PORT: (result, time of its exit)."""
        argv = [self.bin, "send" if op == "push" else "get", "--json",
                "-p", str(port), "--token-file", str(self.token),
                "-P", "1", "--chunk", "64K"]
        if op == "push":
            argv += [str(self.push_src), f"{LOOP}:in/"]
        else:
            argv += [f"{LOOP}:{NAME}", str(self.dst)]
        res = subprocess.run(argv, stdin=subprocess.DEVNULL,
                             capture_output=True, text=True,
                             timeout=RUN_BOUND, env=env_without_token())
        return res, time.monotonic()


@pytest.fixture
def world(tmp_path, serve, linerate_bin):
    return World(tmp_path, serve, linerate_bin)


def end_of(res):
    ends = [e for e in json_events(res.stdout) if e["event"] == "end"]
    assert len(ends) == 1, describe(res)
    return ends[0]


def final_is_source_or_absent(w, op):
    src, ddir, final = w.paths(op)
    names = [] if not ddir.exists() else sorted(
        n for n in os.listdir(ddir)
        if not n.endswith((".lrpart", ".lrjournal")))
    if not names:
        return
    assert names == [NAME], names
    assert open(final, "rb").read() == open(src, "rb").read(), \
        "a final name holds bytes that are not the source's"


# ---------------- no attack ----------------

@pytest.mark.parametrize("op", ["push", "pull"])
def test_untouched_transfer_passes(world, op):
    w = world
    since = w.srv.log.mark()
    with TamperRelay(w.srv.port) as relay:
        res, _ = w.run(op, relay.port)
    assert res.returncode == 0, describe(res) + w.srv.log.text()
    assert end_of(res)["ok"] is True
    assert relay.problems == [] and relay.io_events == [], \
        (relay.problems, relay.io_events)
    src, _, final = w.paths(op)
    assert open(final, "rb").read() == open(src, "rb").read()
    d = data_dir(op)
    assert relay.data_records(1, d) == NCHUNKS, relay.records
    assert relay.count(1, d, REC_END) == 1, relay.records
    w.srv.wait_log(rf"transfer \d+ from 127\.0\.0\.1:\d+: {op}, 1 file, "
                   rf".*: ok$", since=since)


# ---------------- the attacks ----------------

@dataclasses.dataclass
class Case:
    id: str
    op: str
    pick: object
    action: str
    want: str               # the client's error (regex)


def _cases():
    out = []
    for op in ("push", "pull"):
        d = data_dir(op)
        back = S2C if d == C2S else C2S
        out += [
            # the sender shuts its side after END: no END, then end of
            # file, is a cut
            Case(f"{op}-data-end-dropped", op, on_data(REC_END, 1), "drop",
                 "cut short"),
            # its heartbeat (an empty DATA record) a second later no
            # longer opens
            Case(f"{op}-data-last-dropped", op, on_data(REC_DATA, NCHUNKS),
                 "drop", AUTH),
            Case(f"{op}-data-cut-before-end", op,
                 on_data(REC_DATA, NCHUNKS // 2), "cut", "cut short"),
            Case(f"{op}-data-after-end", op, on_data(REC_END, 1), "inject",
                 r"data after the stream's END"),
            # control: the XFER_ALIVE a second later no longer opens
            # (push: c2s 1 CTRL_OPEN 2 XFER_REQUEST 3 XFER_TOTALS
            # 4 XFER_FILES, s2c 1 XFER_ACCEPT 2 XFER_PLAN; pull: c2s
            # 1 CTRL_OPEN 2 XFER_REQUEST 3 XFER_PLAN, s2c 1 XFER_ACCEPT
            # 2 XFER_TOTALS 3 XFER_FILES)
            Case(f"{op}-ctrl-plan-dropped", op,
                 ctrl_msg(back, 2 if op == "push" else 3), "drop", AUTH),
            Case(f"{op}-ctrl-files-dropped", op,
                 ctrl_msg(d, 4 if op == "push" else 3), "drop", AUTH),
        ]
    # a push's XFER_DONE tampered with: the sender cannot know the
    # outcome; the receiver (the server) finished
    out.append(Case("push-ctrl-done-flipped", "push",
                    ctrl_after_end(S2C, C2S), "flip", AUTH))
    return out


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_tampering_is_detected_at_once(world, case):
    w = world
    since = w.srv.log.mark()
    with TamperRelay(w.srv.port, case.pick, case.action) as relay:
        res, exited = w.run(case.op, relay.port)
        assert relay.applied.is_set(), (
            "the relay never applied the attack", relay.records,
            describe(res))
        assert relay.problems == [], relay.problems
    report = describe(res) + "\n--- server log\n" + w.srv.log.text()
    assert res.returncode == 1, report
    took = exited - relay.applied_at
    assert took < DETECT_BOUND, (f"detected {took:.2f} s after the "
                                 f"tampering", report)
    end = end_of(res)
    print(f"{case.id}: exit {took:.2f} s after the tampering: "
          f"{end.get('error')}")
    assert end["ok"] is False, report
    assert re.search(case.want, end["error"]), (case.want, end)
    if case.id != "push-ctrl-done-flipped":
        w.srv.wait_log(SERVER_FAIL_RE, since=since, timeout=10)
        assert not w.srv.log.find(r": ok", since=since), w.srv.log.text()
    final_is_source_or_absent(w, case.op)


# ---------------- the pull's XFER_DONE ----------------

@pytest.mark.parametrize("action", ["flip", "drop"])
def test_pull_done_lost_is_no_failure(world, action):
    """The client verified its file and said so in XFER_DONE, which the
    attacker spoiled: the client succeeds; the server, which sent every
    file and had each acknowledged verified, logs the transfer as ok with
    what happened, not as failed."""
    w = world
    since = w.srv.log.mark()
    with TamperRelay(w.srv.port, ctrl_after_end(C2S, S2C),
                     action) as relay:
        res, _ = w.run("pull", relay.port)
        assert relay.applied.is_set(), (relay.records, describe(res))
        assert relay.problems == [], relay.problems
    report = describe(res) + "\n--- server log\n" + w.srv.log.text()
    assert res.returncode == 0, report
    assert end_of(res)["ok"] is True, report
    src, _, final = w.paths("pull")
    assert open(final, "rb").read() == open(src, "rb").read()
    m = w.srv.wait_log(r"transfer \d+ from 127\.0\.0\.1:\d+: pull, 1 file,"
                       r" .*: ok.*$", since=since, timeout=10)
    print(m.group(0))
    assert re.search(LOST_DONE, m.group(0)), report
    assert not w.srv.log.find(r": failed", since=since), report
