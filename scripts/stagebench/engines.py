# SPDX-License-Identifier: MIT
"""Engines: how a command reaches a set of nodes, and what each node said.

Every engine starts a round (one command on a set of nodes, with a time limit) and gives back
a Round: wait for it, stop it, and read each node's Outcome (exit status, whether it timed
out, its stdout and stderr lines). The clush engine runs in this process on ClusterShell.Task
(ssh, or ClusterShell's exec worker for `--exec`: one local command per node name, %h being
the name), with per-node events and writing to a node's stdin; pdsh and srun are commands run
as subprocesses whose output is parsed.

A command is given as a list of arguments in which NODE stands for the node's name (exec mode
only); a command line a remote shell reads is built with every argument quoted.
"""
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time

from . import clocksync
from . import procs
from .common import UsageError, node_name_ok, safe_text
from .files import open_new, which

NODE = "\0h"  # placeholder for the node name in a command, substituted per node by the engine


class Outcome:
    """What one node did in a round: its exit status (None: unknown, or still running),
    whether it ran out of its own time limit, whether the round ended before it did (aborted:
    the round's bound, a stop, an engine error: never the node's own failure), its stdout and
    stderr lines, the machine reason of its error where the node gave one (an armed run's
    state), and when its command started and ended (time.time(); None where the engine does
    not say)."""
    __slots__ = ("rc", "timeout", "aborted", "out", "err", "reason", "started", "ended")

    def __init__(self):
        self.rc = None
        self.timeout = False
        self.aborted = False
        self.out = []
        self.err = []
        self.reason = None
        self.started = None
        self.ended = None


class FileSink(object):
    """Each node's stdout lines into a file of its own, DIRECTORY/<node><suffix>, created
    exclusively on its first line, written as they arrive (a newline after each): what a gather
    round's nodes print is kept on disk, never in memory."""

    def __init__(self, directory, suffix):
        self.directory = directory
        self.suffix = suffix
        self.files = {}
        self.errors = {}

    def write(self, node, data):
        """data (bytes, a line without its newline) of node."""
        if node in self.errors:
            return
        f = self.files.get(node)
        if f is None:
            if not node_name_ok(node):
                self.errors[node] = "its name cannot name a file"
                return
            try:
                f = open_new(os.path.join(self.directory, node + self.suffix), binary=True)
            except OSError as e:
                self.errors[node] = "cannot write what it sent: %s" % (e.strerror or e)
                return
            self.files[node] = f
        f.write(data + b"\n")

    def close(self):
        """Every file closed; {node: its path}."""
        for f in self.files.values():
            f.close()
        return {n: os.path.join(self.directory, n + self.suffix) for n in self.files}


def shell_line(args):
    """One line for a remote shell: every argument quoted."""
    for a in args:
        if NODE in a:
            raise ValueError("a node-name placeholder outside exec mode")
    return " ".join(shlex.quote(a) for a in args)


def _exec_arg(a, braced=True):
    """An argument for an exec worker's %h template: % doubled, NODE as %{h} (clush) or %h
    (pdsh, whose %h is never part of a longer name)."""
    return a.replace("%", "%%").replace(NODE, "%{h}" if braced else "%h")


DEFAULT_CONNECT_TIMEOUT = 10.0  # s a node's connection may take (ssh ConnectTimeout, pdsh -t)
ROUND_MARGIN_S = 30.0  # a round's bound past what its waves of per-node limits allow


class Engine:
    """What the engines share: name, exec mode, extra options, fanout, and the per-node
    connect time limit (connect_timeout, None: the engine's own or DEFAULT_CONNECT_TIMEOUT)."""
    tool = None
    package = None
    can_talk = False  # whether a round can converse with each node over its stdin
    topology = None  # ClusterShell's propagation tree (--topology), the clush engine's only
    # the launcher's open descriptors a connection in flight costs (the pipes of one ssh);
    # None: the connections are another process's (pdsh, srun)
    fds_per_connection = None

    def __init__(self, name, exec_mode, options, fanout):
        self.name = name
        self.exec_mode = exec_mode
        self.options = list(options)
        self.fanout = fanout
        self.remote = not exec_mode
        self.connect_timeout = None

    def check_installed(self):
        if not which(self.tool):
            raise UsageError("%s is not installed (Debian: %s)" % (self.tool, self.package))

    def fan(self, nodes):
        return str(self.fanout or max(len(nodes), 1))

    def connect_s(self):
        """The time a node's connection may take before it counts as failed (0 in exec mode:
        there is none)."""
        if self.exec_mode:
            return 0.0
        return self.connect_timeout if self.connect_timeout is not None else \
            DEFAULT_CONNECT_TIMEOUT

    def node_limit(self, limit):
        """A node's own time limit in a round whose command may take limit s: its connection
        and its command."""
        return self.connect_s() + limit

    def waves(self, count):
        """The waves count nodes need at the fan-out."""
        fan = int(self.fan(range(count)))
        return max(1, int(math.ceil(count / float(fan))))

    def round_bound(self, count, limit):
        """How long a round of count nodes may take at most, each node within its own limit
        (node_limit): its waves one after the other, and a margin. Past it the round is
        stopped; a node it did not reach is not reached, never unreachable."""
        return self.waves(count) * self.node_limit(limit) + ROUND_MARGIN_S


# ---------------------------------------------------------------------------------------------
# clush: ClusterShell.Task in this process


def parse_clush_options(options):
    """clush's connection options given with --launcher-option: -o SSH_OPTIONS (repeatable),
    -l USER, -t CONNECT_TIMEOUT. Returns {task info key: value}."""
    info, ssh = {}, []
    i = 0
    while i < len(options):
        opt = options[i]
        flag, val = opt[:2], opt[2:]
        if flag not in ("-o", "-l", "-t"):
            raise UsageError("--launcher-option '%s': the clush engine takes -o SSH_OPTIONS, "
                             "-l USER and -t SECONDS" % opt)
        if not val:
            i += 1
            if i >= len(options):
                raise UsageError("--launcher-option %s needs a value (the next "
                                 "--launcher-option)" % flag)
            val = options[i]
        if flag == "-o":
            ssh.append(val)
        elif flag == "-l":
            info["ssh_user"] = val
        else:
            try:
                info["connect_timeout"] = float(val)
            except ValueError:
                raise UsageError("--launcher-option -t '%s': expected seconds" % val)
        i += 1
    if ssh:
        info["ssh_options"] = " ".join(ssh)
    return info


class _NoOptions(object):
    """What ClushConfig reads of clush's command line: nothing given."""
    quiet = verbose = debug = False
    fanout = user = options = connect_timeout = command_timeout = whencolor = maxrc = None
    option = ()


def clush_conf_info():
    """The connection settings of clush.conf (/etc/clustershell/clush.conf, then the user's),
    as clush itself would apply them: {task info key: value}."""
    from ClusterShell.CLI.Config import ClushConfig, ClushConfigError
    try:
        conf = ClushConfig(_NoOptions())
        info = {"ssh_user": conf.ssh_user, "ssh_path": conf.ssh_path,
                "ssh_options": conf.ssh_options, "connect_timeout": conf.connect_timeout}
    except (ClushConfigError, ValueError) as e:
        raise UsageError("clush.conf: %s" % e)
    return dict((k, v) for k, v in info.items() if v)


class _Handler(object):
    """Per-node events of a round into Outcomes, and the round's log files. With a talk object
    (clocksync.Exchange), each stdout line is also answered on the node's stdin at once, from
    this thread: a conversation with the node, not a command fed in advance."""

    def __init__(self, res, log_out, log_err, talk=None, sink=None):
        self.res = res
        self.logs = {"stdout": log_out, "stderr": log_err}
        self.talk = talk
        self.sink = sink
        self.gateways = {}  # gateway -> its last stderr lines (tree mode: why it failed)

    def _answer(self, worker, node, msg, recv_ns):
        reply = self.talk.on_line(node, msg.decode("utf-8", "replace"), recv_ns)
        if reply is None:
            return
        client = clients_of(worker).get(node)
        if client is not None:
            if reply is self.talk.EOF:
                client._set_write_eof(worker.SNAME_STDIN)
            else:
                client._write(worker.SNAME_STDIN, reply)

    def ev_read(self, worker, node, sname, msg):
        if self.talk is not None and sname == "stdout":
            self._answer(worker, node, msg, clocksync.now_ns())  # the instant first
        if self.sink is not None and sname == "stdout":
            self.sink.write(node, msg)
            return
        o = self.res.get(node)
        line = msg.decode("utf-8", "replace")
        if o is not None:
            (o.err if sname == "stderr" else o.out).append(line)
        elif sname == "stderr":  # a gateway's own (tree mode)
            self.gateways[node] = (self.gateways.get(node, []) + [line])[-GATEWAY_LINES:]
        log = self.logs.get(sname)
        if log is not None:  # flushed: a round's log is read while it runs
            log.write("%s: %s\n" % (node, safe_text(line)))
            log.flush()

    def ev_pickup(self, worker, node):
        o = self.res.get(node)
        if o is not None:
            o.started = time.time()

    def ev_hup(self, worker, node, rc):
        o = self.res.get(node)
        if o is not None:
            o.rc = rc
            o.ended = time.time()

    def ev_close(self, worker, timedout):
        if timedout:
            for node in worker.iter_keys_timeout():
                o = self.res.get(node)
                if o is not None:
                    o.timeout = True


GATEWAY_LINES = 5  # a gateway's last stderr lines kept, to say why it failed
NO_ROUTE = "no_route"  # an Outcome's reason: tree mode left it without a live gateway
NO_ROUTE_LINE = "stagebench-cluster: no gateway of the topology reached it"


def _tree_worker_class():
    """ClusterShell's TreeWorker (tree mode), but a node left without a live gateway is
    closed on its own, exit 255 with NO_ROUTE_LINE, where ClusterShell raises
    RouteResolvingError out of the task and so ends every node of the round: one dead
    gateway with no peer must cost its own nodes only."""
    from ClusterShell.NodeSet import NodeSet
    from ClusterShell.Propagation import RouteResolvingError
    from ClusterShell.Worker.Tree import TreeWorker
    from ClusterShell.Worker.Worker import DistantWorker

    class SurvivingTreeWorker(TreeWorker):
        def _relaunch(self, previous_gateway):
            targets = NodeSet(self.gwtargets.get(str(previous_gateway), NodeSet()))
            try:
                TreeWorker._relaunch(self, previous_gateway)
                return
            except RouteResolvingError:
                pass  # nothing was launched: _distribute raised before any gateway got one
            routable = NodeSet()
            for node in targets:
                try:
                    self.router.next_hop(node)
                    routable.add(node)
                except RouteResolvingError:
                    # its line names the gateways that could have reached it
                    gws = NodeSet.fromlist([str(g) for dest, g in self.router.table
                                            if node in dest])
                    self._target_count += 1
                    DistantWorker._on_node_msgline(
                        self, node, ("%s: %s" % (NO_ROUTE_LINE, gws)).encode(), "stderr")
                    self._on_node_close(node, 255)
            if routable:
                self._launch(routable)
            self._check_fini()

    return SurvivingTreeWorker


class _StdinPort(object):
    """Runs in the task's thread: writes what Round.write sent to one node's stdin."""

    def __init__(self, round_):
        self.round = round_

    def ev_msg(self, port, msg):
        node, data = msg
        worker = self.round.worker
        by = clients_of(worker)
        for client in by.values() if node is None else [by[node]] if node in by else []:
            if data is None:
                client._set_write_eof(worker.SNAME_STDIN)
            else:
                client._write(worker.SNAME_STDIN, data)


def clients_of(worker):
    """{node: its ClusterShell client} of a worker, made once (a worker creates every node's
    client when it is made, whatever the fan-out): a node's client found in one step, not by
    going through all of them for each line."""
    by = getattr(worker, "_stagebench_clients", None)
    if by is None:
        by = dict((c.key, c) for c in worker._engine_clients())
        worker._stagebench_clients = by
    return by


class TaskRound:
    """A round on ClusterShell.Task, run in a thread of its own. Each node's command has its
    own time limit (the worker's timeout: ClusterShell arms it when the node's connection
    starts, so it is per node whatever the waves), and the round is stopped only through
    ClusterShell (Task.abort): its ssh processes are its own to kill and reap, never the
    launcher's. An error of ClusterShell's is the round's (error), never raised: the nodes it
    did not finish are aborted."""

    ABORT_WAIT_S = 10.0

    def __init__(self, engine, nodes, command, timeout, logbase, stdin, talk=None, sink=None,
                 direct=False):
        self.res = {n: Outcome() for n in nodes}
        self._sink = sink
        self.worker = None
        self._handler = None
        self.task = None
        self.port = None
        self.error = None
        self.aborted = False
        self._ready = threading.Event()
        self._logs = (open_new(logbase + ".out"), open_new(logbase + ".err"))
        self._talk = talk
        self.exec_mode = engine.exec_mode
        self._thread = threading.Thread(target=self._body, args=(
            engine, nodes, command, engine.node_limit(timeout), stdin or talk is not None,
            engine.topology is not None and not direct))
        self._thread.daemon = True
        self._thread.start()
        self._ready.wait()

    def _body(self, engine, nodes, command, timeout, stdin, tree):
        from ClusterShell.Event import EventHandler
        from ClusterShell.NodeSet import NodeSet
        from ClusterShell.Task import task_self

        class Handler(_Handler, EventHandler):
            pass

        class Port(_StdinPort, EventHandler):
            pass

        task = None
        try:
            task = task_self()
            task.set_info("fanout", int(engine.fan(nodes)))
            for k, v in engine.info.items():
                task.set_info(k, v)
            handler = Handler(self.res, self._logs[0], self._logs[1], self._talk, self._sink)
            self._handler = handler
            ns = NodeSet.fromlist(nodes)
            if engine.exec_mode:
                from ClusterShell.Worker.Exec import ExecWorker
                worker = ExecWorker(nodes=ns, handler=handler, timeout=timeout, stderr=True,
                                    command=command)
                if not stdin:
                    worker.set_write_eof()
                task.schedule(worker)
            else:
                # tree mode (through gateways) only with --topology: a topology.conf of the
                # site is not applied behind the user's back; a direct round (the gateways
                # themselves) connects from here
                if tree:
                    task.topology = engine.topology
                    worker = _tree_worker_class()(ns, command=command, handler=handler,
                                                  stderr=True, timeout=timeout,
                                                  autoclose=False, remote=True)
                    if not stdin:
                        worker.set_write_eof()
                    task.schedule(worker)
                else:
                    worker = task.shell(command, nodes=ns, handler=handler, timeout=timeout,
                                        stderr=True, stdin=stdin, tree=False)
            self.task, self.worker = task, worker
            if stdin:
                self.port = task.port(handler=Port(self), autoclose=True)
        except Exception as e:  # ClusterShell's errors have no common base
            self.error = e
            self._ready.set()
            self._finish(task)
            return
        self._ready.set()
        try:
            task.resume()
        except Exception as e:  # a worker that cannot start its command, say
            self.error = e
        finally:
            self._finish(task)

    def _finish(self, task):
        try:
            if task is not None:
                task.abort(kill=True)
        except Exception as e:  # the task's own end failed: said, not raised
            if self.error is None:
                self.error = e

    def write(self, node, data):
        """Send data to node's stdin (a round started with stdin=True)."""
        self.port.msg_send((node, data))

    def close_stdin(self, node=None):
        self.port.msg_send((node, None))

    def wait(self, timeout):
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def pids(self):
        return ()

    def kill(self):
        """Stop the round through ClusterShell (Task.abort from this thread: the task's thread
        ends its workers, killing and reaping their processes), waiting ABORT_WAIT_S at most;
        the nodes it did not finish are aborted."""
        self.aborted = True
        task = self.task
        if task is not None and self._thread.is_alive():
            stopper = threading.Thread(target=self._abort, args=(task,))
            stopper.daemon = True
            stopper.start()
            stopper.join(self.ABORT_WAIT_S)
        self._thread.join(self.ABORT_WAIT_S)

    def _abort(self, task):
        try:
            task.abort()
        except Exception:  # the task ended meanwhile, or cannot be aborted: it is left
            pass

    def cleanup(self):
        """After the round, in exec mode: what each node's command left in its session (the
        node process ran `setsid`: its pid names its session and group) killed; ClusterShell
        kills only the command itself when it stops a node."""
        if not self.exec_mode or self.worker is None or self._thread.is_alive():
            return
        sids = set(c.popen.pid for c in clients_of(self.worker).values()
                   if getattr(c, "popen", None) is not None)
        left = procs.in_sessions(sids)
        deadline = time.monotonic() + 2.0
        while left and time.monotonic() < deadline:
            procs.signal_pids(left, signal.SIGKILL)
            time.sleep(0.02)
            left = procs.in_sessions(sids)

    def signal(self, sig):
        procs.signal_pids(procs.descendants(), sig)

    def results(self):
        """{node: Outcome}; a node the round did not finish (stopped, or ClusterShell's error)
        is aborted. A round still running (its thread would not end) reads as stopped."""
        if self._thread.is_alive():
            self.aborted = True
        else:
            for f in self._logs:
                f.close()
        if self.aborted or self.error is not None:
            for o in self.res.values():
                if o.rc is None and not o.timeout:
                    o.aborted = True
        gateways = self._handler.gateways if self._handler is not None else {}
        for o in self.res.values():
            said = [ln for ln in o.err if ln.startswith(NO_ROUTE_LINE + ": ")]
            if o.rc == 255 and said:
                # why each of its gateways failed, in its own last line
                from ClusterShell.NodeSet import NodeSet
                o.reason = NO_ROUTE
                o.err = ["%s: %s" % (g, gateways[g][-1].strip() if g in gateways else
                                     "no reason given")
                         for g in NodeSet(said[0][len(NO_ROUTE_LINE) + 2:])]
        return self.res

    def error_text(self):
        """ClusterShell's error of this round, one line, or None."""
        if self.error is None:
            return None
        return safe_text("%s: %s" % (type(self.error).__name__, self.error))


# Where a gateway's log is not written (see ClushEngine): a file, so no path under it opens.
GATEWAY_NO_LOG_DIR = "/dev/null"


class ClushEngine(Engine):
    tool = "clush"
    package = "clustershell"
    can_talk = True  # a round can converse with each node over its stdin (clocksync)

    def __init__(self, exec_mode, options, fanout, topology=None):
        Engine.__init__(self, "clush", exec_mode, options, fanout)
        self.topology_file = topology
        self.topology = load_topology(topology) if topology else None
        if self.topology is not None:
            # through gateways a node's output is relayed, not a conversation with this
            # process: the clock offsets come from the info round (one-shot)
            self.can_talk = False
            # each gateway runs `PYTHON -m ClusterShell.Gateway`, PYTHON being what
            # CLUSTERSHELL_GW_PYTHON_EXECUTABLE names, else ClusterShell's default: the bare
            # name of this interpreter, found on the gateway's PATH, which may be another
            # Python without ClusterShell (a module's, a pyenv's). This interpreter's own
            # path is the one known to have it, as the installed commands do.
            self.gateway_python = os.environ.get("CLUSTERSHELL_GW_PYTHON_EXECUTABLE") or \
                sys.executable or "python3"
            os.environ["CLUSTERSHELL_GW_PYTHON_EXECUTABLE"] = self.gateway_python
            # a gateway logs to CLUSTERSHELL_GW_LOG_DIR/HOST.gw.log, by default /tmp: a name
            # anyone can make a link at first, opened by root through it on a shared gateway.
            # Unless the site names a directory, the log's path is under /dev/null, which
            # ClusterShell cannot open and then does without (its errors go to stderr)
            os.environ.setdefault("CLUSTERSHELL_GW_LOG_DIR", GATEWAY_NO_LOG_DIR)
        self.info = {}
        if not exec_mode:  # clush.conf's settings, then the --launcher-option ones
            self.info = clush_conf_info()
            self.info.update(parse_clush_options(self.options))
            # ssh in sessions of its own, as clush's were: a Ctrl-C on the terminal
            # reaches the launcher only, which stops the nodes itself
            self.info["ssh_path"] = "setsid " + self.info.get("ssh_path", "ssh")

    fds_per_connection = 4  # an ssh's stdin, stdout and stderr pipes, and a spare

    def gateway_info(self):
        """What a gateway's own ClusterShell task is given to reach its nodes as this one
        would (--topology's clock relay): the connection settings and the fan-out."""
        self.connect_s()
        info = dict(self.info)
        info["fanout"] = int(self.fanout or 64)
        return info

    def check_installed(self):
        if not which("setsid"):  # ClusterShell is this process's own
            raise UsageError("setsid is not installed (Debian: util-linux)")

    def connect_s(self):
        """--connect-timeout, else clush.conf's or --launcher-option -t's connect_timeout,
        else DEFAULT_CONNECT_TIMEOUT; given to ssh (ConnectTimeout) through the task."""
        if self.exec_mode:
            return 0.0
        if self.connect_timeout is None:
            self.connect_timeout = float(self.info.get("connect_timeout") or
                                         DEFAULT_CONNECT_TIMEOUT)
        self.info["connect_timeout"] = self.connect_timeout
        return self.connect_timeout

    def node_command(self, args):
        if self.exec_mode:
            # one shell line, every argument quoted; exec replaces the shell, setsid puts the
            # node's process in a session of its own (a Ctrl-C on the terminal reaches the
            # launcher only, which stops the nodes itself)
            return "exec setsid -- " + " ".join(shlex.quote(_exec_arg(a)) for a in args)
        return shell_line(args)

    def start(self, nodes, args, timeout, logbase, nodes_file=None, stdin=False, talk=None,
              sink=None, direct=False):
        """A round of args on nodes (see TaskRound); direct: not through --topology's
        gateways."""
        self.connect_s()
        return TaskRound(self, nodes, self.node_command(args), timeout, logbase, stdin,
                         talk=talk, sink=sink, direct=direct)

    def describe(self, nodes_file, nodes, args, timeout, direct=False):
        """The clush command line that does what a round does (dry run, --verbose)."""
        cmd = ["clush", "-n", "--color=never", "--hostfile", nodes_file, "-f", self.fan(nodes)]
        if self.topology_file and not direct:
            cmd += ["--topology", self.topology_file]
        if self.exec_mode:
            cmd += ["-R", "exec"]
        else:
            cmd += ["-t", "%g" % self.connect_s()]
        if timeout:
            cmd += ["-u", str(int(self.node_limit(timeout) + 0.999))]
        return cmd + self.options + [self.node_command(args)]



# ---------------------------------------------------------------------------------------------
# pdsh and srun: subprocesses whose output is parsed


class ProcessRound:
    """A round run by a command (pdsh, srun) whose output goes to log files."""

    aborted = False

    def __init__(self, engine, cmd, nodes, logbase, name=None):
        self.engine = engine
        self.nodes = nodes
        self.logbase = logbase
        self.name = name
        with open_new(logbase + ".out", binary=True) as fo, \
                open_new(logbase + ".err", binary=True) as fe:
            try:
                self.proc = subprocess.Popen(cmd, stdout=fo, stderr=fe,
                                             stdin=subprocess.DEVNULL, start_new_session=True)
            except OSError as e:
                raise UsageError("cannot run %s: %s" % (cmd[0], e.strerror or e))

    def wait(self, timeout):
        return procs.wait_pid(self.proc, timeout)

    def pids(self):
        return (self.proc.pid,)

    def kill(self):
        """Stop the round: its command's whole session (the command in a session of its own,
        with what it started), SIGTERM then SIGKILL; then its exit status reaped."""
        self.aborted = True
        procs.signal_group(self.proc.pid, signal.SIGTERM)
        if not procs.wait_pid(self.proc, 5.0):
            procs.signal_group(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.cleanup()

    def cleanup(self):
        """After the command ended: what it left running in its session (a node process its
        pdsh gave up on) killed."""
        procs.signal_group(self.proc.pid, signal.SIGKILL)

    def signal(self, sig):
        """srun: exactly one signal to every task, through `scancel --signal=SIG JOB.STEP` (the
        step found by the round's unique name); srun's own forwarding is no use (a SIGINT only
        prints the tasks' state, two abort the step and SIGKILL the tasks ~5 ms later, a SIGTERM
        kills them at once), so a node could lose its summary. pdsh in exec mode: the node
        processes."""
        if self.engine.name == "srun":
            self.engine.signal_step(self.name, sig, lambda: self.proc.poll() is not None)
        else:
            procs.signal_pids(procs.descendants(exclude=(self.proc.pid,)), sig)

    sink = None

    def results(self):
        """{node: Outcome} parsed from the command's output, read line by line (a sink takes
        the stdout lines); once the round was stopped, a node with no exit status and nothing
        printed is aborted (pdsh says nothing of an exit 0, so one that printed something
        ran)."""
        with open(self.logbase + ".out", "rb") as fo, open(self.logbase + ".err", "rb") as fe:
            res = self.engine.parse(fo, fe, self.nodes, self.sink)
        if self.aborted:
            for o in res.values():
                if o.rc is None and not o.timeout and not o.out and not o.err:
                    o.aborted = True
        return res

    def error_text(self):
        return None


_LABEL = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9._-]*): ?(.*)$")


class BroadcastTalkRound(ProcessRound):
    """A clock exchange through srun, which gives every task the same stdin: each token goes to
    every node at once (one send instant for all), each node's answer is timed as its labelled
    line arrives, the next token once every node answered (or after ANSWER_WAIT_S). talk is a
    clocksync.Exchange, fed the send instant of each token for every node that is still in."""

    ANSWER_WAIT_S = 5.0

    def __init__(self, engine, cmd, nodes, logbase, talk, timeout, name=None):
        self.engine, self.nodes, self.logbase, self.talk = engine, nodes, logbase, talk
        self.name = name
        self._lines = []
        self._cond = threading.Condition()
        with open_new(logbase + ".err", binary=True) as fe:
            try:
                self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                             stderr=fe, start_new_session=True)
            except OSError as e:
                raise UsageError("cannot run %s: %s" % (cmd[0], e.strerror or e))
        self._log = open_new(logbase + ".out", binary=True)
        self._reader = threading.Thread(target=self._read)
        self._reader.daemon = True
        self._reader.start()
        self._talker = threading.Thread(target=self._talk, args=(timeout,))
        self._talker.daemon = True
        self._talker.start()

    def _read(self):
        for raw in iter(self.proc.stdout.readline, b""):
            t = clocksync.now_ns()  # the instant first
            self._log.write(raw)
            m = _LABEL.match(raw.decode("utf-8", "replace").rstrip("\n"))
            node = self.engine.label_of(m.group(1), self.nodes) if m else None
            if node is not None:
                with self._cond:
                    self.talk.on_line(node, m.group(2), t)
                    self._lines.append(node)
                    self._cond.notify_all()
        with self._cond:
            self._lines.append(None)
            self._cond.notify_all()

    def _wait_for(self, done, seconds):
        """Until done() (under the lock), the output's end, or seconds."""
        end = time.monotonic() + seconds
        with self._cond:
            while not done() and None not in self._lines and time.monotonic() < end:
                self._cond.wait(max(0.0, min(0.5, end - time.monotonic())))

    def _talk(self, timeout):
        ex = self.talk
        try:
            self._wait_for(lambda: all(n in ex.header or n in ex.errors for n in self.nodes),
                           timeout)
            for step in range(ex.k):
                with self._cond:
                    live = [n for n in ex.header if n not in ex.errors]
                    if not live:
                        break
                    token = "t%d" % step
                    t_send = clocksync.now_ns()
                    for n in live:
                        ex._sent[n] = (token, t_send)
                    self.proc.stdin.write((token + "\n").encode("ascii"))
                    self.proc.stdin.flush()
                self._wait_for(lambda: all(len(ex.samples[n]) > step or n in ex.errors
                                           for n in live), self.ANSWER_WAIT_S)
        except (OSError, ValueError):
            pass  # srun ended: what arrived is measured
        finally:
            try:
                self.proc.stdin.close()
            except (OSError, ValueError):
                pass

    def results(self):
        self._reader.join(10)
        self._log.close()
        return ProcessRound.results(self)


class CommandEngine(Engine):
    """pdsh and srun: one command per round; parse() reads its stdout and stderr."""

    def start(self, nodes, args, timeout, logbase, nodes_file=None, stdin=False, talk=None,
              sink=None, direct=False):
        """A round of args on nodes; direct is the clush engine's (these have no gateways)."""
        name = self.round_name()
        cmd = self.command(nodes_file, nodes, args, timeout, name)
        if talk is not None and self.can_talk:
            return BroadcastTalkRound(self, cmd, nodes, logbase, talk, timeout, name)
        if stdin or talk is not None:
            raise UsageError("%s cannot write to a node's stdin" % self.name)
        rnd = ProcessRound(self, cmd, nodes, logbase, name)
        rnd.sink = sink
        return rnd

    def round_name(self):
        return None

    def describe(self, nodes_file, nodes, args, timeout, direct=False):
        return self.command(nodes_file, nodes, args, timeout)

    def rc_line(self, line, res):
        """Take an engine's status line from stderr into res; True if it was one."""
        raise NotImplementedError

    def label_of(self, label, nodes):
        return label

    def parse(self, out, err, nodes, sink=None):
        """{node: Outcome} from the engine's stdout and stderr: text, or binary files read line
        by line; with a sink, the stdout lines go to it (sink.write(node, bytes))."""
        res = {n: Outcome() for n in nodes}
        for text, attr, status in ((out, "out", False), (err, "err", True)):
            lines = text.splitlines() if isinstance(text, str) else \
                (raw.decode("utf-8", "replace").rstrip("\n") for raw in text)
            for line in lines:
                if status and self.rc_line(line, res):
                    continue
                m = _LABEL.match(line)
                node = self.label_of(m.group(1), nodes) if m else None
                o = res.get(node) if m else None
                if o is None:
                    continue
                if sink is not None and not status:
                    sink.write(node, m.group(2).encode("utf-8", "surrogateescape"))
                else:
                    getattr(o, attr).append(m.group(2))
        return res


class PdshEngine(CommandEngine):
    tool = "pdsh"
    package = "pdsh"
    fds_per_connection = 4  # pdsh's own (it inherits this process's limit): an ssh's pipes
    _RC = re.compile(r"^pdsh@[^:]*: (\S+): .*exited with exit code (\d+)$")
    _SIG = re.compile(r"^pdsh@[^:]*: (\S+): .*killed by signal (\d+)$")
    _TO = re.compile(r"^pdsh@[^:]*: (\S+): command timeout$")

    def __init__(self, exec_mode, options, fanout):
        CommandEngine.__init__(self, "pdsh", exec_mode, options, fanout)

    def node_command(self, args):
        if self.exec_mode:
            # pdsh -R exec: an argv, no shell; pdsh substitutes %h in the arguments but not
            # in the program's name, which a small sh then takes as its first argument
            if NODE in args[0]:
                args = ["/bin/sh", "-c", 'exec "$@"', "sh"] + list(args)
            return [_exec_arg(a, braced=False) for a in args]
        return [shell_line(args)]

    def command(self, nodes_file, nodes, args, timeout, name=None):
        cmd = ["pdsh", "-b", "-w", "^" + nodes_file, "-f", self.fan(nodes),
               "-R", "exec" if self.exec_mode else "ssh"]
        if not self.exec_mode:
            cmd += ["-t", str(max(1, int(self.connect_s() + 0.999)))]
        if timeout:
            cmd += ["-u", str(int(timeout + 0.999))]
        return cmd + self.options + self.node_command(args)

    def rc_line(self, line, res):
        for rx, kind in ((self._RC, "rc"), (self._SIG, "sig"), (self._TO, "to")):
            m = rx.match(line)
            if m:
                o = res.get(m.group(1))
                if o is not None:
                    if kind == "rc":
                        o.rc = int(m.group(2))
                    elif kind == "sig":
                        o.rc = 128 + int(m.group(2))
                    else:
                        o.timeout = True
                return True
        return line.startswith("sending signal")



class SrunEngine(CommandEngine):
    tool = "srun"
    package = "slurm-client"
    can_talk = True  # srun gives every task its stdin: a broadcast clock exchange
    _RC = re.compile(r"^srun: error: (\S+): tasks? [\d,-]+: Exited with exit code (\d+)$")

    def __init__(self, exec_mode, options, fanout):
        CommandEngine.__init__(self, "srun", exec_mode, options, fanout)
        self.token = "%d-%s" % (os.getpid(), os.urandom(4).hex())
        self.rounds = 0
        self.alloc = allocation_cpus(os.environ)

    def round_name(self):
        """A name no other step has: the step to signal is found by it (squeue -s)."""
        self.rounds += 1
        return "stagebench-%s-%d" % (self.token, self.rounds)

    def command(self, nodes_file, nodes, args, timeout, name=None):
        n = len(nodes)
        cmd = ["srun", "--nodes=%d" % n, "--ntasks=%d" % n, "--ntasks-per-node=1",
               "--nodelist=%s" % nodes_file, "--kill-on-bad-exit=0", "--label",
               "--cpu-bind=none"]
        if name is not None:
            cmd.append("--job-name=%s" % name)
        # Within an allocation a step gets every CPU the allocation holds on each of its
        # nodes; --cpus-per-task, one number for every node, only where they all hold the
        # same count (the batch host's count on a node with fewer CPUs is refused whole:
        # "Requested node configuration is not available").
        counts = set(self.alloc.get(x) for x in nodes)
        if len(counts) == 1 and None not in counts:
            cmd.append("--cpus-per-task=%d" % counts.pop())
        return cmd + self.options + list(args)  # srun runs an argv on the node, no shell

    def signal_step(self, name, sig, ended, wait_s=10.0):
        """`scancel --signal=SIG` to the step named name, found with squeue (it may not be
        listed yet just after srun started it: tried again until wait_s or ended())."""
        signame = signal.Signals(sig).name[3:]
        end = time.monotonic() + wait_s
        while time.monotonic() < end and not ended():
            steps = self.steps_named(name)
            if steps:
                for step in steps:
                    try:
                        subprocess.call(["scancel", "--signal=%s" % signame, step],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, timeout=30)
                    except (OSError, subprocess.TimeoutExpired):
                        pass
                return True
            time.sleep(0.2)
        return False

    @staticmethod
    def steps_named(name):
        try:
            out = subprocess.check_output(["squeue", "-h", "-s", "--name=%s" % name, "-o",
                                           "%i"], stdin=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return []
        return [w for w in out.decode("ascii", "replace").split()
                if re.match(r"^\d+(_\d+)?\.\d+$", w)]

    def job_ended(self, environ=None):
        """Within an allocation, whether its job has ended (scancel, its time limit): a line
        saying so ("the Slurm job 42 ended: CANCELLED"), else None (running, or unknown)."""
        job = (environ or os.environ).get("SLURM_JOB_ID")
        if not job or not job.isdigit():
            return None
        try:
            rc, out, _err = procs.run_capture(["scontrol", "-o", "show", "job", job], 30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        m = re.search(r"\bJobState=(\S+)", out)
        if rc != 0 and "Invalid job id" in out + _err:
            return "the Slurm job %s ended (it is no longer known)" % job
        if m and m.group(1) not in ("RUNNING", "PENDING", "SUSPENDED", "CONFIGURING",
                                    "REQUEUED", "RESIZING", "SIGNALING"):
            return "the Slurm job %s ended: %s" % (job, safe_text(m.group(1)))
        return None

    def label_of(self, label, nodes):
        """srun labels lines with task numbers: one task per node, in the list's order."""
        return nodes[int(label)] if label.isdigit() and int(label) < len(nodes) else None

    def rc_line(self, line, res):
        m = self._RC.match(line)
        if m:
            o = res.get(m.group(1))
            if o is not None:
                o.rc = int(m.group(2))
            return True
        return False


def allocation_cpus(environ):
    """{node: CPUs the Slurm allocation holds on it} from SLURM_JOB_NODELIST and
    SLURM_JOB_CPUS_PER_NODE ("2,1" or "2(x3),1"), {} outside an allocation or when they
    do not agree."""
    from .nodes import nodeset_expand
    nodes_text = environ.get("SLURM_JOB_NODELIST", "")
    counts_text = environ.get("SLURM_JOB_CPUS_PER_NODE", "")
    if not nodes_text or not counts_text:
        return {}
    counts = []
    for item in counts_text.split(","):
        m = re.match(r"^(\d+)(?:\(x(\d+)\))?$", item.strip())
        if not m:
            return {}
        counts += [int(m.group(1))] * int(m.group(2) or 1)
    try:
        nodes = nodeset_expand(nodes_text)
    except UsageError:
        return {}
    if len(nodes) != len(counts):
        return {}
    return dict(zip(nodes, counts))


def load_topology(path):
    """ClusterShell's propagation tree (tree mode: commands relayed by gateways) from a
    topology.conf, rooted at this host as clush roots it; UsageError saying why not."""
    from ClusterShell.Topology import TopologyError, TopologyParser
    import socket
    if not os.path.isfile(path):
        raise UsageError("--topology '%s': no such file" % path)
    host = socket.gethostname().split(".")[0]
    try:
        return TopologyParser(path).tree(host)
    except (TopologyError, ValueError, KeyError) as e:
        raise UsageError("--topology '%s': %s (this host, the tree's root, is '%s')"
                         % (path, safe_text(str(e) or type(e).__name__), host))
    except Exception as e:  # ConfigParser's and NodeSet's errors have no common base
        raise UsageError("--topology '%s': %s: %s" % (path, type(e).__name__,
                                                      safe_text(str(e))))


def make(name, exec_mode, options, fanout, topology=None):
    if name == "clush":
        return ClushEngine(exec_mode, options, fanout, topology)
    cls = {"pdsh": PdshEngine, "srun": SrunEngine}[name]
    return cls(exec_mode, options, fanout)
