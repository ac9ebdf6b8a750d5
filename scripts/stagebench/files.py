# SPDX-License-Identifier: MIT
"""The one door through which the commands write files and make directories.

An output is written where no one else can steer it: its directory, and every directory above
it, belongs to this user or root and is writable by no one else (a sticky directory such as
/tmp aside, where an output another user owns is refused). The directory is opened once and
checked; the file is made in it exclusively (O_CREAT|O_EXCL|O_NOFOLLOW, an unpredictable
name), its mode set on the open descriptor, written, flushed to disk, then renamed into place
within that same directory, so a reader never sees half a file and nothing is written, or has
its mode changed, through a link someone planted. A file that is only ever created (a log, a
lock) is opened the same way, or, when it may exist, with O_NOFOLLOW and checked to be ours. A
directory is created fresh where it holds a run's state, and checked before use (a directory,
not a link, owned by us, mode 0700 where asked)."""
import binascii
import errno
import json
import os
import shutil
import stat
import sys

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
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
    try:
        os.fchmod(fd, mode)  # whatever the umask, on what was made (never by name)
    finally:
        os.close(fd)
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


def _unsafe_dir(path, st):
    """Why directory path (its lstat st) may be steered by another user, or None."""
    if stat.S_ISLNK(st.st_mode):
        return "%s is a symbolic link (it changed while it was checked)" % path
    if not stat.S_ISDIR(st.st_mode):
        return "%s is not a directory" % path
    if st.st_uid not in (os.geteuid(), 0):
        return ("%s belongs to uid %d, neither this user (uid %d) nor root: another user could "
                "swap what is in it" % (path, st.st_uid, os.geteuid()))
    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        return ("%s is writable by other users (mode %04o, not sticky)"
                % (path, stat.S_IMODE(st.st_mode)))
    return None


class _Dir:
    """The checked directory of an output: fd (opened, O_DIRECTORY), path (resolved), shared
    (sticky and writable by others: an existing file there must be ours), name (the output's
    name in it)."""

    def __init__(self, path):
        d, self.name = os.path.split(os.path.abspath(path))
        if not self.name:
            raise UnsafePath("%s names a directory, not a file" % path)
        self.path = os.path.realpath(d)
        prefix, st = "/", None
        for comp in [""] + [c for c in self.path.split("/") if c]:
            prefix = os.path.join(prefix, comp)
            st = os.lstat(prefix)
            why = _unsafe_dir(prefix, st)
            if why:
                raise UnsafePath("%s: not written into" % why)
        self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        fst = os.fstat(self.fd)
        if (fst.st_dev, fst.st_ino) != (st.st_dev, st.st_ino):
            os.close(self.fd)
            raise UnsafePath("%s changed while it was checked: not written into" % self.path)
        self.shared = bool(fst.st_mode & 0o022)

    def lstat(self, name=None):
        """The lstat of name (default: the output's) in the directory; None when missing."""
        try:
            return os.stat(name or self.name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def create(self, name, flags, mode):
        """name made exclusively in the directory, never through a link, mode set on the
        descriptor (whatever the umask); its fd."""
        try:
            fd = os.open(name, flags | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600,
                         dir_fd=self.fd)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise UnsafePath("%s is a symbolic link: not followed"
                                 % os.path.join(self.path, name))
            raise
        try:
            os.fchmod(fd, mode)
        except OSError:
            os.close(fd)
            self.unlink(name)
            raise
        return fd

    def unlink(self, name):
        try:
            os.unlink(name, dir_fd=self.fd)
        except OSError:
            pass

    def close(self):
        os.close(self.fd)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _refuse_theirs(d, st, what):
    """In a directory others can write into (sticky), an existing file of another user's."""
    if d.shared and st is not None and st.st_uid != os.geteuid():
        raise UnsafePath("%s belongs to uid %d, in a directory others can write into: %s"
                         % (os.path.join(d.path, d.name), st.st_uid, what))


def open_new(path, mode=0o600, binary=False):
    """A file created exclusively (it must not exist, even as a link) in a checked directory,
    its mode set on the descriptor: a file object."""
    with _Dir(path) as d:
        fd = d.create(d.name, os.O_WRONLY, mode)
    return os.fdopen(fd, "wb" if binary else "w")


def open_ours(path, mode=0o600):
    """A file of ours opened for appending and reading in a checked directory, created when
    missing (its mode set on the descriptor), never through a link, refused when another user
    owns it, it is not a regular file or it has other names."""
    with _Dir(path) as d:
        try:
            fd = d.create(d.name, os.O_RDWR | os.O_APPEND, mode)
        except FileExistsError:
            try:
                fd = os.open(d.name, os.O_RDWR | os.O_APPEND | O_NOFOLLOW | O_CLOEXEC,
                             dir_fd=d.fd)
            except OSError as e:
                if e.errno == errno.ELOOP:
                    raise UnsafePath("%s is a symbolic link: not followed" % path)
                raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_nlink != 1:
        os.close(fd)
        raise UnsafePath("%s is not a regular file of this user (or has other names)" % path)
    return os.fdopen(fd, "a+")


_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"),
          (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _replaceable(path, st):
    if st is not None and not stat.S_ISREG(st.st_mode):
        kind = next((k for test, k in _KINDS if test(st.st_mode)), "not a regular file")
        raise UnsafePath("%s is %s: only a regular file is replaced" % (path, kind))


def check_replaceable(path):
    """Nothing is at path, or a regular file: what an output may replace (never a link, a
    FIFO, a device such as /dev/null, a directory). UnsafePath otherwise."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    _replaceable(path, st)


def write_atomic(path, data, mode=0o644):
    """Write data (str or bytes) to path: in its directory, opened and checked (_Dir: it and
    those above it this user's or root's, writable by no one else but sticky), a temporary
    file made exclusively, its mode set on the descriptor, written, flushed to disk, renamed
    into place. Never a half file, never through a planted name or link, never over anything
    but a regular file (check_replaceable), in a sticky directory never over another user's.
    Write errors raise OSError with their cause (ENOSPC...), and leave nothing behind."""
    with _Dir(path) as d:
        st = d.lstat()
        _replaceable(path, st)
        _refuse_theirs(d, st, "not replaced")
        fd = tmp = None
        for _ in range(100):
            tmp = ".%s.%s.tmp" % (d.name[:64], binascii.hexlify(os.urandom(6)).decode())
            try:
                fd = d.create(tmp, os.O_WRONLY, mode)
                break
            except FileExistsError:
                continue
        if fd is None:
            raise FileExistsError(errno.EEXIST, "no free temporary name", d.path)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data.encode("utf-8") if isinstance(data, str) else data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, d.name, src_dir_fd=d.fd, dst_dir_fd=d.fd)
            tmp = None
            try:
                os.fsync(d.fd)  # the rename itself on disk
            except OSError:
                pass
        finally:
            if tmp is not None:
                d.unlink(tmp)


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
# The collector's reader the running front end names (stagebench.command.run), or None.
SCAN_PROGRAM = None


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
