# SPDX-License-Identifier: MIT
"""A private Slurm cluster on this host for tests: Debian's munged, slurmctld and two slurmd
(`slurmd -N n1`, `-N n2`) with their own key, config and state in one temporary directory,
listening on free ports of 127.0.0.1 only. The two nodes have different CPU counts (2 and 1 by
default), the case that broke sbatch through the launcher.

    with slurmhost.SlurmHost() as cluster:
        if cluster.error:
            print("skipped: " + cluster.error); sys.exit(77)
        subprocess.call(["srun", "-N2", "hostname"], env=cluster.env())

Every daemon runs in the foreground as a child of this process and is stopped by its pid at the
end, also after a failure or a SIGTERM/SIGHUP of the test (turned into SystemExit while the
cluster is up; SIGINT is Python's KeyboardInterrupt already). Each daemon also gets
PR_SET_PDEATHSIG, so it dies with this process even after a SIGKILL. Every process started
through the cluster carries SLURMHOST_MARK=<directory> in its environment (the daemons, the step
daemons, and the tasks of clients run with env()), which is how close() finds the job steps
that slurmd detached (slurmstepd is not its child) and how left_behind() proves nothing stayed.

Nothing outside the temporary directory is written: munged gets its socket, key, pid, log and
seed files there (Debian's defaults are under /run/munge, /etc/munge, /var/lib/munge and
/var/log/munge), and slurm.conf names every state, spool, pid and log path there, and an empty
plugstack.conf (Debian's includes /etc/slurm/plugstack.conf.d). No system file or service is
used or changed.

If something cannot start, start() returns the reason (also kept in .error) after a bounded
wait and everything started so far is stopped; it never hangs. A test file holds one cluster
for all its tests with up_or_skip() in setUpModule and close_clean() in tearDownModule.
Standard library and this tree's stagebench package only, Python 3.6+.
"""
import atexit
import ctypes
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import harness  # noqa: E402  (puts this tree's scripts/ on sys.path)
from stagebench import procs as P  # noqa: E402

MARK = "SLURMHOST_MARK"
DAEMONS = ("munged", "slurmctld", "slurmd")


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


def _die_with_parent():
    """preexec_fn: SIGTERM this child when the process that started it dies (Linux prctl)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _read(path, limit=None):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return b""
    return data if limit is None else data[-limit:]


def marked_processes(mark):
    """(pid, command) of live processes whose environment has SLURMHOST_MARK=mark, or whose
    command line, working directory or an open file is under the directory mark."""
    want = ("%s=%s" % (MARK, mark)).encode()
    out = []
    for pid, environ in P.live_others("environ"):
        base = "/proc/%d/" % pid
        cmd = _read(base + "cmdline").replace(b"\0", b" ").decode("utf-8", "replace").strip()
        hit = want in environ.split(b"\0") or mark in cmd
        if not hit:
            paths = []
            try:
                paths.append(os.readlink(base + "cwd"))
                for fd in os.listdir(base + "fd"):
                    paths.append(os.readlink(base + "fd/" + fd))
            except OSError:
                pass
            hit = any(p == mark or p.startswith(mark + "/") for p in paths)
        if hit:
            out.append((pid, cmd))
    return out


def up_or_skip(skip, cpus=(2, 1)):
    """The started cluster of a test file (its setUpModule); when it cannot start here,
    whatever started is stopped and skip(why) is called (clustertest.skip_file: exit 77)."""
    cluster = SlurmHost(cpus=cpus)
    cluster.__enter__()
    if cluster.error:
        why = cluster.error
        cluster.close()
        skip("no private Slurm cluster here: %s" % why)
    return cluster


class SlurmHost(harness.Service):
    """munged + slurmctld + slurmd per node, all private; see the module docstring.

    cpus: CPUs of each node (n1, n2, ...); each node is configured with that many cores in one
    socket. timeout: bound in seconds on the whole start-up. kill_wait: slurm.conf KillWait (the
    seconds between SIGTERM and SIGKILL when a step is cancelled)."""

    def __init__(self, cpus=(2, 1), base=None, timeout=60.0, kill_wait=10, extra_conf=()):
        self.cpus = list(cpus)
        self.nodes = ["n%d" % (i + 1) for i in range(len(self.cpus))]
        self.base = base
        self.timeout = timeout
        self.kill_wait = kill_wait
        self.extra_conf = list(extra_conf)
        self.dir = None
        self.procs = []  # (name, Popen), in start order
        self.error = None
        self.startup_s = None
        self.host = socket.gethostname().split(".")[0]
        self._old_handlers = {}
        self._stopping = False

    # --- context manager ---------------------------------------------------------------------
    def __enter__(self):
        self._catch_signals()
        return harness.Service.__enter__(self)

    def _catch_signals(self):
        """While the cluster is up, SIGTERM and SIGHUP (whose default kills without cleanup)
        and SIGINT (when it is Python's KeyboardInterrupt) stop the cluster first: then the
        process dies of SIGTERM/SIGHUP as it would have, or KeyboardInterrupt is raised. An
        ignored signal stays ignored. atexit stops it too if nobody called close()."""
        atexit.register(self.close)
        if threading.current_thread() is not threading.main_thread():
            return

        def handler(signum, _frame):
            if self._stopping:
                return  # a second signal (e.g. to the process and its group) while stopping
            self.close()
            if signum == signal.SIGINT:
                raise KeyboardInterrupt()
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

        for s, default in ((signal.SIGTERM, signal.SIG_DFL), (signal.SIGHUP, signal.SIG_DFL),
                           (signal.SIGINT, signal.default_int_handler)):
            if signal.getsignal(s) == default:
                self._old_handlers[s] = signal.signal(s, handler)

    def _restore_signals(self):
        for s, h in self._old_handlers.items():
            signal.signal(s, h)
        self._old_handlers = {}
        atexit.unregister(self.close)

    # --- environment -------------------------------------------------------------------------
    def env(self, base=None):
        """The environment for srun, salloc, sbatch, sinfo, scontrol...: SLURM_CONF and the
        mark; the Slurm variables of an enclosing job are removed."""
        e = dict(os.environ if base is None else base)
        for k in list(e):
            if k.startswith("SLURM_") or k.startswith("SALLOC_") or k.startswith("SBATCH_") \
                    or k.startswith("SRUN_") or k.startswith("SQUEUE_") or k.startswith("SINFO_"):
                del e[k]
        e["SLURM_CONF"] = self.conf
        e[MARK] = self.dir
        return e

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def run(self, cmd, timeout=60, **kw):
        """Run a client command with env(); (exit status, or None when it timed out and was
        killed; stdout, stderr) as text."""
        return P.run_capture(cmd, timeout, raise_timeout=False, env=self.env(), **kw)

    # --- start -------------------------------------------------------------------------------
    def start(self):
        """Start everything; None, or why it cannot work here (everything stopped again)."""
        t0 = time.monotonic()
        why = self._check_tools()
        if why is None:
            why = self._start(t0 + self.timeout)
        if why is not None:
            self.error = why
            self.stop()
            return why
        self.startup_s = time.monotonic() - t0
        return None

    def _check_tools(self):
        for tool in ("munged", "slurmctld", "slurmd", "srun", "sinfo", "scontrol", "scancel"):
            if not shutil.which(tool, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin"):
                return "%s is not installed (Debian: slurm-wlm, munge)" % tool
        if os.geteuid() != 0:
            return "slurmd must run as root to start jobs (running as uid %d)" % os.geteuid()
        return None

    def _start(self, deadline):
        self.dir = tempfile.mkdtemp(prefix="stagebench-slurm-", dir=self.base)
        os.chmod(self.dir, 0o700)
        for d in ("log", "ctld", "spool", "munge"):
            os.mkdir(self.path(d), 0o700)
        for n in self.nodes:
            os.mkdir(self.path("spool", n), 0o700)
        self.conf = self.path("slurm.conf")
        why = self._start_munged(deadline)
        if why:
            return why
        for _attempt in range(3):
            self._write_conf()
            why = self._start_slurm(deadline)
            if why is None or "Address already in use" not in why:
                return why
            self._stop_procs(("slurmctld", "slurmd"))  # another test took a port: again
        return why

    def _spawn(self, name, cmd, log):
        env = dict(os.environ)
        env[MARK] = self.dir
        env["SLURM_CONF"] = self.conf
        with open(log, "ab") as f:
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=f, stderr=f, env=env,
                                 cwd=self.dir, preexec_fn=_die_with_parent,
                                 start_new_session=True)
        self.procs.append((name, p))
        return p

    def _died(self, name, p, log):
        tail = _read(log, 2000).decode("utf-8", "replace").strip().splitlines()[-6:]
        return "%s exited with status %s: %s" % (name, p.returncode,
                                                 " | ".join(tail) or "no message")

    def _start_munged(self, deadline):
        key = self.path("munge", "munge.key")
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o400)
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(1024))
        self.munge_socket = self.path("munge", "munge.sock")
        log = self.path("log", "munged.log")
        p = self._spawn("munged", [
            "munged", "--foreground", "--force", "--socket", self.munge_socket,
            "--key-file", key, "--pid-file", self.path("munge", "munged.pid"),
            "--log-file", log, "--seed-file", self.path("munge", "munged.seed")], log)
        while time.monotonic() < deadline:
            if p.poll() is not None:
                return self._died("munged", p, log)
            if os.path.exists(self.munge_socket):
                return None
            time.sleep(0.05)
        return "munged did not create its socket within %.0f s" % self.timeout

    def _write_conf(self):
        self.ports = {"ctld": free_port(), "slurmd": free_port()}
        for n in self.nodes:
            self.ports[n] = free_port()
        d = self.dir
        user = pwd.getpwuid(os.geteuid()).pw_name
        lines = [
            "ClusterName=sbtest",
            "SlurmctldHost=%s(127.0.0.1)" % self.host,
            "SlurmctldPort=%d" % self.ports["ctld"],
            "SlurmdPort=%d" % self.ports["slurmd"],
            # bind to the node's address (127.0.0.1), not to every interface
            "CommunicationParameters=NoInAddrAny,NoCtldInAddrAny",
            "SlurmUser=%s" % user,
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            "AuthInfo=socket=%s" % self.munge_socket,
            "StateSaveLocation=%s/ctld" % d,
            "SlurmdSpoolDir=%s/spool/%%n" % d,
            "SlurmctldPidFile=%s/slurmctld.pid" % d,
            "SlurmdPidFile=%s/slurmd.%%n.pid" % d,
            "SlurmctldLogFile=%s/log/slurmctld.log" % d,
            "SlurmdLogFile=%s/log/slurmd.%%n.log" % d,
            "PlugStackConfig=%s/plugstack.conf" % d,
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/affinity",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "SchedulerType=sched/backfill",
            "MpiDefault=none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "ReturnToService=2",
            "InactiveLimit=0",
            "KillWait=%d" % self.kill_wait,
            "MinJobAge=30",
        ] + self.extra_conf
        for n, c in zip(self.nodes, self.cpus):
            lines.append("NodeName=%s NodeHostname=%s NodeAddr=127.0.0.1 Port=%d CPUs=%d "
                         "Boards=1 SocketsPerBoard=1 CoresPerSocket=%d ThreadsPerCore=1 "
                         "RealMemory=1000 State=UNKNOWN" % (n, self.host, self.ports[n], c, c))
        lines.append("PartitionName=debug Nodes=%s Default=YES MaxTime=INFINITE State=UP"
                     % ",".join(self.nodes))
        for name, text in (("slurm.conf", "\n".join(lines) + "\n"), ("plugstack.conf", "")):
            path = self.path(name)
            if os.path.lexists(path):
                os.unlink(path)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "w") as f:
                f.write(text)

    def _start_slurm(self, deadline):
        logs = {"slurmctld": self.path("log", "slurmctld.log")}
        self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", self.conf],
                    self.path("log", "slurmctld.stderr"))
        for n in self.nodes:
            logs["slurmd " + n] = self.path("log", "slurmd.%s.log" % n)
            self._spawn("slurmd " + n, ["slurmd", "-D", "-f", self.conf, "-N", n],
                        self.path("log", "slurmd.%s.stderr" % n))
        last = ""
        while time.monotonic() < deadline:
            for name, p in self.procs:
                if p.poll() is not None:
                    log = logs.get(name, self.path("log", "munged.log"))
                    why = self._died(name, p, log)
                    err = self.path("log", name.replace(" ", ".") + ".stderr")
                    extra = _read(err, 1000).decode("utf-8", "replace").strip()
                    return why + (" | " + extra if extra else "")
            rc, out, err = self.run(["sinfo", "-N", "-h", "-o", "%N %t"], timeout=10)
            states = dict(l.split(None, 1) for l in out.splitlines() if len(l.split()) == 2)
            last = (out + err).strip().replace("\n", "; ")
            if rc == 0 and all(states.get(n) == "idle" for n in self.nodes):
                return None
            time.sleep(0.2)
        return "the nodes were not idle within %.0f s (sinfo -N: %s)" % (self.timeout,
                                                                          last or "no output")

    # --- stop --------------------------------------------------------------------------------
    def _stop_procs(self, names=DAEMONS):
        """SIGTERM the named daemons by pid, newest first; SIGKILL after 10 s."""
        chosen = [(n, p) for n, p in self.procs if n.split()[0] in names]
        for _n, p in reversed(chosen):
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGTERM)
                except OSError:
                    pass
        for _n, p in reversed(chosen):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = [(n, p) for n, p in self.procs if (n, p) not in chosen]

    def stop(self):
        """Cancel every job, stop the daemons, kill any process still marked, remove the
        directory. Safe to call twice."""
        if self.dir is None or self._stopping:
            return
        self._stopping = True
        try:
            self._stop()
        finally:
            self._stopping = False

    def _stop(self):
        if any(n == "slurmctld" and p.poll() is None for n, p in self.procs):
            self.run(["scancel", "--full", "--quiet", "--user", pwd.getpwuid(os.geteuid()).pw_name],
                     timeout=15)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                rc, out, _err = self.run(["squeue", "-h", "-o", "%i"], timeout=10)
                if rc != 0 or not out.strip():
                    break
                time.sleep(0.2)
        self._stop_procs(("slurmd",))
        self._stop_procs(("slurmctld",))
        self._stop_procs(("munged",))
        for _ in range(3):
            left = marked_processes(self.dir)
            if not left:
                break
            for pid, _cmd in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.2)
        shutil.rmtree(self.dir, True)
        self.stopped_dir = self.dir
        self.dir = None

    def close(self):
        try:
            self.stop()
        finally:
            self._restore_signals()

    def close_clean(self):
        """close(), then assert that nothing was left behind (a test file's tearDownModule)."""
        self.close()
        left = self.left_behind()
        assert left == [], "left behind: %s" % left

    def left_behind(self):
        """After close(): processes still marked and whether the directory still exists."""
        d = getattr(self, "stopped_dir", None)
        if d is None:
            return []
        out = ["process %d: %s" % (pid, cmd) for pid, cmd in marked_processes(d)]
        if os.path.lexists(d):
            out.append("directory %s" % d)
        return out
