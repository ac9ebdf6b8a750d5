# SPDX-License-Identifier: MIT
"""The launcher of stagebench-cluster, phase by phase: the info round and the clocks, the
servers and their preparers, the prepare and run rounds of every repetition, the end (clocks
again, --clean, the scratch directories), then the report. What a run is comes from
launchplan.py, the rounds from rounds.py, the manifest from manifest.py."""
import os
import re
import shlex
import signal
import subprocess
import time

from . import clocksync
from . import collection
from . import common
from . import files
from . import histhook
from . import model
from . import procs
from . import relay
from . import report
from . import reporttext
from .launchplan import DryRun, Plan
from .manifest import Manifest
from .nodes import nodeset_fold
from .rounds import START_MISSED, Rounds, err_line, info_kept, live_round_s, parse_infos
from .summaries import error_reasons

CLOCK_LINES = 10  # nodes named one a line for a clock out of tolerance; the rest folded
SERVER_DROP_TIMEOUT = 3600  # --server-drop's command: a server's cache of a big disk can take long
UNKNOWN = "unknown"  # the server of a node whose info round failed


def slurm_node_cpus(nodes):
    """{node: the CPUs Slurm counts on it} (`scontrol show node -o`), {} when unknown."""
    if not nodes:
        return {}
    try:
        rc, out, _err = procs.run_capture(["scontrol", "show", "node", "-o", ",".join(nodes)],
                                          30)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    cpus = {}
    for line in out.splitlines() if rc == 0 else []:
        m = re.search(r"\bNodeName=(\S+).*\bCPUTot=(\d+)", line)
        if m:
            cpus[m.group(1)] = int(m.group(2))
    return cpus


class Launcher:
    """One run of stagebench-cluster: main() runs it, phase by phase."""

    def __init__(self, args):
        self.args = args
        self.plan = Plan(args)
        self.manifest = None
        self.rounds = None

    def main(self):
        """The whole run: set-up (or the dry run), the run directory and manifest, the info
        round and the clocks, every repetition's rounds, the end; the report."""
        self.plan.setup()
        if self.args.dry_run:
            return DryRun(self.plan).print()
        self.make_rundir()
        self.manifest = Manifest(self.plan)
        self.rounds = Rounds(self.plan, self.manifest, self.args.verbose)
        signal.signal(signal.SIGINT, self.rounds.on_signal)
        signal.signal(signal.SIGTERM, self.rounds.on_signal)
        self.manifest.begin(self.plan)
        nodes = self.plan.nodes
        common.say("run %s: %d node%s, results in %s" % (self.plan.run_id, len(nodes),
                                                        "" if len(nodes) == 1 else "s",
                                                        self.plan.rundir))
        if self.plan.engine.name == "srun" and not os.environ.get("SLURM_JOB_ID"):
            self.manifest.warn("srun outside a Slurm allocation: every round is a job of its "
                               "own, queued and allocated anew (run the launcher within salloc "
                               "or sbatch)")
        if not self.start_phase():
            return self.finish(common.EXIT_PRECONDITION)
        preparers = {}
        self.repetitions(preparers)
        self.end_phase(preparers)
        return self.finish(None)

    def make_rundir(self):
        """RESULTS/<run-id>/ and its logs/, fresh: a run directory that holds a run is
        refused."""
        rundir = self.plan.rundir
        if os.path.exists(os.path.join(rundir, common.MANIFEST)):
            raise common.UsageError("results directory %s already holds a run: choose another "
                                    "--run-id" % rundir)
        try:
            files.ensure_dir(self.plan.results)
            files.make_run_dir(rundir)
            files.make_dir(os.path.join(rundir, "logs"), 0o755)
        except OSError as e:
            common.fail("cannot create %s: %s" % (rundir, common.errno_text(e)),
                        common.EXIT_PRECONDITION)

    # -- the start: the info round, the servers, the clocks

    def start_phase(self):
        """The info round (the nodes' names, cores and servers, the lead), then the clocks
        against --max-offset. False, with the manifest finished, when the run cannot go on: no
        node answered, or --require-sync found a clock out of tolerance."""
        plan, rounds = self.plan, self.rounds
        self.info_phase()
        self.core_warnings()
        self.group_servers()
        usable = rounds.live(plan.nodes)
        common.say("info round: %d of %d node%s answered in %.2f s%s; %d server%s; lead %.1f s" % (
            len(self.infos), len(plan.nodes), "" if len(plan.nodes) == 1 else "s",
            self.launch_s, " (the round %.2f s)" % self.info_round_s
            if self.info_round_s > self.launch_s + 0.5 else "", len(self.server_nodes),
            "" if len(self.server_nodes) == 1 else "s", plan.lead.s))
        if self.infos and len(self.infos) < len(plan.nodes):
            self.left_out()
        self.manifest.save()
        if usable and self.infos and not self.clock_check(*self.clock_phase("start"),
                                                           which="start"):
            self.manifest.finish()
            return False
        if not usable or not self.infos:
            self.manifest.finish()
            common.say("error: no node answered the info round (see %s)"
                       % os.path.join(plan.rundir, "logs"))
            rounds.say_errors(self.info_res, "the info round's %g s" % plan.info_timeout)
            return False
        return True

    def info_phase(self):
        """The info round: each node's facts (its name, cores, filesystem, clock), what it
        took (the lead), info.json."""
        plan, rounds = self.plan, self.rounds
        t0 = time.time()
        res, dt = rounds.run("info", plan.nodes, plan.info_args(), plan.info_timeout)
        self.info_window = (t0, time.time())
        rnd = {"kind": "info", "what": "the info round", "nodes": nodeset_fold(plan.nodes),
               "duration_s": round(dt, 3)}
        infos = parse_infos(res)
        for node, info in infos.items():
            name = info.get("node")
            if common.node_name_ok(name) and name != node:
                rounds.ident[node] = name
        fail = rounds.record_failures(rnd, res, "the info round's %g s" % plan.info_timeout)
        for node in plan.nodes:
            ident = rounds.name_of(node)
            if node not in infos and ident not in fail:
                rnd["failed"][ident] = {"status": "failed", "rc": None,
                                        "error": "info printed no stagebench info"}
        self.manifest.add_round(rnd)
        self.check_names()
        files.write_json_atomic(os.path.join(plan.rundir, common.INFO),
                                {rounds.name_of(n): i for n, i in infos.items()})
        self.info_res = {n: o for n, o in res.items() if n not in infos}
        infos = {n: info_kept(i) for n, i in infos.items()}
        self.infos = infos
        self.info_round_s = dt
        self.launch_s = live_round_s(res, infos, t0, dt, plan.engine)
        plan.lead.from_info(self.launch_s)
        plan.round_s = self.launch_s
        self.manifest.info_round([rounds.name_of(n) for n in plan.nodes], dt, self.launch_s,
                                 {n: i for n, i in rounds.ident.items() if n != i})
        return rnd

    def left_out(self):
        """The nodes the info round could not use, as the launcher's warnings (said, and in
        the report's head): one line for each reason, its nodes folded."""
        rnd = self.manifest.doc["rounds"][0]
        by = {}
        for name, f in (rnd.get("failed") or {}).items():
            key = (f.get("status"), common.safe_text(f.get("error") or "").replace("\n", " "))
            by.setdefault(key, []).append(name)
        items = sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        for (status, error), names in items[:CLOCK_LINES]:
            self.manifest.warn("%d node%s %s in the info round, left out of the run: %s: %s"
                               % (len(names), "" if len(names) == 1 else "s", status,
                                  nodeset_fold(names), error))
        rest = [n for _k, ns in items[CLOCK_LINES:] for n in ns]
        if rest:
            self.manifest.warn("%d more node%s left out in the info round for other reasons: "
                               "%s (see manifest.json)" % (len(rest), "" if len(rest) == 1
                                                           else "s", nodeset_fold(rest)))

    def check_names(self):
        """Two nodes that call themselves the same: refused."""
        clash = {}
        for n, i in self.rounds.ident.items():
            clash.setdefault(i, []).append(n)
        clash = {i: ns for i, ns in clash.items() if len(ns) > 1}
        if clash:
            i, ns = next(iter(clash.items()))
            raise common.UsageError("nodes %s all call themselves '%s': give each a distinct "
                                    "name (STAGEBENCH_NODE in their environment)"
                                    % (", ".join(ns), i))

    def core_warnings(self):
        """Nodes that will run fewer threads than they have cores: a cgroup or CPU affinity
        lets their stagebench use fewer CPUs than the machine has (its info round says), or
        the Slurm allocation holds fewer of a node's CPUs than Slurm counts on it (a
        non-exclusive allocation)."""
        few = {}
        name_of = self.rounds.name_of
        for n, info in sorted(self.infos.items(), key=lambda kv: common.natural_key(kv[0])):
            topo = info.get("topology") if isinstance(info.get("topology"), dict) else {}
            allowed, machine = topo.get("allowed_pus"), topo.get("machine_pus")
            if isinstance(allowed, int) and isinstance(machine, int) and allowed < machine:
                few.setdefault("may use %d of its %d CPUs (a cgroup or CPU affinity)"
                               % (allowed, machine), []).append(name_of(n))
        nodes = self.plan.nodes
        alloc = getattr(self.plan.engine, "alloc", None) or {}
        total = slurm_node_cpus([n for n in nodes if n in alloc]) if alloc else {}
        for n in nodes:
            if n in alloc and n in total and alloc[n] < total[n]:
                few.setdefault("the Slurm allocation holds %d of its %d CPUs (not exclusive: "
                               "sbatch/salloc --exclusive)" % (alloc[n], total[n]),
                               []).append(name_of(n))
        for why, names in sorted(few.items()):
            self.manifest.warn("%s: %s: it runs fewer threads than it has cores"
                               % (nodeset_fold(names), why))

    def group_servers(self):
        """Each node's /stage server: --servers, else its info's filesystem (UNKNOWN when its
        info round failed)."""
        plan = self.plan
        servers = {}
        for n in plan.nodes:
            if plan.servers is not None:
                servers[n] = plan.servers[n]
            elif n in self.infos:
                servers[n] = common.server_of(self.rounds.name_of(n), self.infos[n].get("fs"))
            else:
                servers[n] = UNKNOWN
        self.server_of = servers
        by = {}
        for n in plan.nodes:
            by.setdefault(servers[n], []).append(n)
        self.server_nodes = by
        self.manifest.servers((self.rounds.name_of(n), s) for n, s in servers.items())

    def clock_phase(self, which):
        """Measure the clock offset of every node still in the run ("start": before the first
        part, "end": after the last) into the manifest's clock.<which> and its measurements;
        returns ({node: entry}, {node: why not measured})."""
        nodes = [n for n in self.rounds.live(self.plan.nodes) if n in self.infos]
        first = self.plan.first_part() if which == "start" else self.plan.last_part()
        next_to = {"when": "before" if which == "start" else "after", "part": first[0],
                   "rep": first[1]}
        got, why = self.measure_clocks(nodes, "clock-" + which, next_to,
                                       which == "start")
        self.manifest.clock(which, got, why, self.rounds.name_of, clocksync.read_cost_s())
        return got, why

    def measure_clocks(self, nodes, tag, next_to, from_info=False):
        """The clock offsets of nodes against this host, measured now (a `stagebench clock`
        exchange round where the engine can talk to a node, through the gateways' relays with
        --topology, else one-shot from an info round, or from_info: the info round's), recorded as one of the manifest's measurements, next
        to next_to ({when, part, rep}). Returns ({node: entry}, {node: why not})."""
        plan, rounds = self.plan, self.rounds
        cost = clocksync.read_cost_s()
        if not nodes:
            return {}, {}
        if plan.engine.topology is not None:
            got, why = self.relay_clocks(nodes, tag, cost)
        elif plan.engine.can_talk:
            got, why = self.exchange_clocks(nodes, tag, cost)
        else:
            if from_info:
                infos, (t0, t1) = self.infos, self.info_window
            else:
                t0 = time.time()
                res, _dt = rounds.run(tag.replace("clock-", "info-"), nodes, plan.info_args(),
                                      plan.info_timeout)
                t1 = time.time()
                infos = parse_infos(res)
            got = clocksync.from_round({n: infos[n] for n in nodes if n in infos}, t0, t1, cost)
            why = {n: "no clock reading in its info output" for n in nodes if n not in got}
        self.manifest.measurement(next_to, got, why, rounds.name_of)
        return got, why

    def exchange_clocks(self, nodes, tag, cost, direct=False):
        """A `stagebench clock` exchange round on nodes: ({node: entry}, {node: why not})."""
        talk = clocksync.Exchange(clocksync.SAMPLES)
        res, _dt = self.rounds.run(tag, nodes, self.plan.clock_args(), self.plan.info_timeout,
                                   talk=talk, direct=direct)
        got, why = talk.results(nodes, cost, time.time())
        for n in why:
            why[n] = self.failed_why(res.get(n), why[n]) or why[n]
        return got, why

    def relay_clocks(self, nodes, tag, cost):
        """The clock offsets through --topology's gateways (relay.py): each first-level
        gateway measures the nodes beneath it, this host measures each gateway, and the two
        are composed; the nodes outside the tree are measured from here; a dead gateway's
        nodes again through its live peers."""
        plan = self.plan
        direct, specs = relay.plan(plan.engine.topology, nodes)
        passes = []

        def run(leaves, specs, conv):
            passes.append(len(passes) + 1)
            suffix = "" if len(passes) == 1 else "-%d" % len(passes)
            failed = {}
            for ns, what, args, limit in (
                    (leaves, "", plan.clock_args(), plan.info_timeout),
                    (sorted(specs, key=common.natural_key), "-relay", plan.relay_args(),
                     max([relay.bound(s) for s in specs.values()] or [0.0]))):
                if ns:
                    res, _dt = self.rounds.run(tag + what + suffix, ns, args, limit, talk=conv,
                                               direct=True)
                    for n in ns:
                        w = self.failed_why(res.get(n), "no error line")
                        if w:
                            failed[n] = w
            return failed

        return relay.measure_all(direct, plan.relay_specs(specs), run, clocksync.SAMPLES, cost)

    def failed_why(self, o, said):
        """Why a node of a clock round gave no offset, from its outcome, or None: its exit
        status and error line (else said), its own time limit, or the round's end."""
        if o is None:
            return None
        if o.rc not in (None, 0):
            return "exit %d: %s" % (o.rc, err_line(o.err) or said)
        if o.timeout:
            return "no answer within --info-timeout %g s" % self.plan.info_timeout
        if o.aborted:
            return "the round ended before it answered"
        return None

    def clock_check(self, got, why, which):
        """Say what the measurement found: one line, then one per node out of --max-offset or
        not measured. With --require-sync (at the start), False when any is."""
        c, name_of, max_offset = self.manifest.doc["clock"], self.rounds.name_of, \
            self.plan.max_offset
        if got:
            worst = max(got, key=lambda n: abs(got[n]["offset_s"]))
            common.say("clock offsets %s (%s, %d sample%s a node): %d node%s measured, largest "
                       "%s: %s" % ("before the first part" if which == "start"
                                   else "after the last part", c["method"], c["samples"],
                                   "" if c["samples"] == 1 else "s", len(got),
                                   "" if len(got) == 1 else "s", name_of(worst),
                                   clocksync.describe(got[worst])))
        out = clocksync.out_of_tolerance(got, max_offset)
        say_some(["warning: %s: clock %s: beyond --max-offset %g s"
                  % (name_of(n), clocksync.describe(got[n]), max_offset) for n in out],
                 "warning: %%d more node%%s beyond --max-offset %g s: %%s (see manifest.json)"
                 % max_offset, [name_of(n) for n in out])
        lost = sorted(why, key=common.natural_key)
        say_some(["warning: %s: clock offset not measured: %s" % (name_of(n), why[n])
                  for n in lost],
                 "warning: %d more node%s whose clock offset was not measured: %s",
                 [name_of(n) for n in lost])
        if which == "end":
            start = c.get("start") or {}
            drift = [(abs(got[n]["offset_s"] - start[name_of(n)]["offset_s"]), n)
                     for n in got if name_of(n) in start]
            if drift:
                d, n = max(drift)
                common.say("clock drift over the run: largest %s (%s)" % (clocksync.seconds(d),
                                                                          name_of(n)))
        if which == "start" and self.args.require_sync and (out or why):
            named = ["%s %s" % (name_of(n), clocksync.describe(got[n])) for n in out] + \
                ["%s not measured" % name_of(n) for n in lost]
            bad = [name_of(n) for n in out + lost]
            if len(named) > CLOCK_LINES:
                named = named[:CLOCK_LINES] + ["and %d more: %s" % (
                    len(bad) - CLOCK_LINES, nodeset_fold(bad[CLOCK_LINES:]))]
            common.say("error: --require-sync: not starting: %s" % "; ".join(named))
            return False
        return True

    # -- every repetition: prepare, run

    def repetitions(self, preparers):
        """Every repetition of every test: its prepare round where the replica is (re)made,
        then its parts' rounds (after --server-drop where it applies), until a stop signal.
        preparers ({server: node}) is kept across repetitions."""
        plan, rounds = self.plan, self.rounds
        unprepared_of = {}  # test -> {server: why}, for the repetitions that keep a replica
        for rep in range(1, self.args.repeat + 1):
            for test, parts in plan.tests:
                if rounds.stop_signal:
                    break
                if plan.prepared_in(test, rep):
                    unprepared_of[test] = self.prepare_phase(test, rep, preparers)
                    self.manifest.preparers((s, rounds.name_of(n))
                                            for s, n in preparers.items())
                    for s, why in unprepared_of[test].items():
                        common.say("warning: %s rep %d: server %s: %s" % (test, rep, s, why))
                unprepared = unprepared_of.get(test, {})
                for group in plan.part_groups(test, parts):
                    if rounds.stop_signal:
                        break
                    if plan.drops_before(test):
                        self.server_drop_run(group[0], rep)
                    for rnd in self.run_phase(test, group, rep, unprepared):
                        bad = len(rnd.get("failed") or {})
                        common.say("%s rep %d: %d node%s ran, %d failed or skipped" % (
                            rnd["part"], rep, rnd["count"], "" if rnd["count"] == 1 else "s",
                            bad))

    def candidates(self, server):
        info_failed = self.manifest.doc["rounds"][0].get("failed", {})
        return [n for n in self.rounds.live(self.server_nodes[server])
                if self.rounds.name_of(n) not in info_failed]

    def prepare_phase(self, test, rep, preparers):
        """Prepare test's replica on one node per server, trying the next node of a server
        whose preparer failed. Returns {server: error} of the servers left unprepared."""
        todo = {s: self.candidates(s) for s in self.server_nodes if s != UNKNOWN}
        if UNKNOWN in self.server_nodes:
            todo[UNKNOWN] = []
        for s, cands in todo.items():
            p = preparers.get(s)
            if p in cands:
                cands.remove(p)
                cands.insert(0, p)
        errors = {s: "no node of this server answered the info round"
                  for s, c in todo.items() if not c}
        prepared = set()
        attempt = 0
        while not self.rounds.stop_signal and attempt < 3:
            wave = {s: c.pop(0) for s, c in todo.items() if c and s not in prepared}
            if not wave:
                break
            attempt += 1
            self.prepare_wave(test, rep, attempt, wave, preparers, prepared, errors)
        for s in todo:
            if s not in prepared and s not in errors:
                errors[s] = "not prepared (interrupted)" if self.rounds.stop_signal else \
                    "no preparer succeeded"
        return errors

    def prepare_wave(self, test, rep, attempt, wave, preparers, prepared, errors):
        """One prepare round on wave ({server: node}): the servers whose node prepared the
        replica go into prepared (their node into preparers), the others' errors into
        errors."""
        plan, rounds = self.plan, self.rounds
        nodes = sorted(wave.values(), key=common.natural_key)
        res, dt = rounds.run("prepare-%s-rep%d" % (test, rep), nodes, plan.prepare_args(test, rep),
                             plan.prepare_timeout)
        rnd = {"kind": "prepare", "what": "preparing %s rep %d" % (test, rep),
               "test": test, "rep": rep, "attempt": attempt,
               "nodes": nodeset_fold(nodes), "duration_s": round(dt, 3),
               "preparers": {s: rounds.name_of(n) for s, n in wave.items()}}
        fail = rounds.record_failures(rnd, res, "--prepare-timeout %g s" % plan.prepare_timeout)
        for s, n in wave.items():
            if rounds.name_of(n) in fail:
                errors[s] = "preparer %s: %s" % (rounds.name_of(n),
                                                 fail[rounds.name_of(n)]["error"])
            else:
                prepared.add(s)
                errors.pop(s, None)
                preparers[s] = n
        self.manifest.add_round(rnd)
        self.manifest.save()

    def run_nodes(self, unprepared):
        """The nodes a part runs on, and the records of those it skips: a node left out
        earlier, or whose server's replica is not ready."""
        nodes, skip = [], {}
        rounds = self.rounds
        for n in self.plan.nodes:
            server = self.server_of[n]
            if n in rounds.dead:
                skip.update(rounds.skipped([n], "not run: %s earlier" % rounds.dead[n]))
            elif server == UNKNOWN and unprepared:
                skip.update(rounds.skipped([n], "not run: its /stage server is unknown (the "
                                                "info round failed on it), so is its replica"))
            elif server in unprepared:
                skip.update(rounds.skipped([n], "not run: the replica of server %s is not "
                                                "ready (%s)" % (server, unprepared[server])))
            else:
                nodes.append(n)
        return nodes, skip

    def run_phase(self, test, parts, rep, unprepared):
        """Run parts (of test) on every usable node: one round a part, or armed (clush and
        pdsh over ssh) one arm round for them all, part k starting at T + k x --interval.
        Returns the run records, one a part."""
        plan, rounds = self.plan, self.rounds
        nodes, skip = self.run_nodes(unprepared)
        # the summaries' file name: the part's, or the test's when one arm round runs several
        name = parts[0] if len(parts) == 1 else test
        interval = plan.interval if len(parts) > 1 else 0.0
        if nodes and not (plan.armed and plan.engine.can_talk):
            # the clock offsets next to this part (armed over a conversation, every status
            # round measures them)
            self.measure_clocks([n for n in nodes if n in self.infos],
                                "clock-%s-rep%d" % (name, rep),
                                {"when": "before", "part": parts[0], "rep": rep})
        start_at = time.time() + plan.lead.s
        rnds = []
        for k, part in enumerate(parts):
            rnd = {"kind": "run", "what": "%s rep %d" % (part, rep), "test": test, "part": part,
                   "rep": rep, "start_at": round(start_at + k * interval, 6),
                   "lead_s": round(plan.lead.s, 3), "nodes": nodeset_fold(nodes),
                   "count": len(nodes), "failed": dict(skip)}
            if len(parts) > 1:
                rnd["armed_with"] = parts
                rnd["interval_s"] = interval
            self.manifest.add_round(rnd)
            rnds.append(rnd)
        self.manifest.save()
        if not nodes:
            return rnds
        if plan.armed:
            res, dt = rounds.armed(rnds, name, parts, rep, nodes, start_at)
        else:
            res, dt = rounds.run("run-%s-rep%d" % (name, rep), nodes,
                                 plan.run_args(name, rep, start_at), plan.lead.s + plan.timeout)
        if not (plan.armed and plan.engine.can_talk) and not rounds.stop_signal:
            # and after it: a step between the two is a step during the part, not before it
            self.measure_clocks([n for n in rounds.live(nodes) if n in self.infos],
                                "clock-after-%s-rep%d" % (name, rep),
                                {"when": "after", "part": parts[-1], "rep": rep})
        ungathered = rounds.gather(nodes, name, rep) if plan.gather == "rcopy" else {}
        self.after_run(rnds, res, dt, name, rep, ungathered)
        return rnds

    def after_run(self, rnds, res, dt, name, rep, ungathered):
        """A part's nodes recorded: the failures of each of its records, the summaries that
        did not arrive; the lead doubled when nodes missed the start (but for a clock ahead,
        which a longer lead would not cure)."""
        suffix = ".%s.rep%d.json" % (name, rep)
        arrived = {f[:-len(suffix)] for f in os.listdir(self.plan.rundir) if f.endswith(suffix)}
        missed = set()
        for rnd in rnds:
            rnd["duration_s"] = round(dt, 3)
            fail = self.rounds.record_failures(rnd, res, "--timeout %g s after the start"
                                               % self.plan.timeout, summaries=arrived,
                                               ungathered=ungathered)
            for n, f in fail.items():
                # a node whose outcome gave no reason (a run round): its summary's
                if "reason" not in f and n in arrived and START_MISSED in error_reasons(
                        os.path.join(self.plan.rundir, n + suffix)):
                    f["reason"] = START_MISSED
            lost = [n for n, f in fail.items() if f.get("reason") == START_MISSED]
            ahead = self.clock_ahead(lost, fail)
            missed.update(n for n in lost if n not in ahead)
        if missed and self.plan.lead.double():
            common.say("warning: %d node(s) missed the start of %s: lead raised to %.1f s"
                       % (len(missed), rnds[0]["part"], self.plan.lead.s))
        self.manifest.save()

    def clock_ahead(self, missed, fail):
        """Of the nodes that missed a start, those whose clock, measured ahead of this host by
        more than --max-offset, explains it: a clock problem, said so, which a longer lead
        would not cure. Their failure records get cause "clock ahead" and the offset."""
        start = self.manifest.start_offsets()
        ahead = []
        for n in missed:
            e = start.get(n)
            if e is None or e["offset_s"] - e["uncertainty_s"] <= self.plan.max_offset:
                continue
            ahead.append(n)
            fail[n]["cause"] = "clock ahead"
            fail[n]["offset_s"] = e["offset_s"]
            fail[n]["uncertainty_s"] = e["uncertainty_s"]
            common.say("warning: %s missed the start: a clock problem, not a short lead: its "
                       "clock is %s" % (n, clocksync.describe(e)))
        return ahead

    def server_drop_run(self, part, rep):
        """--server-drop's command on this host before a part, untimed; its outcome into the
        manifest and one line of output."""
        command = self.plan.server_drop
        q = " ".join(shlex.quote(w) for w in command)
        at = time.time()
        try:
            rc, out, err = procs.run_capture(command, SERVER_DROP_TIMEOUT)
            text = (out + err).strip()
        except OSError as e:
            rc, text = None, "cannot run it: %s" % common.errno_text(e)
        except subprocess.TimeoutExpired:
            rc, text = None, "no end within %d s: killed" % SERVER_DROP_TIMEOUT
        tail = common.safe_text("\n".join(text.splitlines()[-5:]))
        run = {"before": part, "repetition": rep, "status": "ok" if rc == 0 else "failed",
               "exit_code": rc, "at": round(at, 6), "duration_s": round(time.time() - at, 3),
               "output": tail}
        self.manifest.server_drop_run(run)
        if rc == 0:
            common.say("server drop before %s rep %d: ran (%s), exit 0 in %.1f s"
                       % (part, rep, q, run["duration_s"]))
        else:
            common.say("warning: server drop before %s rep %d: failed (%s): %s: %s; %s runs on "
                       "a server cache that may be warm" % (
                           part, rep, q, "exit %d" % rc if rc is not None else "not run",
                           tail.replace("\n", " | ") or "no output", part))

    # -- the end

    def end_phase(self, preparers):
        """After the last part: the clocks again, --clean, the scratch directories, and the
        manifest finished (interrupted by which signal, if one came)."""
        stop = self.rounds.stop_signal
        if not stop:
            self.clock_check(*self.clock_phase("end"), which="end")
        if self.args.clean and not stop:
            self.clean_phase(preparers)
        self.scratch_cleanup()
        self.manifest.finish(self.rounds.stop_cause or (signal.Signals(stop).name if stop
                                                        else None))

    def clean_phase(self, preparers):
        tests = self.plan.replica_tests()
        nodes = sorted(set(preparers.values()), key=common.natural_key)
        if not tests or not nodes:
            return
        res, dt = self.rounds.run("clean", nodes, self.plan.clean_args(tests), 600)
        rnd = {"kind": "clean", "what": "cleaning", "nodes": nodeset_fold(nodes),
               "duration_s": round(dt, 3)}
        self.rounds.record_failures(rnd, res, "600 s")
        self.manifest.add_round(rnd)

    def scratch_cleanup(self):
        """Remove the node-local scratch directory (state, pid files, summaries) of the run."""
        if self.plan.engine.remote:
            live = self.rounds.live(self.plan.nodes)
            if live:
                self.rounds.run("scratch-rm", live, self.plan.scratch_rm_args(),
                                timeout=self.plan.poll_timeout,
                                honour_stop=False)

    def finish(self, code):
        """The report (report.txt, report.json, on stdout) unless --no-report; the exit
        status: code, else the report's, else the run rounds'; a stop signal's above all."""
        rc = code
        if not self.args.no_report:
            result = report.build(collection.collect([self.plan.rundir]),
                                  source=self.plan.rundir)
            text = reporttext.to_text(result)
            files.write_atomic(os.path.join(self.plan.rundir, common.REPORT_TXT), text)
            files.write_atomic(os.path.join(self.plan.rundir, common.REPORT_JSON),
                               model.to_json(result))
            histhook.after_launch(self.plan.rundir, result)  # into the history
            printed = common.write_stdout(text)
            if rc is None:
                rc = result.exit_code if printed else common.EXIT_FAILED
        elif rc is None:
            bad = any(r.get("failed") for r in self.manifest.doc["rounds"]
                      if r["kind"] == "run")
            rc = common.EXIT_FAILED if bad else common.EXIT_OK
        stop = self.rounds.stop_signal
        if stop:
            rc = common.EXIT_SIGINT if stop == signal.SIGINT else common.EXIT_SIGTERM
        return rc


def say_some(lines, more, nodes):
    """Say lines, CLOCK_LINES at most; the rest as one line: more % (how many, plural 's',
    their nodes folded)."""
    for line in lines[:CLOCK_LINES]:
        common.say(line)
    if len(lines) > CLOCK_LINES:
        rest = len(lines) - CLOCK_LINES
        common.say(more % (rest, "" if rest == 1 else "s", nodeset_fold(nodes[CLOCK_LINES:])))
