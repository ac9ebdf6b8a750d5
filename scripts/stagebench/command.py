# SPDX-License-Identifier: MIT
"""The front ends' door: check what a command needs, then run it. A missing Python package
is one line (what to install) and exit 2, never a traceback."""
import importlib

from .common import need

# command module -> the Python packages it needs
NEEDS = {"cluster": ("ClusterShell",), "collect": ("ClusterShell",), "sim": ("ClusterShell",),
         "cron": ("ClusterShell",)}


def run(name):
    for module in NEEDS[name]:
        need(module)
    importlib.import_module("stagebench." + name).run()
