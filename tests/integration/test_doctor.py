# SPDX-License-Identifier: MIT
"""`linerate doctor` between namespace hosts: the server (`linerate serve
--root DIR --token-file F`) in host B (198.18.0.2), doctor in host A.

Each case makes one stage the slowest and checks that doctor names it:
  - a link shaped to 1 Gbit/s: the network;
  - the destination's writes throttled to 20 MiB/s (a cgroup v1 blkio
    limit on a loop device holding the server's root): the destination;
  - both ends under a cgroup v1 CPU quota of 0.2 cores: the cipher / CPU.
Plus the refusals (no token on either side) and --help.

Needs root (namespaces, loop devices, cgroups); the blkio and cpu cases
also need the cgroup v1 controllers. Each skips with the reason otherwise.
"""

import glob
import os
import re
import shutil
import socket
import subprocess

import pytest

from lrproc import describe, strict_json
from xferutil import env_without_token, tree_files
from util import wait_until

ADDR_B = "198.18.0.2"
CGROUP_V1 = "/sys/fs/cgroup"
THROTTLE_BPS = 20 * 1024 * 1024   # blkio write limit of the destination
CPU_QUOTA_US, CPU_PERIOD_US = 20000, 100000   # 0.2 cores
DOCTOR_TIMEOUT = 90

STAGES = ("source_read", "network", "network_reverse", "cipher",
          "destination_write")


def _skip(reason):
    print(f"skipping: {reason}")
    pytest.skip(reason)


def cgroup_v1_skip_reason(controller, files):
    """None if the cgroup v1 CONTROLLER is mounted with FILES, else why."""
    if os.geteuid() != 0:
        return f"not root (euid {os.geteuid()}); cgroups need root"
    top = os.path.join(CGROUP_V1, controller)
    if not os.path.isdir(top):
        return f"cgroup v1 {controller} controller not mounted at {top}"
    for f in files:
        if not os.path.exists(os.path.join(top, f)):
            return f"cgroup v1 {controller}: no {f} in {top}"
    return None


class Cgroup:
    """A cgroup v1 group made for one test; remove() waits (bounded) for
    its tasks to leave, then removes it."""

    def __init__(self, controller, name):
        self.path = os.path.join(CGROUP_V1, controller, name)
        os.mkdir(self.path)

    def write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(f"{value}\n")

    @property
    def tasks(self):
        return os.path.join(self.path, "tasks")

    def remove(self, timeout=10):
        def gone():
            try:
                os.rmdir(self.path)
                return True
            except FileNotFoundError:
                return True
            except OSError:
                return False
        try:
            wait_until(gone, timeout, what=f"rmdir {self.path}")
        except Exception as exc:  # reported, never masks the test's error
            print(f"cleanup: {self.path}: {exc}")


def in_cgroups(tasks_files, argv):
    """ARGV for sh: join the cgroups (their tasks files), then exec."""
    joins = "; ".join(f"echo $$ > '{t}'" for t in tasks_files)
    return ["sh", "-c", f'{joins}; exec "$@"', "sh", *argv]


def in_netns(ns, argv, keep_sys=False):
    """ARGV run in network namespace NS.  `ip netns exec` mounts a fresh
    sysfs on /sys (so /sys/class/net shows the namespace's interfaces),
    which also hides the cgroup v1 hierarchies under /sys/fs/cgroup: a
    process there cannot read its own CPU quota.  KEEP_SYS enters only
    the network namespace (nsenter --net), as a process of a host with a
    quota would run: /sys/fs/cgroup visible, /sys/class/net the host's."""
    if not keep_sys:
        return ["ip", "netns", "exec", ns, *argv]
    return ["nsenter", f"--net=/run/netns/{ns}", *argv]


class DoctorEnv:
    """A token, a server root, the server in host B, doctor in host A."""

    def __init__(self, hosts, linerate_bin, serve, tmp_path):
        self.h = hosts
        self.bin = linerate_bin
        self._serve = serve
        self.tmp = tmp_path
        self.root = tmp_path / "root"
        self.root.mkdir()
        self.token_file = tmp_path / "token"
        res = subprocess.run([linerate_bin, "token"], capture_output=True,
                             text=True, timeout=10)
        assert res.returncode == 0, describe(res)
        self.token_file.write_text(res.stdout.strip() + "\n")
        self.srv = None

    def start_server(self, root=None, token=True, cgroups=(),
                     keep_sys=False, with_root=True):
        """`linerate serve` in host B (inside CGROUPS' tasks files; for
        KEEP_SYS see in_netns)."""
        args = ["-B", self.h.addr_b]
        if token:
            args += ["--token-file", self.token_file]
            if with_root:
                args += ["--root", root or self.root]
        popen = self.h.popen_b
        if cgroups:
            ns_b = self.h.ns_b

            def popen(argv, **kw):
                return subprocess.Popen(
                    in_cgroups(cgroups, in_netns(ns_b, argv, keep_sys)),
                    **kw)
        self.srv = self._serve(*args, popen=popen)
        return self.srv

    def doctor_argv(self, *extra, token=True):
        argv = [self.bin, "doctor", "-p", str(self.srv.port)]
        if token:
            argv += ["--token-file", str(self.token_file)]
        return argv + [str(a) for a in extra]

    def doctor(self, *extra, token=True, cgroups=(), keep_sys=False,
               timeout=DOCTOR_TIMEOUT):
        argv = self.doctor_argv(*extra, token=token)
        if cgroups:
            argv = in_cgroups(cgroups, in_netns(self.h.ns_a, argv,
                                                keep_sys))
            run = subprocess.run
        else:
            run = self.h.run_a
        return run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, text=True, timeout=timeout,
                   env=env_without_token())

    def doctor_json(self, *extra, **kw):
        """doctor --json -t 2 --size 64M EXTRA ADDR_B: exit 0, the
        document (checked for its shape)."""
        res = self.doctor("--json", "-t", "2", "--size", "64M", *extra,
                          ADDR_B, **kw)
        assert res.returncode == 0, describe(res)
        doc = strict_json(res.stdout)
        check_shape(doc, res)
        return doc, res


def check_shape(doc, res):
    """The keys every successful report has."""
    why = describe(res)
    assert isinstance(doc, dict), why
    assert "error" not in doc, why
    stages = doc["stages"]
    assert set(stages) <= set(STAGES), why
    for key in ("network", "network_reverse", "destination_write"):
        assert key in stages, f"no stage {key}: {why}"
    for key, st in stages.items():
        assert isinstance(st["bytes_per_second"], (int, float)), why
        assert st["bytes_per_second"] > 0, f"{key}: {why}"
        assert isinstance(st["detail"], str), why
        if key.startswith("network"):
            assert isinstance(st["cpu_bound"], bool), why
    assert doc["transfer"]["bytes"] == 64 * 1024 * 1024, why
    assert doc["transfer"]["bytes_per_second"] > 0, why
    b = doc["bottleneck"]
    assert b["stage"] in STAGES and b["stage"] != "network_reverse", why
    assert isinstance(b["label"], str) and b["label"], why
    assert isinstance(b["transfer_share"], (int, float)), why
    assert b["transfer_share"] > 0, why
    for side in ("local", "server"):
        assert isinstance(doc[side], dict), f"no {side}: {why}"
    assert isinstance(doc["advice"], list), why
    assert all(isinstance(a, str) for a in doc["advice"]), why


def doctor_leftovers():
    """Generated sources doctor left on this machine (host A shares the
    file system)."""
    return set(glob.glob("/dev/shm/.linerate-doctor-*")
               + glob.glob("/tmp/.linerate-doctor-*"))


@pytest.fixture
def denv(hosts, linerate_bin, serve, tmp_path):
    return DoctorEnv(hosts, linerate_bin, serve, tmp_path)


@pytest.fixture
def shaped_denv(shaped_hosts, linerate_bin, serve, tmp_path):
    return DoctorEnv(shaped_hosts, linerate_bin, serve, tmp_path)


# (a) ---------------------------------------------------------------------

def test_network_limits_on_1gbit(shaped_denv):
    d = shaped_denv
    before = doctor_leftovers()
    d.start_server()
    doc, res = d.doctor_json("--link-speed", "1gbit")
    why = describe(res)
    assert doc["bottleneck"]["stage"] == "network", why
    net = doc["stages"]["network"]["bytes_per_second"]
    assert 100e6 <= net <= 125e6, f"network {net / 1e6:.1f} MB/s: {why}"
    share = doc["bottleneck"]["transfer_share"]
    assert 0 < share <= 1.5, f"transfer share {share}: {why}"
    # the human share is the transfer over the bottleneck's figure
    xfer = doc["transfer"]["bytes_per_second"]
    assert abs(share - xfer / net) <= 0.01 * share + 1e-6, why
    # nothing left behind: not in the server's root, not here
    assert tree_files(d.root) == [], why
    assert doctor_leftovers() <= before, why


# (b) ---------------------------------------------------------------------

def _run(argv, timeout=30):
    res = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                         text=True, timeout=timeout)
    assert res.returncode == 0, describe(res)
    return res.stdout.strip()


def test_destination_disk_limits(denv):
    d = denv
    reason = cgroup_v1_skip_reason(
        "blkio", ["blkio.throttle.write_bps_device"])
    if reason is None:
        for tool in ("losetup", "mkfs.ext4", "mount", "umount"):
            if shutil.which(tool) is None:
                reason = f"'{tool}' not found in PATH"
    if reason:
        _skip(reason)
    image = d.tmp / "dest.img"
    mnt = d.tmp / "mnt"
    mnt.mkdir()
    loop = None
    mounted = False
    group = None
    try:
        with open(image, "wb") as f:
            f.truncate(1 << 30)
        loop = _run(["losetup", "-f", "--show", str(image)])
        _run(["mkfs.ext4", "-q", loop], timeout=60)
        _run(["mount", loop, str(mnt)])
        mounted = True
        rdev = os.stat(loop).st_rdev
        group = Cgroup("blkio", f"lrdoctor{os.getpid()}b")
        group.write("blkio.throttle.write_bps_device",
                    f"{os.major(rdev)}:{os.minor(rdev)} {THROTTLE_BPS}")
        d.start_server(root=mnt, cgroups=[group.tasks])
        doc, res = d.doctor_json()
        why = describe(res)
        assert doc["bottleneck"]["stage"] == "destination_write", why
        dest = doc["stages"]["destination_write"]["bytes_per_second"]
        assert 15e6 <= dest <= 30e6, f"destination {dest / 1e6:.1f} MB/s: " \
            f"{why}"
        assert [p for p in tree_files(mnt) if p != "lost+found"] == [], why
    finally:
        if d.srv is not None:
            d.srv.stop()
        if mounted:
            # the server may hold the mount a moment after it stops
            wait_until(lambda: subprocess.run(
                ["umount", str(mnt)], capture_output=True,
                timeout=30).returncode == 0, 5, interval=0.25,
                what=f"umount {mnt}")
        if loop:
            subprocess.run(["losetup", "-d", loop], capture_output=True,
                           timeout=30)
        if group is not None:
            group.remove()


def test_destination_is_measured_as_received(denv):
    """The destination stage writes as a receiver does (page cache, then
    fdatasync), never with O_DIRECT: said in the stage. Its figure
    against dd conv=fdatasync is bench/doctor_disk.py's (speed lives in
    bench/: on this VM a first write now and then takes 3x longer)."""
    d = denv
    d.start_server()
    doc, res = d.doctor_json()
    dest = doc["stages"]["destination_write"]
    assert "as received: page cache, fdatasync" in dest["detail"], \
        describe(res)
    assert dest["bytes_per_second"] > 0
    assert tree_files(d.root) == []


# (c) ---------------------------------------------------------------------

def test_cpu_quota_limits_cipher(denv):
    """Both ends limited to 0.2 cores: the network stage runs with a CPU
    at its limit, which doctor counts as the cipher's (CPU's).  Both ends
    run with /sys/fs/cgroup visible (keep_sys, see in_netns), as they
    would on a host under a quota."""
    d = denv
    reason = cgroup_v1_skip_reason("cpu", ["cpu.cfs_quota_us",
                                           "cpu.cfs_period_us"])
    if reason is None and shutil.which("nsenter") is None:
        reason = "'nsenter' not found in PATH"
    if reason is None and not os.path.exists(f"/run/netns/{d.h.ns_a}"):
        reason = f"/run/netns/{d.h.ns_a} missing (ip netns elsewhere?)"
    if reason:
        _skip(reason)
    groups = []
    try:
        for side in ("a", "b"):
            g = Cgroup("cpu", f"lrdoctor{os.getpid()}c{side}")
            groups.append(g)
            g.write("cpu.cfs_period_us", CPU_PERIOD_US)
            g.write("cpu.cfs_quota_us", CPU_QUOTA_US)
        d.start_server(cgroups=[groups[1].tasks], keep_sys=True)
        doc, res = d.doctor_json(cgroups=[groups[0].tasks], keep_sys=True,
                                 timeout=DOCTOR_TIMEOUT + 60)
        why = describe(res)
        assert doc["bottleneck"]["stage"] == "cipher", why
        assert doc["cipher"] != "none", why
        # both sides saw their quota
        assert abs(doc["local"]["cores_usable"] - 0.2) < 0.01, why
        assert abs(doc["server"]["cores_usable"] - 0.2) < 0.01, why
    finally:
        if d.srv is not None:
            d.srv.stop()
        for g in groups:
            g.remove()


# (d) ---------------------------------------------------------------------

def test_server_without_token(denv, linerate_bin):
    d = denv
    d.start_server(token=False)
    res = d.doctor("-t", "1", "--size", "1M", ADDR_B, timeout=30)
    out = res.stdout + res.stderr
    assert res.returncode == 1, describe(res)
    assert "token" in out, describe(res)
    assert "Traceback" not in out and "AddressSanitizer" not in out


def test_doctor_without_token(denv):
    d = denv
    d.start_server()
    res = d.doctor("-t", "1", "--size", "1M", ADDR_B, token=False,
                   timeout=30)
    out = res.stdout + res.stderr
    assert res.returncode != 0, describe(res)
    assert "token" in out.lower(), describe(res)
    assert tree_files(d.root) == [], describe(res)


def test_server_without_token_json(denv):
    """Our token against a server without one: said, and what needs no
    token measured all the same (test_tokenless_server_measured)."""
    d = denv
    d.start_server(token=False)
    res = d.doctor("--json", "-t", "1", "--size", "1M", ADDR_B, timeout=30)
    assert res.returncode == 1, describe(res)
    doc = strict_json(res.stdout)
    assert "has no token" in doc["error"], describe(res)
    assert doc["server_without_token"] is True, describe(res)
    assert doc["stages"]["network"]["bytes_per_second"] > 0, describe(res)
    assert "transfer" not in doc, describe(res)


def test_server_without_root(denv):
    """A server without --root: doctor says so first, measures what needs
    no root (network both ways, the cipher) and prints those stages, then
    exits 1 naming what was not measured; no transfer is tried."""
    d = denv
    d.start_server(with_root=False)
    res = d.doctor("-t", "1", "--size", "1M", ADDR_B, timeout=60)
    assert res.returncode == 1, describe(res)
    assert "without a transfer: the server has no --root" in res.stderr, \
        describe(res)
    assert "measuring a transfer" not in res.stderr, describe(res)
    assert "network, to the server" in res.stdout, describe(res)
    assert "cipher (both CPUs)" in res.stdout, describe(res)
    assert "the transfer was not measured" in res.stderr, describe(res)
    res = d.doctor("--json", "-t", "1", "--size", "1M", ADDR_B, timeout=60)
    assert res.returncode == 1, describe(res)
    doc = strict_json(res.stdout)
    assert "no --root" in doc["error"], doc
    assert doc["stages"]["network"]["bytes_per_second"] > 0, doc


# (e) ---------------------------------------------------------------------

def test_help(linerate_bin):
    res = subprocess.run([linerate_bin, "doctor", "--help"],
                         capture_output=True, text=True, timeout=10)
    assert res.returncode == 0, describe(res)
    assert "--source" in res.stdout and "--size" in res.stdout, res.stdout
    assert res.stdout.startswith("usage: linerate doctor"), res.stdout


# (f) on loopback, no namespaces --------------------------------------------

LOOP = "127.0.0.1"


@pytest.fixture
def loop_token(linerate_bin, tmp_path):
    """A token and its file."""
    res = subprocess.run([linerate_bin, "token"], capture_output=True,
                         text=True, timeout=10)
    assert res.returncode == 0, describe(res)
    path = tmp_path / "token"
    path.write_text(res.stdout.strip() + "\n")
    return res.stdout.strip(), path


def loop_doctor(linerate_bin, port, *extra, env=None, timeout=60):
    """doctor --no-ssh -p PORT EXTRA 127.0.0.1, without a terminal (a
    session of its own: no prompt can wait for an answer)."""
    return subprocess.run(
        [linerate_bin, "doctor", "--no-ssh", "-p", str(port),
         *[str(a) for a in extra], LOOP],
        stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=timeout, env=env or env_without_token(),
        start_new_session=True)


def test_failure_json_has_no_cipher(linerate_bin, loop_token):
    """Issue 21: a session that never began had no cipher (not "none"),
    and the server's facts never came; this side's, which need no peer,
    are there."""
    tok, _ = loop_token
    with socket.socket() as s:
        s.bind((LOOP, 0))   # bound, not listening: refused
        res = loop_doctor(linerate_bin, s.getsockname()[1], "--json",
                          env=env_without_token({"LINERATE_TOKEN": tok}))
    why = describe(res)
    assert res.returncode == 1, why
    doc = strict_json(res.stdout)
    assert "refused" in doc["error"], why
    assert "cipher" not in doc, why
    for key in ("server", "bottleneck", "transfer"):
        assert key not in doc, (key, why)
    assert doc["local"]["cpu_model"], why
    assert doc["local"]["cores_usable"] > 0, why
    assert doc["local"]["congestion_control"], why


def test_tokenless_server_measured(linerate_bin, serve, loop_token):
    """Issue 21: a server without a token (bench only): the network both
    ways and the cipher on this side's CPU measured, what needs
    `serve --root` and a token said; with our token from LINERATE_TOKEN
    also where it came from (as bench says it)."""
    tok, tok_file = loop_token
    srv = serve("-B", LOOP)
    res = loop_doctor(linerate_bin, srv.port, "-t", "0.5", "--size", "1M")
    why = describe(res)
    assert res.returncode == 1, why
    assert "this server has no token" in res.stderr, why
    assert "serve --root DIR --token-file FILE" in res.stderr, why
    assert "measuring a transfer" not in res.stderr, why
    for stage in ("network, to the server", "network, from the server"):
        assert re.search(re.escape(stage) + r" +\d+\.\d .*clear",
                         res.stdout), why
    assert re.search(r"cipher \(this CPU\) +\d+\.\d .*this side seals",
                     res.stdout), why
    assert "not known: it has no token" in res.stdout, why

    res = loop_doctor(linerate_bin, srv.port, "--json", "-t", "0.5",
                      "--size", "1M")
    why = describe(res)
    assert res.returncode == 1, why
    doc = strict_json(res.stdout)
    assert doc["server_without_token"] is True, why
    for key in ("network", "network_reverse", "cipher"):
        assert doc["stages"][key]["bytes_per_second"] > 0, (key, why)
    assert "destination_write" not in doc["stages"], why
    assert "transfer" not in doc and "server" not in doc, why
    assert doc["cipher"] == "none", why   # the network went in clear
    assert "--token-file" in doc["error"], why

    # our token from the environment: the server's words, where the token
    # came from, and the stages all the same
    res = loop_doctor(linerate_bin, srv.port, "-t", "0.5", "--size", "1M",
                      env=env_without_token({"LINERATE_TOKEN": tok}))
    why = describe(res)
    assert res.returncode == 1, why
    assert "this server has no token" in res.stderr, why
    assert "LINERATE_TOKEN in your environment" in res.stderr, why
    assert re.search(r"network, to the server +\d+\.\d", res.stdout), why
    # from a file: no word of the environment
    res = loop_doctor(linerate_bin, srv.port, "--token-file", tok_file,
                      "-t", "0.5", "--size", "1M",
                      env=env_without_token({"LINERATE_TOKEN": tok}))
    why = describe(res)
    assert res.returncode == 1, why
    assert "this server has no token" in res.stderr, why
    assert "LINERATE_TOKEN" not in res.stderr, why
    assert re.search(r"network, to the server +\d+\.\d", res.stdout), why


def test_token_server_without_token(linerate_bin, serve, loop_token,
                                    tmp_path):
    """No token to hand and a server that wants one: asked first, then
    a usage error that says so; nothing written in its root."""
    _, tok_file = loop_token
    root = tmp_path / "root"
    root.mkdir()
    srv = serve("-B", LOOP, "--root", root, "--token-file", tok_file)
    res = loop_doctor(linerate_bin, srv.port, "-t", "0.5", "--size", "1M")
    why = describe(res)
    assert res.returncode == 2, why
    assert "no token: the server wants one" in res.stderr, why
    assert tree_files(root) == [], why


def test_verdict_names_what_held_the_transfer(linerate_bin, serve,
                                              loop_token, tmp_path):
    """Issue 22: the slowest stage is said to have held the transfer only
    when the transfer came near its figure; else the verdict says so and
    gives the transfer's facts (both ends on this machine here)."""
    _, tok_file = loop_token
    root = tmp_path / "root"
    root.mkdir()
    srv = serve("-B", LOOP, "--root", root, "--token-file", tok_file)
    args = ("--token-file", tok_file, "-t", "0.5", "--size", "32M")
    res = loop_doctor(linerate_bin, srv.port, "--json", *args)
    why = describe(res)
    assert res.returncode == 0, why
    doc = strict_json(res.stdout)
    b, x = doc["bottleneck"], doc["transfer"]
    assert b["held_transfer"] == (b["transfer_share"] >= 0.7), why
    if b["held_transfer"]:
        assert b["verdict"].startswith("Limited by "), why
    else:
        assert "Limited by" not in b["verdict"], why
        assert "that stage did not hold it" in b["verdict"], why
    assert x["same_machine"] is True, why
    assert x["cpus_this_machine"] == os.cpu_count(), why
    assert x["cpu_cores_this_side"] > 0, why
    assert x["cpu_cores_this_machine"] > 0, why
    res = loop_doctor(linerate_bin, srv.port, *args)
    out = res.stdout
    assert res.returncode == 0, describe(res)
    assert ("<- limits" in out) == ("Limited by" in out), out
    assert ("<- slowest" in out) == ("did not hold it" in out), out
    assert tree_files(root) == [], out
