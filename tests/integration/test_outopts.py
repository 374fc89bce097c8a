# SPDX-License-Identifier: MIT
"""iperf3's output options of bench and serve: -f, --logfile,
--timestamps, --forceflush, -V, -I/--pidfile, and bench's --cport."""

import json
import os
import re
import signal
import socket
import subprocess

import pytest

from lrproc import LineCollector, describe, strict_json
from util import wait_for_listen

LOOP = "127.0.0.1"
RATE_RE = re.compile(r"sec\s+([\d.]+) (\w?Bytes)\s+([\d.]+) (\S+)/sec")
SCALE = {"Bytes": 1, "KBytes": 1 << 10, "MBytes": 1 << 20,
         "GBytes": 1 << 30, "TBytes": 1 << 40}


def bench(binary, port, *args, timeout=60, **kw):
    return subprocess.run([binary, "bench", "-p", str(port), *args, LOOP],
                          stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=timeout, **kw)


def free_ports(n):
    """A local TCP port p with p..p+n-1 free now (bound and let go)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind((LOOP, 0))
            p = s.getsockname()[1]
        if p + n > 65535:
            continue
        socks = []
        try:
            for i in range(n):
                t = socket.socket()
                socks.append(t)
                t.bind((LOOP, p + i))
            return p
        except OSError:
            continue
        finally:
            for t in socks:
                t.close()
    raise AssertionError("no free port range")


@pytest.mark.parametrize("fmt,unit,scale", [
    ("M", "MBytes", 1 << 20), ("K", "KBytes", 1 << 10),
    ("k", "Kbits", 1000 / 8), ("g", "Gbits", 1e9 / 8)])
def test_format_sets_the_rate_unit(serve, linerate_bin, fmt, unit, scale):
    srv = serve()
    res = bench(linerate_bin, srv.port, "-t", "1.5", "-f", fmt)
    assert res.returncode == 0, describe(res)
    rows = [m for m in map(RATE_RE.search, res.stdout.splitlines()) if m]
    assert len(rows) >= 3, res.stdout
    for m in rows:
        assert m.group(4) == unit, m.group(0)
    # the totals' rate agrees with their amount over the time
    tot = [line for line in res.stdout.splitlines()
           if line.rstrip().endswith("receiver")][0]
    secs = re.search(r"0\.00-([\d.]+)\s+sec", tot).group(1)
    m = RATE_RE.search(tot)
    amount = float(m.group(1)) * SCALE[m.group(2)]
    want = amount / float(secs) / scale
    assert abs(float(m.group(3)) - want) <= 0.02 * want + 1, (tot, want)


def test_format_refuses_other_letters(linerate_bin):
    for bad in ("x", "mm", "a"):
        res = bench(linerate_bin, 9, "-f", bad)
        assert res.returncode == 2, describe(res)
        assert "-f" in res.stderr and "Try" in res.stderr, res.stderr


def test_serve_format_sets_the_log_unit(serve, linerate_bin):
    srv = serve("-f", "K")
    res = bench(linerate_bin, srv.port, "-t", "1")
    assert res.returncode == 0, describe(res)
    line = srv.wait_log(r" test \d+ from .*: ok$")
    assert "KBytes/sec" in line.group(0), line.group(0)


def test_logfile_takes_output_and_errors(serve, linerate_bin, tmp_path):
    log = tmp_path / "bench.log"
    srv = serve()
    res = bench(linerate_bin, srv.port, "-t", "1", "--logfile", str(log))
    assert res.returncode == 0, describe(res)
    assert res.stdout == "" and res.stderr == "", describe(res)
    first = log.read_text()
    assert "receiver" in first, first
    # an error goes there too, after what was there (appended)
    with socket.socket() as s:
        s.bind((LOOP, 0))
        closed = s.getsockname()[1]
    res = bench(linerate_bin, closed, "-t", "1", "--no-ssh", "--logfile",
                str(log))
    assert res.returncode == 1, describe(res)
    assert res.stdout == "" and res.stderr == "", describe(res)
    text = log.read_text()
    assert text.startswith(first), text
    assert re.search(r"linerate bench: .*refused", text[len(first):]), text


def test_timestamps_on_every_line_but_not_in_json(serve, linerate_bin):
    srv = serve()
    res = bench(linerate_bin, srv.port, "-t", "1",
                "--timestamps=%H:%M:%S| ")
    assert res.returncode == 0, describe(res)
    lines = res.stdout.splitlines()
    assert len(lines) > 5, res.stdout
    for line in lines:
        assert re.match(r"\d\d:\d\d:\d\d\| ", line), line
    res = bench(linerate_bin, srv.port, "-t", "1", "--timestamps")
    assert res.returncode == 0, describe(res)
    # iperf3's default: "%c " (the locale's date and time)
    assert re.match(r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4} ",
                    res.stdout), res.stdout
    res = bench(linerate_bin, srv.port, "-t", "1", "-J", "--timestamps")
    assert res.returncode == 0, describe(res)
    assert "end" in strict_json(res.stdout)
    # errors are stamped as well
    res = bench(linerate_bin, 9, "-t", "1", "--no-ssh",
                "--timestamps=[stamp] ")
    assert res.returncode == 1, describe(res)
    assert res.stderr.startswith("[stamp] linerate bench: "), res.stderr


def test_forceflush_lines_reach_a_pipe_during_the_test(serve, linerate_bin):
    srv = serve()
    proc = subprocess.Popen([linerate_bin, "bench", "-p", str(srv.port),
                             "-t", "4", "-i", "0.5", "--forceflush", LOOP],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    out = LineCollector(proc.stdout, "bench stdout")
    try:
        out.wait_for(r"0\.50-1\.00\s+sec", 20)
        # an interval line arrived while the test was still running
        assert proc.poll() is None
    finally:
        proc.wait(timeout=30)
        out.join(5)
    assert proc.returncode == 0


def test_verbose_says_version_system_and_test(serve, linerate_bin):
    srv = serve("-V")
    res = bench(linerate_bin, srv.port, "-t", "1", "-P", "2", "-V")
    assert res.returncode == 0, describe(res)
    head = res.stdout.split("Connecting to host", 1)[0]
    assert re.search(r"^linerate \d", head, re.M), head
    assert re.search(r"^%s " % os.uname().sysname, head, re.M), head
    assert re.search(r"^Starting Test: protocol: TCP, 2 streams, \d+ byte "
                     r"blocks, omitting 0 seconds, 1 second test", head,
                     re.M), head
    assert "linerate" in srv.out.text().split("Server listening")[0]


def test_pidfile_while_serving_removed_at_the_end(serve, linerate_bin,
                                                  tmp_path):
    pid = tmp_path / "serve.pid"
    srv = serve("-I", str(pid))
    assert pid.read_text() == f"{srv.proc.pid}\n"
    # a second server with the same pid file: refused, the file kept
    res = subprocess.run([linerate_bin, "serve", "-p", "0", "--no-iperf3",
                          "--pidfile", str(pid)], stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=20)
    assert res.returncode == 1, describe(res)
    assert f"process {srv.proc.pid}" in res.stderr, res.stderr
    assert pid.read_text() == f"{srv.proc.pid}\n"
    assert srv.stop() == 0
    assert not pid.exists()
    # a stale file (its process gone) is taken over
    pid.write_text(f"{srv.proc.pid}\n")
    srv2 = serve("-I", str(pid))
    assert pid.read_text() == f"{srv2.proc.pid}\n"
    srv2.stop()
    assert not pid.exists()


def test_cport_streams_from_consecutive_ports(serve, linerate_bin):
    srv = serve()
    port = free_ports(3)
    res = bench(linerate_bin, srv.port, "-t", "1", "-P", "3", "--cport",
                str(port))
    assert res.returncode == 0, describe(res)
    got = sorted(int(p) for p in re.findall(
        r"local \S+ port (\d+) connected", res.stdout))
    assert got == [port, port + 1, port + 2], res.stdout


def test_cport_against_stock_iperf3(linerate_bin, iperf3, tmp_path):
    with socket.socket() as s:
        s.bind((LOOP, 0))
        sport = s.getsockname()[1]
    srv = subprocess.Popen([iperf3, "-s", "-1", "-J", "-p", str(sport),
                            "-B", LOOP], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    try:
        wait_for_listen(subprocess.run, sport, timeout=10)
        port = free_ports(2)
        res = bench(linerate_bin, sport, "--iperf3", "-t", "1", "-P", "2",
                    "--cport", str(port))
        assert res.returncode == 0, describe(res)
        out, _ = srv.communicate(timeout=30)
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait(timeout=10)
    doc = json.loads(out)
    ports = sorted(c["remote_port"] for c in doc["start"]["connected"])
    assert ports == [port, port + 1], ports



def test_timestamps_keep_output_and_errors_in_order(linerate_bin, tmp_path):
    """-V's lines (standard output) come before the error (standard
    error) in the one log, each line stamped once."""
    log = tmp_path / "bench.log"
    for _ in range(5):
        res = bench(linerate_bin, 9, "-V", "--no-ssh", "--logfile", str(log),
                    "--timestamps=[s] ")
        assert res.returncode == 1, describe(res)
    lines = log.read_text().splitlines()
    assert all(line.startswith("[s] ") and not line.startswith("[s] [s]")
               for line in lines), lines
    runs = [i for i, line in enumerate(lines)
            if re.match(r"\[s\] linerate \d", line)]
    assert len(runs) == 5, lines
    for start, end in zip(runs, runs[1:] + [len(lines)]):
        run = lines[start:end]
        assert "linerate bench: " in run[-1], run
        assert not any("linerate bench: " in line for line in run[:-1]), run


def test_pidfile_is_never_a_fifo_nor_a_symlink(linerate_bin, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    res = bench(linerate_bin, 9, "--no-ssh", "-I", str(fifo), timeout=20)
    assert res.returncode == 1, describe(res)
    assert "not a regular file" in res.stderr, res.stderr
    target = tmp_path / "target"
    target.write_text("keep\n")
    link = tmp_path / "link"
    link.symlink_to(target)
    res = bench(linerate_bin, 9, "--no-ssh", "-I", str(link), timeout=20)
    assert res.returncode == 1, describe(res)
    assert target.read_text() == "keep\n"


def test_pidfile_removed_when_a_signal_ends_it(serve, linerate_bin,
                                                tmp_path):
    srv = serve()
    pid = tmp_path / "bench.pid"
    proc = subprocess.Popen([linerate_bin, "bench", "-p", str(srv.port),
                             "-t", "30", "-i", "0.2", "--forceflush", "-I",
                             str(pid), LOOP], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = LineCollector(proc.stdout, "bench stdout")
    try:
        out.wait_for(r"0\.00-0\.20\s+sec", 20)
        assert pid.read_text() == f"{proc.pid}\n"
        proc.terminate()
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        out.join(5)
    assert not pid.exists()
    # serve: SIGHUP ends it the clean way too
    spid = tmp_path / "serve.pid"
    srv2 = serve("-I", str(spid))
    assert spid.exists()
    srv2.proc.send_signal(signal.SIGHUP)
    srv2.proc.wait(timeout=20)
    assert srv2.proc.returncode == 0, srv2.proc.returncode
    assert not spid.exists()


def test_cport_bounds_and_a_second_run_from_the_same_ports(serve,
                                                           linerate_bin):
    res = bench(linerate_bin, 9, "--cport", "65535", "-P", "2")
    assert res.returncode == 2, describe(res)
    assert "65536" in res.stderr and "Try" in res.stderr, res.stderr
    srv = serve()
    port = free_ports(2)
    for _ in range(2):
        res = bench(linerate_bin, srv.port, "-t", "0.5", "-P", "2",
                    "--cport", str(port))
        assert res.returncode == 0, describe(res)
