# SPDX-License-Identifier: MIT
"""Shared code of the stagebench cluster scripts: node names and node sets, the tests and
their parts, atomic files, the results layout, and process control (a child subreaper that
can stop and reap every process it started, wherever they were reparented).

Standard library only; works with any Python 3.7+. ClusterShell is never imported: node sets
are expanded here, and clush is run as a command.
"""
import ctypes
import json
import os
import re
import signal
import subprocess
import sys
import time

VERSION = "0.1.0"

NODE_SCHEMA = "stagebench.node/1"
MANIFEST_SCHEMA = "stagebench.manifest/1"
REPORT_SCHEMA = "stagebench.report/1"
BASELINE_SCHEMA = "stagebench.baseline/1"

MANIFEST = "manifest.json"
INFO = "info.json"
REPORT_JSON = "report.json"
REPORT_TXT = "report.txt"
# Files of a results directory that are not node summaries.
RESERVED_FILES = (MANIFEST, INFO, REPORT_JSON)

# Exit codes, shared with the binary: 0 ok, 1 a node or test failed, 2 usage, 3 precondition.
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_PRECONDITION = 0, 1, 2, 3
EXIT_SIGINT, EXIT_SIGTERM = 130, 143

# The tests the binary knows, their parts, and what happens to their replica between
# repetitions (the spec: 1a, 1b and 2 recreated; 3 kept; 4 has none).
TESTS = {
    "1a": {"parts": ["1a"], "replica": True, "recreate": True},
    "1b": {"parts": ["1b"], "replica": True, "recreate": True},
    "2": {"parts": ["2a", "2b", "2c"], "replica": True, "recreate": True},
    "3": {"parts": ["3a", "3b"], "replica": True, "recreate": False},
    "4": {"parts": ["4a", "4b", "4c"], "replica": False, "recreate": False},
    "null": {"parts": ["null"], "replica": False, "recreate": False},
}
ALL_TESTS = ["1a", "1b", "2", "3", "4"]
PART_TEST = {p: t for t, d in TESTS.items() for p in d["parts"]}

# Filesystem types whose mount source names a server shared by many nodes.
NETWORK_FS = ("nfs", "nfs4", "cifs", "smb3", "lustre", "gpfs", "beegfs", "ceph", "glusterfs",
              "fuse.sshfs", "fuse.glusterfs", "fuse.beegfs", "fuse.cephfs", "9p", "panfs",
              "fuse.s3fs", "afs", "pvfs2", "orangefs", "wekafs", "fuse.weka")

_NODE_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$")
_RUN_ID_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")
_PART_RE = re.compile(r"^[A-Za-z0-9_]{1,16}$")


class UsageError(Exception):
    """Bad command-line input: the script prints it on one line and exits 2."""


def prog_name():
    return os.path.basename(sys.argv[0]) or "stagebench"


def say(msg, stream=None):
    """One line on stderr, prefixed with the program name."""
    print("%s: %s" % (prog_name(), msg), file=stream or sys.stderr, flush=True)


def fail(msg, code):
    say("error: " + msg)
    sys.exit(code)


# ---------------------------------------------------------------------------------------------
# Node names and node sets


def node_name_ok(name):
    """The binary's rule: 1 to 64 letters, digits, '.', '_' or '-', not starting with '.'/'-'."""
    return isinstance(name, str) and bool(_NODE_RE.match(name))


def check_node_name(name, origin="node name"):
    if not node_name_ok(name):
        raise UsageError("%s '%s' is not a valid node name: 1 to 64 letters, digits, '.', '_' or "
                         "'-', not starting with '.' or '-'" % (origin, name))
    return name


def run_id_ok(text):
    return isinstance(text, str) and bool(_RUN_ID_RE.match(text)) and ".." not in text


def natural_key(name):
    """node2 before node10."""
    return [(0, int(t), len(t)) if t.isdigit() else (1, t, 0)
            for t in re.split(r"(\d+)", name) if t != ""]


def _split_top(text, sep=","):
    """Split on sep outside brackets."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise UsageError("node set '%s': unbalanced ']'" % text)
        if ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise UsageError("node set '%s': unbalanced '['" % text)
    out.append("".join(cur))
    return out


def _expand_range(spec, whole):
    """'1-3,08-10/2' -> ['1','2','3','08','10']."""
    vals = []
    for item in spec.split(","):
        m = re.match(r"^(\d+)(?:-(\d+)(?:/(\d+))?)?$", item.strip())
        if not m:
            raise UsageError("node set '%s': bad range '%s'" % (whole, item))
        lo_s, hi_s, step_s = m.group(1), m.group(2), m.group(3)
        lo = int(lo_s)
        hi = int(hi_s) if hi_s is not None else lo
        step = int(step_s) if step_s else 1
        if hi < lo or step < 1:
            raise UsageError("node set '%s': bad range '%s'" % (whole, item))
        if (hi - lo) // step > 1000000:
            raise UsageError("node set '%s': range '%s' is too large" % (whole, item))
        width = len(lo_s) if (len(lo_s) > 1 and lo_s.startswith("0")) or \
            (hi_s is not None and len(lo_s) == len(hi_s)) else 0
        for v in range(lo, hi + 1, step):
            vals.append(str(v).zfill(width))
    return vals


def _expand_pattern(pat, whole):
    m = re.search(r"\[([^\[\]]*)\]", pat)
    if not m:
        return [pat]
    head, tail = pat[:m.start()], pat[m.end():]
    out = []
    for v in _expand_range(m.group(1), whole):
        out.extend(_expand_pattern(head + v + tail, whole))
    return out


def _group_nodes(group):
    """Nodes of a ClusterShell group through the nodeset command (ClusterShell's CLI)."""
    for tool in ("nodeset", "cluset"):
        try:
            p = subprocess.run([tool, "-e", "-S", "\n", "@" + group], capture_output=True,
                               text=True, timeout=60, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            continue
        names = [n for n in p.stdout.split() if n]
        if p.returncode != 0 or not names:
            raise UsageError("node group '@%s' is unknown or empty%s" % (
                group, ": " + p.stderr.strip() if p.stderr.strip() else ""))
        return names
    raise UsageError("node group '@%s': the nodeset command of ClusterShell is not installed"
                     % group)


def nodeset_expand(text):
    """Expand 'node[001-004,7],login1,@group' into a sorted list of unique, valid names."""
    if not isinstance(text, str) or not text.strip():
        raise UsageError("empty node set")
    names = []
    for elem in _split_top(text.strip()):
        elem = elem.strip()
        if not elem:
            continue
        if elem.startswith("@"):
            names.extend(_group_nodes(elem[1:]))
            continue
        names.extend(_expand_pattern(elem, text))
        if len(names) > 1000000:
            raise UsageError("node set '%s' is too large" % text)
    for n in names:
        check_node_name(n, "node set '%s': node" % text if len(text) < 80 else "node")
    return sorted(set(names), key=natural_key)


def nodeset_fold(names):
    """The short form of a list of names: ['n1','n2','n3','x'] -> 'n[1-3],x'."""
    groups, plain = {}, []
    for n in set(names):
        m = re.match(r"^(.*?)(\d+)(\D*)$", n)
        if not m:
            plain.append(n)
            continue
        digits = m.group(2)
        width = len(digits) if digits.startswith("0") and len(digits) > 1 else 0
        groups.setdefault((m.group(1), m.group(3), width), []).append(int(digits))
    parts = []
    for (pre, suf, width), nums in groups.items():
        nums.sort()
        ranges, start, prev = [], nums[0], nums[0]
        for v in nums[1:]:
            if v == prev + 1:
                prev = v
                continue
            ranges.append((start, prev))
            start = prev = v
        ranges.append((start, prev))

        def fmt(v):
            return str(v).zfill(width)

        if len(nums) == 1:
            parts.append("%s%s%s" % (pre, fmt(nums[0]), suf))
        else:
            text = ",".join(fmt(a) if a == b else "%s-%s" % (fmt(a), fmt(b)) for a, b in ranges)
            parts.append("%s[%s]%s" % (pre, text, suf))
    parts.extend(plain)
    return ",".join(sorted(parts, key=natural_key))


def _config_lines(path, what):
    """(line number, text) of a file's non-empty lines, '#' comments removed."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise UsageError("%s '%s': %s" % (what, path, e.strerror or e))
    for i, line in enumerate(lines, 1):
        line = line.split("#", 1)[0].strip()
        if line:
            yield i, line


def read_hostfile(path):
    """One node (or node set) a line; '#' starts a comment."""
    names = []
    for _, line in _config_lines(path, "host file"):
        for word in line.split():
            names.extend(nodeset_expand(word))
    if not names:
        raise UsageError("host file '%s' names no node" % path)
    return sorted(set(names), key=natural_key)


def read_servers_file(path):
    """'NODESET SERVER' lines ('#' comments): the /stage server of each node."""
    servers = {}
    for i, line in _config_lines(path, "servers file"):
        words = line.split()
        if len(words) != 2:
            raise UsageError("servers file '%s' line %d: expected 'NODESET SERVER'" % (path, i))
        nodes, server = words
        if not node_name_ok(server):
            raise UsageError("servers file '%s' line %d: bad server name '%s'" % (path, i, server))
        for n in nodeset_expand(nodes):
            if n in servers and servers[n] != server:
                raise UsageError("servers file '%s' line %d: node %s is already on server %s"
                                 % (path, i, n, servers[n]))
            servers[n] = server
    return servers


def server_of(node, fs):
    """The /stage server a node's directory is on, from its mount (info or summary 'fs').
    A network filesystem is named by its mount source (server:/export), shared by the nodes
    that mount it; a local filesystem is its node's own."""
    fs = fs or {}
    ftype = fs.get("type") or ""
    source = fs.get("source") or ""
    if ftype in NETWORK_FS or ftype.startswith("fuse.") and ":" in source or \
            re.match(r"^[^/\s]+:/", source) or source.startswith("//"):
        return source or ("%s:?" % ftype)
    return "%s:%s" % (node, source or "local")


# ---------------------------------------------------------------------------------------------
# Tests


def parse_tests(words):
    """The test names given, in order, 'all' expanded; parts (2a) are allowed too.
    Returns a list of (test, [parts])."""
    if not words:
        raise UsageError("name at least one test (1a 1b 2 3 4 all, or parts like 2a)")
    out = []
    seen = set()
    for w in words:
        names = ALL_TESTS if w == "all" else [w]
        for name in names:
            if name in TESTS:
                item = (name, list(TESTS[name]["parts"]))
            elif name in PART_TEST:
                item = (PART_TEST[name], [name])
            else:
                raise UsageError("unknown test '%s' (known: %s, all, or a part like 2a)"
                                 % (name, " ".join(TESTS)))
            for p in item[1]:
                if p in seen:
                    raise UsageError("test '%s' is named more than once" % p)
                seen.add(p)
            if out and out[-1][0] == item[0]:
                out[-1][1].extend(item[1])
            else:
                out.append(item)
    return out


def summary_name(node, part, rep):
    """The results layout: RESULTS/<run-id>/<node>.<part>.rep<R>.json."""
    return "%s.%s.rep%d.json" % (node, part, rep)


_SUMMARY_NAME_RE = re.compile(r"\.rep(\d+)\.json$")


def rep_offset_from_name(filename):
    """Repetitions in a file named by the launcher (x.rep3.json) count from 3."""
    m = _SUMMARY_NAME_RE.search(filename)
    return int(m.group(1)) - 1 if m else 0


# ---------------------------------------------------------------------------------------------
# Values


def parse_tolerance(text):
    """'15%' or '15' -> 0.15."""
    t = str(text).strip()
    if t.endswith("%"):
        t = t[:-1]
    try:
        v = float(t)
    except ValueError:
        raise UsageError("tolerance '%s' is malformed: expected a percentage like 15%%" % text)
    if not (0 <= v <= 10000):
        raise UsageError("tolerance '%s' is out of range: 0%% to 10000%%" % text)
    return v / 100.0


def parse_seconds(text, origin, lo=0.0, hi=7 * 86400.0):
    try:
        v = float(text)
    except (TypeError, ValueError):
        raise UsageError("%s '%s' is malformed: expected seconds" % (origin, text))
    if not (lo <= v <= hi) or v != v:
        raise UsageError("%s '%s' is out of range: %g to %g seconds" % (origin, text, lo, hi))
    return v


def fmt_time(s):
    if s is None:
        return "-"
    if s <= 0:
        return "0"
    if s < 1e-3:
        return "%.1f us" % (s * 1e6)
    if s < 1.0:
        return "%.2f ms" % (s * 1e3)
    return "%.3f s" % s


def fmt_bytes(n):
    if n is None:
        return "-"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return ("%.0f %s" % (n, unit)) if unit == "B" else ("%.2f %s" % (n, unit))
        n /= 1024.0
    return "%.2f PiB" % n


def fmt_rate(bps):
    return "-" if bps is None else fmt_bytes(bps) + "/s"


def fmt_pct(x):
    return "-" if x is None else "%+.0f%%" % (x * 100.0)


def utc(epoch):
    if not epoch:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(epoch)) + \
        (".%03d UTC" % int((epoch % 1) * 1000))


# ---------------------------------------------------------------------------------------------
# Files


def write_atomic(path, text):
    """Write text to path through a temporary file and a rename: never a half file."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    try:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_json_atomic(path, obj, indent=1):
    write_atomic(path, json.dumps(obj, indent=indent, sort_keys=False) + "\n")


def read_json(path):
    with open(path, "rb") as f:
        return json.loads(f.read())


def script_dir():
    return os.path.dirname(os.path.realpath(sys.argv[0]))


def find_sibling(name):
    """A program beside this script (installed together), else on PATH."""
    p = os.path.join(script_dir(), name)
    if os.access(p, os.X_OK) and not os.path.isdir(p):
        return p
    for d in os.environ.get("PATH", "").split(os.pathsep):
        q = os.path.join(d or ".", name)
        if os.access(q, os.X_OK) and not os.path.isdir(q):
            return q
    return None


def which(name):
    for d in os.environ.get("PATH", "").split(os.pathsep):
        q = os.path.join(d or ".", name)
        if os.access(q, os.X_OK) and not os.path.isdir(q):
            return q
    return None


# ---------------------------------------------------------------------------------------------
# Process control
#
# A launcher sets itself as a child subreaper: processes its children leave behind (a node
# process whose clush or pdsh parent gave up on it) are reparented to the launcher instead of
# init, so it can find, stop and reap every one of them by walking /proc. It only ever signals
# its own descendants, by pid.

PR_SET_CHILD_SUBREAPER = 36


def set_subreaper():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _proc_table():
    """{pid: (ppid, state)} of every process now."""
    table = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return table
    for e in entries:
        if not e.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % e, "rb") as f:
                data = f.read().decode("ascii", "replace")
        except OSError:
            continue
        rp = data.rfind(")")
        fields = data[rp + 2:].split()
        if len(fields) < 2:
            continue
        try:
            table[int(e)] = (int(fields[1]), fields[0])
        except ValueError:
            continue
    return table


def descendants(root=None, exclude=()):
    """Pids below root (default: this process), deepest first; zombies and the pids in
    exclude are left out (not their children)."""
    root = os.getpid() if root is None else root
    table = _proc_table()
    children = {}
    for pid, (ppid, _state) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, stack = [], [(root, 0)]
    while stack:
        pid, depth = stack.pop()
        for c in children.get(pid, ()):
            if c not in exclude and table.get(c, (0, "Z"))[1] != "Z":
                out.append((depth, c))
            stack.append((c, depth + 1))
    return [pid for _d, pid in sorted(out, reverse=True)]


def signal_pids(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
            if sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                os.kill(pid, signal.SIGCONT)  # a stopped process acts on it only when running
        except OSError:
            pass


def reap_orphans():
    """Collect the exit status of reparented children that have ended (never blocks)."""
    for pid, (ppid, state) in _proc_table().items():
        if ppid == os.getpid() and state == "Z":
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
            except OSError:
                pass


def stop_descendants(grace=3.0, exclude=(), first=signal.SIGTERM):
    """Signal every descendant (but exclude), wait up to grace seconds, then SIGKILL what is
    left, and reap what was reparented here. Returns the pids that had to be killed."""
    pids = descendants(exclude=exclude)
    if not pids:
        reap_orphans()
        return []
    signal_pids(pids, first)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        reap_orphans()
        left = [p for p in descendants(exclude=exclude) if p in pids]
        if not left:
            return []
        time.sleep(0.05)
    left = descendants(exclude=exclude)
    signal_pids(left, signal.SIGKILL)
    t = time.monotonic() + 2.0
    while time.monotonic() < t and descendants(exclude=exclude):
        reap_orphans()
        time.sleep(0.05)
    reap_orphans()
    return left


def wait_pid(proc, timeout):
    """proc.wait with a timeout; True if it ended."""
    try:
        proc.wait(timeout=timeout)
        return True
    except subprocess.TimeoutExpired:
        return False


def errno_text(e):
    return os.strerror(e.errno) if getattr(e, "errno", None) else str(e)

