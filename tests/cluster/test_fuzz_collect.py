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
