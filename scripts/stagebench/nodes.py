# SPDX-License-Identifier: MIT
"""Node sets (ClusterShell.NodeSet: ranges, groups, and the !, &, ^ operators), and the
files that name nodes: host files and servers files."""
import re

from ClusterShell.NodeSet import NodeSet, NodeSetException, RESOLVER_NOGROUP
from ClusterShell.NodeUtils import GroupResolverError

from .common import UsageError, check_node_name, natural_key, node_name_ok, safe_text

# A node set larger than this is refused: a typo like n[1-99999999] must not eat the memory.
MAX_NODES = 1000000
# A host or servers file larger than this is refused (never read in part).
MAX_FILE_BYTES = 16 << 20


def nodeset_expand(text):
    """Expand 'node[001-004,7],login1,@group' (with ClusterShell's !, & and ^) into a sorted
    list of unique, valid names."""
    if not isinstance(text, str) or not text.strip():
        raise UsageError("empty node set")
    shown = text if len(text) < 80 else text[:77] + "..."
    try:
        ns = NodeSet(text.strip())
        if len(ns) > MAX_NODES:
            raise UsageError("node set '%s' is too large" % shown)
        names = list(ns)
    except (NodeSetException, GroupResolverError, ValueError, TypeError) as e:
        why = str(e) or type(e).__name__
        if "bracket" in why:
            why = "unbalanced brackets (%s)" % why
        raise UsageError("node set '%s': %s" % (shown, safe_text(why)))
    if not names:
        raise UsageError("node set '%s' names no node (an unknown or empty group?)" % shown)
    for n in names:
        check_node_name(n, "node set '%s': node" % shown)
    return sorted(set(names), key=natural_key)


# A name ClusterShell reads as a prefix and one number: letters, '.', '_' or '-', then digits.
_PREFIX_NUMBER = re.compile(r"([A-Za-z._-]+)([0-9]+)\Z")


def nodeset_fold(names):
    """The short form of a list of names: ['n1','n2','n3','x'] -> 'n[1-3],x'. ClusterShell
    folds; what it is given is the same set in fewer strings: the names of one prefix and
    number as one pattern of runs (n[0001-0300]), each run of numbers of one width (what a
    range means to ClusterShell: 08-10 is 08, 09, 10; 8-10 is 8, 9, 10), so 100,000 names
    cost one parse, not 100,000."""
    by_prefix, rest = {}, []
    for name in names:
        m = _PREFIX_NUMBER.match(name)
        if m:
            digits = m.group(2)
            by_prefix.setdefault(m.group(1), {}).setdefault(len(digits), set()).add(
                int(digits))
        else:
            rest.append(name)
    if not rest and len(by_prefix) == 1:
        (prefix, widths), = by_prefix.items()
        if len(widths) == 1:
            # one prefix, one width: the runs are ClusterShell's own text (n[1-3,5], n5),
            # without a parse of thousands of runs and a print of them
            (width, numbers), = widths.items()
            runs = _runs(width, numbers)
            return prefix + (runs[0] if len(numbers) == 1 else "[%s]" % ",".join(runs))
    patterns = []
    for prefix, widths in by_prefix.items():
        runs = []
        for width, numbers in widths.items():
            runs += _runs(width, numbers)
        patterns.append("%s[%s]" % (prefix, ",".join(runs)))
    return str(NodeSet.fromlist(patterns + rest, resolver=RESOLVER_NOGROUP))


def _runs(width, numbers):
    """The runs of a set of numbers of one width, in order: ['001-003', '005']."""
    numbers = sorted(numbers)
    runs = []
    first = prev = numbers[0]
    for n in numbers[1:] + [None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        runs.append("%0*d" % (width, first) if first == prev else
                    "%0*d-%0*d" % (width, first, width, prev))
        first = prev = n
    return runs


def _config_lines(path, what):
    """(line number, text) of a file's non-empty lines, '#' comments removed."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise UsageError("%s '%s' is over %d MiB: refused" % (what, path,
                                                                 MAX_FILE_BYTES >> 20))
        lines = data.decode("utf-8").splitlines()
    except OSError as e:
        raise UsageError("%s '%s': %s" % (what, path, e.strerror or e))
    except UnicodeDecodeError as e:
        raise UsageError("%s '%s': not UTF-8 text (byte %d)" % (what, path, e.start))
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
