#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A tree whose files carry extended attributes and ACLs (issue 20):
linerate send -X -A against rsync -aXA (its daemon, no ssh in the way)
and tar --xattrs --acls | nc, plus linerate send without the options
(what keeping them costs), alternated in one run on a tmpfs of its own;
medians of wall time, names/s, and the machine's CPU seconds (busy time
of /proc/stat, both ends, softirq included) per 1,000 names. Every copy
is checked to hold the attributes and ACLs of a sample of names.

The tree: FILES files of 4 KiB in directories of 1,000, each with two
user. attributes (16 and 32 bytes), every tenth with an ACL (a user and
a group), each directory with an access and a default ACL.

usage: bench/attrs_tree.py [--files N] [--repeat N] [--out FILE]
Traffic: loopback only. Needs root (the tmpfs, the rsync daemon's uid).
Exit status: 0 done, 1 a run failed or its copy differed."""

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

BIN = os.environ.get("LINERATE_BIN", "build/linerate")
PER_DIR = 1000


def cpu_busy():
    """Seconds the machine's CPUs were busy (all but idle and iowait)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def listening(port):
    """Whether something listens on TCP port (read from /proc, so that
    a one-connection listener such as nc -l is not used up)."""
    want = f":{port:04X} "
    with open("/proc/net/tcp") as f:
        return any(want in line.split(None, 3)[1] + " " and
                   line.split()[3] == "0A" for line in f.readlines()[1:])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_tree(top, files):
    for i in range(files):
        d = os.path.join(top, f"d{i // PER_DIR:04d}")
        if i % PER_DIR == 0:
            os.makedirs(d)
            subprocess.run(["setfacl", "-m", "u:daemon:rwx,g:bin:r-x", "-d",
                            "-m", "u:daemon:rwx", d], check=True)
        p = os.path.join(d, f"f{i:06d}")
        with open(p, "wb") as f:
            f.write(os.urandom(4096))
        os.setxattr(p, "user.tag", b"%016d" % i)
        os.setxattr(p, "user.hash", os.urandom(16).hex().encode())
    # every tenth file's ACL in one setfacl per directory
    for d in sorted(os.listdir(top)):
        names = sorted(os.listdir(os.path.join(top, d)))[::10]
        subprocess.run(["setfacl", "-m", "u:daemon:rw-,g:bin:r--"] +
                       [os.path.join(top, d, n) for n in names], check=True)


def same_sample(src, dst):
    """The attributes and ACLs of every 97th name and every directory."""
    names = []
    for d in sorted(os.listdir(src)):
        names.append(d)
        names += [os.path.join(d, n)
                  for n in sorted(os.listdir(os.path.join(src, d)))[::97]]
    for n in names:
        s, t = os.path.join(src, n), os.path.join(dst, n)
        for a in os.listxattr(s):
            if a.startswith("user.") and os.getxattr(t, a) != os.getxattr(s, a):
                return f"{n}: {a} differs"
        acls = [subprocess.run(["getfacl", "--omit-header", "-p", "-n", p],
                               capture_output=True, text=True).stdout
                for p in (s, t)]
        if acls[0] != acls[1]:
            return f"{n}: its ACL differs"
    return None


class Tools:
    def __init__(self, tmp, src, dest):
        self.tmp, self.src, self.dest = tmp, src, dest
        self.tok = os.path.join(tmp, "token")
        with open(self.tok, "w") as f:
            f.write(subprocess.run([BIN, "token"], capture_output=True,
                                   text=True, check=True).stdout)
        self.srv = subprocess.Popen(
            [BIN, "serve", "-B", "127.0.0.1", "-p", "0", "--no-iperf3",
             "--root", dest, "--token-file", self.tok],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.port = re.search(r"port (\d+)",
                              self.srv.stdout.readline()).group(1)
        conf = os.path.join(tmp, "rsyncd.conf")
        self.rport = free_port()
        with open(conf, "w") as f:
            f.write(f"port = {self.rport}\naddress = 127.0.0.1\n"
                    f"pid file = {tmp}/rsyncd.pid\nuse chroot = no\n"
                    f"[m]\npath = {dest}\nread only = no\nuid = root\n"
                    f"gid = root\n")
        self.rsyncd = subprocess.Popen(["rsync", "--daemon", "--no-detach",
                                        f"--config={conf}"])
        for _ in range(100):  # bounded: 5 s for the daemon to listen
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.rport)) == 0:
                    break
            time.sleep(0.05)

    def run(self, tool, name):
        out = os.path.join(self.dest, name)
        src = self.src + "/"
        if tool == "linerate -X -A":
            argv = [BIN, "send", "-q", "-p", self.port, "--token-file",
                    self.tok, "-X", "-A", src, f"127.0.0.1:{name}"]
        elif tool == "linerate":
            argv = [BIN, "send", "-q", "-p", self.port, "--token-file",
                    self.tok, src, f"127.0.0.1:{name}"]
        elif tool == "rsync -aXA":
            argv = ["rsync", "-aXA", src,
                    f"rsync://127.0.0.1:{self.rport}/m/{name}/"]
        else:
            return self.tar_nc(out)
        return subprocess.run(argv, capture_output=True, text=True,
                              timeout=600).returncode

    def tar_nc(self, out):
        os.makedirs(out)
        port = str(free_port())
        rx = subprocess.Popen(
            f"nc -l -N 127.0.0.1 {port} | tar --xattrs --acls -xpf - "
            f"-C {out}", shell=True)
        for _ in range(100):  # bounded: 5 s for nc to listen
            if listening(int(port)):
                break
            time.sleep(0.05)
        tx = subprocess.run(
            f"tar --xattrs --acls -cf - -C {self.src} . | "
            f"nc -N 127.0.0.1 {port}", shell=True, timeout=600)
        return tx.returncode or rx.wait(timeout=600)

    def close(self):
        for p in (self.srv, self.rsyncd):
            p.terminate()
            p.wait(timeout=10)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("attrs_tree.py: needs root (a tmpfs, the rsync daemon)")
    tools = ["linerate -X -A", "linerate", "rsync -aXA", "tar --xattrs "
             "--acls | nc"]
    wall = {t: [] for t in tools}
    cpu = {t: [] for t in tools}
    tmp = tempfile.mkdtemp(prefix="lr-attrs-")
    mnt = os.path.join(tmp, "fs")
    os.mkdir(mnt)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2G", "none", mnt],
                   check=True)
    t = None
    failed = False
    try:
        src, dest = os.path.join(mnt, "src"), os.path.join(mnt, "dest")
        os.mkdir(dest)
        make_tree(src, a.files)
        t = Tools(tmp, src, dest)
        for r in range(a.repeat):
            for k, tool in enumerate(tools):
                name = f"r{r}t{k}"
                os.sync()
                c0, t0 = cpu_busy(), time.monotonic()
                rc = t.run(tool, name)
                t1, c1 = time.monotonic(), cpu_busy()
                why = f"exit {rc}" if rc else (
                    None if tool == "linerate" else
                    same_sample(src, os.path.join(dest, name)))
                if why:
                    print(f"{tool}: FAILED: {why}", file=sys.stderr)
                    failed = True
                wall[tool].append(t1 - t0)
                cpu[tool].append(c1 - c0)
                shutil.rmtree(os.path.join(dest, name), ignore_errors=True)
    finally:
        if t:
            t.close()
        subprocess.run(["umount", mnt])
        shutil.rmtree(tmp, ignore_errors=True)
    names = a.files + a.files // PER_DIR
    base = statistics.median(wall["linerate -X -A"])
    lines = [f"`bench/attrs_tree.py --files {a.files} --repeat {a.repeat}`"
             f" ({names} names, loopback, one tmpfs; medians)", "",
             "| tool | s | names/s | CPU s per 1,000 names | time ÷ "
             "linerate -X -A |", "| --- | --- | --- | --- | --- |"]
    for tool in tools:
        w, c = statistics.median(wall[tool]), statistics.median(cpu[tool])
        lines.append(f"| {tool.replace('|', chr(92) + '|')} | {w:.2f} | {names / w:,.0f} | "
                     f"{1000 * c / names:.3f} | {w / base:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    print("runs (s): " + "; ".join(
        f"{k}: " + ", ".join(f"{x:.2f}" for x in v) for k, v in wall.items()))
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
