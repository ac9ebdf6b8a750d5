# SPDX-License-Identifier: MIT
"""Inputs validated at one door (issue 13): summaries, the launcher's manifest and baselines
are read through summaries.load_json and checked by the same rules; each damaged case is
refused with its reason in one line, never a traceback, never 'ok', never a NaN in JSON;
host and servers files with any bytes; control characters from nodes and files escaped before
they reach a terminal and kept escaped in manifest.json. The inputs are a real simulated run
(stagebench-sim, 2 nodes) and the baseline the collector saved from it."""
import json
import os
import resource
import shutil
import tempfile
import unittest

import clustertest as ct

RUN = None


def setUpModule():
    global BASE, RUN
    BASE = tempfile.mkdtemp(prefix="stagebench-inputs-test-")
    try:
        p = ct.run_script("stagebench-sim", [
            "--nodes", "2", "--servers", "1", "--dir", os.path.join(BASE, "stage"),
            "--results", os.path.join(BASE, "res"), "--stagebench", ct.BINARY, "--scale",
            "tiny", "--run-id", "real", "--no-report", "1a"], timeout=240)
        assert p.returncode == 0, p.stdout + p.stderr
        RUN = os.path.join(BASE, "res", "real")
        p = ct.run_script("stagebench-collect", [RUN, "--save-baseline",
                                                 os.path.join(BASE, "baseline.json")])
        assert p.returncode == 0, p.stdout + p.stderr
    except BaseException:
        shutil.rmtree(BASE, True)
        raise


def tearDownModule():
    shutil.rmtree(BASE, True)


def summaries():
    return sorted(n for n in os.listdir(RUN) if n.endswith(".rep1.json"))


class Inputs(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="case-", dir=BASE)
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.run_dir = os.path.join(self.dir, "run")
        os.mkdir(self.run_dir)
        for n in summaries() + ["manifest.json"]:
            shutil.copy(os.path.join(RUN, n), self.run_dir)

    def collect(self, *args, **kw):
        p = ct.run_script("stagebench-collect", [self.run_dir] + list(args), **kw)
        self.assertNotIn("Traceback", p.stderr)
        self.assertNotIn("\x1b", p.stdout + p.stderr)
        return p

    def text(self, name):
        with open(os.path.join(self.run_dir, name)) as f:
            return f.read()

    def put(self, name, text, where=None):
        path = os.path.join(where or self.run_dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def assert_invalid(self, name, reason):
        p = self.collect("--format", "json")
        self.assertEqual(p.returncode, 1, p.stderr)
        rep = json.loads(p.stdout)
        bad = {x["file"]: x["reason"] for x in rep["invalid"]}
        self.assertIn(name, bad, p.stdout)
        self.assertIn(reason, bad[name])
        self.assertNotEqual(rep.get("status"), "ok")
        self.assertIn("skipped %s" % name, p.stderr)
        return rep

    # -- summaries

    def test_duplicate_key_refused(self):
        """An appended "status":"failed" is not silently overridden by the first one, nor
        the other way round: the summary is invalid."""
        name = summaries()[0]
        t = self.text(name).rstrip().rstrip("}")
        self.put(name, t + ',"status":"failed"}\n')
        self.assert_invalid(name, 'duplicate key "status"')

    def edit(self, name, fn):
        s = json.loads(self.text(name))
        fn(s)
        self.put(name, json.dumps(s))

    def test_absurd_time_refused(self):
        name = summaries()[0]
        self.edit(name, lambda s: s["tests"][0]["parts"][0].update(node_time_s=1e308))
        self.assert_invalid(name, "node_time_s (1e+308) is out of range")

    def test_unknown_part_refused(self):
        name = summaries()[0]
        self.edit(name, lambda s: s["tests"][0]["parts"][0].update(part="9z"))
        self.assert_invalid(name, "'9z' is not a part of any test")

    def test_huge_integer_refused(self):
        name = summaries()[0]
        t = self.text(name)
        s = json.loads(t)
        b = s["tests"][0]["parts"][0]["bytes"]
        self.put(name, t.replace('"bytes": %d' % b, '"bytes": 1' + "0" * 400, 1)
                 if '"bytes": %d' % b in t else t.replace('"bytes":%d' % b, '"bytes":1' +
                                                            "0" * 400, 1))
        self.assert_invalid(name, "bytes (an integer over 2**64) is out of range")

    def test_nan_and_infinity_refused(self):
        name = summaries()[0]
        s = json.loads(self.text(name))
        s["tests"][0]["parts"][0]["node_time_s"] = "__X__"
        self.put(name, json.dumps(s).replace('"__X__"', "NaN"))
        self.assert_invalid(name, "NaN is not a number JSON allows")
        self.put(name, json.dumps(s).replace('"__X__"', "1e999"))
        self.assert_invalid(name, "node_time_s is not a number")

    def test_deep_nesting_refused(self):
        name = summaries()[0]
        self.put(name, "[" * 100000 + "]" * 100000)
        self.assert_invalid(name, "nested too deeply")
        # deep inside a field the collector does not read: harmless, the summary is checked
        # as usual (here: it has no schema)
        self.put(name, '{"a":' * 100 + "1" + "}" * 100)
        self.assert_invalid(name, "schema is missing")

    def test_bad_bytes_refused(self):
        name = summaries()[0]
        with open(os.path.join(self.run_dir, name), "ab") as f:
            f.write(b"\xff\n")
        self.assert_invalid(name, "not UTF-8 text")

    def test_huge_summary_refused_before_reading(self):
        """A 200 MB summary: refused by its size, under a 512 MiB address-space limit (read
        and parsed it would need several GB)."""
        name = summaries()[0]
        path = os.path.join(self.run_dir, name)
        with open(path, "r+b") as f:
            f.truncate(200 << 20)

        def limit():
            resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        p = ct.run_script("stagebench-collect", [self.run_dir, "--format", "json"],
                          preexec_fn=limit)
        self.assertEqual(p.returncode, 1, p.stderr)
        bad = {x["file"]: x["reason"] for x in json.loads(p.stdout)["invalid"]}
        self.assertIn("209715200 bytes, over the 64 MiB a file may be", bad[name])

    def test_control_characters_escaped(self):
        """A node name with escape codes: invalid, and printed escaped; the manifest's
        errors and notes with them: escaped in the report."""
        name = summaries()[0]
        self.edit(name, lambda s: s.update(node="n\x1b]0;pwned\x07"))
        m = json.loads(self.text("manifest.json"))
        m["notes"].append("note \x1b[2J")
        m["rounds"] = [r for r in m["rounds"]]
        for r in m["rounds"]:
            if r.get("kind") == "run":
                r["failed"] = {"node1": {"status": "failed", "error": "boom \x1b[31m"}}
        self.put("manifest.json", json.dumps(m))
        p = self.collect()
        self.assertEqual(p.returncode, 1)
        self.assertIn("\\x1b", p.stderr)
        self.assertIn("boom \\x1b[31m", p.stdout)
        p = self.collect("--format", "json")
        self.assertIn("boom \\\\x1b[31m", p.stdout)

    def test_manifest_text_escaped_however_written(self):
        """The manifest's strings are escaped whether its control characters are written raw
        (DEL, a C1 CSI: JSON allows them in a string) or as escapes; a manifest with none is
        read as it is (the collector then skips the walk over its strings)."""
        from stagebench import collection
        path = os.path.join(self.run_dir, "manifest.json")
        m = json.loads(self.text("manifest.json"))
        for note, want in (("del \x7f", "del \\x7f"), ("csi \x9b31m", "csi \\x9b31m"),
                           ("bell \x07", "bell \\x07"), ("plain", "plain")):
            for ascii_only in (False, True):
                doc = dict(m, notes=[note])
                with open(path, "w", encoding="utf-8") as f:
                    json.dump(doc, f, ensure_ascii=ascii_only)
                got = collection.read_manifest(path)
                self.assertIsInstance(got, dict, got)
                self.assertEqual(got["notes"], [want], (note, ascii_only))
                self.assertEqual(got["nodes"], m["nodes"])

    def test_summary_text_escaped_at_the_door(self):
        """What a node wrote in its summary (errors, mount source) is kept escaped by the
        reader, whoever prints it next (the collector, the launcher's report)."""
        from stagebench import summaries as S
        name = summaries()[0]

        def damage(s):
            s["fs"]["source"] = "srv:/x\x1b[2J"
            s["errors"] = ["bad \x1b]0;t\x07"]
            s["tests"][0]["parts"][0]["error"] = "part \x1b[31m"
        self.edit(name, damage)
        r = S.read_summary(os.path.join(self.run_dir, name))
        self.assertIsNone(r["error"])
        self.assertEqual(r["fs"]["source"], "srv:/x\\x1b[2J")
        self.assertEqual(r["errors"], ["bad \\x1b]0;t\\x07"])
        self.assertEqual(r["entries"][0][3]["error"], "part \\x1b[31m")

    # -- the manifest

    def test_manifest_validated_like_summaries(self):
        cases = [
            (lambda m: m.update(nodes=["ok1", "bad name"]), "field nodes[1] 'bad name'"),
            (lambda m: m["run"].update(parts=["9z"]), "field run.parts[0] '9z'"),
            (lambda m: [r.update(part="9z") for r in m["rounds"] if r["kind"] == "run"],
             "is not a part of the catalogue"),
            (lambda m: [r.update(start_at=1e308) for r in m["rounds"] if r["kind"] == "run"],
             "start_at (1e+308) is out of range"),
            (lambda m: [r.update(failed={"a;b": {}}) for r in m["rounds"]
                        if r["kind"] == "run"], "failed names 'a;b'"),
            (lambda m: m["servers"].update({m["nodes"][0]: "srv\x1b[2J:/x"}),
             "field servers has an entry that is not valid"),
            (lambda m: m["servers"].update({m["nodes"][0]: "s" * 256}),
             "field servers has an entry that is not valid"),
            (lambda m: m["servers"].update({m["nodes"][0]: 7}),
             "field servers has an entry that is not valid"),
            (lambda m: m.update(preparers={"srv\n:/x": m["nodes"][0]}),
             "field preparers has an entry that is not valid"),
            (lambda m: m.update(preparers={"srv:/x": "bad name"}),
             "field preparers has an entry that is not valid"),
        ]
        orig = self.text("manifest.json")
        for fn, reason in cases:
            m = json.loads(orig)
            fn(m)
            self.put("manifest.json", json.dumps(m))
            rep = self.assert_invalid("manifest.json", reason)
            self.assertIn("launcher manifest invalid", rep["invalid"][0]["reason"])
        self.put("manifest.json", "[" * 100000 + "]" * 100000)
        self.assert_invalid("manifest.json", "nested too deeply")

    # -- baselines

    def test_damaged_baseline_refused(self):
        with open(os.path.join(BASE, "baseline.json")) as f:
            base = json.load(f)
        part = next(iter(base["parts"]))
        node = next(iter(base["parts"][part]["nodes"]))
        for value, shown in (("NaN", "NaN is not a number JSON allows"),
                             ("0", "(0) is not a time above 0"),
                             ("-1.5", "(-1.5) is not a time above 0"),
                             ('"1.0"', '("1.0") is not a time above 0'),
                             ("1e308", "(1e+308) is not a time above 0"),
                             ("Infinity", "Infinity is not a number JSON allows"),
                             ("true", "(true) is not a time above 0")):
            b = json.loads(json.dumps(base))
            b["parts"][part]["nodes"][node] = "__X__"
            path = self.put("baseline.json", json.dumps(b).replace('"__X__"', value),
                            self.dir)
            p = self.collect("--baseline", path, "--format", "json")
            self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
            self.assertEqual(p.stdout, "")
            self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
            self.assertIn("is not valid", p.stderr)
            self.assertIn(shown, p.stderr)
        b = json.loads(json.dumps(base))
        b["parts"]["9z"] = b["parts"].pop(part)
        path = self.put("baseline.json", json.dumps(b), self.dir)
        p = self.collect("--baseline", path)
        self.assertEqual(p.returncode, 2)
        self.assertIn("parts names '9z', not a part of any test", p.stderr)
        path = self.put("baseline.json", '{"a":' * 100000 + "1" + "}" * 100000, self.dir)
        p = self.collect("--baseline", path)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
        # the real one is fine, and its report has no NaN
        p = self.collect("--baseline", os.path.join(BASE, "baseline.json"), "--format", "json")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("NaN", p.stdout)

    def test_fifo_inputs_do_not_hold_the_collector(self):
        """A FIFO as the baseline or the manifest: refused at once, not waited on."""
        os.unlink(os.path.join(self.run_dir, "manifest.json"))
        os.mkfifo(os.path.join(self.run_dir, "manifest.json"))
        fifo = os.path.join(self.dir, "baseline.json")
        os.mkfifo(fifo)
        p = self.collect("--baseline", fifo, timeout=60)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("not a regular file", p.stderr)
        self.assert_invalid("manifest.json", "not a regular file")

    # -- host and servers files

    def test_host_and_servers_files_any_bytes(self):
        cases = [(b"node1\n\xffnode2\n", "not UTF-8 text (byte "),
                 (b"node1\n\x1b[2Jnode2\n", "\\x1b[2Jnode2"),
                 (b"node1\x00\n", "node1\\x00")]
        for data, reason in cases:
            for opt in ("--hostfile", "--servers"):
                path = os.path.join(self.dir, "file")
                with open(path, "wb") as f:
                    f.write(data if opt == "--hostfile" else data.replace(b"\n", b" s1\n"))
                args = ["-w", "node1", "--exec", "--stagebench", ct.BINARY, "--results",
                        self.dir, "--dry-run", "1a", opt, path]
                if opt == "--hostfile":
                    args = args[2:]
                p = ct.run_script("stagebench-cluster", args)
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
                self.assertIn(reason, p.stderr)
                self.assertNotIn("\x1b", p.stderr)
        path = os.path.join(self.dir, "big")
        with open(path, "wb") as f:
            f.write(b"node1\n")
            f.truncate(20 << 20)
        p = ct.run_script("stagebench-cluster", ["--hostfile", path, "--exec", "--stagebench",
                                                 ct.BINARY, "--results", self.dir,
                                                 "--dry-run", "1a"])
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("is over 16 MiB: refused", p.stderr)


class LauncherEscapes(unittest.TestCase):
    def test_node_output_escaped_in_output_and_manifest(self):
        """A node answering the info round with escape codes on stderr: the launcher prints
        them escaped and manifest.json keeps them escaped."""
        d = tempfile.mkdtemp(prefix="esc-", dir=BASE)
        fake = os.path.join(d, "fake-stagebench")
        with open(fake, "w") as f:
            f.write("#!/bin/sh\nprintf 'stagebench: error: \\033]0;pwned\\007\\033[2J boom\\n'"
                    " >&2\nexit 1\n")
        os.chmod(fake, 0o755)
        p = ct.run_script("stagebench-cluster", [
            "-w", "node1", "--exec", "--stagebench", fake, "--local-stagebench", "none",
            "--results", d, "--run-id", "esc", "1a"])
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        self.assertNotIn("\x1b", p.stdout + p.stderr)
        with open(os.path.join(d, "esc", "manifest.json")) as f:
            m = json.load(f)
        text = json.dumps(m)
        self.assertIn("\\\\x1b]0;pwned\\\\x07", text)
        self.assertNotIn("\\u001b", text)


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main(verbosity=2)
