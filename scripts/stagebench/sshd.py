# SPDX-License-Identifier: MIT
"""A private sshd on 127.0.0.1 (throwaway host and user keys, its own configuration, in a
private directory) and sshfs mounts through it: how stagebench-sim gives each simulated node
a network filesystem of its own, with its own client cache, on one machine. Everything is
undone by close(), also after a failure."""
import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time

from . import files
from . import procs


def processes_mentioning(text):
    """Pids of live processes whose command line contains text."""
    return [pid for pid, cmd in procs.live_others("cmdline")
            if text in cmd.replace(b"\0", b" ").decode("utf-8", "replace")]


def _run(cmd, timeout=60):
    """(exit status, stderr text) of cmd, no stdin."""
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout)
    return p.returncode, p.stderr.strip()


class SshServer(object):
    """start() then mount() as often as needed, close() at the end. dir is created by the
    caller's rules (a new private directory); the keys and configuration live in it. config:
    more sshd_config lines (keywords the base configuration does not set); new_session: sshd
    in a session of its own, out of reach of a Ctrl-C on the caller's terminal."""

    def __init__(self, directory, accept_env=(), config=(), new_session=False):
        self.dir = directory
        self.accept_env = tuple(accept_env)
        self.extra_config = list(config)
        self.new_session = new_session
        self.proc = None
        self.mounts = []
        self.made_run_sshd = False
        self.port = None
        self.config = os.path.join(self.dir, "sshd_config")
        self.log = os.path.join(self.dir, "sshd.log")
        self.user = pwd.getpwuid(os.getuid()).pw_name

    def _privsep_dir(self):
        """sshd's privilege separation directory, made by its systemd unit normally."""
        if not os.path.isdir("/run/sshd"):
            with contextlib.suppress(OSError):
                os.makedirs("/run/sshd", mode=0o755)
                self.made_run_sshd = True

    def _keygen(self, name):
        path = os.path.join(self.dir, name)
        rc, err = _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "stagebench-sim",
                        "-f", path])
        if rc != 0:
            raise OSError("ssh-keygen failed: %s" % err)
        return path

    def start(self):
        """Start sshd; None, or why it cannot work here."""
        for tool in ("/usr/sbin/sshd", "ssh", "ssh-keygen"):
            if not shutil.which(tool):
                return "%s is not installed (Debian: openssh-server, openssh-client)" % tool
        try:
            self.host_key = self._keygen("host_key")
            self.user_key = self._keygen("user_key")
            self.auth = os.path.join(self.dir, "authorized_keys")
            with open(self.user_key + ".pub") as f:
                files.write_atomic(self.auth, f.read(), 0o600)
            files.write_atomic(self.config, "\n".join([
                "ListenAddress 127.0.0.1", "HostKey %s" % self.host_key,
                "PermitRootLogin prohibit-password", "PubkeyAuthentication yes",
                "AuthorizedKeysFile %s" % self.auth, "PasswordAuthentication no",
                "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no",
                "PidFile none", "Subsystem sftp internal-sftp", "LogLevel ERROR"]
                + (["AcceptEnv %s" % " ".join(self.accept_env)] if self.accept_env else [])
                + self.extra_config + [""]), 0o600)
        except OSError as e:
            return str(e)
        error = None
        for _ in range(5):
            self._privsep_dir()
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind(("127.0.0.1", 0))
                self.port = s.getsockname()[1]
            with files.open_ours(self.log) as log:
                self.proc = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", self.config,
                                              "-p", str(self.port)], stdin=subprocess.DEVNULL,
                                             stdout=subprocess.DEVNULL, stderr=log,
                                             start_new_session=self.new_session)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                        if s.recv(4).startswith(b"SSH"):
                            return None
                except OSError:
                    time.sleep(0.05)
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None
            with open(self.log) as f:
                error = f.read().strip()
            # another test took the port, or another sshd's close() removed /run/sshd: again
            if "Address already in use" not in error and "privilege separation" not in error:
                break
        return "sshd did not start: %s" % (error or "no message")

    def ssh_options(self):
        """ssh's options to reach this sshd as this user."""
        return ["-p", str(self.port), "-i", self.user_key, "-o", "IdentitiesOnly=yes",
                "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                "-o", "BatchMode=yes", "-o", "LogLevel=ERROR"]

    def mount(self, remote_dir, mountpoint, options=()):
        """sshfs remote_dir (this machine's, through sshd) at mountpoint; None or why not."""
        if not shutil.which("sshfs"):
            return "sshfs is not installed (Debian: sshfs)"
        opts = ",".join(["IdentityFile=%s" % self.user_key, "StrictHostKeyChecking=no",
                         "UserKnownHostsFile=/dev/null", "BatchMode=yes", "LogLevel=ERROR",
                         "IdentitiesOnly=yes"] + list(options))
        rc, err = _run(["sshfs", "-p", str(self.port), "-o", opts,
                        "%s@127.0.0.1:%s" % (self.user, remote_dir), mountpoint])
        if rc != 0:
            return "sshfs failed (exit %d): %s" % (rc, err)
        self.mounts.append(mountpoint)
        return None

    def close(self):
        """Unmount every mount, stop sshd and its sessions; returns the mounts left (none)."""
        left = []
        for m in reversed(self.mounts):
            for cmd in (["fusermount3", "-u", m], ["fusermount", "-u", m], ["umount", m],
                        ["umount", "-l", m]):
                if shutil.which(cmd[0]) and _run(cmd)[0] == 0:
                    break
            else:
                left.append(m)
        self.mounts = []
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        for pid in processes_mentioning(self.config):  # its sessions (sshfs's sftp)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if self.made_run_sshd and not any(
                True for _p in processes_mentioning("/usr/sbin/sshd")):
            with contextlib.suppress(OSError):
                os.rmdir("/run/sshd")
        self.made_run_sshd = False
        return left
