# SPDX-License-Identifier: MIT
"""Process control of the launchers: their descendants found, signalled and stopped, by pid."""
import os
import signal
import subprocess
import time

# Process control
#
# A launcher only ever signals its own descendants, by pid, and never reaps a process it did
# not start itself: a round's processes are its engine's (ClusterShell, or a pdsh or srun in a
# session of its own) to kill and reap. Taking an exit status from under ClusterShell leaves it
# an ECHILD that ends its task.


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


def live_others(name, limit=-1):
    """(pid, contents of /proc/PID/name, at most limit bytes) of each live process but this
    one; zombies and processes that end or deny while being read are left out."""
    for e in os.listdir("/proc"):
        if not e.isdigit() or int(e) == os.getpid():
            continue
        try:
            with open("/proc/%s/%s" % (e, name), "rb") as f:
                data = f.read(limit)
            with open("/proc/%s/stat" % e, "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != b"Z":
            yield int(e), data


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


def start_time(pid):
    """The start time of process pid (field 22 of /proc/PID/stat, clock ticks after boot): with
    its pid, it names that process. None when there is no such process."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def in_sessions(sids):
    """The live processes (zombies left out) whose session is one of sids: what the node
    commands that a round started with setsid (each its own session) left running, wherever
    they were reparented."""
    out = []
    if not sids:
        return out
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % e, "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            if fields[0] != b"Z" and int(fields[3]) in sids:
                out.append(int(e))
        except (OSError, IndexError, ValueError):
            continue
    return out


def signal_group(pgid, sig):
    """sig to the process group pgid (a command started in a session of its own: it and what
    it started); True when there was one."""
    try:
        os.killpg(pgid, sig)
        return True
    except OSError:
        return False


def stop_descendants(grace=3.0, exclude=(), first=signal.SIGTERM):
    """Signal every descendant (but exclude), wait up to grace seconds, then SIGKILL what is
    left (a zombie counts as gone: its parent reaps it). Returns the pids that had to be
    killed."""
    pids = descendants(exclude=exclude)
    if not pids:
        return []
    signal_pids(pids, first)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        left = [p for p in descendants(exclude=exclude) if p in pids]
        if not left:
            return []
        time.sleep(0.05)
    left = descendants(exclude=exclude)
    signal_pids(left, signal.SIGKILL)
    t = time.monotonic() + 2.0
    while time.monotonic() < t and descendants(exclude=exclude):
        time.sleep(0.05)
    return left


def raise_fd_limit():
    """The soft limit of open descriptors raised to the hard one; (soft now, hard: None when
    unlimited), or (None, None) when it cannot be read."""
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard == resource.RLIM_INFINITY or soft < hard:
            want = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
                soft = want
            except (ValueError, OSError):
                pass
        return soft, None if hard == resource.RLIM_INFINITY else hard
    except (ImportError, ValueError, OSError):
        return None, None


def wait_pid(proc, timeout):
    """proc.wait with a timeout; True if it ended."""
    try:
        proc.wait(timeout=timeout)
        return True
    except subprocess.TimeoutExpired:
        return False




def run_capture(cmd, timeout, raise_timeout=True, **popen):
    """Run cmd (a list) with no stdin, and popen's other Popen arguments (env, cwd...); (exit
    status, stdout, stderr) as text. Raises OSError or subprocess.TimeoutExpired (the process
    is killed then); without raise_timeout, a process that timed out is killed and its status
    is None, with what it wrote."""
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, **popen)
    status = None
    try:
        out, err = p.communicate(timeout=timeout)
        status = p.returncode
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        if raise_timeout:
            raise
    return status, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def forward_signals(proc):
    """SIGINT and SIGTERM to this process go on to proc (a child in its own session, which
    a Ctrl-C on the terminal does not reach otherwise)."""
    def forward(signum, _frame):
        try:
            os.kill(proc.pid, signum)
        except OSError:
            pass

    signal.signal(signal.SIGINT, forward)
    signal.signal(signal.SIGTERM, forward)
