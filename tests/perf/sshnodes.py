#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""N simulated nodes over real ssh: names node0001..nodeN that all reach one private sshd on
127.0.0.1, through a private ssh config with host-key checking on and strict.

    with sshnodes.SshNodes(200) as nodes:
        if nodes.error:
            sys.exit("cannot: " + nodes.error)
        subprocess.call(["ssh", "-F", nodes.config, nodes.names[0], "true"])
        subprocess.call(["clush"] + nodes.clush_args() + ["-w", nodes.nodeset(), "true"])
        task.set_info("ssh_options", nodes.ssh_options())   # ClusterShell's Task API

The sshd gets its own throwaway host and user keys and config (listening on a free port of
127.0.0.1 only, root by key only, MaxStartups raised so that a fan-out of hundreds of
simultaneous connections is accepted: Debian's default 10:30:100 drops unauthenticated
connections beyond 10). The ssh config (`ssh -F`, so neither ~/.ssh/config nor
/etc/ssh/ssh_config is read) has a Host block naming every node with HostName 127.0.0.1, the
port, the user key, and a private known_hosts holding the sshd's host key with
StrictHostKeyChecking yes: a wrong key is refused, nothing is ever added.

clush takes the config as `clush -o "-F CONFIG"` (man clush: "-o OPTIONS ... ssh options ...
added first to ssh and override default ones") or `-O ssh_options="-F CONFIG"`; the Task API
as task.set_info("ssh_options", "-F CONFIG") (ClusterShell/Worker/Ssh.py shlex-splits it).

Debian's sshd needs its privilege separation directory /run/sshd (a compiled-in path, no
config knob); it is made if missing and removed again at the end if this made it and no other
sshd runs. Standard library only, Python 3.6+. Run this file to check it here:
`/usr/bin/python3 tests/perf/sshnodes.py [N]`.
"""
import contextlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


def _write_new(path, text, mode=0o600):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def _run(cmd, timeout=60):
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return None, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    return p.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def _sshd_running_elsewhere(me):
    for e in os.listdir("/proc"):
        if not e.isdigit() or int(e) == me:
            continue
        try:
            with open("/proc/%s/comm" % e) as f:
                if f.read().strip() == "sshd":
                    return True
        except OSError:
            pass
    return False


class SshNodes(object):
    """count node names on one private sshd; see the module docstring."""

    def __init__(self, count, base=None, prefix="node", max_startups=1024, node_env=False):
        self.count = count
        self.node_env = node_env  # each name's ssh session sets STAGEBENCH_NODE to it
        self.width = max(4, len(str(count)))
        self.names = ["%s%0*d" % (prefix, self.width, i) for i in range(1, count + 1)]
        self.prefix = prefix
        self.base = base
        self.max_startups = max_startups
        self.dir = None
        self.proc = None
        self.port = None
        self.error = None
        self.made_run_sshd = False

    def __enter__(self):
        try:
            self.error = self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def nodeset(self):
        """The names as one ClusterShell/pdsh node set, e.g. node[0001-0200]."""
        return "%s[%s-%s]" % (self.prefix, self.names[0][len(self.prefix):],
                              self.names[-1][len(self.prefix):])

    def ssh_options(self):
        """For clush -o and task.set_info("ssh_options", ...)."""
        return "-F %s" % shlex.quote(self.config)

    def clush_args(self):
        return ["-o", self.ssh_options()]

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def _keygen(self, name):
        path = self.path(name)
        rc, _out, err = _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C",
                              "stagebench-test", "-f", path])
        if rc != 0:
            raise RuntimeError("ssh-keygen failed: %s" % err.strip())
        return path

    def start(self):
        """Start sshd and write the client config; None, or why it cannot work here."""
        for tool in ("/usr/sbin/sshd", "ssh", "ssh-keygen"):
            if not shutil.which(tool):
                return "%s is not installed (Debian: openssh-server, openssh-client)" % tool
        self.dir = tempfile.mkdtemp(prefix="stagebench-sshnodes-", dir=self.base)
        self.host_key = self._keygen("host_key")
        self.user_key = self._keygen("user_key")
        with open(self.user_key + ".pub") as f:
            _write_new(self.path("authorized_keys"), f.read())
        with open(self.host_key + ".pub") as f:
            host_pub = " ".join(f.read().split()[:2])
        self.sshd_config = self.path("sshd_config")
        _write_new(self.sshd_config, "\n".join([
            "ListenAddress 127.0.0.1",
            "HostKey %s" % self.host_key,
            "PermitRootLogin prohibit-password",
            "PubkeyAuthentication yes",
            "AuthorizedKeysFile %s" % self.path("authorized_keys"),
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "PidFile none",
            # a fan-out of many simultaneous connections from one address: accept them all
            "MaxStartups %d" % self.max_startups,
            "MaxSessions 10",
            "LoginGraceTime 60",
            "UseDNS no",
            "AcceptEnv STAGEBENCH_NODE",
            "LogLevel ERROR",
            ""]))
        self.log = self.path("sshd.log")
        for _attempt in range(5):
            self._privsep_dir()
            self.port = free_port()
            with open(self.log, "w") as log:
                self.proc = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f",
                                              self.sshd_config, "-p", str(self.port)],
                                             stdin=subprocess.DEVNULL,
                                             stdout=subprocess.DEVNULL, stderr=log,
                                             start_new_session=True)
            why = self._wait_banner()
            if why is None:
                break
            if "Address already in use" not in why and "privilege separation" not in why:
                return why
        else:
            return why
        self.known_hosts = self.path("known_hosts")
        _write_new(self.known_hosts, "[127.0.0.1]:%d %s\n" % (self.port, host_pub))
        self.config = self.path("ssh_config")
        lines = []
        if self.node_env:  # one machine acting as many nodes, each with its name
            for n in self.names:
                lines += ["Host " + n, "  SetEnv STAGEBENCH_NODE=%s" % n, ""]
        for i in range(0, len(self.names), 50):
            lines += ["Host " + " ".join(self.names[i:i + 50]),
                      "  HostName 127.0.0.1",
                      "  Port %d" % self.port,
                      "  User root",
                      "  IdentityFile %s" % self.user_key,
                      "  IdentitiesOnly yes",
                      "  StrictHostKeyChecking yes",
                      "  UserKnownHostsFile %s" % self.known_hosts,
                      "  GlobalKnownHostsFile /dev/null",
                      "  CheckHostIP no",
                      "  UpdateHostKeys no",
                      "  BatchMode yes",
                      "  ControlMaster no",
                      "  ControlPath none",
                      "  ConnectTimeout 30",
                      "  LogLevel ERROR",
                      ""]
        _write_new(self.config, "\n".join(lines))
        return None

    def _privsep_dir(self):
        if not os.path.isdir("/run/sshd"):
            with contextlib.suppress(FileExistsError):
                os.makedirs("/run/sshd", mode=0o755)
                self.made_run_sshd = True

    def _wait_banner(self):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
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
            return "sshd did not start: %s" % (f.read().strip() or "no message")

    def sshd_settings(self, *names):
        """sshd -T's values of the given keywords for this config (lower case)."""
        rc, out, err = _run(["/usr/sbin/sshd", "-T", "-f", self.sshd_config, "-p",
                             str(self.port)])
        vals = dict(l.split(None, 1) for l in out.splitlines() if " " in l)
        return {n: vals.get(n.lower()) for n in names}

    def sshd_log_tail(self, lines=10):
        with open(self.log, errors="replace") as f:
            return " | ".join(f.read().strip().splitlines()[-lines:])

    def close(self):
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        if self.dir is not None:
            # sessions still open end with their sshd; any left by pid
            for e in os.listdir("/proc"):
                if not e.isdigit():
                    continue
                try:
                    with open("/proc/%s/cmdline" % e, "rb") as f:
                        if self.dir.encode() in f.read():
                            os.kill(int(e), signal.SIGKILL)
                except OSError:
                    pass
            shutil.rmtree(self.dir, True)
            self.dir = None
        if self.made_run_sshd and not _sshd_running_elsewhere(os.getpid()):
            with contextlib.suppress(OSError):
                os.rmdir("/run/sshd")
        self.made_run_sshd = False


def _check(count):
    """Self-check: ssh, clush -o, clush -O, the Task API, and a wrong host key refused."""
    with SshNodes(count) as nodes:
        if nodes.error:
            print("cannot start: %s" % nodes.error)
            return 77
        print("sshd on 127.0.0.1:%d; %s" % (nodes.port, nodes.sshd_settings(
            "MaxStartups", "MaxSessions", "PerSourceMaxStartups")))
        ok = True
        rc, out, err = _run(["ssh", "-F", nodes.config, nodes.names[-1], "echo", "up"])
        print("ssh -F CONFIG %s echo up: exit %s %r %r" % (nodes.names[-1], rc, out, err))
        ok &= rc == 0 and out == "up\n"
        for how in (nodes.clush_args(), ["-O", "ssh_options=" + nodes.ssh_options()]):
            rc, out, err = _run(["clush", "-f", "64"] + how + ["-w", nodes.nodeset(),
                                                               "echo", "up"], timeout=300)
            answered = sorted(l.split(":")[0] for l in out.splitlines() if l.endswith(": up"))
            print("clush %s -w %s echo up: exit %s, %d of %d answered%s"
                  % (" ".join(shlex.quote(a) for a in how), nodes.nodeset(), rc,
                     len(answered), count, (", stderr: " + err.strip()) if err else ""))
            ok &= rc == 0 and answered == nodes.names
        code = ("import sys\nfrom ClusterShell.Task import task_self\n"
                "from ClusterShell.NodeSet import NodeSet\n"
                "t = task_self()\nt.set_info('ssh_options', sys.argv[1])\n"
                "t.set_info('fanout', 64)\n"
                "t.run('echo up', nodes=NodeSet(sys.argv[2]), timeout=120)\n"
                "ok = [str(n) for out, ns in t.iter_buffers() for n in ns "
                "if out.message() == b'up']\n"
                "print(len(ok), sorted(rc for rc, ns in t.iter_retcodes()))\n")
        rc, out, err = _run(["/usr/bin/python3", "-c", code, nodes.ssh_options(),
                             nodes.nodeset()], timeout=300)
        print("Task API set_info('ssh_options', ...): %s%s" % (out.strip(), err.strip()))
        ok &= rc == 0 and out.strip() == "%d [0]" % count
        with open(nodes.known_hosts) as f:
            good = f.read()
        other = nodes._keygen("other_key")
        with open(other + ".pub") as f:
            with open(nodes.known_hosts, "w") as k:
                k.write("[127.0.0.1]:%d %s\n" % (nodes.port, " ".join(f.read().split()[:2])))
        rc, out, err = _run(["ssh", "-F", nodes.config, nodes.names[0], "true"])
        print("a wrong key in known_hosts: exit %s: %s" % (rc, err.strip().splitlines()[-1:]))
        ok &= rc == 255 and "Host key verification failed" in err
        with open(nodes.known_hosts, "w") as k:
            k.write(good)
        if not ok:
            print("sshd said: %s" % nodes.sshd_log_tail())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(_check(int(sys.argv[1]) if len(sys.argv) > 1 else 100))
