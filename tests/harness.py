# SPDX-License-Identifier: MIT
"""What the harnesses that start private services for tests and benchmarks share
(tests/cluster/slurmhost.py, tests/perf/sshnodes.py): the stagebench package of this source tree,
and the context manager that stops what they started; and what the tests that install the build
tree share (tests/cluster/test_install.py, tests/packaging/test_prefix.py): its install records
put back as they were.

Importing this module puts this tree's scripts/ first on sys.path, so that `from stagebench
import procs` finds the package under test, not an installed one. Python 3.6+."""
import os
import sys

SCRIPTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts")
sys.path.insert(0, SCRIPTS)


class Service(object):
    """A context manager over start() (None, or why the service cannot work here, kept in
    .error) and close() (stops everything started, safe to call twice): close() runs on leaving,
    and also when start() raises."""

    error = None

    def __enter__(self):
        try:
            self.error = self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def start(self):
        raise NotImplementedError

    def close(self):
        raise NotImplementedError


# What `cmake --install` records in the build tree for the uninstall target.
INSTALL_RECORDS = ("install_manifest.txt", "install_dirs.txt")


def keep_install_records(case, build):
    """Put the build's install records back as they were when the unittest case ends: its
    installs into temporary prefixes must not replace the record of a real one."""
    for name in INSTALL_RECORDS:
        path = os.path.join(build, name)
        saved = None
        if os.path.exists(path):
            with open(path, "rb") as f:
                saved = f.read()
        case.addCleanup(_restore, path, saved)


def _restore(path, saved):
    if saved is None:
        if os.path.exists(path):
            os.unlink(path)
    else:
        with open(path, "wb") as f:
            f.write(saved)
