# SPDX-License-Identifier: MIT
"""The history (stagebench-history, stagebench.histdb, stagebench.regress, the report page):
- real runs: two nights of stagebench-sim (tiny): one through the launcher, one through
  stagebench-cron, each recorded once by the command that collected it; ingesting them again
  changes nothing, two ingests at once neither lose nor double one; the judgement says the
  history is too short (exit 3); the collector's page (--html) in headless Chromium: a
  screenshot, no console message, one table row per node, a --note '<script>' shown as text;
  the build's digest ('mixed' with a patched binary on one node); a plain launcher run after
  30 synthetic nights replaces a stale history-health.json (a part it did not run kept);
- long synthetic histories (histgen): a node slowed 30% from night 20, a server whose nodes all
  slowed, one bad night, one node's bad night, a slow drift, each found (or not) with its first
  night; a healthy history of 60 nights with noise flags nothing; accept takes a change as the
  new normal; --min-peers in the parameters;
- the file: a SIGKILLed ingest mid-transaction, a truncated file, pages damaged in the middle,
  another program's database, a text file, a link, a newer schema: one line, the file left as it
  was; an older schema migrated; another user's history read by root, never written;
- a page of 1,000 synthetic nodes; the Prometheus flags (promtool) and the NHC health answer;
- stagebench-history(5) names every field of the judgement's records as they declare it."""
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

import clustertest as ct

BASE = None
RES = None  # the results of the simulated nights
NIGHTS = ("night-1",)
CHROMIUM = ("chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync")
NOTE = "<script>alert('x')</script> & </p>"


def setUpModule():
    global BASE, RES, histdb, regress, histgen, htmlpage, history, prometheus, model
    BASE = tempfile.mkdtemp(prefix="stagebench-history-")
    os.chmod(BASE, 0o700)
    from stagebench import histdb, regress, htmlpage, history, prometheus, model  # noqa: F401
    import histgen  # noqa: F401
    globals().update(histdb=histdb, regress=regress, htmlpage=htmlpage, history=history,
                     prometheus=prometheus, histgen=histgen, model=model)
    RES = os.path.join(BASE, "res")
    stage = os.path.join(BASE, "stage")
    try:
        for rid in NIGHTS:
            p = ct.run_script("stagebench-sim", [
                "--nodes", "3", "--servers", "2", "--dir", stage, "--results", RES,
                "--run-id", rid, "--stagebench", ct.BINARY, "--scale", "tiny", "--note", NOTE,
                "1a"], timeout=240)
            assert p.returncode == 0, p.stdout + p.stderr
        p = ct.run_script("stagebench-cron", [
            "--results", RES, "--sim", "--", "--nodes", "3", "--servers", "2", "--dir", stage,
            "--stagebench", ct.BINARY, "--scale", "tiny", "1a"], timeout=240)
        assert p.returncode == 0, p.stdout + p.stderr
    except BaseException:
        shutil.rmtree(BASE, True)
        raise


def tearDownModule():
    shutil.rmtree(BASE, True)


def hist(args, results=None, **kw):
    return ct.run_script("stagebench-history", ["--results", results or RES] + list(args), **kw)


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def counts(path):
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    try:
        return tuple(db.execute("SELECT count(*) FROM %s" % t).fetchone()[0]
                     for t in ("runs", "results", "levels", "nodes"))
    finally:
        db.close()


def chromium(url, base, screenshot=None):
    """Headless Chromium on url: (the DOM it ends with, its console lines)."""
    if not shutil.which("chromium"):
        raise unittest.SkipTest("no chromium here (Debian: chromium; scripts/install-deps)")
    profile = tempfile.mkdtemp(prefix="chromium-", dir=base)
    cmd = list(CHROMIUM) + ["--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0",
                            "--window-size=1000,1600"]
    if screenshot:
        subprocess.run(cmd + ["--screenshot=" + screenshot, url], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=120, check=True)
    p = subprocess.run(cmd + ["--dump-dom", url], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120, universal_newlines=True)
    shutil.rmtree(profile, True)
    return p.stdout, [x for x in p.stderr.splitlines() if ":CONSOLE" in x]


class RealRuns(ct.TempDirCase):
    def test_each_collected_night_recorded_once(self):
        path = os.path.join(RES, "history.sqlite")
        runs = json.loads(hist(["runs", "--format", "json"]).stdout)
        self.assertEqual(len(runs), 2, runs)
        self.assertEqual(runs[0]["run_id"], NIGHTS[0])
        self.assertTrue(runs[1]["run_id"].startswith("cron-"))
        self.assertEqual([r["results"] for r in runs], [3, 3])
        self.assertIn(NOTE, runs[0]["note"])
        before, digest = counts(path), sha(path)
        p = hist(["ingest"] + [os.path.join(RES, r["run_id"]) for r in runs])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.count(": already"), 2, p.stdout)
        self.assertEqual(counts(path), before)
        self.assertEqual(sha(path), digest)  # nothing written at all
        with open(os.path.join(RES, "stagebench-cron.log")) as f:
            log = f.read()
        self.assertIn("history: %s recorded" % runs[1]["run_id"], log)
        self.assertIn("history too short: 1 night before", log)

    def test_build_is_the_binary_digest(self):
        """runs.build is the SHA-256 of the executable the nodes ran (their node/3 summaries'
        build.exe_sha256), the build id beside it; a run where one node ran another binary is
        'mixed'."""
        with open(ct.BINARY, "rb") as f:
            want = hashlib.sha256(f.read()).hexdigest()
        node = ct.load(os.path.join(RES, NIGHTS[0], "node1.1a.rep1.json"))
        self.assertEqual(node["build"]["exe_sha256"], want)
        db = sqlite3.connect("file:%s?mode=ro" % os.path.join(RES, "history.sqlite"), uri=True)
        rows = db.execute("SELECT build, build_id FROM runs ORDER BY started").fetchall()
        db.close()
        self.assertEqual(rows, [(want, node["build"]["id"])] * 2)
        runs = json.loads(hist(["runs", "--format", "json"]).stdout)
        self.assertEqual([r["build"] for r in runs], [want, want])
        patched = self.path("stagebench-patched")
        shutil.copy2(ct.BINARY, patched)
        with open(patched, "ab") as f:
            f.write(b"\0")
        res = self.path("res")
        p = ct.run_script("stagebench-sim", [
            "--nodes", "3", "--servers", "1", "--dir", self.path("stage"), "--results", res,
            "--stagebench", ct.BINARY, "--scale", "tiny", "--run-id", "patched",
            "--node-binary", "node2=" + patched, "1a"])
        self.assertIn(p.returncode, (0, 1), p.stdout + p.stderr)
        runs = json.loads(hist(["runs", "--format", "json"], results=res).stdout)
        self.assertEqual([(r["run_id"], r["build"]) for r in runs], [("patched", "mixed")])

    def test_plain_launcher_run_writes_the_health_file(self):
        """A plain launcher run (stagebench-sim, through stagebench-cluster's history hook, no
        stagebench-cron) records its night, judges it and replaces a stale
        history-health.json: node3's lasting regression of 1a (30 synthetic nights before it,
        node3 50% slower from night 20) is in it, and a regression of a part that run did not
        hold (2a, from the file before) is kept."""
        res = self.path("res")
        os.mkdir(res, 0o700)
        names, srv = ["node1", "node2", "node3"], ["server1", "server0", "server1"]
        now = time.time()
        with histdb.open_history(os.path.join(res, "history.sqlite")) as h:
            for n in range(30):
                run = histgen.night(n, names, srv, ("1a",), lambda p, i, k: 0.01 * (
                    1.5 if i == 2 and k >= 20 else 1.0), noise=0.01)
                run.facts["started"] = now - (30 - n) * 3600.0
                histdb.record(h, run)
        health = os.path.join(res, "history-health.json")
        with open(health, "w") as f:
            json.dump({"schema": "stagebench.history-health/1", "run_id": "night-009",
                       "written_at": now - 3 * 86400, "nodes": {
                           "node1": [{"part": "2a", "size": 0.4, "first_night": "night-005"}],
                           "node3": [{"part": "1a", "size": 0.2, "first_night": "night-001"}]}},
                      f)
        p = hist(["health", "--node", "node3"], results=res)
        self.assertEqual(p.returncode, 3, p.stdout)  # stale
        self.assertIn("h old", p.stdout)
        p = ct.run_script("stagebench-sim", [
            "--nodes", "3", "--servers", "2", "--dir", self.path("stage"), "--results", res,
            "--stagebench", ct.BINARY, "--scale", "tiny", "--run-id", "plain", "1a"])
        self.assertIn(p.returncode, (0, 1), p.stdout + p.stderr)
        self.assertNotIn("warning: history", p.stderr)
        doc = ct.load(health)
        self.assertEqual(doc["run_id"], "plain")
        self.assertLess(abs(doc["written_at"] - time.time()), 300)
        self.assertEqual(sorted(doc["nodes"]), ["node1", "node3"], doc)
        self.assertEqual(doc["nodes"]["node1"], [{"part": "2a", "size": 0.4,
                                                  "first_night": "night-005"}])
        (found,) = doc["nodes"]["node3"]
        self.assertEqual((found["part"], found["first_night"]), ("1a", "night-020"), found)
        p = hist(["health", "--node", "node3"], results=res)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertRegex(p.stdout, r"^stagebench: node3: lasting regression: 1a \+\d+% since "
                                   r"night-020\n$")
        p = hist(["health", "--node", "node2"], results=res)
        self.assertEqual(p.returncode, 0, p.stdout)

    def test_two_ingests_at_once(self):
        res = self.path("res")
        os.mkdir(res, 0o700)
        dirs = [os.path.join(RES, d) for d in sorted(os.listdir(RES))
                if os.path.isdir(os.path.join(RES, d))]
        cmd = ct.command("stagebench-history") + ["--results", res, "ingest"] + dirs
        procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  universal_newlines=True, env=ct.env()) for _ in range(2)]
        outs = [p.communicate(timeout=120) for p in procs]
        for p, (out, err) in zip(procs, outs):
            self.assertEqual(p.returncode, 0, err)
            self.assertNotIn("Traceback", err)
        both = outs[0][0] + outs[1][0]
        self.assertEqual(both.count(": recorded"), 2, both)
        self.assertEqual(both.count(": already"), 2, both)
        self.assertEqual(counts(os.path.join(res, "history.sqlite"))[:2], (2, 6))

    def test_too_short_and_show(self):
        p = hist(["regressions"])
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"^history too short: 1 night before cron-\S+, 5 needed")
        p = hist(["show", "node1", "--part", "1a", "--format", "csv"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(p.stdout.splitlines()), 3, p.stdout)

    def test_history_page_from_what_it_kept(self):
        """stagebench-history --html: the newest run's page from the history alone (its
        verdicts and results as recorded), the judgement too short."""
        page = self.path("history.html")
        p = hist(["--html", page])
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        with open(page) as f:
            text = f.read()
        self.assertIn("Validity checklist", text)
        self.assertRegex(text, r'<p class="small">start: (held|NOT held|cannot tell), spread ')
        self.assertIn("history too short: 1 night before cron-", text)
        body = text.split('<table class="sortable" id="nodes">', 1)[1].split("</table>")[0]
        self.assertEqual(body.count("<tr>"), 1 + 3)

    def test_collector_page_in_chromium(self):
        page = self.path("page.html")
        p = ct.run_script("stagebench-collect", [os.path.join(RES, NIGHTS[0]), "--html", page])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")
        with open(page) as f:
            text = f.read()
        self.assertNotIn("<script>alert", text)
        self.assertIn("&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;", text)
        shot = os.path.join(BASE, "page.png")
        dom, console = chromium("file://" + page, self.dir, screenshot=shot)
        self.assertEqual(console, [])
        with open(shot, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        self.assertGreater(os.path.getsize(shot), 20000)
        body = dom.split('<table class="sortable" id="nodes">', 1)[1].split("</table>")[0]
        self.assertEqual(body.count("<tr>"), 1 + 3)  # the header and the three nodes
        self.assertIn("note: &lt;script&gt;alert('x')&lt;/script&gt; &amp; &lt;/p&gt;", dom)
        self.assertIn("Validity checklist", dom)
        print("screenshot of the page: %s" % shot)


class Synthetic(ct.TempDirCase):
    def judge(self, kind, at, **kw):
        path = self.path("%s.sqlite" % kind)
        if not os.path.exists(path):
            with histdb.open_history(path) as h:
                histgen.history(h, kind, **kw)
        with histdb.open_history(path) as h:
            _t, findings, _j = regress.judge(h, None, "night-%03d" % at)
        return [(f.kind, f.scope, f.name, f.first_night, round(f.size, 1))
                for f in findings if f.flagged], findings

    def test_healthy_60_nights_flag_nothing(self):
        for at in (5, 20, 40, 59):
            flagged, found = self.judge("healthy", at)
            self.assertEqual(found, [], at)

    def test_node_slowed_30_percent_from_night_20(self):
        self.assertEqual(self.judge("node", 19)[0], [])
        self.assertEqual(self.judge("node", 20)[0], [("node", None, "cn00006", "night-020",
                                                     0.4)])
        flagged, _ = self.judge("node", 59)
        self.assertEqual(flagged, [("change", "node", "cn00006", "night-020", 0.3)])

    def test_server_whose_nodes_all_slowed(self):
        flagged, _ = self.judge("server", 20)
        self.assertEqual(flagged, [("server", None, "stage1:/export", "night-020", 0.3)])
        flagged, found = self.judge("server", 59)
        self.assertEqual(flagged, [("change", "server", "stage1:/export", "night-020", 0.3)])
        self.assertEqual([f for f in found if f.scope == "node"], [])

    def test_one_bad_night_is_no_lasting_change(self):
        flagged, _ = self.judge("bad-night", 20)
        self.assertEqual(flagged, [("cluster", None, "every server", "night-020", 1.0)])
        for at in (21, 30, 59):
            self.assertEqual(self.judge("bad-night", at)[1], [], at)

    def test_one_nodes_bad_night_flags_that_night_only(self):
        """One node twice as slow on night 20 only, then back: a node regression that night
        (against its own nights and its server's peers), no lasting change then or after."""
        self.assertEqual(self.judge("node-bad-night", 19)[1], [])
        flagged, found = self.judge("node-bad-night", 20)
        self.assertEqual([f[:4] for f in flagged], [("node", None, "cn00006", "night-020")])
        self.assertTrue(0.8 <= flagged[0][4] <= 1.2, flagged)  # twice as slow, with noise
        self.assertEqual(len(found), 1, found)
        self.assertEqual(found[0].evidence.peers_scope, "server")
        for at in (21, 22, 23, 30, 59):
            self.assertEqual(self.judge("node-bad-night", at)[1], [], at)

    def test_slow_drift_found_as_it_grows(self):
        self.assertEqual(self.judge("drift", 30)[0], [])  # +10% so far: under the tolerance
        flagged, _ = self.judge("drift", 59)
        self.assertEqual(len(flagged), 1, flagged)
        kind, scope, name, first, size = flagged[0]
        self.assertEqual((kind, scope, name), ("change", "node", "cn00006"))
        self.assertTrue("night-025" <= first <= "night-045", first)
        self.assertGreaterEqual(size, 0.15)

    def test_accept_takes_the_change_as_normal(self):
        self.judge("node", 59)
        path = self.path("node.sqlite")
        p = hist(["--history", path, "accept", "cn00006", "1a", "--from", "night-020"],
                 results=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = hist(["--history", path, "regressions", "--format", "json"], results=self.dir)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(json.loads(p.stdout)["findings"], [])
        p = hist(["--history", path, "accept", "nobody", "1a", "--from", "night-020"],
                 results=self.dir)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)

    def test_outputs_exit_codes_health_and_prometheus(self):
        self.judge("node", 59)
        path = self.path("node.sqlite")
        health, prom = self.path("health.json"), self.path("history.prom")
        p = hist(["--history", path, "regressions", "--format", "csv", "--health-file", health,
                  "--prometheus", prom], results=self.dir)
        self.assertEqual(p.returncode, 1, p.stderr)
        rows = p.stdout.splitlines()
        self.assertEqual(len(rows), 2, rows)
        self.assertTrue(rows[1].startswith("night-059,change,node,cn00006,"), rows)
        p = hist(["health", "--file", health, "--node", "cn00006"], results=self.dir)
        self.assertEqual((p.returncode, len(p.stdout.splitlines())), (1, 1), p.stdout)
        self.assertRegex(p.stdout, r"^stagebench: cn00006: lasting regression: "
                                   r"1a \+(2[6-9]|3[0-4])% since night-020$")
        p = hist(["health", "--file", health, "--node", "cn00007"], results=self.dir)
        self.assertEqual(p.returncode, 0, p.stdout)
        p = hist(["health", "--file", self.path("none.json"), "--node", "cn00007"],
                 results=self.dir)
        self.assertEqual(p.returncode, 3, p.stdout)
        with open(prom) as f:
            text = f.read()
        node_lines = [x for x in text.splitlines() if 'node="' in x]
        self.assertEqual(node_lines, [
            'stagebench_history_node_regression_ratio{node="cn00006",server="stage0:/export",'
            'part="1a",kind="lasting"} %s' % node_lines[0].rsplit(" ", 1)[1]])
        self.assertIn('stagebench_history_flagged{kind="change"} 1', text)
        if shutil.which("promtool"):
            with open(prom, "rb") as f:
                rc = subprocess.run(["promtool", "check", "metrics"], stdin=f,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    timeout=60)
            self.assertEqual(rc.returncode, 0, rc.stdout)

    def test_min_peers_option_and_parameters(self):
        """--min-peers (default 3) is in the judgement's parameters with the others; servers of
        10 nodes judged with --min-peers 11 compare their nodes with all 40."""
        self.judge("node", 20)
        path = self.path("node.sqlite")
        p = hist(["--history", path, "regressions", "--run", "night-020", "--format", "json"],
                 results=self.dir)
        self.assertEqual(p.returncode, 1, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["parameters"], {
            "tolerance": 0.15, "last": 10, "min_history": 5, "sigmas": 3.0, "window": 60,
            "min_segment": 3, "pvalue": 0.01, "min_peers": 3})
        self.assertEqual([(f["name"], f["evidence"]["peers_scope"], f["evidence"]["peers"])
                          for f in doc["findings"]], [("cn00006", "server", 10)])
        p = hist(["--history", path, "regressions", "--run", "night-020", "--format", "json",
                  "--min-peers", "11"], results=self.dir)
        self.assertEqual(p.returncode, 1, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["parameters"]["min_peers"], 11)
        self.assertEqual([(f["name"], f["evidence"]["peers_scope"], f["evidence"]["peers"])
                          for f in doc["findings"]], [("cn00006", "all nodes", 40)])
        p = hist(["--history", path, "regressions", "--min-peers", "1"], results=self.dir)
        self.assertEqual((p.returncode, p.stdout), (2, ""))
        self.assertEqual(p.stderr.splitlines(), [
            "stagebench-history: error: --min-peers 1 is out of range: 2 to 100000"])

    def test_show_table_and_plots(self):
        self.judge("node", 59)
        path = self.path("node.sqlite")
        svg, png = self.path("trend.svg"), self.path("trend.png")
        for plot in (svg, png):
            p = hist(["--history", path, "show", "cn00006", "--part", "1a", "--plot", plot],
                     results=self.dir)
            self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"\n  night-020 .*  <- change \+(2[6-9]|3[0-4])% \(p=")
        self.assertEqual(len(p.stdout.splitlines()), 4 + 60, p.stdout)
        with open(svg) as f:
            text = f.read()
        self.assertRegex(text, r"\+(2[6-9]|3[0-4])% from night-020")
        self.assertIn("node cn00006, part 1a: 60 nights, 1 lasting change", text)
        with open(png, "rb") as f:
            self.assertEqual(f.read(4), b"\x89PNG")
        p = hist(["--history", path, "show", "stage0:/export", "--format", "json"],
                 results=self.dir)
        self.assertEqual(json.loads(p.stdout)["parts"][0]["changes"], [])

    def test_page_of_1000_nodes(self):
        names, srv = histgen.nodes_and_servers(1000, 16)
        level = histgen.scenario("healthy")
        run = histgen.night(0, names, srv, ("1a", "2a", "4a"), lambda p, i, n: level(
            p, i, n) * (3.0 if i in (7, 500, 999) else 1.0), rid="big")
        report = histgen.report(
            run, model.Validity.make(verdict="NOT VALID", rules=[model.Rule(
                rule="spec scale", ok=False, evidence="scale tiny <b>")]),
            model.StartVerdict.make(verdict="held", spread_s=0.0004, uncertainty_s=0.0003,
                                    limit_s=1.0))
        page = self.path("big.html")
        t = time.time()
        with open(page, "w") as f:
            f.write(htmlpage.render(htmlpage.model_from_report(report, None)))
        took = time.time() - t
        dom, console = chromium("file://" + page, self.dir,
                                screenshot=os.path.join(BASE, "page-1000.png"))
        self.assertEqual(console, [])
        body = dom.split('id="nodes">', 1)[1].split("</table>")[0]
        self.assertEqual(body.count("<tr>"), 1001)
        # the slow nodes listed by name, the others only as dots with a tooltip
        slowest = dom.split('<p class="small">slowest: ', 1)[1].split("</p>", 1)[0]
        self.assertEqual(sorted(x.split(" ")[0] for x in slowest.split("), ")),
                         ["cn00008", "cn00501", "cn01000"], slowest)
        self.assertIn("scale tiny &lt;b&gt;", dom)
        self.assertEqual(dom.count("<circle"), 3000)
        print("1,000-node page: %d KiB in %.2f s" % (os.path.getsize(page) >> 10, took))


class Reference(unittest.TestCase):
    def test_page_has_every_field_of_the_judgement(self):
        """stagebench-history(5) has a row for every field of the judgement's records, as
        they declare it (type, unit, meaning): the page cannot drift from the JSON."""
        with open(os.path.join(ct.SOURCE, "scripts", "man", "stagebench-history.5.md")) as f:
            page = f.read()
        for cls in (regress.Judgement, regress.Finding, regress.NodeEvidence,
                    regress.ServerEvidence, regress.ClusterEvidence, regress.ChangeEvidence):
            self.assertIn("\n### %s\n" % cls.__name__, page)
            for fd in cls.FIELDS:
                row = "| `%s` | %s | %s | %s |" % tuple(
                    str(x).replace("|", "\\|") for x in (fd.name, fd.type_text(), fd.unit,
                                                          fd.meaning))
                self.assertIn(row, page, cls.__name__)


class TheFile(ct.TempDirCase):
    def history_with_runs(self, nights=6):
        path = self.path("history.sqlite")
        with histdb.open_history(path) as h:
            histgen.history(h, "healthy", nights=nights, nodes=8, servers=2)
        return path

    def refused(self, path, words):
        digest = sha(path)
        p = hist(["--history", path, "runs"], results=self.dir)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
        self.assertIn(words, p.stderr)
        p = hist(["--history", path, "ingest", os.path.join(RES, NIGHTS[0])], results=self.dir)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertEqual(sha(path), digest)  # never rewritten
        self.assertEqual(sorted(os.listdir(os.path.dirname(path))),
                         [os.path.basename(path)])

    def test_killed_ingest_mid_transaction(self):
        path = self.history_with_runs()
        before = counts(path)
        code = """
import os, sys, time
sys.path.insert(0, %r); sys.path.insert(0, %r)
from stagebench import histdb
import histgen

class Stalls(list):
    calls = 0
    def __iter__(self):
        Stalls.calls += 1
        if Stalls.calls == 4:  # the run, its nodes and servers written, not committed
            print("inside", flush=True)
            time.sleep(60)
        return list.__iter__(self)

names, srv = histgen.nodes_and_servers(8, 2)
run = histgen.night(99, ["new%%d" %% i for i in range(8)], srv, ("1a",),
                    histgen.scenario("healthy"))
run.results = Stalls(run.results)
with histdb.open_history(%r) as h:
    histdb.record(h, run)
""" % (ct.SCRIPTS, os.path.dirname(os.path.abspath(__file__)), path)
        child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                 universal_newlines=True, env=ct.env())
        self.assertEqual(child.stdout.readline(), "inside\n")
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()
        self.assertEqual(counts(path), before)
        p = hist(["--history", path, "ingest", os.path.join(RES, NIGHTS[0])], results=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(counts(path)[0], before[0] + 1)

    def test_truncated(self):
        path = self.history_with_runs()
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) // 2 // 4096 * 4096)
        self.refused(path, "is damaged or truncated")

    def test_pages_damaged_in_the_middle(self):
        """Garbage over a page in the middle, the header intact: every command refuses it in
        one line with exit 2 (the judgement included: it used to judge until it met the page,
        exit 3), and neither the commands nor histdb.record write to it."""
        path = self.path("history.sqlite")
        with histdb.open_history(path) as h:
            histgen.history(h, "node", nights=30, nodes=40, servers=4)
        size = os.path.getsize(path)
        page = 4096
        self.assertGreater(size // page, 20)
        with open(path, "r+b") as f:
            f.seek(size // page // 2 * page)
            f.write(os.urandom(page))
        digest = sha(path)
        for args in (["regressions"], ["regressions", "--format", "json"], ["runs"],
                     ["show", "cn00006"], ["ingest", os.path.join(RES, NIGHTS[0])],
                     ["accept", "cn00006", "1a", "--from", "night-020"]):
            p = hist(["--history", path] + args, results=self.dir)
            self.assertEqual(p.returncode, 2, (args, p.stdout, p.stderr))
            self.assertEqual(p.stdout, "", args)
            self.assertEqual(len(p.stderr.splitlines()), 1, (args, p.stderr))
            self.assertRegex(p.stderr, r"^stagebench-history: error: .*history\.sqlite is "
                                       r"damaged \(SQLite: .*\): left as it is$")
        names, srv = histgen.nodes_and_servers(40, 4)
        run = histgen.night(30, names, srv, ("1a",), histgen.scenario("node"))
        with self.assertRaisesRegex(histdb.Refused, r"is damaged \(SQLite: "):
            with histdb.open_history(path) as h:
                histdb.record(h, run)
        self.assertEqual(sha(path), digest)  # not a byte written
        self.assertEqual(os.listdir(self.dir), ["history.sqlite"])

    def test_another_users_history_root_reads_never_writes(self):
        """A history of another user (nobody's file in nobody's directory): root reads it (runs,
        show, regressions, read-only), refuses to write it (ingest, accept: one line, exit 2),
        the file's bytes unchanged and whatever SQLite made beside it the owner's; in a
        directory another user can write, root does not read it either; an older schema is
        not migrated (refused, left as it is)."""
        if os.geteuid() != 0:
            self.skipTest("needs root to give a file to another user")
        import pwd
        other = pwd.getpwnam("nobody").pw_uid
        d = self.path("theirs")
        os.mkdir(d, 0o700)
        path = os.path.join(d, "history.sqlite")
        with histdb.open_history(path) as h:
            histgen.history(h, "node", nights=30, nodes=40, servers=4)
        os.chown(d, other, -1)
        os.chown(path, other, -1)
        digest = sha(path)
        p = hist(["--history", path, "runs", "--format", "json"], results=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(json.loads(p.stdout)), 30)
        p = hist(["--history", path, "regressions", "--format", "json"], results=self.dir)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual([f["name"] for f in json.loads(p.stdout)["findings"]], ["cn00006"])
        p = hist(["--history", path, "show", "cn00006", "--part", "1a"], results=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        for args in (["ingest", os.path.join(RES, NIGHTS[0])],
                     ["accept", "cn00006", "1a", "--from", "night-020"]):
            p = hist(["--history", path] + args, results=self.dir)
            self.assertEqual(p.returncode, 2, (args, p.stdout))
            self.assertEqual(p.stderr.splitlines(), [
                "stagebench-history: error: %s belongs to uid %d: root reads another user's "
                "history (runs, show, regressions), never writes it" % (path, other)])
        self.assertEqual(sha(path), digest)
        self.assertEqual([os.lstat(os.path.join(d, n)).st_uid for n in os.listdir(d)],
                         [other] * len(os.listdir(d)), os.listdir(d))
        os.chmod(d, 0o777)
        p = hist(["--history", path, "runs"], results=self.dir)
        self.assertEqual(p.returncode, 2, p.stdout)
        self.assertIn("only its owner (uid %d) or root can write" % other, p.stderr)
        self.assertEqual(sha(path), digest)
        os.chmod(d, 0o700)
        downgrade(path, 2)
        digest = sha(path)
        p = hist(["--history", path, "regressions"], results=self.dir)
        self.assertEqual(p.returncode, 2, p.stdout)
        self.assertIn("has schema version 2, this stagebench reads %d: read-only here, it is "
                      "not migrated" % histdb.VERSION, p.stderr)
        self.assertEqual(sha(path), digest)

    def test_another_programs_database(self):
        path = self.path("history.sqlite")
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE bookmarks(url TEXT)")
        db.commit()
        db.close()
        self.refused(path, "a SQLite database of another program")

    def test_text_file_and_link(self):
        path = self.path("history.sqlite")
        with open(path, "w") as f:
            f.write("not a database\n")
        self.refused(path, "is not a SQLite database")
        os.unlink(path)
        os.symlink(self.path("elsewhere.sqlite"), path)
        p = hist(["--history", path, "ingest", os.path.join(RES, NIGHTS[0])], results=self.dir)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("not a regular file", p.stderr)
        self.assertFalse(os.path.exists(self.path("elsewhere.sqlite")))

    def test_directory_others_can_write(self):
        d = self.path("open")
        os.mkdir(d)
        os.chmod(d, 0o777)
        p = hist(["--history", os.path.join(d, "h.sqlite"), "ingest",
                  os.path.join(RES, NIGHTS[0])], results=self.dir)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("writable by other users", p.stderr)
        self.assertEqual(os.listdir(d), [])

    def test_schema_migrated_forward_newer_refused(self):
        path = self.history_with_runs()
        db = sqlite3.connect(path)
        levels = db.execute("SELECT * FROM levels ORDER BY run, part, server").fetchall()
        db.close()
        downgrade(path, 1)
        p = hist(["--history", path, "runs"], results=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        db = sqlite3.connect(path)
        self.assertEqual(db.execute("PRAGMA user_version").fetchone()[0], histdb.VERSION)
        self.assertEqual(db.execute("SELECT * FROM levels ORDER BY run, part, server")
                         .fetchall(), levels)
        db.execute("PRAGMA user_version = 99")
        db.commit()
        db.close()
        digest = sha(path)
        p = hist(["--history", path, "runs"], results=self.dir)
        self.assertEqual(p.returncode, 2)
        self.assertIn("schema version 99, newer than this stagebench knows", p.stderr)
        self.assertEqual(sha(path), digest)

    def test_version_2_build_id_moved_out_of_build(self):
        """Version 2 kept the build id (git describe) in runs.build: version 3 moves it to
        runs.build_id and leaves the digest unknown; a run ingested again gets its digest (the
        run replaced, its results the same)."""
        path = self.path("history.sqlite")
        p = hist(["--history", path, "ingest", os.path.join(RES, NIGHTS[0])], results=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        db = sqlite3.connect(path)
        build, build_id = db.execute("SELECT build, build_id FROM runs").fetchone()
        db.close()
        self.assertRegex(build, r"^[0-9a-f]{64}$")
        downgrade(path, 2)
        p = hist(["--history", path, "runs", "--format", "json"], results=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)[0]["build"], None)
        db = sqlite3.connect(path)
        self.assertEqual(db.execute("PRAGMA user_version").fetchone()[0], histdb.VERSION)
        self.assertEqual(db.execute("SELECT build, build_id FROM runs").fetchall(),
                         [(None, build_id)])
        db.close()
        p = hist(["--history", path, "ingest", os.path.join(RES, NIGHTS[0])], results=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(": replaced (3 results)", p.stdout)
        self.assertEqual(counts(path), (1, 3, 2, 3))
        db = sqlite3.connect(path)
        self.assertEqual(db.execute("SELECT build, build_id FROM runs").fetchall(),
                         [(build, build_id)])
        db.close()


def downgrade(path, version):
    """The history at path in the layout an older stagebench wrote (schema version 1 or 2)."""
    db = sqlite3.connect(path)
    if version < 3:  # build held the build id
        db.executescript("UPDATE runs SET build = build_id; "
                         "ALTER TABLE runs DROP COLUMN build_id;")
    if version < 2:
        db.executescript("DROP TABLE levels; DROP TABLE accepted;")
    db.execute("PRAGMA user_version = %d" % version)
    db.commit()
    db.close()


if __name__ == "__main__":
    ct.setup_from_argv()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    unittest.main(verbosity=2)
