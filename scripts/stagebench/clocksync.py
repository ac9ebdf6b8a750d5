# SPDX-License-Identifier: MIT
"""Each node's wall-clock offset against the launch host, with its uncertainty.

A node's own clock cannot tell it that it is wrong, so the launcher measures it. Two methods:

  exchange  `stagebench clock` runs on every node over an open connection (ClusterShell.Task,
            the node's stdin kept open): after its header line, the launcher sends a token and
            the node answers with its CLOCK_REALTIME in ns, read just before the answer is
            written; the next token goes as soon as the answer is read, K times. The node's
            reading lies between the launcher's send and receive instants, so of the K samples
            the one with the least round trip is kept: offset = node_ns - midpoint,
            uncertainty = rtt/2 + the launcher's cost of reading its clock (as NTP and MPI
            clock synchronisation do). srun gives every task the same stdin: each token goes to
            every node at once, and the next once all answered (engines.BroadcastTalkRound).
  round     where no stdin can be kept open (pdsh): one-shot, from a round that prints the
            node's clock (the info round's clock.now); the reading lies within the round, so the
            offset is taken from the round's midpoint and the bound is half its duration.

offset_s is node minus launcher: positive when the node's clock is ahead.
"""
import json
import time

CLOCK_SCHEMA = "stagebench.clock/1"
SAMPLES = 8  # exchanges per node; the least round trip is kept
# the fastest a clock may drift against another, 500 ppm: the most a kernel's NTP discipline
# slews; an offset carried over an interval is uncertain by that much more of it
MAX_DRIFT = 500e-6
_TOKEN_MAX = 32
JUNK_LINES = 100  # lines a node may print before its header (a login banner, say)


def now_ns():
    """CLOCK_REALTIME in integer ns (time.time_ns from Python 3.7; 3.6 has only the float)."""
    f = getattr(time, "time_ns", None)
    return f() if f is not None else int(time.time() * 1e9)


def read_cost_s(reads=2000):
    """What one read of the launcher's clock costs (the mean over back-to-back reads), in s:
    part of every uncertainty, since each instant is read once on either side of an event."""
    t0 = now_ns()
    for _ in range(reads):
        now_ns()
    return max(now_ns() - t0, 1) / (reads + 1) / 1e9


def kept(samples):
    """The sample of least round trip among (send_ns, node_ns, recv_ns) triples (one
    received before it was sent is refused), or None."""
    good = [s for s in samples if s[2] >= s[0]]
    return min(good, key=lambda s: s[2] - s[0]) if good else None


def best_sample(samples):
    """The kept sample (kept()) as (offset_s, rtt_s), offset = node - midpoint of send and
    receive. None when there is none."""
    k = kept(samples)
    if k is None:
        return None
    send, node, recv = k
    # in integer ns until the end: epoch ns do not fit a double exactly
    return (2 * node - send - recv) / 2e9, (recv - send) / 1e9


def kept_instant(samples, default):
    """The instant (epoch s, this host's clock) of the kept exchange: the midpoint of its send
    and receive; default when there is none."""
    k = kept(samples)
    return default if k is None else (k[0] + k[2]) / 2e9


def entry(offset_s, rtt_s, cost_s, header, measured_at, samples):
    """One node's record for the manifest (CONTRACT-10 clock.start/end)."""
    header = header or {}
    ntp = header.get("ntp_synchronized")
    maxerr = header.get("maxerror_us")
    esterr = header.get("esterror_us")
    return {"offset_s": round(offset_s, 9), "uncertainty_s": round(rtt_s / 2 + cost_s, 9),
            "rtt_s": round(rtt_s, 9),
            "ntp_synchronized": ntp if isinstance(ntp, bool) else None,
            "maxerror_us": maxerr if isinstance(maxerr, int) and not isinstance(maxerr, bool)
            else None,
            "esterror_us": esterr if isinstance(esterr, int) and not isinstance(esterr, bool)
            else None,
            "measured_at": round(measured_at, 6), "samples": samples}


class Exchange(object):
    """The launcher's side of `stagebench clock` on every node of one round. on_line runs in
    the round's thread for each stdout line of a node, and returns what to write to that node's
    stdin at once (a token line), EOF when done, or None."""

    EOF = object()

    def __init__(self, samples=SAMPLES, before=()):
        self.k = samples
        self.before = tuple(before)  # schemas of JSON lines the command prints before its header
        self.header = {}  # node -> the header line's object
        self.samples = {}  # node -> [(send_ns, node_ns, recv_ns)]
        self.errors = {}  # node -> why its offset is not measured
        self._sent = {}  # node -> (token, send_ns)
        self._junk = {}  # node -> lines seen before its header

    def _next(self, node):
        token = "t%d" % len(self.samples[node])
        self._sent[node] = (token, now_ns())
        return (token + "\n").encode("ascii")

    def on_line(self, node, line, recv_ns):
        if node in self.errors:
            return None
        if node not in self.header:
            # what a login script or a wrapper prints before it is passed over (no token has
            # been sent yet); a JSON object of another kind is an answer, and a wrong one
            try:
                head = json.loads(line) if line.lstrip().startswith("{") else None
            except ValueError:
                head = None
            if head is None or isinstance(head, dict) and head.get("schema") in self.before:
                self._junk[node] = self._junk.get(node, 0) + 1
                if self._junk[node] <= JUNK_LINES:
                    return None
            if not isinstance(head, dict) or head.get("schema") != CLOCK_SCHEMA:
                self.errors[node] = "no %s header among its first lines" % CLOCK_SCHEMA
                return self.EOF
            self.header[node] = head
            self.samples[node] = []
            return self._next(node)
        sent = self._sent.pop(node, None)
        parts = line.split()
        if sent is None or len(parts) != 2 or parts[0] != sent[0] or not parts[1].isdigit() \
                or len(parts[0]) > _TOKEN_MAX:
            self.errors[node] = "an answer that does not match the token sent: %r" % line[:80]
            return self.EOF
        self.samples[node].append((sent[1], int(parts[1]), recv_ns))
        if len(self.samples[node]) < self.k:
            return self._next(node)
        return self.EOF

    def results(self, nodes, cost_s, measured_at):
        """({node: entry}, {node: why not measured}) for the nodes of the round; an entry's
        measured_at is the instant of its kept exchange (the midpoint of its send and receive),
        measured_at where a node's samples do not say."""
        got, why = {}, {}
        for n in nodes:
            best = best_sample(self.samples.get(n, []))
            if n in self.errors:
                why[n] = self.errors[n]
            elif best is None or len(self.samples[n]) < self.k:
                why[n] = "%d of %d timestamp exchanges answered" % (
                    len(self.samples.get(n, [])), self.k) if n in self.header else \
                    "no `stagebench clock` header (an older stagebench, or it did not start)"
            else:
                got[n] = entry(best[0], best[1], cost_s, self.header[n],
                               kept_instant(self.samples[n], measured_at),
                               len(self.samples[n]))
        return got, why


def from_round(infos, t0, t1, cost_s):
    """The round method: {node: entry} from a round's `stagebench info --format json` objects
    (their clock.now, a float epoch) and the launcher's instants t0 before it started, t1 after
    it ended. Nodes without a usable clock.now are left out."""
    got = {}
    for n, info in infos.items():
        clock = info.get("clock") if isinstance(info, dict) else None
        now = clock.get("now") if isinstance(clock, dict) else None
        if not isinstance(now, (int, float)) or isinstance(now, bool):
            continue
        # the float now has about 0.24 us of resolution at today's epoch: 1 us more
        got[n] = entry(now - (t0 + t1) / 2.0, t1 - t0, cost_s + 1e-6, clock, t1, 1)
    return got


def out_of_tolerance(measured, max_offset):
    """The nodes whose |offset| + uncertainty exceeds max_offset, sorted by that bound."""
    out = [(abs(e["offset_s"]) + e["uncertainty_s"], n) for n, e in measured.items()
           if abs(e["offset_s"]) + e["uncertainty_s"] > max_offset]
    return [n for _b, n in sorted(out, reverse=True)]


def describe(e):
    """'2.503 s ahead of this host (+- 0.41 ms)' for a node's entry."""
    off = e["offset_s"]
    return "%s %s this host (+- %s)" % (seconds(abs(off)), "ahead of" if off >= 0 else "behind",
                                        seconds(e["uncertainty_s"]))


def seconds(s):
    if s >= 0.1:
        return "%.3f s" % s
    if s >= 1e-4:
        return "%.2f ms" % (s * 1e3)
    return "%.1f us" % (s * 1e6)
