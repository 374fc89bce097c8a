# SPDX-License-Identifier: MIT
"""An active attacker between `linerate bench --token-file` and `linerate
serve --token-file` on loopback (docs/SECURITY.md: "Streams cannot be cut,
spliced or replayed undetected").

AttackRelay listens on 127.0.0.1:0 and forwards every connection to the
server.  The first connection is the control connection; the ones after it
are data streams 1, 2, ...  On every connection it parses each direction
(docs/PROTOCOL.md sections 1, 2, 5, 6): the 8-byte preamble, one plain
message (HS_INIT client->server, HS_RESP server->client: 8-byte header with
the body length at offset 4), then records (type u8, length u24, then
length + 16 bytes).  One attack is applied to DATA records (type 2) of data
stream 1 in one direction after the first few records: flip a bit, drop,
swap, replay, move to stream 2, splice over stream 2's record with the same
sequence number, or cut the stream before its END record.  A few cases
flip a bit in a CTRL record (type 1) of the control connection instead.

For each attack the bench must fail (exit 1, one 'linerate bench: ' line
naming the failed record or the cut), the server must log the test as
failed, and a clean run straight to the server must work afterwards.
"""

import functools
import os
import re
import socket
import struct
import subprocess
import threading
import time

import pytest

from lrproc import bench_json, describe, run_bench, strict_json

LOOP = "127.0.0.1"
MIB = 1 << 20
ERROR_PREFIX = "linerate bench: "

HS_INIT, HS_RESP = 0x20, 0x21
REC_CTRL, REC_DATA, REC_END = 1, 2, 3
TAG_LEN = 16
AFTER = 3          # the attack hits the 4th DATA record of the stream
WAIT = 5.0         # bound on one pump waiting for another (move, splice)
BENCH_BOUND = 30   # seconds an attacked bench may take to fail

C2S, S2C = "c2s", "s2c"
ATTACKS = ["flip", "drop", "swap", "replay", "move", "splice", "cut"]
DETECTED_RE = re.compile(r"record failed authentication|cut short")


def clean_env():
    return {k: v for k, v in os.environ.items() if k != "LINERATE_TOKEN"}


def bench(binary, *args, timeout=60):
    run = functools.partial(subprocess.run, env=clean_env())
    return run_bench(binary, *args, timeout=timeout, run=run)


class _Eof(Exception):
    """The source ended (the message says where, if inside a frame)."""


def _recv_exact(sock, n):
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise _Eof(f"ended inside a frame ({got} of {n} bytes)"
                       if got else "")
        got += k
    return buf


class AttackRelay:
    """See the module docstring.  ATTACK is None (forward everything as
    is) or one of ATTACKS, applied in DIRECTION (C2S or S2C) to record
    number AFTER + 1 of type 2 (DATA) on data stream 1.  With CONN=0 it
    hits the control connection's CTRL records instead (flip, drop, cut
    only)."""

    def __init__(self, upstream_port, attack=None, direction=C2S,
                 after=AFTER, conn=1):
        assert attack in (None, *ATTACKS) and direction in (C2S, S2C)
        assert conn == 1 or attack in ("flip", "drop", "cut")
        self.up = upstream_port
        self.attack = attack
        self.direction = direction
        self.after = after
        self.conn = conn
        self.rtype = REC_DATA if conn else REC_CTRL
        self.applied = threading.Event()
        self.handoff = None                  # move / splice: the record
        self.handoff_ready = threading.Event()
        self.lock = threading.Lock()
        # (conn index, direction) -> {record type: count}
        self.records = {}
        self.problems = []                   # the relay's own failures
        self.io_events = []                  # resets, frames cut by EOF
        self.nconn = 0
        self.stopping = threading.Event()
        self.socks = []
        self.threads = []                    # [accept loop, pumps...]
        self.lsock = socket.socket()
        self.lsock.bind((LOOP, 0))
        self.lsock.listen(64)
        self.lsock.settimeout(0.2)
        self.port = self.lsock.getsockname()[1]
        self._start(self._accept_loop)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _start(self, fn, *args):
        t = threading.Thread(target=fn, args=args, daemon=True)
        t.start()
        self.threads.append(t)

    def count(self, idx, direction, rtype):
        with self.lock:
            return self.records.get((idx, direction), {}).get(rtype, 0)

    def _accept_loop(self):
        while not self.stopping.is_set():
            try:
                c, _ = self.lsock.accept()
            except (socket.timeout, OSError):
                continue
            try:
                u = socket.create_connection((LOOP, self.up), timeout=5)
            except OSError as exc:
                self.problems.append(f"upstream connect: {exc}")
                c.close()
                continue
            c.settimeout(None)
            u.settimeout(None)
            u.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self.lock:
                idx = self.nconn
                self.nconn += 1
                self.socks += [c, u]
            self._start(self._pump, idx, C2S, c, u)
            self._start(self._pump, idx, S2C, u, c)

    # -------- one direction of one connection --------

    def _pump(self, idx, direction, src, dst):
        out = _Sink(dst)
        try:
            self._records(idx, direction, src, out)
        except _Eof as exc:
            if str(exc):
                self.io_events.append(f"conn {idx} {direction}: {exc}")
        except OSError as exc:
            if not self.stopping.is_set():
                self.io_events.append(f"conn {idx} {direction}: {exc!r}")
        except Exception as exc:  # a bug here must not pass silently
            self.problems.append(f"conn {idx} {direction}: {exc!r}")
        finally:
            out.shutdown()
            # keep draining so that the sender is never reset by us: its
            # peer (or its own error) ends the connection
            self._drain(src)

    @staticmethod
    def _raw(src, out):
        while True:
            data = src.recv(1 << 20)
            if not data:
                return
            out.send(data)

    @staticmethod
    def _drain(src):
        try:
            while src.recv(1 << 20):
                pass
        except OSError:
            pass

    def _records(self, idx, direction, src, out):
        out.send(_recv_exact(src, 8))                       # preamble
        hdr = _recv_exact(src, 8)
        (n,) = struct.unpack_from(">I", hdr, 4)
        if n > 4096:
            self.problems.append(f"conn {idx} {direction}: first message "
                                 f"of {n} bytes")
            self._raw(src, out)
            return
        body = _recv_exact(src, n) if n else b""
        out.send(hdr + body)
        if hdr[0] != (HS_INIT if direction == C2S else HS_RESP):
            self._raw(src, out)                              # ERROR etc.
            return
        target = (self.attack is not None and direction == self.direction
                  and (idx == self.conn or
                       (idx == 2 and self.attack in ("move", "splice"))))
        ndata = 0
        held = None
        while True:
            rh = _recv_exact(src, 4)
            rtype = rh[0]
            rlen = int.from_bytes(rh[1:4], "big")
            rec = rh + _recv_exact(src, rlen + TAG_LEN)
            with self.lock:
                d = self.records.setdefault((idx, direction), {})
                d[rtype] = d.get(rtype, 0) + 1
            if rtype != self.rtype or not target:
                out.send(rec)
                continue
            ndata += 1
            if idx == 2 and self.attack in ("move", "splice"):
                rec = self._stream2(ndata, rec, out)
                if rec is not None:
                    out.send(rec)
                continue
            if idx != self.conn:
                out.send(rec)
                continue
            if held is not None:                             # swap, 2nd
                self.applied.set()
                out.send(rec)
                out.send(held)
                held = None
                continue
            if ndata != self.after + 1:
                out.send(rec)
                continue
            a = self.attack
            # the flag goes up before the tampered bytes leave: the peer
            # may react and the test look at the flag before this thread
            # runs again
            if a == "flip":
                rec[4 + rlen // 2] ^= 0x10
                self.applied.set()
                out.send(rec)
            elif a == "drop":
                self.applied.set()
            elif a == "swap":
                held = rec
            elif a == "replay":
                self.applied.set()
                out.send(rec)
                out.send(rec)
            elif a == "move":
                # out of stream 1, into stream 2; stream 1 waits until
                # stream 2 has sent it
                self.handoff = bytes(rec)
                self.handoff_ready.set()
                if not self.applied.wait(WAIT):
                    self.problems.append("move: stream 2 never took it")
            elif a == "splice":
                # stream 1 intact; stream 2's record with the same
                # sequence number is replaced by this one
                self.handoff = bytes(rec)
                self.handoff_ready.set()
                out.send(rec)
            elif a == "cut":
                # no more records toward the receiver, END included
                self.applied.set()
                out.shutdown()
                return                                       # drain
            else:
                raise AssertionError(a)

    def _stream2(self, ndata, rec, out):
        """Stream 2's part of move and splice; returns what to send."""
        if self.attack == "move":
            if self.handoff_ready.is_set() and not self.applied.is_set():
                self.applied.set()
                out.send(self.handoff)
            return rec
        # splice
        if ndata != self.after + 1:
            return rec
        if not self.handoff_ready.wait(WAIT):
            self.problems.append("splice: stream 1 never reached it")
            return rec
        if len(self.handoff) != len(rec) or self.handoff[:4] != rec[:4]:
            self.problems.append("splice: records differ in header")
            return rec
        self.applied.set()
        return bytearray(self.handoff)

    def close(self, grace=10):
        """Let the connections end by themselves (bounded: the bench has
        exited, the server closes after it), then tear everything down."""
        deadline = time.monotonic() + grace
        for t in list(self.threads[1:]):
            t.join(max(0.0, deadline - time.monotonic()))
        self.stopping.set()
        with self.lock:
            socks = list(self.socks)
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in self.threads:
            t.join(5)
        for s in socks + [self.lsock]:
            s.close()


class _Sink:
    """The destination socket of a pump; after the first failed send (the
    receiver gave up) further data is silently dropped."""

    def __init__(self, sock):
        self.sock = sock
        self.broken = False
        self.closed = False

    def send(self, data):
        if self.broken or self.closed:
            return
        try:
            self.sock.sendall(data)
        except OSError:
            self.broken = True

    def shutdown(self):
        if self.closed:
            return
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass


# ---------------- fixtures ----------------

@pytest.fixture
def token_file(tmp_path, linerate_bin):
    res = subprocess.run([linerate_bin, "token"], capture_output=True,
                         text=True, timeout=30)
    assert res.returncode == 0, describe(res)
    path = tmp_path / "token"
    path.write_text(res.stdout)
    path.chmod(0o600)
    return str(path)


@pytest.fixture
def srv(serve, token_file):
    return serve("-B", LOOP, "--token-file", token_file,
                 "--max-duration", "20")


def assert_clean_run(srv, linerate_bin, token_file):
    """A test straight to the server (no relay) succeeds, encrypted."""
    assert srv.alive(), srv.log.text()
    since = srv.log.mark()
    run = functools.partial(subprocess.run, env=clean_env())
    doc = bench_json(linerate_bin, "--token-file", token_file, "-t", "0.3",
                     "-i", "0", f"{LOOP}:{srv.port}", timeout=30, run=run)
    assert doc["end"]["linerate"]["authenticated"] is True
    assert doc["end"]["sum_received"]["bytes"] > 0
    srv.wait_log(r"test \d+ from 127\.0\.0\.1:\d+: .*: ok$", since=since)


# ---------------- the control: a transparent relay ----------------

@pytest.mark.parametrize("mode", [["-P", "2"], ["-R"], ["--bidir"]],
                         ids=["forward-P2", "reverse", "bidir"])
def test_relay_without_attack_is_transparent(srv, linerate_bin, token_file,
                                             mode):
    with AttackRelay(srv.port) as relay:
        res = bench(linerate_bin, "-J", "--token-file", token_file, "-n",
                    "20M", "-l", "128K", *mode, f"{LOOP}:{relay.port}",
                    timeout=60)
        assert res.returncode == 0, describe(res) + srv.log.text()
        doc = strict_json(res.stdout)
        end = doc["end"]
        assert end["linerate"]["authenticated"] is True
        assert end["sum_sent"]["bytes"] == 20 * MIB
        assert end["sum_received"]["bytes"] == 20 * MIB
        srv.wait_log(r"test 1 from .*: ok$")
        nstreams = len(end["streams"])
        assert relay.nconn == 1 + nstreams
        # per direction, 20 MiB in 160 DATA records of 128 KiB; every
        # stream: one DATA_OPEN record, one END record
        data = {C2S: 0, S2C: 0}
        for i in range(1, nstreams + 1):
            d = _stream_dir(doc, i)
            data[d] += relay.count(i, d, REC_DATA)
            assert relay.count(i, d, REC_END) == 1, relay.records
            assert relay.count(i, C2S, REC_CTRL) == 1, relay.records
        # control: CTRL_OPEN, TEST_REQUEST, TEST_STOP, TEST_RESULTS out;
        # TEST_ACCEPT, TEST_START, TEST_RESULTS back
        assert relay.records[(0, C2S)] == {REC_CTRL: 4}, relay.records
        assert relay.records[(0, S2C)] == {REC_CTRL: 3}, relay.records
        expect = 20 * MIB // (128 * 1024)
        assert data == {C2S: 0 if "-R" in mode else expect,
                        S2C: expect if "-R" in mode or "--bidir" in mode
                        else 0}, relay.records
    assert relay.problems == [] and relay.io_events == [], \
        (relay.problems, relay.io_events)
    assert_clean_run(srv, linerate_bin, token_file)


def _stream_dir(doc, i):
    """Direction of data on stream I (1-based) of a test."""
    ts = doc["start"]["test_start"]
    if ts["bidir"]:
        return C2S if i <= ts["num_streams"] else S2C
    return S2C if ts["reverse"] else C2S


# ---------------- the attacks ----------------

CASES = [(a, C2S) for a in ATTACKS] + [("flip", S2C), ("drop", S2C),
                                       ("cut", S2C)]


@pytest.mark.parametrize("attack,direction", CASES,
                         ids=[f"{a}-{d}" for a, d in CASES])
def test_attack_is_detected(srv, linerate_bin, token_file, attack,
                            direction):
    streams = "2" if attack in ("move", "splice") else "1"
    mode = ["-R"] if direction == S2C else []
    since = srv.log.mark()
    with AttackRelay(srv.port, attack, direction) as relay:
        t0 = time.monotonic()
        res = bench(linerate_bin, "--token-file", token_file, "-t", "3",
                    "-i", "0", "-P", streams, *mode, f"{LOOP}:{relay.port}",
                    timeout=BENCH_BOUND + 10)
        took = time.monotonic() - t0
        assert relay.applied.is_set(), (relay.records, relay.problems,
                                        describe(res))
        assert relay.problems == [], relay.problems
    assert res.returncode == 1, describe(res) + srv.log.text()
    assert took < BENCH_BOUND, took
    errors = [ln for ln in res.stderr.splitlines()
              if ln.startswith(ERROR_PREFIX)]
    assert len(errors) == 1, describe(res)
    assert DETECTED_RE.search(errors[0]), describe(res)
    if attack == "cut":
        assert "cut short" in errors[0], errors[0]
    else:
        assert "record failed authentication" in errors[0], errors[0]
    if direction == C2S:
        # the server noticed and told the client
        assert errors[0].startswith(ERROR_PREFIX + "server error: "), \
            errors[0]
    m = srv.wait_log(r"test \d+ from 127\.0\.0\.1:\d+: .*: failed: (.*)$",
                     since=since, timeout=20)
    if direction == C2S:
        assert DETECTED_RE.search(m.group(1)), m.group(0)
    if attack == "splice":
        # only the stream that got a record under another stream's key
        assert "stream 2" in errors[0], errors[0]
    assert not srv.log.find(r": ok$", since=since)
    assert_clean_run(srv, linerate_bin, token_file)


# ---------------- the control connection ----------------

# (record number, direction): c2s 1 CTRL_OPEN, 2 TEST_REQUEST, 3 TEST_STOP;
# s2c 1 TEST_ACCEPT, 2 TEST_START.  TEST_ACCEPT is left out: the server
# only notices 10 s later that the client is gone (no stream attaches).
CTRL_CASES = {
    "test-request": (2, C2S),
    "test-stop": (3, C2S),
    "test-start": (2, S2C),
}


@pytest.mark.parametrize("which", CTRL_CASES.values(), ids=CTRL_CASES.keys())
def test_tampered_control_record_is_detected(srv, linerate_bin, token_file,
                                             which):
    number, direction = which
    since = srv.log.mark()
    with AttackRelay(srv.port, "flip", direction, after=number - 1,
                     conn=0) as relay:
        t0 = time.monotonic()
        res = bench(linerate_bin, "--token-file", token_file, "-t", "1",
                    "-i", "0", f"{LOOP}:{relay.port}",
                    timeout=BENCH_BOUND + 10)
        took = time.monotonic() - t0
        assert relay.applied.is_set(), (relay.records, describe(res))
        assert relay.problems == [], relay.problems
    assert res.returncode == 1, describe(res) + srv.log.text()
    assert took < BENCH_BOUND, took
    errors = [ln for ln in res.stderr.splitlines()
              if ln.startswith(ERROR_PREFIX)]
    assert len(errors) == 1, describe(res)
    m = srv.wait_log(r"test \d+ from 127\.0\.0\.1:\d+: .*failed: (.*)$",
                     since=since, timeout=20)
    if direction == C2S:
        assert "record failed authentication" in m.group(1), m.group(0)
    else:
        assert "record failed authentication" in errors[0], errors[0]
    if which == CTRL_CASES["test-stop"]:
        # the server tells the client over the untouched direction
        assert errors[0] == (ERROR_PREFIX + "server error: control record: "
                             "record failed authentication (tampered, "
                             "dropped, reordered or replayed data)"), errors
    assert not srv.log.find(r": ok$", since=since)
    assert_clean_run(srv, linerate_bin, token_file)
