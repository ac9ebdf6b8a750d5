# SPDX-License-Identifier: MIT
"""stagebench-cluster --resume RUN: finish a run whose launcher is gone (killed, its host
rebooted). The run's own command line, scratch directory and state names come from its
manifest; the parts that were armed are stopped where they still run, their final states read,
their summaries gathered; the parts never armed are recorded as not run; the nodes' scratch
directories are removed, the manifest finished (its launcher lost, resumed) and the report
written, as the launcher would have."""
import os
import signal
import socket
import time

from . import common
from . import procs
from . import summaries
from .launcher import Launcher
from .manifest import Manifest
from .nodes import nodeset_expand
from .rounds import Rounds, outcome_of, parse_state


def load_unfinished(results, run_id):
    """The manifest of RESULTS/RUN, through the collector's door, refused (UsageError, one
    line) unless it is a run that did not finish and whose launcher is not running."""
    if not common.run_id_ok(run_id):
        raise common.UsageError("--resume '%s' is not a run id" % run_id)
    rundir = os.path.join(os.path.abspath(results), run_id)
    path = os.path.join(rundir, common.MANIFEST)
    try:
        man = summaries.check_manifest(summaries.load_json(path))
    except OSError as e:
        raise common.UsageError("--resume %s: no manifest in %s: %s"
                                % (run_id, rundir, common.errno_text(e)))
    except summaries.Bad as e:
        raise common.UsageError("--resume %s: %s: %s" % (run_id, path, e))
    if man.get("finished_at") is not None:
        raise common.UsageError("--resume %s: the run finished (manifest.json says when): "
                                "nothing to resume" % run_id)
    lau = man.get("launcher") or {}
    pid, started = lau.get("pid"), lau.get("pid_started")
    if lau.get("host") == socket.gethostname() and isinstance(pid, int) and \
            started is not None and procs.start_time(pid) == started:
        raise common.UsageError("--resume %s: its launcher (pid %d) is still running: stop it "
                                "(Ctrl-C) or let it finish" % (run_id, pid))
    if not lau.get("scratch") or not lau.get("arm_token"):
        raise common.UsageError("--resume %s: its manifest does not say where its nodes keep "
                                "their files (a launcher older than --resume)" % run_id)
    return man, rundir


class Resumer(Launcher):
    """The launcher of a lost run, from its manifest: main() finishes it."""

    def __init__(self, man, rundir, parse_args, verbose=False):
        argv = [a for a in man.get("argv") or [] if isinstance(a, str)][1:]
        args = parse_args(argv)
        args.run_id = man["run_id"]
        args.dry_run = False
        args.verbose = verbose or args.verbose
        Launcher.__init__(self, args)
        self.man = man
        self.rundir = rundir

    def main(self):
        plan = self.plan
        plan.setup()
        plan.results, plan.rundir = os.path.dirname(self.rundir), self.rundir
        plan.scratch = self.man["launcher"]["scratch"]
        plan.arm_token = self.man["launcher"]["arm_token"]
        self.manifest = Manifest(plan)
        self.manifest.doc = self.man
        self.rounds = Rounds(plan, self.manifest, self.args.verbose)
        self.rounds.ident.update(self.man["launcher"].get("idents") or {})
        self.rounds.incoming_made = os.path.isdir(os.path.join(plan.rundir, "incoming"))
        signal.signal(signal.SIGINT, self.rounds.on_signal)
        signal.signal(signal.SIGTERM, self.rounds.on_signal)
        lost_at = time.time()
        common.say("resuming run %s: its launcher was lost; finishing it (results in %s)"
                   % (plan.run_id, plan.rundir))
        for group in self.unfinished():
            self.finish_group(group)
        self.not_run()
        self.scratch_cleanup()
        self.manifest.doc["resumed"] = {"at": round(lost_at, 6), "pid": os.getpid(),
                                        "host": socket.gethostname()}
        self.manifest.finish("its launcher was lost; resumed at %s" % common.utc(lost_at))
        return self.finish(None)

    def unfinished(self):
        """The run records of the parts that were launched and never recorded as ended,
        grouped by the arm round that launched them together (their state name)."""
        groups = {}
        for rnd in self.manifest.doc["rounds"]:
            if rnd.get("kind") == "run" and "duration_s" not in rnd:
                groups.setdefault(rnd.get("state") or rnd.get("part"), []).append(rnd)
        return list(groups.values())

    def finish_group(self, rnds):
        """Parts launched together: what still runs stopped (armed: `stagebench stop` at their
        state), each node's final state read, the summaries gathered, the records ended."""
        plan, rounds = self.plan, self.rounds
        first = rnds[0]
        nodes = [n for n in nodeset_expand(first["nodes"])
                 if rounds.name_of(n) not in (first.get("failed") or {})]
        name = first["part"] if len(rnds) == 1 else first["test"]
        rep = int(first["rep"])
        res, dt = {}, 0.0
        if nodes and plan.armed and first.get("state"):
            t0 = time.time()
            sdir = plan.state_dir(first["state"])
            rounds.run("stop-resume-%s-rep%d" % (name, rep), nodes, plan.at_state_args(
                sdir, "stop", "--signal", "TERM", "--wait", "30", "--kill"),
                plan.poll_timeout + 30, honour_stop=False)
            states, _dt = rounds.run("status-resume-%s-rep%d" % (name, rep), nodes,
                                     plan.at_state_args(sdir, "status", "--format", "json"),
                                     plan.poll_timeout, honour_stop=False)
            res = {n: outcome_of(parse_state(states[n])) for n in nodes}
            dt = time.time() - t0
        elif nodes:  # its nodes were this launcher's processes or srun's tasks: gone with it
            res = {n: outcome_of(None) for n in nodes}
        ungathered = rounds.gather(nodes, name, rep) if nodes and plan.gather == "rcopy" \
            else {}
        self.after_run(rnds, res, dt, name, rep, ungathered)

    def not_run(self):
        """A record for every part of every repetition that was never launched: each node
        skipped, the launcher lost before it."""
        seen = set((r.get("part"), r.get("rep")) for r in self.manifest.doc["rounds"]
                   if r.get("kind") == "run")
        nodes = self.plan.nodes
        why = "not run: the launcher was lost before this part"
        for rep in range(1, self.args.repeat + 1):
            for test, parts in self.plan.tests:
                for part in parts:
                    if (part, rep) in seen:
                        continue
                    self.manifest.add_round({
                        "kind": "run", "what": "%s rep %d" % (part, rep), "test": test,
                        "part": part, "rep": rep, "nodes": self.manifest.doc["rounds"][0].get("nodes") if
                        self.manifest.doc["rounds"] else "", "count": 0, "duration_s": 0.0,
                        "failed": self.rounds.skipped(nodes, why)})
        self.manifest.save()
