# SPDX-License-Identifier: MIT
"""The service files of contrib/: the systemd unit passes
`systemd-analyze verify` and its command line serves a push; the OpenWrt
procd script, run with stand-ins for procd's and uci's shell functions,
makes a token only root reads and a command line that serves a push."""

import os
import pathlib
import re
import shlex
import shutil
import stat
import subprocess

import pytest

from lrproc import LineCollector, describe

CONTRIB = pathlib.Path(__file__).resolve().parents[2] / "contrib"
LISTEN_RE = r"^Server listening on (\S+) port (\d+)$"


def unit_text(binary):
    """The unit as meson writes it, its binary the one under test."""
    text = (CONTRIB / "systemd" / "linerate.service.in").read_text()
    return text.replace("@BINDIR@", str(pathlib.Path(binary).parent))


def unit_values(text, key):
    return [line.split("=", 1)[1] for line in text.splitlines()
            if line.startswith(key + "=")]


def serve_and_push(argv, root, token, tmp_path, linerate_bin):
    """Start argv (a serve), push one file to it with token; the file's
    bytes as they arrived below root."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = LineCollector(proc.stdout, "serve stdout")
    log = LineCollector(proc.stderr, "serve log")
    try:
        try:
            port = out.wait_for(LISTEN_RE, 10).group(2)
        except (TimeoutError, EOFError) as exc:
            raise AssertionError(f"{argv} did not start: {exc}; "
                                 f"{log.text()!r}") from None
        src = tmp_path / "hello.txt"
        src.write_bytes(b"served by the service's command line\n")
        env = dict(os.environ, LINERATE_TOKEN=token)
        res = subprocess.run([linerate_bin, "send", "-q", "-p", port,
                              str(src), "127.0.0.1:in/"], env=env,
                             stdin=subprocess.DEVNULL, capture_output=True,
                             text=True, timeout=60)
        assert res.returncode == 0, describe(res)
        return (root / "in" / "hello.txt").read_bytes()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        out.join(5)
        log.join(5)


def test_systemd_unit_verifies(linerate_bin, tmp_path):
    tool = shutil.which("systemd-analyze")
    if not tool:
        pytest.skip("systemd-analyze is not installed "
                    "(scripts/deps.sh installs systemd)")
    unit = tmp_path / "linerate.service"
    unit.write_text(unit_text(linerate_bin))
    res = subprocess.run([tool, "verify", "--man=no", str(unit)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, describe(res)
    # it warns about a wrong value and goes on: no warning either
    assert "linerate.service" not in res.stderr, res.stderr
    bad = tmp_path / "bad.service"
    bad.write_text(unit.read_text().replace("ProtectSystem=strict",
                                            "ProtectSystem=strictly"))
    res = subprocess.run([tool, "verify", "--man=no", str(bad)],
                         capture_output=True, text=True, timeout=60)
    assert "bad.service:" in res.stderr, describe(res)


def test_systemd_unit_runs_as_its_own_user_inside_its_root(linerate_bin):
    text = unit_text(linerate_bin)
    user = unit_values(text, "User")
    assert user and user[0] not in ("root", "0"), user
    env = dict(w.split("=", 1)
               for v in unit_values(text, "Environment")
               for w in shlex.split(v))
    # "-": a missing root does not stop the unit; serve names it
    assert unit_values(text, "ReadWritePaths") == ["-" + env["ROOT"]]
    for key, want in (("ProtectSystem", "strict"),
                      ("NoNewPrivileges", "yes"), ("ProtectHome", "yes"),
                      ("CapabilityBoundingSet", "")):
        assert unit_values(text, key) == [want], key


def test_systemd_unit_command_serves_a_push(linerate_bin, tmp_path):
    """ExecStart with its variables as systemd fills them: ${ROOT},
    ${PORT} (0 here: any free port) and ${CREDENTIALS_DIRECTORY}, the
    credentials directory
    holding the token LoadCredential= copies."""
    text = unit_text(linerate_bin)
    root = tmp_path / "srv"
    root.mkdir()
    creds = tmp_path / "creds"
    creds.mkdir()
    token = subprocess.run([linerate_bin, "token"], capture_output=True,
                           text=True, timeout=10).stdout.strip()
    cred = unit_values(text, "LoadCredential")[0]
    (creds / cred.split(":", 1)[0]).write_text(token + "\n")
    cmd = unit_values(text, "ExecStart")[0]
    cmd = (cmd.replace("${ROOT}", str(root)).replace("${PORT}", "0")
           .replace("${CREDENTIALS_DIRECTORY}", str(creds)))
    argv = shlex.split(cmd) + ["--no-iperf3"]
    assert argv[0] == str(pathlib.Path(linerate_bin).parent / "linerate")
    argv[0] = linerate_bin
    got = serve_and_push(argv, root, token, tmp_path, linerate_bin)
    assert got == b"served by the service's command line\n"


STUBS = r"""
UCI_FILE=$1
shift
config_load() { :; }
config_get() {
	v=$(sed -n "s/^[[:space:]]*option $3 '\(.*\)'$/\1/p" "$UCI_FILE")
	[ -n "$v" ] || v=$4
	eval "$1=\$v"
}
config_get_bool() {
	config_get "$@"
	eval "case \$$1 in 1|on|true|yes|enabled) $1=1 ;; *) $1=0 ;; esac"
}
logger() { echo "logger: $*" >&2; }
procd_open_instance() { echo OPEN; }
procd_set_param() {
	[ "$1" = command ] || return 0
	shift
	for w in "$@"; do printf 'ARG %s\n' "$w"; done
}
procd_append_param() { procd_set_param "$@"; }
procd_close_instance() { echo CLOSE; }
. "$INIT"
PROG=$LINERATE
start_service
"""


def mount_of(path):
    """The mount point path is below."""
    path = os.path.realpath(path)
    while not os.path.ismount(path):
        path = os.path.dirname(path)
    return path


def run_init(tmp_path, linerate_bin, options):
    """start_service of the init script under busybox sh, with uci
    settings OPTIONS over the shipped defaults: (rc, [args], stderr)."""
    sh = shutil.which("busybox")
    if not sh:
        pytest.skip("busybox is not installed (scripts/deps.sh installs it)")
    conf = (CONTRIB / "openwrt" / "linerate.config").read_text()
    for key, value in options.items():
        conf, n = re.subn(r"option %s '[^']*'" % key,
                          f"option {key} '{value}'", conf)
        assert n == 1, key
    uci = tmp_path / "uci"
    uci.write_text(conf)
    env = dict(os.environ, INIT=str(CONTRIB / "openwrt" / "linerate.init"),
               LINERATE=linerate_bin)
    res = subprocess.run([sh, "sh", "-c", STUBS, "sh", str(uci)],
                         env=env, capture_output=True, text=True, timeout=30)
    args = [line[4:] for line in res.stdout.splitlines()
            if line.startswith("ARG ")]
    return res.returncode, args, res.stderr


def test_procd_script_makes_a_token_and_serves(linerate_bin, tmp_path):
    root = tmp_path / "usb"
    root.mkdir()
    tokfile = tmp_path / "etc" / "token"
    rc, args, err = run_init(tmp_path, linerate_bin, {
        "root": root, "port": "0", "token_file": tokfile, "mount": "0",
        "extra_args": "--no-iperf3 --max-tests 2"})
    assert rc == 0, err
    mode = stat.S_IMODE(tokfile.stat().st_mode)
    assert mode == 0o600, oct(mode)
    token = tokfile.read_text().strip()
    assert re.fullmatch(r"[a-z0-9]{4}(-[a-z0-9]{4})+", token), token
    assert args[:2] == [linerate_bin, "serve"], args
    assert "--read-only" not in args and "--max-tests" in args
    got = serve_and_push(args, root, token, tmp_path, linerate_bin)
    assert got == b"served by the service's command line\n"
    # a second start keeps the token
    rc, args2, err = run_init(tmp_path, linerate_bin, {
        "root": root, "port": "0", "token_file": tokfile, "mount": "0"})
    assert rc == 0, err
    assert tokfile.read_text().strip() == token


def test_procd_script_options_and_refusals(linerate_bin, tmp_path):
    root = tmp_path / "usb"
    root.mkdir()
    tok = tmp_path / "token"
    rc, args, err = run_init(tmp_path, linerate_bin, {
        "root": root, "token_file": tok, "read_only": "1", "iperf3": "0",
        "mount": "0"})
    assert rc == 0, err
    assert "--read-only" in args and "--no-iperf3" in args, args
    # disabled: no instance
    rc, args, err = run_init(tmp_path, linerate_bin, {
        "root": root, "token_file": tok, "enabled": "0"})
    assert rc == 0 and args == [], (args, err)
    # a root that is not there (the USB disk not mounted): not started
    rc, args, err = run_init(tmp_path, linerate_bin, {
        "root": tmp_path / "nothere", "token_file": tok})
    assert rc != 0 and args == [], (args, err)
    assert "not a directory" in err
    # a root whose file system is / (the disk not plugged in): not
    # started unless mount is '0'
    if mount_of(root) == "/":
        rc, args, err = run_init(tmp_path, linerate_bin, {
            "root": root, "token_file": tok})
        assert rc != 0 and args == [], (args, err)
        assert "not on a mounted disk" in err
    # on a mount of its own, or below one: started
    for where in ("/proc", "/proc/sys"):
        rc, args, err = run_init(tmp_path, linerate_bin, {
            "root": where, "token_file": tok})
        assert rc == 0 and where in args, (where, args, err)
