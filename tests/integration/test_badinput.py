# SPDX-License-Identifier: MIT
"""A linerate server facing bad input on raw sockets: silent, garbage,
oversized, malformed and mismatched connections, a client killed
mid-test, and hundreds of idle connections.  The server must log each,
answer where the protocol says so, and go on serving normal tests."""

import signal
import struct

import pytest

import lrproc
from lrproc import (BenchProc, connect, ctrl_open, describe, message,
                    preamble, read_error, read_message, read_preamble,
                    recv_until_close, run_bench, tlv)

LOOP = "127.0.0.1"
TEST_ACCEPT = 0x11
ERR_UNEXPECTED = 5
ERR_UNKNOWN_TEST = 7

# TEST_REQUEST tags and a valid request (-t 1, one forward stream)
T_MODE, T_STREAMS, T_DURATION, T_BYTES, T_BLKSIZE = 0x10, 0x11, 0x12, \
    0x13, 0x14
MODE = tlv(T_MODE, b"\x00")
STREAMS = tlv(T_STREAMS, struct.pack(">H", 1))
DURATION = tlv(T_DURATION, struct.pack(">Q", 1000))
BYTES = tlv(T_BYTES, struct.pack(">Q", 0))
BLKSIZE = tlv(T_BLKSIZE, struct.pack(">I", 128 * 1024))
VALID_REQUEST = MODE + STREAMS + DURATION + BYTES + BLKSIZE


@pytest.fixture
def srv(serve):
    return serve("--handshake-timeout", "1")


def assert_still_serves(srv, linerate_bin):
    """A normal test right after the bad input succeeds and is logged."""
    assert srv.alive(), srv.log.text()
    since = srv.log.mark()
    res = run_bench(linerate_bin, "-t", "0.5", "-i", "0",
                    f"{LOOP}:{srv.port}", timeout=30)
    assert res.returncode == 0, describe(res) + "\n--- server log\n" + \
        srv.log.text()
    srv.wait_log(r"test \d+ from 127\.0\.0\.1:\d+: forward, 1 stream, "
                 r".*: ok$", since=since)
    assert srv.alive()


def test_silent_connection_is_dropped_after_handshake_timeout(
        srv, linerate_bin):
    with connect(srv.port) as s:
        srv.wait_log(r"127\.0\.0\.1:\d+: rejected: .*without identifying "
                     r"itself", timeout=10)
        assert recv_until_close(s) == b""  # closed, nothing said
    assert_still_serves(srv, linerate_bin)


def test_http_request_is_rejected(srv, linerate_bin):
    with connect(srv.port) as s:
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        srv.wait_log(r"127\.0\.0\.1:\d+: rejected: not a linerate client")
        # no linerate preamble goes back to a stranger
        assert not recv_until_close(s).startswith(b"LNRT")
    assert_still_serves(srv, linerate_bin)


def test_oversized_first_message_is_rejected(srv, linerate_bin):
    with connect(srv.port) as s:
        s.sendall(preamble() + message(lrproc.CTRL_OPEN, length=0xFFFFFFFF))
        assert read_preamble(s)["chosen"] == lrproc.VERSION
        code, text = read_error(s)
        assert code == lrproc.ERR_BAD_REQUEST
        assert "4294967295" in text
        assert recv_until_close(s) == b""
    srv.wait_log(r"127\.0\.0\.1:\d+: rejected: announced a 4294967295-byte "
                 r"first message")
    assert_still_serves(srv, linerate_bin)


def test_oversized_request_after_ctrl_open_is_rejected(srv, linerate_bin):
    # the control connection's second message: the test thread's reader
    with connect(srv.port) as s:
        s.sendall(preamble() + ctrl_open() +
                  message(lrproc.TEST_REQUEST, length=0xFFFFFFFF))
        assert read_preamble(s)["chosen"] == lrproc.VERSION
        code, text = read_error(s)
        assert code == lrproc.ERR_BAD_REQUEST
        assert "4294967295" in text
        assert recv_until_close(s) == b""
    srv.wait_log(r"test 1 from 127\.0\.0\.1:\d+: .*failed: .*4294967295")
    assert_still_serves(srv, linerate_bin)


def test_well_formed_raw_request_is_accepted(srv):
    # the control case for the malformed ones below: this test's own
    # encoding of a TEST_REQUEST is right
    with connect(srv.port) as s:
        s.sendall(preamble() + ctrl_open() +
                  message(lrproc.TEST_REQUEST, VALID_REQUEST))
        assert read_preamble(s)["chosen"] == lrproc.VERSION
        mtype, tlvs = read_message(s)
        assert mtype == TEST_ACCEPT, tlvs
        assert len(tlvs[0x0003]) == 16  # the test id


MALFORMED = {
    "truncated-tlv": VALID_REQUEST + b"\x00\x16\x00\x10cub",
    "short-value": MODE + tlv(T_STREAMS, b"\x01") + DURATION + BYTES +
    BLKSIZE,
    "missing-blksize": MODE + STREAMS + DURATION + BYTES,
    "duplicate-mode": MODE + VALID_REQUEST,
    "unknown-critical-tag": VALID_REQUEST + tlv(0x8042, b"x"),
    "streams-out-of-range": MODE + tlv(T_STREAMS, b"\xff\xff") + DURATION +
    BYTES + BLKSIZE,
    "empty-body": b"",
}


@pytest.mark.parametrize("body", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_test_request_gets_error(srv, linerate_bin, body):
    with connect(srv.port) as s:
        s.sendall(preamble() + ctrl_open() +
                  message(lrproc.TEST_REQUEST, body))
        assert read_preamble(s)["chosen"] == lrproc.VERSION
        code, text = read_error(s)
        assert code == lrproc.ERR_BAD_REQUEST, text
        assert "malformed" in text.lower(), text
        assert recv_until_close(s) == b""
    srv.wait_log(r"test 1 from 127\.0\.0\.1:\d+: .*failed: .*malformed")
    assert_still_serves(srv, linerate_bin)


def test_version_mismatch_answers_chosen_zero(srv, linerate_bin):
    with connect(srv.port) as s:
        s.sendall(preamble(vmin=9, vmax=9))
        pre = read_preamble(s)
        assert pre["chosen"] == 0, pre
        assert 1 <= pre["vmin"] <= pre["vmax"] < 9, pre
        assert recv_until_close(s) == b""
    srv.wait_log(r"127\.0\.0\.1:\d+: rejected: incompatible version")
    assert_still_serves(srv, linerate_bin)


def test_version_1_client_is_refused_cleanly(srv, linerate_bin):
    # a client of the first protocol version (before both preambles were
    # bound into the handshake): a clear refusal at once, not a hang
    with connect(srv.port) as s:
        s.settimeout(5)
        s.sendall(preamble(vmin=1, vmax=1) + ctrl_open())
        pre = read_preamble(s)
        assert pre["chosen"] == 0, pre
        assert pre["vmin"] == pre["vmax"] == lrproc.VERSION, pre
        assert recv_until_close(s) == b""
    srv.wait_log(r"127\.0\.0\.1:\d+: rejected: incompatible version: "
                 r"client speaks 1\.\.1$")
    assert_still_serves(srv, linerate_bin)


def test_client_killed_mid_test(srv, linerate_bin):
    with BenchProc(linerate_bin, "-t", "10", f"{LOOP}:{srv.port}") as bench:
        bench.out.wait_for(r"^\[\s*1\]\s+0\.00-", timeout=15)
        bench.proc.send_signal(signal.SIGKILL)
        assert bench.proc.wait(timeout=10) == -signal.SIGKILL
    srv.wait_log(r"test 1 from 127\.0\.0\.1:\d+: forward, 1 stream: "
                 r"failed: ", timeout=20)
    assert_still_serves(srv, linerate_bin)


def test_many_idle_connections(serve, linerate_bin):
    # default handshake timeout (5 s): the idle ones stay pending while a
    # real test runs beside them
    srv = serve()
    idle = []
    try:
        for _ in range(300):
            idle.append(connect(srv.port))
        with BenchProc(linerate_bin, "-t", "1", "-i", "0",
                       f"{LOOP}:{srv.port}") as bench:
            res = bench.finish(timeout=30)
        assert res.returncode == 0, describe(res) + "\n--- server log\n" + \
            srv.log.text()
        assert srv.alive()
    finally:
        for s in idle:
            s.close()
    srv.wait_log(r"test 1 from .*: ok$")
    assert_still_serves(srv, linerate_bin)


def test_partial_preamble_times_out(srv, linerate_bin):
    # dribbling bytes does not extend the handshake deadline
    with connect(srv.port) as s:
        s.sendall(b"LNR")
        srv.wait_log(r"127\.0\.0\.1:\d+: rejected: sent 3 bytes in 1\.0 s "
                     r"without identifying itself", timeout=10)
        assert recv_until_close(s) == b""
    assert_still_serves(srv, linerate_bin)


def test_unexpected_first_message(srv, linerate_bin):
    with connect(srv.port) as s:
        s.sendall(preamble() + message(lrproc.TEST_REQUEST, VALID_REQUEST))
        assert read_preamble(s)["chosen"] == lrproc.VERSION
        code, text = read_error(s)
        assert code == ERR_UNEXPECTED and "TEST_REQUEST" in text, text
        assert recv_until_close(s) == b""
    srv.wait_log(r"rejected: unexpected first message TEST_REQUEST")
    assert_still_serves(srv, linerate_bin)


def test_second_message_not_a_request(srv, linerate_bin):
    with connect(srv.port) as s:
        s.sendall(preamble() + ctrl_open() + ctrl_open())
        assert read_preamble(s)["chosen"] == lrproc.VERSION
        code, text = read_error(s)
        assert code == ERR_UNEXPECTED and "TEST_REQUEST" in text, text
        assert recv_until_close(s) == b""
    srv.wait_log(r"test 1 from .*: failed: expected TEST_REQUEST, got "
                 r"CTRL_OPEN")
    assert_still_serves(srv, linerate_bin)


def test_data_stream_for_unknown_test(srv, linerate_bin):
    body = (tlv(0x0003, bytes(16)) + tlv(0x0004, struct.pack(">H", 0)) +
            tlv(0x0005, b"\x00"))
    with connect(srv.port) as s:
        s.sendall(preamble() + message(lrproc.DATA_OPEN, body))
        assert read_preamble(s)["chosen"] == lrproc.VERSION
        code, text = read_error(s)
        assert code == ERR_UNKNOWN_TEST and "unknown test" in text, text
        assert recv_until_close(s) == b""
    srv.wait_log(r"rejected: unknown test id")
    assert_still_serves(srv, linerate_bin)
