# SPDX-License-Identifier: MIT
"""Helpers for running the real linerate binary in integration tests.

LineCollector   -- reads a process' stdout/stderr in a thread; wait for a
                   line matching a regex without ever blocking the child
LinerateServer  -- `linerate serve -p 0 ...`: reads the chosen port back
                   from "Server listening on * port N", keeps the log
run_bench       -- `linerate bench ...` to completion (bounded)
strict_json     -- json.loads that rejects NaN / Infinity
wire helpers    -- build and parse linerate's preamble / messages / TLVs
                   (src/core/proto.h) for raw-socket tests
"""

import json
import re
import socket
import struct
import subprocess
import threading
import time

# Upper bound of lines kept per stream (a server log of a long session).
MAX_LINES = 100_000


class LineCollector:
    """Collect the lines of STREAM (a text or binary pipe) in a daemon
    thread until EOF.  wait_for() blocks (bounded) until a line matches."""

    def __init__(self, stream, name="stream"):
        self.name = name
        self.lines = []
        self.eof = False
        self._cv = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(stream,),
                                        name=f"collect-{name}", daemon=True)
        self._thread.start()

    def _read(self, stream):
        try:
            for _ in range(10 * MAX_LINES):
                raw = stream.readline()
                if not raw:
                    break
                if isinstance(raw, bytes):
                    raw = raw.decode("utf-8", errors="replace")
                with self._cv:
                    if len(self.lines) < MAX_LINES:
                        self.lines.append(raw.rstrip("\r\n"))
                    self._cv.notify_all()
        except (OSError, ValueError):
            pass  # pipe closed under us
        finally:
            with self._cv:
                self.eof = True
                self._cv.notify_all()

    def mark(self):
        """Index of the next line; pass it as since= to skip older lines."""
        with self._cv:
            return len(self.lines)

    def text(self):
        with self._cv:
            return "\n".join(self.lines)

    def find(self, regex, since=0):
        """All matches (re.search) among the lines from index SINCE."""
        pattern = re.compile(regex)
        with self._cv:
            lines = self.lines[since:]
        return [m for m in map(pattern.search, lines) if m]

    def wait_for(self, regex, timeout, since=0):
        """Return the first match of REGEX in a line at index >= SINCE,
        waiting up to TIMEOUT s.  TimeoutError / EOFError otherwise."""
        pattern = re.compile(regex)
        deadline = time.monotonic() + timeout
        seen = since
        with self._cv:
            while True:
                for i in range(seen, len(self.lines)):
                    m = pattern.search(self.lines[i])
                    if m:
                        return m
                seen = max(seen, len(self.lines))
                if self.eof:
                    raise EOFError(
                        f"{self.name} ended without a line matching "
                        f"{pattern.pattern!r}; last lines: "
                        f"{self.lines[-15:]!r}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"no {self.name} line matching {pattern.pattern!r} "
                        f"within {timeout} s; last lines: "
                        f"{self.lines[-15:]!r}")
                self._cv.wait(left)

    def join(self, timeout):
        self._thread.join(timeout)


class LinerateServer:
    """A running `linerate serve`; POPEN may be hosts.popen_b to run it in
    a namespace.  Always stop() it (the `serve` fixture does)."""

    LISTEN_RE = r"^Server listening on (\S+) port (\d+)$"

    def __init__(self, binary, *args, popen=subprocess.Popen, port=0,
                 start_timeout=10):
        args = [str(a) for a in args]
        # iperf3's port only when a test asks for it: serve's default
        # (5201) would be fought over by servers on one host, and taken
        # from a stock iperf3 -s started next to it
        if "--iperf3-port" not in args and "--no-iperf3" not in args:
            args.append("--no-iperf3")
        self.argv = [binary, "serve", "-p", str(port), *args]
        self.proc = popen(self.argv, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.out = LineCollector(self.proc.stdout, "server stdout")
        self.log = LineCollector(self.proc.stderr, "server log")
        try:
            m = self.out.wait_for(self.LISTEN_RE, start_timeout)
        except (TimeoutError, EOFError) as exc:
            self.stop()
            raise RuntimeError(f"{self.argv} did not start: {exc}; log: "
                               f"{self.log.text()!r}") from None
        self.port = int(m.group(2))

    def alive(self):
        return self.proc.poll() is None

    def wait_log(self, regex, timeout=15, since=0):
        return self.log.wait_for(regex, timeout, since)

    def wait_exit(self, timeout):
        rc = self.proc.wait(timeout=timeout)
        self.log.join(5)
        self.out.join(5)
        return rc

    def stop(self, timeout=10):
        """SIGTERM (a clean stop), SIGKILL after TIMEOUT s; returns the
        exit status."""
        if self.proc.poll() is None:
            try:
                self.proc.terminate()
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
            except OSError:
                pass
        self.log.join(5)
        self.out.join(5)
        return self.proc.returncode


def run_bench(binary, *args, timeout=60, run=subprocess.run):
    """Run `linerate bench ARGS` to completion; returns CompletedProcess
    with text stdout/stderr.  RUN may be hosts.run_a."""
    argv = [binary, "bench", *map(str, args)]
    return run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
               stderr=subprocess.PIPE, text=True, timeout=timeout)


class BenchProc:
    """`linerate bench ARGS` running in the background, its output
    collected as it comes.  Use as a context manager: leaving it kills the
    process if it is still running."""

    def __init__(self, binary, *args, popen=subprocess.Popen):
        self.argv = [binary, "bench", *map(str, args)]
        self.proc = popen(self.argv, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.out = LineCollector(self.proc.stdout, "bench stdout")
        self.err = LineCollector(self.proc.stderr, "bench stderr")

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        return False

    def finish(self, timeout):
        """Wait for the exit; returns a CompletedProcess like run_bench."""
        rc = self.proc.wait(timeout=timeout)
        self.out.join(5)
        self.err.join(5)
        out, err = self.out.text(), self.err.text()
        return subprocess.CompletedProcess(
            self.argv, rc, out + "\n" if out else "",
            err + "\n" if err else "")


def describe(res):
    """Failure message for a CompletedProcess."""
    return (f"{res.args!r} exited {res.returncode}\n--- stdout\n"
            f"{res.stdout}\n--- stderr\n{res.stderr}")


def _reject_constant(name):
    raise ValueError(f"non-finite JSON number {name}")


def strict_json(text):
    """json.loads that fails on NaN, Infinity and -Infinity."""
    return json.loads(text, parse_constant=_reject_constant)


def bench_json(binary, *args, timeout=60, run=subprocess.run):
    """run_bench with -J; asserts exit 0 and returns the parsed document."""
    res = run_bench(binary, "-J", *args, timeout=timeout, run=run)
    assert res.returncode == 0, describe(res)
    doc = strict_json(res.stdout)
    assert "error" not in doc, doc.get("error")
    return doc


# ---------------- wire format (src/core/proto.h) ----------------

MAGIC = b"LNRT"
VERSION = 2  # the protocol version linerate speaks (docs/PROTOCOL.md)
PREAMBLE_LEN = 8
HDR_LEN = 8

CTRL_OPEN = 0x01
DATA_OPEN = 0x02
ERROR = 0x03
TEST_REQUEST = 0x10

T_SOFTWARE = 0x0001
T_CODE = 0x0006
T_TEXT = 0x0007

ERR_BUSY = 2
ERR_BAD_REQUEST = 3


def preamble(vmin=VERSION, vmax=VERSION, chosen=0, flags=0):
    return MAGIC + bytes([vmin, vmax, chosen, flags])


def tlv(tag, value):
    return struct.pack(">HH", tag, len(value)) + value


def message(mtype, body=b"", length=None):
    """Header (type, flags 0, reserved 0, LENGTH or len(body)) + body."""
    n = len(body) if length is None else length
    return struct.pack(">BBHI", mtype, 0, 0, n) + body


def ctrl_open(software=b"pytest"):
    return message(CTRL_OPEN, tlv(T_SOFTWARE, software))


def parse_tlvs(body):
    """{tag: value} of a well-formed TLV body (the test's own parser)."""
    out, off = {}, 0
    while off < len(body):
        tag, n = struct.unpack_from(">HH", body, off)
        out[tag] = body[off + 4:off + 4 + n]
        off += 4 + n
    return out


def connect(port, host="127.0.0.1", timeout=10):
    s = socket.create_connection((host, port), timeout=timeout)
    s.settimeout(timeout)
    return s


def recv_exact(sock, n):
    """N bytes, or fewer if the peer closed first."""
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            break
        buf += chunk
    return buf


def recv_until_close(sock, limit=1 << 20):
    """Everything the peer sends until it closes (or resets)."""
    buf = b""
    try:
        while len(buf) < limit:
            chunk = sock.recv(65536)
            if not chunk:
                break
            buf += chunk
    except ConnectionResetError:
        pass
    return buf


def read_preamble(sock):
    data = recv_exact(sock, PREAMBLE_LEN)
    assert len(data) == PREAMBLE_LEN and data[:4] == MAGIC, data
    return {"vmin": data[4], "vmax": data[5], "chosen": data[6],
            "flags": data[7]}


def read_message(sock):
    """(type, {tag: value}) of the next message."""
    hdr = recv_exact(sock, HDR_LEN)
    assert len(hdr) == HDR_LEN, f"short header {hdr!r}"
    mtype, _flags, reserved, n = struct.unpack(">BBHI", hdr)
    assert reserved == 0 and n <= 65536, hdr
    body = recv_exact(sock, n)
    assert len(body) == n, f"short body {body!r}"
    return mtype, parse_tlvs(body)


def read_error(sock):
    """(code, text) of an ERROR message, asserting that is what comes."""
    mtype, tlvs = read_message(sock)
    assert mtype == ERROR, f"expected ERROR, got type 0x{mtype:02x} {tlvs}"
    code = struct.unpack(">I", tlvs[T_CODE])[0]
    return code, tlvs.get(T_TEXT, b"").decode("ascii", errors="replace")
