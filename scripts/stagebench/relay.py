# SPDX-License-Identifier: MIT
"""Clock offsets through ClusterShell's gateways (--topology): an exchange on every hop.

In tree mode a node's connection is its gateway's, and what the launcher writes reaches every
node of a gateway at once: no conversation with one node, so no exchange from the launcher.
Each gateway therefore measures the nodes beneath it, and the launcher measures each gateway,
both with clocksync's exchange:

    offset(node) = offset(node against its gateway) + offset(gateway against the launcher)

the uncertainties added, and widened by MAX_DRIFT over the time between the two measurements
(the gateway's clock may drift in between). A gateway with gateways beneath it does the same
with them, so a tree of any depth composes hop by hop.

This file runs in two places. The launcher imports it: plan() splits the run's nodes by
first-level gateway, Conversation is the talk object of the round on the gateways, and its
results() composes. On a gateway it runs as a program, sent as data (`PYTHON -c PROGRAM`,
program(): this file and clocksync.py inside, as remote.sh is sent to sh): a gateway needs
only Python and ClusterShell, as tree mode itself does, and always speaks the launcher's own
version of the protocol. So it imports nothing of the package but clocksync, which is
self-contained too, and runs on Python 3.6.

The protocol, one line each way at a time, on the gateway's stdin and stdout:
    gateway   {"schema": "stagebench.relay/1", "ready": true}
    launcher  the gateway's spec (one JSON line, below)
    gateway   the `stagebench clock` header, then each token answered as `stagebench clock`
              does; the launcher closes its stdin after the last
    gateway   one line a node of its subtree: {"schema": ..., "node": N, the clocksync
              entry against the gateway's clock, "via": [the gateways below it]}, or
              {"schema": ..., "node": N, "why": TEXT}; then it exits 0
A spec: {"leaves": [nodes it measures itself], "gateways": {gateway: its spec}, "command": a
node's clock command (a shell line), "relay": this program's command line, "info":
ClusterShell's task info (ssh_path, ssh_options, ssh_user, connect_timeout, fanout),
"timeout": a node's command limit in s, "samples": exchanges a node}.
"""
import json
import math
import os
import re
import select
import socket
import sys
import time

if __package__:
    from . import clocksync
else:  # a program on a gateway: program()'s loader made clocksync first
    import clocksync

RELAY_SCHEMA = "stagebench.relay/1"
MARGIN_S = 30.0  # a subtree's bound past what its waves of per-node limits allow
SPEC_WAIT_S = 60.0  # a gateway waits this long for its spec and for each token, then ends
_SPEC_MAX = 16 << 20  # bytes of a spec line a gateway reads at most
_TOKEN = re.compile(br"^[A-Za-z0-9]{1,32}\Z")  # as `stagebench clock` takes them


# ---------------------------------------------------------------------------------------------
# The launcher's side: which gateway measures which nodes


def plan(tree, nodes):
    """The run's nodes split by first-level gateway of ClusterShell's propagation tree (a
    TopologyTree rooted at this host): (the nodes reached directly, [...], {gateway: its spec's
    leaves and gateways}). Each group of gateways shares its nodes in contiguous runs, as
    ClusterShell's router shares them; a gateway's gateways take their own subtrees."""
    wanted = set(nodes)
    specs = {}
    for group in tree.root.children():
        for g, spec in _group_specs(group, wanted).items():
            specs[g] = spec
    reached = set()
    for spec in specs.values():
        reached.update(targets(spec))
    return [n for n in nodes if n not in reached], specs


def _group_specs(group, wanted):
    """{gateway: spec} for the gateways of one topology group and the wanted nodes beneath
    them; the gateways without any are left out."""
    gws = list(group.nodeset)
    specs = dict((g, {"leaves": [], "gateways": {}, "peers": [p for p in gws if p != g]})
                 for g in gws)
    subs = {}
    for child in group.children():
        if child.children():
            subs.update(_group_specs(child, wanted))
    _share(specs, gws, [n for child in group.children() for n in child.nodeset if n in wanted],
           subs)
    return dict((g, s) for g, s in specs.items() if s["leaves"] or s["gateways"])


def _share(specs, gws, leaves, subs):
    """leaves in contiguous runs and the gateways below (subs: {gateway: spec}) in turn among
    the specs of gws."""
    per = int(math.ceil(len(leaves) / float(len(gws)))) if leaves else 0
    for i, g in enumerate(gws):
        specs[g]["leaves"] += leaves[i * per:(i + 1) * per]
    for k, sub in enumerate(sorted(subs)):
        specs[gws[k % len(gws)]]["gateways"][sub] = subs[sub]


def reassign(specs, dead):
    """What the dead gateways of specs were to measure, shared among the live gateways of
    their groups (their peers): {live gateway: a spec of what it takes over}. The targets of a
    gateway with no live peer are left: their why is their gateway's."""
    out = {}
    for g in sorted(dead):
        spec = specs.get(g)
        live = [p for p in spec.get("peers", []) if p not in dead] if spec else []
        if live:
            for p in live:
                out.setdefault(p, dict(spec, leaves=[], gateways={}, peers=[]))
            _share(out, live, spec["leaves"], spec["gateways"])
    return dict((p, s) for p, s in out.items() if s["leaves"] or s["gateways"])


def targets(spec):
    """The nodes measured through spec: its leaves and its gateways' targets."""
    out = list(spec["leaves"])
    for sub in spec["gateways"].values():
        out += targets(sub)
    return out


def _gateways_below(spec):
    out = set(spec["gateways"])
    for sub in spec["gateways"].values():
        out |= _gateways_below(sub)
    return out


def complete(spec, common):
    """spec with the settings every hop shares (command, relay, info, timeout, samples),
    down to its gateways' specs."""
    out = dict(common)
    out["leaves"] = list(spec["leaves"])
    out["peers"] = list(spec.get("peers", []))
    out["gateways"] = dict((g, complete(s, common)) for g, s in spec["gateways"].items())
    return out


def bound(spec):
    """How long measuring spec's subtree may take: its own connections' waves at the fan-out,
    each within its own limit (connection, then command), the slowest gateway's subtree after
    them, and a margin."""
    info = spec.get("info") or {}
    fan = max(1, int(info.get("fanout") or 64))
    per = float(info.get("connect_timeout") or 10.0) + float(spec.get("timeout") or 30.0)
    kids = len(spec["leaves"]) + len(spec["gateways"])
    sub = max([bound(s) for s in spec["gateways"].values()] or [0.0])
    return math.ceil(kids / float(fan)) * per + sub + MARGIN_S


_program = []


def program():
    """This relay as a program for `PYTHON -c`: clocksync.py and this file, as data."""
    if not _program:
        srcs = []
        for path in (clocksync.__file__, __file__):
            with open(path) as f:
                srcs.append(f.read())
        _program.append(_BOOT % (srcs[0], srcs[1]))
    return _program[0]


def shown(args):
    """args as the dry run and --verbose print them: the program named by its file in angle
    brackets, not written out in full."""
    return ["<%s>" % os.path.abspath(__file__) if a == program() else a for a in args]


_BOOT = """import sys, types
def _load(name, src):
    m = types.ModuleType(name)
    sys.modules[name] = m
    exec(compile(src, "<stagebench %%s>" %% name, "exec"), m.__dict__)
    return m
_load("clocksync", %r)
sys.exit(_load("stagebench_relay", %r).serve())
"""


# ---------------------------------------------------------------------------------------------
# Both sides: the talk of a round on leaves and gateways, and what it measured


class Conversation(object):
    """clocksync.Exchange's on_line contract for a round whose nodes are leaves (`stagebench
    clock`: an exchange) and gateways (this program: its spec sent when it is ready, then an
    exchange, then its subtree's lines kept)."""

    EOF = clocksync.Exchange.EOF

    def __init__(self, specs, samples):
        self.specs = specs  # {gateway: its spec}; every other node of the round is a leaf
        self.ex = clocksync.Exchange(samples)
        self.lines = {}  # gateway -> the records of its subtree it printed
        self.said = {}  # gateway -> why its subtree was not measured, in its own words
        self.dead = []  # the gateways results() found unmeasured: their subtrees too

    def on_line(self, node, line, recv_ns):
        spec = self.specs.get(node)
        if spec is not None and line.startswith("{") and RELAY_SCHEMA in line:
            try:
                rec = json.loads(line)
            except ValueError:
                rec = None
            if isinstance(rec, dict) and rec.get("schema") == RELAY_SCHEMA:
                if rec.get("ready") is True:
                    return (json.dumps(spec, separators=(",", ":")) + "\n").encode("ascii")
                if node in self.ex.header:
                    self.lines.setdefault(node, []).append(rec)
                return None
        return self.ex.on_line(node, line, recv_ns)

    def results(self, nodes, cost_s, measured_at):
        """({node: entry}, {node: why not measured}) of every node measured through the
        round on nodes: its leaves, and each gateway's subtree composed with the gateway's own
        offset (a record of a node outside a gateway's subtree, or one that is not a number
        where a number goes, is refused)."""
        got, why = self.ex.results(nodes, cost_s, measured_at)
        for g, spec in self.specs.items():
            mine = targets(spec)
            gw, gw_why = got.pop(g, None), why.pop(g, None)
            if gw is None:
                self.dead.append(g)
            vias = _gateways_below(spec)
            recs = {}
            for rec in self.lines.get(g, []):
                n = rec.get("node")
                if n in mine and n not in recs:
                    recs[n] = rec
            for n in mine:
                rec = recs.get(n)
                if gw is None:
                    why[n] = "its gateway %s: %s" % (g, self.said.get(g) or gw_why or
                                                      "not measured")
                elif rec is None:
                    why[n] = "its gateway %s said nothing of it" % g
                elif isinstance(rec.get("why"), str):
                    why[n] = "through %s: %s" % (g, rec["why"][:300])
                elif not _entry_ok(rec, vias):
                    why[n] = "its gateway %s sent a record that is not an offset" % g
                else:
                    got[n] = compose(g, gw, rec)
        return got, why


def measure_all(leaves, specs, run, samples, cost_s):
    """Measure leaves (an exchange each) and specs' gateways (this relay each), then once more
    the targets of the gateways that could not be measured through their live peers
    (reassign). run(leaves, specs, conv) runs the round or rounds, conv (a Conversation) their
    talk, and returns {node: why it failed in its own words} for the leaves and gateways
    that failed. Returns ({node: entry}, {node: why not measured}) for every target."""
    conv = Conversation(specs, samples)
    failed = run(leaves, specs, conv)
    conv.said.update((g, w) for g, w in failed.items() if g in specs)
    got, why = conv.results(list(leaves) + list(specs), cost_s, time.time())
    for n in leaves:
        if n in why and failed.get(n):
            why[n] = failed[n]
    retry = reassign(specs, conv.dead)
    if retry:
        again = Conversation(retry, samples)
        again.said.update((g, w) for g, w in run([], retry, again).items() if g in retry)
        got2, why2 = again.results(list(retry), cost_s, time.time())
        for n in got2:
            got[n] = got2[n]
            why.pop(n, None)
        for n, w in why2.items():
            if n in why:
                why[n] = "%s; then %s" % (why[n], w)
    return got, why


def _number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and \
        math.isfinite(x)


def _entry_ok(rec, vias):
    if not all(_number(rec.get(k)) for k in ("offset_s", "uncertainty_s", "rtt_s",
                                             "measured_at")):
        return False
    if rec["uncertainty_s"] < 0 or abs(rec["offset_s"]) > 1e7 or \
            rec["uncertainty_s"] > 1e7 or not 0 < rec["measured_at"] < 1e11:
        return False
    via = rec.get("via", [])
    return isinstance(via, list) and all(v in vias for v in via)


def compose(gateway, gw, rec):
    """A node's entry against this host's clock, from its record against its gateway's clock
    (rec) and the gateway's entry against this host's (gw): the offsets added; the
    uncertainties added and widened by MAX_DRIFT over the time between the two measurements;
    the instant in this host's time; the gateways it was measured through (via)."""
    at = rec["measured_at"] - gw["offset_s"]
    unc = rec["uncertainty_s"] + gw["uncertainty_s"] + \
        clocksync.MAX_DRIFT * abs(at - gw["measured_at"])
    e = clocksync.entry(rec["offset_s"] + gw["offset_s"], rec["rtt_s"], 0.0, rec, at,
                        rec.get("samples") if isinstance(rec.get("samples"), int) else 0)
    e["uncertainty_s"] = round(unc, 9)
    e["via"] = [gateway] + list(rec.get("via", []))
    return e


# ---------------------------------------------------------------------------------------------
# The gateway's side: the program


def _write(obj_or_text):
    text = obj_or_text if isinstance(obj_or_text, str) else \
        json.dumps(obj_or_text, separators=(",", ":"))
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


class _Lines(object):
    """Lines of a file descriptor read as they come, each waited for at most wait_s: the
    launcher writes one and waits for the answer, so nothing may sit in a buffer unseen."""

    def __init__(self, fd):
        self.fd = fd
        self.buf = b""
        self.eof = False

    def next(self, wait_s, limit):
        """The next line (bytes, without its newline), None at the end; raises OSError when
        nothing came within wait_s or the line is longer than limit."""
        end = time.monotonic() + wait_s
        while b"\n" not in self.buf and not self.eof:
            if len(self.buf) > limit:
                raise OSError("a line of more than %d bytes on stdin" % limit)
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise OSError("nothing on stdin within %g s" % wait_s)
            chunk = os.read(self.fd, 65536)
            self.buf += chunk
            self.eof = not chunk
        if b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            return line
        line, self.buf = self.buf, b""
        return line or None


def serve():
    """The program on a gateway: ready, its spec, its own clock exchange, then its subtree's
    records. Exit 0; 2 when its spec or a token is not what the protocol says; 3 when the
    launcher went silent."""
    stdin = _Lines(sys.stdin.fileno())
    _write({"schema": RELAY_SCHEMA, "ready": True})
    try:
        line = stdin.next(SPEC_WAIT_S, _SPEC_MAX)
        spec = json.loads(line.decode("utf-8")) if line else None
    except OSError as e:
        sys.stderr.write("stagebench relay: error: %s\n" % e)
        return 3
    except ValueError:
        spec = None
    if not isinstance(spec, dict) or not isinstance(spec.get("leaves"), list) or \
            not isinstance(spec.get("gateways"), dict):
        sys.stderr.write("stagebench relay: error: no spec on stdin\n")
        return 2
    _write({"schema": clocksync.CLOCK_SCHEMA, "node": socket.gethostname(),
            "ntp_synchronized": None, "maxerror_us": None, "esterror_us": None,
            "relay": True})
    while True:
        try:
            token = stdin.next(SPEC_WAIT_S, 64)
        except OSError as e:
            sys.stderr.write("stagebench relay: error: %s\n" % e)
            return 3
        if token is None:
            break
        if not _TOKEN.match(token):
            sys.stderr.write("stagebench relay: error: a malformed token\n")
            return 2
        _write("%s %d" % (token.decode("ascii"), clocksync.now_ns()))
    try:
        records = measure(spec)
    except Exception as e:  # one line for the launcher's reason, not a traceback
        sys.stderr.write("stagebench relay: error: %s: %s\n" % (type(e).__name__, e))
        return 1
    for rec in records:
        _write(rec)
    return 0


def measure(spec):
    """Measure spec's leaves and gateways from here, through ClusterShell (a task a round):
    a record a node of its subtree (the schema, the node, then its entry against this clock
    or why not)."""
    info = spec.get("info") or {}
    limit = float(info.get("connect_timeout") or 10.0) + float(spec.get("timeout") or 30.0)
    samples = int(spec.get("samples") or clocksync.SAMPLES)

    def run(leaves, specs, conv):
        return _task_round(info, [(spec.get("command"), leaves, limit),
                                  (spec.get("relay"), list(specs), max(
                                      [bound(s) for s in specs.values()] or [0.0]))], conv)

    got, why = measure_all(list(spec["leaves"]), spec["gateways"], run, samples,
                           clocksync.read_cost_s())
    out = []
    for n in targets(spec):
        rec = {"schema": RELAY_SCHEMA, "node": n}
        if n in got:
            rec.update(got[n])
        else:
            rec["why"] = why.get(n, "not measured")
        out.append(rec)
    return out


def _task_round(info, commands, conv):
    """One ClusterShell task with a worker for each (shell line, nodes, time limit) of
    commands, conv answering every node on its stdin: {node: why it failed} (its exit status
    and last error line, its time limit, or ClusterShell's error)."""
    from ClusterShell.Event import EventHandler
    from ClusterShell.NodeSet import NodeSet
    from ClusterShell.Task import task_self

    state = {}  # node -> [exit status, timed out, last stderr line]

    class Handler(EventHandler):
        def ev_read(self, worker, node, sname, msg):
            text = msg.decode("utf-8", "replace")
            if sname == "stderr":
                state.setdefault(node, [None, False, ""])[2] = text[:300]
                return
            reply = conv.on_line(node, text, clocksync.now_ns())
            if reply is None:
                return
            clients = getattr(worker, "_relay_clients", None)
            if clients is None:
                clients = dict((c.key, c) for c in worker._engine_clients())
                worker._relay_clients = clients
            client = clients.get(node)
            if client is None:
                return
            if reply is conv.EOF:
                client._set_write_eof(worker.SNAME_STDIN)
            else:
                client._write(worker.SNAME_STDIN, reply)

        def ev_hup(self, worker, node, rc):
            state.setdefault(node, [None, False, ""])[0] = rc

        def ev_close(self, worker, timedout):
            if timedout:
                for node in worker.iter_keys_timeout():
                    state.setdefault(node, [None, False, ""])[1] = True

    nodes = [n for _c, ns, _l in commands for n in ns]
    try:
        task = task_self()
        for k, v in info.items():
            task.set_info(k, v)
        handler = Handler()
        for command, ns, limit in commands:
            if ns:
                task.shell(command, nodes=NodeSet.fromlist(ns), handler=handler,
                           timeout=limit, stderr=True, stdin=True)
        task.resume()
    except Exception as e:  # ClusterShell's errors have no common base
        return dict((n, "%s: %s" % (type(e).__name__, e)) for n in nodes)
    failed = {}
    for n in nodes:
        rc, timedout, last = state.get(n, [None, False, ""])
        if timedout:
            failed[n] = "no answer within its limit"
        elif rc not in (None, 0):
            failed[n] = "exit %d%s" % (rc, (": " + last) if last else "")
    return failed


if __name__ == "__main__":
    sys.exit(serve())
