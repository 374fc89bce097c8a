# SPDX-License-Identifier: MIT
"""Tokens, the handshake and the encrypted records on loopback
(docs/PROTOCOL.md sections 5-6, docs/SECURITY.md): `linerate token`, bench
with the token from a file or LINERATE_TOKEN, every cipher with exact byte
counts, wrong and missing tokens (and the server's growing delay), --cipher
none and --allow-plaintext, usage errors, -Z with encryption, and raw
sockets replaying a recorded handshake or cutting one short.

Every test starts its own server (bound to 127.0.0.1) and its own token.
LINERATE_TOKEN is removed from the environment of every client run here
unless a test sets it on purpose.
"""

import functools
import os
import re
import shutil
import socket
import struct
import subprocess
import threading
import time

import pytest

import lrproc
from lrproc import (BenchProc, bench_json, connect, ctrl_open, describe, message,
                    preamble, read_error, read_preamble, recv_exact,
                    recv_until_close, run_bench, strict_json)
from util import wait_until

LOOP = "127.0.0.1"
MIB = 1 << 20
# every message of a command starts with "linerate CMD: "
ERROR_RE = re.compile(r"linerate [a-z]+: ")
TOKEN_RE = re.compile(r"^[a-z2-7]{4}(?:-[a-z2-7]{4}){7}$")
B32 = "abcdefghijklmnopqrstuvwxyz234567"

HS_INIT = 0x20
HS_RESP = 0x21
HS_LEN = 67          # e.pub (32) + sealed hello (19) + tag (16)
REC_CTRL = 1
TAG_LEN = 16
ERR_BAD_REQUEST = 3
ERR_AUTH = 8

OK_LINE = r"test (\d+) from 127\.0\.0\.1:\d+: .*: ok$"
NONE_WARNING = ("linerate bench: warning: --cipher none: the data travels in "
                "clear")


# ---------------- helpers ----------------

def clean_env(**extra):
    """os.environ without LINERATE_TOKEN, plus EXTRA."""
    env = {k: v for k, v in os.environ.items() if k != "LINERATE_TOKEN"}
    env.update(extra)
    return env


def bench(binary, *args, env=None, timeout=60):
    """run_bench without an inherited LINERATE_TOKEN (ENV overrides)."""
    run = functools.partial(subprocess.run,
                            env=clean_env() if env is None else env)
    return run_bench(binary, *args, timeout=timeout, run=run)


def bench_doc(binary, *args, env=None, timeout=60):
    run = functools.partial(subprocess.run,
                            env=clean_env() if env is None else env)
    return bench_json(binary, *args, timeout=timeout, run=run)


def run_linerate(binary, *args, timeout=30):
    return subprocess.run([binary, *map(str, args)], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout,
                          env=clean_env())


def one_error_line(res):
    """The single 'linerate CMD: ' line of a failed run (warnings
    aside), without its prefix."""
    lines = [ln for ln in res.stderr.splitlines()
             if not re.match(r"linerate [a-z]+: warning:", ln)]
    assert len(lines) == 1, describe(res)
    m = ERROR_RE.match(lines[0])
    assert m, describe(res)
    return lines[0][m.end():]


def new_token(binary):
    res = run_linerate(binary, "token")
    assert res.returncode == 0, describe(res)
    assert res.stderr == ""
    return res.stdout.strip()


def cpu_has_aes():
    with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
        for line in f:
            if line.startswith("flags"):
                return "aes" in line.split(":", 1)[1].split()
    return False


def auto_cipher():
    """What auto picks with client and server on this one machine."""
    return "aes-256-gcm" if cpu_has_aes() else "chacha20-poly1305"


def logged_tests(srv):
    return len(srv.log.find(r"test \d+ from "))


@pytest.fixture
def token(linerate_bin):
    return new_token(linerate_bin)


@pytest.fixture
def token_file(tmp_path, token):
    path = tmp_path / "token"
    path.write_text(token + "\n")
    path.chmod(0o600)
    return str(path)


@pytest.fixture
def tserve(serve, token_file):
    """serve() with the token, on 127.0.0.1 only."""
    def start(*args):
        return serve("-B", LOOP, "--token-file", token_file, *args)
    return start


# ---------------- linerate token ----------------

def test_token_format_and_randomness(linerate_bin):
    a, b = new_token(linerate_bin), new_token(linerate_bin)
    for tok in (a, b):
        assert TOKEN_RE.match(tok), tok
        digits = tok.replace("-", "")
        assert len(digits) == 32 and len(digits) * 5 == 160
    assert a != b


def test_token_help(linerate_bin):
    res = run_linerate(linerate_bin, "token", "--help")
    assert res.returncode == 0, describe(res)
    assert res.stdout.startswith("usage: linerate token"), res.stdout
    assert "160 bits" in res.stdout
    assert res.stderr == ""
    res = run_linerate(linerate_bin, "token", "extra")
    assert res.returncode == 2, describe(res)
    assert "extra" in res.stderr


# ---------------- the right token ----------------

def test_token_file_human_output(tserve, linerate_bin, token_file):
    srv = tserve()
    res = bench(linerate_bin, "--token-file", token_file, "-t", "0.5", "-i",
                "0", f"{LOOP}:{srv.port}")
    assert res.returncode == 0, describe(res)
    assert res.stderr == ""
    assert (f"Security: authenticated with the token; data encrypted with "
            f"{auto_cipher()}\n") in res.stdout, res.stdout
    srv.wait_log(r"test 1 from 127\.0\.0\.1:\d+: forward, 1 stream, .*: ok$")


def test_token_file_json(tserve, linerate_bin, token_file):
    srv = tserve()
    doc = bench_doc(linerate_bin, "--token-file", token_file, "-t", "0.5",
                    "-i", "0", f"{LOOP}:{srv.port}")
    lr = doc["end"]["linerate"]
    assert lr["authenticated"] is True
    assert lr["cipher"] == auto_cipher()
    assert doc["end"]["sum_received"]["bytes"] > 0
    srv.wait_log(OK_LINE)


def test_token_from_environment(tserve, linerate_bin, token):
    srv = tserve()
    doc = bench_doc(linerate_bin, "-t", "0.5", "-i", "0",
                    f"{LOOP}:{srv.port}", env=clean_env(LINERATE_TOKEN=token))
    assert doc["end"]["linerate"]["authenticated"] is True
    assert doc["end"]["linerate"]["cipher"] == auto_cipher()
    srv.wait_log(OK_LINE)


def test_token_spelling_is_forgiving(tserve, linerate_bin, token, tmp_path):
    # dashes, white space and case are ignored when a token is read
    path = tmp_path / "shouting"
    path.write_text("  " + token.replace("-", " ").upper() + "  \n")
    srv = tserve()
    doc = bench_doc(linerate_bin, "--token-file", path, "-t", "0.3", "-i",
                    "0", f"{LOOP}:{srv.port}")
    assert doc["end"]["linerate"]["authenticated"] is True


def test_token_file_wins_over_environment(tserve, linerate_bin, token_file):
    srv = tserve()
    other = new_token(linerate_bin)
    doc = bench_doc(linerate_bin, "--token-file", token_file, "-t", "0.3",
                    "-i", "0", f"{LOOP}:{srv.port}",
                    env=clean_env(LINERATE_TOKEN=other))
    assert doc["end"]["linerate"]["authenticated"] is True
    assert not srv.log.find("wrong token")


def test_no_token_says_security_none(serve, linerate_bin):
    srv = serve("-B", LOOP)
    res = bench(linerate_bin, "-t", "0.3", "-i", "0", f"{LOOP}:{srv.port}")
    assert res.returncode == 0, describe(res)
    assert ("Security: none (no token: not authenticated, not encrypted)\n"
            in res.stdout), res.stdout
    doc = bench_doc(linerate_bin, "-t", "0.3", "-i", "0",
                    f"{LOOP}:{srv.port}")
    assert doc["end"]["linerate"]["authenticated"] is False
    assert doc["end"]["linerate"]["cipher"] == "none"


@pytest.mark.parametrize("mode", [["-R"], ["--bidir", "-P", "2"]],
                         ids=["reverse", "bidir-P2"])
@pytest.mark.parametrize("cipher", ["aes-256-gcm", "chacha20-poly1305"])
def test_cipher_exact_bytes(tserve, linerate_bin, token_file, cipher, mode):
    srv = tserve()
    doc = bench_doc(linerate_bin, "--token-file", token_file, "--cipher",
                    cipher, "-n", "20M", "-i", "0", *mode,
                    f"{LOOP}:{srv.port}")
    end = doc["end"]
    assert end["linerate"]["authenticated"] is True
    assert end["linerate"]["cipher"] == cipher
    assert doc["start"]["test_start"]["bytes"] == 20 * MIB
    assert end["sum_sent"]["bytes"] == 20 * MIB
    assert end["sum_received"]["bytes"] == 20 * MIB
    if "--bidir" in mode:
        assert end["sum_sent_bidir_reverse"]["bytes"] == 20 * MIB
        assert end["sum_received_bidir_reverse"]["bytes"] == 20 * MIB
        assert len(end["streams"]) == 4
    for st in end["streams"]:
        assert st["sender"]["bytes"] == st["receiver"]["bytes"], st
    srv.wait_log(OK_LINE)


# ---------------- wrong and missing tokens ----------------

def test_wrong_token_is_rejected_and_slowed_down(tserve, linerate_bin,
                                                 token_file, tmp_path):
    srv = tserve()
    wrong = tmp_path / "wrong"
    wrong.write_text(new_token(linerate_bin) + "\n")
    target = f"{LOOP}:{srv.port}"
    times, results = [], []
    for _ in range(2):  # back to back: the log is checked afterwards
        t0 = time.monotonic()
        results.append(bench(linerate_bin, "--token-file", wrong, "-t",
                             "0.5", target, timeout=30))
        times.append(time.monotonic() - t0)
    for res in results:
        assert res.returncode == 1, describe(res)
        assert one_error_line(res) == (
            "authentication failed: wrong token, or the connection was "
            "tampered with")
    srv.wait_log(r"127\.0\.0\.1:\d+: rejected: wrong token, or the "
                 r"connection was tampered with$")
    wait_until(lambda: len(srv.log.find(r"rejected: wrong token, or the "
                                        r"connection was tampered with$"))
               == 2, 10, what="two 'wrong token' lines")
    # the second attempt waited for the 1 s penalty of the first
    assert times[1] - times[0] >= 0.8, times
    assert times[1] < 10, times
    # the right token still gets through, after the second penalty (2 s:
    # it doubles)
    since = srv.log.mark()
    t0 = time.monotonic()
    res = bench(linerate_bin, "--token-file", token_file, "-t", "0.3", "-i",
                "0", target, timeout=30)
    took = time.monotonic() - t0
    assert res.returncode == 0, describe(res) + srv.log.text()
    assert 1.5 <= took < 15, (took, times)
    srv.wait_log(OK_LINE, since=since)
    assert logged_tests(srv) == 1


def test_missing_token_against_token_server(tserve, linerate_bin):
    srv = tserve()
    res = bench(linerate_bin, "-t", "0.5", f"{LOOP}:{srv.port}", timeout=30)
    assert res.returncode == 1, describe(res)
    line = one_error_line(res)
    assert line.startswith("authentication failed"), line
    assert "requires a token" in line, line
    srv.wait_log(r"127\.0\.0\.1:\d+: rejected: this server requires a token")
    assert logged_tests(srv) == 0


def test_token_against_tokenless_server(serve, linerate_bin, token_file):
    srv = serve("-B", LOOP)
    res = bench(linerate_bin, "--token-file", token_file, "-t", "0.5",
                f"{LOOP}:{srv.port}", timeout=30)
    assert res.returncode == 1, describe(res)
    line = one_error_line(res)
    assert line.startswith("authentication failed"), line
    assert "no token" in line, line
    srv.wait_log(r"127\.0\.0\.1:\d+: rejected: this server has no token")
    assert logged_tests(srv) == 0


def test_plain_messages_to_token_server_get_error_auth(tserve, linerate_bin):
    # control and data connections alike need the handshake first
    srv = tserve()
    data_open = message(0x02, struct.pack(">HH", 3, 16) + bytes(16) +
                        struct.pack(">HHH", 4, 2, 0) +
                        struct.pack(">HHB", 5, 1, 0))
    for first in (ctrl_open(), data_open):
        since = srv.log.mark()
        with connect(srv.port) as s:
            s.sendall(preamble() + first)
            assert read_preamble(s)["chosen"] == lrproc.VERSION
            code, text = read_error(s)
            assert code == ERR_AUTH, text
            assert "requires a token" in text
            assert recv_until_close(s) == b""
        srv.wait_log(r"rejected: this server requires a token", since=since)
    assert logged_tests(srv) == 0


def test_busy_token_server_says_busy(tserve, linerate_bin, token_file):
    # the ERROR goes back sealed, after the handshake; it must reach the
    # client as it does without a token (test_bench.py)
    srv = tserve("--max-tests", "1")
    popen = functools.partial(subprocess.Popen, env=clean_env())
    with BenchProc(linerate_bin, "--token-file", token_file, "-t", "5",
                   f"{LOOP}:{srv.port}", popen=popen) as first:
        first.out.wait_for(r"^\[\s*1\]\s+0\.00-", timeout=15)
        second = bench(linerate_bin, "--token-file", token_file, "-t", "1",
                       f"{LOOP}:{srv.port}", timeout=30)
        assert first.proc.poll() is None, "first test ended too early"
        srv.wait_log(r"127\.0\.0\.1:\d+: rejected: server busy")
        assert second.returncode == 1, describe(second)
        assert one_error_line(second).startswith("server busy"), \
            describe(second)
        res = first.finish(timeout=30)
    assert res.returncode == 0, describe(res)
    srv.wait_log(OK_LINE)


# ---------------- --cipher none, usage errors, -Z ----------------

def test_cipher_none_refused_without_allow_plaintext(tserve, linerate_bin,
                                                     token_file):
    srv = tserve()
    res = bench(linerate_bin, "--token-file", token_file, "--cipher", "none",
                "-t", "0.5", f"{LOOP}:{srv.port}", timeout=30)
    assert res.returncode == 1, describe(res)
    assert NONE_WARNING in res.stderr
    line = one_error_line(res)
    assert "the server does not allow --cipher none" in line, line
    srv.wait_log(r"127\.0\.0\.1:\d+: rejected: .*--cipher none")
    assert logged_tests(srv) == 0


def test_cipher_none_with_allow_plaintext(tserve, linerate_bin, token_file):
    srv = tserve("--allow-plaintext")
    res = bench(linerate_bin, "-J", "--token-file", token_file, "--cipher",
                "none", "-n", "20M", "--bidir", f"{LOOP}:{srv.port}")
    assert res.returncode == 0, describe(res)
    assert res.stderr.startswith(NONE_WARNING), res.stderr
    doc = strict_json(res.stdout)
    end = doc["end"]
    assert end["linerate"]["authenticated"] is True
    assert end["linerate"]["cipher"] == "none"
    assert end["sum_received"]["bytes"] == 20 * MIB
    assert end["sum_received_bidir_reverse"]["bytes"] == 20 * MIB
    res = bench(linerate_bin, "--token-file", token_file, "--cipher", "none",
                "-t", "0.3", "-i", "0", f"{LOOP}:{srv.port}")
    assert res.returncode == 0, describe(res)
    assert ("Security: authenticated with the token; data in clear "
            "(--cipher none)\n") in res.stdout, res.stdout
    # auto still encrypts on a server that allows plaintext
    doc = bench_doc(linerate_bin, "--token-file", token_file, "-t", "0.3",
                    "-i", "0", f"{LOOP}:{srv.port}")
    assert doc["end"]["linerate"]["cipher"] == auto_cipher()


@pytest.mark.parametrize("cipher", ["aes-256-gcm", "chacha20-poly1305",
                                    "none"])
def test_cipher_without_token_is_usage_error(linerate_bin, cipher):
    # port 9 (discard): a usage error must not connect anywhere
    res = bench(linerate_bin, "--cipher", cipher, "-t", "1", f"{LOOP}:9",
                timeout=30)
    assert res.returncode == 2, describe(res)
    assert "--cipher needs a token" in res.stderr, res.stderr
    assert res.stdout == ""


def test_unknown_cipher_is_usage_error(linerate_bin, token_file):
    res = bench(linerate_bin, "--token-file", token_file, "--cipher", "rot13",
                f"{LOOP}:9", timeout=30)
    assert res.returncode == 2, describe(res)
    assert "rot13" in res.stderr


BAD_TOKENS = {
    "words": "not a token at all\n",
    "empty": "",
    "too-short": "abcd-efgh-ijkl-mnop-qrst-uvw\n",       # 23 digits
    "not-base32": "0189-" * 7 + "0189\n",                  # 0 1 8 9
}


@pytest.mark.parametrize("content", BAD_TOKENS.values(),
                         ids=BAD_TOKENS.keys())
def test_bad_token_file_is_usage_error(linerate_bin, tmp_path, content):
    path = tmp_path / "badtoken"
    path.write_text(content)
    res = bench(linerate_bin, "--token-file", path, f"{LOOP}:9", timeout=30)
    assert res.returncode == 2, describe(res)
    assert str(path) in res.stderr, res.stderr
    res = run_linerate(linerate_bin, "serve", "-p", "0", "-B", LOOP,
                       "--token-file", path)
    assert res.returncode == 2, describe(res)
    assert str(path) in res.stderr, res.stderr


def test_missing_token_file_is_usage_error(linerate_bin, tmp_path):
    path = tmp_path / "does-not-exist"
    res = bench(linerate_bin, "--token-file", path, f"{LOOP}:9", timeout=30)
    assert res.returncode == 2, describe(res)
    assert str(path) in res.stderr, res.stderr


def test_bad_environment_token_is_usage_error(linerate_bin):
    res = bench(linerate_bin, f"{LOOP}:9", timeout=30,
                env=clean_env(LINERATE_TOKEN="hunter2"))
    assert res.returncode == 2, describe(res)
    assert "LINERATE_TOKEN" in res.stderr, res.stderr
    assert "hunter2" not in res.stderr  # the secret is not echoed


@pytest.mark.parametrize("zc", ["-Z", "-Zsendfile"])
def test_zerocopy_with_encryption_is_refused(tserve, linerate_bin,
                                             token_file, zc):
    srv = tserve()
    res = bench(linerate_bin, "--token-file", token_file, zc, "-t", "1",
                f"{LOOP}:{srv.port}", timeout=30)
    assert res.returncode == 1, describe(res)
    line = one_error_line(res)
    assert "-Z cannot be used with encryption" in line, line
    assert logged_tests(srv) == 0


def test_zerocopy_with_cipher_none(tserve, linerate_bin, token_file):
    srv = tserve("--allow-plaintext")
    doc = bench_doc(linerate_bin, "--token-file", token_file, "--cipher",
                    "none", "-Z", "-n", "20M", f"{LOOP}:{srv.port}")
    assert doc["start"]["test_start"]["zerocopy"] == 2
    assert doc["end"]["linerate"]["cipher"] == "none"
    assert doc["end"]["sum_received"]["bytes"] == 20 * MIB


def test_serve_allow_plaintext_needs_token_file(linerate_bin):
    res = run_linerate(linerate_bin, "serve", "-p", "0", "-B", LOOP,
                       "--allow-plaintext", timeout=10)
    assert res.returncode == 2, describe(res)
    assert "--allow-plaintext needs --token-file" in res.stderr, res.stderr


# ---------------- raw sockets: replay and truncation ----------------

class CaptureRelay:
    """127.0.0.1:0 -> 127.0.0.1:PORT, forwarding every connection as is and
    keeping the first LIMIT bytes of the first connection each way."""

    def __init__(self, port, limit=4096):
        self.port_up = port
        self.limit = limit
        self.c2s = bytearray()
        self.s2c = bytearray()
        self.lsock = socket.socket()
        self.lsock.bind((LOOP, 0))
        self.lsock.listen(16)
        self.lsock.settimeout(0.2)
        self.port = self.lsock.getsockname()[1]
        self.stop = threading.Event()
        self.socks = []
        self.threads = []
        self.nconn = 0
        t = threading.Thread(target=self._accept, daemon=True)
        t.start()
        self.threads.append(t)

    def _accept(self):
        while not self.stop.is_set():
            try:
                c, _ = self.lsock.accept()
            except (socket.timeout, OSError):
                continue
            try:
                u = socket.create_connection((LOOP, self.port_up), timeout=5)
            except OSError:
                c.close()
                continue
            c.settimeout(None)
            u.settimeout(None)
            self.socks += [c, u]
            first = self.nconn == 0
            self.nconn += 1
            for src, dst, keep in ((c, u, self.c2s), (u, c, self.s2c)):
                t = threading.Thread(target=self._pump,
                                     args=(src, dst, keep if first else None),
                                     daemon=True)
                t.start()
                self.threads.append(t)

    def _pump(self, src, dst, keep):
        try:
            while True:
                data = src.recv(1 << 20)
                if not data:
                    break
                if keep is not None and len(keep) < self.limit:
                    keep += data[:self.limit - len(keep)]
                dst.sendall(data)
        except OSError:
            pass
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def close(self, grace=10):
        """Let the connections end by themselves (bounded: the bench has
        exited, the server closes after it), then tear everything down."""
        deadline = time.monotonic() + grace
        for t in self.threads[1:]:
            t.join(max(0.0, deadline - time.monotonic()))
        self.stop.set()
        for s in self.socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in self.threads:
            t.join(5)
        for s in self.socks + [self.lsock]:
            s.close()


def split_handshake(stream, first_type):
    """(preamble + message, message body, rest) of a captured stream whose
    first message has FIRST_TYPE."""
    assert stream[:4] == b"LNRT", bytes(stream[:16])
    mtype, _fl, _res, n = struct.unpack_from(">BBHI", stream, 8)
    assert mtype == first_type and n == HS_LEN, (mtype, n)
    end = 16 + n
    return bytes(stream[:end]), bytes(stream[16:end]), bytes(stream[end:])


@pytest.mark.parametrize("follow", ["garbage", "recorded"])
def test_replayed_handshake_gets_nowhere(tserve, linerate_bin, token_file,
                                         follow):
    srv = tserve("--handshake-timeout", "2")
    relay = CaptureRelay(srv.port)
    try:
        res = bench(linerate_bin, "--token-file", token_file, "-t", "0.3",
                    "-i", "0", f"{LOOP}:{relay.port}", timeout=30)
    finally:
        relay.close()
    assert res.returncode == 0, describe(res)
    srv.wait_log(OK_LINE)
    hs_init, _, c_rest = split_handshake(relay.c2s, HS_INIT)
    _, old_resp, _ = split_handshake(relay.s2c, HS_RESP)
    assert len(hs_init) == 8 + 8 + HS_LEN
    # the session's first record after the handshake (CTRL_OPEN, sealed)
    assert c_rest[0] == REC_CTRL, c_rest[:4]
    rlen = int.from_bytes(c_rest[1:4], "big")
    recorded = c_rest[:4 + rlen + TAG_LEN]
    assert len(recorded) == 4 + rlen + TAG_LEN

    since = srv.log.mark()
    with connect(srv.port) as s:
        s.sendall(hs_init)
        assert read_preamble(s)["chosen"] == lrproc.VERSION
        hdr = recv_exact(s, 8)
        mtype, _fl, _res, n = struct.unpack(">BBHI", hdr)
        assert (mtype, n) == (HS_RESP, HS_LEN), hdr
        resp = recv_exact(s, n)
        assert len(resp) == HS_LEN
        assert resp[:32] != old_resp[:32]  # a fresh ephemeral key
        if follow == "garbage":
            body = os.urandom(8 + 20)
            s.sendall(bytes([REC_CTRL]) + len(body).to_bytes(3, "big") +
                      body + os.urandom(TAG_LEN))
        else:
            s.sendall(recorded)
        srv.wait_log(r"127\.0\.0\.1:\d+: rejected: .*record failed "
                     r"authentication", since=since)
        answer = recv_until_close(s)
    # whatever comes back is sealed under keys the attacker cannot compute
    assert b"record failed" not in answer and b"LNRT" not in answer
    if answer:
        assert answer[0] == REC_CTRL, answer[:8]
        assert len(answer) == 4 + int.from_bytes(answer[1:4], "big") + \
            TAG_LEN
    assert not srv.log.find("wrong token")
    # nothing started: the next real test is number 2
    res = bench(linerate_bin, "--token-file", token_file, "-t", "0.3", "-i",
                "0", f"{LOOP}:{srv.port}", timeout=30)
    assert res.returncode == 0, describe(res)
    m = srv.wait_log(OK_LINE, since=since)
    assert m.group(1) == "2", srv.log.text()
    assert logged_tests(srv) == 2


# A server slowed for 50 ms right after it sends HS_RESP: the client's
# first records (CTRL_OPEN and the request, or DATA_OPEN and data) are all
# in the socket when it reads on, and must be read a record at a time.
SLOW_HS_RESP_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

typedef ssize_t (*send_fn)(int, const void *, size_t, int);

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	static send_fn real;
	ssize_t r;

	if (!real)
		real = (send_fn)dlsym(RTLD_NEXT, "send");
	r = real(fd, buf, len, flags);
	if (r > 0 && len > 8 && ((const unsigned char *)buf)[0] == 0x21)
		usleep(50000); /* HS_RESP's message type */
	return r;
}
"""


@pytest.fixture
def slow_hs_resp(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler for the LD_PRELOAD shim")
    src = tmp_path / "slowhs.c"
    src.write_text(SLOW_HS_RESP_C)
    so = tmp_path / "slowhs.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(so), str(src),
                    "-ldl"], check=True, capture_output=True, timeout=60)
    return str(so)


def test_records_queued_during_the_handshake_are_read_whole(
        serve, linerate_bin, token_file, slow_hs_resp):
    env = dict(os.environ, LD_PRELOAD=slow_hs_resp)
    srv = serve("-B", LOOP, "--token-file", token_file,
                popen=functools.partial(subprocess.Popen, env=env))
    for _ in range(3):
        res = bench(linerate_bin, "-t", "0.3", "-i", "0", "-P", "2",
                    "--token-file", token_file, f"{LOOP}:{srv.port}")
        assert res.returncode == 0, \
            f"{describe(res)}\n--- server log\n{srv.log.text()}"
    # the server logs a test's end just after its client has its results
    wait_until(lambda: len(srv.log.find(r"test \d+ from .*: ok")) == 3, 10,
               what="three tests logged ok")
    assert "bad control record" not in srv.log.text()


def test_truncated_handshake(tserve, linerate_bin, token_file):
    srv = tserve()
    with connect(srv.port) as s:
        s.sendall(preamble() + struct.pack(">BBHI", HS_INIT, 0, 0, HS_LEN) +
                  os.urandom(HS_LEN // 2))
        assert read_preamble(s)["chosen"] == lrproc.VERSION
        s.shutdown(socket.SHUT_WR)
        srv.wait_log(r"127\.0\.0\.1:\d+: rejected: closed after 49 bytes, "
                     r"before identifying itself")
        assert recv_until_close(s) == b""
    assert srv.alive()
    assert not srv.log.find("wrong token")  # no penalty for this
    res = bench(linerate_bin, "--token-file", token_file, "-t", "0.3", "-i",
                "0", f"{LOOP}:{srv.port}", timeout=30)
    assert res.returncode == 0, describe(res) + srv.log.text()
    srv.wait_log(OK_LINE)


@pytest.mark.parametrize("n", [0, HS_LEN - 1, HS_LEN + 1])
def test_hs_init_of_wrong_length_is_malformed(tserve, linerate_bin,
                                              token_file, n):
    srv = tserve()
    with connect(srv.port) as s:
        s.sendall(preamble() + message(HS_INIT, os.urandom(n)))
        assert read_preamble(s)["chosen"] == lrproc.VERSION
        code, text = read_error(s)
        assert code == ERR_BAD_REQUEST and "malformed HS_INIT" in text, text
        assert recv_until_close(s) == b""
    srv.wait_log(r"rejected: malformed HS_INIT$")
    res = bench(linerate_bin, "--token-file", token_file, "-t", "0.3", "-i",
                "0", f"{LOOP}:{srv.port}", timeout=30)
    assert res.returncode == 0, describe(res)


def test_random_hs_init_is_a_wrong_token(tserve):
    srv = tserve()
    with connect(srv.port) as s:
        s.sendall(preamble() + message(HS_INIT, os.urandom(HS_LEN)))
        assert read_preamble(s)["chosen"] == lrproc.VERSION
        code, text = read_error(s)  # in clear: no keys were agreed
        assert code == ERR_AUTH and text == (
            "wrong token, or the connection was tampered with"), text
        assert recv_until_close(s) == b""
    srv.wait_log(r"127\.0\.0\.1:\d+: rejected: wrong token, or the "
                 r"connection was tampered with$")
