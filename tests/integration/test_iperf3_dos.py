# SPDX-License-Identifier: MIT
"""One host must not lock stock iperf3 clients out of `linerate serve
--iperf3-port` (needs root and iperf3; skipped with the reason
otherwise).  Host A attacks, then a real `iperf3 -c` from host A must
still run:

1. 70 connections that never send a cookie (more than the server's
   table of 64): the oldest give their places up;
2. an idle connection that holds back a complete cookie with extra
   bytes and a close: the listener does not spin;
3. 6 connections that send a valid cookie and then nothing: they do
   not take the test slots (--max-tests 2 here).

The attacker is this file run as a script in host A.  Nothing here
asserts a speed; every wait is bounded.
"""

import json
import os
import secrets
import struct
import subprocess
import sys
import time

from util import wait_for_line, wait_for_listen

PORT = 5402
COOKIE_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"
HERE = os.path.abspath(__file__)


def start(serve, hosts, *args):
    srv = serve("-B", hosts.addr_b, "--iperf3-port", str(PORT), *args,
                popen=hosts.popen_b)
    try:
        wait_for_listen(hosts.run_b, PORT, timeout=10, proto="tcp")
    except TimeoutError as exc:
        raise AssertionError(f"{exc}; log: {srv.log.text()!r}") from None
    return srv


def attack(hosts, *args):
    """This file as a script in host A; returns it once it says ready."""
    proc = hosts.popen_a([sys.executable, HERE, *args, hosts.addr_b,
                          str(PORT)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        wait_for_line(proc.stdout, r"^ready", timeout=15)
    except (TimeoutError, EOFError):
        proc.kill()
        out, err = proc.communicate(timeout=10)
        raise AssertionError(f"attacker {args}: {out}\n{err}") from None
    return proc


def stop(proc):
    if proc.poll() is None:
        proc.kill()
    proc.communicate(timeout=10)


def real_client(hosts, srv):
    res = hosts.run_a(["iperf3", "-c", hosts.addr_b, "-p", str(PORT),
                       "-t", "1", "-J"], capture_output=True, text=True,
                      timeout=40)
    assert res.returncode == 0, f"iperf3 -c: exit {res.returncode}\n" \
        f"{res.stdout}\n{res.stderr}\n--- serve log\n{srv.log.text()}"
    doc = json.loads(res.stdout)
    assert "error" not in doc, doc["error"]
    assert doc["end"]["sum_received"]["bytes"] > 0


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def test_many_idle_connections_from_one_host(hosts, serve, iperf3):
    srv = start(serve, hosts)
    att = attack(hosts, "idle", "70")
    try:
        real_client(hosts, srv)
    finally:
        stop(att)
    assert srv.alive()


def test_held_cookie_with_data_does_not_spin(hosts, serve, iperf3):
    srv = start(serve, hosts, "--handshake-timeout", "3")
    since = srv.log.mark()
    att = attack(hosts, "held")
    try:
        t0 = cpu_ticks(srv.proc.pid)
        w0 = time.monotonic()
        # the held cookie waits until the idle connection before it runs
        # out of time (3 s): measure the listener over that whole wait
        srv.wait_log(r"rejected: no iperf3 cookie in time", timeout=15,
                     since=since)
        used = cpu_ticks(srv.proc.pid) - t0
        waited = time.monotonic() - w0
    finally:
        stop(att)
    hz = os.sysconf("SC_CLK_TCK")
    # a spinning listener burns a core: about HZ ticks per second waited
    assert used < hz * waited / 4, \
        f"serve used {used} ticks (of {hz}/s) in {waited:.1f} s"
    real_client(hosts, srv)


def test_idle_cookie_senders_do_not_take_test_slots(hosts, serve, iperf3):
    srv = start(serve, hosts, "--max-tests", "2")
    att = attack(hosts, "cookie", "6")
    try:
        real_client(hosts, srv)
    finally:
        stop(att)
    assert srv.alive()


# ---------------- the attacker (run in host A) ----------------

def _cookie():
    return ("".join(secrets.choice(COOKIE_ALPHABET) for _ in range(36))
            .encode() + b"\0")


def _connect(host, port):
    import socket
    return socket.create_connection((host, port), timeout=5)


def _main(argv):
    mode, host, port = argv[0], argv[-2], int(argv[-1])
    socks = []
    if mode in ("idle", "cookie"):
        for _ in range(int(argv[1])):
            s = _connect(host, port)
            if mode == "cookie":
                s.sendall(_cookie())
            socks.append(s)
    elif mode == "held":
        # a test waiting for 2 streams; the first connects and sends
        # nothing, the second sends its cookie, more, and closes
        cookie = _cookie()
        ctl = _connect(host, port)
        ctl.sendall(cookie)
        assert ctl.recv(1) == bytes([9]), "no PARAM_EXCHANGE"
        p = json.dumps({"tcp": True, "omit": 0, "time": 2, "parallel": 2,
                        "len": 131072}).encode()
        ctl.sendall(struct.pack(">I", len(p)) + p)
        assert ctl.recv(1) == bytes([10]), "no CREATE_STREAMS"
        # connected one after the other: accepted in this order
        socks += [ctl, _connect(host, port)]
        s = _connect(host, port)
        s.sendall(cookie + b"junk" * 100)
        s.shutdown(1)
        socks.append(s)
    else:
        return 2
    print(f"ready {len(socks)}", flush=True)
    # hold the connections until the test closes our stdin (or kills us)
    sys.stdin.read()
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
