"""Tests of tools/check_answers.py: a hole's solution body, or a variant one token away, planted
in a chapter's code block, in a neighbouring function or in the kit is found; a body shown in a
block marked as after its exercise, a short body, and the stub itself are not."""
import contextlib
import io
import pathlib
import shutil
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import check_answers  # noqa: E402

SOLUTION = """float f(const float* x, int n) {
  // BEGIN SOLUTION
  float total = 0.0f;
  for (int i = 0; i < n; ++i) total += x[i] * x[i];
  return total;
  // STUB
  //> // TODO(student): the sum of squares.
  //> return 0.0f;
  // END SOLUTION
}
"""
STUDENT = """float f(const float* x, int n) {
  // [hole 1 begin]
  // TODO(student): the sum of squares.
  return 0.0f;
  // [hole 1 end]
}
"""


class CheckAnswers(unittest.TestCase):
    def tree(self, readme="# ch\n", extra_student="", kit=""):
        root = pathlib.Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, root)
        for folder in ("solutions/01_x", "chapters/01_x", "common/course"):
            (root / folder).mkdir(parents=True)
        (root / "solutions/01_x/f.cpp").write_text(SOLUTION)
        (root / "chapters/01_x/f.cpp").write_text(STUDENT + extra_student)
        (root / "chapters/01_x/README.md").write_text(readme)
        (root / "common/course/kit.hpp").write_text(kit)
        return root

    def test_a_clean_chapter_has_no_finding(self):
        self.assertEqual(check_answers.findings(["01_x"], self.tree()), [])

    def test_the_body_in_a_code_block_is_found(self):
        readme = "# ch\n\n```cpp\nfloat total = 0.0f;\nfor (int i = 0; i < n; ++i) total += x[i] * x[i];\nreturn total;\n```\n"
        found = check_answers.findings(["01_x"], self.tree(readme=readme))
        self.assertEqual(len(found), 1)
        self.assertIn("README.md", found[0][3])

    def test_a_one_token_variant_in_a_neighbouring_function_is_found(self):
        neighbour = "double g(const double* y, int n) {\n  float total = 0.0f;\n" \
                    "  for (int i = 0; i < n; ++i) total += y[i] * x[i];\n  return total;\n}\n"
        found = check_answers.findings(["01_x"], self.tree(extra_student=neighbour))
        self.assertEqual(len(found), 1)
        self.assertIn("chapters/01_x/f.cpp", found[0][3])

    def test_the_body_in_the_kit_is_found(self):
        kit = "inline float sq(const float* x, int n) {\n  float total = 0.0f; // the sum\n" \
              "  for (int i = 0; i < n; ++i) total += x[i] * x[i];\n  return total;\n}\n"
        found = check_answers.findings(["01_x"], self.tree(kit=kit))
        self.assertEqual([f[3].split(" ")[0] for f in found], ["common/course/kit.hpp:2"])

    def test_two_tokens_away_is_not_a_variant(self):
        # In a neighbouring function: a lesson's code block would fail on its shape (the next test).
        neighbour = "float g(const float* y, int n) {\n  float total = 1.0f;\n" \
                    "  for (int i = 0; i < n; ++i) total += y[i] * x[i];\n  return total;\n}\n"
        self.assertEqual(check_answers.findings(["01_x"], self.tree(extra_student=neighbour)), [])

    def test_a_block_shown_after_its_exercise_is_left_out(self):
        readme = "<!-- answer-after: exercise 1 -->\n```cpp\nfloat total = 0.0f;\n" \
                 "for (int i = 0; i < n; ++i) total += x[i] * x[i];\nreturn total;\n```\n"
        self.assertEqual(check_answers.findings(["01_x"], self.tree(readme=readme)), [])

    def test_the_same_code_with_other_names_has_the_whole_shape(self):
        body = check_answers.tokens("float total = 0.0f; for (int i = 0; i < n; ++i) total += x[i] * x[i]; return total;")
        renamed = check_answers.tokens("int k; float acc = 0.0f; for (int j = 0; j < m; ++j) acc += v[j] * v[j]; return acc;")
        other = check_answers.tokens("if (lane == 0) s_warp[warp] = v; __syncthreads(); printf(\"%d\", warp);")
        self.assertEqual(check_answers.similarity(body, renamed)[0], 1.0)
        self.assertLess(check_answers.similarity(body, other)[0], 0.3)

    def test_a_renamed_copy_in_a_lesson_code_block_fails(self):
        readme = "```cpp\nfloat acc = 0.0f;\nfor (int j = 0; j < m; ++j) acc += v[j] * v[j];\nreturn acc;\n```\n"
        found = check_answers.findings(["01_x"], self.tree(readme=readme))
        self.assertEqual(len(found), 1)
        self.assertIn("README.md", found[0][3])
        self.assertIn("renamed", found[0][3])

    def test_a_planted_answer_fails_the_command_line_check(self):
        readme = "# ch\n\n```cpp\nfloat s = 0.0f;\nfor (int k = 0; k < n; ++k) s += x[k] * x[k];\nreturn s;\n```\n"
        root = self.tree(readme=readme)
        real = check_answers.ROOT
        check_answers.ROOT = root
        try:
            with contextlib.redirect_stdout(io.StringIO()) as out:
                rc = check_answers.main([])
        finally:
            check_answers.ROOT = real
        self.assertEqual(rc, 1)
        self.assertIn("01_x/f.cpp hole 1", out.getvalue())

    def test_near_answers_report_a_renamed_copy_and_never_fail(self):
        kit = "inline float sq(const float* v, int m) {\n  float acc = 0.0f;\n" \
              "  for (int j = 0; j < m; ++j) acc += v[j] * v[j];\n  return acc;\n}\n"
        root = self.tree(kit=kit)
        self.assertEqual(check_answers.findings(["01_x"], root), [])  # outside a lesson: not a failure
        near = check_answers.near_answers(["01_x"], 0.8, root)
        self.assertEqual([(n[2], n[3].split(":")[0]) for n in near], [(1, "common/course/kit.hpp")])

    def test_a_copy_with_one_name_renamed_in_the_kit_is_found(self):
        # `acc` for `total` three times over: three tokens, one rename (the kit's warp_sum once had
        # chapter 06's warp_sum_steps so, `v` for `value`).
        kit = "inline float sq(const float* x, int n) {\n  float acc = 0.0f;\n" \
              "  for (int i = 0; i < n; ++i) acc += x[i] * x[i];\n  return acc;\n}\n"
        found = check_answers.findings(["01_x"], self.tree(kit=kit))
        self.assertEqual(len(found), 1)
        self.assertIn("common/course/kit.hpp:2", found[0][3])
        self.assertIn("renamed", found[0][3])

    def test_the_kit_may_answer_the_chapter_that_graduates_it_only(self):
        kit = "/// \\brief Squares: taught in chapter {} (its exercise), kept here once.\n" \
              "inline float sq(const float* x, int n) {{\n  float total = 0.0f;\n" \
              "  for (int i = 0; i < n; ++i) total += x[i] * x[i];\n  return total;\n}}\n"
        self.assertEqual(check_answers.findings(["01_x"], self.tree(kit=kit.format("01"))), [])
        found = check_answers.findings(["01_x"], self.tree(kit=kit.format("02")))
        self.assertEqual(len(found), 1, "a later chapter's hole answered by an earlier chapter's copy")
        self.assertIn("(the kit)", found[0][3])

    def test_one_edit_apart(self):
        a = list("abcdef")
        self.assertTrue(check_answers.one_edit_apart(a, list("abXdef")))
        self.assertTrue(check_answers.one_edit_apart(a, list("abdef")))
        self.assertTrue(check_answers.one_edit_apart(a, list("abcXdef")))
        self.assertFalse(check_answers.one_edit_apart(a, list("aXcdeY")))


if __name__ == "__main__":
    unittest.main()
