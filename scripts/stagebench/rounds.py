# SPDX-License-Identifier: MIT
"""The launcher's rounds: one command on a set of nodes through the engine, never hanging (the
engine's own time limit, then the launcher's, then a sweep of what was left), a stop signal
passed on to the nodes; each node's outcome classified (ok, failed, timeout, unreachable,
interrupted) and recorded; an armed part armed, polled until every node is final, and stopped
on a signal or past its time; the summaries copied back."""
import json
import math
import os
import re
import shlex
import signal
import time

from . import clocksync
from . import common
from . import files
from . import procs
from . import relay
from . import remote
from .engines import NO_ROUTE, FileSink, Outcome
from .nodes import nodeset_fold

MESSAGE_LINES = 10  # distinct error lines said of a round; the rest counted
FINAL = ("done", "failed", "interrupted", "lost", "orphaned", "killed")
START_MISSED = "start_missed"  # the binary's reason of a start it could not meet
UNANSWERED = "unanswered"  # an armed node whose status rounds got no state from it
BUSY = "busy"  # the binary's reason of a node that another run holds (its node lock)
STATE_SCHEMA = "stagebench.state/1"
# the binary's reasons that name how an armed run ended: its status in the launcher's record
REASON_STATUS = {"lease_expired": "orphaned", "killed": "killed"}
DEAD = ("timeout", "unreachable", UNANSWERED)  # statuses that leave a node out of later rounds


def err_line(lines):
    """The most telling stderr line of a node: stagebench's own error line, else the last."""
    for ln in reversed(lines):
        if "error:" in ln:
            return ln.strip()
    return lines[-1].strip() if lines else ""


_SSH_REASONS = (
    (re.compile(r"timed out during banner exchange|Connection to \S+ port \d+ timed out|"
                r"Connection timed out|Operation timed out", re.I), "connect timeout"),
    (re.compile(r"Connection refused", re.I), "connection refused"),
    (re.compile(r"Could not resolve hostname|Name or service not known|"
                r"Temporary failure in name resolution", re.I), "name not known"),
    (re.compile(r"No route to host|Network is unreachable", re.I), "no route to host"),
    (re.compile(r"Host key verification failed|REMOTE HOST IDENTIFICATION", re.I),
     "host key verification failed"),
    (re.compile(r"Permission denied", re.I), "permission denied"),
    (re.compile(r"Connection (closed|reset) by|kex_exchange_identification", re.I),
     "connection closed by the node"),
)


def unreachable_reason(lines):
    """Why a node's connection failed, in a few words that are the same for every node it
    happened to (so they fold): ssh's message classified, else its last line."""
    for rx, reason in _SSH_REASONS:
        if any(rx.search(ln) for ln in lines):
            return reason
    return err_line(lines) or "exit 255"


def gateway_reasons(lines):
    """'gw[1-2]: connection refused; gw3: name not known' from 'GATEWAY: its last line' lines:
    each gateway's reason classified as a node's, the gateways with the same one folded."""
    by = {}
    for ln in lines:
        gw, _sep, text = ln.partition(": ")
        by.setdefault(unreachable_reason([text]) if text else "no reason given", []).append(gw)
    return "; ".join("%s: %s" % (nodeset_fold(gws), why) for why, gws in
                     sorted(by.items(), key=lambda kv: common.natural_key(kv[1][0])))


INFO_SCHEMAS = ("stagebench.info-brief/1", "stagebench.info/1")


def parse_infos(res):
    """{node: its `stagebench info --format json --compact` object (one line, among what a
    login script printed before it; or a whole stagebench.info/1 document)} of the nodes of a
    round that printed one."""
    infos = {}
    for node, o in res.items():
        info = None
        for line in o.out:
            if line.startswith("{"):
                try:
                    info = json.loads(line)
                except ValueError:
                    info = None
                if isinstance(info, dict) and info.get("schema") in INFO_SCHEMAS:
                    break
                info = None
        if info is None and o.out:  # a whole document over several lines
            try:
                info = json.loads("\n".join(o.out))
            except ValueError:
                info = None
        if isinstance(info, dict) and info.get("schema") in INFO_SCHEMAS:
            infos[node] = info
    return infos


def info_kept(info):
    """Of a node's info, what the launcher's later rounds read (its name, its directory's
    filesystem, its CPUs, its clock): a few fields a node, whatever its cores."""
    fs = info.get("fs") if isinstance(info.get("fs"), dict) else {}
    topo = info.get("topology") if isinstance(info.get("topology"), dict) else {}
    clock = info.get("clock") if isinstance(info.get("clock"), dict) else {}
    return {"node": info.get("node"),
            "fs": {"type": fs.get("type"), "source": fs.get("source")},
            "topology": {"allowed_pus": topo.get("allowed_pus"),
                         "machine_pus": topo.get("machine_pus")},
            "clock": clock}


def parse_state(o):
    """A node's `stagebench status --format json` object from its outcome (its one line, among
    the clock exchange's with --clock), or None."""
    for line in o.out:
        if not line.startswith("{"):
            continue
        try:
            st = json.loads(line)
        except ValueError:
            continue
        if isinstance(st, dict) and st.get("schema") == STATE_SCHEMA:
            return st
    return None


def state_reason(st):
    """The machine reason of an armed run's state (its error's), or None."""
    if not isinstance(st, dict):
        return None
    reason = st.get("reason")
    err = st.get("error")
    if reason is None and isinstance(err, dict):
        reason = err.get("reason")
    return reason if isinstance(reason, str) else None


def classify(o, limit, remote=True, stopping=False):
    """(status, error) of one node's outcome o in a round; status 'ok' when it exited 0.
    limit says what its time limit was; remote: whether exit 255 is ssh's (cannot reach);
    stopping: whether the launcher is stopping the nodes (a signal's exit is an interruption).
    A node the round ended before (its bound, a stop, the engine's error) is not_reached:
    nothing is known of it, it is not taken for unreachable."""
    e = err_line(o.err)
    if o.timeout:
        return "timeout", "no end within %s (hung or too slow): stopped" % limit
    if getattr(o, "aborted", False):
        return "not_reached", "the round ended before this node answered"
    if o.reason == UNANSWERED:
        return UNANSWERED, "its state could not be read: %s" % (e or "no answer")
    if o.reason == BUSY:
        return BUSY, e.replace("stagebench: error: ", "") or "another run holds it"
    if o.reason in REASON_STATUS and o.rc not in (None, 0):
        return REASON_STATUS[o.reason], "exit %d: %s" % (o.rc, e or "no message")
    if o.rc is None or o.rc == 0:
        return "ok", None
    if o.reason == NO_ROUTE:
        return "unreachable", "cannot reach the node: no gateway reached it: %s" % \
            gateway_reasons(o.err)
    if o.rc == 255 and remote:
        return "unreachable", "cannot reach the node: %s" % unreachable_reason(o.err)
    if o.rc in (130, 143) or (stopping and o.rc > 128):
        return "interrupted", "interrupted (exit %d)%s" % (o.rc, ": " + e if e else "")
    return "failed", "exit %d: %s" % (o.rc, e or "no message")


def outcome_of(st):
    """An Outcome from an armed node's final status (None: no final status in time)."""
    o = Outcome()
    if st is None:
        o.timeout = True
    elif st.get("status") == "unanswered":
        o.reason = UNANSWERED
        o.err = [st.get("why") or "its status could not be read"]
    elif st.get("status") == "lost":
        o.rc = 1
        o.err = ["stagebench: error: its stagebench ended without a final state (killed "
                 "with SIGKILL, or the node rebooted)"]
    else:
        code = st.get("exit_code")
        o.rc = code if isinstance(code, int) else 1
        o.reason = state_reason(st)
    return o


def live_round_s(res, answered, t0, dt, engine):
    """What a round took for the nodes that answered it (answered: theirs), as the next rounds,
    which leave the others out, will take: the time to the last of their answers, at most their
    waves times the longest of their own commands. A dead node's connect timeout is not in it.
    dt (the whole round) where the engine does not time each node."""
    ends = [res[n].ended for n in answered if res[n].ended is not None]
    spans = [res[n].ended - res[n].started for n in answered
             if res[n].ended is not None and res[n].started is not None]
    if not ends or not spans:
        return dt
    return max(0.0, min(dt, max(ends) - t0, engine.waves(len(answered)) * max(spans)))


class Rounds:
    """The rounds of one run: plan (launchplan.Plan) says what and where, manifest
    (manifest.Manifest) records them. ident: {launcher's node name: the name the node reports},
    dead: {node: why it is left out of later rounds}, stop_signal: the signal that stops the run
    (None until one came)."""

    def __init__(self, plan, manifest, verbose=False):
        self.plan = plan
        self.manifest = manifest
        self.verbose = verbose
        self.round_no = 0
        self.stop_signal = None
        self.stop_cause = None  # what stopped the run when no signal did (the job's end)
        self.ident = {n: n for n in plan.nodes}
        self.dead = {}
        self.incoming_made = False

    def vprint(self, text):
        if self.verbose:
            common.say(text)

    def name_of(self, node):
        """The name node reports (its summaries' name)."""
        return self.ident.get(node, node)

    def live(self, nodes):
        """nodes but those left out of later rounds."""
        return [n for n in nodes if n not in self.dead]

    # -- stopping

    def on_signal(self, signum, _frame):
        if self.stop_signal is None:
            self.stop_signal = signum
            common.say("%s: stopping every node's stagebench and collecting what arrived"
                       % signal.Signals(signum).name)
        else:
            common.say("%s again: killing what is left" % signal.Signals(signum).name)
            procs.signal_pids(procs.descendants(), signal.SIGKILL)

    def stop_name(self):
        """The stop signal's name as the nodes' commands take it."""
        return "INT" if self.stop_signal == signal.SIGINT else "TERM"

    def forward_stop(self, rnd, nodes, nodes_file, base):
        """Pass the stop signal on to every node process (they write their summaries and
        remove their files); the engine is left to report them. Returns the round that carries
        the signal to remote nodes, if one was needed."""
        engine = self.plan.engine
        if engine.exec_mode:
            procs.signal_pids(procs.descendants(exclude=rnd.pids()), self.stop_signal)
        elif engine.name == "srun":
            rnd.signal(self.stop_signal)
        else:
            # a second connection to each node signals the stagebench whose pid its
            # wrapper recorded in the node-local scratch directory
            return engine.start(nodes, self.plan.stop_args(self.stop_name()), 30,
                                base + ".stop", nodes_file)
        return None

    # -- one round

    def nodes_file(self, nodes, tag):
        path = os.path.join(self.plan.rundir, "logs", "%03d-%s.nodes" % (self.round_no, tag))
        with files.open_new(path) as f:
            f.write("\n".join(nodes) + "\n")
        return path

    def run(self, tag, nodes, args, timeout, honour_stop=True, talk=None, sink=None,
            direct=False):
        """Run args on nodes, each node within its own limit (its connection, then timeout s
        for its command); returns ({node: Outcome}, duration). Never hangs: past the bound of
        the waves the round needs, it is stopped (the nodes it did not reach are not_reached);
        an engine's error ends the round, recorded (engine_errors), never the run. direct:
        from this host, not through --topology's gateways."""
        engine = self.plan.engine
        self.round_no += 1
        nf = self.nodes_file(nodes, tag)
        base = os.path.join(self.plan.rundir, "logs", "%03d-%s" % (self.round_no, tag))
        bound = engine.round_bound(len(nodes), timeout)
        if self.verbose:
            self.vprint("round %s on %s (each node %g s, the round %g s at most): %s" % (
                tag, nodeset_fold(nodes), engine.node_limit(timeout), bound, " ".join(
                    shlex.quote(c) for c in engine.describe(
                        nf, nodes, relay.shown(remote.shown(args)), timeout, direct))))
        t0 = time.time()
        rnd = engine.start(nodes, args, timeout, base, nf, talk=talk, sink=sink, direct=direct)
        self.wait(rnd, tag, nodes, nf, base, bound, honour_stop)
        cleanup = getattr(rnd, "cleanup", None)
        if cleanup is not None:
            cleanup()
        dt = time.time() - t0
        res = rnd.results()
        self.manifest.round_time("%03d-%s" % (self.round_no, tag), len(nodes), t0, dt)
        self.check_job(res)
        why = rnd.error_text()
        if why:
            self.manifest.engine_error("%03d-%s" % (self.round_no, tag), why)
            common.say("warning: %s round: the engine failed: %s; %d node%s not reached" % (
                tag, why, sum(1 for o in res.values() if o.aborted),
                "" if sum(1 for o in res.values() if o.aborted) == 1 else "s"))
        return res, dt

    def check_job(self, res):
        """srun in an allocation: a round in which no node succeeded may mean the job ended
        (scancel, its time limit); then the run stops as on SIGTERM, the cause named, and no
        more rounds go to a job that is gone."""
        engine = self.plan.engine
        if engine.name != "srun" or self.stop_signal or not res or \
                any(o.rc == 0 for o in res.values()):
            return
        ended = engine.job_ended()
        if ended:
            self.stop_signal = signal.SIGTERM
            self.stop_cause = ended
            common.say("error: %s: stopping the run with what arrived" % ended)

    def wait(self, rnd, tag, nodes, nodes_file, base, bound, honour_stop):
        """Wait for a round's end, passing a stop signal on; past its bound (or 30 s after a
        stop signal was passed on), stop it through its engine. Returns whether it was
        stopped so."""
        deadline = time.monotonic() + bound
        stop_seen = False
        stopper = None
        killed = False
        while not rnd.wait(0.2):
            if honour_stop and self.stop_signal and not stop_seen:
                stop_seen = True
                stopper = self.forward_stop(rnd, nodes, nodes_file, base)
                deadline = min(deadline, time.monotonic() + 30.0)
            if time.monotonic() > deadline:
                killed = True
                common.say("warning: %s round: not ended within its bound (%.0f s: %d wave%s "
                           "of %s node%s, each within its own limit): stopping it" % (
                               tag, bound, self.plan.engine.waves(len(nodes)),
                               "" if self.plan.engine.waves(len(nodes)) == 1 else "s",
                               self.plan.engine.fan(nodes),
                               "" if self.plan.engine.fan(nodes) == "1" else "s")
                           if not stop_seen else "warning: %s round: not ended 30 s after the "
                           "stop: stopping it" % tag)
                rnd.kill()
                break
        if stopper is not None and not stopper.wait(40.0):
            stopper.kill()
        if stopper is not None:
            stopper.results()
        return killed

    # -- what a round's nodes did

    def classify(self, o, limit):
        """(status, error) of one node in a round; status 'ok' when it exited 0."""
        return classify(o, limit, self.plan.engine.remote, bool(self.stop_signal))

    def say_errors(self, res, limit):
        """Why the nodes of a round failed, as they said it: each distinct first error line
        once with the nodes that printed it (ten lines at most, the rest counted)."""
        by = {}
        for node in sorted(res, key=common.natural_key):
            o = res[node]
            status, error = self.classify(o, limit)
            if status == "ok":
                e = err_line(o.err) or ("printed nothing" if not o.out else None)
                if e is None:
                    continue
                error = e
            elif o.err and not o.timeout and status != "unreachable":
                error = err_line(o.err)
            by.setdefault(common.safe_text(error).replace("\n", " "), []).append(
                self.name_of(node))
        items = sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        for text, nodes in items[:MESSAGE_LINES]:
            common.say("  %s: %s" % (nodeset_fold(nodes), text))
        if len(items) > MESSAGE_LINES:
            rest = [n for _t, ns in items[MESSAGE_LINES:] for n in ns]
            common.say("  and %d more message%s, from %s (see the logs)"
                       % (len(items) - MESSAGE_LINES,
                          "" if len(items) == MESSAGE_LINES + 1 else "s", nodeset_fold(rest)))

    def record_failures(self, rnd, res, limit, summaries=None, ungathered=None):
        """Record in the round every node that did not end well, with the binary's reason
        where it said one; limit says what its time limit was, for the message of a node that
        hung. summaries: the names whose summary arrived, when one was due; ungathered: {name:
        why its summary was not gathered}."""
        failed = {}
        ungathered = ungathered or {}
        for node, o in res.items():
            status, error = self.classify(o, limit)
            ident = self.name_of(node)
            if status in DEAD + ("not_reached",) and summaries is not None and \
                    ident in summaries:
                # the launcher lost sight of it, but its summary arrived and speaks for its
                # part; what went wrong on the way is said, and the node is left out of later
                # rounds as any lost node is
                self.manifest.warn("%s (%s): %s: %s; its summary arrived and counts" % (
                    ident, rnd["what"], status, error))
                if status in DEAD and node not in self.dead:
                    self.dead[node] = "%s in %s" % (status, rnd["what"])
                continue
            if status == "ok":
                if summaries is not None and ident not in summaries and not self.stop_signal:
                    failed[ident] = {"status": "failed", "rc": 0, "error": (
                        "exit 0 but its summary was not gathered: %s" % ungathered[ident]
                        if ident in ungathered else "exit 0 but no summary arrived")}
                elif summaries is not None and ident not in summaries:
                    failed[ident] = {"status": "interrupted", "rc": o.rc,
                                     "error": "interrupted before it wrote a summary"}
                continue
            failed[ident] = {"status": status, "rc": o.rc, "error": error}
            if status == "unreachable" and o.err:
                failed[ident]["detail"] = common.safe_text(err_line(o.err))
            if o.reason is not None:
                failed[ident]["reason"] = o.reason
            if status in DEAD and node not in self.dead:
                self.dead[node] = "%s in %s" % (status, rnd["what"])
        rnd.setdefault("failed", {}).update(failed)
        return failed

    def skipped(self, nodes, why):
        return {self.name_of(n): {"status": "skipped", "rc": None, "error": why}
                for n in nodes}

    # -- armed parts: arm, wait, collect the status, stop on a signal

    def armed(self, rnds, name, parts, rep, nodes, start_at):
        """Arm parts (name: the summaries' name) on nodes for start_at (one short connection a
        node, at the fan-out), then collect each node's status until it is final, stopping the
        nodes on a signal or past --timeout. An arm round that ended after the start (the
        nodes' set-up took longer than the lead: it is not in the info round) is done once
        more, every node, for a start a new lead ahead, the nodes it did arm stopped first.
        Returns ({node: Outcome}, duration) as a run round would."""
        t0 = time.time()
        tag = "%s-rep%d" % (name, rep)
        res, sdir, start_at = self.arm(rnds, tag, name, parts, rep, nodes, start_at)
        out, pending = {}, []
        for n in nodes:
            o = res[n]
            if o.rc in (0, None) and not o.timeout and not o.aborted:  # pdsh: no news of 0
                pending.append(n)
            else:
                out[n] = o
        if not pending:
            common.say("error: %s: no node could be armed:" % tag)
            self.say_errors(res, "the arm round's %g s" % max(self.plan.lead.s, 10.0))
        interval = self.plan.interval if len(parts) > 1 else 0.0
        status_of = self.collect_status(tag, pending, sdir, start_at,
                                        start_at + (len(parts) - 1) * interval, parts[0], rep,
                                        rnds[0]["lease_s"])
        for n in pending:
            out[n] = outcome_of(status_of.get(n))
        bad = [n for n in pending if out[n].rc not in (0, None) and not out[n].timeout]
        if bad:  # their error lines, from the armed process's log
            tails, _dt = self.run("log-" + tag, bad, self.plan.at_state_args(sdir),
                                  self.plan.poll_timeout, honour_stop=False)
            for n in bad:
                lines = [ln for ln in tails[n].out if ln.strip()]
                if lines:
                    out[n].err = lines
        return out, time.time() - t0

    def arm(self, rnds, tag, name, parts, rep, nodes, start_at):
        """The arm round, once more for a new start when it ended after the start and nodes
        missed it (their armed run's reason: start_missed). Returns ({node: Outcome} of the
        last arm round, its state directory, its start instant)."""
        plan = self.plan
        interval = plan.interval if len(parts) > 1 else 0.0
        attempt = 1
        while True:
            sname = plan.state_name(name, rep) + ("" if attempt == 1 else "-%d" % attempt)
            sdir = plan.state_dir(sname)
            lease = plan.lease_for(plan.lead.s)
            for r in rnds:
                r["state"] = sname
                r["lease_s"] = lease
            self.manifest.save()
            t0 = time.time()
            talk = clocksync.Exchange(clocksync.SAMPLES) if plan.engine.can_talk else None
            res, arm_dt = self.run("arm-" + tag, nodes,
                                   plan.arm_args(name, parts, rep, start_at, sname,
                                                 force=attempt > 1, lease=lease),
                                   max(plan.lead.s, 10.0), honour_stop=False, talk=talk)
            if talk is not None:  # the offsets next to the start, from the arm round
                armed_ok = [n for n in nodes if res[n].rc == 0]
                got, why = talk.results(armed_ok, clocksync.read_cost_s(), time.time())
                self.manifest.measurement({"when": "before", "part": parts[0], "rep": rep},
                                          got, why, self.name_of, at=t0)
            self.failure_reasons(tag, nodes, res, sdir)
            live_s = live_round_s(res, [n for n in nodes if res[n].rc in (0, None) and not
                                        res[n].timeout and not res[n].aborted],
                                  t0, arm_dt, plan.engine)
            for r in rnds:
                r["arm_s"] = round(arm_dt, 3)
                r["arm_live_s"] = round(live_s, 3)
            self.manifest.arm_round(arm_dt)
            self.manifest.save()  # armed: what --resume needs of these nodes is on disk
            late = time.time() > start_at
            if plan.lead.cover(live_s, late):
                common.say("%sarm round of %s took %.2f s%s: lead now %.1f s" % (
                    "warning: " if late else "", tag, live_s, " (the round %.2f s)" % arm_dt
                    if arm_dt > live_s + 0.5 else "", plan.lead.s))
            if attempt > 1 or not late or self.stop_signal:
                break
            missed = [n for n in nodes if res[n].reason == START_MISSED]
            if not missed:
                break
            armed = [n for n in nodes if res[n].rc in (0, None) and not res[n].timeout and
                     not res[n].aborted]
            common.say("warning: %s: the arm round ended after the start (%d node%s missed "
                       "it): arming every node again, %.1f s ahead" % (
                           tag, len(missed), "" if len(missed) == 1 else "s", plan.lead.s))
            if armed:
                self.run("stop-" + tag, armed, plan.at_state_args(
                    sdir, "stop", "--signal", "TERM", "--wait", "30", "--kill"),
                    plan.poll_timeout + 30, honour_stop=False)
            start_at = time.time() + plan.lead.s
            for k, r in enumerate(rnds):
                r["start_at"] = round(start_at + k * interval, 6)
                r["lead_s"] = round(plan.lead.s, 3)
                r["armed_again"] = True
            self.manifest.save()
            attempt += 1
        return res, sdir, start_at

    def failure_reasons(self, tag, nodes, res, sdir):
        """The machine reason of each node that failed to arm (start_missed, busy, no_space...),
        from its armed run's state, read in one status round, into its outcome."""
        failed = [n for n in nodes if res[n].rc not in (0, None) and not res[n].timeout and
                  not res[n].aborted and res[n].rc != 255]
        if not failed:
            return
        states, _dt = self.run("why-" + tag, failed, self.plan.at_state_args(
            sdir, "status", "--format", "json"), self.plan.poll_timeout, honour_stop=False)
        for n in failed:
            reason = state_reason(parse_state(states[n]))
            if reason is not None:
                res[n].reason = reason

    def collect_status(self, tag, pending, sdir, start_at, last_start, part, rep, lease):
        """Poll `stagebench status` on the armed nodes until each is final: from the start,
        then at a pace the status round's own duration sets (at least 1 s, at most 30 s apart
        late in a long part). A signal stops them (`stagebench stop`, the same signal); past
        --timeout after the start, SIGTERM. Returns {node: status object, or None}."""
        poll = StatusPoll(self, tag, pending, sdir, part, rep)
        next_poll = start_at + 0.5
        deadline = last_start + self.plan.timeout
        while poll.pending:
            if poll.stop_due(deadline):
                next_poll = 0.0
            if time.time() < next_poll:
                time.sleep(min(0.2, max(0.0, next_poll - time.time())))
                continue
            polled, pdt = poll.once()
            if poll.stopped_long_ago():
                break
            # the next poll after twice what it should cost (the waves of the nodes still
            # pending, at the fan-out), at least 1 s and at most 30 s apart, and often enough
            # that each node's lease is renewed three times within its length
            fan = int(self.plan.engine.fan(polled))
            est = pdt * math.ceil(len(poll.pending) / float(fan)) / math.ceil(len(polled) /
                                                                                float(fan))
            most = min(30.0, max(1.0, lease / 3.0 - est))
            next_poll = time.time() + max(1.0, min(most, 2.0 * est))
        return poll.got

    # -- the summaries copied back

    def gather(self, nodes, part, rep):
        """Each node's summary of part's repetition rep, printed by the node itself from its
        scratch directory (remote.sh send: the file its own name names) and written as it
        arrives into incoming/, then moved into the run directory under the name the node
        reports, once its node field says that name. Returns {name: why} of the nodes whose
        summary did not arrive so."""
        plan = self.plan
        suffix = "%s.rep%d.json" % (part, rep)
        incoming = os.path.join(plan.rundir, "incoming")
        if not self.incoming_made:
            files.make_dir(incoming)  # fresh: fails if anything is at its name
            self.incoming_made = True
        files.check_dir(incoming, private=True)
        sink = FileSink(incoming, "." + suffix)
        res, _dt = self.run("gather-%s-rep%d" % (part, rep), nodes,
                            plan.send_args(suffix), plan.poll_timeout, honour_stop=False,
                            sink=sink)
        paths = sink.close()
        why = {}
        for n in nodes:
            ident = self.name_of(n)
            path = paths.get(n)
            status, error = self.classify(res[n], "--poll-timeout %g s" % plan.poll_timeout)
            if n in sink.errors or path is None or status != "ok":
                why[ident] = sink.errors.get(n) or err_line(res[n].err) or error or \
                    "it sent nothing"
            else:
                named = summary_node(path)
                dst = os.path.join(plan.rundir, common.summary_name(ident, part, rep))
                if named != ident:
                    why[ident] = ("the summary it sent names node %s, not %s: not taken"
                                  % (common.safe_text(repr(named)), ident))
                elif os.path.lexists(dst):
                    why[ident] = "a summary of %s is in the run directory already" % ident
                else:
                    os.rename(path, dst)
                    continue
            if path is not None and os.path.lexists(path):
                os.unlink(path)
        return why


_NODE_FIELD = re.compile(rb'"node"\s*:\s*("(?:[^"\\]|\\.)*")')


def summary_node(path):
    """The node field of the summary at path (read from its first 8 KiB, where the binary
    writes it), or None."""
    try:
        with open(path, "rb") as f:
            head = f.read(8192)
        m = _NODE_FIELD.search(head)
        return json.loads(m.group(1).decode("utf-8")) if m else None
    except (OSError, ValueError, UnicodeDecodeError):
        return None


class StatusPoll:
    """The status rounds of one armed part (part: the first of those armed together, rep):
    what each node's state is, its lease renewed, its clock offset measured where the engine
    can talk to it; a stop sent once."""

    def __init__(self, rounds, tag, pending, sdir, part, rep):
        self.rounds = rounds
        self.part = part
        self.rep = rep
        self.tag = tag
        self.sdir = sdir
        self.pending = list(pending)
        self.got = {}
        self.unanswered = {}
        self.stop_sent = None
        self.stop_at = None
        self.polls = 0

    def stop_due(self, deadline):
        """Stop the pending nodes once: on the launcher's signal (the same), or past the
        deadline (SIGTERM). True when a stop was sent now."""
        rounds = self.rounds
        if self.stop_sent is not None:
            return False
        if rounds.stop_signal:
            sig = rounds.stop_name()
        elif time.time() > deadline:
            sig = "TERM"
            common.say("warning: %s: %d node%s not done %g s after the start: stopping them"
                       % (self.tag, len(self.pending), "" if len(self.pending) == 1 else "s",
                          rounds.plan.timeout))
        else:
            return False
        self.stop_sent = sig
        self.stop_at = time.time()
        rounds.run("stop-" + self.tag, self.pending, rounds.plan.at_state_args(
            self.sdir, "stop", "--signal", sig, "--wait", "30", "--kill"),
            rounds.plan.poll_timeout + 30, honour_stop=False)
        return True

    def once(self):
        """One status round on the pending nodes: the final ones taken out, a node whose state
        could not be read three times (twice once stopped) given up. Returns (the nodes
        polled, what the round took for the nodes that answered: the pace of the next, which
        a node stopped by its own limit does not slow)."""
        self.polls += 1
        polled = list(self.pending)
        plan = self.rounds.plan
        talk = clocksync.Exchange(clocksync.SAMPLES, before=(STATE_SCHEMA,)) \
            if plan.engine.can_talk else None
        t0 = time.time()
        res, pdt = self.rounds.run("status-%s-%d" % (self.tag, self.polls), polled,
                                   plan.status_args(self.sdir), plan.poll_timeout,
                                   honour_stop=False, talk=talk)
        if talk is not None:
            got, why = talk.results(polled, clocksync.read_cost_s(), time.time())
            self.rounds.manifest.measurement(
                {"when": "status", "part": self.part, "rep": self.rep, "round": self.polls},
                got, {n: w for n, w in why.items() if not res[n].aborted},
                self.rounds.name_of, at=t0)
        for n in polled:
            st = parse_state(res[n])
            if st is not None and st.get("status") in FINAL:
                self.got[n] = st
                self.pending.remove(n)
            elif st is None and not res[n].aborted:  # asked, and no state came back
                self.unanswered[n] = self.unanswered.get(n, 0) + 1
                if self.unanswered[n] >= 3 or self.stop_sent is not None and \
                        self.unanswered[n] >= 2:
                    o = res[n]
                    last = "no answer within --poll-timeout %g s" % \
                        self.rounds.plan.poll_timeout if o.timeout else \
                        self.rounds.classify(o, "")[1] or err_line(o.err) or \
                        "no state printed"
                    self.got[n] = {"status": UNANSWERED, "why": "%d status rounds without "
                                   "its state (the last: %s)" % (self.unanswered[n], last)}
                    self.pending.remove(n)
        answered = [n for n in polled if parse_state(res[n]) is not None]
        if not answered:  # every node it asked failed on its own: nothing to pace by
            return polled, 0.0
        return polled, live_round_s(res, answered, t0, pdt, self.rounds.plan.engine)

    def stopped_long_ago(self):
        """Stopped 90 s ago and nodes still pending: given up (no final status in time)."""
        if self.stop_sent is not None and self.pending and time.time() > self.stop_at + 90:
            for n in self.pending:
                self.got[n] = None
            self.pending = []
            return True
        return False
