#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Peak memory of each end of a transfer, for small boards (a router has
128-512 MB): the peak RSS (VmHWM) of the sender and of the server for a
1 GiB file and for a tree of 100,000 small files, pushed (the server
receives) and pulled (the server sends), with default options, over
loopback.

usage: bench/bench_memory.py [--builds LIST] [--files N] [--size BYTES]
                             [--repeat N] [--dir DIR]
  --builds LIST  comma separated, of: native (build/linerate), static
                 (build-static-x86_64/linerate, scripts/cross.sh
                 static-x86_64), i386 (build-i386/linerate run natively by
                 its sysroot's ld-linux.so.2; scripts/cross.sh i386);
                 default: those that are built
  --files N      files in the tree (default 100000)
  --size BYTES   the big file (default 1073741824)
  --repeat N     runs of each cell; the table gives the largest (default 3)
  --dir DIR      where the data goes (default /var/tmp/lrmem; removed)

Prints one table row per build, workload and direction: the client's and
the server's peak RSS in MB (10^6 bytes): the client's as GNU time
reports it (/usr/bin/time, Debian package time), the server's its VmHWM
once the client is done. Under qemu-user the RSS would
be qemu's, so only builds this CPU runs natively are measured. The
test data lives on disk, not tmpfs: page cache is not RSS.
"""

import argparse
import os
import random
import shutil
import socket
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def builds():
    """name -> argv prefix that runs that build's linerate natively."""
    out = {}
    native = os.path.join(REPO, "build", "linerate")
    if os.access(native, os.X_OK):
        out["native"] = [native]
    static = os.path.join(REPO, "build-static-x86_64", "linerate")
    if os.access(static, os.X_OK):
        out["static"] = [static]
    root = os.path.join(REPO, "build-i386", "sysroot")
    i386 = os.path.join(REPO, "build-i386", "linerate")
    loader = os.path.join(root, "lib", "ld-linux.so.2")
    if os.access(i386, os.X_OK) and os.path.exists(loader):
        libs = ":".join(os.path.join(root, d) for d in
                        ("lib/i386-linux-gnu", "usr/lib/i386-linux-gnu"))
        out["i386"] = [loader, "--library-path", libs, i386]
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def vm_hwm_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM")


def make_tree(top, n):
    rnd = random.Random(7)
    for i in range(n):
        d = os.path.join(top, f"d{i // 1000:03d}")
        if i % 1000 == 0:
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i:06d}"), "wb") as f:
            f.write(rnd.randbytes(rnd.randint(100, 4000)))


def one(prog, token, work, src, mode):
    """One transfer; (client KiB, server KiB)."""
    port = free_port()
    dst = os.path.join(work, "dst")
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    if mode == "push":
        srv_args = ["serve", "-B", "127.0.0.1", "-p", str(port), "--root",
                    dst, "--token-file", token]
        cli_args = ["send", "-q", "--token-file", token, "-p", str(port),
                    src, "127.0.0.1:in/"]
    else:
        srv_args = ["serve", "-B", "127.0.0.1", "-p", str(port), "--root",
                    os.path.dirname(src), "--read-only", "--token-file",
                    token]
        cli_args = ["get", "-q", "--token-file", token, "-p", str(port),
                    f"127.0.0.1:{os.path.basename(src)}", dst]
    srv = subprocess.Popen(prog + srv_args, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or srv.poll() is not None:
                    raise RuntimeError("the server did not start")
                time.sleep(0.05)
        # GNU time's child: the maximum RSS the kernel keeps across exec
        # is time's own small one before it (a fork of this Python
        # would count Python's)
        rss = os.path.join(work, "client.rss")
        res = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss] +
                             prog + cli_args, timeout=600)
        if res.returncode != 0:
            raise RuntimeError(f"{' '.join(cli_args)}: exit {res.returncode}")
        with open(rss) as f:
            client_kib = int(f.read().split()[-1])
        server_kib = vm_hwm_kib(srv.pid)
    finally:
        srv.terminate()
        srv.wait(timeout=20)
    return client_kib, server_kib


def main():
    ap = argparse.ArgumentParser(add_help=True)
    ap.add_argument("--builds")
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--size", type=int, default=1 << 30)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--dir", default="/var/tmp/lrmem")
    a = ap.parse_args()
    have = builds()
    names = a.builds.split(",") if a.builds else list(have)
    for n in names:
        if n not in have:
            sys.exit(f"bench_memory: no {n} build here (see --help)")
    work = a.dir
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "src"))
    try:
        prog = have[names[0]]
        token = os.path.join(work, "token")
        with open(token, "w") as f:
            f.write(subprocess.run(prog + ["token"], capture_output=True,
                                   text=True, check=True).stdout)
        os.chmod(token, 0o600)
        big = os.path.join(work, "src", "big.bin")
        subprocess.run(prog + ["gen", "-q", big, str(a.size)], check=True)
        tree = os.path.join(work, "src", "tree")
        make_tree(tree, a.files)
        print("| build | workload | direction | client peak RSS MB | "
              "server peak RSS MB |")
        print("| --- | --- | --- | --- | --- |")
        for n in names:
            for label, src in ((f"{a.size / 2**30:g} GiB file", big),
                               (f"{a.files:,} files", tree)):
                for mode in ("push", "pull"):
                    runs = [one(have[n], token, work, src, mode)
                            for _ in range(a.repeat)]
                    c = max(r[0] for r in runs) * 1024 / 1e6
                    s = max(r[1] for r in runs) * 1024 / 1e6
                    print(f"| {n} | {label} | {mode} | {c:.1f} | {s:.1f} |",
                          flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
