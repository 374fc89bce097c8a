# SPDX-License-Identifier: MIT
"""Helpers for the file-transfer tests (test_transfer.py).

XferEnv      -- one test's world: a token, a source dir, a server root,
                `linerate serve --root` in host B, and client runs in host A
make_tree    -- a source tree with every kind of entry linerate handles
compare_tree -- assert two trees are equal (types, bytes, modes, mtimes,
                symlink targets), nothing followed
json_events  -- parse --json output, asserting every line is an object
"""

import contextlib
import filecmp
import os
import pwd
import shlex
import shutil
import stat
import subprocess
import tempfile
import time

from lrproc import LineCollector, describe, strict_json
from util import wait_until

MiB = 1 << 20

# Fixed, distinct mtimes (ns precision) so that "kept" is not "now".
BASE_NS = 1_600_000_000_123_456_789


def output(res):
    """A finished process's stdout and stderr, as text."""
    out = res.stdout + res.stderr
    return out if isinstance(out, str) else out.decode(errors="replace")


def write_random(path, size, chunk=4 * MiB):
    """SIZE random bytes into PATH."""
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(chunk, left)
            f.write(os.urandom(n))
            left -= n
    return path


def env_without_token(extra=None):
    env = {k: v for k, v in os.environ.items() if k != "LINERATE_TOKEN"}
    env.update(extra or {})
    return env


def json_events(stdout):
    """Every non-empty line of STDOUT parsed; each must be a JSON object
    with an "event" string."""
    events = []
    for line in stdout.splitlines():
        if not line.strip():
            continue
        try:
            doc = strict_json(line)
        except ValueError as exc:
            raise AssertionError(f"stdout line is not JSON ({exc}): "
                                 f"{line!r}") from None
        assert isinstance(doc, dict), f"not a JSON object: {line!r}"
        assert isinstance(doc.get("event"), str), f"no event: {line!r}"
        events.append(doc)
    return events


def end_event(stdout):
    ends = [e for e in json_events(stdout) if e["event"] == "end"]
    assert len(ends) == 1, f"expected one end event in {stdout!r}"
    return ends[0]


def tree_files(root):
    """Relative paths of every entry below ROOT (lstat, nothing followed)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel = os.path.relpath(dirpath, root)
        for n in dirnames + filenames:
            out.append(os.path.normpath(os.path.join(rel, n)))
    return sorted(out)


def make_tree(top):
    """Build the test tree at TOP (made here); returns a dict of notes."""
    os.makedirs(os.path.join(top, "a", "b", "c"))
    os.mkdir(os.path.join(top, "emptydir"))
    os.mkdir(os.path.join(top, "private"), 0o700)
    os.chmod(os.path.join(top, "private"), 0o750)
    write_random(os.path.join(top, "a", "b", "c", "deep.bin"), 300_000)
    write_random(os.path.join(top, "a", "top.bin"), 1 * MiB + 17)
    write_random(os.path.join(top, "private", "p.bin"), 4096)
    open(os.path.join(top, "empty.txt"), "wb").close()
    modes = {"priv.key": 0o600, "run.sh": 0o755, "group.txt": 0o640,
             "suid.bin": 0o4755}
    for name, mode in modes.items():
        p = os.path.join(top, name)
        write_random(p, 1000 + mode)
        os.chmod(p, mode)
    os.symlink("a/b/c/deep.bin", os.path.join(top, "link_rel"))
    os.symlink("../../top.bin", os.path.join(top, "a", "b", "link_up"))
    os.symlink("/etc/passwd", os.path.join(top, "link_out"))
    os.symlink("does/not/exist", os.path.join(top, "link_dangling"))
    sparse = os.path.join(top, "sparse.img")
    with open(sparse, "wb") as f:
        f.truncate(64 * MiB)
        f.seek(32 * MiB)
        f.write(os.urandom(MiB))
    # mtimes last, deepest first, so that making entries does not move a
    # directory's mtime afterwards
    entries = sorted(tree_files(top), key=lambda p: -p.count("/"))
    for i, rel in enumerate(entries):
        t = BASE_NS + i * 1_000_000_007
        os.utime(os.path.join(top, rel), ns=(t, t), follow_symlinks=False)
    os.utime(top, ns=(BASE_NS - 5, BASE_NS - 5))
    return {"sparse": "sparse.img", "suid": "suid.bin"}


def compare_tree(src, dst, keep_setid=False, mtimes=True, top_mtime=True):
    """Assert DST is a faithful copy of SRC."""
    s_list, d_list = tree_files(src), tree_files(dst)
    assert s_list == d_list, (f"entries differ: only in source "
                              f"{sorted(set(s_list) - set(d_list))}, only "
                              f"in copy {sorted(set(d_list) - set(s_list))}")
    pairs = [(".", src, dst)] if top_mtime else []
    pairs += [(r, os.path.join(src, r), os.path.join(dst, r))
              for r in s_list]
    for rel, s, d in pairs:
        ss, ds = os.lstat(s), os.lstat(d)
        assert stat.S_IFMT(ss.st_mode) == stat.S_IFMT(ds.st_mode), rel
        if stat.S_ISLNK(ss.st_mode):
            assert os.readlink(s) == os.readlink(d), rel
        else:
            want = stat.S_IMODE(ss.st_mode)
            if not keep_setid:
                want &= ~(stat.S_ISUID | stat.S_ISGID)
            assert stat.S_IMODE(ds.st_mode) == want, (
                f"{rel}: mode {oct(stat.S_IMODE(ds.st_mode))}, want "
                f"{oct(want)}")
        if stat.S_ISREG(ss.st_mode):
            assert ss.st_size == ds.st_size, rel
            assert filecmp.cmp(s, d, shallow=False), f"{rel}: bytes differ"
        if mtimes:
            assert ss.st_mtime_ns == ds.st_mtime_ns, (
                f"{rel}: mtime {ds.st_mtime_ns}, want {ss.st_mtime_ns}")


def same_file(src, dst, mtime=True):
    ss, ds = os.stat(src), os.stat(dst)
    assert ss.st_size == ds.st_size, (ss.st_size, ds.st_size)
    assert filecmp.cmp(src, dst, shallow=False), f"{dst}: bytes differ"
    assert stat.S_IMODE(ss.st_mode) == stat.S_IMODE(ds.st_mode)
    if mtime:
        assert ss.st_mtime_ns == ds.st_mtime_ns


def temp_leftovers(root):
    """Paths below ROOT that look like linerate's temporary files."""
    return [p for p in tree_files(root)
            if p.endswith((".lrpart", ".lrjournal"))]


def push_killed_midway(x, dest_dir, name, *args):
    """`linerate send --limit 20M ARGS` over host A's link shaped to
    160 Mbit/s, killed once DEST_DIR/NAME can be resumed (its temporary
    file holds 4 MiB); the link unshaped again."""
    x.shape_a("160mbit")
    proc, out, err = x.popen_send("--limit", "20M", *args)
    try:
        wait_resumable(dest_dir, name, 4 * MiB)
        assert proc.poll() is None, f"{out.text()} {err.text()}"
    finally:
        kill_and_reap(proc)
        x.unshape_a()


@contextlib.contextmanager
def immutable(path):
    """PATH made immutable (chattr +i) for the block, and mutable again
    after it, also on failure; the test is skipped, with the reason,
    where the file system or the user may not do that."""
    import pytest
    res = subprocess.run(["chattr", "+i", str(path)], capture_output=True,
                         text=True, timeout=10)
    if res.returncode != 0:
        pytest.skip(f"chattr +i is refused here: {res.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["chattr", "-i", str(path)], timeout=10)


@contextlib.contextmanager
def as_nobody(x, prefix):
    """(dest, get): an empty directory of the user nobody, and a function
    that runs `linerate get ARGS... DEST` in host A as nobody (no root,
    no groups), from the server of x; all removed at the end."""
    base = tempfile.mkdtemp(prefix=prefix)
    try:
        os.chmod(base, 0o755)
        dest = os.path.join(base, "got")
        os.mkdir(dest)
        nobody = pwd.getpwnam("nobody")
        os.chown(dest, nobody.pw_uid, nobody.pw_gid)
        tok = os.path.join(base, "token")
        shutil.copy(x.token_file, tok)
        os.chmod(tok, 0o644)

        def get(*args):
            argv = [x.bin, "get", "-p", str(x.srv.port), "--token-file",
                    tok, *[str(a) for a in args], dest]
            return x.h.run_a(["setpriv", f"--reuid={nobody.pw_uid}",
                              f"--regid={nobody.pw_gid}", "--clear-groups",
                              *argv], stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=60,
                             env=env_without_token())
        yield dest, get
    finally:
        shutil.rmtree(base, ignore_errors=True)


class XferEnv:
    """Token + source + server root for one test; the server runs in host
    B, clients in host A."""

    def __init__(self, hosts, linerate_bin, serve, tmp_path):
        self.h = hosts
        self.bin = linerate_bin
        self._serve = serve
        self.tmp = tmp_path
        self.src = tmp_path / "src"
        self.root = tmp_path / "root"
        self.src.mkdir()
        self.root.mkdir()
        self.token_file = tmp_path / "token"
        self.token_file.write_text(self.new_token() + "\n")
        self.token = self.token_file.read_text().splitlines()[0]
        self.srv = None

    def new_token(self):
        res = subprocess.run([self.bin, "token"], capture_output=True,
                             text=True, timeout=10)
        assert res.returncode == 0, describe(res)
        return res.stdout.strip()

    # -- server ------------------------------------------------------------

    def start_server(self, *extra, root=None, with_root=True, port=0,
                     token_file=None):
        args = ["-B", self.h.addr_b,
                "--token-file", token_file or self.token_file]
        if with_root:
            args += ["--root", root or self.root]
        self.srv = self._serve(*args, *extra, popen=self.h.popen_b,
                               port=port)
        return self.srv

    def dest(self, path=""):
        return f"{self.h.addr_b}:{path}"

    # -- clients (host A) ------------------------------------------------

    def client_argv(self, cmd, *args, token=True, port=None):
        argv = [self.bin, cmd, "-p", str(port or self.srv.port)]
        if token:
            argv += ["--token-file", str(self.token_file)]
        return argv + [str(a) for a in args]

    def run(self, cmd, *args, timeout=60, token=True, env=None, stdin=None,
            text=True, port=None):
        argv = self.client_argv(cmd, *args, token=token, port=port)
        return self.h.run_a(argv, stdin=stdin if stdin is not None
                            else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=text, timeout=timeout,
                            env=env if env is not None
                            else env_without_token())

    def send(self, *args, **kw):
        return self.run("send", *args, **kw)

    def get(self, *args, **kw):
        return self.run("get", *args, **kw)

    def send_ok(self, *args, **kw):
        res = self.send(*args, **kw)
        assert res.returncode == 0, describe(res)
        return res

    def get_ok(self, *args, **kw):
        res = self.get(*args, **kw)
        assert res.returncode == 0, describe(res)
        return res

    def shell_a(self, script, timeout=60):
        """sh -c SCRIPT in host A."""
        return self.h.run_a(["sh", "-c", script], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            timeout=timeout, env=env_without_token())

    def popen_send(self, *args):
        """`linerate send ARGS` in the background in host A, output
        collected; returns (proc, out collector, err collector)."""
        argv = self.client_argv("send", *args)
        proc = self.h.popen_a(argv, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=env_without_token())
        return (proc, LineCollector(proc.stdout, "send stdout"),
                LineCollector(proc.stderr, "send stderr"))

    def shape_a(self, rate="160mbit"):
        """Slow host A's egress with tbf (so a transfer lasts seconds)."""
        res = self.h.run_a(["tc", "qdisc", "replace", "dev", self.h.if_a,
                            "root", "tbf", "rate", rate, "burst", "32kb",
                            "latency", "100ms"], capture_output=True,
                           text=True, timeout=10)
        assert res.returncode == 0, describe(res)

    def unshape_a(self):
        self.h.run_a(["tc", "qdisc", "del", "dev", self.h.if_a, "root"],
                     capture_output=True, timeout=10)


def wait_partial(dirpath, name, min_bytes, timeout=20):
    """Wait until the journal of NAME in DIRPATH exists and the temp file
    holds at least MIN_BYTES of data blocks (or the journal is non-empty)."""
    part = os.path.join(dirpath, f".{name}.lrpart")
    journal = os.path.join(dirpath, f".{name}.lrjournal")

    def ready():
        try:
            js = os.stat(journal)
            ps = os.stat(part)
        except FileNotFoundError:
            return False
        return js.st_size > 0 and ps.st_blocks * 512 >= min_bytes

    return wait_until(ready, timeout, what=f"partial {part} and {journal}")


def wait_journal(dirpath, name, records=1, timeout=20):
    """Wait until the journal of NAME in DIRPATH holds RECORDS records
    (a 40-byte header, 24-byte records): chunks that reached the disk, so
    that a resume has something to keep."""
    journal = os.path.join(dirpath, f".{name}.lrjournal")

    def ready():
        try:
            return os.stat(journal).st_size >= 40 + 24 * records
        except FileNotFoundError:
            return False

    return wait_until(ready, timeout, what=f"{records} record(s) in {journal}")


def wait_resumable(dirpath, name, min_bytes, timeout=20):
    """wait_partial, then a journal record: a transfer of NAME killed
    now is resumed, not started again."""
    wait_partial(dirpath, name, min_bytes, timeout=timeout)
    wait_journal(dirpath, name, 1, timeout=timeout)


def kill_and_reap(proc, timeout=10):
    if proc.poll() is None:
        proc.kill()
    return proc.wait(timeout=timeout)


def wait_exit(proc, timeout):
    """Wait for PROC; returns (returncode, seconds waited)."""
    t0 = time.monotonic()
    rc = proc.wait(timeout=timeout)
    return rc, time.monotonic() - t0


def sh_quote(*args):
    return " ".join(shlex.quote(str(a)) for a in args)


def set_link(hosts, up):
    res = hosts.run_a(["ip", "link", "set", hosts.if_a,
                       "up" if up else "down"], capture_output=True,
                      text=True, timeout=10)
    assert res.returncode == 0, describe(res)
    if up:
        hosts._wait_oper_up(hosts.ns_a, hosts.if_a, timeout=10)
        hosts._wait_oper_up(hosts.ns_b, hosts.if_b, timeout=10)


def sha256_file(path):
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(MiB), b""):
            h.update(block)
    return h.hexdigest()


