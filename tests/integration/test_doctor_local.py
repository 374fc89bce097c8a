# SPDX-License-Identifier: MIT
"""linerate doctor --local [DIR]: the machine alone. As root through a
veth pair between two network namespaces of its own (none left
afterwards, no interface, nothing in DIR); as a user over loopback, and
said so. Human and JSON. Its destination stage is doctor's probe, the
figure of which test_doctor.py holds to dd conv=fdatasync."""

import json
import os
import pathlib
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from lrproc import describe, strict_json
from util import wait_until
from xferutil import env_without_token


def doctor_local(binary, *args, user=None, timeout=120, quick=True):
    argv = [binary, "doctor", "--local",
            *(["-t", "0.5", "--size", "64M"] if quick else []),
            *[str(a) for a in args]]
    if user:
        argv = ["setpriv", f"--reuid={user}", f"--regid={user}",
                "--clear-groups", "--"] + argv
    return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=timeout, env=env_without_token())


def interfaces():
    return set(os.listdir("/sys/class/net"))


def check_doc(doc, res):
    why = describe(res)
    for key in ("network", "network_reverse", "cipher", "destination_write"):
        assert doc["stages"][key]["bytes_per_second"] > 0, (key, why)
    cap = doc["capacity"]
    for key in ("cpu_seconds_per_gb_send", "cpu_seconds_per_gb_receive",
                "can_send_bytes_per_second",
                "can_receive_bytes_per_second"):
        assert cap[key] > 0, (key, why)
    # each direction: the usable cores over its CPU per byte, unless the
    # disk holds the receiving one back
    cores = doc["machine"]["cores_usable"]
    assert cap["cpu_send_bytes_per_second"] == pytest.approx(
        cores / cap["cpu_seconds_per_gb_send"] * 1e9, rel=1e-6), why
    assert cap["can_receive_bytes_per_second"] <= \
        cap["cpu_receive_bytes_per_second"] * (1 + 1e-9), why
    assert doc["plain_tcp_bytes_per_second"] > 0, why
    assert doc["cipher_all_cores_bytes_per_second"] > 0, why
    assert doc["disk_read_bytes_per_second"] > 0, why
    assert isinstance(doc["machine"]["governor"], str), why
    assert doc["machine"]["cpus_online"] == os.cpu_count(), why
    assert isinstance(doc["advice"], list), why
    assert all(isinstance(a, str) and a for a in doc["advice"]), why
    assert doc["machine"]["kernel"].startswith(os.uname().release), why
    # each frequency policy of this machine (none in most VMs)
    root = "/sys/devices/system/cpu/cpufreq"
    policies = [d for d in (os.listdir(root) if os.path.isdir(root) else [])
                if d.startswith("policy")]
    assert len(doc["machine"]["cpufreq"]) == len(policies), why
    for c in doc["machine"]["cpufreq"]:
        assert c["cpus"] and c["max_khz"] >= 0, why


def stable_advice(doc):
    """The JSON's advice lines that two runs say alike: not those of a
    measured quota (a busy machine's share of a core, measured where no
    cgroup says it), and the server's only where this side's differ (both
    ends are this machine: said once)."""
    lines = [a for a in doc["advice"] if "quota" not in a]
    here = {a[len("this side: "):] for a in lines
            if a.startswith("this side: ")}
    return [a for a in lines if not (a.startswith("the server: ") and
                                     a[len("the server: "):] in here)]


def check_human_advice(out, doc):
    """Human output shows the advice the JSON has, after the machine
    line."""
    advice = stable_advice(doc)
    lines = out.splitlines()
    machine = next(i for i, l in enumerate(lines)
                   if l.startswith("  machine "))
    for a in advice:
        assert any(a in l for l in lines[machine + 1:]), (a, out)
    if advice:
        assert lines[machine + 1].startswith("  advice     - "), out


def test_as_root_through_namespaces(linerate_bin, tmp_path):
    if os.geteuid() != 0:
        print("skipping: not root: network namespaces need root")
        pytest.skip("not root: network namespaces need root")
    if not shutil.which("ip"):
        pytest.skip("no ip (iproute2)")
    before = interfaces()
    res = doctor_local(linerate_bin, tmp_path, "--json")
    assert res.returncode == 0, describe(res)
    doc = strict_json(res.stdout)
    assert doc["mode"] == "namespaces", describe(res)
    check_doc(doc, res)
    assert doc["transfer"]["bytes"] == 64 << 20
    # the verdict per link: the link, or which end of this machine
    links = {l["link"]: l["limited_by"] for l in doc["links"]}
    assert set(links) >= {"gigabit Ethernet", "10 GbE"}, links
    assert all(v == "link" or v.endswith(("sending", "receiving"))
               for v in links.values()), links
    # the namespaces went with their processes: no interface, no file
    assert interfaces() == before
    assert os.listdir(tmp_path) == []
    res = doctor_local(linerate_bin, tmp_path)
    assert res.returncode == 0, describe(res)
    out = res.stdout
    check_human_advice(out, doc)
    assert "through a veth pair between two network namespaces" in out
    assert re.search(r"This machine can receive an encrypted transfer at "
                     r"\d+ MB/s \(the (CPU|disk) limits it\) and send one at "
                     r"\d+ MB/s", out), out
    assert re.search(r"on gigabit Ethernet \(117\.7 MB/s\) the "
                     r"(link will limit it|CPU will|disk will)", out), out
    line = out.strip().splitlines()[-1]
    assert re.fullmatch(r".+ \| [\d.]+ \| .+ \| [a-z0-9-]+ \| \d+ / \d+",
                        line), line
    # the default run (256M, 3 s a direction) within its minute
    t0 = time.monotonic()
    res = doctor_local(linerate_bin, tmp_path, "--json", quick=False)
    assert res.returncode == 0, describe(res)
    assert time.monotonic() - t0 < 60
    assert strict_json(res.stdout)["transfer"]["bytes"] == 256 << 20


@pytest.fixture
def open_dir():
    """A directory another user may reach and write (pytest's tmp_path
    sits below root's mode-700 one), removed afterwards."""
    d = tempfile.mkdtemp(prefix="lr-doctor-local-")
    os.chmod(d, 0o777)
    yield pathlib.Path(d)
    shutil.rmtree(d, ignore_errors=True)


def test_as_a_user_over_loopback(linerate_bin, open_dir):
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root to become another user (setpriv)")
    nobody = pwd.getpwnam("nobody").pw_uid
    tmp_path = open_dir
    res = doctor_local(linerate_bin, tmp_path, "--json", user=nobody)
    assert res.returncode == 0, describe(res)
    doc = strict_json(res.stdout)
    assert doc["mode"] == "loopback", describe(res)
    assert "not root" in doc["why_loopback"]
    check_doc(doc, res)
    res = doctor_local(linerate_bin, tmp_path, user=nobody)
    assert res.returncode == 0, describe(res)
    assert "over loopback" in res.stdout and "not root" in res.stdout
    check_human_advice(res.stdout, doc)
    assert os.listdir(tmp_path) == []


def test_local_refusals(linerate_bin, tmp_path):
    res = doctor_local(linerate_bin, tmp_path, tmp_path)
    assert res.returncode == 2, describe(res)
    assert "--local takes one DIR" in res.stderr
    # what names a far end is refused, not dropped; a transfer too short
    # to time each end's CPU too
    for extra in (["-p", "7000"], ["-6"], ["--link-speed", "1g"],
                  ["--no-ssh"]):
        res = doctor_local(linerate_bin, tmp_path, *extra)
        assert res.returncode == 2, (extra, describe(res))
        assert "--local takes none of" in res.stderr, res.stderr
    res = subprocess.run([linerate_bin, "doctor", "--local", "--size", "8M",
                          str(tmp_path)], capture_output=True, text=True,
                         timeout=30, stdin=subprocess.DEVNULL)
    assert res.returncode == 2 and "at least 64M" in res.stderr, \
        describe(res)
    res = doctor_local(linerate_bin, tmp_path / "missing", "--json")
    assert res.returncode == 1, describe(res)
    assert "No such file or directory" in json.loads(res.stdout)["error"]


def test_interrupted_leaves_nothing(linerate_bin, tmp_path):
    """SIGINT while the transfer runs: exit 1 said, no test file in DIR
    or in /dev/shm, the server child gone."""
    shm = set(p for p in os.listdir("/dev/shm")
              if p.startswith(".linerate-doctor"))
    proc = subprocess.Popen([linerate_bin, "doctor", "--local", "-t", "0.5",
                             "--size", "512M", str(tmp_path)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stderr:
            if "measuring a transfer" in line:
                break
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert proc.returncode == 1, (out, err)
    assert "interrupted" in err, err
    assert os.listdir(tmp_path) == []
    assert set(p for p in os.listdir("/dev/shm")
               if p.startswith(".linerate-doctor")) <= shm
    # its server child (a fork: the same command line) gone too
    wait_until(lambda: subprocess.run(
        ["pgrep", "-f", "--", f"--size 512M {tmp_path}"], capture_output=True,
        timeout=10).returncode == 1, 10, what="the server child to end")


def test_quota_named_and_advised(linerate_bin, tmp_path):
    """Under a cgroup v1 CPU quota of fewer cores than the machine has
    online: the machine line names the quota and the human output has the
    JSON's advice line about it."""
    from test_doctor import Cgroup, cgroup_v1_skip_reason, in_cgroups
    reason = cgroup_v1_skip_reason("cpu", ["cpu.cfs_quota_us",
                                           "cpu.cfs_period_us"])
    if reason:
        print(f"skipping: {reason}")
        pytest.skip(reason)
    online = os.cpu_count()
    cores = online - 0.5 if online >= 2 else 0.5
    group = Cgroup("cpu", f"lrdoctorlocal{os.getpid()}")
    try:
        group.write("cpu.cfs_period_us", 100000)
        group.write("cpu.cfs_quota_us", int(cores * 100000))
        argv = ["doctor", "--local", "-t", "0.5", "--size", "64M",
                str(tmp_path)]
        runs = []
        for extra in (["--json"], []):
            runs.append(subprocess.run(
                in_cgroups([group.tasks], [linerate_bin, *argv, *extra]),
                stdin=subprocess.DEVNULL, capture_output=True, text=True,
                timeout=180, env=env_without_token()))
            assert runs[-1].returncode == 0, describe(runs[-1])
    finally:
        group.remove()
    doc = strict_json(runs[0].stdout)
    why = describe(runs[0])
    assert doc["machine"]["cores_usable"] == pytest.approx(cores), why
    assert any("quota" in a and "this side" in a for a in doc["advice"]), \
        why
    out = runs[1].stdout
    if online >= 2:
        assert f"{cores:.2f} cores usable of {online} online (a cgroup " \
            "CPU quota)" in out, out
    lines = out.splitlines()
    machine = next(i for i, l in enumerate(lines)
                   if l.startswith("  machine "))
    assert lines[machine + 1].startswith("  advice     - this side: "), out
    assert "quota" in lines[machine + 1], out
    check_human_advice(out, doc)
