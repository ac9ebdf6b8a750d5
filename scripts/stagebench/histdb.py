# SPDX-License-Identifier: MIT
"""The history database: every collected run, in one SQLite file (Python's sqlite3, no server).

Layout (integer keys, one row per node, part and repetition, clustered by run so that a night
is appended in one place and the last nights are read in one range):
  runs(run, run_id, started, scale, note, build, status, exit_code, validity, start_verdict,
       nodes_expected, nodes_failed, nodes_missing, verdicts, fingerprint, source, ingested_at,
       build_id)                       build: the SHA-256 of the executable the nodes ran
  nodes(node, name), servers(server, name), parts(part, name, test, rate_unit), statuses
  results(run, part, node, rep, server, status, node_time_s, rate, residency, start_offset_s,
          clock_offset_s)                               PRIMARY KEY (run, part, node, rep)
  levels(run, part, server, nodes, median_s, mad_s)     a server's night: the median node
  accepted(scope, name, part, from_run_id, from_started, accepted_at)

The file is ours before it is opened: created exclusively (never through a link) in a directory
that only this user (or root) can write, or, when it exists, a regular file of this user with
one name whose SQLite header carries this program's application id and a size its header
agrees with, and whose pages SQLite finds whole (_check_pages) before anything is read or
written. Anything else (another program's database, a damaged or truncated file, text) is
refused in one line and never written to. A run is recorded in one transaction (BEGIN
IMMEDIATE, WAL, a busy timeout), so two collectors at once neither lose nor double a run and a
killed one leaves nothing half done. PRAGMA user_version is the schema version; an older file
is migrated forward, step by step, in one transaction; a newer one is refused."""
import hashlib
import json
import os
import stat
import statistics
import struct
import sqlite3
import time
from urllib.parse import quote

from . import files

FORMAT = "stagebench.history"
APPLICATION_ID = 0x53424849  # "SBHI" in the SQLite header: a stagebench history
BUSY_TIMEOUT_S = 120.0
HEADER = b"SQLite format 3\x00"
# the statuses a result can have; a code never changes meaning once written
STATUSES = ("ok", "late", "failed", "interrupted", "orphaned", "inconsistent", "missing",
            "other")
OK_CODES = (0, 1)  # ok, late: their times count
MIXED = "mixed"  # runs.build of a run whose nodes did not all run the same executable


class Refused(Exception):
    """The file is not a usable stagebench history: one line saying why; it was left as is."""


# ---------------------------------------------------------------------------------------------
# The schema, as the steps that build it: a new file runs them all, an older one the rest.

def _script(db, text):
    """Each statement of text (executescript would commit the caller's transaction)."""
    for stmt in text.split(";"):
        if stmt.strip():
            db.execute(stmt)


def _step1(db):
    _script(db, """
        CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE runs(
            run INTEGER PRIMARY KEY, run_id TEXT NOT NULL UNIQUE, started REAL NOT NULL,
            scale TEXT, note TEXT, build TEXT, status TEXT, exit_code INTEGER, validity TEXT,
            start_verdict TEXT, nodes_expected INTEGER, nodes_failed INTEGER,
            nodes_missing INTEGER, verdicts TEXT, fingerprint TEXT NOT NULL, source TEXT,
            ingested_at REAL NOT NULL);
        CREATE INDEX runs_started ON runs(started);
        CREATE TABLE nodes(node INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
        CREATE TABLE servers(server INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
        CREATE TABLE parts(part INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, test TEXT,
                           rate_unit TEXT);
        CREATE TABLE statuses(status INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
        CREATE TABLE results(
            run INTEGER NOT NULL, part INTEGER NOT NULL, node INTEGER NOT NULL,
            rep INTEGER NOT NULL, server INTEGER NOT NULL, status INTEGER NOT NULL,
            node_time_s REAL, rate REAL, residency REAL, start_offset_s REAL,
            clock_offset_s REAL,
            PRIMARY KEY(run, part, node, rep)) WITHOUT ROWID;
    """)
    db.executemany("INSERT INTO statuses(status, name) VALUES (?, ?)", enumerate(STATUSES))
    db.executemany("INSERT INTO meta(key, value) VALUES (?, ?)",
                   [("format", FORMAT), ("created_at", repr(time.time()))])


def _step2(db):
    """Version 2: each server's night (the median node time of its nodes and their spread),
    derived from the results (filled here for the runs already recorded), and the changes
    taken as the new normal."""
    _script(db, """
        CREATE TABLE levels(
            run INTEGER NOT NULL, part INTEGER NOT NULL, server INTEGER NOT NULL,
            nodes INTEGER NOT NULL, median_s REAL NOT NULL, mad_s REAL NOT NULL,
            PRIMARY KEY(run, part, server)) WITHOUT ROWID;
        CREATE TABLE accepted(
            scope TEXT NOT NULL CHECK(scope IN ('node', 'server')), name TEXT NOT NULL,
            part TEXT NOT NULL, from_run_id TEXT NOT NULL, from_started REAL NOT NULL,
            accepted_at REAL NOT NULL, PRIMARY KEY(scope, name, part));
    """)
    runs = [r for (r,) in db.execute("SELECT run FROM runs ORDER BY run")]
    for run in runs:
        rows = db.execute("SELECT part, node, server, status, node_time_s FROM results "
                          "WHERE run = ?", (run,))
        db.executemany("INSERT INTO levels VALUES (?, ?, ?, ?, ?, ?)",
                       [(run,) + x for x in server_levels(rows)])


def _step3(db):
    """Version 3: runs.build is the build's digest, the SHA-256 of the executable the nodes ran
    (MIXED when they did not all run the same one), and the build id (git describe) that it
    held before moves to runs.build_id. A run recorded before keeps its build id; its digest is
    unknown (null) until it is ingested again: its fingerprint, of the facts as version 2 had
    them, is marked so, and the run ingested again is replaced (its figures the same)."""
    _script(db, """
        ALTER TABLE runs ADD COLUMN build_id TEXT;
        UPDATE runs SET build_id = build, build = NULL, fingerprint = 'v2 ' || fingerprint;
    """)


STEPS = (_step1, _step2, _step3)
VERSION = len(STEPS)


# ---------------------------------------------------------------------------------------------
# Opening: the file checked before SQLite touches it

def _check_header(path, size):
    """Refused unless the first bytes are a SQLite header of ours and the file is as long as
    the header says (a truncated copy is refused, not repaired)."""
    with open(path, "rb") as f:
        head = f.read(100)
    if len(head) < 100 or not head.startswith(HEADER):
        raise Refused("%s is not a SQLite database (not a stagebench history): left as it is"
                      % path)
    app = struct.unpack(">I", head[68:72])[0]
    if app != APPLICATION_ID:
        raise Refused("%s is a SQLite database of another program (application id %#x), not "
                      "a stagebench history: left as it is" % (path, app))
    page = struct.unpack(">H", head[16:18])[0]
    page = 65536 if page == 1 else page
    counter, pages, valid_for = struct.unpack(">I", head[24:28])[0], \
        struct.unpack(">I", head[28:32])[0], struct.unpack(">I", head[92:96])[0]
    if page < 512 or page & (page - 1):
        return "its page size (%d) is not one SQLite writes" % page
    if size % page:
        return "%d bytes is not a whole number of %d-byte pages" % (size, page)
    if counter == valid_for and pages and size < pages * page:
        return "%d bytes, but its header counts %d pages of %d bytes" % (size, pages, page)
    return None


def _others_file(path):
    """The lstat of path when it is a regular file of another user than this one, else None."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return st if stat.S_ISREG(st.st_mode) and st.st_uid != os.geteuid() else None


def _check_owners_dir(d, owner):
    """d, the directory of another user's history that root reads: a directory (not a link)
    of that user or root that no one else can write, so that what SQLite finds or makes beside
    the file (its -wal and -shm) can only be the owner's."""
    st = os.lstat(d)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid not in (owner, 0) or st.st_mode & 0o022:
        raise Refused("%s: another user's history is read only in a directory that only its "
                      "owner (uid %d) or root can write" % (d, owner))


def _checked_file(path, create, owner=None):
    """path as a file of ours (created exclusively when missing and create), or, owner given,
    of that user (root reading it); whether it is new (empty). Raises Refused or OSError."""
    d = os.path.dirname(os.path.abspath(path))
    if owner is not None:
        _check_owners_dir(d, owner)
    else:
        try:
            files.check_closed_dir(d)
        except files.UnsafePath as e:
            raise Refused("%s: the history must be in a directory only this user can write"
                          % e)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if not create:
            raise Refused("no history at %s (stagebench-history ingest, or a collected run, "
                          "creates it)" % path)
        try:
            files.open_new(path, 0o644, binary=True).close()
        except FileExistsError:  # another collector made it just now
            st = os.lstat(path)
        else:
            return True
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
        raise Refused("%s is not a regular file (a link or something else): not opened" % path)
    if st.st_uid != (os.geteuid() if owner is None else owner) or st.st_nlink != 1:
        raise Refused("%s is not a file of this user with one name: not opened" % path)
    if st.st_size == 0:
        return True
    # A checkpoint of another process may be writing the file's first page before its last:
    # a short file is refused only when it stays short.
    why = None
    for _ in range(10):
        why = _check_header(path, os.lstat(path).st_size)
        if why is None:
            return False
        time.sleep(0.2)
    raise Refused("%s is damaged or truncated (%s): left as it is" % (path, why))


class History:
    """An open history: db (sqlite3 connection, autocommit; transactions explicit)."""

    def __init__(self, path, db):
        self.path = path
        self.db = db
        self._names = {}

    def close(self):
        try:
            self.db.close()
        except sqlite3.Error:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- names to integer keys ------------------------------------------------------------

    def keys(self, table, names):
        """{name: key} of table (nodes, servers) for names, those missing inserted (inside the
        caller's transaction)."""
        col = {"nodes": "node", "servers": "server", "parts": "part"}[table]
        known = self._names.setdefault(table, {})
        missing = [n for n in set(names) if n not in known]
        if missing:
            self.db.executemany("INSERT OR IGNORE INTO %s(name) VALUES (?)" % table,
                                [(n,) for n in missing])
            known.update((n, k) for k, n in self.db.execute("SELECT %s, name FROM %s"
                                                            % (col, table)))
        return known

    def names(self, table):
        col = {"nodes": "node", "servers": "server", "parts": "part"}[table]
        return dict(self.db.execute("SELECT %s, name FROM %s" % (col, table)))


def open_history(path, create=True, readonly=False, reader=False):
    """The history at path, checked (and created when create), migrated to VERSION. Raises
    Refused (one line) or OSError. reader: the caller only reads it (runs, show, regressions),
    so that root may read another user's history: opened read-only, never migrated, refused
    when the file at path is another one once open."""
    theirs = _others_file(path) if os.geteuid() == 0 else None
    if theirs is not None and not reader:
        raise Refused("%s belongs to uid %d: root reads another user's history (runs, show, "
                      "regressions), never writes it" % (path, theirs.st_uid))
    if theirs is not None:
        create, readonly = False, True
    new = _checked_file(path, create and not readonly,
                        theirs.st_uid if theirs is not None else None)
    if new and readonly:
        raise Refused("%s is empty: no run recorded yet" % path)
    uri = "file:%s?mode=%s" % (quote(os.path.abspath(path)), "ro" if readonly else "rw")
    try:
        db = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except sqlite3.Error as e:
        raise Refused("%s cannot be opened (SQLite: %s): left as it is" % (path, e))
    h = History(path, db)
    try:
        _prepare(h, new, readonly)
    except sqlite3.DatabaseError as e:
        h.close()
        if isinstance(e, sqlite3.OperationalError):  # locked, an I/O error: not the file's
            raise
        raise Refused("%s is not a usable stagebench history (SQLite: %s): left as it is"
                      % (path, e))
    except Refused:
        h.close()
        raise
    if theirs is not None:
        now = os.lstat(path)
        if (now.st_dev, now.st_ino) != (theirs.st_dev, theirs.st_ino):
            h.close()
            raise Refused("%s was replaced while it was opened: not read" % path)
    return h


def damage(path, e):
    """A Refused for the SQLite error e met while reading or writing the history at path when
    it says the file is damaged (malformed, not a database), else None (a lock held too long,
    an I/O error, a full disk: the moment's, not the file's)."""
    if isinstance(e, sqlite3.DatabaseError) and not isinstance(
            e, (sqlite3.OperationalError, sqlite3.ProgrammingError)):
        return Refused("%s is damaged (SQLite: %s): left as it is" % (path, e))
    return None


def _check_pages(h):
    """Refused unless the pages SQLite reads and writes are whole, so that a file damaged past
    an intact header (pages overwritten in the middle) is found before anything is written to
    it or judged from it: each table but the results, with its indexes, through SQLite's
    quick_check; the results (nearly all of the file) by walking their whole b-tree with
    cell_size_check on, every page read and its header and cells checked as SQLite loads it
    (a full quick_check of a year of 10,000-node nights takes 8 to 20 s, the walk 1 to 4 s).
    Free pages are not read: SQLite checks a free-list page when it takes it, and a damaged
    one fails that transaction (rolled back, then refused as damage())."""
    db = h.db
    try:
        db.execute("PRAGMA cell_size_check = ON")
        tables = [t for (t,) in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        rows = []
        for t in tables:
            if t != "results":
                rows += [r for r in db.execute('PRAGMA quick_check("%s")'
                                               % t.replace('"', '""')) if r != ("ok",)]
        if "results" in tables:
            db.execute("SELECT count(*) FROM results").fetchone()
    except sqlite3.OperationalError:
        raise
    except sqlite3.DatabaseError as e:
        rows = [(str(e),)]
    if rows:
        why = "; ".join(" ".join(str(r[0]).split()) for r in rows[:3])
        raise Refused("%s is damaged (SQLite: %s): left as it is" % (h.path, why[:300]))


def _prepare(h, new, readonly):
    db = h.db
    db.execute("PRAGMA busy_timeout = %d" % int(BUSY_TIMEOUT_S * 1000))
    if not new:
        _check_pages(h)  # before the first write, and before anything is read from it
    if not readonly:
        if new:
            _create(h)
        _migrate(h)
        mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise Refused("%s: SQLite would not use its WAL journal here (%s)" % (h.path, mode))
        db.execute("PRAGMA synchronous = NORMAL")
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if readonly and 1 <= version < VERSION:
        raise Refused("%s has schema version %d, this stagebench reads %d: read-only here, it "
                      "is not migrated (its owner's next stagebench-history command migrates "
                      "it)" % (h.path, version, VERSION))
    if version != VERSION:
        raise Refused("%s has schema version %d, this stagebench reads %d" % (
            h.path, version, VERSION))
    row = db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
    if not row or row[0] != FORMAT:
        raise Refused("%s is not a stagebench history (no format mark): left as it is"
                      % h.path)


def _create(h):
    """A new, empty file gets the schema, in one transaction (in the rollback journal: a
    crash leaves it empty); a file another collector initialised meanwhile is left alone."""
    db = h.db
    db.execute("BEGIN IMMEDIATE")
    try:
        if db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0 and \
                db.execute("PRAGMA user_version").fetchone()[0] == 0:
            db.execute("PRAGMA application_id = %d" % APPLICATION_ID)
            for step in STEPS:
                step(db)
            db.execute("PRAGMA user_version = %d" % VERSION)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _migrate(h, upto=VERSION):
    db = h.db
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > VERSION:
        raise Refused("%s has schema version %d, newer than this stagebench knows (%d): "
                      "left as it is" % (h.path, version, VERSION))
    if version >= upto:
        return
    if version < 1:
        raise Refused("%s has no stagebench schema: left as it is" % h.path)
    db.execute("BEGIN IMMEDIATE")
    try:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        for step in STEPS[version:upto]:
            step(db)
        db.execute("PRAGMA user_version = %d" % max(version, upto))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


# ---------------------------------------------------------------------------------------------
# Recording a run

def median(xs):
    return statistics.median(xs) if xs else None


def mad(xs, med=None):
    """The median absolute deviation of xs (unscaled)."""
    if not xs:
        return None
    m = median(xs) if med is None else med
    return statistics.median([abs(x - m) for x in xs])


def night_values(rows):
    """{(part, node): value} from (part, node, status, node_time_s) rows: a node's night is
    the median of its repetitions that ran (ok or late)."""
    per = {}
    for part, node, status, t in rows:
        if status in OK_CODES and t is not None:
            per.setdefault((part, node), []).append(t)
    return {k: (v[0] if len(v) == 1 else statistics.median(v)) for k, v in per.items()}


def server_levels(rows):
    """(part, server, nodes, median, mad) per part and server of one run's (part, node,
    server, status, node_time_s) rows."""
    server_of = {}
    vals = []
    for part, node, server, status, t in rows:
        server_of[(part, node)] = server
        vals.append((part, node, status, t))
    by = {}
    for (part, node), v in night_values(vals).items():
        by.setdefault((part, server_of[(part, node)]), []).append(v)
    out = []
    for (part, server), xs in sorted(by.items()):
        m = median(xs)
        out.append((part, server, len(xs), m, mad(xs, m)))
    return out


class Run:
    """A run to record: its facts (run_id, started, scale, note, build (the executable's
    SHA-256, MIXED or None), build_id, status, exit_code, validity, start_verdict,
    nodes_expected, nodes_failed, nodes_missing, verdicts (a dict), source) and its results:
    (node, server, test, part, rep, status, node_time_s, rate, rate_unit, residency,
    start_offset_s, clock_offset_s) tuples."""

    FACTS = ("run_id", "started", "scale", "note", "build", "build_id", "status", "exit_code",
             "validity", "start_verdict", "nodes_expected", "nodes_failed", "nodes_missing",
             "verdicts", "source")

    def __init__(self, **facts):
        self.facts = dict((k, facts.get(k)) for k in self.FACTS)
        self.results = []

    def fingerprint(self):
        h = hashlib.sha256()
        facts = dict(self.facts)
        facts.pop("source", None)
        h.update(json.dumps(facts, sort_keys=True, default=str).encode())
        rows = sorted(self.results, key=lambda r: (r[3], r[0], r[4]))
        h.update(json.dumps(rows).encode())
        return h.hexdigest()


def status_code(name):
    return STATUSES.index(name) if name in STATUSES else STATUSES.index("other")


def record(h, run):
    """Record run in one transaction: 'recorded', 'already' (the same run was recorded before:
    nothing changes) or 'replaced' (a run of that id with other results: replaced whole)."""
    if not run.facts.get("run_id") or run.facts.get("started") is None:
        raise ValueError("a run needs an id and a start")
    fp = run.fingerprint()
    db = h.db
    db.execute("BEGIN IMMEDIATE")
    try:
        old = db.execute("SELECT run, fingerprint FROM runs WHERE run_id = ?",
                         (run.facts["run_id"],)).fetchone()
        if old and old[1] == fp:
            db.execute("ROLLBACK")
            return "already"
        if old:
            for table in ("results", "levels", "runs"):
                db.execute("DELETE FROM %s WHERE run = ?" % table, (old[0],))
        outcome = _insert(h, run, fp)
        db.execute("COMMIT")
    except BaseException:
        try:
            db.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        h._names = {}
        raise
    return "replaced" if old else outcome


def _insert(h, run, fp):
    db = h.db
    f = run.facts
    cur = db.execute(
        "INSERT INTO runs(run_id, started, scale, note, build, build_id, status, exit_code, "
        "validity, start_verdict, nodes_expected, nodes_failed, nodes_missing, verdicts, "
        "fingerprint, source, ingested_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (f["run_id"], f["started"], f["scale"], f["note"], f["build"], f["build_id"],
         f["status"], f["exit_code"], f["validity"], f["start_verdict"], f["nodes_expected"],
         f["nodes_failed"], f["nodes_missing"],
         json.dumps(f["verdicts"], sort_keys=True) if f["verdicts"] is not None else None,
         fp, f["source"], time.time()))
    rid = cur.lastrowid
    res = run.results
    nodes = h.keys("nodes", [r[0] for r in res])
    servers = h.keys("servers", [r[1] for r in res])
    parts = _part_keys(h, res)
    rows = [(rid, parts[r[3]], nodes[r[0]], r[4], servers[r[1]], status_code(r[5]), r[6],
             r[7], r[9], r[10], r[11]) for r in res]
    db.executemany("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   rows)
    db.executemany("INSERT INTO levels VALUES (?, ?, ?, ?, ?, ?)",
                   [(rid,) + x for x in server_levels((r[1], r[2], r[4], r[5], r[6])
                                                      for r in rows)])
    return "recorded"


def _part_keys(h, res):
    """{part name: key}, each part's test and rate unit kept (the first seen)."""
    seen = {}
    for r in res:
        seen.setdefault(r[3], (r[2], r[8]))
    h.db.executemany("INSERT OR IGNORE INTO parts(name, test, rate_unit) VALUES (?, ?, ?)",
                     [(p, t, u) for p, (t, u) in seen.items()])
    return dict((n, k) for k, n in h.db.execute("SELECT part, name FROM parts"))


# ---------------------------------------------------------------------------------------------
# Reading

def runs(h):
    """Every run, oldest first: [(run, run_id, started)]."""
    return list(h.db.execute("SELECT run, run_id, started FROM runs ORDER BY started, run_id"))


def run_facts(h, run):
    cols = ("run", "run_id", "started", "scale", "note", "build", "build_id", "status",
            "exit_code", "validity", "start_verdict", "nodes_expected", "nodes_failed",
            "nodes_missing", "verdicts", "source", "ingested_at")
    row = h.db.execute("SELECT %s FROM runs WHERE run = ?" % ", ".join(cols), (run,)).fetchone()
    if row is None:
        return None
    d = dict(zip(cols, row))
    d["verdicts"] = json.loads(d["verdicts"]) if d["verdicts"] else None
    return d


def run_parts(h, run_id):
    """The names of the parts that the run run_id holds (a set)."""
    return set(name for (name,) in h.db.execute(
        "SELECT DISTINCT parts.name FROM levels JOIN parts ON parts.part = levels.part "
        "JOIN runs ON runs.run = levels.run WHERE runs.run_id = ?", (run_id,)))


def find_run(h, run_id):
    row = h.db.execute("SELECT run, run_id, started FROM runs WHERE run_id = ?",
                       (run_id,)).fetchone()
    return row


def night_rows(h, run, part=None):
    """(part, node, server, rep, status, node_time_s, rate, residency, start_offset_s,
    clock_offset_s) of one run (one part of it)."""
    q = ("SELECT part, node, server, rep, status, node_time_s, rate, residency, "
         "start_offset_s, clock_offset_s FROM results WHERE run = ?")
    if part is None:
        return h.db.execute(q, (run,))
    return h.db.execute(q + " AND part = ?", (run, part))


def night_times(h, run, part):
    """{node: value} of one run and part (the median of a node's repetitions that ran)."""
    rows = h.db.execute("SELECT node, status, node_time_s FROM results WHERE run = ? AND "
                        "part = ?", (run, part))
    out = {}
    multi = {}
    for node, status, t in rows:
        if status in OK_CODES and t is not None:
            if node in out:
                multi.setdefault(node, [out[node]]).append(t)
            out[node] = t
    for node, ts in multi.items():
        out[node] = statistics.median(ts)
    return out


def levels(h, runs_, part):
    """{run: {server: (nodes, median, mad)}} of the given runs and part."""
    out = {}
    q = "SELECT run, server, nodes, median_s, mad_s FROM levels WHERE part = ? AND run IN (%s)"
    ids = list(runs_)
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        for run, server, n, m, d in h.db.execute(q % ",".join("?" * len(chunk)),
                                                 [part] + chunk):
            out.setdefault(run, {})[server] = (n, m, d)
    return out


def accept(h, scope, name, part, run_id, started):
    h.db.execute("BEGIN IMMEDIATE")
    try:
        h.db.execute("INSERT OR REPLACE INTO accepted VALUES (?, ?, ?, ?, ?, ?)",
                     (scope, name, part, run_id, started, time.time()))
        h.db.execute("COMMIT")
    except BaseException:
        h.db.execute("ROLLBACK")
        raise


def accepted(h):
    """{(scope, name, part): (from_run_id, from_started)}."""
    return dict(((s, n, p), (r, t)) for s, n, p, r, t, _a in
                h.db.execute("SELECT * FROM accepted"))
