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

The sshd is the package's (stagebench.sshd.SshServer, what stagebench-sim --sshfs runs), with
MaxStartups and the rest added to its configuration, in a session of its own; it makes Debian's privilege separation directory
/run/sshd if missing and removes it again at the end if it made it and no other sshd runs.
Standard library and this tree's stagebench package only, Python 3.6+. Run this file to check it
here: `/usr/bin/python3 tests/perf/sshnodes.py [N]`.
"""
import os
import shlex
import shutil
import signal
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import harness  # noqa: E402  (puts this tree's scripts/ on sys.path)
from stagebench import files as F  # noqa: E402
from stagebench import procs as P  # noqa: E402
from stagebench import sshd  # noqa: E402

def _run(cmd, timeout=60):
    """(exit status or None when it timed out, stdout, stderr) of cmd, no stdin."""
    return P.run_capture(cmd, timeout, raise_timeout=False)


class SshNodes(harness.Service):
    """count node names on one private sshd; see the module docstring."""

    def __init__(self, count, base=None, prefix="node", max_startups=1024, node_env=False,
                 gateways=0):
        self.count = count
        self.node_env = node_env  # each name's ssh session sets STAGEBENCH_NODE to it
        self.width = max(4, len(str(count)))
        self.names = ["%s%0*d" % (prefix, self.width, i) for i in range(1, count + 1)]
        # more names of the same sshd, for ClusterShell's gateways (tree mode)
        self.gateways = ["gw%02d" % i for i in range(1, gateways + 1)]
        self.prefix = prefix
        self.base = base
        self.max_startups = max_startups
        self.dir = None
        self.server = None
        self.port = None

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

    def start(self):
        """Start sshd and write the client config; None, or why it cannot work here."""
        self.dir = tempfile.mkdtemp(prefix="stagebench-sshnodes-", dir=self.base)
        # a fan-out of many simultaneous connections from one address: accept them all
        self.server = sshd.SshServer(
            self.dir, accept_env=("STAGEBENCH_NODE",), new_session=True,
            config=["MaxStartups %d" % self.max_startups, "MaxSessions 10",
                    "LoginGraceTime 60", "UseDNS no"])
        why = self.server.start()
        if why is not None:
            return why
        self.port = self.server.port
        self.sshd_config = self.server.config
        self.user_key = self.server.user_key
        with open(self.server.host_key + ".pub") as f:
            host_pub = " ".join(f.read().split()[:2])
        self.known_hosts = self.path("known_hosts")
        with F.open_new(self.known_hosts) as f:
            f.write("[127.0.0.1]:%d %s\n" % (self.port, host_pub))
        self.config = self.path("ssh_config")
        lines = []
        names = self.names + self.gateways
        if self.node_env:  # one machine acting as many nodes, each with its name
            for n in names:
                lines += ["Host " + n, "  SetEnv STAGEBENCH_NODE=%s" % n, ""]
        for i in range(0, len(names), 50):
            lines += ["Host " + " ".join(names[i:i + 50]),
                      "  HostName 127.0.0.1",
                      "  Port %d" % self.port,
                      "  User %s" % self.server.user,
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
        with F.open_new(self.config) as f:
            f.write("\n".join(lines))
        return None

    def sshd_settings(self, *names):
        """sshd -T's values of the given keywords for this config (lower case)."""
        rc, out, err = _run(["/usr/sbin/sshd", "-T", "-f", self.sshd_config, "-p",
                             str(self.port)])
        vals = dict(l.split(None, 1) for l in out.splitlines() if " " in l)
        return {n: vals.get(n.lower()) for n in names}

    def sshd_log_tail(self, lines=10):
        with open(self.server.log, errors="replace") as f:
            return " | ".join(f.read().strip().splitlines()[-lines:])

    def close(self):
        """Stop sshd (its sessions end with it), then any process still naming the directory
        (an ssh client of the config), by pid; remove the directory."""
        if self.server is not None:
            self.server.close()
            self.server = None
        if self.dir is not None:
            for pid in sshd.processes_mentioning(self.dir):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            shutil.rmtree(self.dir, True)
            self.dir = None


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
        other = nodes.server._keygen("other_key")
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
