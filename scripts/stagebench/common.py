# SPDX-License-Identifier: MIT
"""What every stagebench command shares: the results layout, exit codes, names and the
checks of command-line values, and the one-line messages. Standard library only."""
import functools
import gc
import os
import re
import sys
import time

NODE_SCHEMA = "stagebench.node/3"
MANIFEST_SCHEMA = "stagebench.manifest/2"
# The manifests the collector reads: /2 added the clock offsets and the server drop.
MANIFEST_SCHEMAS = ("stagebench.manifest/1", MANIFEST_SCHEMA)
REPORT_SCHEMA = "stagebench.report/3"
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
    """One line on stderr, prefixed with the program name; what came from a node or a file
    in it is escaped (safe_text)."""
    print("%s: %s" % (prog_name(), safe_text(msg)), file=stream or sys.stderr, flush=True)


def fail(msg, code):
    say("error: " + msg)
    sys.exit(code)


# ---------------------------------------------------------------------------------------------
# Node names and node sets


def node_name_ok(name):
    """The binary's rule: 1 to 64 letters, digits, '.', '_' or '-', not starting with '.'/'-'."""
    return isinstance(name, str) and bool(_NODE_RE.match(name))


# A server's name (common.server_of: a mount source, server:/export, or node:source): printable
# text, no control character, at most 255 characters.
_SERVER_RE = re.compile(r"^[^\x00-\x1f\x7f-\x9f]{1,255}\Z")


def server_name_ok(name):
    return isinstance(name, str) and bool(_SERVER_RE.match(name))


def check_node_name(name, origin="node name"):
    if not node_name_ok(name):
        raise UsageError("%s '%s' is not a valid node name: 1 to 64 letters, digits, '.', '_' or "
                         "'-', not starting with '.' or '-'" % (origin, name))
    return name


def part_name_ok(name):
    """A part's name as the binary writes one: 1 to 16 letters, digits or '_'."""
    return isinstance(name, str) and bool(_PART_RE.match(name))


def run_id_ok(text):
    return isinstance(text, str) and bool(_RUN_ID_RE.match(text)) and ".." not in text


_DIGITS_RE = re.compile(r"(\d+)")


@functools.lru_cache(maxsize=1 << 18)
def natural_key(name):
    """node2 before node10. Kept for the names met (a report sorts the same nodes again and
    again); the key is shared: not to be changed."""
    return [(0, int(t), len(t)) if t.isdigit() else (1, t, 0)
            for t in _DIGITS_RE.split(name) if t != ""]


def without_cycle_gc(fn):
    """fn with Python's cycle collector paused while it runs: what it builds (a record a
    summary, 100,000 of them) is freed by reference counting, and the collector's passes over
    every object kept, again and again as they grow, cost a fifth of the time (measured on
    tests/perf/collect_scale.py). Worker processes forked meanwhile inherit the pause."""
    @functools.wraps(fn)
    def paused(*args, **kwargs):
        was = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was:
                gc.enable()
    return paused


_SKELETON = str.maketrans("123456789", "000000000")


def natural_sorted(names, shorter_first=False):
    """sorted(names, key=natural_key) (shorter_first: by length, then so), without a key a
    name where it can do without: names of one skeleton (their digits read as 0, as
    node000001.2a.rep1.json and node000002.2a.rep1.json) have their numbers at the same
    places and of the same widths, so their plain order is their natural order."""
    names = list(names)
    if shorter_first:
        by_len = {}
        for n in names:
            by_len.setdefault(len(n), []).append(n)
        return [n for k in sorted(by_len) for n in natural_sorted(by_len[k])]
    if len({n.translate(_SKELETON) for n in names}) <= 1:
        return sorted(names)
    return sorted(names, key=natural_key)


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


def add_tolerance_option(ap):
    ap.add_argument("--tolerance", default="15", metavar="PCT",
                    help="allowed slowdown against the baseline, in percent, the %% sign "
                         "optional: 15 and 15%% both mean 15 percent (default: 15)")


def parse_tolerance(text):
    """A percentage, its sign optional: '15%' or '15' -> 0.15 (so a crontab line, where a
    bare % ends the command, needs none)."""
    t = str(text).strip()
    if t.endswith("%"):
        t = t[:-1]
    try:
        v = float(t)
    except ValueError:
        raise UsageError("tolerance '%s' is malformed: expected a percentage like 15 or 15%%"
                         % text)
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


def errno_text(e):
    return os.strerror(e.errno) if getattr(e, "errno", None) else str(e)



# ---------------------------------------------------------------------------------------------
# Text from nodes and files, on its way to a terminal or a log

_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def safe_text(text):
    """text with every control character but tab and newline written as \\xNN (or \\uNNNN),
    so that nothing read from a node or a file can drive the terminal it is printed on."""
    if not isinstance(text, str):
        text = str(text)
    # a printable text holds none of them (every one is a control character, none printable);
    # a long one with lines (a whole report) is checked without them, in C, as well
    if text.isprintable() or (len(text) > 4096 and
                              text.replace("\n", "").replace("\t", "").isprintable()):
        return text
    return _CONTROL_RE.sub(lambda m: "\\x%02x" % ord(m.group(0)), text)


def safe_json(obj):
    """A JSON value with every string in it (keys too) passed through safe_text: what a node
    or a file said, kept escaped. Its depth must be bounded (load_json bounds a file's)."""
    if isinstance(obj, str):
        return safe_text(obj)
    if isinstance(obj, list):
        return [safe_json(v) for v in obj]
    if isinstance(obj, dict):
        return {safe_text(k): safe_json(v) for k, v in obj.items()}
    return obj


# ---------------------------------------------------------------------------------------------
# Debian's Python packages a command needs

NEEDS = {
    "ClusterShell": "the ClusterShell Python package (Debian: python3-clustershell, RHEL: "
                    "python3-clustershell from EPEL)",
    "matplotlib": "the matplotlib Python package (Debian: python3-matplotlib, RHEL: "
                  "python3-matplotlib)",
}


def need(module):
    """Import module, or say in one line which package provides it and exit 2."""
    try:
        return __import__(module)
    except ImportError:
        say("needs %s" % NEEDS.get(module, "the Python module " + module))
        sys.exit(EXIT_USAGE)


def write_stdout(text):
    """text on stdout, flushed; True, or False once said on stderr why it could not be
    written (a full disk, a closed descriptor). A reader that went away (a closed pipe) is not
    an error. After a failure what is left in stdout's buffer is dropped, so that the
    interpreter's own flush at exit neither fails again nor prints a traceback."""
    try:
        if sys.stdout is None:
            raise OSError(9, os.strerror(9))
        sys.stdout.write(text)
        sys.stdout.flush()
        return True
    except BrokenPipeError:
        ok = True
    except OSError as e:
        say("error: cannot write stdout: %s" % errno_text(e))
        ok = False
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.close(fd)
    except OSError:
        pass
    return ok
