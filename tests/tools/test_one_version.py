"""The version is stated once (issue 25): library/packaging/version.cmake. Every consumer reads it
(the two CMake projects, the C library's dotcourse_version(), the Python package's metadata), and no
other file in the repository states the number itself."""
import pathlib
import re
import subprocess
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCE = "library/packaging/version.cmake"
SET = re.compile(r"^set\(DOTCOURSE_VERSION (\d+\.\d+\.\d+)\)$", re.M)


def text(rel):
    return (ROOT / rel).read_text(encoding="utf-8")


def the_version():
    found = SET.findall(text(SOURCE))
    if len(found) != 1:
        raise AssertionError(f"{SOURCE}: expected one line set(DOTCOURSE_VERSION X.Y.Z), found {len(found)}")
    return found[0]


def repository_files():
    """The tracked files (git ls-files), or every file outside build and cache folders without git."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True).stdout
        return [f for f in out.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", ".venv", "_vendor", "__pycache__", ".mypy_cache"}
        return [str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
                if p.is_file() and not skip & set(p.relative_to(ROOT).parts)
                and not p.relative_to(ROOT).parts[0].startswith("build")]


class OneVersion(unittest.TestCase):
    def test_the_source_states_one_version(self):
        self.assertRegex(the_version(), r"^\d+\.\d+\.\d+$")

    def test_no_other_file_states_it(self):
        pattern = re.compile(r"(?<![\d.])" + re.escape(the_version()) + r"(?![\d.])")
        copies = []
        for rel in repository_files():
            if rel == SOURCE or not (ROOT / rel).is_file():
                continue
            try:
                body = (ROOT / rel).read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue  # not text
            copies += [f"{rel}:{n}" for n, line in enumerate(body.splitlines(), 1) if pattern.search(line)]
        self.assertEqual(copies, [], f"the version {the_version()} is stated outside {SOURCE}: read it from there")

    def test_both_cmake_projects_read_it(self):
        for rel, include in (("CMakeLists.txt", "include(library/packaging/version.cmake)"),
                             ("library/packaging/CMakeLists.txt", 'include("${CMAKE_CURRENT_LIST_DIR}/version.cmake")')):
            body = text(rel)
            self.assertIn(include, body, rel)
            project = re.search(r"project\(dotcourse\s+VERSION\s+(\S+)", body)
            self.assertIsNotNone(project, f"{rel}: no project(dotcourse VERSION ...)")
            self.assertEqual(project.group(1), "${DOTCOURSE_VERSION}", rel)
            self.assertLess(body.index(include), project.start(), f"{rel}: version.cmake is read after project()")

    def test_the_c_library_and_its_test_get_it_from_the_build(self):
        target = text("library/packaging/dotcourse_target.cmake")
        self.assertIn('"DOTCOURSE_VERSION_STRING=\\"${DOTCOURSE_VERSION}\\""', target)
        self.assertIn('"DOTCOURSE_EXPECTED_VERSION=\\"${DOTCOURSE_VERSION}\\""', text("library/library.cmake"))
        self.assertRegex(text("library/src/c_api.cpp"),
                         r"dotcourse_version\(void\)\s*\{\s*return DOTCOURSE_VERSION_STRING;\s*\}", "library/src/c_api.cpp")
        self.assertIn("dotcourse_version()) == DOTCOURSE_EXPECTED_VERSION", text("tests/test_07_library.cpp"))

    def test_the_python_package_reads_it(self):
        pyproject = text("library/python/pyproject.toml")
        project = re.search(r"(?ms)^\[project\]$(.*?)(?=^\[)", pyproject)
        self.assertIsNotNone(project, "pyproject.toml: no [project] table")
        self.assertRegex(project.group(1), r'(?m)^dynamic = \["version"\]$')
        self.assertNotRegex(project.group(1), r"(?m)^version\s*=", "pyproject.toml states [project] version")
        self.assertIn('metadata.version.provider = "scikit_build_core.metadata.regex"', pyproject)
        self.assertIn(f'metadata.version.input = "_vendor/{SOURCE}"', pyproject)
        regex = re.search(r"(?m)^metadata\.version\.regex = '(.*)'$", pyproject)
        self.assertIsNotNone(regex, "pyproject.toml: no metadata.version.regex")
        found = re.search(regex.group(1), text(SOURCE))
        self.assertIsNotNone(found, "pyproject.toml's version regex does not match version.cmake")
        self.assertEqual(found.group("value"), the_version())
        # From the repository the regex reads version.cmake in place; from an sdist (the from-sdist
        # override) its copy in _vendor/, which sdist.force-include puts there with the packaging folder.
        self.assertIn('metadata.version.input = "../packaging/version.cmake"', pyproject)
        self.assertIn('"../packaging" = "_vendor/library/packaging"', pyproject)
        self.assertEqual(SOURCE, "library/packaging/version.cmake")
        # Used from its source folder, the package reads the same file.
        self.assertIn('here.parents[1] / "packaging" / "version.cmake"', text("library/python/dotcourse/_version.py"))


if __name__ == "__main__":
    unittest.main()
