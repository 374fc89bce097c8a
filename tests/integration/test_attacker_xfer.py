# SPDX-License-Identifier: MIT
"""An active attacker between `linerate send` / `linerate get` and
`linerate serve --root` on loopback (issue 4: "a relay between sender and
receiver that flips one bit, drops a record, swaps two records, replays
one, moves one to another stream, and cuts the stream early.  Each is
detected, the transfer fails with a clear error, and no file appears under
its final name").

The relay is test_attacker.AttackRelay: connection 0 is the control
connection, 1, 2, ... the data streams in the order they connect.  A file
of 16 MiB goes in 64 KiB chunks (256 DATA records) over several streams.

Data streams: the attack hits the 4th DATA record of data stream 1 in the
data's direction (push: client->server, pull: server->client).

Control connection (docs/PROTOCOL.md 7.1-7.9), records in order:
  push c2s: 1 CTRL_OPEN 2 XFER_REQUEST 3 XFER_TOTALS 4 XFER_FILES
            5 XFER_SUMS 6 XFER_END
  push s2c: 1 XFER_ACCEPT 2 XFER_PLAN 3.. XFER_ACKS, XFER_DONE
  pull c2s: 1 CTRL_OPEN 2 XFER_REQUEST 3 XFER_PLAN 4.. XFER_ACKS, XFER_DONE
  pull s2c: 1 XFER_ACCEPT 2 XFER_TOTALS 3 XFER_FILES 4 XFER_SUMS 5 XFER_END
(a side that sent nothing for a second sends XFER_ALIVE, section 7.9: on
a slow run one may come between these; the attack still hits a record)

For every attack: the client exits 1 with a 'linerate send: ' line
naming the failed record or the cut, the server logs the transfer as
failed, no file exists under its final name unless it is byte-identical
to the source (a file is named only after its digest is verified; an
attack on the session's end comes after that), the temporary .NAME.lrpart
and its journal may stay for resume, and the same command run again
straight to the server succeeds and yields the exact file.
"""

import dataclasses
import os
import re
import subprocess
import time

import pytest

from lrproc import describe
from test_attacker import (AttackRelay, C2S, LOOP, REC_CTRL, REC_DATA,
                           REC_END, S2C)
from test_tamper_xfer import TamperRelay
from xferutil import MiB, env_without_token, same_file, write_random

SIZE = 16 * MiB
CHUNK = "64K"
NAME = "f.bin"
# the session's error: "linerate send: ..." or "linerate get: ..." (a
# failed file's own line names its path first)
ERROR_PREFIX = ("linerate send: ", "linerate get: ")
CLIENT_BOUND = 30      # seconds an attacked transfer may take to fail
AUTH = "record failed authentication"
DETECTED = r"record failed authentication|ended early \(cut\?\)|cut short"
SERVER_FAIL_RE = (r"transfer \d+ from 127\.0\.0\.1:\d+: (?:push|pull)"
                  r"(?:,.*)?: failed: (.*)$")


# ---------------- the world of one test ----------------

class World:
    def __init__(self, tmp_path, serve, linerate_bin):
        self.bin = linerate_bin
        self.tmp = tmp_path
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
        # push: src/f.bin -> root/in/f.bin; pull: root/f.bin -> dst/f.bin
        self.push_src = write_random(self.src / NAME, SIZE)
        os.utime(self.push_src, ns=(1_650_000_000_123_456_789,) * 2)
        self.pull_src = write_random(self.root / NAME, SIZE)
        os.utime(self.pull_src, ns=(1_640_000_000_987_654_321,) * 2)
        self.srv = serve("-B", LOOP, "--token-file", self.token,
                         "--root", self.root, "--max-duration", "20")

    def paths(self, op):
        """(source, destination directory, final path) of OP."""
        if op == "push":
            return self.push_src, self.root / "in", self.root / "in" / NAME
        return self.pull_src, self.dst, self.dst / NAME

    def argv(self, op, port, streams):
        common = [self.bin, "send" if op == "push" else "get", "-q",
                  "-p", str(port), "--token-file", str(self.token),
                  "-P", str(streams), "--chunk", CHUNK]
        if op == "push":
            return common + [str(self.push_src), f"{LOOP}:in/"]
        return common + [f"{LOOP}:{NAME}", str(self.dst)]

    def run(self, op, port, streams, timeout=CLIENT_BOUND + 15):
        t0 = time.monotonic()
        res = subprocess.run(self.argv(op, port, streams),
                             stdin=subprocess.DEVNULL, capture_output=True,
                             text=True, timeout=timeout,
                             env=env_without_token())
        return res, time.monotonic() - t0


@pytest.fixture
def world(tmp_path, serve, linerate_bin):
    return World(tmp_path, serve, linerate_bin)


def make_relay(port, attack, direction, after, conn, rtype=None):
    """AttackRelay with any attack on any record type of any connection
    (its constructor allows only flip/drop/cut on the control connection;
    the pumps read these fields when a connection arrives, so setting them
    before the client starts is race-free)."""
    relay = AttackRelay(port)
    relay.attack = attack
    relay.direction = direction
    relay.after = after
    relay.conn = conn
    relay.rtype = rtype if rtype is not None else (REC_DATA if conn
                                                    else REC_CTRL)
    return relay


def final_names(directory):
    """Entries of DIRECTORY that are not linerate's temporary files."""
    if not directory.exists():
        return []
    return sorted(n for n in os.listdir(directory)
                  if not n.endswith((".lrpart", ".lrjournal")))


def clean_rerun(w, op, streams):
    """The same command again, straight to the server: it must succeed
    (resuming what the attacked run left) and give the exact file."""
    assert w.srv.alive(), w.srv.log.text()
    since = w.srv.log.mark()
    src, ddir, final = w.paths(op)
    res, _ = w.run(op, w.srv.port, streams, timeout=60)
    assert res.returncode == 0, (
        "a clean run after the attack failed: " + describe(res)
        + "\n--- server log\n" + w.srv.log.text())
    same_file(src, final)
    assert final_names(ddir) == [NAME], os.listdir(ddir)
    w.srv.wait_log(r"transfer \d+ from 127\.0\.0\.1:\d+: .*: ok$",
                   since=since)


# ---------------- the control: a transparent relay ----------------

@pytest.mark.parametrize("op,streams", [("push", 4), ("pull", 2)])
def test_relay_without_attack_is_transparent(world, op, streams):
    w = world
    with TamperRelay(w.srv.port) as relay:
        res, _ = w.run(op, relay.port, streams)
        assert res.returncode == 0, describe(res) + w.srv.log.text()
    assert relay.problems == [] and relay.io_events == [], \
        (relay.problems, relay.io_events)
    src, ddir, final = w.paths(op)
    same_file(src, final)
    assert final_names(ddir) == [NAME]
    assert not [n for n in os.listdir(ddir) if n != NAME], os.listdir(ddir)
    w.srv.wait_log(rf"transfer 1 from 127\.0\.0\.1:\d+: {op}, 1 file, .*: "
                   rf"ok$")
    # every chunk went through the relay as one DATA record (besides the
    # empty ones a stream idle for a second sends, section 7.9), every
    # data stream ended with one END record
    d = C2S if op == "push" else S2C
    assert relay.nconn == 1 + streams, relay.records
    ndata = sum(relay.data_records(i, d) for i in range(1, 1 + streams))
    assert ndata == SIZE // (64 * 1024), relay.records
    for i in range(1, 1 + streams):
        assert relay.count(i, d, REC_END) == 1, relay.records
    assert relay.count(0, C2S, REC_CTRL) >= 4, relay.records
    assert relay.count(0, S2C, REC_CTRL) >= 3, relay.records


# ---------------- the attacks ----------------

@dataclasses.dataclass
class Case:
    id: str
    op: str                  # push | pull
    conn: int                # 0 control, 1 data stream 1
    direction: str           # C2S | S2C
    attack: str
    after: int = 3           # the record hit is number after + 1
    rtype: int = None        # default: DATA on a data stream, CTRL on 0
    streams: int = 2
    client_re: str = DETECTED
    server_re: str = None    # None: the server's reason is not checked
    bound: float = CLIENT_BOUND


def _data_cases():
    out = []
    # two streams: the streams take chunks from one queue as they are
    # free (no round robin), so with four on loopback one of them may carry
    # too few records for the attack (move and splice need stream 2 busy
    # while stream 1 reaches its 4th record)
    for op, d, streams in (("push", C2S, 2), ("pull", S2C, 2)):
        for a in ("flip", "drop", "swap", "replay", "move", "splice",
                  "cut"):
            # the receiver detects; a push's receiver is the server, and it
            # tells the client ("peer: stream N: ...")
            out.append(Case(f"{op}-data-{a}", op, 1, d, a,
                            streams=streams,
                            client_re=("cut" if a == "cut" else AUTH),
                            server_re=("cut" if a == "cut" else AUTH)))
    return out


CUT_CTRL = DETECTED + r"|closed the connection|connection closed"

CASES = _data_cases() + [
    # push, control client->server: the server detects
    Case("push-ctrl-c2s-flip-totals", "push", 0, C2S, "flip", after=2,
         server_re=AUTH),
    Case("push-ctrl-c2s-swap-totals-files", "push", 0, C2S, "swap",
         after=2, server_re=AUTH),
    Case("push-ctrl-c2s-replay-files", "push", 0, C2S, "replay", after=3,
         server_re=AUTH),
    Case("push-ctrl-c2s-drop-sums", "push", 0, C2S, "drop", after=4,
         server_re=AUTH),
    Case("push-ctrl-c2s-cut", "push", 0, C2S, "cut", after=2,
         client_re=CUT_CTRL, server_re=r"closed"),
    # push, control server->client: the client detects
    Case("push-ctrl-s2c-flip-plan", "push", 0, S2C, "flip", after=1),
    Case("push-ctrl-s2c-replay-acks", "push", 0, S2C, "replay", after=2),
    Case("push-ctrl-s2c-swap-acks", "push", 0, S2C, "swap", after=2),
    Case("push-ctrl-s2c-cut", "push", 0, S2C, "cut", after=1,
         client_re=CUT_CTRL),
    # the plan is the last thing the server says until chunks come: its
    # loss shows a second later, when the server's heartbeat (XFER_ALIVE,
    # section 7.9) no longer opens at the client
    Case("push-ctrl-s2c-drop-plan", "push", 0, S2C, "drop", after=1,
         client_re=AUTH, server_re=AUTH, bound=10),
    # pull, control server->client: the client (receiver) detects
    Case("pull-ctrl-s2c-flip-totals", "pull", 0, S2C, "flip", after=1),
    Case("pull-ctrl-s2c-swap-totals-files", "pull", 0, S2C, "swap",
         after=1),
    Case("pull-ctrl-s2c-drop-sums", "pull", 0, S2C, "drop", after=3),
    Case("pull-ctrl-s2c-replay-files", "pull", 0, S2C, "replay", after=2),
    Case("pull-ctrl-s2c-flip-sums", "pull", 0, S2C, "flip", after=3),
    Case("pull-ctrl-s2c-cut", "pull", 0, S2C, "cut", after=1,
         client_re=CUT_CTRL),
    # pull, control client->server: the server (sender) detects
    Case("pull-ctrl-c2s-flip-plan", "pull", 0, C2S, "flip", after=2,
         server_re=AUTH),
    Case("pull-ctrl-c2s-replay-plan", "pull", 0, C2S, "replay", after=2,
         server_re=AUTH),
    Case("pull-ctrl-c2s-drop-acks", "pull", 0, C2S, "drop", after=4,
         server_re=AUTH),
    Case("pull-ctrl-c2s-swap-acks", "pull", 0, C2S, "swap", after=4,
         server_re=AUTH),
    Case("pull-ctrl-c2s-cut", "pull", 0, C2S, "cut", after=2,
         client_re=CUT_CTRL, server_re=r"closed"),
    # attacks on the very end, after every chunk and SUM went through:
    # the END record of data stream 1 never arrives, or XFER_END is
    # tampered with
    Case("push-data-cut-before-end", "push", 1, C2S, "cut", after=0,
         rtype=REC_END, client_re=DETECTED, server_re="cut"),
    Case("pull-data-cut-before-end", "pull", 1, S2C, "cut", after=0,
         rtype=REC_END, client_re="cut"),
    Case("push-ctrl-c2s-flip-end", "push", 0, C2S, "flip", after=5,
         server_re=AUTH),
    Case("pull-ctrl-s2c-flip-end", "pull", 0, S2C, "flip", after=4),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_attack_is_detected(world, case):
    w = world
    since = w.srv.log.mark()
    with make_relay(w.srv.port, case.attack, case.direction, case.after,
                    case.conn, case.rtype) as relay:
        res, took = w.run(case.op, relay.port, case.streams,
                          timeout=case.bound + 15)
        assert relay.applied.is_set(), (
            "the relay never applied the attack", relay.records,
            relay.problems, describe(res))
        assert relay.problems == [], relay.problems
    report = describe(res) + "\n--- server log\n" + w.srv.log.text()
    assert res.returncode == 1, report
    assert took < case.bound, (took, report)

    errors = [ln for ln in res.stderr.splitlines()
              if ln.startswith(ERROR_PREFIX)]
    assert len(errors) == 1, report
    problems = []
    if not re.search(case.client_re, errors[0]):
        problems.append(f"client error does not say what happened "
                        f"(want /{case.client_re}/): {errors[0]!r}")

    m = w.srv.wait_log(SERVER_FAIL_RE, since=since, timeout=20)
    if case.server_re and not re.search(case.server_re, m.group(1)):
        problems.append(f"server log does not say what happened (want "
                        f"/{case.server_re}/): {m.group(0)!r}")
    assert not w.srv.log.find(r": ok$", since=since), w.srv.log.text()

    src, ddir, final = w.paths(case.op)
    names = final_names(ddir)
    if names:
        # A file gets its final name only once all its chunks and its
        # digest are verified (docs/PROTOCOL.md 7.7): an attack on what
        # comes after (the END records, the last messages) fails the
        # session but cannot have touched the bytes.  So a final name is
        # allowed only with exactly the source's content; anything else
        # is a failure.
        same = final.exists() and open(final, "rb").read() == \
            open(src, "rb").read()
        if not same or names != [final.name]:
            problems.append(f"final name(s) {names} exist in {ddir} after "
                            f"a failed, attacked transfer with content "
                            f"DIFFERENT from the source; client: "
                            f"{errors[0]!r}")
    # the server still serves, and the same command completes the file
    try:
        clean_rerun(w, case.op, case.streams)
    except AssertionError as exc:
        problems.append(f"clean rerun: {str(exc)[:600]}")
    assert not problems, "\n".join(problems)
