# SPDX-License-Identifier: MIT
"""A relay on the path changes the bytes sent in clear before the keys
exist: the preambles and the handshake messages (docs/PROTOCOL.md sections
1 and 5, docs/SECURITY.md "Nothing sent in clear can be changed unseen").

ByteRelay listens on 127.0.0.1:0 and forwards each connection to the
server; on connection CONN (0 is the control connection, 1 the first data
stream) it XORs the byte at offset AT of direction DIRECTION with MASK.
Offsets: 0-7 the preamble (4 vmin, 5 vmax, 6 chosen, 7 flags), 8-15 the
HS_INIT / HS_RESP header (9 its flags), 16 on the handshake body.

Every change must end the run at once with exit 1 and an error that says
the connection was tampered with, and must not count as a wrong token
(no penalty) unless it hit the authenticated body, where a flipped bit is
a failed tag: then the wait is seconds, not a lockout.
"""

import functools
import os
import re
import socket
import subprocess
import threading
import time

import pytest

from lrproc import connect, describe, preamble, read_preamble, run_bench
from test_attacker import token_file  # noqa: F401 (a fixture)
from util import wait_until

LOOP = "127.0.0.1"
C2S, S2C = "c2s", "s2c"
ERROR_PREFIX = "linerate bench: "
TAMPERED = "the connection was tampered with (preamble changed in transit)"
WRONG = "wrong token, or the connection was tampered with"
DETECT_BOUND = 2.0  # seconds from the change to the client's exit


def clean_env():
    return {k: v for k, v in os.environ.items() if k != "LINERATE_TOKEN"}


class ByteRelay:
    """See the module docstring; changed_at is when the byte went by."""

    def __init__(self, upstream_port, conn=None, direction=C2S, at=0,
                 mask=0):
        self.up = upstream_port
        self.target = (conn, direction)
        self.at, self.mask = at, mask
        self.changed_at = None
        self.lock = threading.Lock()
        self.nconn = 0
        self.stopping = threading.Event()
        self.socks, self.threads = [], []
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

    def _accept_loop(self):
        while not self.stopping.is_set():
            try:
                c, _ = self.lsock.accept()
            except OSError:
                continue
            try:
                u = socket.create_connection((LOOP, self.up), timeout=5)
            except OSError:
                c.close()
                continue
            for s in (c, u):
                s.settimeout(None)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self.lock:
                idx = self.nconn
                self.nconn += 1
                self.socks += [c, u]
            self._start(self._pump, idx, C2S, c, u)
            self._start(self._pump, idx, S2C, u, c)

    def _pump(self, idx, direction, src, dst):
        hit = self.target == (idx, direction)
        off = 0
        try:
            while True:
                data = src.recv(1 << 16)
                if not data:
                    break
                if hit and off <= self.at < off + len(data):
                    b = bytearray(data)
                    b[self.at - off] ^= self.mask
                    data = bytes(b)
                    self.changed_at = time.monotonic()
                off += len(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def close(self):
        self.stopping.set()
        with self.lock:
            socks = list(self.socks)
        for s in socks + [self.lsock]:
            try:
                s.close()
            except OSError:
                pass
        for t in self.threads:
            t.join(timeout=5)


@pytest.fixture
def srv(serve, token_file):
    return serve("-B", LOOP, "--token-file", token_file,
                 "--max-duration", "20")


def bench(binary, token_file, port, *args, timeout=30):
    run = functools.partial(subprocess.run, env=clean_env())
    return run_bench(binary, "--token-file", token_file, "-t", "0.3", "-i",
                     "0", *args, f"{LOOP}:{port}", timeout=timeout, run=run)


def error_lines(res):
    return [ln for ln in res.stderr.splitlines()
            if ln.startswith(ERROR_PREFIX)]


def not_held(srv, bound=0.5):
    """Whether the server reads this address at once: no penalty holds
    it (a held address gets no preamble back for at least 1 s)."""
    t0 = time.monotonic()
    with connect(srv.port) as s:
        s.settimeout(5)
        s.sendall(preamble())
        read_preamble(s)
    return time.monotonic() - t0 < bound


def assert_not_held(srv):
    assert not_held(srv), srv.log.text()


# (conn, direction, offset, mask, what the server logs)
CASES = [
    # the client's preamble: the server sees it in the client's hello
    (0, C2S, 5, 0x01, re.escape(TAMPERED)),                  # vmax 2 -> 3
    (0, C2S, 6, 0x01, re.escape(TAMPERED)),                  # chosen 0 -> 1
    (0, C2S, 7, 0x80, re.escape(TAMPERED)),                  # flags
    (0, C2S, 9, 0x01, re.escape(TAMPERED)),                  # HS_INIT's flags
    # a lowered vmax (the downgrade): no version left in common
    (0, C2S, 5, 0x03, r"incompatible version: client speaks 2\.\.1"),
    (0, C2S, 4, 0x01, r"incompatible version: client speaks 3\.\.2"),
    # the server's preamble: the client sees it in the server's hello
    (0, S2C, 5, 0x01, r"the client ended it: " + re.escape(TAMPERED)),
    (0, S2C, 7, 0x80, r"the client ended it: " + re.escape(TAMPERED)),
    (0, S2C, 9, 0x01, r"the client ended it: " + re.escape(TAMPERED)),
    (0, S2C, 6, 0x03, None),  # chosen 2 -> 1: refused before the handshake
    (0, S2C, 4, 0x01, None),  # vmin 2 -> 3: no version left in common
    # a data stream's opening, both ways
    (1, C2S, 5, 0x01, re.escape(TAMPERED)),
    (1, C2S, 7, 0x01, re.escape(TAMPERED)),
    (1, S2C, 5, 0x01, r"the client ended it: " + re.escape(TAMPERED)),
    (1, S2C, 9, 0x02, r"the client ended it: " + re.escape(TAMPERED)),
]


@pytest.mark.parametrize(
    "conn,direction,at,mask,logged", CASES,
    ids=[f"conn{c}-{d}-byte{a}^{m:#x}" for c, d, a, m, _ in CASES])
def test_preamble_change_is_refused(srv, linerate_bin, token_file, conn,
                                    direction, at, mask, logged):
    since = srv.log.mark()
    with ByteRelay(srv.port, conn, direction, at, mask) as relay:
        res = bench(linerate_bin, token_file, relay.port, "-P", "2")
        end = time.monotonic()
        # the client's last words cross the relay: wait before closing it
        if logged:
            srv.wait_log(r"127\.0\.0\.1:\d+: rejected: " + logged + "$",
                         since=since)
    assert res.returncode == 1, describe(res)
    errs = error_lines(res)
    assert len(errs) == 1, describe(res)
    assert "tampered with" in errs[0], describe(res)
    if at < 16:
        assert "preamble changed in transit" in errs[0], describe(res)
    assert relay.changed_at is not None
    assert end - relay.changed_at < DETECT_BOUND, describe(res)
    # nothing printed as a result
    assert "receiver" not in res.stdout, describe(res)
    # no penalty: it is not a wrong token
    assert not srv.log.find("wrong token", since=since), srv.log.text()
    assert_not_held(srv)


def test_handshake_body_change_is_a_failed_tag(srv, linerate_bin, token_file):
    since = srv.log.mark()
    with ByteRelay(srv.port, 0, C2S, 40, 0x01) as relay:
        res = bench(linerate_bin, token_file, relay.port)
    assert res.returncode == 1, describe(res)
    assert error_lines(res) == [
        ERROR_PREFIX + "authentication failed: " + WRONG], describe(res)
    srv.wait_log(r"127\.0\.0\.1:\d+: rejected: " + re.escape(WRONG) + "$",
                 since=since)
    # the server's answer changed: the client's words
    wait_until(lambda: not_held(srv), 5,
               what="the first case's penalty over")
    with ByteRelay(srv.port, 0, S2C, 40, 0x01) as relay:
        res = bench(linerate_bin, token_file, relay.port)
    assert res.returncode == 1, describe(res)
    assert "did not verify (another token, or the connection was " \
        "tampered with)" in res.stderr, describe(res)


def test_tampered_handshakes_cost_seconds_not_a_lockout(srv, linerate_bin,
                                                         token_file):
    """Six failed tags in a row from one address (each waits for the
    previous one's penalty), then the honest client from the same address
    gets through within the stated bound: at most 4 s of waiting."""
    for _ in range(6):
        with ByteRelay(srv.port, 0, C2S, 50, 0x04) as relay:
            res = bench(linerate_bin, token_file, relay.port)
        assert res.returncode == 1, describe(res)
        assert WRONG in res.stderr, describe(res)
    wait_until(lambda: len(srv.log.find(re.escape(WRONG))) == 6, 10,
               what="six failed handshakes logged")
    t0 = time.monotonic()
    res = bench(linerate_bin, token_file, srv.port)
    took = time.monotonic() - t0
    assert res.returncode == 0, describe(res) + srv.log.text()
    # held (the last penalty is 4 s), but for seconds only
    assert 2 <= took < 4 + 2, took
    # and a minute later nothing is held against the address (not waited
    # for here: the unit test of the rule checks the 60 s)
