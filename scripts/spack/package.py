# SPDX-License-Identifier: MIT
# Spack recipe of stagebench. Copy it into a Spack repository as
# packages/stagebench/package.py. There is no public download: make the release tarball from a
# checkout with `cmake --build build --target package_source` (stagebench-VERSION.tar.gz), put
# it where `url` says (or in a Spack mirror as stagebench/stagebench-VERSION.tar.gz) and add its
# checksum with `spack checksum stagebench`; or build the checkout itself with
# `spack dev-build stagebench@0.1.0` from its top directory.

from spack.package import *


class Stagebench(CMakePackage):
    """I/O benchmarks of HPC nodes against their /stage servers (C, hwloc, pthreads), and the
    cluster tools in Python: stagebench-cluster runs it on every node at once,
    stagebench-collect merges the results, stagebench-cron validates nightly."""

    homepage = "file:///opt/stagebench/README.md"
    url = "file:///opt/stagebench/stagebench-0.1.0.tar.gz"

    license("MIT")

    version("0.1.0")

    variant("man", default=True, description="Build and install the man pages (go-md2man)")

    depends_on("c", type="build")
    depends_on("cmake@3.18:", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("go-md2man", type="build", when="+man")
    depends_on("hwloc@2:")
    # The cluster tools: their interpreter is the shebang of the commands, and the build asks
    # it where its packages go; matplotlib (for stagebench-collect --plot) is optional.
    extends("python")
    depends_on("python@3.6:", type=("build", "run"))
    depends_on("py-clustershell", type="run")

    def cmake_args(self):
        python = self.spec["python"]
        return [
            self.define_from_variant("STAGEBENCH_MAN", "man"),
            self.define("STAGEBENCH_PYTHON", python.command.path),
            self.define("STAGEBENCH_PYTHON_SITEDIR", python.package.purelib),
        ]
