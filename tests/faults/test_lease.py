# SPDX-License-Identifier: MIT
"""The lease of an armed run (`run --detach DIR --lease S`, renewed by `status DIR --renew`):
renewed, the run goes on to its end; not renewed, it stops at its next safe point (its wait for
the start, before a part of its grid, or a part one lease length past the lapse), removes what
it created, and ends orphaned (exit 4, reason lease_expired) with its parts saying so; a late
renewal never revives a lapsed lease, also when the run was SIGSTOPped through the lapse."""
import json
import os
import re
import signal
import sys
import time
import unittest

import faulttest as ft

LEASE = 5


def state_of(state_dir):
    out = {}
    with open(os.path.join(state_dir, "state")) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition(" ")
            out[k] = v
    return out


class Lease(ft.FaultCase):
    def setUp(self):
        super().setUp()
        self.env = {"STAGEBENCH_LOCK_DIR": self.path("locks")}

    def arm(self, args, state, lease=LEASE):
        p = ft.run(["run"] + args + ["--scale", "tiny", "--dir", self.stage(), "--detach", state,
                                     "--lease", str(lease)], env=self.env)
        self.addCleanup(self.kill_armed, state)
        self.assertEqual(p.returncode, 0, p.stderr)
        return time.monotonic()

    def kill_armed(self, state):
        try:
            st = state_of(state)
        except OSError:
            return
        ft.run(["stop", state, "--signal", "TERM", "--wait", "20"])
        try:
            os.kill(int(st["pid"]), signal.SIGCONT)
            os.kill(int(st["pid"]), signal.SIGKILL)
        except (OSError, ValueError):
            pass

    def status(self, state, *extra, expect=0):
        p = ft.run(["status", state, "--format", "json"] + list(extra))
        self.assertEqual(p.returncode, expect, p.stderr)
        self.assertEqual(p.stdout.count("\n"), 1, p.stdout)
        return json.loads(p.stdout)

    def final(self, state, timeout=60):
        return ft.wait_for(lambda: (lambda s: s if s["status"] in (
            "done", "failed", "orphaned", "interrupted", "lost") else None)(self.status(state)),
            timeout=timeout, step=0.1)

    def parts(self, summary):
        return [p for t in summary["tests"] for p in t["parts"]]

    def assert_orphaned(self, s):
        """The final state and summary of an orphaned run."""
        self.assertEqual((s["status"], s["exit_code"], s["reason"]), ("orphaned", 4,
                                                                    "lease_expired"))
        self.assertRegex(s["error"], r"^orphaned: no renewal from the launcher for \d+ s: "
                         r"nobody would collect this run \(lease 5 s, last renewed at "
                         r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\)$")
        st = state_of(os.path.dirname(s["summary"]))
        self.assertEqual((st["status"], st["exit_code"], st["reason"]), ("orphaned", "4",
                                                                        "lease_expired"))
        self.assertEqual(float(st["lease_s"]), LEASE)
        self.assertEqual(float(st["lease_remaining_s"]), 0)
        j = self.summary(s["summary"])
        self.assertEqual((j["status"], j["exit_code"]), ("orphaned", 4))
        self.assertIn("lease_expired", j["error_reasons"])
        self.assertEqual(j["errors"][j["error_reasons"].index("lease_expired")], s["error"])
        return j

    def test_renewed_it_runs_to_its_end(self):
        state = self.path("st")
        self.arm(["2", "--start-in", "3", "--interval", "3"], state)
        s = self.status(state)
        self.assertEqual((s["lease_s"], s["lease_renewals"], s["renewed"], s["renew_error"]),
                         (LEASE, 1, None, None))
        self.assertGreater(s["lease_remaining_s"], 0)
        self.assertLessEqual(s["lease_remaining_s"], LEASE)
        self.assertAlmostEqual(s["lease_renewed_at"], time.time(), delta=10)
        renewals = 1
        while True:
            s = self.status(state, "--renew")
            if s["status"] in ("done", "failed", "orphaned", "interrupted", "lost"):
                break
            renewals += 1
            self.assertEqual((s["renewed"], s["renew_error"], s["lease_renewals"]),
                             (True, None, renewals))
            self.assertGreater(s["lease_remaining_s"], LEASE - 1)
            time.sleep(2)
        self.assertEqual((s["status"], s["exit_code"]), ("done", 0), s)
        self.assertEqual((s["renewed"], s["renew_error"]), (False, "the run has ended (done)"))
        self.assertEqual([p["status"] for p in self.parts(self.summary(s["summary"]))],
                         ["ok", "ok", "ok"])
        # a state file with the lease's keys
        st = state_of(state)
        self.assertEqual(float(st["lease_s"]), LEASE)
        self.assertGreaterEqual(int(st["lease_renewals"]), 2)

    def test_lapsed_before_the_start_nothing_starts(self):
        state = self.path("st")
        armed = self.arm(["1a", "4a", "--start-in", "40"], state)
        s = self.final(state, timeout=30)
        took = time.monotonic() - armed
        sys.stderr.write("\nlapsed before the start: orphaned %.2f s after the lapse\n"
                         % (took - LEASE))
        # noticed at the wait's next safe point: within about a second of the lapse
        self.assertGreater(took, LEASE - 0.5)
        self.assertLess(took, LEASE + 3)
        j = self.assert_orphaned(s)
        parts = self.parts(j)
        self.assertEqual([(p["part"], p["status"]) for p in parts],
                         [("1a", "orphaned"), ("4a", "orphaned")])
        for p in parts:
            self.assertEqual(p["reason"], "lease_expired")
            self.assertRegex(p["error"], r"^orphaned: not started: the lease lapsed \(no "
                             r"renewal from the launcher for \d+ s\)$")
            self.assertEqual((p["node_time_s"], p["ops"]), (0, 0))
        self.assertEqual([t["status"] for t in j["tests"]], ["orphaned", "orphaned"])
        # the replica it made before arming stays; nothing else
        self.assertEqual(os.listdir(self.stage()), ["stagebench.1a.4MiB"])
        log = ft.read_text(os.path.join(state, "log"))
        self.assertIn("the lease lapsed: no renewal from the launcher", log)
        self.assertEqual(os.stat(os.path.join(state, "lease")).st_mode & 0o777, 0o600)
        self.assertEqual(sorted(os.listdir(state)), ["lease", "log", "state", "summary.json"])

    def test_lapsed_between_parts_the_later_ones_do_not_start(self):
        state = self.path("st")
        self.arm(["2", "--start-in", "2", "--interval", "8"], state)
        # renewed until 2a has run, then no more
        ft.wait_for(lambda: self.status(state, "--renew")["status"] == "running", timeout=20,
                    step=0.5)
        time.sleep(1.5)
        self.assertTrue(self.status(state, "--renew")["renewed"])
        s = self.final(state, timeout=40)
        j = self.assert_orphaned(s)
        parts = self.parts(j)
        self.assertEqual([(p["part"], p["status"]) for p in parts],
                         [("2a", "ok"), ("2b", "orphaned"), ("2c", "orphaned")])
        for p in parts[1:]:
            self.assertIn("orphaned: not started", p["error"])
        # the parts not started keep their planned instants on the grid
        self.assertAlmostEqual(parts[1]["start_at"], parts[0]["start_at"] + 8, places=3)
        self.assertAlmostEqual(parts[2]["start_at"], parts[0]["start_at"] + 16, places=3)
        self.assertGreater(parts[0]["node_time_s"], 0)

    def test_lapsed_during_a_part_it_goes_on_one_lease_length_then_stops(self):
        state = self.path("st")
        self.arm(["4a", "--count", "1000000", "--start-in", "1"], state)
        deadline = time.time() + LEASE
        s = self.final(state, timeout=60)
        ended = time.time()
        sys.stderr.write("\nlapsed during a part: orphaned %.2f s after the lapse (lease %d s)\n"
                         % (ended - deadline, LEASE))
        # stopped one lease length after the lapse, at the next safe point (about 1 s), then
        # its files removed: on an ext4 /tmp just after a mass delete, creating and removing
        # files stays slow for minutes, which the end's bound allows for
        self.assertGreater(ended - deadline, LEASE - 0.5)
        self.assertLess(ended - deadline, LEASE + 15)
        j = self.assert_orphaned(s)
        (p,) = self.parts(j)
        self.assertEqual(p["status"], "orphaned")
        m = re.match(r"^orphaned: stopped (\d+\.\d) s after the lease lapsed \(a part goes on "
                     r"for at most one lease length, 5 s, after it lapses\)$", p["error"])
        self.assertTrue(m, p["error"])
        # the node's own figure: the lease length, and its next safe point
        self.assertGreaterEqual(float(m.group(1)), LEASE - 0.1)
        self.assertLess(float(m.group(1)), LEASE + 2)
        self.assertGreater(p["files"], 0)
        # its files are removed, as an interrupted run's
        self.assertEqual(os.listdir(self.stage()), [])

    def test_a_late_renewal_never_revives_it(self):
        """SIGSTOPped through the lapse (as a suspended job is): the renewal after it is
        refused (exit 3); continued, the run finds its lease lapsed and ends orphaned."""
        state = self.path("st")
        self.arm(["1a", "--start-in", "30"], state)
        pid = int(state_of(state)["pid"])
        os.kill(pid, signal.SIGSTOP)
        time.sleep(LEASE + 0.5)
        s = self.status(state, "--renew", expect=3)
        self.assertEqual((s["status"], s["renewed"], s["lease_remaining_s"]), ("armed", False, 0))
        self.assertRegex(s["renew_error"], r"^the lease lapsed \d+\.\d s ago: not renewed \(a "
                         r"lapsed lease is never revived; the run stops at its next safe point, "
                         r"orphaned\)$")
        # the text form says it too
        p = ft.run(["status", state, "--renew"])
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("renewed:  no: the lease lapsed", p.stdout)
        os.kill(pid, signal.SIGCONT)
        self.assert_orphaned(self.final(state, timeout=20))

    def test_renew_where_there_is_nothing_to_renew(self):
        state = self.path("st")
        p = ft.run(["run", "1a", "--scale", "tiny", "--dir", self.stage(), "--start-in", "30",
                    "--detach", state], env=self.env)
        self.addCleanup(self.kill_armed, state)
        self.assertEqual(p.returncode, 0, p.stderr)
        s = self.status(state, "--renew")
        self.assertEqual((s["lease_s"], s["lease_remaining_s"], s["lease_renewed_at"],
                          s["lease_renewals"], s["renewed"], s["renew_error"]),
                         (None, None, None, None, False,
                          "the run has no lease (armed without --lease)"))
        self.assertNotIn("lease_s", state_of(state))
        p = ft.run(["status", state, "--renew", "--format", "csv"])
        self.assertEqual(p.returncode, 0, p.stderr)
        head, row = p.stdout.splitlines()
        self.assertTrue(head.endswith(",lease_s,lease_remaining_s,lease_renewed_at,"
                                      "lease_renewals,renewed,renew_error"), head)
        self.assertTrue(row.endswith(",,,,,false,\"the run has no lease (armed without "
                                     "--lease)\""), row)

    def test_lease_options_are_checked(self):
        stage = self.stage()
        for extra, why in ((["--lease", "60"], "--lease is the lease of an armed run"),
                           (["--lease", "4", "--detach", self.path("a")], "out of range"),
                           (["--lease", "86401", "--detach", self.path("b")], "out of range"),
                           (["--lease", "soon", "--detach", self.path("c")], "malformed")):
            with self.subTest(extra=extra):
                p = ft.run(["run", "1a", "--scale", "tiny", "--dir", stage] + extra,
                           env=self.env)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assert_one_error_line(p.stderr, why)
        self.assertEqual(os.listdir(stage), [])
        for d in "abc":
            self.assertFalse(os.path.exists(self.path(d)))
        p = ft.run(["info", "--renew"])
        self.assertEqual(p.returncode, 2, p.stderr)


if __name__ == "__main__":
    ft.setup_from_argv()
    unittest.main(verbosity=2)
