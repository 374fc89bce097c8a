# SPDX-License-Identifier: MIT
"""Helpers for the iperf3 interoperability tests (test_iperf3.py).

Stock iperf3 as a peer     -- start_iperf3_server / finish_iperf3_server,
                              run_iperf3_client
Reading two reports        -- direction_totals, assert_reports_agree
perfSONAR-style reader     -- perfsonar_read: reads an iperf3 -J document
                              the way pScheduler's iperf3 parser does and
                              checks every key it reads
Raw iperf3 control client  -- run as a script inside a namespace host:
                              ``python3 ip3util.py raw SCENARIO HOST PORT
                              WAIT`` prints one JSON object describing what
                              the server did (see raw_scenario)

Protocol facts (../../../shared/REFERENCE.md section 4): the control
connection starts with a 37-byte cookie (36 of [a-z2-7] and a NUL); the
server answers with single signed state bytes (PARAM_EXCHANGE 9,
CREATE_STREAMS 10, TEST_START 1, TEST_RUNNING 2, SERVER_ERROR -2 followed
by two 4-byte big-endian ints); JSON messages are a 4-byte big-endian
length and the text.
"""

import json
import math
import os
import secrets
import socket
import struct
import subprocess
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

# ---------------- iperf3 protocol constants ----------------

TEST_START = 1
TEST_RUNNING = 2
TEST_END = 4
PARAM_EXCHANGE = 9
CREATE_STREAMS = 10
IPERF_DONE = 16
ACCESS_DENIED = -1
SERVER_ERROR = -2

COOKIE_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"
COOKIE_LEN = 37


def make_cookie():
    return ("".join(secrets.choice(COOKIE_ALPHABET) for _ in range(36))
            .encode() + b"\0")


def json_msg(obj_or_text):
    """A JSON message: 4-byte big-endian length, then the text."""
    text = (obj_or_text if isinstance(obj_or_text, (bytes, str))
            else json.dumps(obj_or_text, separators=(",", ":")))
    if isinstance(text, str):
        text = text.encode()
    return struct.pack(">I", len(text)) + text


def state_byte(b):
    """Signed value of a state byte."""
    return b - 256 if b > 127 else b


# ---------------- strict JSON ----------------

def _reject_constant(name):
    raise ValueError(f"non-finite JSON number {name}")


def strict_json(text):
    """json.loads that fails on NaN, Infinity and -Infinity."""
    return json.loads(text, parse_constant=_reject_constant)


def describe(res):
    return (f"{res.args!r} exited {res.returncode}\n--- stdout\n"
            f"{res.stdout}\n--- stderr\n{res.stderr}")


# ---------------- stock iperf3 as a peer ----------------

def start_iperf3_server(hosts, port, *args, json=True):
    """`iperf3 -s -1 [-J]` in host B on PORT; waits until it listens."""
    from util import wait_for_listen
    proc = hosts.popen_b(["iperf3", "-s", "-1", *(["-J"] if json else []),
                          "-B", hosts.addr_b, "-p", str(port),
                          *map(str, args)],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        wait_for_listen(hosts.run_b, port, timeout=10)
    except TimeoutError:
        proc.kill()
        out, err = proc.communicate(timeout=10)
        raise RuntimeError(f"iperf3 -s did not listen: {out}\n{err}") \
            from None
    return proc


def finish_iperf3_server(proc, timeout=30):
    """Wait for a one-shot iperf3 server; returns (rc, stdout, stderr)."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate(timeout=10)
        return None, out, "(killed: did not finish in time)\n" + err
    return proc.returncode, out, err


def run_iperf3_client(hosts, port, *args, timeout=60):
    """`iperf3 -c HOST_B -p PORT -J ARGS` in host A (bounded)."""
    return hosts.run_a(["iperf3", "-c", hosts.addr_b, "-p", str(port), "-J",
                        *map(str, args)], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=timeout)


def iperf3_doc(res):
    """The parsed -J document of a finished iperf3 client (exit 0, no
    "error" key asserted)."""
    assert res.returncode == 0, describe(res)
    doc = strict_json(res.stdout)
    assert "error" not in doc, f"iperf3 reported: {doc['error']}\n" + \
        describe(res)
    return doc


# ---------------- two reports of one test ----------------

def direction_totals(doc):
    """{"primary": {...}, "bidir_reverse": {...}} of one report: for each
    direction the sent and received totals (bytes, and for UDP packets /
    lost_packets of the receiver) as this report states them.  iperf3's
    sum_sent / sum_received describe the test's direction (client to
    server, server to client with -R) in both the client's and the
    server's report; *_bidir_reverse the other direction of --bidir.  A
    stock iperf3 server reports 0 for the side it did not play."""
    end = doc["end"]
    out = {}
    for name, sfx in (("primary", ""), ("bidir_reverse", "_bidir_reverse")):
        if f"sum_sent{sfx}" not in end:
            continue
        s, r = end[f"sum_sent{sfx}"], end[f"sum_received{sfx}"]
        out[name] = {
            "sent": s["bytes"], "received": r["bytes"],
            "sent_packets": s.get("packets"),
            "received_packets": r.get("packets"),
            "lost_packets": r.get("lost_packets"),
            "lost_percent": r.get("lost_percent"),
        }
    return out


def assert_reports_agree(client, server, *, reverse=False, bidir=False,
                         blksize, udp=False, streams=1, exact_sent=None,
                         sent_slack=0,
                         server_is_iperf3=True, omit=False,
                         linerate_side=None):
    """Check the client's and the server's report of the same test.

    Per direction: the sending side's own count and the receiving side's
    own count are non-zero; the client's report (which learns the peer's
    figures in the results exchange) states both; where both reports
    state the bytes sent they are equal, the bytes received within one
    block (BLKSIZE); received <= sent (not with OMIT: each side ends
    its omitted seconds by its own clock, stock iperf3 too); UDP: the
    packets sent are equal where both state them, the receiver's packets
    (expected, lost included) <= packets sent, lost within the packets,
    lost_percent matches.  SERVER None: only the client's report is checked.
    LINERATE_SIDE ("client" or "server"): where that side receives over
    TCP it reads on after TEST_END, so what it received is what was sent
    but at most one block (a stock iperf3 receiver stops counting at its
    TEST_END and is not held to that)."""
    ct = direction_totals(client)
    assert set(ct) == ({"primary", "bidir_reverse"} if bidir
                       else {"primary"}), f"sum keys: {sorted(client['end'])}"
    nstreams = streams * (2 if bidir else 1)
    assert len(client["end"]["streams"]) == nstreams, client["end"]["streams"]
    st = None
    if server is not None:
        st = direction_totals(server)
        assert set(st) == set(ct), (sorted(server["end"]),
                                    sorted(client["end"]))
        assert len(server["end"]["streams"]) == nstreams, \
            server["end"]["streams"]
    for d, c in ct.items():
        # who sends in this direction
        client_sends = (d == "primary") != reverse
        where = f"direction {d} ({'client' if client_sends else 'server'} " \
                f"sends)"
        for k in ("sent", "received"):
            v = c[k]
            assert isinstance(v, int) and not isinstance(v, bool) and v > 0, \
                f"{where}: client report {k} bytes = {v!r}"
        if exact_sent is not None:
            assert exact_sent <= c["sent"] <= exact_sent + sent_slack, \
                f"{where}: sent {c['sent']}, asked {exact_sent}"
        assert omit or c["received"] <= c["sent"], \
            f"{where}: received {c['received']} > sent {c['sent']}"
        lr_receives = ((linerate_side == "client" and not client_sends) or
                       (linerate_side == "server" and client_sends))
        if lr_receives and not udp and not omit:
            assert c["sent"] - c["received"] <= blksize, \
                f"{where}: linerate received {c['received']} of " \
                f"{c['sent']} bytes sent (more than one {blksize}-byte " \
                f"block short)"
        if st is not None:
            s = st[d]
            # the server's own figure is always there; a stock iperf3
            # server leaves the other side's at 0
            own = "received" if client_sends else "sent"
            assert s[own] > 0, f"{where}: server report {own} = {s[own]}"
            if s["sent"] or not server_is_iperf3:
                assert s["sent"] == c["sent"], \
                    f"{where}: bytes sent: client report {c['sent']}, " \
                    f"server report {s['sent']}"
            if s["received"] or not server_is_iperf3:
                assert abs(s["received"] - c["received"]) <= blksize, \
                    f"{where}: bytes received: client report " \
                    f"{c['received']}, server report {s['received']} " \
                    f"(more than one {blksize}-byte block apart)"
        if udp:
            _check_udp_direction(where, c, st[d] if st else None,
                                 server_is_iperf3)


def _check_udp_direction(where, c, s, server_is_iperf3):
    for k in ("sent_packets", "received_packets", "lost_packets"):
        v = c[k]
        assert isinstance(v, int) and not isinstance(v, bool) and v >= 0, \
            f"{where}: client report {k} = {v!r}"
    assert c["sent_packets"] > 0, f"{where}: no packets sent"
    assert 0 < c["received_packets"] <= c["sent_packets"], \
        f"{where}: receiver counted {c['received_packets']} packets of " \
        f"{c['sent_packets']} sent"
    assert c["lost_packets"] <= c["received_packets"], c
    if c["lost_percent"] is not None:
        assert c["lost_percent"] == _approx(
            100.0 * c["lost_packets"] / c["received_packets"]), c
    if s is None:
        return
    if s["sent_packets"] or not server_is_iperf3:
        assert s["sent_packets"] == c["sent_packets"], \
            f"{where}: packets sent: client report {c['sent_packets']}, " \
            f"server report {s['sent_packets']}"
    if s["received_packets"] or not server_is_iperf3:
        assert s["received_packets"] == c["received_packets"], \
            f"{where}: packets received: client report " \
            f"{c['received_packets']}, server report " \
            f"{s['received_packets']}"
        assert s["lost_packets"] == c["lost_packets"], \
            f"{where}: lost: client report {c['lost_packets']}, server " \
            f"report {s['lost_packets']}"


class _approx:
    def __init__(self, v, rel=1e-6, abs_=1e-9):
        self.v, self.rel, self.abs = v, rel, abs_

    def __eq__(self, other):
        return abs(other - self.v) <= max(self.abs, self.rel * abs(self.v))

    def __repr__(self):
        return f"approx({self.v})"


# ---------------- perfSONAR-style reader ----------------

def _num(obj, key, where, minimum=0.0, integer=False):
    """obj[key], asserted to be a finite JSON number (not a bool, not a
    string) >= MINIMUM (None: no lower bound)."""
    assert isinstance(obj, dict), f"{where}: not an object: {obj!r}"
    assert key in obj, f"{where}: no {key!r} (keys: {sorted(obj)})"
    v = obj[key]
    assert isinstance(v, (int, float)) and not isinstance(v, bool), \
        f"{where}.{key} is {type(v).__name__} {v!r}, not a number"
    assert math.isfinite(v), f"{where}.{key} = {v!r}"
    if integer:
        assert float(v).is_integer(), f"{where}.{key} = {v!r} not integral"
    if minimum is not None:
        assert v >= minimum, f"{where}.{key} = {v!r} < {minimum}"
    return v


def _renamed(obj, where):
    """pScheduler's rename_json: the keys it maps, checked."""
    lookup = {"socket": "stream-id", "start": "start", "end": "end",
              "bytes": "throughput-bytes",
              "bits_per_second": "throughput-bits", "omitted": "omitted",
              "jitter_ms": "jitter", "packets": "sent",
              "lost_packets": "lost", "retransmits": "retransmits",
              "snd_cwnd": "tcp-window-size", "rtt": "rtt",
              "mean_rtt": "rtt"}
    out = {}
    for k, v in obj.items():
        if k in lookup:
            if k != "omitted":
                _num(obj, k, where)
            else:
                assert isinstance(v, bool), f"{where}.omitted = {v!r}"
            out[lookup[k]] = v
    return out


def _check_bps(obj, where):
    """bits_per_second agrees with bytes / seconds (when seconds > 0)."""
    b = _num(obj, "bytes", where, integer=True)
    bps = _num(obj, "bits_per_second", where)
    secs = obj.get("seconds")
    if secs is None:
        secs = _num(obj, "end", where) - _num(obj, "start", where)
    if secs and secs > 0:
        assert bps == _approx(8.0 * b / secs, rel=0.01, abs_=1.0), \
            f"{where}: bits_per_second {bps} but {b} bytes in {secs} s"
    return b, bps


def perfsonar_read(doc, udp):
    """Read an iperf3 -J document the way perfSONAR's pScheduler iperf3
    parser does (intervals[].streams / sum renamed; end.sum_sent, or
    end.sum; end.streams[].udp or .sender) and check every key it and
    the issue's list name: present, a finite number of the right kind,
    sane.  Returns the pScheduler-shaped result."""
    assert isinstance(doc, dict) and "error" not in doc, doc.get("error")
    intervals = doc["intervals"]
    assert isinstance(intervals, list) and intervals, "no intervals"
    final = []
    prev_end = 0.0
    for i, iv in enumerate(intervals):
        where = f"intervals[{i}]"
        streams, summ = iv["streams"], iv["sum"]
        assert isinstance(streams, list) and streams, f"{where}: no streams"
        ws = f"{where}.sum"
        start = _num(summ, "start", ws)
        end = _num(summ, "end", ws)
        assert end >= start, f"{ws}: end {end} < start {start}"
        assert start == _approx(prev_end, abs_=0.05), \
            f"{ws}: starts at {start}, previous ended at {prev_end}"
        prev_end = end
        sb, _ = _check_bps(summ, ws)
        sender = summ.get("sender")
        assert isinstance(sender, bool), f"{ws}.sender = {sender!r}"
        total = 0
        rev = iv.get("sum_bidir_reverse")
        rev_total = 0
        if rev is not None:
            _check_bps(rev, f"{where}.sum_bidir_reverse")
            assert rev.get("sender") is (not sender), rev
        for j, st in enumerate(streams):
            w = f"{where}.streams[{j}]"
            _num(st, "socket", w, integer=True)
            if st.get("sender", sender) == sender:
                total += _check_bps(st, w)[0]
            else:
                assert rev is not None, f"{w}: direction of no sum"
                rev_total += _check_bps(st, w)[0]
            if udp:
                _num(st, "packets", w, integer=True)
                if not st["sender"]:
                    _num(st, "jitter_ms", w)
                    _num(st, "lost_packets", w, integer=True)
            elif st.get("sender"):
                _num(st, "retransmits", w, integer=True)
                _num(st, "snd_cwnd", w, integer=True)
                _num(st, "rtt", w, integer=True)
        assert total == sb, f"{ws}.bytes {sb} != sum of streams {total}"
        if rev is not None:
            assert rev_total == rev["bytes"], \
                f"{where}.sum_bidir_reverse.bytes {rev['bytes']} != sum " \
                f"of its streams {rev_total}"
        if udp:
            _num(summ, "packets", ws, integer=True)
            if not sender:
                _num(summ, "jitter_ms", ws)
                _num(summ, "lost_packets", ws, integer=True)
        elif sender:
            _num(summ, "retransmits", ws, integer=True)
        final.append({"streams": [_renamed(s, f"{where}.streams")
                                  for s in streams],
                      "summary": _renamed(summ, ws)})

    end = doc["end"]
    for key in ("sum_sent", "sum_received"):
        assert key in end, f"end: no {key} (keys {sorted(end)})"
        _check_bps(end[key], f"end.{key}")
    if not udp:
        _num(end["sum_sent"], "retransmits", "end.sum_sent", integer=True)
    if udp:
        assert "sum" in end, f"end: no sum (keys {sorted(end)})"
        w = "end.sum"
        _num(end["sum"], "jitter_ms", w)
        lost = _num(end["sum"], "lost_packets", w, integer=True)
        pk = _num(end["sum"], "packets", w, integer=True)
        lp = _num(end["sum"], "lost_percent", w)
        assert lost <= pk and lp <= 100, end["sum"]
    summary = end["sum_sent"] if "sum_sent" in end else end["sum"]

    sum_streams = []
    for j, st in enumerate(end["streams"]):
        w = f"end.streams[{j}]"
        if udp:
            assert "udp" in st, f"{w}: no udp (keys {sorted(st)})"
            u = st["udp"]
            wu = w + ".udp"
            _num(u, "socket", wu, integer=True)
            _check_bps(u, wu)
            _num(u, "jitter_ms", wu)
            lost = _num(u, "lost_packets", wu, integer=True)
            pk = _num(u, "packets", wu, integer=True)
            lp = _num(u, "lost_percent", wu)
            assert lost <= pk and 0 <= lp <= 100, u
            if pk:
                assert lp == _approx(100.0 * lost / pk, rel=1e-3), u
            sum_streams.append(_renamed(u, wu))
        else:
            assert "sender" in st and "receiver" in st, \
                f"{w}: keys {sorted(st)}"
            snd, rcv = st["sender"], st["receiver"]
            _num(snd, "socket", w + ".sender", integer=True)
            _check_bps(snd, w + ".sender")
            _check_bps(rcv, w + ".receiver")
            _num(snd, "retransmits", w + ".sender", integer=True)
            _num(snd, "max_snd_cwnd", w + ".sender", integer=True)
            mx = _num(snd, "max_rtt", w + ".sender", integer=True)
            mn = _num(snd, "min_rtt", w + ".sender", integer=True)
            mean = _num(snd, "mean_rtt", w + ".sender", integer=True)
            if snd.get("sender"):  # this side sent: the RTTs are its own
                assert mn <= mean <= mx, snd
            assert rcv["bytes"] <= snd["bytes"], st
            sum_streams.append(_renamed(snd, w + ".sender"))
    assert sum_streams, "end.streams is empty"

    cpu = end["cpu_utilization_percent"]
    for k in ("host_total", "remote_total"):
        v = _num(cpu, k, "end.cpu_utilization_percent")
        # percent of one CPU summed over threads can pass 100 a little
        assert v <= 100 * (os.cpu_count() or 1) + 1, cpu
    return {"intervals": final,
            "summary": {"streams": sum_streams,
                        "summary": _renamed(summary, "end.summary")}}


# ---------------- raw iperf3 control client (run inside host A) --------

def _observe(sock, wait):
    """Read what the server sends until it closes or WAIT s pass."""
    data = b""
    closed = reset = False
    t0 = time.monotonic()
    deadline = t0 + wait
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        sock.settimeout(left)
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            break
        except (ConnectionResetError, BrokenPipeError):
            closed = reset = True
            break
        if not chunk:
            closed = True
            break
        data += chunk
        if len(data) > 1 << 20:
            break
    return {"data": data.hex(), "closed": closed, "reset": reset,
            "elapsed": round(time.monotonic() - t0, 3)}


def _read_state(sock, timeout=10):
    sock.settimeout(timeout)
    b = sock.recv(1)
    if not b:
        raise ConnectionError("closed instead of sending a state byte")
    return state_byte(b[0])


def _expect_state(sock, want, steps):
    got = _read_state(sock)
    steps.append(got)
    if got != want:
        raise ConnectionError(f"expected state {want}, got {got}")


VALID_TCP_PARAMS = {"tcp": True, "omit": 0, "time": 1, "parallel": 1,
                    "len": 131072, "client_version": "3.12"}


def raw_scenario(name, host, port, wait, bind=None):
    """Run SCENARIO against an iperf3 server (from source address BIND
    when given); returns a dict: "steps" (state bytes seen before the
    observed part), "result" (_observe of what followed), or "error"."""
    steps = []
    out = {"scenario": name, "steps": steps}
    ctl = socket.create_connection((host, port), timeout=10,
                                   source_address=(bind, 0) if bind
                                   else None)
    ctl.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    extra = []
    try:
        cookie = make_cookie()
        if name == "idle":
            pass
        elif name == "wrong-cookie":
            ctl.sendall(b"ABCDEFGHIJ!@#$%^&*()0189" + b"X" * 12 + b"\0")
        elif name == "short-cookie":
            ctl.sendall(b"abc")
            ctl.shutdown(socket.SHUT_WR)
        else:
            ctl.sendall(cookie)
            _expect_state(ctl, PARAM_EXCHANGE, steps)
            if name == "len-ffffffff":
                ctl.sendall(b"\xff\xff\xff\xff")
            elif name == "len-0":
                ctl.sendall(b"\0\0\0\0")
            elif name == "len-ffffffff-then-data":
                ctl.sendall(b"\xff\xff\xff\xff" + b"{" * 4096)
            elif name.startswith("json:"):
                ctl.sendall(json_msg(name[5:]))
            elif name in ("no-streams", "vanish"):
                params = dict(VALID_TCP_PARAMS)
                if name == "vanish":
                    params["time"] = 10
                ctl.sendall(json_msg(params))
                _expect_state(ctl, CREATE_STREAMS, steps)
                if name == "vanish":
                    data = socket.create_connection((host, port), timeout=10)
                    extra.append(data)
                    data.sendall(cookie)
                    _expect_state(ctl, TEST_START, steps)
                    _expect_state(ctl, TEST_RUNNING, steps)
                    # some data, then vanish: RST on both connections
                    chunk = b"\0" * 65536
                    t_end = time.monotonic() + 0.5
                    while time.monotonic() < t_end:
                        data.sendall(chunk)
                    for s in (data, ctl):
                        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                     struct.pack("ii", 1, 0))
                        s.close()
                    out["result"] = {"vanished": True}
                    return out
            else:
                raise ValueError(f"unknown scenario {name}")
        out["result"] = _observe(ctl, wait)
    except (OSError, ConnectionError) as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        for s in extra + [ctl]:
            try:
                s.close()
            except OSError:
                pass
    return out


def error_or_close(res):
    """'' when RES (raw_scenario's result) shows the server answering
    SERVER_ERROR (-2, then two 4-byte ints) and/or closing; else a
    description of what it did instead."""
    if "error" in res:
        return f"raw client failed: {res['error']} (steps {res['steps']})"
    r = res["result"]
    data = bytes.fromhex(r["data"])
    if data and state_byte(data[0]) != SERVER_ERROR:
        return (f"answered {data[:16].hex()} (first state "
                f"{state_byte(data[0])}), not SERVER_ERROR -2")
    if data and len(data) != 9:
        return (f"SERVER_ERROR followed by {len(data) - 1} bytes, not "
                f"two 4-byte ints: {data.hex()}")
    if not r["closed"]:
        return (f"did not close within {r['elapsed']} s (received "
                f"{data.hex() or 'nothing'})")
    return ""


def udp_junk(host, port):
    """Stray datagrams to an iperf3 UDP port: none of them belongs to a
    test.  Returns how many were sent."""
    sent = 0
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((host, port))
        for payload in (b"\x39\x38\x37\x36", b"\xff" * 1472, b"",
                        struct.pack(">III", 1, 2, 3) + b"\0" * 1000,
                        secrets.token_bytes(512)):
            try:
                s.send(payload)
                sent += 1
            except ConnectionRefusedError:  # an ICMP error from before
                pass
    return sent


def idle_many(host, port, n, wait):
    """Open N connections that send nothing; print "ready N"; then wait
    up to WAIT s for the server to close them.  Returns {"closed": how
    many it closed, "last_close": seconds after "ready" of the last}."""
    import selectors
    socks = [socket.create_connection((host, port), timeout=10)
             for _ in range(n)]
    print(f"ready {len(socks)}", flush=True)
    t0 = time.monotonic()
    sel = selectors.DefaultSelector()
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    closed, last = 0, None
    deadline = t0 + wait
    while closed < n:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        for key, _ in sel.select(left):
            try:
                data = key.fileobj.recv(4096)
            except (ConnectionResetError, BlockingIOError):
                data = b""
            if not data:
                sel.unregister(key.fileobj)
                key.fileobj.close()
                closed += 1
                last = round(time.monotonic() - t0, 3)
    for s in socks:
        try:
            s.close()
        except OSError:
            pass
    return {"closed": closed, "last_close": last}


def main(argv):
    if len(argv) == 5 and argv[0] == "idle-many":
        print(json.dumps(idle_many(argv[1], int(argv[2]), int(argv[3]),
                                   float(argv[4]))))
        return 0
    if len(argv) == 3 and argv[0] == "udp-junk":
        print(udp_junk(argv[1], int(argv[2])))
        return 0
    if len(argv) in (5, 6) and argv[0] == "raw":
        name, host, port, wait = argv[1], argv[2], int(argv[3]), \
            float(argv[4])
        bind = argv[5] if len(argv) == 6 else None
        print(json.dumps(raw_scenario(name, host, port, wait, bind)),
              flush=True)
        return 0
    print("usage: ip3util.py raw SCENARIO HOST PORT WAIT [BIND] | "
          "idle-many HOST PORT N WAIT | udp-junk HOST PORT",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
