# SPDX-License-Identifier: MIT
"""A real OpenSSH server in test host B, for the ssh mode's tests
(test_ssh.py).

    with SshHost(hosts, linerate_bin) as sh:
        res = sh.run_client(["send", src, f"root@{hosts.addr_b}:dst"])

SshHost makes, in a fresh directory of its own (mode 0755, so that the
test user can read what it must): a host key, a client key and a second,
unauthorized one, an authorized_keys file, a known_hosts file holding the
host key, an sshd_config (port 2222 on host B's address, public keys only,
no PAM, StrictModes off) and a client config. It starts `sshd -D -e` in
host B and waits until it listens; `down()` stops it and removes the
directory. A copy of the linerate binary under test sits in the
directory: the far end's --remote-path, readable by every user.

The client side runs in host A with PATH starting with a directory whose
`ssh` is a two-line wrapper adding `-F <client config>`, so that a plain
`linerate send USER@HOST:` finds the keys, the port and the known host
as a user's own ~/.ssh/config would give them (and the test user as the
login when no USER@ is given). Nothing outside the
directory is touched but /run/sshd (sshd's privilege separation
directory, made when missing) and the test user (`lrsshtest`, made by
`ensure_user` and removed at the end when this instance made it).
"""

import os
import pwd
import shutil
import stat
import subprocess
import tempfile

from util import wait_for_listen

SSH_PORT = 2222
TEST_USER = "lrsshtest"


def ssh_skip_reason():
    for tool in ("/usr/sbin/sshd", "ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            return f"'{tool}' not installed (Debian openssh-server/client)"
    if os.geteuid() != 0:
        return "not root: cannot start sshd in a network namespace"
    return None


def _keygen(path):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C",
                    "linerate-test", "-f", path], check=True,
                   stdin=subprocess.DEVNULL, capture_output=True,
                   timeout=30)
    with open(path + ".pub") as f:
        return f.read().strip()


class SshHost:
    def __init__(self, hosts, linerate_bin):
        self.hosts = hosts
        self.src_bin = str(linerate_bin)
        self.dir = None
        self.proc = None
        self.made_user = False

    def __enter__(self):
        try:
            self.up()
        except BaseException:
            self.down()
            raise
        return self

    def __exit__(self, *exc):
        self.down()
        return False

    def path(self, name):
        return os.path.join(self.dir, name)

    def up(self):
        self.dir = tempfile.mkdtemp(prefix="lrssh")
        os.chmod(self.dir, 0o755)
        self.bin = self.path("linerate")
        shutil.copy(self.src_bin, self.bin)
        os.chmod(self.bin, 0o755)
        _keygen(self.path("host_key"))
        pub = _keygen(self.path("id"))
        _keygen(self.path("wrong_id"))
        with open(self.path("authorized_keys"), "w") as f:
            f.write(pub + "\n")
        os.chmod(self.path("authorized_keys"), 0o644)
        with open(self.path("host_key.pub")) as f:
            hostpub = " ".join(f.read().split()[:2])
        with open(self.path("known_hosts"), "w") as f:
            f.write(f"[{self.hosts.addr_b}]:{SSH_PORT} {hostpub}\n")
        self._sshd_config()
        self._client_config()
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        self.proc = self.hosts.popen_b(
            ["/usr/sbin/sshd", "-D", "-e", "-f", self.path("sshd_config")],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)
        wait_for_listen(self.hosts.run_b, SSH_PORT, timeout=10)

    def _sshd_config(self):
        d = self.dir
        with open(self.path("sshd_config"), "w") as f:
            f.write(f"""Port {SSH_PORT}
ListenAddress {self.hosts.addr_b}
HostKey {d}/host_key
PidFile {d}/sshd.pid
AuthorizedKeysFile {d}/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PermitRootLogin prohibit-password
StrictModes no
PrintMotd no
AcceptEnv none
LogLevel ERROR
""")

    def _client_config(self):
        d = self.dir
        with open(self.path("ssh_config"), "w") as f:
            f.write(f"""Host {self.hosts.addr_b} farhost
    HostName {self.hosts.addr_b}
    User {TEST_USER}
    Port {SSH_PORT}
    IdentityFile {d}/id
    IdentitiesOnly yes
    UserKnownHostsFile {d}/known_hosts
    StrictHostKeyChecking yes
    BatchMode yes
    GlobalKnownHostsFile /dev/null
""")
        os.makedirs(self.path("bin"), exist_ok=True)
        wrapper = self.path("bin/ssh")
        with open(wrapper, "w") as f:
            f.write(f"#!/bin/sh\nexec /usr/bin/ssh -F {d}/ssh_config \"$@\"\n")
        os.chmod(wrapper, 0o755)

    def rsh(self, key="id", port=SSH_PORT):
        """An -e command naming everything itself (no config file)."""
        d = self.dir
        return (f"/usr/bin/ssh -F /dev/null -p {port} -i {d}/{key} "
                f"-o IdentitiesOnly=yes -o BatchMode=yes "
                f"-o UserKnownHostsFile={d}/known_hosts "
                f"-o GlobalKnownHostsFile=/dev/null "
                f"-o StrictHostKeyChecking=yes")

    def env(self):
        env = {k: v for k, v in os.environ.items()
               if k != "LINERATE_TOKEN"}
        env["PATH"] = self.path("bin") + ":" + env.get("PATH", "/usr/bin")
        return env

    def client_argv(self, args, remote_path=True):
        extra = ["--remote-path", self.bin] if remote_path else []
        return [self.src_bin, args[0], *extra, *args[1:]]

    def run_client(self, args, remote_path=True, timeout=60, **kw):
        kw.setdefault("capture_output", True)
        kw.setdefault("stdin", subprocess.DEVNULL)
        return self.hosts.run_a(self.client_argv(args, remote_path),
                                env=self.env(), timeout=timeout, **kw)

    def popen_client(self, args, remote_path=True, **kw):
        kw.setdefault("stdin", subprocess.DEVNULL)
        return self.hosts.popen_a(self.client_argv(args, remote_path),
                                  env=self.env(), **kw)

    def ensure_user(self):
        """The test user (not root), made when missing; its home in our
        directory. Returns its pwd entry."""
        try:
            return pwd.getpwnam(TEST_USER)
        except KeyError:
            pass
        home = self.path("home")
        # '*': no password, and not locked ('!'), which sshd without PAM
        # would refuse
        subprocess.run(["useradd", "-M", "-d", home, "-s", "/bin/sh",
                        "-p", "*", TEST_USER], check=True,
                       capture_output=True, timeout=30)
        self.made_user = True
        os.makedirs(home, exist_ok=True)
        pw = pwd.getpwnam(TEST_USER)
        os.chown(home, pw.pw_uid, pw.pw_gid)
        os.chmod(home, 0o755)
        return pw

    def far_linerates(self):
        """Processes in host B running our far end (its binary)."""
        res = self.hosts.run_b(["ps", "-eo", "pid=,args="],
                               capture_output=True, text=True, timeout=10)
        return [line for line in res.stdout.splitlines()
                if self.bin in line and "--ssh" in line]

    def down(self):
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.communicate(timeout=10)
            self.proc = None
        if self.made_user:
            subprocess.run(["userdel", TEST_USER], capture_output=True,
                           timeout=30)
            self.made_user = False
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


def is_regular(path):
    return stat.S_ISREG(os.lstat(path).st_mode)
