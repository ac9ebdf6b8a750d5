# SPDX-License-Identifier: MIT
"""The tests and parts the binary knows, and its version: the catalogue that
`stagebench list --format json` prints (schema stagebench.catalogue/1). It is read from a
catalogue.json installed with this package (generated at build time by the built binary), or
from the binary itself, so that no test, part or version is written twice."""
import argparse
import json
import os
import re
import subprocess
import sys

from .common import UsageError
from .files import find_sibling
from .procs import run_capture

SCHEMA = "stagebench.catalogue/1"
FILE = "catalogue.json"


# What a part counts, and the unit of its rate (per second of its time).
COUNTED = ("bytes read", "bytes written", "pages touched", "operations")
RATE_UNITS = ("B/s", "pages/s", "ops/s")
TIERS = ("node_cache", "server_cache", "server_disk", None)
# What a thread of a part counts (its "expect"), each the product of these parameters of the
# part, named as the summary names them ([]: none counted, 0).
COUNTS = ("ops", "bytes", "files")
PARAMS = ("count", "chunk_bytes", "file_bytes", "passes")
OPTION_TYPES = ("count", "integer", "size", "seconds")
SCOPES = ("part", "test", "run")

_WHOLE = re.compile(r"^[0-9]+$")
_SECONDS = re.compile(r"^[0-9]+(\.[0-9]+)?s?$")


class Option:
    """A numeric option of `stagebench run` as the catalogue gives it: its range and its
    scope (part: refused when the run names more than one part; test: more than one test;
    run: always allowed)."""

    __slots__ = ("option", "type", "min", "max", "scope", "dest")

    def __init__(self, d):
        self.option = str(d["option"])
        self.type = _one_of(d["type"], OPTION_TYPES, "type of " + self.option)
        self.min, self.max = float(d["min"]), float(d["max"])
        self.scope = _one_of(d["scope"], SCOPES, "scope of " + self.option)
        self.dest = self.option.lstrip("-").replace("-", "_")

    def check(self, value):
        """A value given on the command line against the range: UsageError, in the binary's
        words, when it is malformed or out of range. A size is left to the binary's check."""
        text = str(value)
        if self.type == "size":
            return
        if self.type == "seconds":
            ok, form = _SECONDS.match(text), "seconds from %g to %g, fractions allowed" % (
                self.min, self.max)
            v = float(text.rstrip("s")) if ok else None
        else:
            ok, form = _WHOLE.match(text), "a whole number from %s to %s" % (
                _whole(self.min), _whole(self.max))
            v = int(text) if ok else None
        if v is None:
            raise UsageError("%s '%s' is malformed: expected %s" % (self.option, text, form))
        if not (self.min <= v <= self.max):
            raise UsageError("%s '%s' is out of range: expected %s" % (self.option, text, form))


def _expect(d, part):
    """A part's "expect" ({count: [parameter...]} for ops, bytes, files), checked; None from
    an older binary's catalogue, which has none (its summaries' counts are then not checked)."""
    if d is None:
        return None
    if not isinstance(d, dict) or sorted(d) != sorted(COUNTS):
        raise ValueError("expect of part %s is not {%s}" % (part, ", ".join(COUNTS)))
    for k, names in d.items():
        if not isinstance(names, list) or not all(n in PARAMS for n in names):
            raise ValueError("expect.%s of part %s is not a list of %s" % (
                k, part, ", ".join(PARAMS)))
    return {k: list(v) for k, v in d.items()}


def _whole(v):
    """A range bound as the binary prints a whole number's (2^64 - 1 is no double)."""
    return "18446744073709551615" if v >= 18446744073709551615.0 else "%.0f" % v


def _one_of(v, allowed, what):
    if v not in allowed:
        raise ValueError("%s is %r, not one of %s" % (what, v, ", ".join(map(str, allowed))))
    return v


class Catalogue:
    """tests: {test: its entry}, in the binary's order; parts: {part: its entry};
    all_tests: what 'all' runs; part_test: {part: test}; version: the binary's; scales: the
    scale names; options: [Option] of `stagebench run`.

    A test's entry: parts, title, replica (it reads a replica), recreate (the spec recreates
    it between repetitions), needs_prepare, in_all, server_drop (the site's server cache drop
    applies before its parts). A part's: the catalogue's own object, whose counted, rate_unit
    and tier are checked."""

    def __init__(self, doc, origin):
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            raise UsageError("%s is not a stagebench catalogue (%s)" % (origin, SCHEMA))
        self.origin = origin  # the file or the binary it was read from
        try:
            self.version = str(doc["version"])
            self.scales = [str(s) for s in doc["scales"]]
            self.tests = {}
            for t in doc["tests"]:
                self.tests[str(t["test"])] = {
                    "parts": [str(p) for p in t["parts"]], "title": str(t["title"]),
                    "replica": bool(t["has_replica"]), "recreate": bool(t["recreate"]),
                    "needs_prepare": bool(t["needs_prepare"]), "in_all": bool(t["in_all"]),
                    "server_drop": bool(t["server_drop"])}
            self.parts = {str(p["part"]): dict(p) for p in doc["parts"]}
            for name, p in self.parts.items():
                _one_of(p["counted"], COUNTED, "counted of part " + name)
                _one_of(p["rate_unit"], RATE_UNITS, "rate_unit of part " + name)
                _one_of(p["tier"], TIERS, "tier of part " + name)
                p["expect"] = _expect(p.get("expect"), name)
            self.options = [Option(o) for o in doc["options"]]
        except (KeyError, TypeError, ValueError) as e:
            raise UsageError("%s: a malformed catalogue (%s)" % (origin, e))
        self.all_tests = [t for t, d in self.tests.items() if d["in_all"]]
        self.part_test = {p: t for t, d in self.tests.items() for p in d["parts"]}

    def tests_where(self, key):
        """The tests, in the catalogue's order, whose entry's key is true (replica, recreate,
        server_drop...)."""
        return [t for t, d in self.tests.items() if d[key]]

    def parts_where(self, key, value):
        """The parts, in the catalogue's order, whose key is value (rate_unit, tier...)."""
        return [p for t in self.tests for p in self.tests[t]["parts"]
                if self.parts.get(p, {}).get(key) == value]

    def parse_tests(self, words):
        """The test names given, in order, 'all' expanded; parts (2a) are allowed too.
        Returns a list of (test, [parts])."""
        if not words:
            raise UsageError("name at least one test (%s all, or parts like 2a)"
                             % " ".join(self.all_tests))
        out = []
        seen = set()
        for w in words:
            for name in (self.all_tests if w == "all" else [w]):
                if name in self.tests:
                    item = (name, list(self.tests[name]["parts"]))
                elif name in self.part_test:
                    item = (self.part_test[name], [name])
                else:
                    raise UsageError("unknown test '%s' (known: %s, all, or a part like 2a)"
                                     % (name, " ".join(self.tests)))
                for p in item[1]:
                    if p in seen:
                        raise UsageError("test '%s' is named more than once" % p)
                    seen.add(p)
                if out and out[-1][0] == item[0]:
                    out[-1][1].extend(item[1])
                else:
                    out.append(item)
        return out


def from_binary(binary):
    try:
        rc, out, err = run_capture([binary, "list", "--format", "json"], 60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UsageError("cannot read the test catalogue from %s: %s" % (binary, e))
    if rc != 0:
        raise UsageError("'%s list --format json' failed: %s" % (binary, err.strip()))
    try:
        doc = json.loads(out)
    except ValueError:
        raise UsageError("'%s list --format json' printed no catalogue" % binary)
    return Catalogue(doc, binary)


def from_file(path):
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read(1 << 20).decode("utf-8"))
    except OSError as e:
        raise UsageError("cannot read the test catalogue %s: %s" % (path, e.strerror or e))
    except ValueError:
        raise UsageError("%s is not a stagebench catalogue (%s)" % (path, SCHEMA))
    return Catalogue(doc, path)


_loaded = {}


def load(binary=None):
    """The catalogue: of binary when one is given; else the one a binary was loaded from
    earlier in this process (the launcher's: its report then reads the catalogue of the binary
    it launched with), else $STAGEBENCH_CATALOGUE (a file), the catalogue.json installed with
    this package, or the stagebench beside the command or on PATH."""
    key = binary or ""
    if key in _loaded:
        return _loaded[key]
    if binary:
        cat = from_binary(binary)
        _loaded.setdefault("", cat)
    else:
        env = os.environ.get("STAGEBENCH_CATALOGUE")
        installed = os.path.join(os.path.dirname(os.path.abspath(__file__)), FILE)
        if env:
            cat = from_file(env)
        elif os.path.isfile(installed):
            cat = from_file(installed)
        else:
            found = find_sibling("stagebench")
            if found is None:
                raise UsageError("no test catalogue: install stagebench (its catalogue.json), "
                                 "put the stagebench binary on PATH, or set "
                                 "STAGEBENCH_CATALOGUE")
            cat = from_binary(found)
    _loaded[key] = cat
    return cat


class VersionAction(argparse.Action):
    """--version: the program's name and the version of the catalogue (the binary's)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="show the version and exit"):
        super(VersionAction, self).__init__(option_strings=option_strings, dest=dest,
                                            default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            version = load().version
        except UsageError as e:
            parser.exit(2, "%s: error: %s\n" % (parser.prog, e))
        sys.stdout.write("%s %s\n" % (parser.prog, version))
        sys.stdout.flush()
        parser.exit(0)
