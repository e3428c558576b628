"""tools/compare_grades.py: several grades of one tree, item by item (no GPU, standard library)."""

import contextlib
import io
import json
import sys
import tempfile
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
sys.path.append(str(REPO / "tools"))

import compare_grades  # noqa: E402


def results(scores):
    """A results.json with one test per (name, score, status, tag)."""
    return {"score": sum(s for _, s, _, _ in scores), "tests": [
        {"name": n, "score": s, "max_score": 1.0, "status": st, "tags": ["ch01", tag]} for n, s, st, tag in scores]}


BASE = [("a", 1.0, "passed", "correctness"), ("b", 0.5, "passed", "performance")]


class CompareGrades(unittest.TestCase):
    def run_on(self, *grades, extra=()):
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for k, g in enumerate(grades):
                folder = Path(d) / f"run-{k}"
                folder.mkdir()
                (folder / "results.json").write_text(json.dumps(g))
                paths.append(str(folder))
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                code = compare_grades.main([*extra, *paths])
        return code, out.getvalue()

    def test_identical_grades_agree(self):
        code, out = self.run_on(results(BASE), results(BASE), results(BASE))
        self.assertEqual(code, 0)
        self.assertIn("3 grades, 2 items", out)
        self.assertIn("every item the same in every grade", out)

    def test_a_score_that_moves_is_named_with_every_run(self):
        moved = results([BASE[0], ("b", 0.25, "passed", "performance")])
        code, out = self.run_on(results(BASE), moved)
        self.assertEqual(code, 1)
        self.assertIn("differs: b: 0.5 passed | 0.25 passed", out)
        self.assertIn("totals 1.5, 1.25", out)

    def test_a_status_that_moves_or_an_item_that_is_missing_differs(self):
        failed = results([("a", 1.0, "failed", "correctness"), BASE[1]])
        self.assertEqual(self.run_on(results(BASE), failed)[0], 1)
        code, out = self.run_on(results(BASE), results(BASE[:1]))
        self.assertEqual(code, 1)
        self.assertIn("differs: b: 0.5 passed | missing", out)

    def test_an_ungraded_test_left_out_by_skip_ungraded_is_no_difference(self):
        full = results(BASE + [("c (not graded)", 0.0, "passed", "not-graded")])
        code, out = self.run_on(full, results(BASE))
        self.assertEqual(code, 0, out)
        self.assertIn("1 ungraded test(s) absent from some grade", out)
        failed = results(BASE + [("c (not graded)", 0.0, "failed", "not-graded")])
        code, out = self.run_on(full, results(BASE), failed)
        self.assertEqual(code, 1, "where two grades ran it, they are still compared")
        self.assertIn("differs: c (not graded): 0 passed | missing | 0 failed", out)
        code, out = self.run_on(full, results(BASE[:1]))
        self.assertEqual(code, 1, "a graded item that is missing still differs")

    def test_correctness_only_leaves_the_measurements_out(self):
        moved = results([BASE[0], ("b", 0.25, "passed", "performance")])
        self.assertEqual(self.run_on(results(BASE), moved, extra=["--correctness-only"])[0], 0)

    def test_bad_input_is_exit_2(self):
        with tempfile.TemporaryDirectory() as d:
            bad = Path(d) / "results.json"
            bad.write_text("{}")
            with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(compare_grades.main([str(bad), str(bad)]), 2)
                self.assertEqual(compare_grades.main([str(bad), str(Path(d) / "nothing")]), 2)
            with contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit) as e:
                compare_grades.main([str(bad)])
            self.assertEqual(e.exception.code, 2)


if __name__ == "__main__":
    unittest.main()
