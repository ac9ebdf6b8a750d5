# SPDX-License-Identifier: MIT
"""The launcher's manifest (RESULTS/<run-id>/manifest.json, stagebench.manifest/2): what was
asked and how it was launched, then, as the run goes, every round, the nodes' names and
servers, the preparers, the clock offsets, the server drops, the warnings and how the run
ended. One writer: everything goes through Manifest, which rewrites the file atomically, with
what the nodes said escaped."""
import hashlib
import json
import math
import os
import socket
import subprocess
import sys
import time

from . import clocksync
from . import common
from . import files
from . import procs


def expected_binary(binary):
    """The binary the launcher expects the nodes to run, by its content: {"path", "sha256"}
    of the local stagebench (--local-stagebench, else the one beside this command), hashed
    here; the collector names a node whose summary's digest differs. None without one."""
    if not binary or binary == "none":
        return None
    h = hashlib.sha256()
    try:
        with open(binary, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    return {"path": os.path.abspath(binary), "sha256": h.hexdigest()}


def local_build(binary):
    """The build id of the stagebench on this machine (its `clock` header), or None."""
    if not binary or binary == "none":
        return None
    try:
        rc, out, _err = procs.run_capture([binary, "clock", "--node", "launcher"], 30)
        head = json.loads(out.splitlines()[0]) if rc == 0 and out else None
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return None
    return head.get("build") if isinstance(head, dict) else None


class Manifest:
    """The manifest of one run: doc is its JSON object, path where it is written."""

    def __init__(self, plan):
        self.path = os.path.join(plan.rundir, common.MANIFEST)
        self.doc = None

    def begin(self, plan):
        """The manifest as the run starts: what was asked and how it is launched; the rounds,
        clocks, servers and preparers are filled in as the run goes. Written at once."""
        a, engine = plan.args, plan.engine
        fan = engine.fan(plan.nodes)
        self.doc = {
            "schema": common.MANIFEST_SCHEMA, "version": plan.catalogue.version,
            "run_id": plan.run_id, "created_at": time.time(), "argv": sys.argv,
            "launcher": {"engine": engine.name, "exec": engine.exec_mode, "gather": plan.gather,
                         "fanout": int(fan), "armed": plan.armed,
                         # what --resume needs to find this launcher and its nodes' files
                         "host": socket.gethostname(), "pid": os.getpid(),
                         "pid_started": procs.start_time(os.getpid()),
                         "scratch": plan.scratch, "arm_token": plan.arm_token},
            "launch": {"fanout": int(fan), "waves": int(math.ceil(len(plan.nodes) /
                                                                  float(fan))),
                       "info_s": None, "arm_s": []},
            "run": {"tests": [t for t, _p in plan.tests],
                    "parts": [p for _t, ps in plan.tests for p in ps],
                    "scale": a.scale, "repeat": a.repeat, "options": plan.run_options()},
            "nodes": list(plan.nodes), "servers": {}, "preparers": {}, "notes": list(a.note),
            "rounds": [], "interrupted": None, "finished_at": None,
            "clock": {"method": "relay" if engine.topology is not None else
                      "exchange" if engine.can_talk else "round",
                      "samples": clocksync.SAMPLES if engine.can_talk or
                      engine.topology is not None else 1,
                      "start": {}, "end": {}, "unmeasured": [], "measurements": []},
            "max_offset_s": plan.max_offset, "require_sync": bool(a.require_sync),
            "server_drop": None if plan.server_drop is None else {
                "command": list(plan.server_drop), "where": "launcher", "runs": []},
            "warnings": [],
            "launcher_version": plan.catalogue.version,
            "launcher_build": local_build(a.local_stagebench or files.find_sibling("stagebench")),
            "expected_binary": expected_binary(plan.check_binary),
        }
        self.save()

    def save(self):
        """The manifest rewritten atomically; what nodes said (errors, mount sources) is kept
        escaped, never raw."""
        if self.doc is not None:
            files.write_json_atomic(self.path, common.safe_json(self.doc))

    def add_round(self, rnd):
        """A round's record (kind, what, nodes, duration, failed...), kept in its order."""
        self.doc["rounds"].append(rnd)

    def info_round(self, names, round_s, live_s, idents=None):
        """After the info round: the nodes by the names they report, what the round took
        (round_s) and what it took for the nodes that answered it (live_s: the lead's base);
        idents: {launcher's name: the name its node reports} where they differ."""
        self.doc["nodes"] = list(names)
        self.doc["launcher"]["idents"] = dict(idents or {})
        self.doc["info_s"] = round(round_s, 3)
        self.doc["launch"]["info_s"] = round(round_s, 3)
        self.doc["launch"]["info_live_s"] = round(live_s, 3)

    def arm_round(self, arm_s):
        """What an arm round took."""
        self.doc["launch"]["arm_s"].append(round(arm_s, 3))

    def servers(self, server_of):
        """{node name: its /stage server}."""
        self.doc["servers"] = dict(server_of)

    def preparers(self, preparer_of):
        """{server: the node name that prepared its replicas}."""
        self.doc["preparers"] = dict(preparer_of)

    def start_offsets(self):
        """{node name: its offset entry} measured before the first part."""
        return self.doc["clock"].get("start") or {}

    def round_time(self, round_name, count, at, seconds):
        """Every round's name, node count, start and duration (launch.rounds), kept in memory
        and written with the manifest's next save: what each kind of round costs at this
        scale."""
        self.doc["launch"].setdefault("rounds", []).append(
            {"round": round_name, "nodes": count, "at": round(at, 3), "s": round(seconds, 3)})

    def engine_error(self, round_name, text):
        """A round that the engine (ClusterShell, pdsh, srun) ended with an error of its own:
        the round's name and the error, kept; the run went on with what answered."""
        self.doc.setdefault("engine_errors", []).append({"round": round_name, "error": text})
        self.save()

    def warn(self, text):
        """A warning of the launcher: said now, and kept for the report."""
        common.say("warning: %s" % text)
        self.doc["warnings"].append(text)

    def clock(self, which, got, why, name_of, cost):
        """The offsets measured at which ("start", before the first part; "end", after the
        last), {node: entry}, and why others were not ({node: why}), by the nodes' names."""
        clock = self.doc["clock"]
        clock["read_cost_s"] = round(cost, 9)
        clock[which] = {name_of(n): e for n, e in got.items()}
        clock["unmeasured" if which == "start" else "unmeasured_end"] = sorted(
            (name_of(n) for n in why), key=common.natural_key)
        clock.setdefault("why_unmeasured", {})[which] = {name_of(n): w for n, w in
                                                         why.items()}
        self.save()

    def measurement(self, next_to, got, why, name_of, at=None, method=None):
        """One measurement of clock offsets (clock.measurements, in the order taken): when it
        was taken (at, default now), what it was next to ({when: before, after or status,
        part, rep, round}), the nodes measured ({name: entry}) and why the others were not."""
        self.doc["clock"].setdefault("measurements", []).append({
            "at": round(time.time() if at is None else at, 6), "next_to": dict(next_to),
            "method": method or self.doc["clock"]["method"],
            "nodes": {name_of(n): e for n, e in got.items()},
            "unmeasured": {name_of(n): w for n, w in why.items()}})
        self.save()

    def server_drop_run(self, run):
        """One run of --server-drop's command: its record, with the command it ran and its
        output as lines (what the report's "ran" rests on, with its exit status and
        duration)."""
        sd = self.doc["server_drop"]
        run = dict(run)
        run.setdefault("command", list(sd["command"]))
        out = run.get("output")
        run.setdefault("output_lines", out.splitlines() if isinstance(out, str) else [])
        sd["runs"].append(run)
        self.save()

    def finish(self, interrupted=None):
        """The run's end: interrupted by which signal (its name), if one came."""
        if interrupted is not None:
            self.doc["interrupted"] = interrupted
        self.doc["finished_at"] = time.time()
        self.save()
