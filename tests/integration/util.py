# SPDX-License-Identifier: MIT
"""Condition-waiting helpers for the integration tests (no bare sleeps)."""

import queue
import re
import subprocess
import threading
import time

# Upper bound on lines wait_for_line() reads before giving up.
MAX_LINES = 100_000

_EOF = object()


def wait_for_line(proc_stream, regex, timeout):
    """Read lines from PROC_STREAM (e.g. ``proc.stdout``, text or binary)
    in a background thread until one matches REGEX (``re.search``, str
    pattern or compiled str pattern; the line is matched without its line
    ending).  Returns the match object.

    Raises TimeoutError if nothing matched within TIMEOUT seconds and
    EOFError if the stream ended first; both carry the lines read in
    ``.lines``.

    The reader stops right after the matching line, so the rest of the
    output stays in the pipe for the caller (drain it, e.g. with
    ``proc.communicate()``, if the process may write a lot).  After a
    timeout the daemon reader thread may still consume one more line.
    """
    pattern = re.compile(regex) if isinstance(regex, str) else regex
    items = queue.Queue()

    def reader():
        try:
            for _ in range(MAX_LINES):
                raw = proc_stream.readline()
                if not raw:
                    items.put(_EOF)
                    return
                if isinstance(raw, bytes):
                    raw = raw.decode("utf-8", errors="replace")
                line = raw.rstrip("\r\n")
                match = pattern.search(line)
                items.put((line, match))
                if match:
                    return
            items.put(RuntimeError(f"no match in {MAX_LINES} lines"))
        except Exception as exc:  # reported to the waiting thread
            items.put(exc)

    threading.Thread(target=reader, name="wait_for_line",
                     daemon=True).start()

    lines = []
    deadline = time.monotonic() + timeout
    for _ in range(MAX_LINES + 2):
        remaining = max(0.0, deadline - time.monotonic())
        try:
            item = items.get(timeout=remaining)
        except queue.Empty:
            err = TimeoutError(
                f"no line matching {pattern.pattern!r} within {timeout} s; "
                f"got {len(lines)} line(s): {lines[-20:]!r}")
            err.lines = lines
            raise err from None
        if item is _EOF:
            err = EOFError(
                f"stream ended without a line matching "
                f"{pattern.pattern!r}; got: {lines[-20:]!r}")
            err.lines = lines
            raise err
        if isinstance(item, Exception):
            raise item
        line, match = item
        lines.append(line)
        if match:
            return match
    raise RuntimeError("unreachable: reader produced too many items")


def wait_until(predicate, timeout, interval=0.05, what="condition"):
    """Poll PREDICATE() until it returns a truthy value, which is returned.

    Bounded in time (TIMEOUT s) and count (TIMEOUT / INTERVAL + 1 polls).
    Raises TimeoutError naming WHAT.
    """
    deadline = time.monotonic() + timeout
    for _ in range(int(timeout / interval) + 1):
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            break
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout} s waiting for {what}")


def wait_for_listen(run, port, timeout=5.0, proto="tcp"):
    """Wait until something listens on PORT, as seen by RUN (e.g.
    ``hosts.run_b``, which runs a command in that host's namespace).

    Checks the socket table with ``ss`` instead of connecting: a probe
    connection would be served as a client by one-shot servers such as
    ``iperf3 -s -1`` (which then exits).
    """
    flag = {"tcp": "-Hltn", "udp": "-Hlun"}[proto]

    def listening():
        res = run(["ss", flag, f"sport = :{port}"],
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                  text=True, timeout=10)
        return res.returncode == 0 and res.stdout.strip() != ""

    return wait_until(listening, timeout, what=f"{proto} port {port} "
                      f"to listen")
