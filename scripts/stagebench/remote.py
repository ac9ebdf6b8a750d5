# SPDX-License-Identifier: MIT
"""The launcher's commands on a node through a remote shell: remote.sh, shipped beside this
module (and checked by shellcheck), sent whole to the node's sh with the action and its values
as positional arguments. The script's comment and blank lines are left out of what is sent."""
import os

from .common import UsageError

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "remote.sh")

_loaded = []


def text():
    """remote.sh as it is sent: its comment and blank lines left out."""
    if not _loaded:
        try:
            with open(PATH) as f:
                lines = f.read().splitlines()
        except OSError as e:
            raise UsageError("cannot read %s (installed with the stagebench package): %s"
                             % (PATH, e.strerror or e))
        kept = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
        _loaded.append("\n".join(kept) + "\n")
    return _loaded[0]


def command(action, *args):
    """The argv that runs remote.sh's action on a node: sh -c SCRIPT sh ACTION ARG..."""
    return ["sh", "-c", text(), "sh", action] + list(args)


def shown(args):
    """args as the dry run and --verbose print them: the script named by its path in angle
    brackets, not written out in full."""
    script = text()
    return ["<%s>" % PATH if a == script else a for a in args]
