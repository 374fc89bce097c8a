# SPDX-License-Identifier: MIT
"""Randomized fault trials (issue 15): pushes and pulls between host A
(198.18.0.1) and a `serve --root` in host B (198.18.0.2), each run
interrupted at a random moment in a random way: the sender or the server
killed, the sender stopped, the link cut, the link slowed, the destination
full, the source changed between runs (also keeping size and mtime).

After every run, every file under its final name equals a version its
source had; after the trials the same commands, run again, exit 0 with
the trees identical.

LINERATE_FAULT_TRIALS=N runs N trials (default 20, within about 4
minutes); LINERATE_FAULT_SEED=S repeats a sequence (the seed is printed).
"""

import hashlib
import os
import random
import signal
import subprocess
import time

import pytest

from lrproc import describe
from xferutil import (MiB, XferEnv, compare_tree, env_without_token,
                      kill_and_reap, set_link, tree_files)

TRIALS = int(os.environ.get("LINERATE_FAULT_TRIALS", "20"))
BUDGET_S = 240 * max(1, TRIALS) / 20  # the default's 4 minutes, scaled
RATE = "6M"  # the runs' rate cap: a whole tree takes about 4 s
# kill_client: the sender of a push, the receiver of a pull
FAULTS = ["kill_client", "kill_server", "stop_client", "cut_link", "slow",
          "fill_dest", "change_keep_mtime", "change_source"]


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Tree:
    """A source tree and every version each of its files has had."""

    SIZES = {"small.bin": 40_000, "one.bin": 1 * MiB, "mid.bin": 5 * MiB,
             "sub/big.bin": 12 * MiB, "sub/deep/odd.bin": 3 * MiB + 17,
             "empty.bin": 0}

    def __init__(self, top, rng):
        self.top = top
        self.rng = rng
        self.versions = {}
        for rel, size in self.SIZES.items():
            p = top / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(rng.randbytes(size))
            self.note(rel)
        os.symlink("one.bin", top / "link")

    def note(self, rel):
        self.versions.setdefault(rel, set()).add(sha(self.top / rel))

    def change(self, keep_mtime, dest):
        """Overwrite 4 KiB somewhere in one file (size kept; the mtime
        too when asked: then one not complete below DEST, as a change
        that keeps size and mtime is one no quick check can see, rsync's
        neither); the name changed."""
        names = [r for r, s in self.SIZES.items() if s]
        if keep_mtime:
            names = [r for r in names if not (dest / r).exists()]
            keep_mtime = bool(names)
            names = names or [r for r, s in self.SIZES.items() if s]
        rel = self.rng.choice(names)
        p = self.top / rel
        st = os.stat(p)
        at = self.rng.randrange(0, max(1, st.st_size - 4096))
        with open(p, "r+b") as f:
            f.seek(at)
            f.write(self.rng.randbytes(min(4096, st.st_size)))
        if keep_mtime:
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
        self.note(rel)
        return rel

    def check(self, dest, what):
        """Every final-name file below DEST is a version of its source."""
        for rel in tree_files(dest):
            p = dest / rel
            if p.is_symlink() or p.is_dir():
                continue
            if rel not in self.versions:
                # a temporary file would be hidden; nothing else is ours
                assert rel.rsplit("/", 1)[-1].startswith("."), (
                    f"{what}: {rel} is no source file")
                continue
            assert sha(p) in self.versions[rel], (
                f"{what}: {rel} is under its final name but equals no "
                f"version of its source")


@pytest.fixture
def fenv(hosts, linerate_bin, serve, tmp_path):
    x = XferEnv(hosts, linerate_bin, serve, tmp_path)
    # a small file system for the server's root, to fill
    mnt = tmp_path / "small"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96m",
                          "tmpfs", str(mnt)], capture_output=True,
                         text=True, timeout=10)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs for the server's root: "
                    f"{res.stderr.strip()}")
    x.root = mnt
    try:
        yield x
    finally:
        x.unshape_a()
        set_link(hosts, True)
        if x.srv:
            x.srv.stop()
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True,
                       timeout=10)


def test_randomized_faults(fenv):
    x = fenv
    seed = int(os.environ.get("LINERATE_FAULT_SEED",
                              str(random.SystemRandom().randrange(1 << 32))))
    print(f"fault trials: seed {seed} (LINERATE_FAULT_SEED={seed} repeats "
          f"them), {TRIALS} trials")
    rng = random.Random(seed)
    port = x.start_server().port
    push_src = Tree(x.src / "push", rng)
    (x.root / "pullsrc").mkdir()
    pull_src = Tree(x.root / "pullsrc", rng)
    pull_dest = x.tmp / "pulled"
    pull_dest.mkdir()
    # --update: a source that changed between runs replaces its copy
    push_argv = ["send", "-p", str(port), "--token-file", str(x.token_file),
                 "-q", "--update", str(x.src / "push"), x.dest("pushed")]
    pull_argv = ["get", "-p", str(port), "--token-file", str(x.token_file),
                 "-q", "--update", x.dest("pullsrc"), str(pull_dest)]
    t_end = time.monotonic() + BUDGET_S
    log = []

    def restart_server():
        x.srv.stop()
        x.start_server(port=port)

    def run(argv, fault, limit=True):
        """One run of ARGV in host A with FAULT at a random moment; its
        exit status (None when killed)."""
        args = [x.bin, argv[0], *(["--limit", RATE] if limit else []),
                *argv[1:]]
        proc = x.h.popen_a(args, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, env=env_without_token())
        at = rng.uniform(0.05, 1.2)
        try:
            try:
                proc.wait(timeout=at)
                return proc.returncode  # done before the fault
            except subprocess.TimeoutExpired:
                pass
            if fault == "kill_client":
                proc.kill()
            elif fault == "kill_server":
                x.srv.proc.kill()
                x.srv.proc.wait(timeout=10)
            elif fault == "stop_client":
                proc.send_signal(signal.SIGSTOP)
                time.sleep(rng.uniform(0.5, 3.0))
                if rng.random() < 0.5:
                    proc.kill()
                proc.send_signal(signal.SIGCONT)
            elif fault == "cut_link":
                set_link(x.h, False)
                time.sleep(rng.uniform(0.5, 3.0))
                if rng.random() < 0.5:
                    proc.kill()
                set_link(x.h, True)
            try:
                return proc.wait(timeout=45)
            except subprocess.TimeoutExpired:
                proc.kill()
                return None
        finally:
            kill_and_reap(proc)
            if fault == "kill_server" or not x.srv.alive():
                restart_server()

    for trial in range(TRIALS):
        if time.monotonic() > t_end:
            pytest.fail(f"seed {seed}: {trial} trials took longer than "
                        f"{BUDGET_S:.0f} s")
        fault = rng.choice(FAULTS)
        pull = rng.random() < 0.35 and fault != "fill_dest"
        argv = pull_argv if pull else push_argv
        tree = pull_src if pull else push_src
        dest = pull_dest if pull else x.root / "pushed"
        what = f"seed {seed} trial {trial} ({'pull' if pull else 'push'}, " \
               f"{fault})"
        filler = x.root / "filler"
        top = dest / ("pullsrc" if pull else "push")
        # something to move in every run: a file made new, or a copy gone
        if rng.random() < 0.5:
            what += f", new {tree.change(False, top)}"
        else:
            gone = rng.choice(list(Tree.SIZES))
            if (top / gone).exists():
                os.unlink(top / gone)
                what += f", copy of {gone} removed"
        if fault == "change_source":
            what += f", changed {tree.change(False, top)}"
            fault = rng.choice(["kill_client", "none"])
        elif fault == "change_keep_mtime":
            what += f", changed {tree.change(True, top)}"
            fault = rng.choice(["kill_client", "none"])
        elif fault == "fill_dest":
            st = os.statvfs(x.root)
            free = st.f_bavail * st.f_frsize
            with open(filler, "wb") as f:
                f.truncate(0)
            subprocess.run(["fallocate", "-l",
                            str(max(0, free - 6 * MiB)), str(filler)],
                           check=True, timeout=10)
        elif fault == "slow":
            x.shape_a(rng.choice(["20mbit", "60mbit"]))
        rc = run(argv, fault)
        if fault == "slow":
            x.unshape_a()
        if filler.exists():
            filler.unlink()
        log.append(f"{what}: exit {rc}")
        if (x.root / "pushed" / "push").exists():
            push_src.check(x.root / "pushed" / "push", what)
        if (pull_dest / "pullsrc").exists():
            pull_src.check(pull_dest / "pullsrc", what)

    # the same commands again, without a fault: they finish the job
    for argv, src, dest in ((push_argv, x.src / "push",
                             x.root / "pushed" / "push"),
                            (pull_argv, x.root / "pullsrc",
                             pull_dest / "pullsrc")):
        res = x.h.run_a([x.bin, *argv], stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        text=True, timeout=90, env=env_without_token())
        assert res.returncode == 0, (
            f"seed {seed}: the final run failed\n{describe(res)}\n" +
            "\n".join(log))
        compare_tree(src, dest)
    print("\n".join(log))
