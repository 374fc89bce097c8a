# SPDX-License-Identifier: MIT
"""Two throw-away test hosts in network namespaces (Python twin of
scripts/testhosts.sh).

    with TestHosts(rate="1gbit") as h:
        h.run_a(["ping", "-c1", "-W2", h.addr_b], check=True)
        srv = h.popen_b(["iperf3", "-s", "-1", "-B", h.addr_b])

Topology (198.18.0.0/15 is the RFC 2544 benchmarking range)::

    netns ns_a                         netns ns_b
    lo up                              lo up
    if_a 198.18.0.1/24  <-- veth -->  if_b 198.18.0.2/24

Names are ``lr<pid>t<n>a`` / ``lr<pid>t<n>b`` (namespaces) and
``lr<pid>t<n>x`` / ``lr<pid>t<n>y`` (interfaces), ``n`` being a per-process
counter, so several instances in one process (or in parallel processes) do
not collide; interface names are <= 15 characters.

With ``rate`` (a tc rate such as "1gbit"), both veth ends get
``tbf rate RATE burst 64kb latency 20ms overhead 24`` as root qdisc and
TSO/GSO/GRO off.  ``overhead 24`` (preamble + FCS + inter-frame gap) makes
the limit behave like a real Ethernet line: ~941 Mbit/s TCP goodput at 1gbit.

Cleanup (``down()``, also run by ``__exit__`` and by an atexit fallback)
terminates the processes started with ``popen_*``, then any other process
left inside the two namespaces, and deletes the namespaces (which deletes
the veth pair).  It never raises and only touches namespaces this instance
created.  A SIGKILLed interpreter cannot clean up; leftovers are then
visible in ``ip netns list`` as ``lr<pid>t<n>[ab]``.
"""

import atexit
import itertools
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time

from util import wait_until

ADDR_A = "198.18.0.1"
ADDR_B = "198.18.0.2"
PREFIX = 24

# Default timeout (s) of run_a/run_b and of the harness' own commands.
DEFAULT_TIMEOUT = 60
IFNAMSIZ_MAX = 15

_counter = itertools.count()
_counter_lock = threading.Lock()
_live = set()
_live_lock = threading.Lock()


class TestHostsError(RuntimeError):
    """Setting up the test hosts failed."""


def _ip(*args, check=True, timeout=DEFAULT_TIMEOUT):
    """Run `ip ARGS`; raise TestHostsError with its output on failure."""
    cmd = ["ip", *args]
    try:
        res = subprocess.run(cmd, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError) as exc:
        raise TestHostsError(f"{shlex.join(cmd)}: {exc}") from exc
    if check and res.returncode != 0:
        raise TestHostsError(
            f"{shlex.join(cmd)} failed (exit {res.returncode}): "
            f"{(res.stderr or res.stdout).strip()}")
    return res


def netns_skip_reason():
    """None if network namespaces can be used here, else a reason string.

    Checks root, the `ip` tool, and that a throw-away namespace can be
    created and deleted.
    """
    if os.geteuid() != 0:
        return f"not root (euid {os.geteuid()}); network namespaces need root"
    if shutil.which("ip") is None:
        return "'ip' (iproute2) not found in PATH"
    probe = f"lrprobe{os.getpid()}"
    try:
        _ip("netns", "add", probe, timeout=10)
    except TestHostsError as exc:
        return f"cannot create a network namespace: {exc}"
    try:
        _ip("netns", "del", probe, timeout=10)
    except TestHostsError as exc:
        return f"cannot delete network namespace {probe}: {exc}"
    return None


def shaping_skip_reason():
    """None if traffic shaping (tc + ethtool) is available, else a reason."""
    for tool in ("tc", "ethtool"):
        if shutil.which(tool) is None:
            return f"'{tool}' not found in PATH (needed for shaped hosts)"
    return None


def _as_argv(args):
    if isinstance(args, (str, bytes)):
        return shlex.split(args if isinstance(args, str) else args.decode())
    return [os.fspath(a) if not isinstance(a, (str, bytes)) else a
            for a in args]


class TestHosts:
    """Two hosts A and B in fresh network namespaces joined by a veth pair.

    Use as a context manager (or call up()/down()).  Attributes: ns_a,
    ns_b, if_a, if_b, addr_a, addr_b, rate.
    """

    __test__ = False  # not a pytest test class despite the name

    addr_a = ADDR_A
    addr_b = ADDR_B

    def __init__(self, rate=None):
        with _counter_lock:
            n = next(_counter)
        tag = f"{os.getpid()}t{n}"
        if len(f"lr{tag}x") > IFNAMSIZ_MAX:
            raise TestHostsError(f"too many TestHosts in this process ({n})")
        self.rate = rate
        self.ns_a = f"lr{tag}a"
        self.ns_b = f"lr{tag}b"
        self.if_a = f"lr{tag}x"
        self.if_b = f"lr{tag}y"
        self._owned = []      # namespaces created by this instance
        self._procs = []      # Popen objects started by popen_a/popen_b
        self._lock = threading.Lock()
        self._is_up = False

    def __repr__(self):
        return (f"TestHosts(ns_a={self.ns_a!r}, ns_b={self.ns_b!r}, "
                f"rate={self.rate!r}, up={self._is_up})")

    # -- lifecycle ---------------------------------------------------------

    def __enter__(self):
        self.up()
        return self

    def __exit__(self, *exc_info):
        self.down()
        return False

    def up(self):
        """Create the topology; on any failure remove what was created."""
        with self._lock:
            if self._is_up or self._owned:
                raise TestHostsError("TestHosts.up() called twice")
            self._is_up = True
        with _live_lock:
            _live.add(self)
        try:
            self._setup()
        except BaseException:
            self.down()
            raise
        return self

    def _setup(self):
        if self.rate is not None:
            reason = shaping_skip_reason()
            if reason:
                raise TestHostsError(reason)
        for ns in (self.ns_a, self.ns_b):
            existing = _ip("netns", "list").stdout.split("\n")
            if any(line.split(" ", 1)[0] == ns for line in existing):
                raise TestHostsError(
                    f"namespace {ns} already exists (stale? remove it with: "
                    f"ip netns del {ns})")
            _ip("netns", "add", ns)
            self._owned.append(ns)
        # Created directly inside the namespaces: nothing is ever left in
        # (or collides with names in) the caller's namespace.
        _ip("link", "add", self.if_a, "netns", self.ns_a, "type", "veth",
            "peer", "name", self.if_b, "netns", self.ns_b)
        ends = ((self.ns_a, self.if_a, self.addr_a),
                (self.ns_b, self.if_b, self.addr_b))
        for ns, ifname, addr in ends:
            _ip("-n", ns, "addr", "add", f"{addr}/{PREFIX}", "dev", ifname)
            _ip("-n", ns, "link", "set", "lo", "up")
        if self.rate is not None:
            for ns, ifname, _ in ends:
                _ip("netns", "exec", ns, "ethtool", "-K", ifname,
                    "tso", "off", "gso", "off", "gro", "off")
                _ip("netns", "exec", ns, "tc", "qdisc", "add", "dev", ifname,
                    "root", "tbf", "rate", str(self.rate), "burst", "64kb",
                    "latency", "20ms", "overhead", "24")
        for ns, ifname, _ in ends:
            _ip("-n", ns, "link", "set", ifname, "up")
        for ns, ifname, _ in ends:
            self._wait_oper_up(ns, ifname)

    @staticmethod
    def _wait_oper_up(ns, ifname, timeout=5.0, interval=0.05):
        """Wait (bounded in count and time) until IFNAME reports UP.

        Before that the device may still have its noop qdisc and would
        drop packets.
        """
        state = ["?"]

        def up():
            res = _ip("-n", ns, "-o", "link", "show", "dev", ifname,
                      check=False, timeout=10)
            fields = res.stdout.split()
            if "state" in fields:
                state[0] = fields[fields.index("state") + 1]
            return state[0] == "UP"

        try:
            wait_until(up, timeout, interval, what=f"{ifname} to come up")
        except TimeoutError:
            raise TestHostsError(f"{ifname} in {ns} did not come up "
                                 f"(state {state[0]})") from None

    def down(self):
        """Kill processes in the namespaces and delete them.  Idempotent;
        never raises."""
        with self._lock:
            owned, self._owned = self._owned, []
            procs, self._procs = self._procs, []
            self._is_up = False
        try:
            _stop_procs(procs)
            for ns in owned:
                _kill_ns_pids(ns)
            for ns in owned:
                try:
                    _ip("netns", "del", ns, timeout=10)
                except TestHostsError as exc:
                    print(f"testhosts: {exc}", file=sys.stderr)
        except BaseException as exc:  # never raise from cleanup
            print(f"testhosts: cleanup error: {exc!r}", file=sys.stderr)
        finally:
            with _live_lock:
                _live.discard(self)

    close = down

    # -- running things in the hosts --------------------------------------

    def _exec_argv(self, ns, args):
        with self._lock:
            if not self._is_up:
                raise TestHostsError("TestHosts is not up")
        return ["ip", "netns", "exec", ns, *_as_argv(args)]

    def _run(self, ns, args, kw):
        kw.setdefault("timeout", DEFAULT_TIMEOUT)
        return subprocess.run(self._exec_argv(ns, args), **kw)

    def _popen(self, ns, args, kw):
        proc = subprocess.Popen(self._exec_argv(ns, args), **kw)
        with self._lock:
            self._procs.append(proc)
        return proc

    def run_a(self, args, **kw):
        """subprocess.run(args) inside host A.  args: list (or a string,
        split with shlex).  timeout defaults to DEFAULT_TIMEOUT s; pass
        timeout=None for none."""
        return self._run(self.ns_a, args, kw)

    def run_b(self, args, **kw):
        """subprocess.run(args) inside host B (see run_a)."""
        return self._run(self.ns_b, args, kw)

    def popen_a(self, args, **kw):
        """subprocess.Popen(args) inside host A; terminated by down()."""
        return self._popen(self.ns_a, args, kw)

    def popen_b(self, args, **kw):
        """subprocess.Popen(args) inside host B; terminated by down()."""
        return self._popen(self.ns_b, args, kw)


def _stop_procs(procs, grace=3.0):
    """Terminate Popen objects, SIGKILL after GRACE seconds, reap them."""
    for p in procs:
        if p.poll() is None:
            try:
                p.terminate()
            except OSError:
                pass
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            try:
                p.kill()
                p.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass


def _kill_ns_pids(ns, grace=2.0, interval=0.05):
    """Terminate any process still inside NS (bounded), e.g. grandchildren."""
    def pids():
        try:
            res = _ip("netns", "pids", ns, check=False, timeout=10)
        except TestHostsError:
            return []
        return [int(x) for x in res.stdout.split() if x.isdigit()]

    def signal_all(sig, targets):
        for pid in targets:
            try:
                os.kill(pid, sig)
            except OSError:
                pass

    left = pids()
    if not left:
        return
    signal_all(signal.SIGTERM, left)
    try:
        wait_until(lambda: not pids(), grace, interval,
                   what=f"the processes in {ns} to end")
        return
    except TimeoutError:
        pass
    signal_all(signal.SIGKILL, pids())


@atexit.register
def _cleanup_all():
    with _live_lock:
        live = list(_live)
    for hosts in live:
        hosts.down()
