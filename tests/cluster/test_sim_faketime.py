# SPDX-License-Identifier: MIT
"""stagebench-sim --clock-skew preloads libfaketime's multi-threaded library (libfaketimeMT.so.1,
found in the multiarch library directory), never the single-threaded one, into the node's
multi-threaded stagebench: seen in the maps of the real node process while it waits for its
start, and in the offset the launcher measured."""
import json
import os
import subprocess
import sysconfig
import time
import unittest

import clustertest as ct


def node_processes(binary, marker):
    """{pid: its mapped files} of the live processes running binary whose environment holds
    marker (bytes)."""
    out = {}
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        try:
            if os.path.realpath("/proc/%s/exe" % e) != binary:
                continue
            with open("/proc/%s/environ" % e, "rb") as f:
                if marker not in f.read().split(b"\0"):
                    continue
            with open("/proc/%s/maps" % e) as f:
                out[int(e)] = set(line.split()[-1] for line in f if "/" in line)
        except OSError:
            continue
    return out


class ClockSkew(ct.TempDirCase):
    def test_library_is_the_multithreaded_one_of_the_multiarch_dir(self):
        from stagebench import sim
        multiarch = sysconfig.get_config_var("MULTIARCH")
        self.assertTrue(multiarch, "this Python names no multiarch directory")
        want = "/usr/lib/%s/faketime/libfaketimeMT.so.1" % multiarch
        self.assertTrue(os.path.exists(want), "libfaketime (Debian: faketime) is needed")
        self.assertEqual(sim.faketime_library(), want)
        text = sim.wrapper("/bin/stagebench", "node2", "server0", "/stage", [0], None, "r",
                           (want, 2.5))
        self.assertIn("LD_PRELOAD=%s " % want, text)
        self.assertIn("FAKETIME=+2.5 ", text)

    def test_node_process_runs_with_libfaketimeMT(self):
        from stagebench import sim
        lib = sim.faketime_library()
        self.assertIsNotNone(lib, "libfaketime (Debian: faketime) is needed")
        binary = os.path.realpath(ct.BINARY)
        os.mkdir(self.path("stage"))
        proc = subprocess.Popen(ct.command("stagebench-sim") + [
            "--nodes", "2", "--servers", "1", "--dir", self.path("stage"), "--results",
            self.path("results"), "--run-id", "skew", "--stagebench", ct.BINARY, "--scale",
            "tiny", "--lead", "10", "--clock-skew", "node2=+2.5", "--no-report", "1a"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
            env=ct.env())
        self.addCleanup(lambda: proc.poll() is not None or (proc.kill(), proc.wait()))
        seen = {}
        deadline = time.monotonic() + 120
        while not seen and proc.poll() is None and time.monotonic() < deadline:
            # a process is looked at once the loader is done (libc mapped: the preloaded
            # library comes before it), not in the instant after its exec
            seen = {pid: maps for pid, maps in node_processes(binary, b"FAKETIME=+2.5").items()
                    if any(os.path.basename(m).startswith("libc.so") for m in maps)}
            time.sleep(0.1)
        out, err = proc.communicate(timeout=180)
        self.assertTrue(seen, "no skewed node process seen\n" + out + err)
        for pid, maps in seen.items():
            self.assertIn(lib, maps, pid)
            self.assertFalse([m for m in maps if os.path.basename(m) == "libfaketime.so.1"],
                             "the single-threaded libfaketime is preloaded")
        self.assertIn(proc.returncode, (0, 1), out + err)
        with open(self.path("results", "skew", "manifest.json")) as f:
            clock = json.load(f)["clock"]["start"]
        self.assertAlmostEqual(clock["node2"]["offset_s"], 2.5, delta=0.1)
        self.assertAlmostEqual(clock["node1"]["offset_s"], 0.0, delta=0.1)


if __name__ == "__main__":
    ct.setup_from_argv()
    unittest.main(verbosity=2)
