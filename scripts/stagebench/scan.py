# SPDX-License-Identifier: MIT
"""The fast door to the node summaries: stagebench-scan (util/jscan.h) reads a chunk of them,
validates each as JSON and hands back its text without the three long arrays (the thread
plan, each part's per_thread, each histogram's buckets), each replaced by the number of a
block holding its reduction as summaries.py's fast path computes it. A summary it declines,
and every summary when the program is not there, is read by summaries.py alone: the door only
saves time, what the collector makes of a summary is the same either way.

The program: $STAGEBENCH_SCAN (a path, or "none" to read without it), else the one the running
command's front end names (libexec/stagebench/stagebench-scan of its install, the build tree's
own), else the stagebench-scan beside the catalogue in use (a build tree's catalogue.json, or
the binary it was read from)."""
import array
import os
import struct
import subprocess

from . import catalogue
from . import files

# SBSCAN2: the text of a record holds no repeated key in any object (the door compared them
# all; it declines a summary that has one), and is parsed without that check. SBSCAN3: a
# buckets block ends with the least and greatest index, the least count and their sum.
MAGIC = b"SBSCAN3\n"
_U32 = struct.Struct("=I")
_TYPED = struct.Struct("=dB")
_TOP = struct.Struct("=dBqq")
_SUMS = struct.Struct("=qdqBqBq")
_HIST = struct.Struct("=qqqBQ")
_program = []  # [path or None], once a process


class Declined(Exception):
    """The record does not read as the door's: the collector reads the summary itself."""


class Threads:
    """A per_thread block: n threads; times (bytes of an array of doubles: the times of those
    that ran, sorted, equal ones in their order); rel_min, rel_max (the first least and
    greatest release of those, of the type the summary wrote, None when none ran); top (the
    slowest (time, index, cpu), greatest first); sums: what selfcheck.py checks of the threads
    (the first release in ns, the greatest release offset + time and its thread's index, the
    ops and the bytes every thread has, each None when they differ), or None when there are no
    threads or one of their release_at_ns, ops and bytes is not an integer."""

    __slots__ = ("n", "times", "rel_min", "rel_max", "top", "sums")


class Door:
    """One scanned summary: its text (the long arrays replaced by block numbers), its blocks
    (Threads; ("plan", length); ("buckets", indexes, counts, figures): arrays of int64 and
    (least index, greatest index, least count, sum of the counts: None when one is negative
    or the sum is over 2**64 - 1), the figures 0 without buckets)."""

    __slots__ = ("text", "blocks")

    def __init__(self, text, blocks):
        self.text, self.blocks = text, blocks

    def _block(self, k):
        if type(k) is not int or not 0 <= k < len(self.blocks):
            raise Declined
        return self.blocks[k]

    def threads(self, k):
        """The Threads of block k; Declined when it is another."""
        b = self._block(k)
        if type(b) is not Threads:
            raise Declined
        return b

    def plan(self, k):
        """The thread plan's length of block k."""
        b = self._block(k)
        if type(b) is not tuple or b[0] != "plan":
            raise Declined
        return b[1]

    def buckets(self, k):
        """(indexes, counts, figures) of the buckets of block k."""
        b = self._block(k)
        if type(b) is not tuple or b[0] != "buckets":
            raise Declined
        return b[1], b[2], b[3]


def program():
    """The stagebench-scan to run, or None."""
    if not _program:
        env = os.environ.get("STAGEBENCH_SCAN")
        found = None
        if env:
            found = None if env == "none" else env
        else:
            origin = catalogue.load().origin
            beside = os.path.join(os.path.dirname(os.path.abspath(origin)), "stagebench-scan")
            for p in (files.SCAN_PROGRAM, beside):
                if p and os.access(p, os.X_OK) and not os.path.isdir(p):
                    found = p
                    break
        _program.append(found)
    return _program[0]


def _typed(data, at):
    v, is_int = _TYPED.unpack_from(data, at)
    return (int(v) if is_int else v), at + _TYPED.size


def _array(code, data, at, n):
    a = array.array(code)
    end = at + 8 * n
    if end > len(data):
        raise Declined
    a.frombytes(data[at:end])
    return a, end


def _threads(data, at):
    b = Threads()
    b.n = _U32.unpack_from(data, at)[0]
    ran = _U32.unpack_from(data, at + 4)[0]
    at += 8
    b.times = data[at:at + 8 * ran]
    at += 8 * ran
    if data[at]:
        b.rel_min, at = _typed(data, at + 1)
        b.rel_max, at = _typed(data, at)
    else:
        b.rel_min = b.rel_max = None
        at += 1
    ntop = _U32.unpack_from(data, at)[0]
    at += 4
    end = at + ntop * _TOP.size
    if end > len(data):
        raise Declined
    b.top = [(int(t) if is_int else t, index, cpu)
             for t, is_int, index, cpu in _TOP.iter_unpack(data[at:end])]
    at = end
    if data[at]:
        first, need, need_index, ops_same, ops, bytes_same, nbytes = _SUMS.unpack_from(
            data, at + 1)
        b.sums = (first, need, need_index, ops if ops_same else None,
                  nbytes if bytes_same else None)
        at += 1 + _SUMS.size
    else:
        b.sums = None
        at += 1
    return b, at


def _record(data, at):
    """(Door, the offset after it) of the 'D' record at data[at]."""
    n = _U32.unpack_from(data, at)[0]
    at += 4
    text = data[at:at + n].decode("ascii")
    at += n
    nblocks = _U32.unpack_from(data, at)[0]
    at += 4
    blocks = []
    for _ in range(nblocks):
        kind = data[at:at + 1]
        at += 1
        if kind == b"T":
            b, at = _threads(data, at)
        elif kind == b"P":
            b = ("plan", _U32.unpack_from(data, at)[0])
            at += 4
        elif kind == b"H":
            n = _U32.unpack_from(data, at)[0]
            idx, at = _array("q", data, at + 4, n)
            cnt, at = _array("q", data, at, n)
            lo_i, hi_i, lo_c, fits, total = _HIST.unpack_from(data, at)
            at += _HIST.size
            b = ("buckets", idx, cnt, (lo_i, hi_i, lo_c, total if fits else None))
        else:
            raise Declined
        blocks.append(b)
    return Door(text, blocks), at


def scan(paths, top):
    """[Door or None] for the summaries at paths (None: read it yourself), or None when the
    door cannot be used (no program, or it failed)."""
    prog = program()
    if prog is None or not paths or any("\0" in p for p in paths):
        return None
    try:
        proc = subprocess.run([prog, "--top", str(top)], input=b"".join(
            os.fsencode(p) + b"\0" for p in paths), stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, timeout=600)
    except (OSError, subprocess.SubprocessError):
        return None
    data = proc.stdout
    if proc.returncode != 0 or not data.startswith(MAGIC):
        return None
    out, at = [], len(MAGIC)
    try:
        for _ in paths:
            kind = data[at:at + 1]
            if kind == b"S":
                out.append(None)
                at += 1
            elif kind == b"D":
                d, at = _record(data, at + 1)
                out.append(d)
            else:
                return None
    except (struct.error, IndexError, UnicodeDecodeError, Declined):
        return None
    return out if at == len(data) else None
