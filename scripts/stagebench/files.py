# SPDX-License-Identifier: MIT
"""The one door through which the commands write files and make directories.

A file is written to a temporary file made exclusively (mkstemp: O_CREAT|O_EXCL, an
unpredictable name) in the directory of its final name, then renamed into place, so a reader
never sees half a file and nothing is written through a link someone planted. A file that is
only ever created (a log, a lock) is opened with O_CREAT|O_EXCL|O_NOFOLLOW or, when it may
exist, with O_NOFOLLOW and checked to be ours. A directory is created fresh where it holds a
run's state, and checked before use (a directory, not a link, owned by us, mode 0700 where
asked)."""
import errno
import json
import os
import shutil
import stat
import sys
import tempfile

O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class UnsafePath(OSError):
    """A path that is not what it must be (a link, another user's, open to others)."""


def check_dir(path, private=False):
    """path is a directory (not a link) owned by this user, and with private, closed to
    others (no group or other permission); raises UnsafePath otherwise."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePath("%s is a symbolic link, not a directory" % path)
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafePath("%s is not a directory" % path)
    if st.st_uid != os.geteuid():
        raise UnsafePath("%s belongs to uid %d, not to this user (uid %d)"
                         % (path, st.st_uid, os.geteuid()))
    if private and st.st_mode & 0o077:
        raise UnsafePath("%s is open to other users (mode %04o, 0700 expected)"
                         % (path, stat.S_IMODE(st.st_mode)))
    return path


def make_dir(path, mode=0o700):
    """Create path fresh (its parent must exist; it must not) with mode, and check it."""
    os.mkdir(path, mode)
    os.chmod(path, mode)  # whatever the umask
    return check_dir(path, private=not mode & 0o077)


def make_run_dir(path, mode=0o755):
    """A run's results directory: created fresh; or, when the command that started this one
    made it (stagebench-sim, stagebench-cron, for their own files), adopted only when it is a
    directory of ours, not a link, and writable by no one else, so nothing in it can have been
    planted."""
    try:
        return make_dir(path, mode)
    except FileExistsError:
        pass
    check_dir(path)
    m = stat.S_IMODE(os.lstat(path).st_mode)
    if m & 0o022:
        raise UnsafePath("%s is writable by other users (mode %04o)" % (path, m))
    return path


def check_closed_dir(path):
    """path is a directory of this user (or root's), not a link, that no one else can write
    into: what is in it can only be ours. Raises UnsafePath otherwise."""
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafePath("%s is not a directory" % path)
    if st.st_uid not in (os.geteuid(), 0):
        raise UnsafePath("%s belongs to uid %d, not to this user (uid %d)"
                         % (path, st.st_uid, os.geteuid()))
    if st.st_mode & 0o022:
        raise UnsafePath("%s is writable by other users (mode %04o)"
                         % (path, stat.S_IMODE(st.st_mode)))
    return path


def ensure_dir(path, mode=0o755, private=False):
    """path as a directory of ours: created (with its parents) when missing, else checked."""
    try:
        os.makedirs(path, mode)
    except FileExistsError:
        pass
    return check_dir(path, private=private)


def _open_nofollow(path, flags, mode):
    try:
        return os.open(path, flags | O_NOFOLLOW | O_CLOEXEC, mode)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UnsafePath("%s is a symbolic link: not followed" % path)
        raise


def open_new(path, mode=0o600, binary=False):
    """A file created exclusively (it must not exist, even as a link): a file object."""
    fd = _open_nofollow(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    return os.fdopen(fd, "wb" if binary else "w")


def open_ours(path, mode=0o600):
    """A file of ours opened for appending and reading, created when missing, never through a
    link, refused when another user owns it or it is not a regular file."""
    fd = _open_nofollow(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, mode)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_nlink != 1:
        os.close(fd)
        raise UnsafePath("%s is not a regular file of this user (or has other names)" % path)
    return os.fdopen(fd, "a+")


_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"),
          (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def check_replaceable(path):
    """Nothing is at path, or a regular file: what an output may replace (never a link, a
    FIFO, a device such as /dev/null, a directory). UnsafePath otherwise."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        kind = next((k for test, k in _KINDS if test(st.st_mode)), "not a regular file")
        raise UnsafePath("%s is %s: only a regular file is replaced" % (path, kind))


def write_atomic(path, data, mode=0o644):
    """Write data (str or bytes) to path through an exclusive temporary file in the same
    directory and a rename: never a half file, never through a planted name, never over
    anything but a regular file (check_replaceable). Write errors raise OSError with their
    cause (ENOSPC...), and leave nothing behind."""
    check_replaceable(path)
    d, base = os.path.split(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + base[:64] + ".", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
        tmp = None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def write_json_atomic(path, obj, indent=1):
    write_atomic(path, json.dumps(obj, indent=indent, sort_keys=False) + "\n")


def read_json(path):
    with open(path, "rb") as f:
        return json.loads(f.read())


def script_dir():
    return os.path.dirname(os.path.realpath(sys.argv[0]))


# Where the commands are installed, when the running one is not there (the build tree's front
# ends name the install's bin/: stagebench.command.run).
INSTALLED_BINDIR = None


def bindir():
    """The directory of the installed commands, for the paths a command prints: the running
    command's own, or the install's when it runs from the build tree."""
    return INSTALLED_BINDIR or script_dir()


def find_sibling(name):
    """A program beside the running command (installed together), else on PATH."""
    p = os.path.join(script_dir(), name)
    if os.access(p, os.X_OK) and not os.path.isdir(p):
        return p
    return shutil.which(name)


which = shutil.which
