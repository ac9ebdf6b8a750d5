# SPDX-License-Identifier: MIT
"""The front ends' door: check what a command needs, then run it. A missing Python package
is one line (what to install) and exit 2, never a traceback."""
import importlib
import sys

from .common import EXIT_SIGINT, need

# command module -> the Python packages it needs
NEEDS = {"cluster": ("ClusterShell",), "collect": ("ClusterShell",), "sim": ("ClusterShell",),
         "cron": ("ClusterShell",), "history": ()}


def run(name):
    for module in NEEDS[name]:
        need(module)
    try:
        sys.exit(importlib.import_module("stagebench." + name).main())
    except KeyboardInterrupt:
        sys.exit(EXIT_SIGINT)
