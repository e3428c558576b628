"""Tests of tools/check_host_holes.py: a hole with a tagged host test passes; a hole with none, a
tag on a GPU test, a tag that names no hole, a TODO that names none of its host tests and a listed
hole that has a host test are each reported; holes_without_host_check lists the uncovered holes."""
import json
import pathlib
import shutil
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import check_host_holes  # noqa: E402

SOLUTION = """int f(int n) {
  // BEGIN SOLUTION
  return n + 1;
  // STUB
  //> // TODO(student): n + 1. Test: ch01 f: * (host).
  //> return 0;
  // END SOLUTION
}
int g(int n) {
  // BEGIN SOLUTION
  return n + 2;
  // STUB
  //> // TODO(student): n + 2. Test: "ch01 g: adds two".
  //> return 0;
  // END SOLUTION
}
"""
HOST_F = 'TEST_CASE("ch01 f: adds one", "[ch01][hole:f.cu:1]") {\n  CHECK(f(1) == 2);\n}\n'
HOST_G = 'TEST_CASE("ch01 g: adds two", "[ch01]"\n          "[hole:f.cu:2]") {\n  CHECK(g(1) == 3);\n}\n'


class CheckHostHoles(unittest.TestCase):
    def tree(self, tests, registry=None):
        root = pathlib.Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, root)
        (root / "solutions/01_x").mkdir(parents=True)
        (root / "tests").mkdir()
        (root / "solutions/01_x/f.cu").write_text(SOLUTION)
        (root / "tests/test_01_x.cpp").write_text(tests)
        if registry is not None:
            (root / "tests/host_holes.json").write_text(json.dumps(registry))
        return root

    def problems(self, root):
        return check_host_holes.survey(root)[3]

    def test_every_hole_tagged_passes(self):
        root = self.tree(HOST_F + HOST_G)
        self.assertEqual(self.problems(root), [])
        self.assertEqual(check_host_holes.holes_without_host_check(root), [])
        self.assertEqual(check_host_holes.main(["--root", str(root)]), 0)

    def test_a_hole_without_a_host_test_is_reported(self):
        root = self.tree(HOST_F)
        self.assertEqual(len(self.problems(root)), 1)
        self.assertIn("01_x/f.cu:2", self.problems(root)[0])
        self.assertEqual(check_host_holes.holes_without_host_check(root), [("01_x/f.cu:2", "unlisted", "")])
        self.assertEqual(check_host_holes.main(["--root", str(root)]), 1)

    def test_a_listed_hole_passes_and_is_still_without(self):
        root = self.tree(HOST_F, {"no_host_check": {"01_x/f.cu:2": "a GPU call and nothing else"}})
        self.assertEqual(self.problems(root), [])
        self.assertEqual(check_host_holes.holes_without_host_check(root),
                         [("01_x/f.cu:2", "no_host_check", "a GPU call and nothing else")])

    def test_a_listed_hole_with_a_host_test_is_reported(self):
        root = self.tree(HOST_F + HOST_G, {"pending": {"01_x/f.cu:2": "later"}})
        self.assertTrue(any("take it off the list" in p for p in self.problems(root)))

    def test_a_gpu_test_does_not_count(self):
        gpu = 'TEST_CASE("ch01 g: adds two", "[ch01][gpu][hole:f.cu:2]") {\n  CHECK(g(1) == 3);\n}\n'
        guarded = 'TEST_CASE("ch01 g: adds two", "[ch01][hole:f.cu:2]") {\n  COURSE_REQUIRE_GPU();\n}\n'
        for test in (gpu, guarded):
            problems = self.problems(self.tree(HOST_F + test))
            self.assertTrue(any("without a GPU" in p for p in problems), problems)
            self.assertTrue(any("no host test checks it" in p for p in problems), problems)

    def test_a_tag_of_no_hole_and_a_todo_that_names_another_test(self):
        problems = self.problems(self.tree(HOST_F + HOST_G.replace("f.cu:2", "f.cu:3")))
        self.assertTrue(any("not a hole" in p for p in problems), problems)
        renamed = HOST_G.replace("ch01 g: adds two", "ch01 h: adds two")
        problems = self.problems(self.tree(HOST_F + renamed))
        self.assertTrue(any("names none of its host tests" in p for p in problems), problems)

    def test_add_case_with_literal_tags(self):
        dyn = ('const bool r = [] { course::test::add_case("ch01 g: adds two", "[ch01][hole:f.cu:2]", [] {\n'
               '  CHECK(g(1) == 3); }); return true; }();\n')
        self.assertEqual(self.problems(self.tree(HOST_F + dyn)), [])
        built = dyn.replace('"[ch01][hole:f.cu:2]"', 'tags + "[hole:f.cu:2]"')
        self.assertTrue(any("string literals" in p for p in self.problems(self.tree(HOST_F + built))))


if __name__ == "__main__":
    unittest.main()
