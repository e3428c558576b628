"""Tests of tools/progress: no GPU, no build. A hole counts as filled only when its body differs
from the course's stub; tests are counted per chapter from a JUnit file; the next step follows; a
run of one chapter keeps the results of the chapters run before it."""
import contextlib
import importlib.machinery
import importlib.util
import io
import os
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


def junit_of(cases):
    """A JUnit file in CTest's form: cases are (name, 'pass' | 'fail')."""
    rows = "".join(f'  <testcase name="{name}" status="{"run" if r == "pass" else "fail"}" time="0.1">'
                   + ("" if r == "pass" else '<failure message=""/>') + "</testcase>\n" for name, r in cases)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuite tests="{len(cases)}">\n{rows}</testsuite>\n'


class KeptResults(unittest.TestCase):
    """tools/test.sh rewrites its JUnit file at every run: `-L ch11` leaves only chapter 11 in it."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = pathlib.Path(self.tmp.name)
        self.junit = self.root / "build" / "student" / "ctest-junit.xml"
        self.junit.parent.mkdir(parents=True)
        self.tree = self.root / "chapters"
        for chapter in ("07_library", "08_pinned", "11_multi_gpu"):
            (self.tree / chapter).mkdir(parents=True)
        self.runs = 0

    def tearDown(self):
        self.tmp.cleanup()

    def run_tests(self, cases):
        """What one tools/test.sh run leaves: the JUnit file of that run alone, newer than the last."""
        self.junit.write_text(junit_of(cases))
        self.runs += 1
        os.utime(self.junit, ns=(self.runs * 10**9, self.runs * 10**9))

    def progress_rows(self):
        out = io.StringIO()
        old_root = progress.ROOT
        progress.ROOT = self.root  # the default JUnit file and its kept results under this root
        try:
            with contextlib.redirect_stdout(out):
                self.assertEqual(progress.main(["--tree", str(self.tree)]), 0)
        finally:
            progress.ROOT = old_root
        return {line.split()[0]: line for line in out.getvalue().splitlines() if line[:2].isdigit()}

    def test_a_run_of_one_chapter_keeps_the_others(self):
        self.run_tests([("ch07 a: works", "pass"), ("ch07 b: works", "pass"), ("ch08 a: fails", "fail")])
        rows = self.progress_rows()
        self.assertRegex(rows["07_library"], r"\s2\s+0\s+0\s+done")
        self.run_tests([("ch11 a: works", "pass")])  # tools/test.sh --student -L ch11
        rows = self.progress_rows()
        self.assertRegex(rows["07_library"], r"\s2\s+0\s+0\s+done")  # not "run tools/test.sh -L ch07"
        self.assertIn("fix: ch08 a: fails", rows["08_pinned"])
        self.assertRegex(rows["11_multi_gpu"], r"\s1\s+0\s+0\s+done")

    def test_the_newer_run_of_a_test_wins(self):
        store = self.junit.with_name(progress.STORE)
        self.run_tests([("ch08 a: fails", "fail"), ("ch08 b: works", "pass")])
        progress.merge_run(store, self.junit)
        self.run_tests([("ch08 a: fails", "pass")])  # -R "ch08 a": the fix, and only that test
        counts, _, failed, _ = progress.count_tests(progress.merge_run(store, self.junit))
        self.assertEqual((counts["08"]["passed"], counts["08"]["failed"]), (2, 0))
        # An older run read late does not undo the newer result.
        old = self.root / "old.xml"
        old.write_text(junit_of([("ch08 a: fails", "fail")]))
        os.utime(old, ns=(10**9, 10**9))
        counts, _, _, _ = progress.count_tests(progress.merge_run(store, old))
        self.assertEqual(counts["08"]["failed"], 0)

    def test_record_keeps_a_run_without_showing_anything(self):
        self.run_tests([("ch07 a: works", "pass")])
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(progress.main(["--record", str(self.junit)]), 0)
        self.assertEqual(out.getvalue(), "")
        self.run_tests([("ch11 a: works", "pass")])
        self.assertEqual(progress.main(["--record", str(self.junit)]), 0)
        kept = progress.load_store(self.junit.with_name(progress.STORE))
        self.assertEqual(sorted(kept), ["ch07 a: works", "ch11 a: works"])
        self.assertEqual(progress.main(["--record", str(self.root / "missing.xml")]), 2)

    def test_kept_results_survive_a_run_that_wrote_no_junit(self):
        self.run_tests([("ch07 a: works", "pass")])
        self.progress_rows()
        self.junit.unlink()  # tools/test.sh removes it first; a failed build writes none
        self.assertRegex(self.progress_rows()["07_library"], r"\s1\s+0\s+0\s+done")

    def test_explicit_junit_is_that_file_alone(self):
        self.run_tests([("ch07 a: works", "pass")])
        self.progress_rows()
        other = self.root / "other.xml"
        other.write_text(junit_of([("ch11 a: works", "pass")]))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            progress.main(["--tree", str(self.tree), "--junit", str(other)])
        rows = {line.split()[0]: line for line in out.getvalue().splitlines() if line[:2].isdigit()}
        self.assertRegex(rows["07_library"], r"\s-\s+-\s+-\s")  # the kept run is not shown
        self.assertRegex(rows["11_multi_gpu"], r"\s1\s+0\s+0\s")
        self.assertFalse(other.with_name(progress.STORE).exists())


if __name__ == "__main__":
    unittest.main()


SOLUTION = """int f() {
  // BEGIN SOLUTION
  return 42;
  // STUB
  //> // TODO(student): return the answer.
  //> return -1;
  // END SOLUTION
}
"""


def cases_junit(cases):
    """A JUnit file in CTest's form: cases are (name, 'pass' | 'fail' | 'nogpu')."""
    rows = []
    for name, r in cases:
        if r == "pass":
            rows.append(f'  <testcase name="{name}" status="run" time="0.1"/>')
        elif r == "fail":
            rows.append(f'  <testcase name="{name}" status="fail" time="0.1"><failure message=""/></testcase>')
        else:
            rows.append(f'  <testcase name="{name}" status="run" time="0.1">'
                        '<skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/>'
                        '<system-out>COURSE-NO-GPU: no NVIDIA GPU or driver found</system-out></testcase>')
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuite tests="{len(cases)}">\n'
            + "\n".join(rows) + "\n</testsuite>\n")


class OneTree(unittest.TestCase):
    """A course repository: solutions/ and chapters/, each with its own build (issue 36.3): the
    holes and the tests shown are those of one tree."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = pathlib.Path(self.tmp.name)
        for tree in ("solutions", "chapters"):
            (self.root / tree / "07_library").mkdir(parents=True)
        (self.root / "solutions" / "07_library" / "dot.cu").write_text(SOLUTION)
        self.stub_text = progress.make_exercises.student_text(SOLUTION, "dot.cu")[0]
        (self.root / "chapters" / "07_library" / "dot.cu").write_text(self.stub_text)
        self.stamp = 0

    def tearDown(self):
        self.tmp.cleanup()

    def results(self, build, cases):
        """What tools/test.sh leaves in build/<build>/ after a run of `cases`."""
        junit = self.root / "build" / build / "ctest-junit.xml"
        junit.parent.mkdir(parents=True, exist_ok=True)
        junit.write_text(cases_junit(cases))
        self.stamp += 1
        os.utime(junit, ns=(self.stamp * 10**9, self.stamp * 10**9))

    def fill(self):
        (self.root / "chapters" / "07_library" / "dot.cu").write_text(self.stub_text.replace("return -1;", "return 7;"))

    def show(self, *args):
        out = io.StringIO()
        old_root = progress.ROOT
        progress.ROOT = self.root
        try:
            with contextlib.redirect_stdout(out):
                self.assertEqual(progress.main(list(args)), 0)
        finally:
            progress.ROOT = old_root
        text = out.getvalue()
        rows = {line.split()[0]: line for line in text.splitlines() if line[:2].isdigit()}
        return text, rows

    def test_the_student_tree_is_not_shown_the_solutions_results(self):
        self.results("solutions", [("ch07 a: works", "pass"), ("ch07 b: works", "pass")])
        text, rows = self.show("--tree", str(self.root / "chapters"))
        self.assertIn("0/1", rows["07_library"])                 # the student's holes ...
        self.assertRegex(rows["07_library"], r"\s-\s+-\s+-\s")  # ... and no tests of theirs
        self.assertIn("No test results for", text)
        self.assertIn("tools/test.sh --student", text)
        # The solutions' own view: their holes, their build's results.
        text, rows = self.show("--tree", str(self.root / "solutions"))
        self.assertRegex(rows["07_library"], r"1/1\s+2\s+0\s+0\s+done")
        # And the student's build, once it has run, is the one the student tree shows.
        self.results("student", [("ch07 a: works", "fail"), ("ch07 b: works", "pass")])
        _, rows = self.show("--tree", str(self.root / "chapters"))
        self.assertRegex(rows["07_library"], r"0/1\s+1\s+1\s+0\s")

    def test_a_failed_test_of_no_chapter_is_shown(self):
        self.fill()
        self.results("student", [("ch07 a: works", "pass"),
                                 ("common: the stopping rule ends a host measurement", "fail"),
                                 ("cli 07_library: bad options are exit 2", "pass")])
        text, rows = self.show("--tree", str(self.root / "chapters"))
        self.assertIn("Failed outside the chapters", text)
        self.assertIn("  common: the stopping rule ends a host measurement", text)
        self.assertNotIn("cli 07_library", text)                 # it passed
        self.assertIn("Next: see why common: the stopping rule", text)

    def test_without_a_gpu_a_filled_chapter_is_not_done(self):
        run = [("ch07 index: works", "pass")] + [(f"ch07 gpu {k}: works", "nogpu") for k in range(24)]
        self.results("student", run)
        text, rows = self.show("--tree", str(self.root / "chapters"))
        self.assertIn("fill hole 1", rows["07_library"])          # unfilled: the hole first
        self.assertIn("Next: chapter 07_library: fill hole 1", text)
        self.fill()
        text, rows = self.show("--tree", str(self.root / "chapters"))
        self.assertIn("filled; 24 GPU tests not run (needs a GPU)", rows["07_library"])
        self.assertNotIn("done", rows["07_library"])
        self.assertIn("24 GPU tests of chapter 07 have not run", text)
        self.assertIn("on a machine with an NVIDIA GPU", text)
        # Once they have run and passed, it is done.
        self.results("student", [(name, "pass") for name, _ in run])
        text, rows = self.show("--tree", str(self.root / "chapters"))
        self.assertRegex(rows["07_library"], r"1/1\s+25\s+0\s+0\s+done")
        self.assertIn("Next: nothing left", text)


class HostCheckGaps(unittest.TestCase):
    """progress lists the holes that no test checks without a GPU (tools/check_host_holes.py)."""

    def printed(self, gaps, chapters):
        import check_host_holes
        real = check_host_holes.holes_without_host_check
        check_host_holes.holes_without_host_check = lambda root: gaps
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                progress.host_check_gaps(chapters)
        finally:
            check_host_holes.holes_without_host_check = real
        return out.getvalue()

    def test_gaps_of_the_chapters_shown_are_listed(self):
        text = self.printed([("07_library/dot.cu:3", "pending", "a recording stream"),
                             ("08_pinned/dot.cu:1", "no_host_check", "")], ["07_library"])
        self.assertIn("07_library/dot.cu:3: pending (a recording stream)", text)
        self.assertNotIn("08_pinned", text)

    def test_no_gap_prints_nothing(self):
        self.assertEqual(self.printed([], ["07_library"]), "")
