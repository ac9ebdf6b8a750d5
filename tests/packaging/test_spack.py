# SPDX-License-Identifier: MIT
"""The Spack recipe against the build it describes and the tarball it names: `make
package_source` makes the release tarball and, beside it, the recipe of that tarball from
scripts/spack/package.py.in (a Spack repository, spack/): its version is the project's, its url
names the tarball (which holds these sources at that version), its sha256 is the tarball's,
its homepage a web address; every CMake variable it sets is one CMakeLists.txt declares, every
variant drives one, and it depends on what the build finds (hwloc 2, Python with
ClusterShell). Read with ast: Spack itself is not needed.
Run as `python3 test_spack.py BINARY SOURCE_DIR`; skipped (77) outside a CMake build tree."""
import ast
import hashlib
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


def _sources_cmake():
    text = ""
    for path in (("CMakeLists.txt",), ("scripts", "CMakeLists.txt"),
                 ("scripts", "cmake", "packaging.cmake")):
        with open(os.path.join(SOURCE, *path)) as f:
            text += f.read()
    return text


class SpackRecipe(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.build = os.path.dirname(BINARY)
        cls.cmake = _sources_cmake()
        cls.version = re.search(r"project\(stagebench VERSION ([0-9.]+)", cls.cmake).group(1)
        cls.tarball = os.path.join(cls.build, "stagebench-%s.tar.gz" % cls.version)
        cls.recipe = os.path.join(cls.build, "spack", "packages", "stagebench", "package.py")
        for old in (cls.tarball, cls.recipe):
            if os.path.exists(old):
                os.unlink(old)
        p = subprocess.run(["cmake", "--build", cls.build, "--target", "package_source"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=240)
        assert p.returncode == 0, p.stdout
        with open(cls.tarball, "rb") as f:
            cls.sha256 = hashlib.sha256(f.read()).hexdigest()
        with open(cls.recipe) as f:
            cls.tree = ast.parse(f.read())
        cls.cls = [n for n in cls.tree.body if isinstance(n, ast.ClassDef)][0]
        cls.attrs = dict((t.id, ast.literal_eval(n.value)) for n in cls.cls.body
                         if isinstance(n, ast.Assign) for t in n.targets)

    @classmethod
    def tearDownClass(cls):
        os.unlink(cls.tarball)

    def test_cmake_package_named_stagebench(self):
        self.assertEqual(self.cls.name, "Stagebench")
        self.assertEqual([b.id for b in self.cls.bases], ["CMakePackage"])

    def test_version_url_and_checksum_are_the_tarballs(self):
        versions = _calls(self.cls, "version")
        self.assertEqual([(a, kw) for a, kw in versions],
                         [([self.version], {"sha256": self.sha256})])
        with open(os.path.join(self.build, "CMakeCache.txt")) as f:
            published = re.search(r"^STAGEBENCH_RELEASE_URL:STRING=(.*)$", f.read(),
                                  re.M).group(1)
        self.assertEqual(self.attrs["url"], "%s/stagebench-%s.tar.gz"
                         % (published.rstrip("/") or "file://" + self.build, self.version))
        self.assertRegex(self.attrs["homepage"], r"^https?://[^/\s]+")
        with open(os.path.join(self.build, "spack", "repo.yaml")) as f:
            self.assertEqual(f.read(), "repo:\n  namespace: stagebench\n")

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

    def test_release_tarball_holds_these_sources(self):
        with tarfile.open(self.tarball) as tar:
            names = tar.getnames()
            top = "stagebench-%s/" % self.version
            self.assertIn(top + "CMakeLists.txt", names)
            self.assertIn(top + "scripts/spack/package.py.in", names)
            self.assertIn(top + "LICENSE", names)
            # no build tree (build/, build-*/), bytecode or repository went in
            self.assertFalse([n for n in names if re.search(r"/build(-[^/]*)?/", n + "/") or
                              "__pycache__" in n or "/.git/" in n], names)
            text = tar.extractfile(top + "CMakeLists.txt").read().decode()
            self.assertIn("project(stagebench VERSION %s " % self.version, text)


if __name__ == "__main__":
    BINARY, SOURCE = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    del sys.argv[1:3]
    if not os.path.exists(os.path.join(os.path.dirname(BINARY), "CMakeCache.txt")):
        print("SKIPPED: the binary is not in a CMake build tree")
        sys.exit(77)
    unittest.main(verbosity=2)
