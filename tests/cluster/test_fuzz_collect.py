# SPDX-License-Identifier: MIT
"""Fuzz the collector (issue 13): a seeded, bounded mutation test over real summaries, a real
launcher manifest and a real baseline (a simulated run of 3 nodes, one failing), each mutated
by byte flips, truncation, type swaps, huge numbers, deep nesting, duplicate and deleted keys,
and control characters. Every case goes through the collector's own code in this process: a
summary through read_summary and the report, the manifest through collect and every report
format, the baseline through load_baseline and the regression check. No exception may escape
(a traceback), the JSON report must never hold NaN or Infinity, and what reaches the text
report has no raw control character.

STAGEBENCH_FUZZ_SEED and STAGEBENCH_FUZZ_CASES change the seed and the number of cases per
kind (default 13 and 1500); a failure names the seed and the case to replay."""
import array
import json
import os
import random
import re
import shutil
import tempfile
import time
import unittest

import clustertest as ct

SEED = int(os.environ.get("STAGEBENCH_FUZZ_SEED", "13"))
CASES = int(os.environ.get("STAGEBENCH_FUZZ_CASES", "1500"))
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def setUpModule():
    global BASE, RUN, L, S, collection, model, report, reporttext
    from stagebench import collection, model, report, reporttext
    from stagebench import common as L
    from stagebench import summaries as S
    BASE = tempfile.mkdtemp(prefix="stagebench-fuzz-test-")
    try:
        p = ct.run_script("stagebench-sim", [
            "--nodes", "3", "--servers", "2", "--dir", os.path.join(BASE, "stage"),
            "--results", os.path.join(BASE, "res"), "--stagebench", ct.BINARY, "--scale",
            "tiny", "--run-id", "real", "--no-report", "--fault", "node2=missing-dir",
            "1a", "4a"], timeout=240)
        assert p.returncode == 1, p.stdout + p.stderr
        RUN = os.path.join(BASE, "res", "real")
        p = ct.run_script("stagebench-collect", [
            os.path.join(RUN, n) for n in os.listdir(RUN) if n.startswith("node1.")] +
            ["--save-baseline", os.path.join(BASE, "baseline.json")])
        assert os.path.exists(os.path.join(BASE, "baseline.json")), p.stderr
    except BaseException:
        shutil.rmtree(BASE, True)
        raise


def tearDownModule():
    shutil.rmtree(BASE, True)


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


SWAPS = [None, True, False, 0, -1, 1.5, -0.0, 1e308, -1e308, 10 ** 30, "", "x", "9z",
         "\x1b]0;t\x07\x1b[2J", "a;b`id`", [], {}, [1, 2], {"a": 1}, 2 ** 64, 2 ** 63 - 1]


def _paths(obj, prefix=()):
    """Every (path) in a JSON value, the root included."""
    out = [prefix]
    stack = [(obj, prefix)]
    while stack:
        o, p = stack.pop()
        items = o.items() if isinstance(o, dict) else enumerate(o) if isinstance(o, list) \
            else ()
        for k, v in items:
            out.append(p + (k,))
            if isinstance(v, (dict, list)):
                stack.append((v, p + (k,)))
    return out


def _set(obj, path, value):
    if not path:
        return value
    o = obj
    for k in path[:-1]:
        o = o[k]
    o[path[-1]] = value
    return obj


def _get(obj, path):
    for k in path:
        obj = obj[k]
    return obj


class Mutator:
    def __init__(self, rng, data):
        self.rng = rng
        self.data = data
        self.obj = json.loads(data.decode("utf-8"))
        self.paths = _paths(self.obj)

    def tree(self):
        return json.loads(json.dumps(self.obj))

    def mutate(self):
        """(kind, bytes) of one mutation."""
        rng = self.rng
        kind = rng.choice(("flip", "truncate", "swap", "swap", "huge", "deep", "dup",
                           "delete", "control", "multi"))
        d = self.data
        if kind == "flip":
            b = bytearray(d)
            for _ in range(rng.randint(1, 8)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            return kind, bytes(b)
        if kind == "truncate":
            return kind, d[:rng.randrange(len(d))]
        if kind == "deep":
            n = rng.choice((65, 100, 1000, 100000))
            obj = self.tree()
            path = rng.choice(self.paths)
            text = json.dumps(_set(obj, path, "__DEEP__"))
            return kind, text.replace('"__DEEP__"', "[" * n + "1" + "]" * n).encode()
        if kind == "dup" and rng.random() < 0.5:  # a key twice in a nested object
            obj = self.tree()
            dicts = [p for p in self.paths if isinstance(_get(obj, p), dict) and _get(obj, p)]
            if dicts:
                target = _get(obj, rng.choice(dicts))
                key = rng.choice(list(target))
                target["__DUP__"] = json.loads(json.dumps(rng.choice(SWAPS)))
                return kind, json.dumps(obj).replace('"__DUP__"', json.dumps(key), 1).encode()
        if kind == "dup":
            text = d.decode("utf-8").rstrip().rstrip("}")
            key = rng.choice(list(self.obj)) if isinstance(self.obj, dict) else "x"
            return kind, (text + ',%s:%s}' % (json.dumps(key), json.dumps(
                rng.choice(SWAPS)))).encode()
        obj = self.tree()
        if kind == "multi":
            for _ in range(rng.randint(2, 6)):
                obj = self._one(obj, rng.choice(("swap", "delete", "control")))
            return kind, json.dumps(obj).encode()
        if kind == "huge":
            path = rng.choice(self.paths)
            text = json.dumps(_set(obj, path, "__HUGE__"))
            return kind, text.replace('"__HUGE__"', rng.choice(
                ("1" + "0" * 400, "-1" + "0" * 30, "1e308", "1e400", "-1e400", "NaN",
                 "Infinity", "-Infinity", "1" * 25, "0.1e-400"))).encode()
        return kind, json.dumps(self._one(obj, kind)).encode()

    def _one(self, obj, kind):
        rng = self.rng
        paths = _paths(obj)
        path = rng.choice(paths)
        if kind == "swap":
            return _set(obj, path, json.loads(json.dumps(rng.choice(SWAPS))))
        if kind == "control":
            v = _get(obj, path) if path else None
            if isinstance(v, str):
                return _set(obj, path, v + "\x1b[2J\x00\x9b")
            return _set(obj, path, "\x1b]0;x\x07")
        if path:  # delete
            parent = _get(obj, path[:-1])
            del parent[path[-1]]
        return obj


# Values for a thread's fields: of every type, at and past the reader's bounds, ties.
THREAD_VALUES = [0, -0.0, 1, 0.5, 1.0, 2, None, "", "EIO", True, -1, 1e7, 1e7 + 1, 1e11,
                 1e11 + 1, 2 ** 53 + 1, 2 ** 63, 2 ** 64, 1e308, [], {}, 1800000000.25,
                 1800000000000000000]
THREAD_FIELDS = ("time_s", "release_at", "index", "cpu", "error", "release_at_ns", "ops",
                 "bytes")


def thread_mutation(rng, m):
    """(kind, bytes): the summary of m with its threads' fields changed: set to a value of
    THREAD_VALUES, copied from another thread (ties), deleted, or repeated."""
    obj = m.tree()
    threads = [th for t in obj.get("tests") or [] for p in t.get("parts") or []
               for th in p.get("per_thread") or []]
    if not threads:
        return "thread (none)", json.dumps(obj).encode()
    kind = rng.choice(("value", "value", "tie", "twin", "delete", "repeat", "all"))
    if kind == "twin":  # two threads alike but for an integer and a float of one value
        a, b = rng.choice(threads), rng.choice(threads)
        b.update(a)
        for key, v in (("time_s", rng.choice((0, 1, 2))), ("release_at", 1800000000)):
            if rng.random() < 0.8:
                a[key], b[key] = (v, float(v)) if rng.random() < 0.5 else (float(v), v)
        return "thread twin", json.dumps(obj).encode()
    for _ in range(rng.randint(1, 3)):
        th, key = rng.choice(threads), rng.choice(THREAD_FIELDS)
        if kind == "value":
            th[key] = rng.choice(THREAD_VALUES)
        elif kind == "tie":
            th[key] = rng.choice(threads).get(key)
        elif kind == "all":
            v = rng.choice(THREAD_VALUES)
            for t in threads:
                t[key] = v
        elif kind == "delete":
            th.pop(key, None)
    text = json.dumps(obj, indent=rng.choice((None, 2)))
    if kind == "repeat":  # a key twice in one thread object
        text = text.replace('"index":', '"index": 0, "index":', 1)
    return "thread " + kind, text.encode()


def widen(rng, data, n):
    """The summary data with each part's one thread made n alike but for their index, CPU,
    release and time, drawn from a few values of both types so that they tie (1 and 1.0);
    its counts and node time raised to add up, so that the door can take it."""
    obj = json.loads(data.decode("utf-8"))
    for t in obj.get("tests") or []:
        for p in t.get("parts") or []:
            one = (p.get("per_thread") or [None])[0]
            if not isinstance(one, dict) or len(p["per_thread"]) != 1:
                continue
            ns, threads = one.get("release_at_ns") or 0, []
            for i in range(n):
                th = dict(one, index=rng.choice((i, i, 0)), cpu=rng.choice((i, 0)))
                th["time_s"] = rng.choice((1, 1.0, 2, 2.0, 0.5, one["time_s"]))
                late = rng.choice((0, 0, 1000))
                th["release_at_ns"] = ns + late
                rel = (ns + late) / 1e9
                th["release_at"] = rng.choice((rel, float(int(rel)), int(rel))) if rel else 0
                threads.append(th)
            p["per_thread"] = threads
            for key in ("ops", "bytes", "files"):
                if isinstance(p.get(key), int):
                    p[key] *= n
            p["threads"] = n
            p["node_time_s"] = p.get("node_time_s", 0) + 10
    if isinstance(obj.get("threads"), list) and obj["threads"]:
        obj["threads"] = [dict(obj["threads"][0], index=i) for i in range(n)]
    return json.dumps(obj, indent=rng.choice((None, 2))).encode()


def _plain(v):
    """v's repr with arrays as tuples (the door's buckets are arrays, the reader's tuples):
    equal only with the same types too (1 and 1.0, 0.0 and -0.0 differ)."""
    def plain(v):
        if isinstance(v, array.array):
            return tuple(v)
        if isinstance(v, (list, tuple)):
            return type(v)(plain(x) for x in v)
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v
    return repr(plain(v))


class Fuzz(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="case-", dir=BASE)
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.rng = random.Random(SEED)
        self.summaries = sorted(os.path.join(RUN, n) for n in os.listdir(RUN)
                                if n.endswith(".json") and n != "manifest.json")

    def check_report(self, built, what):
        for fmt in (reporttext.to_text, model.to_csv):
            text = fmt(built)
            self.assertIsNone(CONTROL.search(L.safe_text(text)), what)
        text = model.to_json(built)
        json.loads(text, parse_constant=lambda c: self.fail("%s: %s in the JSON report"
                                                           % (what, c)))

    def case(self, what, fn):
        try:
            fn()
        except AssertionError:
            raise
        except Exception as e:  # noqa: BLE001 (the point: nothing may escape)
            self.fail("seed %d, %s: %s: %s" % (SEED, what, type(e).__name__, e))

    def test_summaries(self):
        t0 = time.monotonic()
        mutators = [Mutator(self.rng, read_bytes(p)) for p in self.summaries]
        path = os.path.join(self.dir, "node9.1a.rep1.json")
        invalid = 0
        for i in range(CASES):
            m = self.rng.choice(mutators)
            kind, data = m.mutate()
            with open(path, "wb") as f:
                f.write(data)
            what = "summary case %d (%s)" % (i, kind)

            def one():
                r = S.read_summary(path)
                self.assertIsInstance(r, dict, what)
                # every damage is foreseen by a check, none caught as a surprise
                self.assertNotIn("unexpected structure", r.get("error") or "", what)
                if i % 10 == 0:  # the whole report, with the real other summaries
                    c = collection.collect(self.summaries[:2] + [path])
                    self.check_report(report.build(c), what)
                return r
            self.case(what, one)
            invalid += bool(S.read_summary(path).get("error"))
        print("summaries: %d cases (%d refused as invalid) in %.1f s, seed %d"
              % (CASES, invalid, time.monotonic() - t0, SEED))
        self.assertGreater(invalid, CASES // 4)  # the mutations do damage

    def test_door(self):
        """The fast door (scan.py, stagebench-scan) against the reader alone, on the real
        summaries and their mutations, the per-thread fields' most of all: a summary read
        through the door gives what the file read alone gives, value for value and type for
        type, and the door does take the usual ones."""
        from stagebench import scan
        self.assertIsNotNone(scan.program(), "stagebench-scan is not beside the catalogue")
        t0 = time.monotonic()
        paths, kinds = [], []
        nodes = [p for p in self.summaries if os.path.basename(p).startswith("node")]
        for i, p in enumerate(nodes):  # as the nodes wrote them, then compacted
            for k, data in enumerate((read_bytes(p), json.dumps(json.loads(
                    read_bytes(p).decode())).encode())):
                paths.append(os.path.join(self.dir, "plain%d-%d.json" % (i, k)))
                kinds.append("plain")
                with open(paths[-1], "wb") as f:
                    f.write(data)
        for i in range(CASES // 10):  # more threads, of ties and types
            data = widen(self.rng, read_bytes(self.rng.choice(nodes)), self.rng.randint(2, 9))
            paths.append(os.path.join(self.dir, "wide%d.json" % i))
            kinds.append("plain")
            with open(paths[-1], "wb") as f:
                f.write(data)
        mutators = [Mutator(self.rng, read_bytes(p)) for p in paths]
        for i in range(CASES):
            m = self.rng.choice(mutators)
            kind, data = thread_mutation(self.rng, m) if i % 2 else m.mutate()
            paths.append(os.path.join(self.dir, "node%d.1a.rep1.json" % i))
            kinds.append(kind)
            with open(paths[-1], "wb") as f:
                f.write(data)
        doors = scan.scan(paths, S.TOP_THREADS)
        self.assertEqual(len(doors), len(paths))
        taken = through = 0
        for path, kind, door in zip(paths, kinds, doors):
            what = "door case %s (%s)" % (os.path.basename(path), kind)
            alone = S.read_summary(path)
            self.assertEqual(_plain(S.read_summary(path, door=door)), _plain(alone), what)
            if door is None:
                self.assertNotEqual(kind, "plain", what)
                continue
            taken += 1
            try:  # the door's reading on its own, without the fallback
                # parsed as read_summary parses it: a repeated key the door let through
                # would be read here (the last of the two) where the file alone is refused
                mine = S._summary(S._DOOR_DECODER.decode(door.text),
                                  os.path.basename(path), 0, S.TOP_THREADS, door)
            except Exception:  # noqa: BLE001 (declined on the way: read alone, compared above)
                self.assertNotEqual(kind, "plain", what)
                continue
            through += 1
            self.assertEqual(_plain(mine), _plain(alone), what)
        print("door: %d summaries, %d scanned, %d read through the door in %.1f s, seed %d"
              % (len(paths), taken, through, time.monotonic() - t0, SEED))
        self.assertGreater(through, len(paths) // 5)  # it is not declining everything

    def test_part_scalars(self):
        """A part's fields checked in one pass (summaries._part_scalars) against the checks
        one call a field: on the real parts with their fields swapped for wrong and right
        values, both give the same figures, or refuse with the same words; and the one pass
        does take the parts that pass."""
        parts = [p for path in self.summaries if os.path.basename(path).startswith("node")
                 for t in json.loads(read_bytes(path)).get("tests") or []
                 for p in t.get("parts") or []]
        keys = [k for k, _kind, _lo, _hi in S._PART_SCALARS] + [
            "thread_time_s", "release_at_ns", "first_io_at_ns", "warnings", "first_pass_s",
            "rest_pass_median_s", "replica_origin", "verified", "late"]
        numbers = [1e7, 1e7 + 1, 1e11, 1e11 + 0.5, 2 ** 64 - 1, 0.5, 1, float("nan"),
                   float("inf"), -1e-9, 2, 1.0]
        right = {  # each kind of field, right and just wrong
            "str": ["B/s", "bytes read", "ok", "1a", "4a", "failed", ["w", 1, None], []],
            "minmax": [{"min": 3, "max": 3}, {"min": 4, "max": 3}, {"min": 1.0, "max": 2},
                       {"min": 0}, {"min": -1, "max": 2}, {"min": 0, "max": 2 ** 64}],
            "stats": [{"min": 0.5, "median": 1, "max": 2}, {"min": -1, "median": 1, "max": 2},
                      {"min": 0, "median": 1e7 + 1, "max": None}, {"median": True},
                      {"min": 0, "median": 1, "max": float("inf")}],
            "origin": [{"run_id": "r1", "repetition": 2}, {"run_id": "r/1", "repetition": 2},
                       {"run_id": "r1", "repetition": -2}, {"run_id": "r1"},
                       {"run_id": "r1", "repetition": 2.0},
                       {"run_id": "r1", "repetition": 2 ** 64}]}
        kind_of = {"release_at_ns": "minmax", "first_io_at_ns": "minmax",
                   "thread_time_s": "stats", "first_pass_s": "stats",
                   "rest_pass_median_s": "stats", "replica_origin": "origin"}
        slow_calls = [0]

        def slow(part):
            slow_calls[0] += 1
            raise S._Slow

        def read(part):
            try:
                return _plain(S._part(part, "tests[0].parts[0].", S.TOP_THREADS))
            except S.Bad as e:
                return "Bad: %s" % e

        fast = refused = 0
        for i in range(CASES):
            part = json.loads(json.dumps(self.rng.choice(parts)))
            for _ in range(self.rng.choice((0, 1, 1, 2, 3))):
                k = self.rng.choice(keys)
                if self.rng.random() < 0.15:
                    part.pop(k, None)
                else:
                    pool = SWAPS if self.rng.random() < 0.3 else \
                        right[kind_of.get(k, "str")] + numbers
                    part[k] = json.loads(json.dumps(self.rng.choice(pool), allow_nan=True))
            one = read(part)
            before = slow_calls[0]
            saved = S._part_scalars
            S._part_scalars = slow
            try:
                each = read(part)
            finally:
                S._part_scalars = saved
            self.assertEqual(slow_calls[0], before + 1)
            self.assertEqual(one, each, "part case %d: %s" % (i, json.dumps(part)[:2000]))
            try:
                S._part_scalars(part)
                fast += 1
            except S._Slow:
                pass
            refused += one.startswith("Bad")
        print("part scalars: %d cases, %d in one pass, %d refused, seed %d"
              % (CASES, fast, refused, SEED))
        self.assertGreater(fast, CASES // 4)
        self.assertGreater(refused, CASES // 10)

    def test_facts_fast(self):
        """A summary's own facts checked in one pass (summaries._facts_fast) against the
        checks one call a field (_summary_facts): on the real summaries with their fields
        swapped for wrong and right values, the same facts, keys in the same order, wherever
        the one pass takes them; where the checks refuse, the one pass does too; and it takes
        the summaries that pass."""
        docs = [json.loads(read_bytes(path)) for path in self.summaries
                if os.path.basename(path).startswith("node")]
        paths = [("node",), ("status",), ("host",), ("dir",), ("version",), ("exit_code",),
                 ("errors",), ("warnings",), ("threads",), ("fs",), ("fs", "type"),
                 ("fs", "source"), ("clock",), ("clock", "ntp_synchronized"),
                 ("clock", "maxerror_us"), ("clock", "esterror_us"), ("run",),
                 ("run", "scale"), ("run", "overrides"), ("run", "interval_s"),
                 ("run", "run_id"), ("build",), ("build", "id"), ("build", "exe_sha256"),
                 ("build", "source_sha256"), ("build", "describe"), ("build", "dirty"),
                 ("cores",), ("cores", "online"), ("cores", "allowed"), ("cores", "used"),
                 ("cores", "chosen_by")]
        right = ["node7", "n.1", ".x", "r1", "r/1", "a" * 64, "A" * 64, "0" * 63,
                 "a" * 64 + "\n", ["a", "b"], ["a", 1], [], {}, {"online": 2, "allowed": 2,
                 "used": 2}, {"id": "x"}, 0, 5, -1, 2 ** 64 - 1, 2 ** 64, 1.5, -0.5, -0.0, 0.0,
                 float("nan"), float("inf"), True, False, None]

        def facts(fn, s):
            run = s.get("run") if isinstance(s.get("run"), dict) else {}
            try:
                return _plain(fn(s, "node1.json", s.get("schema"), run))
            except S.Bad as e:
                return "Bad: %s" % e
            except S._Slow:
                return None

        fast = refused = 0
        for i in range(CASES):
            s = json.loads(json.dumps(self.rng.choice(docs)))
            for _ in range(self.rng.choice((0, 1, 1, 2, 3))):
                path = self.rng.choice(paths)
                parent = s
                for k in path[:-1]:
                    parent = parent.get(k) if isinstance(parent, dict) else None
                if not isinstance(parent, dict):
                    continue
                if self.rng.random() < 0.15:
                    parent.pop(path[-1], None)
                else:
                    pool = SWAPS if self.rng.random() < 0.3 else right
                    parent[path[-1]] = json.loads(json.dumps(self.rng.choice(pool),
                                                             allow_nan=True))
            each = facts(S._summary_facts, s)
            one = facts(S._facts_fast, s)
            if one is not None:
                fast += 1
                self.assertEqual(one, each, "facts case %d: %s" % (i, json.dumps(s)[:3000]))
            refused += each.startswith("Bad")
        print("facts: %d cases, %d in one pass, %d refused, seed %d"
              % (CASES, fast, refused, SEED))
        self.assertGreater(fast, CASES // 4)
        self.assertGreater(refused, CASES // 10)

    def test_door_collect(self):
        """The whole report of the real run, through the door and without it: the same."""
        from stagebench import scan
        outs = []
        for prog in (scan.program(), None):
            saved = scan._program[:]
            scan._program[:] = [prog]
            try:
                built = report.build(collection.collect([RUN]))
            finally:
                scan._program[:] = saved
            outs.append((model.to_json(built), reporttext.to_text(built), model.to_csv(built)))
        self.assertIsNotNone(scan.program())
        self.assertEqual(outs[0], outs[1])

    def test_manifest(self):
        t0 = time.monotonic()
        m = Mutator(self.rng, read_bytes(os.path.join(RUN, "manifest.json")))
        run = os.path.join(self.dir, "run")
        os.mkdir(run)
        for p in self.summaries:
            shutil.copy(p, run)
        cases = CASES // 3
        for i in range(cases):
            kind, data = m.mutate()
            with open(os.path.join(run, "manifest.json"), "wb") as f:
                f.write(data)
            what = "manifest case %d (%s)" % (i, kind)

            def one():
                c = collection.collect([run])
                # every damage is foreseen by a check, none caught as a surprise
                for x in c.invalid:
                    self.assertNotIn("unexpected structure", x["reason"], what)
                self.check_report(report.build(c), what)
            self.case(what, one)
        print("manifests: %d cases in %.1f s, seed %d" % (cases, time.monotonic() - t0, SEED))

    def test_baseline(self):
        t0 = time.monotonic()
        m = Mutator(self.rng, read_bytes(os.path.join(BASE, "baseline.json")))
        c = collection.collect([RUN])
        path = os.path.join(self.dir, "baseline.json")
        refused = 0
        cases = CASES // 3
        for i in range(cases):
            kind, data = m.mutate()
            with open(path, "wb") as f:
                f.write(data)
            what = "baseline case %d (%s)" % (i, kind)

            def one():
                try:
                    b = report.load_baseline(path)
                except L.UsageError as e:
                    self.assertEqual(len(str(e).splitlines()), 1, what)
                    return 1
                self.check_report(report.build(c, baseline=b), what)
                return 0
            try:
                refused += one()
            except AssertionError:
                raise
            except Exception as e:  # noqa: BLE001
                self.fail("seed %d, %s: %s: %s" % (SEED, what, type(e).__name__, e))
        print("baselines: %d cases (%d refused) in %.1f s, seed %d"
              % (cases, refused, time.monotonic() - t0, SEED))
        self.assertGreater(refused, cases // 4)


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main(verbosity=2)
