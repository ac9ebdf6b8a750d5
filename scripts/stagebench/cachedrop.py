# SPDX-License-Identifier: MIT
"""Drop this machine's page cache of the regular files under some directories (fdatasync,
then posix_fadvise DONTNEED on each), never following a link: the "server cache drop" of
stagebench-sim, whose /stage servers are directories of this machine. Only the pages of these
files go, not the whole machine's cache (no drop_caches on a shared machine).

Run by path (`python3 cachedrop.py DIR...`): standard library only, no import of the package.
Prints one line (files and bytes dropped); exit 0, or 1 when a file could not be dropped (each
named on stderr), 2 on bad usage."""
import os
import stat
import sys

O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def drop_file(path):
    """The file's size once its cached pages are dropped."""
    fd = os.open(path, os.O_RDONLY | O_NOFOLLOW | getattr(os, "O_NOCTTY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return 0
        try:
            os.fdatasync(fd)  # dirty pages cannot be dropped; a replica is written flushed
        except OSError:
            pass
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return st.st_size
    finally:
        os.close(fd)


def drop_tree(top):
    """(files, bytes, errors) for every regular file under top, links not followed."""
    files = size = 0
    errors = []
    for d, _dirs, names in os.walk(top, followlinks=False, onerror=errors.append):
        for n in names:
            p = os.path.join(d, n)
            try:
                if stat.S_ISREG(os.lstat(p).st_mode):
                    size += drop_file(p)
                    files += 1
            except OSError as e:
                errors.append(e)
    return files, size, errors


def main(argv):
    if not argv or any(a.startswith("-") for a in argv):
        sys.stderr.write("usage: cachedrop.py DIR...\n")
        return 2
    files = size = 0
    bad = 0
    for top in argv:
        if not os.path.isdir(top) or os.path.islink(top):
            sys.stderr.write("cachedrop: %r is not a directory\n" % top)
            bad += 1
            continue
        f, s, errors = drop_tree(top)
        files += f
        size += s
        for e in errors:
            sys.stderr.write("cachedrop: %r: %s\n" % (getattr(e, "filename", top),
                                                      e.strerror or e))
        bad += len(errors)
    sys.stdout.write("dropped the page cache of %d file%s, %d bytes, under %s\n"
                     % (files, "" if files == 1 else "s", size, " ".join(repr(a)
                                                                        for a in argv)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
