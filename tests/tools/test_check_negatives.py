"""Tests of tools/check_negatives.py that need no build: how the cases are grouped, and that the
merged tree of a group breaks each case's own chapter only."""
import pathlib
import sys
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import check_negatives as cn  # noqa: E402


def case(name, chapter):
    return {"name": name, "chapter": chapter, "fail": [f"ch{chapter[:2]} x"], "gpu": False}


class Rounds(unittest.TestCase):
    def test_at_most_one_case_per_chapter_in_a_group(self):
        cases = [case("a1", "01_a"), case("a2", "01_a"), case("b1", "02_b"), case("a3", "01_a"), case("c1", "03_c")]
        groups = cn.rounds(cases)
        for g in groups:
            chapters = [c["chapter"] for c in g]
            self.assertEqual(len(chapters), len(set(chapters)), f"two cases of one chapter in {g}")
        self.assertEqual([[c["name"] for c in g] for g in groups], [["a1", "b1", "c1"], ["a2"], ["a3"]])

    def test_every_case_once(self):
        cases = [case(f"k{i}", f"0{i % 3}_x") for i in range(10)]
        names = [c["name"] for g in cn.rounds(cases) for c in g]
        self.assertEqual(sorted(names), sorted(c["name"] for c in cases))

    def test_no_cases_no_groups(self):
        self.assertEqual(cn.rounds([]), [])


class CasesStayInTheirChapter(unittest.TestCase):
    def test_every_case_names_tests_of_its_own_chapter(self):
        # The grouped build relies on it: a group's other broken chapters cannot fail these tests.
        for c in cn.load_cases():
            for test in c["fail"]:
                self.assertTrue(test.startswith(f"ch{c['chapter'][:2]} ") or test.startswith(f"ch{c['chapter'][:2]}."),
                                f"{c['name']}: '{test}' is not a test of chapter {c['chapter']}")

    def test_a_case_changes_only_its_chapter(self):
        course = cn.ME.course_files(ROOT)
        base = cn.case_tree(None, course, ROOT / "solutions")
        for c in cn.load_cases():
            tree = cn.case_tree(c, course, ROOT / "solutions")
            changed = {rel.split("/")[0] for rel in tree if tree[rel] != base[rel]}
            self.assertLessEqual(changed, {c["chapter"]}, f"{c['name']} changes {sorted(changed)}")


if __name__ == "__main__":
    unittest.main()
