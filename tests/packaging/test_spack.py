# SPDX-License-Identifier: MIT
"""The Spack recipe (scripts/spack/package.py) against the build it describes: its version
is the project's, its url names the release tarball `make package_source` makes (which holds
these sources at that version), every CMake variable it sets is one CMakeLists.txt declares,
every variant drives one, and it depends on what the build finds (hwloc 2, Python with
ClusterShell). Read with ast: Spack itself is not needed.
Run as `python3 test_spack.py BINARY SOURCE_DIR`."""
import ast
import os
import re
import subprocess
import sys
import tarfile
import unittest

BINARY = SOURCE = None


def _literal(node):
    """The value of a literal argument; None for an expression (python.command.path)."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def _calls(tree, name):
    """The literal arguments of every call of name(...) at the class level and below."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == name:
            args = [_literal(a) for a in node.args]
            kw = dict((k.arg, _literal(k.value)) for k in node.keywords)
            out.append((args, kw))
    return out


class SpackRecipe(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(SOURCE, "scripts", "spack", "package.py")) as f:
            cls.tree = ast.parse(f.read())
        with open(os.path.join(SOURCE, "CMakeLists.txt")) as f:
            cls.cmake = f.read()
        with open(os.path.join(SOURCE, "scripts", "CMakeLists.txt")) as f:
            cls.cmake += f.read()
        cls.version = re.search(r"project\(stagebench VERSION ([0-9.]+)", cls.cmake).group(1)
        cls.cls = [n for n in cls.tree.body if isinstance(n, ast.ClassDef)][0]
        cls.attrs = dict((t.id, ast.literal_eval(n.value)) for n in cls.cls.body
                         if isinstance(n, ast.Assign) for t in n.targets)

    def test_cmake_package_named_stagebench(self):
        self.assertEqual(self.cls.name, "Stagebench")
        self.assertEqual([b.id for b in self.cls.bases], ["CMakePackage"])

    def test_version_and_url_match_the_project(self):
        self.assertEqual([a[0] for a, _kw in _calls(self.cls, "version")], [self.version])
        self.assertEqual(os.path.basename(self.attrs["url"]),
                         "stagebench-%s.tar.gz" % self.version)

    def test_dependencies(self):
        deps = [a[0] for a, _kw in _calls(self.cls, "depends_on")]
        self.assertIn("hwloc@2:", deps)
        self.assertIn("py-clustershell", deps)
        self.assertTrue(any(d.startswith("python@3.6:") for d in deps), deps)
        self.assertIn("pkg_check_modules(HWLOC QUIET IMPORTED_TARGET hwloc)", self.cmake)

    def test_cmake_variables_and_variants_exist_in_the_build(self):
        defined = [a[0] for a, _kw in _calls(self.cls, "define")]
        from_variant = [a for a, _kw in _calls(self.cls, "define_from_variant")]
        variants = [a[0] for a, _kw in _calls(self.cls, "variant")]
        self.assertEqual(sorted(v for _n, v in from_variant), sorted(variants))
        for name in defined + [n for n, _v in from_variant]:
            self.assertRegex(self.cmake, r"(option\(%s |set\(%s .* CACHE )" % (name, name),
                             name)
        for v in variants:
            name = [n for n, vv in from_variant if vv == v][0]
            self.assertRegex(self.cmake, r"option\(%s " % name)

    def test_release_tarball_is_the_url(self):
        build = os.path.dirname(BINARY)
        if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
            self.skipTest("the binary is not in a CMake build tree")
        tarball = os.path.join(build, "stagebench-%s.tar.gz" % self.version)
        if os.path.exists(tarball):
            os.unlink(tarball)
        p = subprocess.run(["cmake", "--build", build, "--target", "package_source"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=240)
        self.assertEqual(p.returncode, 0, p.stdout)
        try:
            with tarfile.open(tarball) as tar:
                names = tar.getnames()
                top = "stagebench-%s/" % self.version
                self.assertIn(top + "CMakeLists.txt", names)
                self.assertIn(top + "scripts/spack/package.py", names)
                self.assertIn(top + "LICENSE", names)
                self.assertFalse([n for n in names if "/build" in n or "__pycache__" in n
                                  or "/.git/" in n], names)
                text = tar.extractfile(top + "CMakeLists.txt").read().decode()
                self.assertIn("project(stagebench VERSION %s " % self.version, text)
        finally:
            os.unlink(tarball)


if __name__ == "__main__":
    BINARY, SOURCE = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    del sys.argv[1:3]
    unittest.main(verbosity=2)
