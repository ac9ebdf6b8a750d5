# SPDX-License-Identifier: MIT
"""The front ends' door: check what a command needs, then run it. A missing Python package
is one line (what to install) and exit 2, never a traceback."""
import importlib
import sys

from . import files
from .common import EXIT_SIGINT, need

# command module -> the Python packages it needs
NEEDS = {"cluster": ("ClusterShell",), "collect": ("ClusterShell",), "sim": ("ClusterShell",),
         "cron": ("ClusterShell",), "history": ()}


def run(name, scan=None, bindir=None):
    """Run command module name; scan: the collector's reader its front end names
    (stagebench-scan, scan.py); bindir: where the commands are installed, when the front end
    is not there itself (the build tree's names the install's, for the paths it prints)."""
    files.INSTALLED_BINDIR = bindir
    files.SCAN_PROGRAM = scan
    for module in NEEDS[name]:
        need(module)
    try:
        sys.exit(importlib.import_module("stagebench." + name).main())
    except KeyboardInterrupt:
        sys.exit(EXIT_SIGINT)
