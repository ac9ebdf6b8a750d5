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
    """argv: test.py BINARY SOURCE_DIR [unittest args]. Without STAGEBENCH_LOCK_DIR, the runs
    of this process (its nodes, local or over the private sshd) take their node locks in a
    temporary directory of their own, not the machine's, where another test's nodes of the same
    names hold them."""
    global BINARY, SOURCE, SCRIPTS
    if len(sys.argv) < 3:
        sys.exit("usage: %s STAGEBENCH_BINARY SOURCE_DIR" % sys.argv[0])
    BINARY = os.path.abspath(sys.argv[1])
    SOURCE = os.path.abspath(sys.argv[2])
    SCRIPTS = os.path.join(SOURCE, "scripts")
    del sys.argv[1:3]
    if not os.environ.get("STAGEBENCH_LOCK_DIR"):
        locks = tempfile.mkdtemp(prefix="stagebench-locks-")
        atexit.register(shutil.rmtree, locks, True)
        os.environ["STAGEBENCH_LOCK_DIR"] = os.path.join(locks, "locks")
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


def catalogue_json():
    """The build's catalogue (stagebench list --format json), as the tests read it: the tests
    they run and expect come from it, not from a list of their own."""
    with open(os.environ["STAGEBENCH_CATALOGUE"]) as f:
        return json.load(f)


def catalogue_all():
    """The tests of `run all` (the spec's), in the catalogue's order."""
    return [t["test"] for t in catalogue_json()["tests"] if t["in_all"]]


def parts_of(tests):
    """The parts of tests, in the catalogue's order."""
    by = dict((t["test"], t["parts"]) for t in catalogue_json()["tests"])
    return [p for t in tests for p in by[t]]


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


def node_env():
    """What every node of a test gets in its environment beside its name (over ssh too):
    this process's lock directory."""
    return {"STAGEBENCH_LOCK_DIR": os.environ["STAGEBENCH_LOCK_DIR"]}


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


class ReportJSON(dict):
    """A cluster report's JSON object, as `stagebench-collect --format json` prints it, with
    model, the report itself (stagebench.model.Report)."""


def report_of(paths, manifest=None, **kw):
    """The collector's report of paths (kw: report.build's), as a ReportJSON."""
    from stagebench import collection, model, report
    built = report.build(collection.collect(list(paths), manifest_path=manifest), **kw)
    out = ReportJSON(json.loads(model.to_json(built)))
    out.model = built
    return out


def report_text(rep):
    from stagebench import reporttext
    return reporttext.to_text(rep.model)


def report_csv(rep):
    from stagebench import model
    return model.to_csv(rep.model)


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


def SshServer(base):
    """The package's private sshd on 127.0.0.1 (stagebench.sshd, what stagebench-sim --sshfs
    runs: throwaway host and user keys, its own config) in a new directory under base, accepting
    STAGEBENCH_NODE from ssh, with sshfs mounts through it and an ssh_config for node aliases.
    Everything is undone by close(), also after a failure."""
    from stagebench import sshd

    class TestSshServer(sshd.SshServer):
        def start(self):
            """None, or why it cannot work here."""
            self.error = None
            why = sshd.SshServer.start(self)
            self.error = why
            return why

        def ssh_config(self, aliases):
            """An ssh_config with Host entries for aliases -> 127.0.0.1, each sending its own
            STAGEBENCH_NODE (one machine acting as several remote nodes)."""
            path = os.path.join(self.dir, "ssh_config")
            lines = []
            for a in aliases:
                lines += ["Host %s" % a, "  HostName 127.0.0.1", "  Port %d" % self.port,
                          "  User %s" % self.user, "  IdentityFile %s" % self.user_key,
                          "  IdentitiesOnly yes", "  StrictHostKeyChecking no",
                          "  UserKnownHostsFile /dev/null", "  BatchMode yes",
                          "  LogLevel ERROR", "  SetEnv STAGEBENCH_NODE=%s %s" % (a, " ".join(
                              "%s=%s" % kv for kv in sorted(node_env().items()))), ""]
            with open(path, "w") as f:
                f.write("\n".join(lines))
            return path

        def mount(self, remote_dir, mountpoint, options=()):
            if not os.path.exists("/dev/fuse"):
                return "/dev/fuse does not exist"
            return sshd.SshServer.mount(self, remote_dir, mountpoint, options)

    return TestSshServer(tempfile.mkdtemp(prefix="sshd-", dir=base),
                         accept_env=("STAGEBENCH_NODE", "STAGEBENCH_LOCK_DIR"))


def is_mounted(path):
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            if line.split()[4] == path:
                return True
    return False


def start_module_sshd(prefix):
    """The private sshd that a test file's cases share (its setUpModule): (its base directory,
    the server); the file is skipped, saying why, where none can start."""
    base = tempfile.mkdtemp(prefix=prefix)
    ssh = SshServer(base)
    why = ssh.start()
    if why:
        ssh.close()
        shutil.rmtree(base, True)
        skip_file("no sshd in this sandbox: %s" % why)
    return base, ssh


def stop_module_sshd(base, ssh):
    """start_module_sshd's server stopped and its directory removed (tearDownModule)."""
    ssh.close()
    shutil.rmtree(base, True)


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
