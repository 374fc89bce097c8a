# SPDX-License-Identifier: MIT
"""The command line: client-side failures (exit 1 with one clear line),
usage errors (exit 2 naming the option and value), help and version."""

import contextlib
import os
import pathlib
import re
import socket
import subprocess
import threading
import time

import pytest

from lrproc import describe, run_bench

LOOP = "127.0.0.1"
# every message of a command starts with "linerate CMD: "
ERROR_RE = re.compile(r"linerate [a-z]+: ")


def run_linerate(binary, *args, timeout=30):
    return subprocess.run([binary, *args], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)


def one_error_line(res):
    """The single stderr line of a failed run, without its prefix."""
    lines = res.stderr.splitlines()
    assert len(lines) == 1, describe(res)
    m = ERROR_RE.match(lines[0])
    assert m, describe(res)
    return lines[0][m.end():]


@contextlib.contextmanager
def fake_server(handler):
    """A TCP listener on 127.0.0.1:0 whose connections go to
    HANDLER(conn) in a thread; yields the port.  Closes everything."""
    lsock = socket.socket()
    lsock.bind((LOOP, 0))
    lsock.listen(8)
    lsock.settimeout(0.2)
    stop = threading.Event()
    conns = []

    def loop():
        while not stop.is_set():
            try:
                conn, _ = lsock.accept()
            except (socket.timeout, OSError):
                continue
            conn.settimeout(15)
            conns.append(conn)
            threading.Thread(target=handler, args=(conn,),
                             daemon=True).start()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield lsock.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        lsock.close()
        for c in conns:
            c.close()


# ---------------- runtime failures: exit 1 ----------------

def test_connection_refused(linerate_bin):
    with socket.socket() as holder:  # bound, not listening: refused
        holder.bind((LOOP, 0))
        port = holder.getsockname()[1]
        res = run_bench(linerate_bin, "-t", "1", f"{LOOP}:{port}",
                        timeout=30)
    assert res.returncode == 1, describe(res)
    assert one_error_line(res) == \
        f"connect {LOOP}:{port}: Connection refused"


def test_server_that_never_answers(linerate_bin):
    # accepts, reads the request, says nothing
    def silent(conn):
        with contextlib.suppress(OSError):
            while conn.recv(4096):
                pass

    with fake_server(silent) as port:
        t0 = time.monotonic()
        res = run_bench(linerate_bin, "-t", "1", f"{LOOP}:{port}",
                        timeout=30)
        elapsed = time.monotonic() - t0
    assert res.returncode == 1, describe(res)
    msg = one_error_line(res)
    assert f"{LOOP}:{port}" in msg and "did not answer" in msg, msg
    assert elapsed < 13, f"gave up only after {elapsed:.1f} s"


@pytest.mark.parametrize("value,low,high", [("1000", 0.9, 5), ("1s", 0.9, 5),
                                            ("300ms", 0.25, 0.9)])
def test_connect_timeout(linerate_bin, value, low, high):
    # iperf3's unit: a bare number is milliseconds, "s" and "ms" say so.
    # A listener with a full accept queue drops new SYNs: connect hangs
    with socket.socket() as lsock, socket.socket() as filler:
        lsock.bind((LOOP, 0))
        lsock.listen(0)
        port = lsock.getsockname()[1]
        filler.settimeout(5)
        filler.connect((LOOP, port))  # now queued: the queue is full
        t0 = time.monotonic()
        res = run_bench(linerate_bin, "--connect-timeout", value, "-t", "1",
                        f"{LOOP}:{port}", timeout=30)
        elapsed = time.monotonic() - t0
    assert res.returncode == 1, describe(res)
    assert one_error_line(res) == f"connect {LOOP}:{port}: timed out"
    assert low <= elapsed < high, \
        f"--connect-timeout {value} took {elapsed:.2f} s"


def test_not_a_linerate_server(linerate_bin):
    def http(conn):
        with contextlib.suppress(OSError):
            conn.recv(4096)
            conn.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")
            conn.shutdown(socket.SHUT_WR)
            while conn.recv(4096):
                pass

    with fake_server(http) as port:
        res = run_bench(linerate_bin, "-t", "1", f"{LOOP}:{port}",
                        timeout=30)
    assert res.returncode == 1, describe(res)
    msg = one_error_line(res)
    assert "does not speak the linerate protocol" in msg, msg


def test_server_closing_without_a_word(linerate_bin):
    def hang_up(conn):
        conn.close()

    with fake_server(hang_up) as port:
        res = run_bench(linerate_bin, "-t", "1", f"{LOOP}:{port}",
                        timeout=30)
    assert res.returncode == 1, describe(res)
    msg = one_error_line(res)
    assert "not a linerate server" in msg or "reset" in msg.lower(), msg


def test_server_duration_limit(serve, linerate_bin):
    srv = serve("--max-duration", "5")
    res = run_bench(linerate_bin, "-t", "10", f"{LOOP}:{srv.port}",
                    timeout=30)
    assert res.returncode == 1, describe(res)
    msg = one_error_line(res)
    assert "10.0 s" in msg and "limit of 5.0 s" in msg, msg
    assert "--max-duration" in msg
    srv.wait_log(r"test 1 from .*: failed: .*--max-duration")
    # within the limit it works
    res = run_bench(linerate_bin, "-t", "0.5", "-i", "0",
                    f"{LOOP}:{srv.port}")
    assert res.returncode == 0, describe(res)


def test_env_token_against_a_tokenless_server(serve, linerate_bin):
    """A token taken from LINERATE_TOKEN, refused by a server that has
    none: the error says where the token came from and how to leave it
    out; without it the bench runs."""
    srv = serve()
    tok = subprocess.run([linerate_bin, "token"], capture_output=True,
                         text=True).stdout.strip()
    env = dict(os.environ, LINERATE_TOKEN=tok)
    res = subprocess.run([linerate_bin, "bench", "-t", "0.5",
                          f"{LOOP}:{srv.port}"], stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=30, env=env)
    assert res.returncode == 1, describe(res)
    msg = one_error_line(res)
    assert "has no token" in msg and "LINERATE_TOKEN" in msg, msg
    assert "env -u LINERATE_TOKEN" in msg, msg
    del env["LINERATE_TOKEN"]
    res = subprocess.run([linerate_bin, "bench", "-t", "0.5", "-i", "0",
                          f"{LOOP}:{srv.port}"], stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=30, env=env)
    assert res.returncode == 0, describe(res)


# ---------------- usage errors: exit 2 ----------------

# The host is a closed port: an option wrongly accepted would make the run
# fail at connect (exit 1) instead of passing unnoticed.
CLOSED = f"{LOOP}:1"

USAGE = [
    (["-t", "abc", CLOSED], ["-t", "abc"]),
    (["-t", "0", CLOSED], ["-t", "'0'"]),
    (["-P", "0", CLOSED], ["-P", "'0'"]),
    (["-P", "129", CLOSED], ["-P", "129"]),
    (["-l", "0", CLOSED], ["-l", "'0'"]),
    (["-l", "lots", CLOSED], ["-l", "lots"]),
    (["-n", "-5", CLOSED], ["-n", "-5"]),
    (["-i", "0.01", CLOSED], ["-i", "0.01"]),
    (["-w", "1", CLOSED], ["-w", "'1'"]),
    (["-M", "10", CLOSED], ["-M", "10"]),
    (["-Z=foo", CLOSED], ["-Z", "foo"]),
    (["-p", "0", CLOSED], ["-p", "'0'"]),
    (["--link-speed", "fast", CLOSED], ["--link-speed", "fast"]),
    (["--connect-timeout", "x", CLOSED], ["--connect-timeout", "x"]),
    (["--connect-timeout", "5M", CLOSED], ["--connect-timeout", "5M"]),
    (["--connect-timeout", "50", CLOSED], ["--connect-timeout", "'50'"]),
    (["-t", "1", "-n", "1M", CLOSED], ["-t", "-n"]),
    (["-R", "--bidir", CLOSED], ["-R", "--bidir"]),
    (["-t", "1"], ["missing HOST"]),
    ([], ["missing HOST"]),
    (["--frobnicate", CLOSED], ["--frobnicate"]),
    (["-q", CLOSED], ["unknown option '-q'"]),
    ([f"{LOOP}:99999"], ["99999"]),
    ([CLOSED, "extra"], ["HOST"]),
]


@pytest.mark.parametrize("args,words", USAGE,
                         ids=[" ".join(a) or "no-args" for a, _ in USAGE])
def test_bench_usage_error(linerate_bin, args, words):
    res = run_linerate(linerate_bin, "bench", *args)
    assert res.returncode == 2, describe(res)
    assert res.stdout == ""
    for w in words:
        assert w in res.stderr, f"{w!r} not named in: {res.stderr!r}"
    assert "linerate bench --help" in res.stderr


@pytest.mark.parametrize("args", [["--max-tests", "0"], ["-p", "70000"],
                                  ["--max-duration", "0.5"],
                                  ["--handshake-timeout", "x"],
                                  ["extra"], ["--frobnicate"]],
                         ids=lambda a: " ".join(a))
def test_serve_usage_error(linerate_bin, args):
    res = run_linerate(linerate_bin, "serve", *args, timeout=10)
    assert res.returncode == 2, describe(res)
    assert res.stdout == ""
    assert args[-1] in res.stderr, res.stderr


@pytest.mark.parametrize("args", [[], ["frobnicate"], ["help", "frobnicate"]],
                         ids=["no-command", "unknown", "help-unknown"])
def test_command_usage_error(linerate_bin, args):
    res = run_linerate(linerate_bin, *args, timeout=10)
    assert res.returncode == 2, describe(res)
    if args:
        assert "'frobnicate'" in res.stderr


# ---------------- help and version: exit 0 ----------------

@pytest.mark.parametrize("args,first", [
    (["--version"], "linerate "),
    (["version"], "linerate "),
    (["help"], "usage: linerate <command>"),
    (["--help"], "usage: linerate <command>"),
    (["help", "bench"], "usage: linerate bench"),
    (["bench", "--help"], "usage: linerate bench"),
    (["bench", "-h"], "usage: linerate bench"),
    (["serve", "--help"], "usage: linerate serve"),
    (["help", "--help"], "usage: linerate <command>"),
    (["help", "help"], "usage: linerate <command>"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_help_and_version(linerate_bin, args, first):
    res = run_linerate(linerate_bin, *args, timeout=10)
    assert res.returncode == 0, describe(res)
    assert res.stdout.startswith(first), res.stdout
    assert res.stderr == ""


def test_version_format(linerate_bin):
    res = run_linerate(linerate_bin, "--version", timeout=10)
    assert res.returncode == 0
    assert len(res.stdout.splitlines()) == 1
    assert res.stdout.split()[1][0].isdigit(), res.stdout


def test_help_lists_every_bench_option(linerate_bin):
    out = run_linerate(linerate_bin, "bench", "--help", timeout=10).stdout
    for opt in ("--time", "--bytes", "--interval", "--parallel", "--reverse",
                "--bidir", "--omit", "--length", "--window", "--congestion",
                "--set-mss", "--zerocopy", "--ipv4", "--ipv6", "--bind",
                "--json", "--json-stream", "--link-speed",
                "--connect-timeout"):
        assert opt in out, opt
    out = run_linerate(linerate_bin, "serve", "--help", timeout=10).stdout
    for opt in ("--port", "--bind", "--once", "--max-tests",
                "--max-duration", "--handshake-timeout"):
        assert opt in out, opt


RANGES = [
    (["send", "--chunk", "16M", "x", "h:"], "out of range (64K to 8M)"),
    (["bench", "-w", "100", "h"], "out of range (1K to 256M)"),
    (["bench", "-n", "0", "h"], "too small (at least 1)"),
    (["bench", "-n", "99999999T", "h"], "too large (at most 8 EiB)"),
    (["bench", "--link-speed", "5", "h"], "too small (at least 1k bits/s)"),
    (["bench", "-b", "99999999t", "h"], "too large (at most 9.22 Ebits/s)"),
    (["disk", "-s", "3", "."], "out of range (4K to 1T)"),
    # --limit is bytes/s (rsync's --bwlimit), bits/s with "bit"
    (["send", "--limit", "99999999T", "x", "h:"],
     "too large (at most 8 EiB/s)"),
    (["send", "--limit", "10", "x", "h:"],
     "too small (at least 1000 bytes/s)"),
    (["get", "--limit", "99999999tbit", "h:x"],
     "too large (at most 9.22 Ebits/s)"),
    (["serve", "--partial-max-size", "99999999T"],
     "too large (at most 8 EiB)"),
    # durations: in seconds, minutes, hours, whatever the option's unit
    (["send", "--timeout", "5000ms", "x", "h:"],
     "out of range (10 s to 24 h, or 0)"),
    (["get", "--timeout", "2d", "h:x"], "out of range (10 s to 24 h, or 0)"),
    (["send", "--connect-timeout", "99999999", "x", "h:"],
     "out of range (100 ms to 1 h)"),
    (["get", "--connect-timeout", "50", "h:x"],
     "out of range (100 ms to 1 h)"),
    (["bench", "--connect-timeout", "2h", "h"], "out of range (100 ms to 1 h)"),
    (["bench", "-t", "0", "h"], "out of range (100 ms to 24 h)"),
    (["bench", "-t", "99999999", "h"], "out of range (100 ms to 24 h)"),
    (["bench", "-i", "0.01", "h"], "out of range (100 ms to 1 h, or 0)"),
    (["bench", "-O", "2h", "h"], "out of range (0 to 1 h)"),
    (["doctor", "-t", "2m", "h"], "out of range (500 ms to 1 min)"),
    (["crypto", "-s", "1m"], "out of range (50 ms to 10 s)"),
    (["serve", "--max-duration", "500ms"], "out of range (1 s to 24 h)"),
    (["serve", "--handshake-timeout", "1h"],
     "out of range (100 ms to 10 min)"),
    (["serve", "--partial-max-age", "99999w"], "out of range (0 to 36500 d)"),
]


@pytest.mark.parametrize("args,want", RANGES,
                         ids=[" ".join(a) for a, _ in RANGES])
def test_ranges_in_the_options_own_units(linerate_bin, args, want):
    """A value out of range is told the range as the option takes it,
    never as a raw count such as 9223372036854775807 or 86400000 ms, and
    a value beyond a cap no one meets is told "too large", not "at least
    MIN"."""
    res = run_linerate(linerate_bin, *args, timeout=10)
    assert res.returncode == 2, describe(res)
    line = res.stderr.splitlines()[0]
    assert line.endswith(f"'{args[2]}' is {want}"), line
    assert not re.search(r"\d{7,}", line.split("' is ")[-1]), line


# The duration options of every command, as its --help names them (a
# value SEC, S, MS or AGE), and which of 500ms, 2s and 1m each takes (the
# others are out of its range).
ALL3 = {"500ms", "2s", "1m"}
DURATIONS = {
    ("bench", "--time"): ALL3,
    ("bench", "--interval"): ALL3,
    ("bench", "--omit"): ALL3,
    ("bench", "--connect-timeout"): ALL3,
    ("doctor", "--time"): ALL3,
    ("crypto", "--seconds"): {"500ms", "2s"},
    ("serve", "--max-duration"): {"2s", "1m"},
    ("serve", "--handshake-timeout"): ALL3,
    ("serve", "--partial-max-age"): ALL3,
    ("send", "--connect-timeout"): ALL3,
    ("send", "--timeout"): {"1m"},
    ("get", "--connect-timeout"): ALL3,
    ("get", "--timeout"): {"1m"},
}
DURATION_HELP = re.compile(
    r"^ +(?:-(\w), )?(--[a-z0-9-]+) (?:SEC|S|MS|AGE)\b", re.M)


def _duration_options(linerate_bin):
    """{(command, long option): its letter or None} from every --help."""
    found = {}
    for cmd in _commands(linerate_bin):
        out = run_linerate(linerate_bin, cmd, "--help", timeout=10).stdout
        for m in DURATION_HELP.finditer(out):
            found[(cmd, m.group(2))] = m.group(1)
    return found


def _parsed(linerate_bin, cmd, *args):
    """The first line of CMD ARGS --frobnicate: that unknown option is
    named only when everything before it was taken (no network)."""
    res = run_linerate(linerate_bin, cmd, *args, "--frobnicate", timeout=10)
    assert res.returncode == 2, describe(res)
    return res.stderr.splitlines()[0]


def test_every_duration_option_takes_ms_s_and_m(linerate_bin):
    """One grammar for every duration: a bare number in the option's unit,
    or ms, s, m (minutes), h; out of range is said in human units."""
    found = _duration_options(linerate_bin)
    assert set(found) == set(DURATIONS), sorted(found)
    for (cmd, opt), letter in sorted(found.items()):
        for name in [opt] + ([f"-{letter}"] if letter else []):
            for value in sorted(ALL3):
                line = _parsed(linerate_bin, cmd, name, value)
                if value in DURATIONS[(cmd, opt)]:
                    assert line.endswith("unknown option '--frobnicate'"), \
                        (cmd, name, value, line)
                else:
                    assert f"'{value}' is out of range (" in line, \
                        (cmd, name, value, line)
                    assert not re.search(r"\d{7,}", line), line
                    assert re.search(r"\(\d+ (ms|s|min|h)\b", line), line


@pytest.mark.parametrize("cmd,args", [
    ("bench", ["--connect-timeout", "500"]),   # bare: milliseconds
    ("send", ["--connect-timeout", "2500"]),
    ("bench", ["-t", "1.5"]),                  # bare: seconds
    ("send", ["--timeout", "0"]),              # 0: no limit
    ("send", ["--timeout", "0s"]),
    ("get", ["--timeout", "0ms"]),
    ("send", ["--timeout", "1.5m"]),
    ("bench", ["-i", "0"]),
    ("bench", ["-t", "1h"]),
    ("serve", ["--max-duration", "0.5h"]),
    ("serve", ["--partial-max-age", "1.5d"]),
    ("crypto", ["-s", "0.05s"]),
], ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_durations_taken(linerate_bin, cmd, args):
    """A bare number is in the option's unit; 0 is --timeout's none."""
    line = _parsed(linerate_bin, cmd, *args)
    assert line.endswith("unknown option '--frobnicate'"), line


@pytest.mark.parametrize("cmd,args", [
    ("bench", ["-t", "5mss"]), ("bench", ["-t", "-1"]),
    ("bench", ["-t", "1e3"]), ("bench", ["-t", "5M"]),
    ("send", ["--timeout", "1 m"]), ("serve", ["--partial-max-age", "7days"]),
    ("bench", ["--connect-timeout", "5sec"]),
], ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_durations_refused(linerate_bin, cmd, args):
    """Not a duration: the message shows what one looks like."""
    line = _parsed(linerate_bin, cmd, *args)
    assert f"'{args[1]}' is not a" in line, line
    assert re.search(r" such as .*\b[0-9]+m\b", line), line


def test_disk_space_said_in_mib(linerate_bin, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs",
                    str(mnt)], check=True)
    try:
        res = run_linerate(linerate_bin, "disk", "-s", "4M", str(mnt),
                           timeout=30)
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)
    assert res.returncode == 1, describe(res)
    assert re.search(r"has 1\.00 MiB free, the test needs 4\.00 MiB",
                     res.stderr), res.stderr


def _commands(linerate_bin):
    """The commands `linerate --help` lists, in its order."""
    out = run_linerate(linerate_bin, "--help", timeout=10).stdout
    body = out.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in body.splitlines()]


def test_command_list_in_order_and_in_the_man_page(linerate_bin):
    """The list is alphabetical (help and version last); every command's
    --help and the man page are free of format residue; the man page's
    SYNOPSIS names every command."""
    cmds = _commands(linerate_bin)
    work = [c for c in cmds if c not in ("help", "version")]
    assert work == sorted(work), cmds
    assert cmds[-2:] == ["help", "version"], cmds
    for c in work:
        res = run_linerate(linerate_bin, c, "--help", timeout=10)
        assert res.returncode == 0, describe(res)
        assert "%%" not in res.stdout and not re.search(
            r"%[-0-9.]*[sdulfx]", res.stdout), (c, res.stdout)
    man = (pathlib.Path(__file__).resolve().parents[2] / "docs" /
           "linerate.1").read_text()
    assert "%%" not in man and not re.search(r"%[-0-9.]*[sdulfx]", man), \
        re.search(r"%%|%[-0-9.]*[sdulfx]", man)
    synopsis = man.split(".SH SYNOPSIS", 1)[1].split(".SH ", 1)[0]
    for c in cmds:
        assert re.search(r"^\.B linerate %s\b" % c, synopsis, re.M), c


@pytest.mark.parametrize("kind", ["read-only", "full"])
def test_recv_checks_its_directory_before_listening(linerate_bin, tmp_path,
                                                    kind):
    """`recv DIR` on a read-only or full file system says so and exits
    before it prints a token and waits for a sender."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    opts = "ro,size=1m" if kind == "read-only" else "size=64k"
    subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(mnt)],
                   check=True)
    try:
        if kind == "full":
            with open(mnt / "fill", "wb") as f:
                with contextlib.suppress(OSError):
                    f.write(b"\0" * (1 << 20))
        res = run_linerate(linerate_bin, "recv", "-p", "0",
                           str(mnt / "in"), timeout=10)
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
    assert res.returncode == 1, describe(res)
    assert "token" not in res.stdout.lower(), describe(res)
    want = ("a read-only file system" if kind == "read-only"
            else "no space left")
    assert want in res.stderr and "nothing could be received" in \
        res.stderr, describe(res)


def test_failed_before_a_session_names_no_cipher(linerate_bin, tmp_path):
    """A send that never connected: its JSON end event has no cipher
    (not "none", which reads as data sent in clear)."""
    f = tmp_path / "f"
    f.write_bytes(b"x")
    tok = tmp_path / "tok"
    tok.write_text(run_linerate(linerate_bin, "token").stdout)
    res = run_linerate(linerate_bin, "send", "--json", "--token-file",
                       str(tok), "-p", "1", str(f), f"{LOOP}:")
    assert res.returncode == 1, describe(res)
    end = [ln for ln in res.stdout.splitlines() if '"end"' in ln]
    assert end and '"cipher"' not in end[-1], describe(res)
    assert '"ok":false' in end[-1].replace(" ", ""), describe(res)


def test_a_host_without_a_path_says_what_to_write(linerate_bin, tmp_path):
    """get HOST DEST and send FILE HOST: the hint names HOST:PATH below
    the server's root and ./NAME for a local name, and promises nothing
    get refuses (get HOST: alone is refused: no path)."""
    f = tmp_path / "f"
    f.write_text("x\n")
    for argv in (["get", "127.0.0.1", str(tmp_path)],
                 ["send", str(f), "127.0.0.1"]):
        res = subprocess.run([linerate_bin, *argv], capture_output=True,
                             text=True, timeout=20, stdin=subprocess.DEVNULL)
        assert res.returncode == 2, describe(res)
        assert "write HOST:PATH, a path below the server's root " \
               "(./127.0.0.1 for a local name)" in res.stderr, res.stderr
    res = subprocess.run([linerate_bin, "get", "127.0.0.1:", str(tmp_path)],
                         capture_output=True, text=True, timeout=20,
                         stdin=subprocess.DEVNULL)
    assert res.returncode == 2, describe(res)
    assert "name a file or directory below the root" in res.stderr
