# SPDX-License-Identifier: MIT
"""The launcher's plan: every option of stagebench-cluster checked and resolved before anything
is launched (the tests, the time limits, the commands, the nodes, where the results go, the
engine, the run options against the catalogue's ranges and scopes), then the command of each
kind of round, the lead of each start, and the dry run's schedule."""
import binascii
import os
import re
import secrets
import shlex
import subprocess
import time

from . import catalogue
from . import clocksync
from . import common
from . import files
from . import procs
from . import relay
from . import remote
from .engines import NODE, make as make_engine
from .nodes import nodeset_expand, nodeset_fold, read_hostfile, read_servers_file
from .rounds import err_line

MIN_LEAD_S = 3.0
MAX_LEAD_S = 600.0
DEFAULT_FANOUT = 64  # ClusterShell's: connections at once in an armed run
FD_RESERVE = 64  # descriptors for the launcher's own files, logs and pipes beside the rounds

RUN_FLAGS = ("verify", "fsync", "keep", "require_ntp", "late_ok")
RUN_VALUES = ("threads", "cpus", "xfer", "seed", "count", "chunk", "passes")


class Lead:
    """The time from the launch of a round to its start: at least --lead, raised to twice what
    a launch round took plus a second (the info round, then each arm round that took longer),
    doubled after nodes missed a start; MAX_LEAD_S at most."""

    def __init__(self, least):
        self.least = least
        self.s = least

    def from_info(self, info_s):
        """Twice what the info round took for these nodes, plus a second: an arm round costs
        what the info round did (one short connection a node, in ceil(nodes / fan-out)
        waves)."""
        self.s = max(self.least, 2.0 * info_s + 1.0)

    def cover(self, arm_s, late):
        """Raised to cover an arm round that took arm_s; True when it was (or the round ended
        after its start: late), to be said."""
        if late or 2.0 * arm_s + 1.0 > self.s:
            self.s = min(MAX_LEAD_S, max(self.s, 2.0 * arm_s + 1.0))
            return True
        return False

    def double(self):
        """Doubled after nodes missed a start; False when it is at its most already."""
        if self.s >= MAX_LEAD_S:
            return False
        self.s = min(MAX_LEAD_S, self.s * 2)
        return True


def template(text):
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


class Plan:
    """What a run is, from the command line: set up by setup(), then read by the rounds."""

    def __init__(self, args):
        self.args = args

    # -- set-up

    def setup(self):
        """Every option checked and resolved before anything is launched, in steps: the tests,
        the time limits, the commands, the nodes, where the results go, the engine; then the
        run options, by the catalogue and the stagebench on this machine."""
        a = self.args
        if a.exec_mode and a.launcher == "srun":
            raise common.UsageError("--exec works with clush and pdsh, not srun")
        self.check_binary = self.find_check_binary()
        self.catalogue = catalogue.load(self.check_binary)
        self.tests = self.catalogue.parse_tests(a.tests)
        self.check_option_ranges()
        self.setup_times()
        self.setup_commands()
        self.setup_nodes()
        self.setup_results()
        self.setup_engine()
        self.check_run_options()

    def check_option_ranges(self):
        """The run options the catalogue lists, against its ranges and scopes: a part's
        override needs a single part, a test's a single test. A size is left to the
        stagebench that checks the run options (check_run_options), or to the nodes."""
        a = self.args
        nparts = sum(len(p) for _t, p in self.tests)
        for opt in self.catalogue.options:
            value = getattr(a, opt.dest, None)
            if value is None:
                continue
            if opt.scope == "part" and nparts != 1:
                raise common.UsageError("%s overrides one part: name a single part"
                                        % opt.option)
            if opt.scope == "test" and len(self.tests) != 1:
                raise common.UsageError("%s overrides one test's replica: name a single test"
                                        % opt.option)
            opt.check(value)

    def setup_times(self):
        """--timeout, --prepare-timeout, --info-timeout, --lead, --max-offset, --interval."""
        a = self.args
        self.timeout = common.parse_seconds(a.timeout, "--timeout", 1, 7 * 86400)
        self.prepare_timeout = common.parse_seconds(a.prepare_timeout, "--prepare-timeout", 1,
                                                    7 * 86400)
        self.info_timeout = common.parse_seconds(a.info_timeout, "--info-timeout", 1, 86400)
        self.poll_timeout = common.parse_seconds(a.poll_timeout, "--poll-timeout", 1, 86400)
        self.lease = common.parse_seconds(a.lease, "--lease", 5, 86400)
        self.round_s = 0.0  # a short round's time for the living nodes, once the info round ran
        self.lead = Lead(common.parse_seconds(a.lead, "--lead", MIN_LEAD_S, 3600))
        self.max_offset = common.parse_seconds(a.max_offset, "--max-offset", 0, 3600)
        self.connect_timeout = None
        if a.connect_timeout is not None:
            self.connect_timeout = common.parse_seconds(a.connect_timeout, "--connect-timeout",
                                                        1, 3600)
        self.interval = 0.0
        if a.interval is not None:
            self.interval = common.parse_seconds(a.interval, "--interval", 1, 86400)

    def setup_commands(self):
        """--server-drop's words, --fanout's range, the --stagebench and --dir templates."""
        a = self.args
        self.server_drop = None
        if a.server_drop is not None:
            try:
                self.server_drop = shlex.split(a.server_drop)
            except ValueError as e:
                raise common.UsageError("--server-drop '%s': %s" % (a.server_drop, e))
            if not self.server_drop or "\0" in a.server_drop:
                raise common.UsageError("--server-drop needs a command (its words, run on "
                                        "this host without a shell)")
        if a.fanout is not None and not (1 <= a.fanout <= 100000):
            raise common.UsageError("--fanout %d is out of range" % a.fanout)
        for opt in ("stagebench", "dir"):
            v = getattr(a, opt)
            if v is None:
                continue
            if not v or "\0" in v:
                raise common.UsageError("--%s is empty or contains a NUL byte" % opt)
            if "%h" in v.replace("%%", "") and not a.exec_mode:
                raise common.UsageError("--%s '%s': %%h is replaced by the node name only "
                                        "with --exec" % (opt, v))
        self.stagebench = template(a.stagebench)
        self.dir = template(a.dir) if a.dir else None

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
            raise common.UsageError("no nodes: give -w NODESET, -g GROUP or --hostfile FILE"
                                    + (" (or run inside a Slurm allocation)"
                                       if a.launcher == "srun" else ""))
        excl = set()
        for ns in a.exclude or []:
            excl.update(nodeset_expand(ns))
        self.nodes = sorted(set(nodes) - excl, key=common.natural_key)
        if not self.nodes:
            raise common.UsageError("every node is excluded")
        self.servers = read_servers_file(a.servers) if a.servers else None
        if self.servers is not None:
            lost = [n for n in self.nodes if n not in self.servers]
            if lost:
                raise common.UsageError("--servers %s does not name the server of %s"
                                        % (a.servers, nodeset_fold(lost)))

    def setup_results(self):
        """How the summaries come back (--gather), the run id, the run directory, and the
        node-local scratch directory; --topology's needs."""
        a = self.args
        gather = a.gather or ("shared" if a.exec_mode or a.launcher == "srun" else "rcopy")
        if gather == "rcopy" and (a.exec_mode or a.launcher == "srun"):
            raise common.UsageError("--gather rcopy needs clush or pdsh over ssh")
        self.gather = gather
        if not os.path.isabs(a.scratch) or not re.match(r"^[A-Za-z0-9._/-]+$", a.scratch):
            raise common.UsageError("--scratch '%s' must be an absolute path of letters, "
                                    "digits, '.', '_', '-', '/'" % a.scratch)
        self.run_id = a.run_id or time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        if not common.run_id_ok(self.run_id):
            raise common.UsageError("--run-id '%s' is not valid: letters, digits, '.', '_', "
                                    "'-'" % self.run_id)
        self.results = os.path.abspath(a.results)
        self.rundir = os.path.join(self.results, self.run_id)
        # unpredictable: another user cannot make it beforehand (and if they make it once they
        # see it, the node refuses it: remote.sh)
        self.scratch = os.path.join(a.scratch, "stagebench-%s-%s" % (
            self.run_id, binascii.hexlify(os.urandom(8)).decode()))
        if a.topology is not None:
            if a.launcher != "clush" or a.exec_mode:
                raise common.UsageError(
                    "--topology (ClusterShell's tree mode, through gateways) works with clush "
                    "over ssh, not %s" % ("--exec" if a.exec_mode else a.launcher))
            if gather == "rcopy":
                raise common.UsageError("--topology: the summaries are not copied back "
                                        "through gateways: give --gather shared (a results "
                                        "directory every node can write)")

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
            raise common.UsageError("--interval arms a whole test in one round: clush or pdsh "
                                    "over ssh, not %s"
                                    % ("--exec" if a.exec_mode else a.launcher))
        self.engine.connect_timeout = self.connect_timeout
        if self.armed:
            self.engine.fanout = a.fanout or DEFAULT_FANOUT
            self.fit_fanout()
        elif a.fanout is not None and a.fanout < len(self.nodes):
            raise common.UsageError(
                "--fanout %d is below the %d nodes: %s holds a connection to every node for a "
                "whole part, so the nodes past the first %d would start after the others "
                "(only armed runs, clush or pdsh over ssh, take a bounded fan-out)"
                % (a.fanout, len(self.nodes), "--exec" if a.exec_mode else a.launcher, a.fanout))
        if not a.dry_run:
            self.engine.check_installed()

    def fit_fanout(self):
        """The descriptor limit raised to its hard limit; a fan-out whose connections cannot
        fit in it (the engine's descriptors a connection, and FD_RESERVE for the rest) is
        lowered, said in one line."""
        per = self.engine.fds_per_connection
        soft, hard = procs.raise_fd_limit()
        if per is None or soft is None:
            return
        fits = max(1, (soft - FD_RESERVE) // per)
        if self.engine.fanout > fits:
            common.say("warning: a fan-out of %d needs about %d open descriptors and this "
                       "process may have %d (ulimit -n, hard limit %s): fan-out lowered to %d"
                       % (self.engine.fanout, self.engine.fanout * per + FD_RESERVE, soft,
                          "unlimited" if hard is None else hard, fits))
            self.engine.fanout = fits

    def find_check_binary(self):
        """The stagebench on this machine that checks the run options and gives the test
        catalogue: --local-stagebench, else the one beside this command or on PATH, else
        --exec's --stagebench when it names one binary for every node; None when there is none
        (or --local-stagebench none)."""
        a = self.args
        if a.local_stagebench is not None:
            return None if a.local_stagebench == "none" else a.local_stagebench
        binary = files.find_sibling("stagebench")
        mine = template(a.stagebench)
        if binary is None and a.exec_mode and NODE not in mine:
            binary = mine if os.sep in mine else files.which(mine)
        return binary

    def check_run_options(self):
        """Bad run options fail here, once, rather than on every node: `stagebench run
        --dry-run` with them on this machine (one thread: this machine's cores are not the
        nodes')."""
        a = self.args
        binary = self.check_binary
        if binary is None:
            if a.local_stagebench != "none":
                common.say("warning: the run options are not checked before the launch: no "
                           "stagebench beside this command or on PATH (give "
                           "--local-stagebench PATH, or --local-stagebench none to say so); "
                           "the nodes will check them")
            return
        opts = list(self.run_options())
        for f in ("threads", "cpus"):
            if getattr(a, f) is not None:
                i = opts.index("--" + f)
                del opts[i:i + 2]
        cmd = [binary, "run"] + self.run_names() + opts + ["--dry-run", "--dir", "/",
                                                           "--threads", "1", "--quiet"]
        try:
            rc, _out, err = procs.run_capture(cmd, 60)
        except (OSError, subprocess.TimeoutExpired) as e:
            common.say("warning: cannot check the run options with %s: %s" % (binary, e))
            return
        if rc == 2:
            raise common.UsageError("the run options are refused: %s" % err_line(
                err.splitlines()).replace("stagebench: error: ", ""))

    # -- what a run is

    def run_names(self):
        """The names of the run as `stagebench run` takes them: whole tests by the test's name,
        else the parts."""
        tests = self.catalogue.tests
        if all(t in tests and tests[t]["parts"] == ps for t, ps in self.tests):
            return [t for t, _ps in self.tests]
        return [p for _t, ps in self.tests for p in ps]

    def first_part(self):
        """(part, repetition) the run starts with."""
        return self.tests[0][1][0], 1

    def last_part(self):
        """(part, repetition) the run ends with."""
        return self.tests[-1][1][-1], self.args.repeat

    def replica_tests(self):
        """The tests of the run that read a replica (what --clean removes)."""
        return [t for t, _p in self.tests if self.catalogue.tests[t]["replica"]]

    def prepared_in(self, test, rep):
        """Whether test's replica is made before repetition rep: the first, and every one of
        a test whose replica the spec recreates."""
        d = self.catalogue.tests[test]
        return d["replica"] and (rep == 1 or d["recreate"])

    def drops_before(self, test):
        """Whether --server-drop's command runs before each part of test."""
        return self.server_drop is not None and self.catalogue.tests[test]["server_drop"]

    def part_groups(self, test, parts):
        """The parts of test armed together: all of them on the --interval grid, else one by
        one (also the parts --server-drop runs before)."""
        if self.interval and len(parts) > 1 and not self.drops_before(test):
            return [list(parts)]
        return [[p] for p in parts]

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

    # -- the command of each kind of round

    def named(self, args):
        """A stagebench command that takes --node: the node's name added."""
        if self.engine.exec_mode:
            return [self.stagebench] + args + ["--node", NODE]
        return remote.command("named", self.stagebench, *args)

    def info_args(self):
        """The info round's command: one compact line a node, whatever its cores."""
        return self.named(["info", "--format", "json", "--compact"] + self.dir_opts())

    def clock_args(self):
        return self.named(["clock"])

    def relay_args(self):
        """The clock relay a gateway runs (--topology): relay.py as a program, on the
        gateways' Python (the one ClusterShell's gateway runs on)."""
        return [self.engine.gateway_python, "-c", relay.program()]

    def relay_specs(self, specs):
        """relay.plan's specs of the first-level gateways, completed with what every hop
        needs: a node's clock command, the relay's own, the connection settings, the limits."""
        e = self.engine
        common_ = {"command": e.node_command(self.clock_args()),
                   "relay": e.node_command(self.relay_args()), "info": e.gateway_info(),
                   "timeout": self.info_timeout, "samples": clocksync.SAMPLES}
        return dict((g, relay.complete(s, common_)) for g, s in specs.items())

    def prepare_args(self, test, rep):
        """Prepare test's replica for repetition rep: the replica records the run id and rep
        (the collector checks every repetition read one made for it)."""
        a = self.args
        extra = ["--scale", a.scale, "--run-id", self.run_id, "--repetition", str(rep)]
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
                "--run-id", self.run_id, "--no-progress"] + self.run_options() + \
            self.dir_opts()
        suffix = "%s.rep%d.json" % (part, rep)
        if self.engine.exec_mode:
            out = os.path.join(self.rundir, NODE + "." + suffix)
            return [self.stagebench] + base + ["--node", NODE, "--out", out]
        shared = self.rundir if self.gather == "shared" else ""
        return remote.command("run", shared, suffix, self.scratch, self.stagebench, *base)

    def state_name(self, part, rep):
        """The state directory of an armed part, in the node-local scratch directory: a name
        no other user can predict."""
        return "arm-%s-%s.rep%d" % (self.arm_token, part, rep)

    def state_dir(self, sname):
        """The state directory named sname (without its node's name) in the scratch
        directory."""
        return self.scratch + "/" + sname

    def lease_for(self, lead_s):
        """The lease of an armed part armed lead_s before its start: --lease, and at least the
        lead, the first status round after the start and twice a round's time for the living
        nodes (the info round's), so that the first renewal reaches the last wave of nodes in
        time; the status rounds then come often enough to renew it three times within it."""
        return float(int(max(self.lease, lead_s + 5.0 + 2.0 * self.round_s) + 0.999))

    def arm_args(self, name, parts, rep, start_at, sname=None, force=False, lease=None):
        """Arm parts (name: the test's when they are several) on a node: `stagebench run ...
        --detach STATE_DIR`, which returns once every thread waits for start_at (or set-up
        failed, with its error line); part k starts at start_at + k x --interval."""
        tests = self.catalogue.tests
        names = [name] if name in tests and tests[name]["parts"] == parts else list(parts)
        base = ["run"] + names + ["--start-at", "%.6f" % start_at, "--repetition", str(rep),
                                  "--run-id", self.run_id, "--no-progress"]
        if len(parts) > 1:
            base += ["--interval", "%g" % self.interval]
        base += self.run_options() + self.dir_opts()
        if force:  # armed again: the first attempt's summary (interrupted) is replaced
            base.append("--force")
        if lease is not None:
            base += ["--lease", "%g" % lease]
        suffix = "%s.rep%d.json" % (name, rep)
        shared = self.rundir if self.gather == "shared" else ""
        return remote.command("arm", shared, suffix, self.scratch,
                              sname or self.state_name(name, rep),
                              "clock" if self.engine.can_talk else "", self.stagebench, *base)

    def status_args(self, sdir):
        """A status round's command on an armed part: its state, its lease renewed, and, where
        the engine can talk to the node, its clock's timestamps after the state line."""
        return self.at_state_args(sdir, "status", "--format", "json", "--renew",
                                  *(["--clock"] if self.engine.can_talk else []))

    def at_state_args(self, sdir, *command):
        """`stagebench COMMAND STATE_DIR ARG...` on an armed part's state directory sdir (its
        node's name added), or the tail of its log (no command)."""
        if not command:
            return remote.command("atstate", sdir)
        return remote.command("atstate", sdir, self.stagebench, *command)

    def stop_args(self, signame):
        """Signal the run whose pid file is in the node's scratch directory (a run round)."""
        return remote.command("stop", self.scratch, signame)

    def send_args(self, suffix):
        """Print this node's summary SCRATCH/NAME.SUFFIX (a gather round)."""
        return remote.command("send", self.scratch, suffix)

    def scratch_rm_args(self):
        return remote.command("scratch-rm", self.scratch)

    def clean_args(self, tests):
        return [self.stagebench, "clean"] + tests + ["--scale", self.args.scale] + \
            self.dir_opts()


# ---------------------------------------------------------------------------------------------
# The dry run: every command with its node set and start instant, nothing run


class DryRun:
    """The dry run of a plan, printed: what each round would run, on which nodes, when."""

    def __init__(self, plan):
        self.plan = plan
        self.nodes_file = os.path.join(plan.rundir, "logs", "NNN-ROUND.nodes")
        self.lines = []

    def out(self, text):
        self.lines.append(text)

    def show(self, what, nodes, args, timeout, direct=False):
        cmd = self.plan.engine.describe(self.nodes_file, nodes,
                                        relay.shown(remote.shown(args)), timeout, direct)
        self.out("%s on %s:\n    %s" % (what, nodeset_fold(nodes), " ".join(
            shlex.quote(c) for c in cmd)))

    def print(self):
        plan, e = self.plan, self.plan.engine
        self.out("dry run: %d node%s %s via %s%s; run id %s; results %s; nothing is run" % (
            len(plan.nodes), "" if len(plan.nodes) == 1 else "s", nodeset_fold(plan.nodes),
            e.name, " -R exec" if e.exec_mode else "", plan.run_id, plan.rundir))
        self.show("info round (measures the launch time)", plan.nodes, plan.info_args(),
                  plan.info_timeout)
        if e.topology is not None:
            direct, specs = relay.plan(e.topology, plan.nodes)
            if direct:
                self.show("clock offsets of the nodes outside the topology (%d timestamp "
                          "exchanges a node on its stdin)" % clocksync.SAMPLES, direct,
                          plan.clock_args(), plan.info_timeout, direct=True)
            if specs:
                specs = plan.relay_specs(specs)
                self.show("clock offsets through the gateways (each measures its nodes, %d "
                          "timestamp exchanges a node, and is measured by this host; next "
                          "to every part)" % clocksync.SAMPLES, sorted(specs),
                          plan.relay_args(), max(relay.bound(s) for s in specs.values()),
                          direct=True)
                for g in sorted(specs, key=common.natural_key):
                    self.out("    %s measures %s" % (g, nodeset_fold(relay.targets(specs[g]))))
        elif e.can_talk:
            self.show("clock offsets (%d timestamp exchanges a node on its stdin; again after "
                      "the last part)" % clocksync.SAMPLES, plan.nodes, plan.clock_args(),
                      plan.info_timeout)
        else:
            self.out("clock offsets: from the info round (one-shot: bounded by its duration); "
                  "again with an info round after the last part")
        self.out("clock tolerance: --max-offset %g s%s" % (
            plan.max_offset, "; --require-sync refuses to start beyond it"
            if plan.args.require_sync else ""))
        prep_nodes = self.servers()
        t = time.time() + plan.lead.s
        for rep in range(1, plan.args.repeat + 1):
            for test, parts in plan.tests:
                t = self.test(rep, test, parts, prep_nodes, t)
        if plan.args.clean and plan.replica_tests():
            self.show("clean", prep_nodes, plan.clean_args(plan.replica_tests()), 600)
        self.out("then: stagebench-collect %s" % shlex.quote(plan.rundir))
        ok = common.write_stdout("".join(line + "\n" for line in self.lines))
        return common.EXIT_OK if ok else common.EXIT_FAILED

    def servers(self):
        """The servers and their preparers as --servers gives them (else said to come from the
        info round); returns the preparers' names."""
        plan = self.plan
        if plan.servers is None:
            self.out("servers: from the mount source of each node's --dir in the info round; "
                  "one preparer per server")
            return ["PREPARERS"]
        by = {}
        for n in plan.nodes:
            by.setdefault(plan.servers[n], []).append(n)
        pre = {s: ns[0] for s, ns in by.items()}
        for s in sorted(by, key=common.natural_key):
            self.out("server %s: %s (preparer %s)" % (s, nodeset_fold(by[s]), pre[s]))
        return sorted(pre.values(), key=common.natural_key)

    def test(self, rep, test, parts, prep_nodes, t):
        """One repetition of a test: its prepare round, then each group of parts from start
        instant t; returns the start instant after them."""
        plan = self.plan
        d = plan.catalogue.tests[test]
        if plan.prepared_in(test, rep):
            self.show("rep %d: prepare %s (one node per server; %s)" % (
                rep, test, "recreated" if d["recreate"] else "kept once made"),
                prep_nodes, plan.prepare_args(test, rep), plan.prepare_timeout)
        for group in plan.part_groups(test, parts):
            part = group[0] if len(group) == 1 else test
            if plan.drops_before(test):
                self.out("rep %d: before %s, on this host: %s" % (
                    rep, part, " ".join(shlex.quote(w) for w in plan.server_drop)))
            self.out("rep %d: part %s starts at %.3f (%s; the lead, at least %.0f s, is added to "
                  "the time the round is launched)%s" % (
                      rep, group[0], t, common.utc(t), plan.lead.s,
                      "; then every %g s: %s" % (plan.interval, " ".join(group[1:]))
                      if len(group) > 1 else ""))
            self.part(rep, part, group, t)
            t += plan.lead.s + 1 + (len(group) - 1) * plan.interval
        return t

    def part(self, rep, part, group, t):
        """The rounds of one group of parts: armed, or one run round; the copy back."""
        plan, nodes = self.plan, self.plan.nodes
        if plan.armed:
            sdir = plan.state_dir(plan.state_name(part, rep))
            self.show("    arm %s (returns once the node waits for the start)" % part, nodes,
                      plan.arm_args(part, group, rep, t, lease=plan.lease_for(plan.lead.s)),
                      max(plan.lead.s, 10.0))
            self.show("    then, from the start until every node is done: status (the "
                      "lease renewed)", nodes, plan.status_args(sdir), plan.poll_timeout)
        else:
            self.show("    run %s" % part, nodes, plan.run_args(part, rep, t),
                      plan.lead.s + plan.timeout)
        if plan.gather == "rcopy":
            self.show("    then, copied back (each node prints its own summary)", nodes,
                      plan.send_args("%s.rep%d.json" % (part, rep)), plan.poll_timeout)
