# SPDX-License-Identifier: MIT
"""The engines' result handling, on real rounds: clush (ClusterShell.Task's exec worker) on
local "nodes" (exit statuses, output and error lines, timeouts, a node killed by a signal,
writing to one node's stdin, arguments that must survive quoting), pdsh's exec rcmd when it has
one, srun's output parsing from lines in its recorded format; the launcher is importable and
classifies what a round gave. Node sets go through ClusterShell.NodeSet; files through the
package's one door (files.py)."""
import os
import signal
import stat
import subprocess
import tempfile
import time
import unittest

import clustertest as ct

SH_CASES = ('case "$1" in n1) echo "out $1"; echo "second line";; n2) echo "err $1" >&2; '
            'exit 4;; n3) exec sleep 30;; n4) kill -9 $$;; esac')


def engines():
    from stagebench import engines as E
    return E


class EngineCase(ct.TempDirCase):
    def logbase(self, tag):
        return self.path(tag)

    def check_cases(self, res, with_signal=True):
        self.assertIn(res["n1"].rc, (0, None) if not with_signal else (0,))  # pdsh: no news
        self.assertEqual(res["n1"].out, ["out n1", "second line"])
        self.assertEqual(res["n1"].err, [])
        self.assertFalse(res["n1"].timeout)
        self.assertEqual(res["n2"].rc, 4)
        self.assertEqual(res["n2"].err, ["err n2"])
        self.assertTrue(res["n3"].timeout)
        if with_signal:  # clush: a node that timed out has no exit status
            self.assertIsNone(res["n3"].rc)
            self.assertEqual(res["n4"].rc, 128 + signal.SIGKILL)


class Clush(EngineCase):
    def engine(self, **kw):
        return engines().make("clush", True, [], kw.get("fanout"))

    def run_round(self, nodes, args, timeout, stdin=False, feed=None):
        E = engines()
        rnd = self.engine().start(nodes, args, timeout, self.logbase("round"), stdin=stdin)
        if feed:
            feed(rnd)
        self.assertTrue(rnd.wait(timeout + 20), "the round did not end")
        self.assertIsInstance(rnd.results()["n1"], E.Outcome)
        return rnd.results()

    def test_exit_status_output_timeout_signal(self):
        E = engines()
        res = self.run_round(["n1", "n2", "n3", "n4"], ["sh", "-c", SH_CASES, "sh", E.NODE], 2)
        self.check_cases(res)
        with open(self.path("round.out")) as f:
            self.assertEqual(sorted(f.read().splitlines()), ["n1: out n1", "n1: second line"])
        with open(self.path("round.err")) as f:
            self.assertEqual(f.read(), "n2: err n2\n")

    def test_arguments_survive_quoting(self):
        E = engines()
        args = ["printf", "%s|", "a b", "50%", "'q'", '"d"', "$HOME", "`id`", "x" + E.NODE + "y",
                E.NODE]
        res = self.run_round(["n1"], args, 10)
        self.assertEqual(res["n1"].out, ["a b|50%|'q'|\"d\"|$HOME|`id`|xn1y|n1|"])

    def test_writing_to_one_nodes_stdin(self):
        E = engines()

        def feed(rnd):
            rnd.write("n2", b"two\n")
            rnd.write("n1", b"one\n")
            rnd.close_stdin()

        res = self.run_round(["n1", "n2", "n3"], ["sh", "-c", 'read x; echo "$1 read $x"; cat',
                                                  "sh", E.NODE], 10, stdin=True, feed=feed)
        self.assertEqual(res["n1"].out, ["n1 read one"])
        self.assertEqual(res["n2"].out, ["n2 read two"])
        self.assertEqual(res["n3"].out, ["n3 read "])  # end of file, nothing written
        for n in ("n1", "n2", "n3"):
            self.assertEqual(res[n].rc, 0)

    def test_nodes_in_sessions_of_their_own(self):
        """A Ctrl-C on the terminal reaches the launcher only (it stops the nodes itself):
        every node process runs in a session of its own, not in the launcher's."""
        E = engines()
        rnd = self.engine().start(["n1", "n2"], ["sh", "-c", "echo $$; sleep 30", "sh",
                                                 E.NODE], 60, self.logbase("sid"))
        pids = []
        deadline = time.monotonic() + 10
        while len(pids) < 2 and time.monotonic() < deadline:
            with open(self.path("sid.out")) as f:
                pids = [int(line.split(": ")[1]) for line in f.read().splitlines()]
            time.sleep(0.05)
        self.assertEqual(len(pids), 2)
        for pid in pids:
            self.assertEqual(os.getsid(pid), pid)
            self.assertNotEqual(os.getsid(pid), os.getsid(0))
        rnd.kill()
        self.assertTrue(rnd.wait(10))
        rnd.results()

    def test_ssh_in_sessions_of_their_own(self):
        E = engines()
        info = E.make("clush", False, ["-o", "-p 22"], None).info
        self.assertEqual(info["ssh_path"], "setsid ssh")
        self.assertNotIn("scp_path", info)  # summaries come back over ssh: no scp

    def test_kill_ends_a_round(self):
        E = engines()
        sleep = "sleep 60.%06d" % os.getpid()  # this test's own: none left behind
        rnd = self.engine().start(["n1", "n2"], ["sh", "-c", sleep, "sh", E.NODE], 100,
                                  self.logbase("kill"))
        self.assertFalse(rnd.wait(0.5))
        rnd.kill()
        self.assertTrue(rnd.wait(5))
        for o in rnd.results().values():
            self.assertNotEqual(o.rc, 0)
        rnd.cleanup()
        self.assertEqual(ct.processes_mentioning(sleep), [])

    def test_tree_mode_with_a_topology(self):
        """--topology: the round's worker is ClusterShell's TreeWorker (through the gateway
        the file names, here one that does not exist: every node fails on its own, exit 255,
        its gateway's reason kept, not ClusterShell's RouteResolvingError out of the round); a
        direct round of the same engine (the gateways' own) and an engine without it, a direct
        worker even where a topology.conf would enable tree mode."""
        import socket
        from ClusterShell.Worker.Tree import TreeWorker
        E = engines()
        topo = self.path("topology.conf")
        with open(topo, "w") as f:
            f.write("[routes]\n%s: nosuchgw\nnosuchgw: n[1-2]\n"
                    % socket.gethostname().split(".")[0])
        e = E.make("clush", False, ["-o", "-o BatchMode=yes -o ConnectTimeout=3"], None,
                   topology=topo)
        self.assertFalse(e.can_talk)
        rnd = e.start(["n1", "n2"], ["true"], 20, self.logbase("tree"))
        self.assertIsInstance(rnd.worker, TreeWorker)
        self.assertTrue(rnd.wait(60))
        res = rnd.results()
        self.assertIsNone(rnd.error_text())
        for o in res.values():
            self.assertEqual((o.rc, o.reason), (255, E.NO_ROUTE))
            self.assertEqual(len(o.err), 1, o.err)
            self.assertTrue(o.err[0].startswith("nosuchgw: "), o.err)
        from stagebench import rounds
        self.assertEqual(rounds.classify(res["n1"], "20 s")[0], "unreachable")
        for direct in (e.start(["n1"], ["true"], 20, self.logbase("gw"), direct=True),
                       E.make("clush", False, [], None).start(["n1"], ["true"], 20,
                                                              self.logbase("direct"))):
            self.assertNotIsInstance(direct.worker, TreeWorker)
            direct.kill()
            direct.results()

    def test_describe_is_the_clush_command(self):
        E = engines()
        cmd = self.engine().describe("NODES", ["n1", "n2"], ["stagebench", "info", E.NODE], 9)
        self.assertEqual(cmd, ["clush", "-n", "--color=never", "--hostfile", "NODES", "-f", "2",
                               "-R", "exec", "-u", "9",
                               "exec setsid -- stagebench info '%{h}'"])

    def test_clush_conf_then_launcher_options(self):
        """Over ssh the engine takes clush.conf's connection settings, as clush did; the
        --launcher-option ones win."""
        E = engines()
        conf = self.path("xdg", "clustershell")
        os.makedirs(conf)
        with open(os.path.join(conf, "clush.conf"), "w") as f:
            f.write("[Main]\nssh_user: bench\nssh_options: -oPort=2222\nconnect_timeout: 7\n")
        old = os.environ.get("XDG_CONFIG_HOME")
        os.environ["XDG_CONFIG_HOME"] = self.path("xdg")
        try:
            info = E.make("clush", False, [], None).info
            self.assertEqual((info.get("ssh_user"), info.get("ssh_options"),
                              info.get("connect_timeout")), ("bench", "-oPort=2222", 7.0))
            info = E.make("clush", False, ["-o", "-F cfg", "-l", "root"], None).info
            self.assertEqual((info["ssh_user"], info["ssh_options"]), ("root", "-F cfg"))
            self.assertEqual(E.make("clush", True, [], None).info, {})  # exec: no ssh
        finally:
            if old is None:
                del os.environ["XDG_CONFIG_HOME"]
            else:
                os.environ["XDG_CONFIG_HOME"] = old

    def test_launcher_options(self):
        E = engines()
        self.assertEqual(E.parse_clush_options(["-o", "-F cfg", "-oPort=2", "-l", "root",
                                                "-t", "5"]),
                         {"ssh_options": "-F cfg Port=2", "ssh_user": "root",
                          "connect_timeout": 5.0})
        from stagebench.common import UsageError
        for bad in (["-x"], ["-o"], ["-t", "soon"]):
            with self.assertRaises(UsageError):
                E.parse_clush_options(bad)


class Pdsh(EngineCase):
    def setUp(self):
        super().setUp()
        p = subprocess.run(["pdsh", "-V"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True) if ct.shutil.which("pdsh") else None
        if p is None or "exec" not in p.stdout:
            self.skipTest("pdsh with its exec rcmd module is not installed")

    def test_exit_status_output_timeout(self):
        E = engines()
        e = E.make("pdsh", True, [], None)
        nodes = ["n1", "n2", "n3"]
        nf = self.path("nodes")
        with open(nf, "w") as f:
            f.write("\n".join(nodes) + "\n")
        rnd = e.start(nodes, ["sh", "-c", SH_CASES, "sh", E.NODE], 2, self.logbase("pdsh"), nf)
        self.assertTrue(rnd.wait(30))
        self.check_cases(rnd.results(), with_signal=False)


class Srun(unittest.TestCase):
    def test_output_parsing(self):
        """srun --label output: task numbers in the node list's order, and its status lines."""
        E = engines()
        e = E.make("srun", False, [], None)
        out = "0: hello\n1: world\n1: again\n2: x\n"
        err = ("srun: error: nodeB: task 1: Exited with exit code 3\n"
               "1: stagebench: error: boom\n"
               "srun: error: nodeC: tasks 2: Exited with exit code 130\n"
               "srun: Job step aborted\n7: stray\n")
        res = e.parse(out, err, ["nodeA", "nodeB", "nodeC"])
        self.assertEqual((res["nodeA"].rc, res["nodeA"].out), (None, ["hello"]))
        self.assertEqual((res["nodeB"].rc, res["nodeB"].out, res["nodeB"].err),
                         (3, ["world", "again"], ["stagebench: error: boom"]))
        self.assertEqual((res["nodeC"].rc, res["nodeC"].out), (130, ["x"]))

    def test_command(self):
        E = engines()
        cmd = E.make("srun", False, ["--mpi=none"], None).command("NODES", ["a", "b"],
                                                                   ["stagebench", "info"], 10)
        self.assertEqual(cmd[:3], ["srun", "--nodes=2", "--ntasks=2"])
        self.assertEqual(cmd[-3:], ["--mpi=none", "stagebench", "info"])


    def test_cpus_from_the_allocation(self):
        """Per-node CPUs from SLURM_JOB_CPUS_PER_NODE, not the batch host's: --cpus-per-task
        only where every node of the round holds the same count."""
        E = engines()
        env = {"SLURM_JOB_NODELIST": "n[1-3]", "SLURM_JOB_CPUS_PER_NODE": "2(x2),1"}
        self.assertEqual(E.allocation_cpus(env), {"n1": 2, "n2": 2, "n3": 1})
        self.assertEqual(E.allocation_cpus({"SLURM_JOB_NODELIST": "n[1-3]",
                                            "SLURM_JOB_CPUS_PER_NODE": "2,1"}), {})
        self.assertEqual(E.allocation_cpus({}), {})
        e = E.make("srun", False, [], None)
        e.alloc = E.allocation_cpus(env)
        self.assertIn("--cpus-per-task=2", e.command("F", ["n1", "n2"], ["x"], 10, "nm"))
        self.assertIn("--job-name=nm", e.command("F", ["n1", "n2"], ["x"], 10, "nm"))
        cmd = e.command("F", ["n1", "n3"], ["x"], 10)
        self.assertEqual([c for c in cmd if c.startswith("--cpus-per-task")], [])


class Launcher(unittest.TestCase):
    def test_importable_and_classifies(self):
        from stagebench import cluster, launcher, rounds
        E = engines()
        args = cluster.parse_args(["-w", "n[1-2]", "--results", "/nonexistent", "1a"])
        self.assertIsNotNone(launcher.Launcher(args).plan)
        o = E.Outcome()
        self.assertEqual(rounds.classify(o, "x"), ("ok", None))
        o.rc, o.err = 255, ["ssh: connect to host n1 port 22: Connection refused"]
        self.assertEqual(rounds.classify(o, "x")[0], "unreachable")
        self.assertEqual(rounds.classify(o, "x", remote=False)[0], "failed")
        o.rc, o.err = 143, ["stagebench: interrupted"]
        self.assertEqual(rounds.classify(o, "x")[0], "interrupted")
        o.rc = 137
        self.assertEqual(rounds.classify(o, "x")[0], "failed")
        self.assertEqual(rounds.classify(o, "x", stopping=True)[0], "interrupted")
        o.rc, o.err = 3, ["stagebench: error: --dir missing"]
        self.assertEqual(rounds.classify(o, "x"), ("failed", "exit 3: stagebench: error: --dir "
                                                             "missing"))
        o.timeout = True
        self.assertEqual(rounds.classify(o, "10 s")[0], "timeout")


class NodeSets(unittest.TestCase):
    def test_folds_whole_ranges_and_products(self):
        from stagebench.nodes import nodeset_expand, nodeset_fold
        self.assertEqual(nodeset_fold(["node%03d" % i for i in range(1, 129)]), "node[001-128]")
        names = ["r%dn%02d" % (r, n) for r in range(1, 5) for n in range(1, 17)]
        self.assertEqual(nodeset_fold(names), "r[1-4]n[01-16]")
        self.assertEqual(nodeset_expand("r[1-4]n[01-16]"), sorted(names, key=lambda x: x))

    def test_operators(self):
        from stagebench.nodes import nodeset_expand
        self.assertEqual(nodeset_expand("n[1-6]!n[2-3]"), ["n1", "n4", "n5", "n6"])
        self.assertEqual(nodeset_expand("n[1-6]&n[5-9]"), ["n5", "n6"])
        self.assertEqual(nodeset_expand("n[1-4]^n[3-6]"), ["n1", "n2", "n5", "n6"])
        self.assertEqual(nodeset_expand("n[1-3],m1!n2"), ["m1", "n1", "n3"])

    def test_refused_with_the_reason(self):
        from stagebench.common import UsageError
        from stagebench.nodes import nodeset_expand
        for bad, why in (("n[1-3]!n[1-3]", "names no node"), ("n[3-1]", "range"),
                         ("n1\x1b:0;x\x07", "not a valid node name"),
                         ("@no-such-group-here", "no node")):
            with self.subTest(bad=bad):
                with self.assertRaises(UsageError) as cm:
                    nodeset_expand(bad)
                self.assertIn(why, str(cm.exception))


class Files(ct.TempDirCase):
    def test_write_atomic_refuses_a_planted_link_never_writes_through_it(self):
        """A link at the name is neither written through nor replaced (issue 13: an output
        replaces only a regular file); a regular file is replaced."""
        from stagebench import files as F
        victim = self.path("victim")
        with open(victim, "w") as f:
            f.write("precious\n")
        os.symlink(victim, self.path("out.json"))
        with self.assertRaises(F.UnsafePath) as e:
            F.write_atomic(self.path("out.json"), "new\n")
        self.assertIn("is a symbolic link: only a regular file is replaced", str(e.exception))
        with open(victim) as f:
            self.assertEqual(f.read(), "precious\n")
        self.assertTrue(os.path.islink(self.path("out.json")))
        self.assertEqual(sorted(os.listdir(self.dir)), ["out.json", "victim"])
        F.write_atomic(victim, "new\n")
        with open(victim) as f:
            self.assertEqual(f.read(), "new\n")
        self.assertEqual(sorted(os.listdir(self.dir)), ["out.json", "victim"])

    def test_open_new_and_open_ours_refuse_links(self):
        from stagebench import files as F
        os.symlink(self.path("elsewhere"), self.path("log"))
        with self.assertRaises(OSError):
            F.open_new(self.path("log"))
        with self.assertRaises(OSError):
            F.open_ours(self.path("log"))
        self.assertFalse(os.path.exists(self.path("elsewhere")))

    def test_directories_are_checked(self):
        from stagebench import files as F
        d = F.make_dir(self.path("state"))
        self.assertEqual(stat.S_IMODE(os.stat(d).st_mode), 0o700)
        with self.assertRaises(OSError):
            F.make_dir(self.path("state"))  # never reused
        os.symlink(d, self.path("link"))
        with self.assertRaises(F.UnsafePath):
            F.check_dir(self.path("link"))
        os.chmod(d, 0o777)
        with self.assertRaises(F.UnsafePath):
            F.check_dir(d, private=True)
        if os.geteuid() == 0:
            os.chown(d, 65534, 65534)
            with self.assertRaises(F.UnsafePath):
                F.ensure_dir(d)

    def test_safe_text(self):
        from stagebench.common import safe_text
        self.assertEqual(safe_text("a\x1b]0;t\x07b\tc\n\x9b"), "a\\x1b]0;t\\x07b\tc\n\\x9b")
        # short and long texts (a long one is first checked whole, its lines joined) of
        # printable, control and other unprintable characters: what the regex alone makes
        import random
        import re
        rnd = random.Random(11)
        control = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
        alphabets = ("ab \t\n\x00\x1b\x7f\x85\x9f\xa0\xe9\u2028\u200b\U0001f600",
                     "ab \t\n\xa0\xe9\U0001f600", "ab \t\n\xa0\u2028\u200b")
        for _ in range(600):
            n = rnd.choice((rnd.randint(0, 40), rnd.randint(4000, 6000)))
            alphabet = rnd.choice(alphabets)
            text = "".join(rnd.choice(alphabet) if rnd.random() < 0.02 else "x"
                           for _ in range(n))
            self.assertEqual(safe_text(text), control.sub(
                lambda m: "\\x%02x" % ord(m.group(0)), text), repr(text[:80]))


class MissingClusterShell(ct.TempDirCase):
    def test_one_line_and_exit_2(self):
        """A Python without ClusterShell: one line saying what to install, never a traceback."""
        shadow = tempfile.mkdtemp(dir=self.dir)
        os.makedirs(os.path.join(shadow, "ClusterShell"))
        with open(os.path.join(shadow, "ClusterShell", "__init__.py"), "w") as f:
            f.write("raise ImportError('No module named ClusterShell')\n")
        env = ct.env()
        env["PYTHONPATH"] = shadow
        for name in ("stagebench-cluster", "stagebench-collect", "stagebench-sim",
                     "stagebench-cron"):
            p = subprocess.run(ct.command(name) + ["--help"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True, env=env,
                               timeout=60)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertEqual(p.stderr, "%s: needs the ClusterShell Python package (Debian: "
                             "python3-clustershell, RHEL: python3-clustershell from EPEL)\n"
                             % name)


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main(verbosity=2)
