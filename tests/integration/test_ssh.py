# SPDX-License-Identifier: MIT
"""The far end started over ssh (docs/linerate.1, "THE FAR END OVER
SSH"): `linerate send PATH USER@HOST:DIR` and `-e CMD` against a real
OpenSSH server that each test starts in test host B (sshutil.SshHost):
its own host key, an authorized key made for the test, a config of its
own; all removed afterwards. Every case is checked byte for byte, or by
its message and exit status. Root only (sshd in a namespace); skipped
with the reason otherwise.
"""

import json
import os
import re
import shutil
import signal
import subprocess

import pytest

from sshutil import SshHost, TEST_USER, ssh_skip_reason
from util import wait_until
from lrproc import strict_json
from xferutil import (MiB, compare_tree, end_event, make_tree, same_file,
                      write_random)

# a token as linerate writes one: 8 groups of 4 base32 digits
TOKEN_RE = re.compile(rb"\b[a-z2-7]{4}(?:-[a-z2-7]{4}){7}\b")


@pytest.fixture
def sh(hosts, linerate_bin):
    why = ssh_skip_reason()
    if why:
        pytest.skip(why)
    with SshHost(hosts, linerate_bin) as s:
        yield s


def text(res):
    return (res.stdout + res.stderr).decode(errors="replace")


def far(sh, path=""):
    return f"root@{sh.hosts.addr_b}:{path}"


def test_push_a_file_with_user_at_host(sh, tmp_path):
    """USER@HOST: ssh from PATH (its config gives port and key), the far
    end started there; as scp names it: a missing DEST (or a file there)
    is the file's name, DEST/ or a directory there takes it in."""
    src = write_random(tmp_path / "big.bin", 3 * MiB)
    dest = os.path.join(sh.dir, "dst")
    res = sh.run_client(["send", "--json", str(src), far(sh, dest)])
    assert res.returncode == 0, text(res)
    end = end_event(res.stdout.decode())
    assert end["ok"] is True and end["files_ok"] == 1, end
    same_file(src, dest)
    assert not sh.far_linerates(), "the far end outlived the transfer"
    # a file there: replaced as any file is (with --overwrite)
    res = sh.run_client(["send", "-q", str(src), far(sh, dest)])
    assert res.returncode == 0, text(res)  # up to date
    other = write_random(tmp_path / "other.bin", 1000)
    res = sh.run_client(["send", "-q", str(other), far(sh, dest)])
    assert res.returncode == 1 and b"--overwrite" in res.stderr, text(res)
    same_file(src, dest)
    res = sh.run_client(["send", "-q", "--overwrite", str(other),
                         far(sh, dest)])
    assert res.returncode == 0, text(res)
    same_file(other, dest)
    # DEST/ and a directory there: into it
    d1 = os.path.join(sh.dir, "d1")
    res = sh.run_client(["send", "-q", str(src), far(sh, d1) + "/"])
    assert res.returncode == 0, text(res)
    same_file(src, os.path.join(d1, "big.bin"))
    res = sh.run_client(["send", "-q", str(other), far(sh, d1)])
    assert res.returncode == 0, text(res)
    same_file(other, os.path.join(d1, "other.bin"))


def test_push_a_tree_with_a_custom_rsh_command(sh, tmp_path):
    """-e 'ssh -p 2222 -i KEY ...' (no config), a host without USER@: the
    tree arrives whole."""
    top = tmp_path / "tree"
    make_tree(str(top))
    dest = os.path.join(sh.dir, "trees")
    res = sh.run_client(["send", "-e", sh.rsh(), "-q", str(top),
                         f"{sh.hosts.addr_b}:{dest}"])
    assert res.returncode == 0, text(res)
    compare_tree(str(top), os.path.join(dest, "tree"))


def test_push_standard_input_and_a_home_relative_dir(sh, tmp_path):
    """`send - USER@HOST:DIR/NAME` as a user who is not root: DIR relative
    to that user's home, the file owned by that user."""
    pw = sh.ensure_user()
    data = os.urandom(1 * MiB + 17)
    res = sh.run_client(["send", "-q", "-", f"{TEST_USER}@farhost:"
                         "in/piped.bin"], input=data, stdin=None)
    assert res.returncode == 0, text(res)
    got = os.path.join(pw.pw_dir, "in", "piped.bin")
    with open(got, "rb") as f:
        assert f.read() == data
    assert os.stat(got).st_uid == pw.pw_uid


def test_push_to_tilde_and_to_an_absolute_dir(sh, tmp_path):
    """A leading ~ is the far login's home; an absolute DIR is that."""
    pw = sh.ensure_user()
    src = write_random(tmp_path / "t.bin", 100_000)
    res = sh.run_client(["send", "-q", str(src), f"{TEST_USER}@farhost:~/x/"])
    assert res.returncode == 0, text(res)
    same_file(src, os.path.join(pw.pw_dir, "x", "t.bin"))
    res = sh.run_client(["send", "-q", str(src), f"{TEST_USER}@farhost:~/y"])
    assert res.returncode == 0, text(res)
    same_file(src, os.path.join(pw.pw_dir, "y"))
    absdir = os.path.join(pw.pw_dir, "abs")
    res = sh.run_client(["send", "-q", str(src),
                         f"{TEST_USER}@farhost:{absdir}/"])
    assert res.returncode == 0, text(res)
    same_file(src, os.path.join(absdir, "t.bin"))


def test_linerate_missing_on_the_far_end(sh, tmp_path):
    src = write_random(tmp_path / "f.bin", 1000)
    res = sh.run_client(["send", "--remote-path", "/nonexistent/linerate",
                         str(src), far(sh, "d")], remote_path=False)
    assert res.returncode == 1, text(res)
    err = res.stderr.decode()
    assert f"linerate is not installed on {sh.hosts.addr_b}" in err, err
    assert "ssh said" in err and "/nonexistent/linerate" in err, err
    assert "--remote-path" in err, err


def test_linerate_not_on_the_far_path(sh, tmp_path):
    """No --remote-path and no linerate on the far login's PATH: the far
    shell's "command not found", quoted."""
    src = write_random(tmp_path / "f.bin", 1000)
    res = sh.run_client(["send", str(src), far(sh, "d")], remote_path=False)
    assert res.returncode == 1, text(res)
    err = res.stderr.decode()
    assert f"linerate is not installed on {sh.hosts.addr_b}" in err, err
    assert "not found" in err and "--remote-path" in err, err


def test_a_wrong_ssh_key_says_what_ssh_said(sh, tmp_path):
    src = write_random(tmp_path / "f.bin", 1000)
    res = sh.run_client(["send", "-e", sh.rsh(key="wrong_id"), str(src),
                         far(sh, "d")])
    assert res.returncode == 1, text(res)
    assert "Permission denied" in res.stderr.decode(), text(res)
    assert not os.path.exists(os.path.join(sh.dir, "d"))


def _slow_push(sh, tmp_path, dest):
    src = write_random(tmp_path / "slow.bin", 48 * MiB)
    proc = sh.popen_client(["send", "--json", "--limit", "8M", str(src),
                            far(sh, dest + "/")], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    # a journal record (40-byte header, 24-byte records) names chunks
    # that reached the far disk: only then has a resume something to keep
    journal = os.path.join(dest, ".slow.bin.lrjournal")
    wait_until(lambda: os.path.exists(journal) and
               os.path.getsize(journal) >= 40 + 4 * 24, 30,
               what="the far end writing")
    assert proc.poll() is None
    return src, proc


def _far_listening(sh):
    res = sh.hosts.run_b(["ss", "-Hltn"], capture_output=True, text=True,
                         timeout=10)
    return [line for line in res.stdout.splitlines()
            if f":{2222} " not in line]


def test_client_killed_the_far_end_exits_and_resume(sh, tmp_path):
    """SIGKILL of the client: within 5 s the far end has exited and its
    port is closed; the same command again sends only the rest."""
    dest = os.path.join(sh.dir, "resume")
    src, proc = _slow_push(sh, tmp_path, dest)
    assert sh.far_linerates()
    proc.kill()
    proc.communicate(timeout=10)
    wait_until(lambda: not sh.far_linerates(), 5,
               what="the far end's exit after the client's death")
    assert not _far_listening(sh), _far_listening(sh)
    res = sh.run_client(["send", "--json", str(src), far(sh, dest + "/")],
                        timeout=90)
    assert res.returncode == 0, text(res)
    end = end_event(res.stdout.decode())
    assert end["bytes_already_held"] > 0 and end["bytes"] < 48 * MiB, end
    same_file(src, os.path.join(dest, "slow.bin"))


def test_far_end_killed_the_client_says_so(sh, tmp_path):
    dest = os.path.join(sh.dir, "killed")
    _src, proc = _slow_push(sh, tmp_path, dest)
    for line in sh.far_linerates():
        os.kill(int(line.split()[0]), signal.SIGKILL)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1, (out, err)
    said = out + err  # --json: the message is in the end event
    assert b"far end" in said and sh.hosts.addr_b.encode() in said, said


def test_the_token_is_in_no_argv_or_environment(sh, tmp_path):
    """During a transfer no /proc/*/cmdline or /proc/*/environ on this
    machine (both test hosts share it) holds a token."""
    dest = os.path.join(sh.dir, "tok")
    _src, proc = _slow_push(sh, tmp_path, dest)
    seen = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        for what in ("cmdline", "environ"):
            try:
                with open(f"/proc/{pid}/{what}", "rb") as f:
                    if TOKEN_RE.search(f.read()):
                        seen.append((pid, what))
            except OSError:
                pass
    proc.kill()
    proc.communicate(timeout=10)
    assert not seen, seen


def test_no_ssh_refuses_user_at(sh, tmp_path):
    src = write_random(tmp_path / "f.bin", 10)
    res = sh.run_client(["send", "--no-ssh", str(src), far(sh, "d")])
    assert res.returncode == 2, text(res)
    assert "--no-ssh" in res.stderr.decode()
    assert not sh.far_linerates()


def test_nothing_listens_so_ssh_starts_the_far_end(sh, tmp_path):
    """No USER@, no -e, no token: nothing listens on HOST's linerate port,
    so linerate says so in one line and starts the far end over ssh (the
    login from ssh's config), DIR below its home."""
    pw = sh.ensure_user()
    src = write_random(tmp_path / "f.bin", 200_000)
    res = sh.run_client(["send", "-q", str(src), f"{sh.hosts.addr_b}:fb/"])
    assert res.returncode == 0, text(res)
    err = res.stderr.decode()
    assert (f"no linerate server on {sh.hosts.addr_b}:7350; starting one "
            "over ssh") in err, err
    same_file(src, os.path.join(pw.pw_dir, "fb", "f.bin"))


def test_no_fallback_for_an_absolute_path(sh, tmp_path):
    """HOST:/abs with nothing listening: below a server's root that path
    is another place than over ssh, so linerate starts nothing and says
    how to ask for ssh."""
    src = write_random(tmp_path / "f.bin", 1000)
    dest = os.path.join(sh.dir, "abs")
    res = sh.run_client(["send", "-q", str(src), f"{sh.hosts.addr_b}:{dest}"])
    assert res.returncode != 0, text(res)
    assert "write USER@" in res.stderr.decode(), text(res)
    assert not os.path.exists(dest)
    assert not sh.far_linerates()


def test_no_ssh_turns_the_fallback_off(sh, tmp_path):
    src = write_random(tmp_path / "f.bin", 1000)
    res = sh.run_client(["send", "--no-ssh", "--token-file", "/dev/null",
                         str(src), f"{sh.hosts.addr_b}:d"])
    assert res.returncode != 0, text(res)
    assert "over ssh" not in res.stderr.decode(), text(res)
    assert not os.path.exists(os.path.join(sh.dir, "d"))


def test_get_files_and_a_tree_over_ssh(sh, tmp_path):
    """get USER@HOST:PATH... DEST: two absolute paths in different
    directories (the far root is the deepest one holding both) and, as a
    user who is not root, a tree relative to the home."""
    base = os.path.join(sh.dir, "share")
    os.makedirs(os.path.join(base, "a"))
    os.makedirs(os.path.join(base, "b"))
    f1 = write_random(os.path.join(base, "a", "one.bin"), 2 * MiB + 5)
    f2 = write_random(os.path.join(base, "b", "two.bin"), 77_777)
    dest = tmp_path / "got"
    res = sh.run_client(["get", "-q", far(sh, f1), far(sh, f2), str(dest)])
    assert res.returncode == 0, text(res)
    same_file(f1, dest / "one.bin")
    same_file(f2, dest / "two.bin")
    pw = sh.ensure_user()
    top = os.path.join(pw.pw_dir, "tree")
    make_tree(top)
    subprocess.run(["chown", "-R", f"{pw.pw_uid}:{pw.pw_gid}", top],
                   check=True, timeout=30)
    res = sh.run_client(["get", "-q", f"{TEST_USER}@farhost:tree",
                         str(tmp_path / "t")])
    assert res.returncode == 0, text(res)
    compare_tree(top, str(tmp_path / "t" / "tree"))


def test_get_to_standard_output_over_ssh(sh, tmp_path):
    src = write_random(os.path.join(sh.dir, "out.bin"), 1 * MiB + 3)
    res = sh.run_client(["get", "-q", far(sh, src), "-"])
    assert res.returncode == 0, text(res)
    with open(src, "rb") as f:
        assert res.stdout == f.read()


def test_get_refuses_paths_with_no_directory_in_common(sh, tmp_path):
    res = sh.run_client(["get", far(sh, "/etc/hostname"),
                         far(sh, "rel/file"), str(tmp_path)])
    assert res.returncode != 0, text(res)
    assert "below one directory" in res.stderr.decode(), text(res)


def test_bench_over_ssh(sh):
    """bench USER@HOST: `serve --ssh` started there for the test, the
    report as from a running server, the far end gone afterwards."""
    res = sh.run_client(["bench", "-J", "-t", "1", "-b", "200M",
                         far(sh)[:-1]])
    assert res.returncode == 0, text(res)
    doc = strict_json(res.stdout.decode())
    assert doc["end"]["sum_received"]["bytes"] > 0, doc["end"]
    assert doc["start"]["connected"][0]["remote_host"] == sh.hosts.addr_b
    wait_until(lambda: not sh.far_linerates(), 5, what="the far end's exit")


def test_bench_falls_back_to_ssh_when_nothing_listens(sh):
    sh.ensure_user()  # the login ssh's config names
    res = sh.run_client(["bench", "-t", "1", "-b", "100M", sh.hosts.addr_b])
    assert res.returncode == 0, text(res)
    assert "starting one over ssh" in res.stderr.decode(), text(res)


def test_doctor_over_ssh(sh):
    """doctor USER@HOST: every stage measured against a far end started
    over ssh, its disk test in the login's home, removed afterwards."""
    pw = sh.ensure_user()
    res = sh.run_client(["doctor", "--json", "-t", "1", "--size", "16M",
                         f"{TEST_USER}@farhost"], timeout=120)
    assert res.returncode == 0, text(res)
    doc = strict_json(res.stdout.decode())
    assert doc.get("bottleneck"), doc
    assert os.listdir(pw.pw_dir) == [], os.listdir(pw.pw_dir)
    wait_until(lambda: not sh.far_linerates(), 5, what="the far end's exit")


def test_a_far_dir_with_quotes_and_spaces_arrives_as_written(sh, tmp_path):
    """DIR reaches the far shell quoted: quotes, spaces, $ and ; are
    names, never shell words."""
    src = write_random(tmp_path / "q.bin", 5000)
    dest = os.path.join(sh.dir, "it's a $(dir); x")
    res = sh.run_client(["send", "-q", str(src), far(sh, dest + "/")])
    assert res.returncode == 0, text(res)
    same_file(src, os.path.join(dest, "q.bin"))
    # and as the name of the one file sent
    res = sh.run_client(["send", "-q", str(src), far(sh, dest + " 'f'")])
    assert res.returncode == 0, text(res)
    same_file(src, dest + " 'f'")


def test_a_host_that_a_shell_would_read_is_refused(sh, tmp_path):
    src = write_random(tmp_path / "f.bin", 10)
    res = sh.run_client(["send", str(src), "root@h$(touch x):d"])
    assert res.returncode == 2, text(res)
    assert "letters, digits" in res.stderr.decode(), text(res)


# ---- the data through ssh (a firewall in front of the far end) ----

THROUGH = "the data goes through ssh"


class Firewall:
    """An nft table in host B that drops every TCP connection coming in
    from the link except ssh's (port 2222): the far end's own port cannot
    be reached, as behind a firewall. Removed on exit."""

    def __init__(self, hosts):
        self.hosts = hosts

    def nft(self, *words, check=True):
        return self.hosts.run_b(["nft", *words], capture_output=True,
                                text=True, timeout=10, check=check)

    def __enter__(self):
        self.nft("add", "table", "inet", "lrfw")
        self.nft("add", "chain", "inet", "lrfw", "input",
                 "{ type filter hook input priority 0; policy accept; }")
        self.nft("add", "rule", "inet", "lrfw", "input", "iifname", "!=",
                 "lo", "tcp", "dport", "!=", str(2222), "drop")
        return self

    def __exit__(self, *exc):
        self.nft("delete", "table", "inet", "lrfw", check=False)


@pytest.fixture
def fw(sh):
    if shutil.which("nft") is None:
        pytest.skip("'nft' not installed (Debian nftables)")
    with Firewall(sh.hosts) as f:
        yield f


def test_a_firewall_sends_the_data_through_ssh(sh, fw, tmp_path):
    """The far end's port dropped: within about 2 s the push goes through
    the ssh session instead, said in one line with the reason, still
    encrypted and verified; a tree and a pull too."""
    src = write_random(tmp_path / "fw.bin", 24 * MiB + 3)
    dest = os.path.join(sh.dir, "fw")
    saved = tmp_path / "runs.jsonl"
    res = sh.run_client(["send", "--json", "--save", "fw", "--results",
                         str(saved), str(src), far(sh, dest + "/")],
                        timeout=90)
    assert res.returncode == 0, text(res)
    err = res.stderr.decode()
    assert err.count(THROUGH) == 1 and "timed out" in err, err
    end = end_event(res.stdout.decode())
    assert end["ok"] is True and end["cipher"] != "none", end
    same_file(src, os.path.join(dest, "fw.bin"))
    # the saved run's link is the route to the far host (host A's end of
    # the veth), not the loopback relay the streams went through
    link = json.loads(saved.read_text().splitlines()[-1])["facts"]["link"]
    assert link["interface"] == sh.hosts.if_a, link
    assert link["kind"] != "loopback", link
    top = tmp_path / "tree"
    make_tree(str(top))
    res = sh.run_client(["send", "-q", str(top), far(sh, dest)], timeout=90)
    assert res.returncode == 0, text(res)
    compare_tree(str(top), os.path.join(dest, "tree"))
    res = sh.run_client(["get", "-q", far(sh, os.path.join(dest, "fw.bin")),
                         str(tmp_path / "back")], timeout=90)
    assert res.returncode == 0, text(res)
    assert THROUGH in res.stderr.decode(), text(res)
    same_file(src, tmp_path / "back")  # one file: DEST is its name
    wait_until(lambda: not sh.far_linerates(), 5, what="the far end's exit")


def test_via_ssh_forces_it_and_bench_and_doctor_go_through(sh, tmp_path):
    """--via-ssh with no firewall: no line about a failed connection, the
    bytes arrive; bench's test and doctor's stages through ssh too."""
    src = write_random(tmp_path / "v.bin", 5 * MiB)
    dest = os.path.join(sh.dir, "via")
    res = sh.run_client(["send", "--via-ssh", "-q", str(src),
                         far(sh, dest + "/")], timeout=90)
    assert res.returncode == 0, text(res)
    assert THROUGH not in res.stderr.decode(), text(res)
    same_file(src, os.path.join(dest, "v.bin"))
    res = sh.run_client(["bench", "--via-ssh", "-J", "-t", "1", "-P", "2",
                         far(sh)[:-1]], timeout=60)
    assert res.returncode == 0, text(res)
    doc = strict_json(res.stdout.decode())
    assert doc["end"]["sum_received"]["bytes"] > 0, doc["end"]
    # the link is ssh's route to the far host, not the loopback relay
    link = doc["end"]["linerate"]["link"]
    assert link.get("interface") == sh.hosts.if_a, link
    pw = sh.ensure_user()
    res = sh.run_client(["doctor", "--via-ssh", "--json", "-t", "1",
                         "--size", "8M", f"{TEST_USER}@farhost"], timeout=120)
    assert res.returncode == 0, text(res)
    doc = strict_json(res.stdout.decode())
    assert doc.get("bottleneck")
    assert doc["link"]["interface"] == sh.hosts.if_a, doc["link"]
    assert os.listdir(pw.pw_dir) == [], os.listdir(pw.pw_dir)
    wait_until(lambda: not sh.far_linerates(), 5, what="the far end's exit")


def test_via_ssh_far_end_killed_and_client_killed(sh, fw, tmp_path):
    """Through ssh as directly: the far end killed, the client exits 1
    naming it; the client killed, the far end exits within 5 s and a
    re-run resumes."""
    dest = os.path.join(sh.dir, "vk")
    _src, proc = _slow_push(sh, tmp_path, dest)
    for line in sh.far_linerates():
        os.kill(int(line.split()[0]), signal.SIGKILL)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1, (out, err)
    assert THROUGH.encode() in err, err
    assert b"far end" in out + err, (out, err)
    wait_until(lambda: not sh.far_linerates(), 5, what="no far end left")
    dest = os.path.join(sh.dir, "vk2")
    src, proc = _slow_push(sh, tmp_path, dest)
    proc.kill()
    proc.communicate(timeout=10)
    wait_until(lambda: not sh.far_linerates(), 5,
               what="the far end's exit after the client's death")
    res = sh.run_client(["send", "--json", str(src), far(sh, dest + "/")],
                        timeout=120)
    assert res.returncode == 0, text(res)
    end = end_event(res.stdout.decode())
    assert end["bytes_already_held"] > 0, end
    same_file(src, os.path.join(dest, "slow.bin"))


# --copy-self: the far login's PATH has no linerate (no --remote-path);
# the far shell keeps the copy in /tmp/linerate.XXXXXX (this machine's
# /tmp: the test hosts share the file system)
COPYING = "there for this run"


def _far_copies(sh):
    """Processes in host B running a copy made by --copy-self."""
    res = sh.hosts.run_b(["ps", "-eo", "pid=,args="],
                         capture_output=True, text=True, timeout=10)
    return [line for line in res.stdout.splitlines()
            if re.search(r"/linerate\.[A-Za-z0-9]{6}/linerate ", line)]


def _copy_dirs():
    return {n for n in os.listdir("/tmp") if re.fullmatch(
        r"linerate\.[A-Za-z0-9]{6}", n)}


def _gone(sh, before):
    wait_until(lambda: not _far_copies(sh) and _copy_dirs() <= before, 10,
               what="the far copy ended and its directory removed")


def test_copy_self_push_get_and_bench(sh, tmp_path):
    """No linerate on the far PATH: with --copy-self each command copies
    one there (said in one line), works, and leaves nothing behind."""
    before = _copy_dirs()
    src = write_random(tmp_path / "c.bin", 3 * MiB + 11)
    dest = os.path.join(sh.dir, "copied")
    res = sh.run_client(["send", "--copy-self", "--json", str(src),
                         far(sh, dest + "/")], remote_path=False)
    assert res.returncode == 0, text(res)
    err = res.stderr.decode()
    assert err.count(COPYING) == 1, err
    assert f"no linerate on {sh.hosts.addr_b}" in err, err
    assert end_event(res.stdout.decode())["ok"] is True
    same_file(src, os.path.join(dest, "c.bin"))
    _gone(sh, before)
    back = tmp_path / "back"
    res = sh.run_client(["get", "--copy-self", "-q",
                         far(sh, os.path.join(dest, "c.bin")), str(back)],
                        remote_path=False)
    assert res.returncode == 0, text(res)
    assert COPYING in res.stderr.decode(), text(res)
    same_file(src, back)  # one file into a missing DEST: its name
    _gone(sh, before)
    res = sh.run_client(["bench", "--copy-self", "-J", "-t", "1", "-b",
                         "100M", far(sh)[:-1]], remote_path=False)
    assert res.returncode == 0, text(res)
    assert strict_json(res.stdout.decode())["end"]["sum_received"][
        "bytes"] > 0
    _gone(sh, before)


def test_copy_self_runs_the_far_ends_own_when_there(sh, tmp_path):
    src = write_random(tmp_path / "o.bin", 100_000)
    dest = os.path.join(sh.dir, "own")
    res = sh.run_client(["send", "--copy-self", "-q", str(src),
                         far(sh, dest + "/")])
    assert res.returncode == 0, text(res)
    assert COPYING not in res.stderr.decode(), text(res)
    same_file(src, os.path.join(dest, "o.bin"))


def _elf_for(path, machine):
    """An ELF header of a static 64-bit little-endian program for
    machine (EM_*): enough for linerate to tell what it runs on."""
    hdr = bytearray(512)
    hdr[0:4] = b"\x7fELF"
    hdr[4], hdr[5], hdr[6] = 2, 1, 1
    hdr[16:18] = (2).to_bytes(2, "little")         # ET_EXEC
    hdr[18:20] = machine.to_bytes(2, "little")
    hdr[32:40] = (64).to_bytes(8, "little")        # e_phoff
    hdr[54:56] = (56).to_bytes(2, "little")        # e_phentsize
    hdr[56:58] = (1).to_bytes(2, "little")         # e_phnum
    hdr[64:68] = (1).to_bytes(4, "little")         # PT_LOAD
    with open(path, "wb") as f:
        f.write(hdr)
    os.chmod(path, 0o755)
    return path


def test_copy_self_refuses_a_program_for_another_machine(sh, tmp_path):
    before = _copy_dirs()
    other = _elf_for(tmp_path / "linerate-aarch64", 183)  # EM_AARCH64
    src = write_random(tmp_path / "f.bin", 1000)
    res = sh.run_client(["send", f"--copy-self={other}", str(src),
                         far(sh, "nope")], remote_path=False)
    assert res.returncode == 1, text(res)
    err = res.stderr.decode()
    assert "another machine" in err and "ELF machine 183" in err, err
    assert COPYING not in err, err
    assert not os.path.exists(os.path.join(sh.dir, "nope"))
    _gone(sh, before)
    # and --remote-path must then be one program
    res = sh.run_client(["send", "--copy-self", "--remote-path",
                         "sudo linerate", str(src), far(sh, "nope")],
                        remote_path=False)
    assert res.returncode != 0, text(res)
    assert "one path" in res.stderr.decode(), text(res)


def test_copy_self_client_killed_the_copy_goes(sh, tmp_path):
    """The client killed mid-transfer: the far copy exits and the far
    shell removes its directory."""
    before = _copy_dirs()
    src = write_random(tmp_path / "slow.bin", 48 * MiB)
    dest = os.path.join(sh.dir, "ck")
    proc = sh.popen_client(["send", "--copy-self", "--limit", "8M",
                            str(src), far(sh, dest + "/")], remote_path=False,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: os.path.exists(os.path.join(dest, ".slow.bin"
                                                       ".lrjournal")), 30,
                   what="the far copy writing")
        assert _far_copies(sh), "no far copy running"
        assert _copy_dirs() - before, "no copy directory in /tmp"
    finally:
        proc.kill()
        proc.communicate(timeout=10)
    _gone(sh, before)
