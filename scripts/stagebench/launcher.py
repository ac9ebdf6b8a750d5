# SPDX-License-Identifier: MIT
"""The launcher of stagebench-cluster: the info round, the servers and their preparers, the
prepare and run rounds of every repetition, the manifest, and stopping every node's stagebench
on a signal. Rounds go through an engine (engines.py); files through files.py."""
import binascii
import json
import math
import os
import re
import secrets
import shlex
import signal
import subprocess
import sys
import time

from . import catalogue
from . import clocksync
from . import common as L
from . import files as F
from . import histhook
from . import procs as P
from . import report as R
from .engines import NODE, Outcome, make as make_engine
from .nodes import nodeset_expand, nodeset_fold, read_hostfile, read_servers_file

MIN_LEAD_S = 3.0
CLOCK_LINES = 10  # nodes named one a line for a clock out of tolerance; the rest folded
SERVER_DROP_TIMEOUT = 3600  # --server-drop's command: a server's cache of a big disk can take long

# Remote scripts (constant text; every value reaches them as a positional argument).
# The node's name: $STAGEBENCH_NODE, else Slurm's node name, else its short host name.
SH_NAME = 'n=${STAGEBENCH_NODE:-${SLURMD_NODENAME:-$(hostname -s)}}'
SH_NAMED = SH_NAME + '; exec "$@" --node "$n"'
# The node-local scratch directory $p, an unpredictable name under --scratch (made when
# missing): made fresh, mode 0700, or else it must already be a private directory of this
# user (another alias of the same machine made it): a directory, not a link, owned by us,
# mode 0700. Anything else (planted by another user, a link) fails the node, nothing written.
SH_CHECK = ('ck() { [ -d "$1" ] && [ ! -L "$1" ] && [ -O "$1" ] && '
            'case "$(ls -ld -- "$1")" in "drwx------ "*|"drwx------. "*) true;; *) false;; '
            'esac; }')
# A process's start time (field 22 of /proc/PID/stat): with its pid, it names that process.
SH_START = ('st() { [ -r "/proc/$1/stat" ] && (read -r s <"/proc/$1/stat" && s=${s##*) } && '
            'set -f && set -- $s && echo "${20}"); }')
# run: $1 shared results dir (or empty: write into the node-local scratch dir $3),
#      $2 file suffix, $3 scratch dir (for the pid file); then the stagebench command.
# The pid file $p/$n.pid holds "PID START-TIME", created exclusively (set -C) in $p.
SH_RUN = (SH_NAME + '; r=$1; s=$2; p=$3; shift 3; ' + SH_CHECK + '; ' + SH_START + '; '
          'mkdir -p -- "${p%/*}"; mkdir -m 0700 -- "$p" 2>/dev/null || ck "$p" || { echo "stagebench-cluster: error: '
          'node-local scratch $p is not a private directory of this user (mode 0700, not a '
          'link): refused" >&2; exit 3; }; '
          'rm -f -- "$p/$n.pid" && t=$(st $$) && (set -C; echo "$$ $t" >"$p/$n.pid") || exit 3; '
          'if [ -n "$r" ]; then o="$r/$n.$s"; else o="$p/$s"; fi; '
          'exec "$@" --node "$n" --out "$o"')
# arm: the scratch directory made or checked as for run, then --detach into the state
# directory $p/$4.NODE (stagebench makes it, mode 0700, and refuses one that exists)
SH_ARM = (SH_NAME + '; r=$1; s=$2; p=$3; a=$4; shift 4; ' + SH_CHECK + '; '
          'mkdir -p -- "${p%/*}"; mkdir -m 0700 -- "$p" 2>/dev/null || ck "$p" || { echo '
          '"stagebench-cluster: error: node-local scratch $p is not a private directory of '
          'this user (mode 0700, not a link): refused" >&2; exit 3; }; '
          'if [ -n "$r" ]; then o="$r/$n.$s"; else o="$p/$s"; fi; '
          'exec "$@" --node "$n" --out "$o" --detach "$p/$a.$n"')
# an armed part's state directory is $1.NODE: `$2 $3 STATE_DIR ARGS...` (status, stop), or
# the tail of its log (no $2)
SH_ATSTATE = (SH_NAME + '; d="$1.$n"; if [ $# -eq 1 ]; then exec tail -n 20 -- "$d/log"; fi; '
              'b=$2; c=$3; shift 3; exec "$b" "$c" "$d" "$@"')
# stop: $1 scratch dir, $2 signal name. Only the process the pid file names, when it is still
# that process (same start time) and a stagebench run of this launcher (--start-at in its
# command line), in a scratch directory that is ours.
SH_STOP = (SH_NAME + '; p=$1; ' + SH_CHECK + '; ' + SH_START + '; '
           'ck "$p" && [ -f "$p/$n.pid" ] && [ ! -L "$p/$n.pid" ] || exit 0; '
           'read -r k t <"$p/$n.pid"; case "$k" in ""|*[!0-9]*) exit 0;; esac; '
           '[ -n "$t" ] && [ "$(st "$k")" = "$t" ] && '
           'tr "\\000" "\\n" <"/proc/$k/cmdline" | grep -qx -e --start-at && '
           'kill -s "$2" "$k" 2>/dev/null; exit 0')
# scratch removal: this node's armed state directories (a directory, not a link), its pid
# file and the summaries, then the directory once empty
SH_SCRATCH_RM = (SH_NAME + '; p=$1; ' + SH_CHECK + '; ck "$p" || exit 0; '
                 'for d in "$p"/arm-*."$n"; do [ -d "$d" ] && [ ! -L "$d" ] && '
                 'rm -f -- "$d/state" "$d/log" && rmdir -- "$d"; done; '
                 'rm -f -- "$p/$n.pid" "$p"/*.json; rmdir -- "$p" 2>/dev/null; exit 0')
DEFAULT_FANOUT = 64  # ClusterShell's: connections at once in an armed run
FINAL = ("done", "failed", "interrupted", "lost")

RUN_FLAGS = ("verify", "fsync", "keep", "require_ntp", "late_ok")
RUN_VALUES = ("threads", "cpus", "xfer", "seed", "count", "chunk", "passes")



def err_line(lines):
    """The most telling stderr line of a node: stagebench's own error line, else the last."""
    for ln in reversed(lines):
        if "error:" in ln:
            return ln.strip()
    return lines[-1].strip() if lines else ""


def parse_infos(res):
    """{node: its `stagebench info --format json` object} of the nodes of a round that printed
    one."""
    infos = {}
    for node, o in res.items():
        text = "\n".join(o.out).strip()
        if text:
            try:
                info = json.loads(text)
            except ValueError:
                info = None
            if isinstance(info, dict) and info.get("schema") == "stagebench.info/1":
                infos[node] = info
    return infos


def parse_state(o):
    """A node's `stagebench status --format json` object from its outcome, or None."""
    text = "\n".join(o.out).strip()
    try:
        st = json.loads(text) if text else None
    except ValueError:
        return None
    if isinstance(st, dict) and st.get("schema") == "stagebench.state/1":
        return st
    return None


def slurm_node_cpus(nodes):
    """{node: the CPUs Slurm counts on it} (`scontrol show node -o`), {} when unknown."""
    if not nodes:
        return {}
    try:
        rc, out, _err = P.run_capture(["scontrol", "show", "node", "-o", ",".join(nodes)], 30)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    cpus = {}
    for line in out.splitlines() if rc == 0 else []:
        m = re.search(r"\bNodeName=(\S+).*\bCPUTot=(\d+)", line)
        if m:
            cpus[m.group(1)] = int(m.group(2))
    return cpus


def local_build(binary):
    """The build id of the stagebench on this machine (its `clock` header), or None."""
    if not binary or binary == "none":
        return None
    try:
        rc, out, _err = P.run_capture([binary, "clock", "--node", "launcher"], 30)
        head = json.loads(out.splitlines()[0]) if rc == 0 and out else None
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return None
    return head.get("build") if isinstance(head, dict) else None


class Launcher:
    def __init__(self, args):
        self.args = args
        self.stop_signal = None
        self.proc = None
        self.round_no = 0
        self.manifest = None
        self.dead = {}  # node -> why it is left out of later rounds
        self.ident = {}  # launcher name -> the name the node reports (its summaries' name)
        self.lead = MIN_LEAD_S
        self.vprint = (lambda *a: L.say(" ".join(str(x) for x in a))) if args.verbose \
            else (lambda *a: None)

    # -- set-up

    def setup(self):
        """Every option checked and resolved before anything is launched, in steps: the tests,
        the time limits, the commands, the nodes, where the results go, the engine; then the
        run options, by the stagebench on this machine."""
        a = self.args
        if a.exec_mode and a.launcher == "srun":
            raise L.UsageError("--exec works with clush and pdsh, not srun")
        if a.repeat < 1 or a.repeat > 10000:
            raise L.UsageError("--repeat %d is out of range: 1 to 10000" % a.repeat)
        self.check_binary = self.find_check_binary()
        self.catalogue = catalogue.load(self.check_binary)
        self.plan = self.catalogue.parse_tests(a.tests)
        nparts = sum(len(p) for _t, p in self.plan)
        for opt in ("count", "chunk", "passes"):
            if getattr(a, opt) is not None and nparts != 1:
                raise L.UsageError("--%s overrides one part: name a single part" % opt)
        if a.file_size is not None and len(self.plan) != 1:
            raise L.UsageError("--file-size overrides one test's replica: name a single test")
        self.setup_times()
        self.setup_commands()
        self.setup_nodes()
        self.setup_results()
        self.setup_engine()
        self.check_run_options()

    def setup_times(self):
        """--timeout, --prepare-timeout, --info-timeout, --lead, --max-offset, --interval."""
        a = self.args
        self.timeout = L.parse_seconds(a.timeout, "--timeout", 1, 7 * 86400)
        self.prepare_timeout = L.parse_seconds(a.prepare_timeout, "--prepare-timeout", 1,
                                               7 * 86400)
        self.info_timeout = L.parse_seconds(a.info_timeout, "--info-timeout", 1, 86400)
        self.min_lead = L.parse_seconds(a.lead, "--lead", MIN_LEAD_S, 3600)
        self.lead = self.min_lead
        self.max_offset = L.parse_seconds(a.max_offset, "--max-offset", 0, 3600)
        self.interval = 0.0
        if a.interval is not None:
            self.interval = L.parse_seconds(a.interval, "--interval", 1, 86400)

    def setup_commands(self):
        """--server-drop's words, --fanout's range, the --stagebench and --dir templates."""
        a = self.args
        self.server_drop = None
        if a.server_drop is not None:
            try:
                self.server_drop = shlex.split(a.server_drop)
            except ValueError as e:
                raise L.UsageError("--server-drop '%s': %s" % (a.server_drop, e))
            if not self.server_drop or "\0" in a.server_drop:
                raise L.UsageError("--server-drop needs a command (its words, run on this "
                                   "host without a shell)")
        if a.fanout is not None and not (1 <= a.fanout <= 100000):
            raise L.UsageError("--fanout %d is out of range" % a.fanout)
        for opt in ("stagebench", "dir"):
            v = getattr(a, opt)
            if v is None:
                continue
            if not v or "\0" in v:
                raise L.UsageError("--%s is empty or contains a NUL byte" % opt)
            if "%h" in v.replace("%%", "") and not a.exec_mode:
                raise L.UsageError("--%s '%s': %%h is replaced by the node name only with "
                                   "--exec" % (opt, v))
        self.stagebench = self._template(a.stagebench)
        self.dir = self._template(a.dir) if a.dir else None

    def setup_nodes(self):
        """The nodes (-w, -g, --hostfile, else Slurm's allocation for srun; less -x) and, with
        --servers, the server of each."""
        a = self.args
        nodes = []
        for ns in a.nodes or []:
            nodes += nodeset_expand(ns)
        for grp in a.group or []:
            nodes += nodeset_expand("@" + grp)
        if a.hostfile:
            nodes += read_hostfile(a.hostfile)
        if not nodes and a.launcher == "srun" and os.environ.get("SLURM_JOB_NODELIST"):
            nodes = nodeset_expand(os.environ["SLURM_JOB_NODELIST"])
        if not nodes:
            raise L.UsageError("no nodes: give -w NODESET, -g GROUP or --hostfile FILE"
                               + (" (or run inside a Slurm allocation)"
                                  if a.launcher == "srun" else ""))
        excl = set()
        for ns in a.exclude or []:
            excl.update(nodeset_expand(ns))
        self.nodes = sorted(set(nodes) - excl, key=L.natural_key)
        if not self.nodes:
            raise L.UsageError("every node is excluded")
        self.ident = {n: n for n in self.nodes}
        self.servers = read_servers_file(a.servers) if a.servers else None
        if self.servers is not None:
            lost = [n for n in self.nodes if n not in self.servers]
            if lost:
                raise L.UsageError("--servers %s does not name the server of %s"
                                   % (a.servers, nodeset_fold(lost)))

    def setup_results(self):
        """How the summaries come back (--gather), the run id, the run directory, and the
        node-local scratch directory; --topology's needs."""
        a = self.args
        gather = a.gather or ("shared" if a.exec_mode or a.launcher == "srun" else "rcopy")
        if gather == "rcopy" and (a.exec_mode or a.launcher == "srun"):
            raise L.UsageError("--gather rcopy needs clush or pdsh over ssh")
        self.gather = gather
        if not os.path.isabs(a.scratch) or not re.match(r"^[A-Za-z0-9._/-]+$", a.scratch):
            raise L.UsageError("--scratch '%s' must be an absolute path of letters, digits, "
                               "'.', '_', '-', '/'" % a.scratch)
        self.run_id = a.run_id or time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        if not L.run_id_ok(self.run_id):
            raise L.UsageError("--run-id '%s' is not valid: letters, digits, '.', '_', '-'"
                               % self.run_id)
        self.results = os.path.abspath(a.results)
        self.rundir = os.path.join(self.results, self.run_id)
        # unpredictable: another user cannot make it beforehand (and if they make it once they
        # see it, the node refuses it: SH_RUN)
        self.scratch = os.path.join(a.scratch, "stagebench-%s-%s" % (
            self.run_id, binascii.hexlify(os.urandom(8)).decode()))
        if a.topology is not None:
            if a.launcher != "clush" or a.exec_mode:
                raise L.UsageError("--topology (ClusterShell's tree mode, through gateways) "
                                   "works with clush over ssh, not %s"
                                   % ("--exec" if a.exec_mode else a.launcher))
            if gather == "rcopy":
                raise L.UsageError("--topology: the summaries are not copied back through "
                                   "gateways: give --gather shared (a results directory "
                                   "every node can write)")

    def setup_engine(self):
        """The engine, whether it arms the nodes, its fan-out, and the tools it needs here."""
        a = self.args
        self.engine = make_engine(a.launcher, a.exec_mode, a.launcher_option, a.fanout,
                                  topology=a.topology)
        # clush and pdsh over ssh arm the nodes (a connection held for seconds, not for a
        # part): a bounded fan-out works. srun and --exec hold every node's connection or
        # process for the whole part: nodes past the first wave would start late.
        self.armed = not a.exec_mode and a.launcher in ("clush", "pdsh")
        self.arm_token = secrets.token_hex(8)
        if self.interval and not self.armed:
            raise L.UsageError("--interval arms a whole test in one round: clush or pdsh over "
                               "ssh, not %s" % ("--exec" if a.exec_mode else a.launcher))
        if self.armed:
            self.engine.fanout = a.fanout or DEFAULT_FANOUT
        elif a.fanout is not None and a.fanout < len(self.nodes):
            raise L.UsageError(
                "--fanout %d is below the %d nodes: %s holds a connection to every node for a "
                "whole part, so the nodes past the first %d would start after the others "
                "(only armed runs, clush or pdsh over ssh, take a bounded fan-out)"
                % (a.fanout, len(self.nodes), "--exec" if a.exec_mode else a.launcher, a.fanout))
        if not a.dry_run:
            self.engine.check_installed()
        if self.gather == "rcopy" and a.launcher == "pdsh" and not a.dry_run and \
                not F.which("rpdcp"):
            raise L.UsageError("--gather rcopy with pdsh needs rpdcp (Debian: pdsh)")

    def find_check_binary(self):
        """The stagebench on this machine that checks the run options and gives the test
        catalogue: --local-stagebench, else the one beside this command or on PATH, else
        --exec's --stagebench when it names one binary for every node; None when there is none
        (or --local-stagebench none)."""
        a = self.args
        if a.local_stagebench is not None:
            return None if a.local_stagebench == "none" else a.local_stagebench
        binary = F.find_sibling("stagebench")
        mine = self._template(a.stagebench)
        if binary is None and a.exec_mode and NODE not in mine:
            binary = mine if os.sep in mine else F.which(mine)
        return binary

    def check_run_options(self):
        """Bad run options fail here, once, rather than on every node: `stagebench run
        --dry-run` with them on this machine (one thread: this machine's cores are not the
        nodes')."""
        a = self.args
        binary = self.check_binary
        if binary is None:
            if a.local_stagebench != "none":
                L.say("warning: the run options are not checked before the launch: no "
                      "stagebench beside this command or on PATH (give --local-stagebench PATH, "
                      "or --local-stagebench none to say so); the nodes will check them")
            return
        opts = list(self.run_options())
        for f in ("threads", "cpus"):
            if getattr(a, f) is not None:
                i = opts.index("--" + f)
                del opts[i:i + 2]
        names = [p for _t, ps in self.plan for p in ps]
        tests = self.catalogue.tests
        if all(t in tests and tests[t]["parts"] == ps for t, ps in self.plan):
            names = [t for t, _ps in self.plan]
        cmd = [binary, "run"] + names + opts + ["--dry-run", "--dir", "/", "--threads", "1",
                                                "--quiet"]
        try:
            rc, _out, err = P.run_capture(cmd, 60)
        except (OSError, subprocess.TimeoutExpired) as e:
            L.say("warning: cannot check the run options with %s: %s" % (binary, e))
            return
        if rc == 2:
            raise L.UsageError("the run options are refused: %s"
                               % err_line(err.splitlines()).replace("stagebench: error: ", ""))

    def _template(self, text):
        """%h -> the node-name placeholder, %% -> %, in an option that is a template."""
        out, i = [], 0
        while i < len(text):
            if text.startswith("%%", i):
                out.append("%")
                i += 2
            elif text.startswith("%h", i):
                out.append(NODE)
                i += 2
            else:
                out.append(text[i])
                i += 1
        return "".join(out)

    def run_options(self):
        a = self.args
        opts = ["--scale", a.scale]
        for f in RUN_VALUES:
            v = getattr(a, f)
            if v is not None:
                opts += ["--" + f.replace("_", "-"), v]
        if a.file_size is not None:
            opts += ["--file-size", a.file_size]
        for f in RUN_FLAGS:
            if getattr(a, f):
                opts.append("--" + f.replace("_", "-"))
        return opts

    def dir_opts(self):
        return ["--dir", self.dir] if self.dir else []

    # -- commands per round kind

    def named(self, args):
        """A stagebench command that takes --node: the node's name added."""
        if self.engine.exec_mode:
            return [self.stagebench] + args + ["--node", NODE]
        return ["sh", "-c", SH_NAMED, "sh", self.stagebench] + args

    def info_args(self):
        return self.named(["info", "--format", "json"] + self.dir_opts())

    def prepare_args(self, test):
        a = self.args
        extra = ["--scale", a.scale]
        if a.xfer:
            extra += ["--xfer", a.xfer]
        for f in ("threads", "cpus"):
            if getattr(a, f):
                extra += ["--" + f, getattr(a, f)]
        if a.file_size:
            extra += ["--file-size", a.file_size]
        return self.named(["prepare", test] + extra + self.dir_opts())

    def run_args(self, part, rep, start_at):
        base = ["run", part, "--start-at", "%.6f" % start_at, "--repetition", str(rep),
                "--no-progress"] + \
            self.run_options() + self.dir_opts()
        suffix = "%s.rep%d.json" % (part, rep)
        if self.engine.exec_mode:
            out = os.path.join(self.rundir, NODE + "." + suffix)
            return [self.stagebench] + base + ["--node", NODE, "--out", out]
        shared = self.rundir if self.gather == "shared" else ""
        return ["sh", "-c", SH_RUN, "sh", shared, suffix, self.scratch, self.stagebench] + base

    def state_name(self, part, rep):
        """The state directory of an armed part, in the node-local scratch directory: a name
        no other user can predict."""
        return "arm-%s-%s.rep%d" % (self.arm_token, part, rep)

    def arm_args(self, name, parts, rep, start_at, interval, sname=None, force=False):
        """Arm parts (name: the test's when they are several) on a node: `stagebench run ...
        --detach STATE_DIR`, which returns once every thread waits for start_at (or set-up
        failed, with its error line); part k starts at start_at + k x interval."""
        tests = self.catalogue.tests
        names = [name] if name in tests and tests[name]["parts"] == parts else list(parts)
        base = ["run"] + names + ["--start-at", "%.6f" % start_at, "--repetition", str(rep),
                                  "--no-progress"]
        if len(parts) > 1:
            base += ["--interval", "%g" % interval]
        base += self.run_options() + self.dir_opts()
        if force:  # armed again: the first attempt's summary (interrupted) is replaced
            base.append("--force")
        suffix = "%s.rep%d.json" % (name, rep)
        shared = self.rundir if self.gather == "shared" else ""
        return ["sh", "-c", SH_ARM, "sh", shared, suffix, self.scratch,
                sname or self.state_name(name, rep), self.stagebench] + base

    def clean_args(self, tests):
        return [self.stagebench, "clean"] + tests + ["--scale", self.args.scale] + \
            self.dir_opts()

    # -- running a round

    def on_signal(self, signum, _frame):
        if self.stop_signal is None:
            self.stop_signal = signum
            L.say("%s: stopping every node's stagebench and collecting what arrived"
                  % signal.Signals(signum).name)
        else:
            L.say("%s again: killing what is left" % signal.Signals(signum).name)
            P.signal_pids(P.descendants(), signal.SIGKILL)

    def forward_stop(self, rnd, nodes, nodes_file, base):
        """Pass the stop signal on to every node process (they write their summaries and
        remove their files); the engine is left to report them. Returns the round that carries
        the signal to remote nodes, if one was needed."""
        sig = self.stop_signal
        if self.engine.exec_mode:
            P.signal_pids(P.descendants(exclude=rnd.pids()), sig)
        elif self.engine.name == "srun":
            rnd.signal(sig)
        else:
            # a second connection to each node signals the stagebench whose pid its
            # wrapper recorded in the node-local scratch directory
            name = "INT" if sig == signal.SIGINT else "TERM"
            return self.engine.start(nodes, ["sh", "-c", SH_STOP, "sh", self.scratch, name], 30,
                                     base + ".stop", nodes_file)
        return None

    def nodes_file(self, nodes, tag):
        path = os.path.join(self.rundir, "logs", "%03d-%s.nodes" % (self.round_no, tag))
        with F.open_new(path) as f:
            f.write("\n".join(nodes) + "\n")
        return path

    def _sweep(self, tag):
        """What the engine left behind (a node process its engine gave up on): let it end on
        its own for a moment (a signalled stagebench is writing its summary), then stop it."""
        if P.descendants():
            t = time.monotonic() + (5.0 if self.stop_signal else 1.0)
            while P.descendants() and time.monotonic() < t:
                P.reap_orphans()
                time.sleep(0.05)
            left = P.stop_descendants(grace=2.0)
            if left:
                self.vprint("killed %d process(es) left behind by the %s round" % (len(left),
                                                                                   tag))

    def round(self, tag, nodes, args, timeout, honour_stop=True, talk=None):
        """Run args on nodes; returns ({node: Outcome}, duration). Never hangs: the engine's
        own timeout first, then the launcher's (kill the whole tree), then a sweep of any
        process left behind."""
        self.round_no += 1
        nf = self.nodes_file(nodes, tag)
        base = os.path.join(self.rundir, "logs", "%03d-%s" % (self.round_no, tag))
        self.vprint("round %s on %s: %s" % (tag, nodeset_fold(nodes), " ".join(
            shlex.quote(c) for c in self.engine.describe(nf, nodes, args, timeout))))
        t0 = time.time()
        killed = False
        rnd = self.engine.start(nodes, args, timeout, base, nf, talk=talk) if talk else \
            self.engine.start(nodes, args, timeout, base, nf)
        deadline = time.monotonic() + timeout + 30.0
        stop_seen = False
        stopper = None
        while not rnd.wait(0.2):
            if honour_stop and self.stop_signal and not stop_seen:
                stop_seen = True
                stopper = self.forward_stop(rnd, nodes, nf, base)
                deadline = min(deadline, time.monotonic() + 30.0)
            if time.monotonic() > deadline:
                killed = True
                L.say("warning: %s round: no end %d s past its timeout: stopping it"
                      % (tag, int(time.monotonic() - deadline + 30)))
                P.stop_descendants(grace=3.0, exclude=rnd.pids())
                rnd.kill()
                break
        if stopper is not None and not stopper.wait(40.0):
            stopper.kill()
        if stopper is not None:
            stopper.results()
        self._sweep(tag)
        dt = time.time() - t0
        res = rnd.results()
        if killed:
            for o in res.values():
                if o.rc is None and not o.timeout:
                    o.timeout = True
        return res, dt

    # -- interpreting a round

    def classify(self, o, limit):
        """(status, error) of one node in a round; status 'ok' when it exited 0."""
        e = err_line(o.err)
        if o.timeout:
            return "timeout", "no end within %s (hung or too slow): stopped" % limit
        if o.rc is None or o.rc == 0:
            return "ok", None
        if o.rc == 255 and self.engine.remote:
            return "unreachable", "cannot reach the node: %s" % (e or "exit 255")
        if o.rc in (130, 143) or (self.stop_signal and o.rc > 128):
            return "interrupted", "interrupted (exit %d)%s" % (o.rc, ": " + e if e else "")
        return "failed", "exit %d: %s" % (o.rc, e or "no message")

    def say_errors(self, res, limit):
        """Why the nodes of a round failed, as they said it: each distinct first error line
        once with the nodes that printed it (ten lines at most, the rest counted)."""
        by = {}
        for node in sorted(res, key=L.natural_key):
            o = res[node]
            status, error = self.classify(o, limit)
            if status == "ok":
                e = err_line(o.err) or ("printed nothing" if not o.out else None)
                if e is None:
                    continue
                error = e
            elif o.err and not o.timeout:
                error = err_line(o.err)
            by.setdefault(L.safe_text(error).replace("\n", " "), []).append(
                self.ident.get(node, node))
        items = sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        for text, nodes in items[:CLOCK_LINES]:
            L.say("  %s: %s" % (nodeset_fold(nodes), text))
        if len(items) > CLOCK_LINES:
            rest = [n for _t, ns in items[CLOCK_LINES:] for n in ns]
            L.say("  and %d more message%s, from %s (see the logs)"
                  % (len(items) - CLOCK_LINES, "" if len(items) == CLOCK_LINES + 1 else "s",
                     nodeset_fold(rest)))

    def record_failures(self, rnd, res, limit, summaries=None):
        """Record in the round every node that did not end well; limit says what its time
        limit was, for the message of a node that hung."""
        failed = {}
        for node, o in res.items():
            status, error = self.classify(o, limit)
            ident = self.ident.get(node, node)
            if status == "ok":
                if summaries is not None and ident not in summaries and not self.stop_signal:
                    failed[ident] = {"status": "failed", "rc": 0,
                                     "error": "exit 0 but no summary arrived"}
                elif summaries is not None and ident not in summaries:
                    failed[ident] = {"status": "interrupted", "rc": o.rc,
                                     "error": "interrupted before it wrote a summary"}
                continue
            failed[ident] = {"status": status, "rc": o.rc, "error": error}
            if status in ("timeout", "unreachable") and node not in self.dead:
                self.dead[node] = "%s in %s" % (status, rnd["what"])
        rnd.setdefault("failed", {}).update(failed)
        return failed

    def skipped(self, nodes, why):
        return {self.ident.get(n, n): {"status": "skipped", "rc": None, "error": why}
                for n in nodes}

    def save_manifest(self):
        if self.manifest is not None:
            # what nodes said (errors, mount sources) is kept escaped, never raw
            F.write_json_atomic(os.path.join(self.rundir, L.MANIFEST),
                                L.safe_json(self.manifest))

    # -- the phases

    def info_phase(self):
        t0 = time.time()
        res, dt = self.round("info", self.nodes, self.info_args(), self.info_timeout)
        self.info_window = (t0, time.time())
        rnd = {"kind": "info", "what": "the info round", "nodes": nodeset_fold(self.nodes),
               "duration_s": round(dt, 3)}
        infos = parse_infos(res)
        self.info_res = res
        for node, info in infos.items():
            name = info.get("node")
            if L.node_name_ok(name) and name != node:
                self.ident[node] = name
        fail = self.record_failures(rnd, res, "the info round's %g s" % self.info_timeout)
        for node in self.nodes:
            ident = self.ident[node]
            if node not in infos and ident not in fail:
                rnd["failed"][ident] = {"status": "failed", "rc": None,
                                        "error": "info printed no stagebench info"}
        self.manifest["rounds"].append(rnd)
        self.manifest["info_s"] = round(dt, 3)
        clash = {}
        for n, i in self.ident.items():
            clash.setdefault(i, []).append(n)
        clash = {i: ns for i, ns in clash.items() if len(ns) > 1}
        if clash:
            i, ns = next(iter(clash.items()))
            raise L.UsageError("nodes %s all call themselves '%s': give each a distinct name "
                               "(STAGEBENCH_NODE in their environment)" % (", ".join(ns), i))
        F.write_json_atomic(os.path.join(self.rundir, L.INFO),
                            {self.ident[n]: i for n, i in infos.items()})
        self.infos = infos
        self.launch_s = dt
        # The lead: twice what a round at this fan-out took for these nodes, plus a second.
        # An arm round costs what the info round did (one short connection a node, in
        # ceil(nodes / fan-out) waves); each arm round's own duration raises it if longer.
        self.lead = max(self.min_lead, 2.0 * dt + 1.0)
        self.manifest["launch"]["info_s"] = round(dt, 3)
        return rnd

    def warn(self, text):
        """A warning of the launcher: said now, and kept in the manifest for the report."""
        L.say("warning: %s" % text)
        self.manifest["warnings"].append(text)

    def core_warnings(self):
        """Nodes that will run fewer threads than they have cores: a cgroup or CPU affinity
        lets their stagebench use fewer CPUs than the machine has (its info round says), or
        the Slurm allocation holds fewer of a node's CPUs than Slurm counts on it (a
        non-exclusive allocation)."""
        few = {}
        for n, info in sorted(self.infos.items(), key=lambda kv: L.natural_key(kv[0])):
            topo = info.get("topology") if isinstance(info.get("topology"), dict) else {}
            allowed, machine = topo.get("allowed_pus"), topo.get("machine_pus")
            if isinstance(allowed, int) and isinstance(machine, int) and allowed < machine:
                few.setdefault("may use %d of its %d CPUs (a cgroup or CPU affinity)"
                               % (allowed, machine), []).append(self.ident[n])
        alloc = getattr(self.engine, "alloc", None) or {}
        total = slurm_node_cpus([n for n in self.nodes if n in alloc]) if alloc else {}
        for n in self.nodes:
            if n in alloc and n in total and alloc[n] < total[n]:
                few.setdefault("the Slurm allocation holds %d of its %d CPUs (not exclusive: "
                               "sbatch/salloc --exclusive)" % (alloc[n], total[n]),
                               []).append(self.ident[n])
        for why, nodes in sorted(few.items()):
            self.warn("%s: %s: it runs fewer threads than it has cores"
                      % (nodeset_fold(nodes), why))

    def clock_phase(self, which):
        """Measure the clock offset of every node still in the run ("start": before the first
        part, "end": after the last) into the manifest's clock.<which>; returns ({node: entry},
        {node: why not measured})."""
        nodes = [n for n in self.nodes if n not in self.dead and n in self.infos]
        cost = clocksync.read_cost_s()
        if not nodes:
            return {}, {}
        if self.engine.can_talk:
            talk = clocksync.Exchange(clocksync.SAMPLES)
            res, _dt = self.round("clock-" + which, nodes, self.named(["clock"]),
                                  self.info_timeout, talk=talk)
            got, why = talk.results(nodes, cost, time.time())
            for n in why:
                o = res.get(n)
                if o is not None and o.rc not in (None, 0):
                    why[n] = "exit %d: %s" % (o.rc, err_line(o.err) or why[n])
                elif o is not None and o.timeout:
                    why[n] = "no answer within --info-timeout %g s" % self.info_timeout
        else:
            if which == "start":
                infos, (t0, t1) = self.infos, self.info_window
            else:
                t0 = time.time()
                res, _dt = self.round("info-end", nodes, self.info_args(), self.info_timeout)
                t1 = time.time()
                infos = parse_infos(res)
            got = clocksync.from_round({n: infos[n] for n in nodes if n in infos}, t0, t1, cost)
            why = {n: "no clock reading in its info output" for n in nodes if n not in got}
        clock = self.manifest["clock"]
        clock["read_cost_s"] = round(cost, 9)
        clock[which] = {self.ident[n]: e for n, e in got.items()}
        clock["unmeasured" if which == "start" else "unmeasured_end"] = sorted(
            (self.ident[n] for n in why), key=L.natural_key)
        clock.setdefault("why_unmeasured", {})[which] = {self.ident[n]: w for n, w in
                                                         why.items()}
        self.save_manifest()
        return got, why

    def clock_check(self, got, why, which):
        """Say what the measurement found: one line, then one per node out of --max-offset or
        not measured. With --require-sync (at the start), False when any is."""
        c = self.manifest["clock"]
        if got:
            worst = max(got, key=lambda n: abs(got[n]["offset_s"]))
            L.say("clock offsets %s (%s, %d sample%s a node): %d node%s measured, largest %s: "
                  "%s" % ("before the first part" if which == "start" else "after the last part",
                          c["method"], c["samples"], "" if c["samples"] == 1 else "s",
                          len(got), "" if len(got) == 1 else "s", self.ident[worst],
                          clocksync.describe(got[worst])))
        out = clocksync.out_of_tolerance(got, self.max_offset)
        for n in out[:CLOCK_LINES]:  # the farthest first; every one is in the manifest
            L.say("warning: %s: clock %s: beyond --max-offset %g s"
                  % (self.ident[n], clocksync.describe(got[n]), self.max_offset))
        if len(out) > CLOCK_LINES:
            L.say("warning: %d more node%s beyond --max-offset %g s: %s (see manifest.json)"
                  % (len(out) - CLOCK_LINES, "" if len(out) == CLOCK_LINES + 1 else "s",
                     self.max_offset, nodeset_fold([self.ident[n] for n in out[CLOCK_LINES:]])))
        lost = sorted(why, key=L.natural_key)
        for n in lost[:CLOCK_LINES]:
            L.say("warning: %s: clock offset not measured: %s" % (self.ident[n], why[n]))
        if len(lost) > CLOCK_LINES:
            L.say("warning: %d more node%s whose clock offset was not measured: %s"
                  % (len(lost) - CLOCK_LINES, "" if len(lost) == CLOCK_LINES + 1 else "s",
                     nodeset_fold([self.ident[n] for n in lost[CLOCK_LINES:]])))
        if which == "end":
            start = c.get("start") or {}
            drift = [(abs(got[n]["offset_s"] - start[self.ident[n]]["offset_s"]), n)
                     for n in got if self.ident[n] in start]
            if drift:
                d, n = max(drift)
                L.say("clock drift over the run: largest %s (%s)" % (clocksync.seconds(d),
                                                                     self.ident[n]))
        if which == "start" and self.args.require_sync and (out or why):
            named = ["%s %s" % (self.ident[n], clocksync.describe(got[n])) for n in out] + \
                ["%s not measured" % self.ident[n] for n in lost]
            bad = [self.ident[n] for n in out + lost]
            if len(named) > CLOCK_LINES:
                named = named[:CLOCK_LINES] + ["and %d more: %s" % (
                    len(bad) - CLOCK_LINES, nodeset_fold(bad[CLOCK_LINES:]))]
            L.say("error: --require-sync: not starting: %s" % "; ".join(named))
            return False
        return True

    def group_servers(self):
        servers = {}
        for n in self.nodes:
            if self.servers is not None:
                servers[n] = self.servers[n]
            elif n in self.infos:
                servers[n] = L.server_of(self.ident[n], self.infos[n].get("fs"))
            else:
                servers[n] = "unknown"
        self.server_of = servers
        by = {}
        for n in self.nodes:
            by.setdefault(servers[n], []).append(n)
        self.server_nodes = by
        self.manifest["servers"] = {self.ident[n]: s for n, s in servers.items()}

    def candidates(self, server):
        info_failed = self.manifest["rounds"][0].get("failed", {})
        return [n for n in self.server_nodes[server]
                if n not in self.dead and self.ident[n] not in info_failed]

    def prepare_phase(self, test, rep, preparers):
        """Prepare test's replica on one node per server, trying the next node of a server
        whose preparer failed. Returns {server: error} of the servers left unprepared."""
        todo = {s: self.candidates(s) for s in self.server_nodes if s != "unknown"}
        if "unknown" in self.server_nodes:
            todo["unknown"] = []
        for s, cands in todo.items():
            p = preparers.get(s)
            if p in cands:
                cands.remove(p)
                cands.insert(0, p)
        errors = {s: "no node of this server answered the info round"
                  for s, c in todo.items() if not c}
        attempt = 0
        while not self.stop_signal and attempt < 3:
            wave = {s: c.pop(0) for s, c in todo.items() if c and s not in self._prepared}
            if not wave:
                break
            attempt += 1
            nodes = sorted(wave.values(), key=L.natural_key)
            res, dt = self.round("prepare-%s-rep%d" % (test, rep), nodes,
                                 self.prepare_args(test), self.prepare_timeout)
            rnd = {"kind": "prepare", "what": "preparing %s rep %d" % (test, rep),
                   "test": test, "rep": rep, "attempt": attempt,
                   "nodes": nodeset_fold(nodes), "duration_s": round(dt, 3),
                   "preparers": {s: self.ident[n] for s, n in wave.items()}}
            fail = self.record_failures(rnd, res, "--prepare-timeout %g s"
                                        % self.prepare_timeout)
            for s, n in wave.items():
                if self.ident[n] in fail:
                    errors[s] = "preparer %s: %s" % (self.ident[n], fail[self.ident[n]]["error"])
                else:
                    self._prepared.add(s)
                    errors.pop(s, None)
                    preparers[s] = n
            self.manifest["rounds"].append(rnd)
            self.save_manifest()
        for s in todo:
            if s not in self._prepared and s not in errors:
                errors[s] = "not prepared (interrupted)" if self.stop_signal else \
                    "no preparer succeeded"
        return errors

    def part_groups(self, test, parts):
        """The parts of test armed together: all of them on the --interval grid, else one by
        one (also test 3's with --server-drop, which runs before each part)."""
        if self.interval and len(parts) > 1 and not (self.server_drop is not None and
                                                      test == "3"):
            return [list(parts)]
        return [[p] for p in parts]

    def run_phase(self, test, parts, rep, unprepared):
        """Run parts (of test) on every usable node: one round a part, or armed (clush and
        pdsh over ssh) one arm round for them all, part k starting at T + k x --interval.
        Returns the run records, one a part."""
        nodes, skip = [], {}
        for n in self.nodes:
            if n in self.dead:
                skip.update(self.skipped([n], "not run: %s earlier" % self.dead[n]))
            elif self.server_of[n] == "unknown" and unprepared:
                skip.update(self.skipped([n], "not run: its /stage server is unknown (the info "
                                              "round failed on it), so is its replica"))
            elif self.server_of[n] in unprepared:
                skip.update(self.skipped([n], "not run: the replica of server %s is not ready "
                                              "(%s)" % (self.server_of[n],
                                                        unprepared[self.server_of[n]])))
            else:
                nodes.append(n)
        # the summaries' file name: the part's, or the test's when one arm round runs several
        name = parts[0] if len(parts) == 1 else test
        interval = self.interval if len(parts) > 1 else 0.0
        start_at = time.time() + self.lead
        rnds = []
        for k, part in enumerate(parts):
            rnd = {"kind": "run", "what": "%s rep %d" % (part, rep), "test": test, "part": part,
                   "rep": rep, "start_at": round(start_at + k * interval, 6),
                   "lead_s": round(self.lead, 3), "nodes": nodeset_fold(nodes),
                   "count": len(nodes), "failed": dict(skip)}
            if len(parts) > 1:
                rnd["armed_with"] = parts
                rnd["interval_s"] = interval
            self.manifest["rounds"].append(rnd)
            rnds.append(rnd)
        self.save_manifest()
        if not nodes:
            return rnds
        if self.armed:
            res, dt = self.armed_run(rnds, name, parts, rep, nodes, start_at, interval)
        else:
            timeout = self.lead + self.timeout
            res, dt = self.round("run-%s-rep%d" % (name, rep), nodes,
                                 self.run_args(name, rep, start_at), timeout)
        if self.gather == "rcopy":
            self.rcopy(nodes, name, rep)
        suffix = ".%s.rep%d.json" % (name, rep)
        arrived = {f[:-len(suffix)] for f in os.listdir(self.rundir) if f.endswith(suffix)}
        missed = set()
        for rnd in rnds:
            rnd["duration_s"] = round(dt, 3)
            fail = self.record_failures(rnd, res, "--timeout %g s after the start"
                                        % self.timeout, summaries=arrived)
            lost = [n for n, f in fail.items() if "start time missed" in (f.get("error") or "")]
            ahead = self.clock_ahead(lost, fail)
            missed.update(n for n in lost if n not in ahead)
        if missed and self.lead < 600:
            self.lead = min(600.0, self.lead * 2)
            L.say("warning: %d node(s) missed the start of %s: lead raised to %.1f s"
                  % (len(missed), parts[0], self.lead))
        self.save_manifest()
        return rnds

    # -- armed parts: arm, wait, collect the status, stop on a signal

    def armed_run(self, rnds, part, parts, rep, nodes, start_at, interval):
        """Arm part on nodes for start_at (one short connection a node, at the fan-out), then
        collect each node's status until it is final, stopping the nodes on a signal or past
        --timeout. An arm round that ended after the start (the nodes' set-up took longer than
        the lead: it is not in the info round) is done once more, every node, for a start a
        new lead ahead, the nodes it did arm stopped first. Returns ({node: Outcome},
        duration) as a run round would."""
        t0 = time.time()
        tag = "%s-rep%d" % (part, rep)
        attempt = 1
        while True:
            sname = self.state_name(part, rep) + ("" if attempt == 1 else "-%d" % attempt)
            sdir = self.scratch + "/" + sname
            res, arm_dt = self.round("arm-" + tag, nodes,
                                     self.arm_args(part, parts, rep, start_at, interval, sname,
                                                   force=attempt > 1),
                                     max(self.lead, 10.0), honour_stop=False)
            for r in rnds:
                r["arm_s"] = round(arm_dt, 3)
            self.manifest["launch"]["arm_s"].append(round(arm_dt, 3))
            late = time.time() > start_at
            if late or 2.0 * arm_dt + 1.0 > self.lead:
                self.lead = min(600.0, max(self.lead, 2.0 * arm_dt + 1.0))
                L.say("%sarm round of %s took %.2f s: lead now %.1f s" % (
                    "warning: " if late else "", tag, arm_dt, self.lead))
            missed = [n for n in nodes if "start time missed" in err_line(res[n].err)]
            if attempt > 1 or not late or not missed or self.stop_signal:
                break
            armed = [n for n in nodes if res[n].rc in (0, None) and not res[n].timeout]
            L.say("warning: %s: the arm round ended after the start (%d node%s missed it): "
                  "arming every node again, %.1f s ahead" % (
                      tag, len(missed), "" if len(missed) == 1 else "s", self.lead))
            if armed:
                self.round("stop-" + tag, armed,
                           ["sh", "-c", SH_ATSTATE, "sh", sdir, self.stagebench, "stop",
                            "--signal", "TERM", "--wait", "30"], 60, honour_stop=False)
            start_at = time.time() + self.lead
            for k, r in enumerate(rnds):
                r["start_at"] = round(start_at + k * interval, 6)
                r["lead_s"] = round(self.lead, 3)
                r["armed_again"] = True
            self.save_manifest()
            attempt += 1
        out = {}
        pending = []
        for n in nodes:
            o = res[n]
            if o.rc in (0, None) and not o.timeout:  # pdsh says nothing of an exit 0
                pending.append(n)
            else:
                out[n] = o
        if not pending:
            L.say("error: %s: no node could be armed:" % tag)
            self.say_errors(res, "the arm round's %g s" % max(self.lead, 10.0))
        status_of = self.collect_status(tag, pending, sdir, start_at,
                                        start_at + (len(parts) - 1) * interval)
        for n in pending:
            out[n] = self.outcome_of(status_of.get(n))
        bad = [n for n in pending if out[n].rc not in (0, None) and not out[n].timeout]
        if bad:  # their error lines, from the armed process's log
            tails, _dt = self.round("log-" + tag, bad, ["sh", "-c", SH_ATSTATE, "sh", sdir],
                                    60, honour_stop=False)
            for n in bad:
                lines = [ln for ln in tails[n].out if ln.strip()]
                if lines:
                    out[n].err = lines
        return out, time.time() - t0

    def collect_status(self, tag, pending, sdir, start_at, last_start):
        """Poll `stagebench status` on the armed nodes until each is final: from the start,
        then at a pace the status round's own duration sets (at least 1 s, at most 30 s apart
        late in a long part). A signal stops them (`stagebench stop`, the same signal); past
        --timeout after the start, SIGTERM. Returns {node: status object, or None}."""
        got = {}
        pending = list(pending)
        stop_sent = None
        unanswered = {}
        next_poll = start_at + 0.5
        deadline = last_start + self.timeout
        polls = 0
        while pending:
            now = time.time()
            sig = None
            if self.stop_signal and stop_sent is None:
                sig = "INT" if self.stop_signal == signal.SIGINT else "TERM"
            elif now > deadline and stop_sent is None:
                sig = "TERM"
                L.say("warning: %s: %d node%s not done %g s after the start: stopping them"
                      % (tag, len(pending), "" if len(pending) == 1 else "s", self.timeout))
            if sig is not None:
                stop_sent = sig
                stop_at = time.time()
                self.round("stop-" + tag, pending,
                           ["sh", "-c", SH_ATSTATE, "sh", sdir, self.stagebench, "stop",
                            "--signal", sig, "--wait", "30"], 60, honour_stop=False)
                next_poll = 0.0
            if time.time() < next_poll:
                time.sleep(min(0.2, max(0.0, next_poll - time.time())))
                continue
            polls += 1
            polled = list(pending)
            res, pdt = self.round("status-%s-%d" % (tag, polls), pending,
                                  ["sh", "-c", SH_ATSTATE, "sh", sdir, self.stagebench, "status",
                                   "--format", "json"], 60,
                                  honour_stop=False)
            for n in list(pending):
                st = parse_state(res[n])
                if st is not None and st.get("status") in FINAL:
                    got[n] = st
                    pending.remove(n)
                elif st is None:
                    unanswered[n] = unanswered.get(n, 0) + 1
                    if unanswered[n] >= 3 or stop_sent is not None and unanswered[n] >= 2:
                        got[n] = {"status": "unanswered", "why": err_line(res[n].err),
                                  "rc": res[n].rc}
                        pending.remove(n)
            if stop_sent is not None and pending and time.time() > stop_at + 90:
                for n in pending:
                    got[n] = None
                break
            # the next poll after twice what it should cost (the waves of the nodes still
            # pending, at the fan-out), at least 1 s and at most 30 s apart
            fan = int(self.engine.fan(polled))
            est = pdt * math.ceil(len(pending) / float(fan)) / math.ceil(len(polled) /
                                                                           float(fan))
            next_poll = time.time() + max(1.0, min(30.0, 2.0 * est))
        return got

    def outcome_of(self, st):
        """An Outcome from a node's final status (None: no final status in time)."""
        o = Outcome()
        if st is None:
            o.timeout = True
        elif st.get("status") == "unanswered":
            o.rc = st.get("rc") if st.get("rc") not in (None, 0) else 255
            o.err = [st.get("why") or "its status could not be read"]
        elif st.get("status") == "lost":
            o.rc = 1
            o.err = ["stagebench: error: its stagebench ended without a final state (killed "
                     "with SIGKILL, or the node rebooted)"]
        else:
            code = st.get("exit_code")
            o.rc = code if isinstance(code, int) else 1
        return o

    def clock_ahead(self, missed, fail):
        """Of the nodes that missed a start, those whose clock, measured ahead of this host by
        more than --max-offset, explains it: a clock problem, said so, which a longer lead
        would not cure. Their failure records get cause "clock ahead" and the offset."""
        start = self.manifest["clock"].get("start") or {}
        ahead = []
        for n in missed:
            e = start.get(n)
            if e is None or e["offset_s"] - e["uncertainty_s"] <= self.max_offset:
                continue
            ahead.append(n)
            fail[n]["cause"] = "clock ahead"
            fail[n]["offset_s"] = e["offset_s"]
            fail[n]["uncertainty_s"] = e["uncertainty_s"]
            L.say("warning: %s missed the start: a clock problem, not a short lead: its clock is "
                  "%s" % (n, clocksync.describe(e)))
        return ahead

    def server_drop_run(self, part, rep):
        """--server-drop's command on this host before a part of test 3, untimed; its outcome
        into the manifest and one line of output."""
        q = " ".join(shlex.quote(w) for w in self.server_drop)
        at = time.time()
        try:
            rc, out, err = P.run_capture(self.server_drop, SERVER_DROP_TIMEOUT)
            text = (out + err).strip()
        except OSError as e:
            rc, text = None, "cannot run it: %s" % L.errno_text(e)
        except subprocess.TimeoutExpired:
            rc, text = None, "no end within %d s: killed" % SERVER_DROP_TIMEOUT
        tail = L.safe_text("\n".join(text.splitlines()[-5:]))
        run = {"before": part, "repetition": rep, "status": "ok" if rc == 0 else "failed",
               "exit_code": rc, "at": round(at, 6), "duration_s": round(time.time() - at, 3),
               "output": tail}
        self.manifest["server_drop"]["runs"].append(run)
        self.save_manifest()
        if rc == 0:
            L.say("server drop before %s rep %d: ran (%s), exit 0 in %.1f s"
                  % (part, rep, q, run["duration_s"]))
        else:
            L.say("warning: server drop before %s rep %d: failed (%s): %s: %s; %s runs on a "
                  "server cache that may be warm" % (part, rep, q, "exit %d" % rc
                                                     if rc is not None else "not run",
                                                     tail.replace("\n", " | ") or "no output",
                                                     part))

    def rcopy(self, nodes, part, rep):
        src = os.path.join(self.scratch, "%s.rep%d.json" % (part, rep))
        incoming = os.path.join(self.rundir, "incoming")
        if not getattr(self, "_incoming_made", False):
            F.make_dir(incoming)  # fresh: fails if anything is at its name
            self._incoming_made = True
        F.check_dir(incoming, private=True)
        self.round_no += 1
        nf = self.nodes_file(nodes, "rcopy")
        base = os.path.join(self.rundir, "logs", "%03d-rcopy-%s-rep%d" % (self.round_no, part,
                                                                          rep))
        rnd = self.engine.rcopy(nodes, src, incoming, base, nf, 600)
        if not rnd.wait(630):
            P.stop_descendants(grace=3.0, exclude=rnd.pids())
            rnd.kill()
        rnd.results()
        prefix = os.path.basename(src) + "."
        for f in os.listdir(incoming):
            if not f.startswith(prefix):
                continue
            node = f[len(prefix):]
            ident = self.ident.get(node, node)
            if L.node_name_ok(ident):
                dst = os.path.join(self.rundir, L.summary_name(ident, part, rep))
                if not os.path.lexists(dst):
                    os.rename(os.path.join(incoming, f), dst)

    def clean_phase(self, preparers):
        tests = [t for t, _p in self.plan if self.catalogue.tests[t]["replica"]]
        nodes = sorted(set(preparers.values()), key=L.natural_key)
        if not tests or not nodes:
            return
        res, dt = self.round("clean", nodes, self.clean_args(tests), 600)
        rnd = {"kind": "clean", "what": "cleaning", "nodes": nodeset_fold(nodes),
               "duration_s": round(dt, 3)}
        self.record_failures(rnd, res, "600 s")
        self.manifest["rounds"].append(rnd)

    def scratch_cleanup(self):
        """Remove the node-local scratch directory (pid files, rcopy sources) of the run."""
        if self.engine.remote:
            live = [n for n in self.nodes if n not in self.dead]
            if live:
                self.round("scratch-rm", live, ["sh", "-c", SH_SCRATCH_RM, "sh", self.scratch],
                           timeout=60, honour_stop=False)

    # -- everything

    def dry_run(self):
        e = self.engine
        fold = nodeset_fold(self.nodes)
        q = " ".join
        print("dry run: %d node%s %s via %s%s; run id %s; results %s; nothing is run" % (
            len(self.nodes), "" if len(self.nodes) == 1 else "s", fold, e.name,
            " -R exec" if e.exec_mode else "", self.run_id, self.rundir))
        nf = os.path.join(self.rundir, "logs", "NNN-ROUND.nodes")

        def show(what, nodes, args, timeout):
            cmd = e.describe(nf, nodes, args, timeout)
            print("%s on %s:\n    %s" % (what, nodeset_fold(nodes), q(shlex.quote(c)
                                                                            for c in cmd)))

        show("info round (measures the launch time)", self.nodes, self.info_args(),
             self.info_timeout)
        if e.can_talk:
            show("clock offsets (%d timestamp exchanges a node on its stdin; again after the "
                 "last part)" % clocksync.SAMPLES, self.nodes, self.named(["clock"]),
                 self.info_timeout)
        else:
            print("clock offsets: from the info round (one-shot: bounded by its duration); "
                  "again with an info round after the last part")
        print("clock tolerance: --max-offset %g s%s" % (
            self.max_offset, "; --require-sync refuses to start beyond it"
            if self.args.require_sync else ""))
        if self.servers is not None:
            by = {}
            for n in self.nodes:
                by.setdefault(self.servers[n], []).append(n)
            pre = {s: ns[0] for s, ns in by.items()}
            for s in sorted(by, key=L.natural_key):
                print("server %s: %s (preparer %s)" % (s, nodeset_fold(by[s]), pre[s]))
            prep_nodes = sorted(pre.values(), key=L.natural_key)
        else:
            print("servers: from the mount source of each node's --dir in the info round; "
                  "one preparer per server")
            prep_nodes = ["PREPARERS"]
        t = time.time() + self.lead
        for rep in range(1, self.args.repeat + 1):
            for test, parts in self.plan:
                d = self.catalogue.tests[test]
                if d["replica"] and (rep == 1 or d["recreate"]):
                    show("rep %d: prepare %s (one node per server; %s)" % (
                        rep, test, "recreated" if d["recreate"] else "kept once made"),
                        prep_nodes, self.prepare_args(test), self.prepare_timeout)
                for group in self.part_groups(test, parts):
                    part = group[0] if len(group) == 1 else test
                    if self.server_drop is not None and test == "3":
                        print("rep %d: before %s, on this host: %s" % (
                            rep, part, q(shlex.quote(w) for w in self.server_drop)))
                    print("rep %d: part %s starts at %.3f (%s; the lead, at least %.0f s, is "
                          "added to the time the round is launched)%s" % (
                              rep, group[0], t, L.utc(t), self.lead,
                              "; then every %g s: %s" % (self.interval, " ".join(group[1:]))
                              if len(group) > 1 else ""))
                    if self.armed:
                        sdir = self.scratch + "/" + self.state_name(part, rep)
                        show("    arm %s (returns once the node waits for the start)" % part,
                             self.nodes, self.arm_args(part, group, rep, t, self.interval),
                             max(self.lead, 10.0))
                        show("    then, from the start until every node is done: status",
                             self.nodes, ["sh", "-c", SH_ATSTATE, "sh", sdir, self.stagebench,
                                          "status", "--format", "json"], 60)
                    else:
                        show("    run %s" % part, self.nodes, self.run_args(part, rep, t),
                             self.lead + self.timeout)
                    if self.gather == "rcopy":
                        src = os.path.join(self.scratch, "%s.rep%d.json" % (part, rep))
                        print("    copy back: %s" % q(shlex.quote(c) for c in e.describe_rcopy(
                            nf, src, os.path.join(self.rundir, "incoming"))))
                    t += self.lead + 1 + (len(group) - 1) * self.interval
        if self.args.clean:
            tests = [t for t, _p in self.plan if self.catalogue.tests[t]["replica"]]
            if tests:
                show("clean", prep_nodes, self.clean_args(tests), 600)
        print("then: stagebench-collect %s" % shlex.quote(self.rundir))
        return L.EXIT_OK

    def main(self):
        """The whole run: set-up (or the dry run), the run directory and manifest, the info
        round and the clocks, every repetition's rounds, the end; the report."""
        a = self.args
        self.setup()
        if a.dry_run:
            return self.dry_run()
        self.make_rundir()
        P.set_subreaper()
        signal.signal(signal.SIGINT, self.on_signal)
        signal.signal(signal.SIGTERM, self.on_signal)
        self._prepared = set()
        self.manifest = self.new_manifest()
        self.save_manifest()
        L.say("run %s: %d node%s, results in %s" % (self.run_id, len(self.nodes),
                                                   "" if len(self.nodes) == 1 else "s",
                                                   self.rundir))
        if self.engine.name == "srun" and not os.environ.get("SLURM_JOB_ID"):
            self.warn("srun outside a Slurm allocation: every round is a job of its own, "
                      "queued and allocated anew (run the launcher within salloc or sbatch)")
        if not self.start_phase():
            return self.finish(L.EXIT_PRECONDITION)
        preparers = {}
        self.repetitions(preparers)
        self.end_phase(preparers)
        return self.finish(None)

    def make_rundir(self):
        """RESULTS/<run-id>/ and its logs/, fresh: a run directory that holds a run is
        refused."""
        if os.path.exists(os.path.join(self.rundir, L.MANIFEST)):
            raise L.UsageError("results directory %s already holds a run: choose another "
                               "--run-id" % self.rundir)
        try:
            F.ensure_dir(self.results)
            F.make_run_dir(self.rundir)
            F.make_dir(os.path.join(self.rundir, "logs"), 0o755)
        except OSError as e:
            L.fail("cannot create %s: %s" % (self.rundir, L.errno_text(e)), L.EXIT_PRECONDITION)

    def new_manifest(self):
        """The manifest as the run starts: what was asked and how it is launched; the rounds,
        clocks, servers and preparers are filled in as the run goes."""
        a = self.args
        return {
            "schema": L.MANIFEST_SCHEMA, "version": self.catalogue.version, "run_id": self.run_id,
            "created_at": time.time(), "argv": sys.argv,
            "launcher": {"engine": self.engine.name, "exec": self.engine.exec_mode,
                         "gather": self.gather, "fanout": int(self.engine.fan(self.nodes)),
                         "armed": self.armed},
            "launch": {"fanout": int(self.engine.fan(self.nodes)),
                       "waves": int(math.ceil(len(self.nodes) / float(self.engine.fan(
                           self.nodes)))), "info_s": None, "arm_s": []},
            "run": {"tests": [t for t, _p in self.plan], "parts": [p for _t, ps in self.plan
                                                                   for p in ps],
                    "scale": a.scale, "repeat": a.repeat, "options": self.run_options()},
            "nodes": list(self.nodes), "servers": {}, "preparers": {}, "notes": list(a.note),
            "rounds": [], "interrupted": None, "finished_at": None,
            "clock": {"method": "exchange" if self.engine.can_talk else "round",
                      "samples": clocksync.SAMPLES if self.engine.can_talk else 1,
                      "start": {}, "end": {}, "unmeasured": []},
            "max_offset_s": self.max_offset, "require_sync": bool(a.require_sync),
            "server_drop": None if self.server_drop is None else {
                "command": list(self.server_drop), "where": "launcher", "runs": []},
            "warnings": [],
            "launcher_version": self.catalogue.version,
            "launcher_build": local_build(a.local_stagebench or F.find_sibling("stagebench")),
        }

    def start_phase(self):
        """The info round (the nodes' names, cores and servers, the lead), then the clocks
        against --max-offset. False, with the manifest finished, when the run cannot go on: no
        node answered, or --require-sync found a clock out of tolerance."""
        self.info_phase()
        self.manifest["nodes"] = [self.ident[n] for n in self.nodes]
        self.core_warnings()
        self.group_servers()
        usable = [n for n in self.nodes if n not in self.dead]
        L.say("info round: %d of %d node%s answered in %.2f s; %d server%s; lead %.1f s" % (
            len(self.infos), len(self.nodes), "" if len(self.nodes) == 1 else "s",
            self.launch_s, len(self.server_nodes), "" if len(self.server_nodes) == 1 else "s",
            self.lead))
        self.save_manifest()
        if usable and self.infos and not self.clock_check(*self.clock_phase("start"),
                                                           which="start"):
            self.manifest["finished_at"] = time.time()
            self.save_manifest()
            return False
        if not usable or not self.infos:
            self.manifest["finished_at"] = time.time()
            self.save_manifest()
            L.say("error: no node answered the info round (see %s)"
                  % os.path.join(self.rundir, "logs"))
            self.say_errors(self.info_res, "the info round's %g s" % self.info_timeout)
            return False
        return True

    def repetitions(self, preparers):
        """Every repetition of every test: its prepare round where the replica is (re)made,
        then its parts' rounds (test 3's after --server-drop), until a stop signal. preparers
        ({server: node}) is kept across repetitions."""
        a = self.args
        unprepared_of = {}  # test -> {server: why}, for the repetitions that keep a replica
        for rep in range(1, a.repeat + 1):
            for test, parts in self.plan:
                if self.stop_signal:
                    break
                d = self.catalogue.tests[test]
                if d["replica"] and (rep == 1 or d["recreate"]):
                    self._prepared = set()
                    unprepared_of[test] = self.prepare_phase(test, rep, preparers)
                    self.manifest["preparers"] = {s: self.ident[n]
                                                  for s, n in preparers.items()}
                    for s, why in unprepared_of[test].items():
                        L.say("warning: %s rep %d: server %s: %s" % (test, rep, s, why))
                unprepared = unprepared_of.get(test, {})
                for group in self.part_groups(test, parts):
                    if self.stop_signal:
                        break
                    if self.server_drop is not None and test == "3":
                        self.server_drop_run(group[0], rep)
                    for rnd in self.run_phase(test, group, rep, unprepared):
                        bad = len(rnd.get("failed") or {})
                        L.say("%s rep %d: %d node%s ran, %d failed or skipped" % (
                            rnd["part"], rep, rnd["count"], "" if rnd["count"] == 1 else "s",
                            bad))

    def end_phase(self, preparers):
        """After the last part: the clocks again, --clean, the scratch directories, and the
        manifest finished (interrupted by which signal, if one came)."""
        if not self.stop_signal:
            self.clock_check(*self.clock_phase("end"), which="end")
        if self.args.clean and not self.stop_signal:
            self.clean_phase(preparers)
        self.scratch_cleanup()
        if self.stop_signal:
            self.manifest["interrupted"] = signal.Signals(self.stop_signal).name
        self.manifest["finished_at"] = time.time()
        self.save_manifest()

    def finish(self, code):
        rc = code
        if not self.args.no_report:
            c = R.collect([self.rundir])
            report = R.build_report(c, source=self.rundir)
            text = R.to_text(report)
            F.write_atomic(os.path.join(self.rundir, L.REPORT_TXT), text)
            F.write_atomic(os.path.join(self.rundir, L.REPORT_JSON), R.to_json(report))
            histhook.after_launch(self.rundir, R.to_json(report), c)  # into the history
            sys.stdout.write(text)
            sys.stdout.flush()
            if rc is None:
                rc = report["exit_code"]
        elif rc is None:
            bad = any(r.get("failed") for r in self.manifest["rounds"] if r["kind"] == "run")
            rc = L.EXIT_FAILED if bad else L.EXIT_OK
        if self.stop_signal:
            rc = L.EXIT_SIGINT if self.stop_signal == signal.SIGINT else L.EXIT_SIGTERM
        return rc
