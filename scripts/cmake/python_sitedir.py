# SPDX-License-Identifier: MIT
"""python_sitedir.py PREFIX: where this Python finds pure packages under PREFIX, relative to
it, and whether that directory is on its sys.path (1 or 0), as a CMake list: 'DIR;1'.
Every installation scheme is tried (Debian's posix_local puts /usr/local's packages in
/usr/local/lib/python3.X/dist-packages); the first one on sys.path wins, else posix_prefix."""
import os
import sys
import sysconfig


def main():
    prefix = os.path.normpath(sys.argv[1])
    on_path = set(os.path.normpath(p) for p in sys.path if p)
    for scheme in sysconfig.get_scheme_names():
        for base in (prefix, os.path.dirname(prefix)):
            try:
                path = sysconfig.get_path("purelib", scheme, vars={"base": base,
                                                                   "platbase": base})
            except KeyError:
                continue
            path = os.path.normpath(path)
            if path.startswith(prefix + os.sep) and path in on_path:
                print("%s;1" % os.path.relpath(path, prefix))
                return 0
    path = sysconfig.get_path("purelib", "posix_prefix", vars={"base": prefix,
                                                              "platbase": prefix})
    print("%s;0" % os.path.relpath(os.path.normpath(path), prefix))
    return 0


if __name__ == "__main__":
    sys.exit(main())
