"""Tests of tools/progress: no GPU, no build. A hole counts as filled only when its body differs
from the course's stub; tests are counted per chapter from a JUnit file; the next step follows."""
import importlib.machinery
import importlib.util
import pathlib
import sys
import tempfile
import unittest

TOOLS = pathlib.Path(__file__).resolve().parents[2] / "tools"
sys.path.append(str(TOOLS))
loader = importlib.machinery.SourceFileLoader("course_progress", str(TOOLS / "progress"))
spec = importlib.util.spec_from_loader("course_progress", loader)
progress = importlib.util.module_from_spec(spec)
loader.exec_module(progress)

STUB = """int f() {
  // [hole 1 begin]
  // TODO(student): return the answer.
  return -1;
  // [hole 1 end]
}
"""
JUNIT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite tests="3">
  <testcase name="ch05 a: works" status="run" time="0.1"/>
  <testcase name="ch05 b: fails" status="fail" time="0.1"><failure message="boom"/></testcase>
  <testcase name="ch05 c: gpu" status="run" time="0.1"><skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/>
    <system-out>COURSE-NO-GPU: no NVIDIA GPU</system-out></testcase>
</testsuite>
"""


class Progress(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.tree = pathlib.Path(self.tmp.name) / "chapters"
        (self.tree / "05_many_blocks").mkdir(parents=True)
        self.course = {"05_many_blocks/dot.cu": STUB}

    def tearDown(self):
        self.tmp.cleanup()

    def test_stub_is_unfilled_and_an_edit_is_filled(self):
        (self.tree / "05_many_blocks" / "dot.cu").write_text(STUB.replace("  return -1;", "    return -1;  "))
        filled, total, open_holes = progress.hole_progress(self.tree, self.course)["05_many_blocks"]
        self.assertEqual((filled, total), (0, 1))  # whitespace alone is no answer
        self.assertEqual(open_holes[0][:2], ("05_many_blocks/dot.cu", 1))
        (self.tree / "05_many_blocks" / "dot.cu").write_text(STUB.replace("return -1;", "return 42;"))
        filled, total, _ = progress.hole_progress(self.tree, self.course)["05_many_blocks"]
        self.assertEqual((filled, total), (1, 1))

    def test_missing_markers_count_as_unfilled(self):
        (self.tree / "05_many_blocks" / "dot.cu").write_text("int f() { return 42; }\n")
        filled, total, _ = progress.hole_progress(self.tree, self.course)["05_many_blocks"]
        self.assertEqual((filled, total), (0, 1))

    def test_tests_per_chapter_with_skip_reasons(self):
        junit = pathlib.Path(self.tmp.name) / "j.xml"
        junit.write_text(JUNIT)
        counts, reasons, failed = progress.test_progress(junit)
        self.assertEqual((counts["05"]["passed"], counts["05"]["failed"], counts["05"]["skipped"]), (1, 1, 1))
        self.assertEqual(failed["05"], ["ch05 b: fails"])
        self.assertIn("COURSE-NO-GPU", next(iter(reasons["05"])))

    def test_unknown_chapter_is_a_usage_error(self):
        self.assertEqual(progress.main(["--tree", str(self.tree), "99"]), 2)


if __name__ == "__main__":
    unittest.main()
