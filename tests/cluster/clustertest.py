# SPDX-License-Identifier: MIT
"""Shared helpers of the cluster tests: the scripts, real summaries, and a private sshd with
an sshfs mount on 127.0.0.1 (a real network /stage server).

Each test file is run as `PYTHON FILE BINARY SOURCE_DIR`, like the integration tests, PYTHON
being the interpreter CMake found with ClusterShell; the commands are run with it, from
scripts/, and import the stagebench package from there. The test catalogue is the one the
build generated beside the binary (catalogue.json), else the binary's own.
A test file that cannot run here exits SKIP (77), saying why: ctest reports it skipped.
"""
import atexit
import contextlib
import importlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

BINARY = None
SOURCE = None
SCRIPTS = None
SKIP = 77  # the exit status of a test file that cannot run here (SKIP_RETURN_CODE in ctest)


def skip_file(why):
    """Exit SKIP, saying why: nothing in this file can run here."""
    print("SKIPPED: %s" % why, flush=True)
    sys.exit(SKIP)


def setup_from_argv():
    """argv: test.py BINARY SOURCE_DIR [unittest args]."""
    global BINARY, SOURCE, SCRIPTS
    if len(sys.argv) < 3:
        sys.exit("usage: %s STAGEBENCH_BINARY SOURCE_DIR" % sys.argv[0])
    BINARY = os.path.abspath(sys.argv[1])
    SOURCE = os.path.abspath(sys.argv[2])
    SCRIPTS = os.path.join(SOURCE, "scripts")
    del sys.argv[1:3]
    sys.path.insert(0, SCRIPTS)
    try:
        importlib.import_module("ClusterShell")
    except ImportError:
        skip_file("%s has no ClusterShell (Debian: python3-clustershell)" % sys.executable)
    built = os.path.join(os.path.dirname(BINARY), "catalogue.json")
    if os.path.exists(os.environ.get("STAGEBENCH_CATALOGUE", "")):
        pass  # ctest's: the build's
    elif os.path.exists(built):
        os.environ["STAGEBENCH_CATALOGUE"] = built
    else:
        with tempfile.NamedTemporaryFile("w", prefix="stagebench-catalogue-", suffix=".json",
                                         delete=False) as f:
            f.write(subprocess.check_output([BINARY, "list", "--format", "json"],
                                            universal_newlines=True))
        os.environ["STAGEBENCH_CATALOGUE"] = f.name
        atexit.register(os.unlink, f.name)


def script(name):
    return os.path.join(SCRIPTS, name)


def command(name):
    """The argv that runs one of the commands from the source tree, with this interpreter."""
    return [sys.executable, script(name)]


def env():
    e = dict(os.environ)
    e.pop("PYTHONPATH", None)
    e.pop("STAGEBENCH_DIR", None)
    e.pop("STAGEBENCH_NODE", None)
    e.pop("STAGEBENCH_SCALE", None)
    return e


def run_script(name, args, timeout=240, python=None, check_traceback=True, **kw):
    """Run one of the commands with a list of arguments, with python (default: this
    interpreter); CompletedProcess (text)."""
    cmd = [python or sys.executable, script(name)] + list(args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env(),
                       stdin=subprocess.DEVNULL, **kw)
    if check_traceback:
        assert "Traceback" not in p.stderr, "%s printed a traceback:\n%s" % (name, p.stderr)
    return p


def has_clustershell(python):
    return subprocess.run([python, "-c", "import ClusterShell"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, timeout=60).returncode == 0


def all_pythons():
    """Every distinct python3 here: this one, the one on PATH and Debian's."""
    out = []
    for p in (sys.executable, shutil.which("python3"), "/usr/bin/python3"):
        if p and os.path.exists(p) and os.path.realpath(p) not in [os.path.realpath(x)
                                                                    for x in out]:
            out.append(p)
    return out


def pythons():
    """Every distinct python3 here that has ClusterShell (the commands need it)."""
    return [p for p in all_pythons() if has_clustershell(p)]


def run_nodes(nodes, args, outdir, stage, start_in=1.0, cpus=None):
    """Run `stagebench run ARGS` as several named nodes at one start instant; {node: path}."""
    at = time.time() + start_in
    procs = {}
    for i, n in enumerate(nodes):
        out = os.path.join(outdir, "%s.json" % n)
        cmd = [BINARY, "run"] + list(args) + ["--scale", "tiny", "--dir", stage, "--node", n,
                                              "--start-at", "%.6f" % at, "--out", out,
                                              "--no-progress"]
        if cpus is not None:
            cmd += ["--cpus", str(cpus[i % len(cpus)])]
        procs[n] = (subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     env=env()), out)
    paths = {}
    for n, (p, out) in procs.items():
        _, err = p.communicate(timeout=120)
        paths[n] = (out, p.returncode, err.decode())
    return paths


def cores():
    p = subprocess.run([BINARY, "info", "--format", "json"], capture_output=True, text=True,
                       timeout=60, env=env())
    return [t["cpu"] for t in json.loads(p.stdout)["threads"]]


def processes_mentioning(text):
    """Pids of live processes whose command line contains text (leak checks)."""
    out = []
    for e in os.listdir("/proc"):
        if not e.isdigit() or int(e) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % e, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
            with open("/proc/%s/stat" % e) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmd and state != "Z":
            out.append((int(e), cmd.strip()))
    return out


def load(path):
    with open(path) as f:
        return json.load(f)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SshServer:
    """A private sshd on 127.0.0.1 (throwaway host and user keys, its own config), and sshfs
    mounts through it. Everything is undone by close(), also after a failure."""

    def __init__(self, base):
        self.base = base
        self.dir = tempfile.mkdtemp(prefix="sshd-", dir=base)
        self.proc = None
        self.mounts = []
        self.made_run_sshd = False
        self.port = None
        self.error = None
        self.log = os.path.join(self.dir, "sshd.log")

    def _privsep_dir(self):
        """sshd's privilege separation directory, made by its systemd unit normally."""
        if not os.path.isdir("/run/sshd"):
            with contextlib.suppress(FileExistsError):
                os.makedirs("/run/sshd", mode=0o755)
                self.made_run_sshd = True

    def _keygen(self, name):
        path = os.path.join(self.dir, name)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "stagebench-test",
                        "-f", path], check=True, capture_output=True, timeout=60)
        return path

    def start(self, accept_env=("STAGEBENCH_NODE",)):
        """Start sshd; returns None, or why it cannot work here."""
        for tool in ("/usr/sbin/sshd", "ssh", "ssh-keygen"):
            if not shutil.which(tool):
                return "%s is not installed (Debian: openssh-server, openssh-client)" % tool
        self.host_key = self._keygen("host_key")
        self.user_key = self._keygen("user_key")
        self.auth = os.path.join(self.dir, "authorized_keys")
        shutil.copy(self.user_key + ".pub", self.auth)
        os.chmod(self.auth, 0o600)
        self._privsep_dir()
        self.config = os.path.join(self.dir, "sshd_config")
        with open(self.config, "w") as f:
            f.write("\n".join([
                "ListenAddress 127.0.0.1",
                "HostKey %s" % self.host_key,
                "PermitRootLogin prohibit-password",
                "PubkeyAuthentication yes",
                "AuthorizedKeysFile %s" % self.auth,
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "UsePAM no",
                "StrictModes no",
                "PidFile none",
                "AcceptEnv %s" % " ".join(accept_env),
                "Subsystem sftp internal-sftp",
                "LogLevel ERROR",
                ""]))
        for _ in range(5):
            self._privsep_dir()  # another test run may have removed it meanwhile
            self.port = free_port()
            with open(self.log, "w") as log:
                self.proc = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", self.config,
                                              "-p", str(self.port)],
                                             stdout=subprocess.DEVNULL, stderr=log)
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
            with open(self.log) as f:
                self.error = f.read().strip()
            if "Address already in use" not in self.error and \
                    "privilege separation directory" not in self.error:
                break
        self.proc = None
        return "sshd did not start: %s" % (self.error or "no message")

    def ssh_options(self):
        return ["-p", str(self.port), "-i", self.user_key, "-o", "IdentitiesOnly=yes",
                "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                "-o", "BatchMode=yes", "-o", "LogLevel=ERROR"]

    def ssh_config(self, aliases):
        """An ssh_config with Host entries for aliases -> 127.0.0.1, each sending its own
        STAGEBENCH_NODE (one machine acting as several remote nodes)."""
        path = os.path.join(self.dir, "ssh_config")
        lines = []
        for a in aliases:
            lines += ["Host %s" % a, "  HostName 127.0.0.1", "  Port %d" % self.port,
                      "  User root", "  IdentityFile %s" % self.user_key,
                      "  IdentitiesOnly yes", "  StrictHostKeyChecking no",
                      "  UserKnownHostsFile /dev/null", "  BatchMode yes", "  LogLevel ERROR",
                      "  SetEnv STAGEBENCH_NODE=%s" % a, ""]
        with open(path, "w") as f:
            f.write("\n".join(lines))
        return path

    def mount(self, remote_dir, mountpoint):
        """sshfs remote_dir (on this machine, through sshd) at mountpoint; None or why not."""
        if not shutil.which("sshfs"):
            return "sshfs is not installed (Debian: sshfs)"
        if not os.path.exists("/dev/fuse"):
            return "/dev/fuse does not exist"
        opts = ",".join(["IdentityFile=%s" % self.user_key, "StrictHostKeyChecking=no",
                         "UserKnownHostsFile=/dev/null", "BatchMode=yes", "LogLevel=ERROR",
                         "IdentitiesOnly=yes"])
        p = subprocess.run(["sshfs", "-p", str(self.port), "-o", opts,
                            "root@127.0.0.1:%s" % remote_dir, mountpoint],
                           capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            return "sshfs failed (exit %d): %s" % (p.returncode, p.stderr.strip())
        self.mounts.append(mountpoint)
        return None

    def close(self):
        for m in reversed(self.mounts):
            for cmd in (["fusermount", "-u", m], ["fusermount3", "-u", m], ["umount", m],
                        ["umount", "-l", m]):
                if not shutil.which(cmd[0]):
                    continue
                if subprocess.run(cmd, capture_output=True, timeout=60).returncode == 0:
                    break
        self.mounts = []
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        # sshd children (sessions of sshfs) end with it; make sure none is left
        for pid, _cmd in processes_mentioning(self.config if hasattr(self, "config") else
                                              self.dir):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        # /run/sshd goes if this made it and no other sshd (another test run's) needs it
        if self.made_run_sshd and not any(
                os.path.basename(c.split()[0]) == "sshd" for _p, c in processes_mentioning("sshd")
                if c):
            with contextlib.suppress(OSError):
                os.rmdir("/run/sshd")
        self.made_run_sshd = False


def is_mounted(path):
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            if line.split()[4] == path:
                return True
    return False


class TempDirCase(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="stagebench-cluster-test-")
        self.addCleanup(self.cleanup_dir)

    def cleanup_dir(self):
        left = processes_mentioning(self.dir)
        for pid, _cmd in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.dir, True)
        self.assertEqual(left, [], "processes left behind")

    def path(self, *parts):
        return os.path.join(self.dir, *parts)
