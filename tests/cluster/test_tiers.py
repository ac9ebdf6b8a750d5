# SPDX-License-Identifier: MIT
"""A cluster's three cache tiers on one machine: stagebench-sim --sshfs gives each simulated
node its own sshfs mount of its server's directory (through a private sshd it starts and stops),
so each node has its own client cache; --server-drop drops this machine's pages of the server's
files before test 3. The preparer starts test 2 cold like the others, 1a's first pass (from the
server) is slower than its later passes (from the node's cache), the drop empties the server's
cache (fincore), and the launcher's --server-drop records a command's outcome, escaped."""
import os
import shutil
import subprocess
import unittest

import clustertest as ct


def fincore_bytes(path):
    """Bytes of path resident in this machine's page cache (util-linux fincore)."""
    out = subprocess.check_output(["fincore", "--bytes", "--noheadings", "--output", "RES",
                                   path], universal_newlines=True)
    return int(out.split()[0])


class Tiers(ct.TempDirCase):
    def setUp(self):
        super().setUp()
        for tool in ("sshfs", "/usr/sbin/sshd", "fincore"):
            if not shutil.which(tool):
                ct.skip_file("%s is not installed (Debian: sshfs, openssh-server, util-linux)"
                             % tool)
        if not os.path.exists("/dev/fuse"):
            ct.skip_file("/dev/fuse does not exist: no sshfs here")

    def test_sshfs_nodes_and_server_drop(self):
        rid = "tiers"
        p = ct.run_script("stagebench-sim", [
            "--nodes", "3", "--servers", "1", "--dir", self.path("stage"),
            "--results", self.path("results"), "--stagebench", ct.BINARY, "--scale", "tiny",
            "--run-id", rid, "--no-report", "--sshfs", "--server-drop", "1a", "2", "3"],
            timeout=280)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        rundir = self.path("results", rid)
        sim = os.path.join(rundir, "sim")
        # every node had a mount of its own, gone after the run, with sshd and its sessions
        for n in ("node1", "node2", "node3"):
            self.assertFalse(ct.is_mounted(os.path.join(sim, "mnt", n)))
        self.assertEqual(ct.processes_mentioning(os.path.join(sim, "ssh")), [])
        summ = {}
        for n in ("node1", "node2", "node3"):
            for part in ct.parts_of(["1a", "2", "3"]):
                s = ct.load(os.path.join(rundir, "%s.%s.rep1.json" % (n, part)))
                self.assertEqual(s["status"], "ok", (n, part))
                self.assertEqual(s["fs"]["type"], "fuse.sshfs", (n, part))
                self.assertEqual(s["dir"], os.path.join(sim, "mnt", n))
                summ[n, part] = s["tests"][0]["parts"][0]
        man = ct.load(os.path.join(rundir, "manifest.json"))
        pre = man["preparers"]["server0"]
        others = [n for n in ("node1", "node2", "node3") if n != pre]
        # 1a: the first pass came from the server, the later ones from the node's own cache
        for n in ("node1", "node2", "node3"):
            pt = summ[n, "1a"]
            self.assertGreater(pt["first_pass_s"]["median"], pt["rest_pass_median_s"]["median"],
                               n)
        # 2: the preparer starts cold like every other node (its written pages dropped), so
        # its time is within noise of theirs, not a page-cache read many times faster
        for part in ct.parts_of(["2"]):
            self.assertLess(summ[pre, part]["cache_residency"], 0.1, part)
            fastest_other = min(summ[n, part]["node_time_s"] for n in others)
            self.assertGreater(summ[pre, part]["node_time_s"], fastest_other / 5.0,
                               "%s: the preparer %s read from its own cache" % (part, pre))
        # the server drop ran before each part of 3, on this host, and said what it dropped
        sd = man["server_drop"]
        self.assertEqual(sd["where"], "launcher")
        self.assertEqual([(r["before"], r["repetition"], r["status"], r["exit_code"])
                          for r in sd["runs"]], [(p, 1, "ok", 0) for p in ct.parts_of(["3"])])
        for r in sd["runs"]:
            self.assertIn("dropped the page cache of", r["output"])
        self.assertIn("server drop before 3a rep 1: ran", p.stderr)
        drop_at = {r["before"]: r["at"] for r in sd["runs"]}
        for r in man["rounds"]:
            if r["kind"] == "run" and r["part"] in drop_at:
                self.assertLess(drop_at[r["part"]], r["start_at"])
        # the drop empties the server's cache of a replica: read it in, drop, read fincore
        server0 = self.path("stage", "server0")
        replicas = [os.path.join(d, f) for d, _s, fs in os.walk(server0) for f in fs]
        self.assertTrue(replicas)
        big = max(replicas, key=os.path.getsize)
        with open(big, "rb") as f:
            while f.read(1 << 20):
                pass
        self.assertGreater(fincore_bytes(big), os.path.getsize(big) // 2)
        drop = sd["command"]
        rc = subprocess.call(drop, stdout=subprocess.DEVNULL)
        self.assertEqual(rc, 0)
        self.assertLess(fincore_bytes(big), os.path.getsize(big) // 10)

    def test_server_drop_failure_is_recorded_escaped(self):
        os.makedirs(self.path("stage"))
        cmd = ["--launcher", "clush", "--exec", "-w", "node1", "--stagebench", ct.BINARY,
               "--dir", self.path("stage"), "--results", self.path("results"),
               "--run-id", "drop", "--scale", "tiny", "--no-report", "--server-drop",
               "sh -c 'echo first; printf \"bad \\033[2J\\n\"; exit 4'", "3a"]
        p = ct.run_script("stagebench-cluster", cmd, timeout=200)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        man = ct.load(self.path("results", "drop", "manifest.json"))
        sd = man["server_drop"]
        self.assertEqual(sd["command"][:2], ["sh", "-c"])
        self.assertEqual(len(sd["runs"]), 1)
        r = sd["runs"][0]
        self.assertEqual((r["before"], r["status"], r["exit_code"]), ("3a", "failed", 4))
        self.assertEqual(r["output"], "first\nbad \\x1b[2J")
        self.assertIn("warning: server drop before 3a rep 1: failed", p.stderr)
        self.assertNotIn("\033", p.stderr)
        # no --server-drop: null in the manifest
        p = ct.run_script("stagebench-cluster", cmd[:cmd.index("--server-drop")] + ["3a"]
                          + ["--run-id", "nodrop"], timeout=200)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIsNone(ct.load(self.path("results", "nodrop", "manifest.json"))
                          ["server_drop"])


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main(verbosity=2)
