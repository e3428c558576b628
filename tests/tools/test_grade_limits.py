"""Tests of the grader's per-test time limit (issue 27) and of its console summary and splice count
for one chapter (issue 29): no GPU, standard library; the time-limit test runs the real ctest over
a CMake project without compilers whose "test" sleeps.

    python3 -m unittest discover -s tests/tools -p 'test_*.py'
"""

import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from unittest import mock

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
FIXTURES = HERE / "fixtures"
sys.path.append(str(REPO / "tools"))  # coursetools lives there; appended, so test files keep their names

from coursetools import cli, ctest, junit, manifest, proc, report, scoring, splice  # noqa: E402

HANG = "ch01 add_gpu: matches the host bitwise at awkward sizes"
QUICK = "ch01 add_gpu_copies: matches the host bitwise at awkward sizes"

# Two tests as the course registers them (label ch01, CTest's TIMEOUT 1200, which CTest's own
# --timeout cannot shorten): one hangs, one passes at once.
FAKE_PROJECT = f"""cmake_minimum_required(VERSION 3.20)
project(fake_course NONE)
enable_testing()
add_test(NAME "{HANG}" COMMAND sh -c "echo started; sleep 60")
add_test(NAME "{QUICK}" COMMAND sh -c "echo fine")
set_tests_properties("{HANG}" "{QUICK}" PROPERTIES LABELS ch01 TIMEOUT 1200)
"""


@unittest.skipUnless(shutil.which("cmake") and shutil.which("ctest") and shutil.which("sleep"),
                     "needs cmake, ctest and sleep")
class HangingTest(unittest.TestCase):
    """A test that hangs fails its item with "timed out after N s" and the grade goes on."""

    def test_a_hanging_test_is_timed_out_and_the_next_test_still_runs(self):
        with tempfile.TemporaryDirectory() as d:
            src, build, out = Path(d) / "src", Path(d) / "build", Path(d) / "out"
            src.mkdir()
            (src / "CMakeLists.txt").write_text(FAKE_PROJECT)
            subprocess.run(["cmake", "-S", str(src), "-B", str(build)], check=True, stdout=subprocess.DEVNULL)
            t0 = time.monotonic()
            parallel = os.environ.get("CTEST_PARALLEL_LEVEL")
            os.environ["CTEST_PARALLEL_LEVEL"] = "2"   # the grader runs one test at a time all the same
            try:
                with redirect_stdout(io.StringIO()) as stdout, redirect_stderr(io.StringIO()):
                    code = cli.main(["--no-build", "--build-dir", str(build), "--out", str(out), "--chapter", "01",
                                     "--no-sanitize", "--no-performance", "--test-timeout", "1"])
            finally:
                if parallel is None:
                    del os.environ["CTEST_PARALLEL_LEVEL"]
                else:
                    os.environ["CTEST_PARALLEL_LEVEL"] = parallel
            seconds = time.monotonic() - t0
            results = json.loads((out / "results.json").read_text())
            text = (out / "report.md").read_text()
            log = (out / "test.log").read_text()
            console = ctest.parse_ctest_console(log)
        # The hanging test sleeps 60 s; ended after its 1 s limit, the whole grade takes a few seconds.
        # The bound is the hang itself, not a guess at how fast this host is.
        self.assertLess(seconds, 55, "the grader waited for the hanging test instead of ending it")
        self.assertIn(code, (scoring.EXIT_OK, scoring.EXIT_INCOMPLETE))
        by_name = {t["name"]: t for t in results["tests"]}
        self.assertEqual(by_name[HANG]["status"], "failed")
        self.assertEqual(by_name[HANG]["score"], 0)
        self.assertTrue(by_name[HANG]["output"].startswith("timed out after 1 s"), by_name[HANG]["output"])
        self.assertEqual(by_name[QUICK]["status"], "passed")       # the grade went on
        self.assertGreater(by_name[QUICK]["score"], 0)
        row = next(line for line in text.splitlines() if line.startswith("| 1.") and HANG in line)
        self.assertIn("timed out after 1 s", row)                 # the report's table says it
        self.assertIn("per-test time limit: 1 s per test", text)
        self.assertIn("[grade] timed out after 1 s (the per-test time limit): " + HANG, log)
        self.assertEqual(console[HANG], "timed out after 1 s")    # read back from test.log (--reuse-tests)
        self.assertIn("correctness", stdout.getvalue())


class FakeMonotonic:
    """time.monotonic for the timer, moved only by the test: no sleep, so a busy host cannot make
    "not yet" read as "too late"."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class TimeLimits(unittest.TestCase):
    def test_the_timer_ends_only_a_test_past_its_limit(self):
        killed = []
        clock = FakeMonotonic()
        with mock.patch("time.monotonic", clock):
            timer = ctest.TestTimer(lambda name: 0.05 if name.startswith("ch01") else 0, kill=killed.append)
            timer.line("    Start 1: ch01 a: b\n")
            clock.now += 0.05                                     # at the limit: not past it
            timer.check(1234)
            self.assertEqual(killed, [])                          # not yet
            clock.now += 0.01
            timer.check(1234)
            self.assertEqual(killed, [1234])
            self.assertEqual(timer.timed_out, {"ch01 a: b": 0.05})
            timer.check(1234)
            self.assertEqual(killed, [1234])                      # once
            timer.line("    Start 2: ch02 c: d\n")                # no limit for this one
            clock.now += 100
            timer.check(1234)
            timer.line("    Start 3: ch01 e: f\n")
            timer.line("3/3 Test #3: ch01 e: f ..........   Passed    0.01 sec\n")  # finished in time
            clock.now += 100
            timer.check(1234)
        self.assertEqual(killed, [1234])
        self.assertEqual(ctest.parse_ctest_console(timer.report()), {"ch01 a: b": "timed out after 0.05 s"})

    def test_ctests_own_timeout_reads_the_same(self):
        line = "1/1 Test #1: ch06 v4: big ..........***Timeout 1200.03 sec"
        self.assertEqual(ctest.parse_ctest_console(line), {"ch06 v4: big": "timed out after 1200 s"})
        t = junit.TestResult("ch06 v4: big", "failed", "Filters: ch06 v4: big\n")
        text = junit.failure_excerpt(t, "timed out after 1200 s")
        self.assertTrue(text.startswith("timed out after 1200 s"), text)
        self.assertEqual(report.one_line(text), "timed out after 1200 s")

    def test_the_limit_per_chapter_comes_from_the_manifest_then_the_flag(self):
        data = {"chapter": "06_ladder", "correctness": [], "performance": [], "test_timeout_s": 900}
        m6 = manifest.parse_manifest(data, Path("06_ladder.json"))
        m1 = manifest.parse_manifest({"chapter": "01_timing"}, Path("01_timing.json"))
        limit = cli.time_limits([m1, m6], 300)
        self.assertEqual(limit("ch06 v4_first_add: beyond 2^31 elements"), 900)
        self.assertEqual(limit("ch01 add_gpu: x"), 300)
        self.assertEqual(limit("tools.version_list_01"), 300)
        self.assertIn("06_ladder 900 s", cli.describe_time_limits([m1, m6], 300))
        for bad in (0, -1, "10", True):
            with self.subTest(bad=bad), self.assertRaises(manifest.ManifestError):
                manifest.parse_manifest(dict(data, test_timeout_s=bad), Path("06_ladder.json"))
        with redirect_stderr(io.StringIO()), self.assertRaises(SystemExit):
            cli.parse_args(["--test-timeout", "-1"])
        self.assertEqual(cli.parse_args([]).test_timeout, cli.DEFAULT_TEST_TIMEOUT)

    def test_descendants_are_found_and_killed(self):
        p = subprocess.Popen(["sh", "-c", "sleep 30 & wait"])
        try:
            deadline = time.monotonic() + 5
            while not proc.descendants(p.pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertTrue(proc.descendants(p.pid))
            self.assertGreaterEqual(proc.kill_children(p.pid), 1)
            p.wait(timeout=10)                                    # sh's `wait` returns once sleep is killed
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()


def chapter01():
    return manifest.load_manifests(REPO / "tools" / "grading")[0]


class Console(unittest.TestCase):
    """Issue 29: the console never says "total 0 of 16" for points nobody assessed."""

    def test_nothing_assessed_is_said_in_words(self):
        tests = junit.parse_junit(FIXTURES / "ctest_nogpu.xml")        # every test skipped: no GPU
        m = manifest.parse_manifest({"chapter": "01_timing", "correctness": [{"tests": "ch01 *", "points": 2}]},
                                    Path("01_timing.json"))
        g = scoring.assemble([m], tests, None, cores=4)
        g.no_performance = True
        text = report.summary(g, Path("report.md"), Path("results.json"))
        self.assertEqual(g.total(), (0, 14))
        self.assertIn("nothing was assessed", text)
        self.assertIn("nothing was assessed, so there is no score yet", g.headline())
        self.assertNotRegex(text, r"total\s+0 of")
        self.assertRegex(text, r"correctness\s+not run")
        self.assertRegex(text, r"performance\s+not measured \(--no-performance\)")

    def test_what_was_assessed_is_still_counted(self):
        tests = junit.parse_junit(FIXTURES / "ctest_mixed.xml")
        g = scoring.assemble([chapter01()], tests, None, cores=4)
        text = report.summary(g, Path("report.md"), Path("results.json"))
        p, mx = g.total()
        self.assertRegex(text, rf"total\s+{p:g} of {mx:g}")
        self.assertIn("not assessed", text)                            # the skipped ones are named as such


class SpliceOneChapter(unittest.TestCase):
    """Issue 29: grading one chapter counts that chapter's holes, not every chapter's."""

    def test_only_the_graded_chapters_holes_are_counted(self):
        me = splice.load_make_exercises()
        course = me.course_files(REPO)
        ladder = {rel: t for rel, t in course.items() if rel.startswith("06_ladder/")}
        holes_06 = sum(len(me.holes(t)) for t in ladder.values())
        holes_all = sum(len(me.holes(t)) for t in course.values())
        self.assertLess(holes_06, holes_all)
        with tempfile.TemporaryDirectory() as d:
            tree, staging = Path(d) / "t", Path(d) / "s"
            for rel, text in course.items():           # the unfilled student tree, and a foreign file in 05
                (tree / rel).parent.mkdir(parents=True, exist_ok=True)
                (tree / rel).write_text(text)
            (tree / "05_many_blocks" / "mine.cu").write_text("// not a course file\n")
            one = splice.stage_tree(tree, staging, course, me, chapters=["06_ladder"])
            every = splice.stage_tree(tree, staging, course, me)
            self.assertTrue(all((staging / rel).is_file() for rel in course))   # the build still gets them all
        self.assertEqual(one.holes, holes_06)
        self.assertEqual(every.holes, holes_all)
        self.assertIn(f"(0 of {holes_06} holes of 06_ladder differ from the stub)", one.lines[0])
        self.assertFalse(any("mine.cu" in x for x in one.lines))           # chapter 05 is not graded
        self.assertTrue(any("mine.cu" in x for x in every.lines))


if __name__ == "__main__":
    unittest.main()
