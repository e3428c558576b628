"""Tests of the grader (tools/grade, the package tools/coursetools/): no GPU, no build, standard
library only.

    python3 -m unittest discover -s tests/tools -p 'test_*.py'

The JUnit fixtures are real `ctest --output-junit` files (CTest 3.25, Catch2 2.13), with one test
of each kind: passed, failed (a Catch2 assertion), skipped by the GPU guard (COURSE-NO-GPU),
crashed (SIGSEGV: empty failure), and "Unable to find executable" (notrun that is not a skip).
"""

import io
import json
import os
import re
import shutil
import sys
import xml.etree.ElementTree as ET
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
FIXTURES = HERE / "fixtures"
sys.path.append(str(REPO / "tools"))  # coursetools lives there; appended, so test files keep their names

from coursetools import cli, ctest, junit, perf, proc, report, sanitizer, scoring, splice  # noqa: E402
from coursetools import manifest as mf  # noqa: E402  (manifest() below builds one)



ADD = "ch01 add_gpu: matches the host bitwise at awkward sizes"
COPIES = "ch01 add_gpu_copies: matches the host bitwise at awkward sizes"
EVENTS = "ch01 time_with_events_ms: measures GPU time, not the launch"
EVENTS_HELD = "ch01 time_with_events_ms: counts what the stream runs, not what the host waits for"
INTEGRITY01 = "ch01 integrity: the holes call no library or other version, keep no state, read no environment"
ADD_CPU = "ch01 add_cpu: matches the host bitwise at awkward sizes"
SQRT_CPU = "ch01 sqrt_cpu: matches the host bitwise at awkward sizes"
CRASH = "ch01 sqrt_gpu: matches the host bitwise at awkward sizes"
MISSING = "ch01 sqrt_gpu_copies: matches the host bitwise at awkward sizes"
ADD_GUARD = "ch01 add_gpu: writes nothing past the end of the output"
ADD_HUGE = "ch01 add_gpu: beyond 2^32 elements"
PREDICT = "ch01 predicted_add_ms: the time to move the add's bytes at the given bandwidth"
INDEX = ("ch01 index: global_index numbers every thread of the grid, past 2^32 too (exercise 1)",
         "ch01 index: launch_shape gives every element a thread, less than one block to spare (exercise 1)",
         "ch01 index: launch_shape makes blocks of whole warps, 32 to 1024 threads (exercise 1)",
         "ch01 index: launch_shape past what a grid can hold, which launch_add refuses (exercise 1)")


def manifest(correctness=None, performance=None, chapter="01_timing"):
    data = {"chapter": chapter, "title": "Timing",
            "correctness": correctness if correctness is not None else [
                {"tests": "ch01 add_gpu: *", "points": 4},
                {"tests": "ch01 add_gpu_copies: *", "points": 2},
                {"tests": "ch01 time_with_events_ms: *", "points": 4}],
            "performance": performance if performance is not None else []}
    return mf.parse_manifest(data, Path(f"{chapter}.json"))


def perf_rule(**over):
    rule = {"name": "add kernel", "points": 4, "args": ["--kernel", "add_gpu"],
            "row": {"version": "add_gpu", "config": "float", "n": 100000000},
            "metric": "pct_roofline", "zero_at": 20, "full_at": 60, "requires": ["ch01 add_gpu: *"]}
    rule.update(over)
    return rule


def result(name, status, output="", message="", no_gpu=False):
    return junit.TestResult(name, status, output, message, 0.0, no_gpu)


def passing(*names):
    return [result(n, "passed") for n in names]


def chapter01():
    """The repository's own manifest of chapter 01."""
    return next(m for m in mf.load_manifests(REPO / "tools" / "grading") if m.chapter == "01_timing")


def csv_rows():
    return perf.read_csv_rows(FIXTURES / "01_timing.csv")


class FakeRunner:
    """Stands in for the chapter executable: counts its calls, returns a fixed PerfRun (or, given a
    list, the next one on each call, the last one again when they run out)."""

    def __init__(self, run):
        self.runs = run if isinstance(run, list) else [run]
        self.calls, self.attempts = 0, []

    def __call__(self, *args, attempt=0):
        self.calls += 1
        self.attempts.append(attempt)
        return self.runs[min(self.calls, len(self.runs)) - 1]


def ok_run(rows=None):
    return perf.PerfRun(0, rows if rows is not None else csv_rows(), "", "fixture.csv")


class JUnitParsing(unittest.TestCase):
    def setUp(self):
        self.tests = junit.parse_junit(FIXTURES / "ctest_mixed.xml")
        self.by_name = {t.name: t for t in self.tests}

    def test_every_testcase_is_read_with_its_name_unescaped(self):
        self.assertEqual(len(self.tests), 7)
        self.assertEqual(set(self.by_name), {ADD, COPIES, EVENTS, ADD_CPU, SQRT_CPU, CRASH, MISSING})

    def test_statuses(self):
        status = {n: t.status for n, t in self.by_name.items()}
        self.assertEqual(status[ADD], "failed")
        self.assertEqual(status[COPIES], "passed")
        self.assertEqual(status[ADD_CPU], "passed")
        self.assertEqual(status[EVENTS], "skipped")
        self.assertEqual(status[SQRT_CPU], "skipped")
        self.assertEqual(status[CRASH], "failed")

    def test_notrun_for_a_missing_executable_is_a_failure_not_a_skip(self):
        t = self.by_name[MISSING]
        self.assertEqual(t.status, "failed")
        self.assertIn("Unable to find executable", t.message)

    def test_gpu_skips_are_recognised_with_the_guards_reason(self):
        self.assertTrue(self.by_name[EVENTS].no_gpu)
        self.assertFalse(self.by_name[ADD].no_gpu)
        reason = junit.gpu_skip_reason(self.tests)
        self.assertTrue(reason.startswith("COURSE-NO-GPU: no usable CUDA GPU"), reason)
        self.assertIsNone(junit.gpu_skip_reason(passing(ADD)))

    def test_output_is_the_tests_own_text(self):
        self.assertIn("255 of 255 elements wrong", self.by_name[ADD].output)

    def test_failure_excerpt_drops_the_catch2_banner_and_keeps_the_hint(self):
        text = junit.failure_excerpt(self.by_name[ADD])
        self.assertIn("CHECK( 255 == 0 )", text)
        self.assertIn("Hint: NaN means", text)
        self.assertNotIn("Catch v2", text)
        self.assertNotIn("test cases:", text)
        self.assertLessEqual(len(text.splitlines()), 13)

    def test_failure_excerpt_starts_at_the_first_failure(self):
        out = ("Filters: x\n-----\nch01 x: y\n  first section\n-----\nt.cpp:1\n" + "." * 79 + "\n\n"
               "t.cpp:5: FAILED:\n  CHECK( a == b )\nwith message:\n  first size\n\n-----\nch01 x: y\n"
               "  second section\n-----\nt.cpp:9\n" + "." * 79 + "\n\nt.cpp:12: FAILED:\n  REQUIRE( c )\n\n"
               + "=" * 79 + "\ntest cases: 1 | 1 failed\n")
        text = junit.failure_excerpt(result("ch01 x: y", "failed", out))
        self.assertTrue(text.startswith("t.cpp:5: FAILED:"), text)
        self.assertIn("first size", text)
        self.assertNotIn("test cases:", text)

    def test_a_crash_is_explained_from_the_console(self):
        console = ctest.parse_ctest_console((FIXTURES / "ctest_mixed_console.txt").read_text())
        self.assertEqual(console[CRASH], "Exception: SegFault")
        self.assertEqual(console[ADD], "Failed")
        self.assertEqual(console[COPIES], "Passed")
        self.assertEqual(console[MISSING], "Not Run")
        text = junit.failure_excerpt(self.by_name[CRASH], console[CRASH])
        self.assertIn("CTest: Exception: SegFault", text)
        self.assertIn("launching", text)

    def test_testsuites_root_and_error_elements(self):
        xml = ('<testsuites><testsuite name="x"><testcase name="ch02 a: b" status="run"/>'
               '<testcase name="ch02 c: d"><error message="boom">trace</error></testcase>'
               '<testcase name="ch02 e: f" status="disabled"><skipped message="Disabled"/></testcase>'
               '</testsuite></testsuites>')
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "j.xml"
            p.write_text(xml)
            tests = {t.name: t for t in junit.parse_junit(p)}
        self.assertEqual(tests["ch02 a: b"].status, "passed")
        self.assertEqual(tests["ch02 c: d"].status, "failed")
        self.assertIn("boom", tests["ch02 c: d"].message)
        self.assertEqual(tests["ch02 e: f"].status, "failed")  # disabled: should have run

    def test_the_real_no_gpu_run_of_chapter_01(self):
        """ctest_nogpu.xml: the solutions build of chapter 01 on a machine without a GPU."""
        tests = junit.parse_junit(FIXTURES / "ctest_nogpu.xml")
        self.assertEqual(len(tests), 7)
        self.assertTrue(all(t.status == "skipped" and t.no_gpu for t in tests))
        self.assertEqual(junit.gpu_skip_reason(tests),
                         "COURSE-NO-GPU: no usable CUDA GPU (cudaGetDeviceCount: cudaErrorInsufficientDriver, "
                         "CUDA driver version is insufficient for CUDA runtime version)")

    def test_ctest4_catch2v3_student_tree_on_a_gpu(self):
        """ctest4_student_on_gpu.xml: the unfilled student tree of chapter 01 on the H100 (CMake 4.4,
        Catch2 3.4): <failure message="Failed"/> and a <properties> block per test case."""
        tests = {t.name: t for t in junit.parse_junit(FIXTURES / "ctest4_student_on_gpu.xml")}
        self.assertEqual(len(tests), 7)
        self.assertEqual({n for n, t in tests.items() if t.status == "failed"}, {ADD, COPIES, EVENTS})
        self.assertEqual({n for n, t in tests.items() if t.status == "passed"},
                         {ADD_CPU, SQRT_CPU, CRASH, MISSING})
        text = junit.failure_excerpt(tests[ADD])
        self.assertTrue(text.startswith("/home/course/dotcourse/tests/test_01_timing.cpp:38: FAILED:"), text)
        self.assertIn("at n = 1: 1 of 1 elements wrong", text)
        self.assertIn("bounds check i < n", text)
        self.assertEqual(report.one_line(text),
                         "add_gpu (float) at n = 1: 1 of 1 elements wrong; the first at index 0 (got -")
        g = scoring.assemble([chapter01()], list(tests.values()),
                             lambda m, r: self.fail("no measurement without passing tests"))
        self.assertEqual(g.total()[0], 0.0)   # the unfilled tree scores zero
        self.assertGreater(g.total()[1], 0.0)
        self.assertEqual(g.not_assessed(), 0.0)
        self.assertEqual(g.exit_code(), scoring.EXIT_OK)

    def test_missing_or_broken_junit_is_a_grader_error(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(proc.GradeError):
                junit.parse_junit(Path(d) / "absent.xml")
            bad = Path(d) / "bad.xml"
            bad.write_text("<testsuite><testcase")
            with self.assertRaises(proc.GradeError):
                junit.parse_junit(bad)


class Manifests(unittest.TestCase):
    def test_the_repositorys_manifests_are_valid(self):
        manifests = mf.load_manifests(REPO / "tools" / "grading")
        self.assertGreaterEqual(len(manifests), 1)
        for m in manifests:
            self.assertTrue(m.correctness or m.performance, m.path)
            for rule in m.performance:
                self.assertTrue(rule.requires)

    def test_chapter_01_grades_its_exercises_and_the_add_kernels_roofline(self):
        m = chapter01()
        tests = passing(ADD, ADD_GUARD, ADD_HUGE, COPIES, EVENTS, EVENTS_HELD, PREDICT, ADD_CPU, INTEGRITY01, *INDEX)
        graded, others = scoring.grade_correctness([m], tests)
        self.assertEqual({i.name for i in graded},
                         {ADD, ADD_GUARD, ADD_HUGE, COPIES, EVENTS, EVENTS_HELD, PREDICT, INTEGRITY01, *INDEX})
        self.assertEqual([i.name for i in others], [ADD_CPU])
        self.assertTrue(all(i.max_points > 0 for i in graded if i.name != INTEGRITY01))
        (perf,) = m.performance
        self.assertEqual(perf.metric, "pct_roofline")
        self.assertEqual(perf.row["version"], "add_gpu")
        self.assertTrue(any(scoring.match(g, ADD) for g in perf.requires))

    def test_mistakes_are_caught_when_the_grader_starts(self):
        bad = [
            {"chapter": "01_timing", "correctness": [{"tests": "ch01 *", "points": -1}]},
            {"chapter": "01_timing", "correctness": [{"tests": "ch01 *", "point": 1}]},
            {"chapter": "01_timing", "performance": [perf_rule(requires=[])]},
            {"chapter": "01_timing", "performance": [perf_rule(metric="median_ms")]},
            {"chapter": "01_timing", "performance": [perf_rule(full_at=20)]},
            {"chapter": "01_timing", "performance": [perf_rule(args=["--csv", "x.csv"])]},
            {"chapter": "01_timing", "performance": [perf_rule(row={"config": "float"})]},
            {"chapter": "02_cpu_dot"},                       # file is 01_timing.json
            {"chapter": "01_timing", "sanitize_args": {"memchek": ["--x"]}},
            {"chapter": "01_timing", "sanitize_args": {"memcheck": "--report-api-errors no"}},
            {"chapter": "timing"},
        ]
        for data in bad:
            with self.subTest(data=data), self.assertRaises(mf.ManifestError):
                mf.parse_manifest(data, Path("01_timing.json"))

    def test_requires_may_be_one_string_and_comments_are_allowed(self):
        m = mf.parse_manifest({"chapter": "01_timing", "comment": "x",
                               "performance": [perf_rule(requires="ch01 add_gpu: *", comment="y")]},
                              Path("01_timing.json"))
        self.assertEqual(m.performance[0].requires, ["ch01 add_gpu: *"])

    def test_speedup_metric_needs_a_version(self):
        mf.parse_manifest({"chapter": "01_timing", "performance": [perf_rule(metric="speedup_vs:add_lib")]},
                          Path("01_timing.json"))
        with self.assertRaises(mf.ManifestError):
            mf.parse_manifest({"chapter": "01_timing", "performance": [perf_rule(metric="speedup_vs:")]},
                              Path("01_timing.json"))


class CorrectnessRules(unittest.TestCase):
    def test_points_per_matching_test_and_first_rule_wins(self):
        m = manifest(correctness=[{"tests": "ch01 add_gpu: *", "points": 3},
                                  {"tests": "ch01 add*", "points": 1}])
        graded, others = scoring.grade_correctness([m], passing(ADD, COPIES, ADD_CPU, EVENTS))
        points = {i.name: (i.points, i.max_points) for i in graded}
        self.assertEqual(points, {ADD: (3, 3), COPIES: (1, 1), ADD_CPU: (1, 1)})
        self.assertEqual([(i.name, i.status, i.max_points) for i in others], [(EVENTS, "not graded", 0.0)])

    def test_glob_does_not_let_add_gpu_swallow_add_gpu_copies(self):
        self.assertTrue(scoring.match("ch01 add_gpu: *", ADD))
        self.assertFalse(scoring.match("ch01 add_gpu: *", COPIES))
        self.assertFalse(scoring.match("ch01 ADD_GPU: *", ADD))  # case-sensitive

    def test_failed_test_scores_zero_with_its_message(self):
        m = manifest()
        tests = junit.parse_junit(FIXTURES / "ctest_mixed.xml")
        graded, _ = scoring.grade_correctness([m], tests)
        item = next(i for i in graded if i.name == ADD)
        self.assertEqual((item.points, item.max_points, item.status), (0.0, 4.0, "failed"))
        self.assertIn("Hint: NaN means", item.detail)

    def test_a_rule_that_matches_nothing_still_counts_its_points(self):
        m = manifest(correctness=[{"tests": "ch01 renamed: *", "points": 2, "expect": 2}])
        graded, _ = scoring.grade_correctness([m], passing(ADD))
        self.assertEqual(len(graded), 2)
        self.assertEqual(sum(i.max_points for i in graded), 4)
        self.assertEqual(sum(i.points for i in graded), 0)
        self.assertTrue(all(i.status == "failed" for i in graded))

    def test_skipped_test_is_not_assessed_unless_a_gpu_is_expected(self):
        m = manifest()
        tests = [result(EVENTS, "skipped", "COURSE-NO-GPU: none", "SKIP_REGULAR_EXPRESSION_MATCHED", True)]
        graded, _ = scoring.grade_correctness([m], tests)
        (item,) = [i for i in graded if i.name == EVENTS]
        self.assertEqual((item.status, item.points, item.max_points), ("skipped", 0.0, 4.0))
        graded, _ = scoring.grade_correctness([m], tests, expect_gpu=True)
        (item,) = [i for i in graded if i.name == EVENTS]
        self.assertEqual(item.status, "failed")

    def test_not_graded_tests_are_grouped_by_chapter(self):
        graded, others = scoring.grade_correctness([manifest()], passing("ch07 x: y", "common: stats"))
        self.assertEqual(sorted(i.chapter for i in others), ["ch07", "other"])


class LinearScoring(unittest.TestCase):
    def test_linear_between_thresholds(self):
        self.assertEqual(scoring.linear_points(40, 20, 60, 4), 2.0)
        self.assertEqual(scoring.linear_points(30, 20, 60, 4), 1.0)
        self.assertEqual(scoring.linear_points(92.6, 20, 60, 4), 4.0)
        self.assertEqual(scoring.linear_points(10, 20, 60, 4), 0.0)
        self.assertEqual(scoring.linear_points(20, 20, 60, 4), 0.0)
        self.assertEqual(scoring.linear_points(60, 20, 60, 4), 4.0)

    def test_rounded_to_hundredths(self):
        self.assertEqual(scoring.linear_points(1.0, 0.0, 3.0, 1.0), 0.33)

    def test_reversed_thresholds_reward_lower_values(self):
        self.assertEqual(scoring.linear_points(1.5, 2.0, 1.0, 10), 5.0)
        self.assertEqual(scoring.linear_points(3.0, 2.0, 1.0, 10), 0.0)

    def test_not_a_number_scores_zero(self):
        self.assertEqual(scoring.linear_points(float("nan"), 20, 60, 4), 0.0)
        self.assertEqual(scoring.linear_points(float("inf"), 20, 60, 4), 0.0)


class PerformanceRules(unittest.TestCase):
    def grade_one(self, rule, tests, run, expect_gpu=False):
        m = manifest(performance=[rule])
        return perf.grade_performance(m, m.performance[0], tests, run, expect_gpu)

    def test_pct_roofline_of_the_named_row(self):
        runner = FakeRunner(ok_run())
        item = self.grade_one(perf_rule(zero_at=20, full_at=100), passing(ADD), runner)
        self.assertEqual(runner.calls, 1 + perf.REMEASURE)  # short of full marks: measured again
        self.assertAlmostEqual(item.measured, 92.6)
        self.assertEqual(item.points, round(4 * (92.6 - 20) / 80, 2))
        self.assertEqual(item.status, "partial")
        self.assertEqual(self.grade_one(perf_rule(), passing(ADD), runner).status, "passed")

    @staticmethod
    def run_at(value):
        """A run whose add_gpu float row measures `value` % of the roofline."""
        rows = [dict(r) for r in csv_rows()]
        for r in rows:
            if r["version"] == "add_gpu" and r["config"] == "float":
                r["pct_roofline"] = str(value)
        return ok_run(rows)

    def test_a_value_short_of_full_marks_is_measured_again_and_the_best_counts(self):
        runner = FakeRunner([self.run_at(43.1), self.run_at(88.4)])   # a busy host, then a quiet one
        item = self.grade_one(perf_rule(), passing(ADD), runner)
        self.assertEqual(runner.attempts, [0, 1])
        self.assertEqual((item.measured, item.points, item.status), (88.4, 4.0, "passed"))
        self.assertIn("measured 2 times", item.detail)
        self.assertIn("43.1, 88.4", item.detail)

    def test_a_slow_solution_stays_slow_after_every_measurement(self):
        runner = FakeRunner([self.run_at(40), self.run_at(30), self.run_at(35)])
        item = self.grade_one(perf_rule(), passing(ADD), runner)
        self.assertEqual(runner.attempts, list(range(1 + perf.REMEASURE)))
        self.assertEqual((item.measured, item.points, item.status), (40.0, 2.0, "partial"))
        self.assertIn("measured 3 times", item.detail)

    def test_full_marks_at_the_first_measurement_are_not_measured_again(self):
        runner = FakeRunner([self.run_at(61), self.run_at(10)])
        item = self.grade_one(perf_rule(), passing(ADD), runner)
        self.assertEqual((runner.calls, item.points), (1, 4.0))
        self.assertNotIn("measured", item.detail.split(";")[-1])

    def test_a_later_run_that_fails_validation_counts_as_it_is(self):
        bad = self.run_at(90)
        for r in bad.rows:
            r["valid"] = "0"
        runner = FakeRunner([self.run_at(40), bad])
        item = self.grade_one(perf_rule(), passing(ADD), runner)
        self.assertEqual((runner.calls, item.points, item.status), (2, 0.0, "failed"))
        self.assertIn("not valid", item.detail)

    def test_no_remeasurement_when_asked_for_none(self):
        runner = FakeRunner([self.run_at(40), self.run_at(90)])
        m = manifest(performance=[perf_rule()])
        item = perf.grade_performance(m, m.performance[0], passing(ADD), runner, remeasure=0)
        self.assertEqual((runner.calls, item.points), (1, 2.0))

    def test_pct_link_reads_its_own_column(self):
        # Chapters 08 and 09 name their share of the pinned host-to-device bandwidth pct_link; a row
        # without that column is an error, never a silent pct_roofline.
        rows = [dict(r) for r in csv_rows()]
        for r in rows:
            r["pct_link"] = r.pop("pct_roofline")
        item = self.grade_one(perf_rule(metric="pct_link", zero_at=20, full_at=100), passing(ADD), FakeRunner(ok_run(rows)))
        self.assertAlmostEqual(item.measured, 92.6)
        item = self.grade_one(perf_rule(metric="pct_link"), passing(ADD), FakeRunner(ok_run()))
        self.assertEqual((item.points, item.status), (0.0, "failed"))
        self.assertIn("pct_link", item.detail)
        with self.assertRaises(mf.ManifestError):
            manifest(performance=[perf_rule(metric="pct_wire")])

    def test_no_points_and_no_run_unless_the_required_tests_passed(self):
        runner = FakeRunner(ok_run())
        tests = [result(ADD, "failed", "boom")]
        item = self.grade_one(perf_rule(), tests, runner)
        self.assertEqual((item.points, item.status, runner.calls), (0.0, "failed", 0))
        self.assertIn(ADD, item.detail)

    def test_every_glob_of_requires_must_match_a_test(self):
        runner = FakeRunner(ok_run())
        item = self.grade_one(perf_rule(requires=["ch01 add_gpu: *", "ch01 gone: *"]), passing(ADD), runner)
        self.assertEqual((item.points, item.status, runner.calls), (0.0, "failed", 0))

    def test_a_failure_outranks_a_skip(self):
        tests = [result(ADD, "failed"), result(COPIES, "skipped", no_gpu=True)]
        state, _ = scoring.requirement_state(["ch01 add_gpu*"], tests)
        self.assertEqual(state, "failed")

    def test_skipped_requirement_is_not_assessed(self):
        runner = FakeRunner(ok_run())
        tests = [result(ADD, "skipped", "COURSE-NO-GPU", "SKIP_REGULAR_EXPRESSION_MATCHED", True)]
        item = self.grade_one(perf_rule(), tests, runner)
        self.assertEqual((item.status, item.points, runner.calls), ("skipped", 0.0, 0))
        self.assertTrue(item.no_gpu)
        item = self.grade_one(perf_rule(), tests, runner, expect_gpu=True)
        self.assertEqual(item.status, "failed")

    def test_invalid_row_scores_zero(self):
        rule = perf_rule(row={"version": "add_gpu_copies", "config": "float"}, requires=["ch01 add_gpu*"])
        item = self.grade_one(rule, passing(ADD, COPIES), FakeRunner(ok_run()))
        self.assertEqual((item.points, item.status), (0.0, "failed"))
        self.assertIn("not valid", item.detail)

    def test_valid_may_be_written_as_true(self):
        rows = [dict(r, valid="true") for r in csv_rows()]
        self.assertTrue(perf.row_valid(rows[1]))
        self.assertFalse(perf.row_valid({"valid": "0"}))
        self.assertFalse(perf.row_valid({"valid": "false"}))
        self.assertFalse(perf.row_valid({}))

    def test_speedup_vs_a_library_baseline_in_the_same_run(self):
        rule = perf_rule(metric="speedup_vs:add_lib", zero_at=0.5, full_at=1.0)
        item = self.grade_one(rule, passing(ADD), FakeRunner(ok_run()))
        self.assertAlmostEqual(item.measured, 0.4102 / 0.4235)
        self.assertEqual(item.points, round(4 * (0.4102 / 0.4235 - 0.5) / 0.5, 2))
        # The double row is compared with the double baseline (n written as 1e+08 there).
        rule = perf_rule(metric="speedup_vs:add_lib", zero_at=0.5, full_at=1.0,
                         row={"version": "add_gpu", "config": "double"})
        item = self.grade_one(rule, passing(ADD), FakeRunner(ok_run()))
        self.assertAlmostEqual(item.measured, 0.8222 / 0.8391)

    def test_an_invalid_or_missing_baseline_is_a_grader_error_not_a_zero(self):
        for metric in ("speedup_vs:add_lib_broken", "speedup_vs:cublas"):
            with self.subTest(metric=metric):
                item = self.grade_one(perf_rule(metric=metric, zero_at=0.5, full_at=1),
                                      passing(ADD), FakeRunner(ok_run()))
                self.assertEqual(item.status, "error")

    def test_a_rule_must_name_one_row(self):
        rule = perf_rule(row={"version": "add_gpu"})
        item = self.grade_one(rule, passing(ADD), FakeRunner(ok_run()))
        self.assertEqual(item.status, "error")
        self.assertIn("2 CSV rows", item.detail)
        with self.assertRaises(LookupError):
            perf.select_row(csv_rows(), {"version": "nope"})

    def test_executable_exit_codes(self):
        cases = [(3, "skipped"), (1, "failed"), (2, "error"), (4, "error")]
        for code, status in cases:
            with self.subTest(code=code):
                item = self.grade_one(perf_rule(), passing(ADD), FakeRunner(perf.PerfRun(code, [], "out")))
                self.assertEqual((item.status, item.points), (status, 0.0))
        item = self.grade_one(perf_rule(), passing(ADD), FakeRunner(perf.PerfRun(3, [])), expect_gpu=True)
        self.assertEqual(item.status, "failed")
        item = self.grade_one(perf_rule(), passing(ADD), FakeRunner(perf.PerfRun(-1, [], timed_out=True)))
        self.assertEqual(item.status, "failed")

    def test_a_non_number_metric_scores_zero(self):
        rows = csv_rows()
        rows[1]["pct_roofline"] = "nan"
        item = self.grade_one(perf_rule(), passing(ADD), FakeRunner(ok_run(rows)))
        self.assertEqual((item.points, item.status), (0.0, "failed"))


def no_gpu_grade():
    """Chapter 01 on a machine without a GPU: every GPU test skipped, as CTest reports it."""
    m = manifest(performance=[perf_rule(), perf_rule(name="copies", requires=["ch01 add_gpu_copies: *"])])
    out = "warning:\n  COURSE-NO-GPU: no usable CUDA GPU (no CUDA-capable device is detected)\n"
    tests = [result(n, "skipped", out, "SKIP_REGULAR_EXPRESSION_MATCHED", True)
             for n in (ADD, COPIES, EVENTS, ADD_CPU)]
    runner = FakeRunner(ok_run())
    g = scoring.assemble([m], tests, lambda mm, r: runner(mm, r), tree="chapters")
    return g, runner


class IncompleteWithoutGpu(unittest.TestCase):
    def setUp(self):
        self.g, self.runner = no_gpu_grade()

    def test_exit_code_is_incomplete_and_nothing_ran(self):
        self.assertTrue(self.g.incomplete)
        self.assertEqual(self.g.exit_code(), scoring.EXIT_INCOMPLETE)
        self.assertEqual(self.runner.calls, 0)

    def test_every_point_is_counted_as_not_assessed(self):
        self.assertEqual(self.g.total(), (0.0, 18.0))
        self.assertEqual(self.g.not_assessed(), 18.0)
        self.assertEqual(self.g.not_assessed("correctness"), 10.0)
        self.assertEqual(self.g.not_assessed("performance"), 8.0)

    def test_headline_says_the_gpu_tests_did_not_run_and_is_not_a_zero(self):
        head = self.g.headline()
        self.assertIn("GPU tests did not run on this machine", head)
        self.assertIn("Checked here: none of the 18 points", head)
        self.assertIn("Not checked: 18 points need a GPU (10 correctness, 8 performance)", head)
        self.assertIn("not a zero", head)
        self.assertIn("no CUDA-capable device", head)

    def test_results_json_reports_no_failure(self):
        r = report.gradescope_results(self.g)
        json.dumps(r)
        # Nothing ran: no item at all, so Gradescope shows no 0/N for a test that never executed.
        graded = [t for t in r["tests"] if "correctness" in t["tags"] or "performance" in t["tags"]]
        self.assertEqual(graded, [])
        self.assertEqual(r["score"], 0.0)
        self.assertEqual(len(r["extra_data"]["not_assessed"]), 5)
        self.assertIn("Score of what ran: 0 of 0 points", r["output"])
        self.assertIn("not in this score nor in the list of tests", r["output"])
        self.assertIn("GPU tests did not run", r["output"])
        self.assertTrue(r["extra_data"]["incomplete"])
        self.assertEqual(r["extra_data"]["points_not_assessed"], 18.0)

    def test_report_says_so_too(self):
        md = report.render_markdown(self.g)
        self.assertIn("INCOMPLETE: the GPU tests did not run", md)
        self.assertIn("not run (no GPU)", md)
        self.assertNotIn("**failed**", md)
        self.assertIn("| **total** | **0** | **18** | **18** |", md)
        self.assertIn(f"| {ADD_CPU} | skipped (no GPU) |", md)  # add_cpu has no rule: not graded

    def test_a_filled_and_an_empty_tree_read_differently_without_a_gpu(self):
        # Issue 39.1: the headline said "the score covers only what ran (22.45 of 22.45 points)" and
        # nothing of how much of the grade that was. Now: the points checked here out of all of
        # them, what was earned of those, and how many need a GPU.
        m = manifest(correctness=[{"tests": "ch01 index: *", "points": 3},
                                  {"tests": "ch01 add_gpu: *", "points": 4},
                                  {"tests": "ch01 time_with_events_ms: *", "points": 4}])
        skipped = [result(n, "skipped", "COURSE-NO-GPU: none", "SKIP_REGULAR_EXPRESSION_MATCHED", True)
                   for n in (ADD, EVENTS)]
        heads = {}
        for tree, status in (("filled", "passed"), ("empty", "failed")):
            g = scoring.assemble([m], [result(n, status, "x") for n in INDEX] + skipped, None, tree=tree)
            heads[tree] = g.headline()
            self.assertIn("GPU tests did not run on this machine", heads[tree])
            self.assertIn("Checked here: 12 of the 20 points", heads[tree])
            self.assertIn("Not checked: 8 points need a GPU (8 correctness, 0 performance)", heads[tree])
            self.assertIn("Checked here: 12 of the 20 points", report.render_markdown(g))
        self.assertIn("of which 12 earned", heads["filled"])
        self.assertIn("of which 0 earned", heads["empty"])
        self.assertNotEqual(heads["filled"], heads["empty"])

    def test_a_real_failure_still_counts_without_a_gpu(self):
        m = manifest(performance=[perf_rule()])
        tests = [result(ADD, "failed", "x"), result(EVENTS, "skipped", "COURSE-NO-GPU", "SKIP_REGULAR_EXPRESSION_MATCHED",
                                                   True), result(COPIES, "passed")]
        g = scoring.assemble([m], tests, lambda mm, r: ok_run())
        statuses = {i.name: i.status for i in g.items}
        self.assertEqual(statuses[ADD], "failed")
        self.assertEqual(statuses["add kernel"], "failed")  # requires add_gpu, which failed
        self.assertEqual(statuses[EVENTS], "skipped")
        self.assertEqual(g.total(), (2.0, 14.0))
        self.assertEqual(g.not_assessed(), 4.0)
        self.assertEqual(g.exit_code(), scoring.EXIT_INCOMPLETE)


class CompleteRun(unittest.TestCase):
    def setUp(self):
        m = manifest(performance=[perf_rule(zero_at=20, full_at=100, leaderboard=True)])
        tests = passing(COPIES, EVENTS, ADD_CPU) + [result(ADD, "passed")]
        self.g = scoring.assemble([m], tests, lambda mm, r, attempt=0: ok_run(), tree="solutions")
        self.g.seconds = 12.6

    def test_totals_and_exit_code(self):
        self.assertFalse(self.g.incomplete)
        self.assertEqual(self.g.exit_code(), scoring.EXIT_OK)
        perf = round(4 * (92.6 - 20) / 80, 2)
        self.assertEqual(self.g.total("correctness"), (10.0, 10.0))
        self.assertEqual(self.g.total("performance"), (perf, 4.0))
        self.assertEqual(self.g.headline(), "")

    def test_results_json_fields(self):
        r = report.gradescope_results(self.g)
        r = json.loads(json.dumps(r))
        for key in ("score", "execution_time", "output", "visibility", "stdout_visibility", "tests"):
            self.assertIn(key, r)
        self.assertEqual(r["execution_time"], 13)
        self.assertAlmostEqual(r["score"], 10 + round(4 * (92.6 - 20) / 80, 2))
        graded = [t for t in r["tests"] if "not-graded" not in t["tags"]]
        self.assertEqual([t["number"] for t in graded], ["1.1", "1.2", "1.3", "1.4"])
        for t in r["tests"]:
            for key in ("name", "number", "score", "max_score", "output", "tags", "visibility"):
                self.assertIn(key, t)
            self.assertIn(t["visibility"], mf.VISIBILITIES)
        perf = graded[-1]
        self.assertEqual(perf["status"], "failed")       # partial credit: below max_score
        self.assertEqual(perf["tags"], ["ch01", "performance"])
        self.assertIn("pct_roofline = 92.6", perf["output"])
        self.assertEqual([t["status"] for t in graded[:3]], ["passed"] * 3)
        self.assertEqual(r["leaderboard"], [{"name": "01_timing add kernel", "value": 92.6, "order": "desc"}])
        not_graded = [t for t in r["tests"] if "not-graded" in t["tags"]]
        self.assertEqual([(t["number"], t["max_score"], t["status"]) for t in not_graded], [("1.5", 0.0, "passed")])

    def test_report_has_the_tables(self):
        md = report.render_markdown(self.g)
        self.assertIn("### Correctness: 10 of 10", md)
        self.assertIn("| 1.4 | add kernel | version=add_gpu config=float n=100000000 | pct_roofline | 92.6 | 20 | 100 |", md)
        self.assertIn("### Not graded (1 tests, 0 points)", md)


class Options(unittest.TestCase):
    def test_no_performance_leaves_measurements_out_of_the_totals(self):
        m = manifest(performance=[perf_rule()])
        g = scoring.assemble([m], passing(ADD, COPIES, EVENTS), None)
        self.assertEqual([i.kind for i in g.items], ["correctness"] * 3)
        self.assertEqual(g.total(), (10.0, 10.0))
        self.assertEqual(g.exit_code(), scoring.EXIT_OK)
        self.assertIn("--no-performance", " ".join(g.notes))
        self.assertIn("--no-performance", report.render_markdown(g))

    def test_chapter_selection_builds_only_its_targets(self):
        m = chapter01()
        self.assertEqual(cli.build_targets([m], True), ["--target", "01_timing_all"])
        self.assertEqual(cli.build_targets([m], False), [])

    def test_chapter_names_resolve(self):
        ms = [manifest(), manifest(chapter="05_many_blocks", correctness=[])]
        for want in ("05_many_blocks", "05", "ch05"):
            self.assertEqual([m.chapter for m in cli.resolve_chapters([want], ms)], ["05_many_blocks"])
        with self.assertRaises(cli.UsageError):
            cli.resolve_chapters(["06"], ms)

    def test_tree_names(self):
        self.assertEqual(cli.resolve_tree("solutions")[2], "solutions")
        with tempfile.TemporaryDirectory() as d:
            student = Path(d) / "alice" / "chapters"
            student.mkdir(parents=True)
            value, path, name = cli.resolve_tree(str(student))
            self.assertEqual((value, name), (str(student.resolve()), "alice-chapters"))
            with self.assertRaises(cli.UsageError):
                cli.resolve_tree(str(Path(d) / "nothing"))


FAKE_EXE = """#!/usr/bin/env python3
# Stands in for a chapter executable: writes the fixture CSV where --csv says, counts its runs.
# With FAKE_HOST_LOCK set, it also notes how the grader holds that lock now: free, shared, alone.
import fcntl, os, shutil, sys
from pathlib import Path
here = Path(sys.argv[0]).resolve().parent
with open(here / "calls.txt", "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\\n")
if os.environ.get("FAKE_HOST_LOCK"):
    fd = os.open(os.environ["FAKE_HOST_LOCK"], os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        seen = "free"
    except OSError:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            seen = "shared"
        except OSError:
            seen = "alone"
    with open(here / "lock.txt", "a") as f:
        f.write(seen + "\\n")
if "--no-gpu" in sys.argv:
    print("01_timing: no CUDA GPU found"); sys.exit(3)
shutil.copy("{csv}", sys.argv[sys.argv.index("--csv") + 1])
print("ran")
"""


class Runner(unittest.TestCase):
    """make_runner() against a stand-in executable (a Python script as bin/01_timing)."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        root = Path(self.tmp.name)
        self.build, self.out = root / "build", root / "out"
        (self.build / "bin").mkdir(parents=True)
        exe = self.build / "bin" / "01_timing"
        exe.write_text(FAKE_EXE.replace("{csv}", str(FIXTURES / "01_timing.csv")))
        exe.chmod(0o755)
        self.calls = self.build / "bin" / "calls.txt"

    def tearDown(self):
        self.tmp.cleanup()

    def test_rules_with_the_same_arguments_share_one_run(self):
        m = manifest(performance=[perf_rule(), perf_rule(name="double", row={"version": "add_gpu", "config": "double"}),
                                  perf_rule(name="no gpu", args=["--no-gpu"])])
        self.out.mkdir()
        run = perf.make_runner(self.build, self.out, self.out / "test.log")
        with redirect_stderr(io.StringIO()):
            g = scoring.assemble([m], passing(ADD, COPIES, EVENTS), run)
        by_name = {i.name: i for i in g.items if i.kind == "performance"}
        self.assertEqual(by_name["add kernel"].measured, 92.6)
        self.assertEqual(by_name["double"].measured, 93.5)
        self.assertEqual(by_name["no gpu"].status, "skipped")
        self.assertEqual(self.calls.read_text().splitlines()[0].split()[2:], ["--kernel", "add_gpu"])
        self.assertEqual(len(self.calls.read_text().splitlines()), 2)   # two distinct argument lists
        self.assertTrue((self.out / "perf" / "01_timing-run1" / "01_timing.csv").exists())
        self.assertEqual((self.out / "perf" / "01_timing-run1" / "output.txt").read_text().strip(), "ran")
        self.assertEqual(g.exit_code(), scoring.EXIT_INCOMPLETE)

    def test_a_measurement_taken_again_runs_the_executable_again(self):
        m = manifest(performance=[perf_rule(full_at=100)])   # 92.6: short of full marks every time
        self.out.mkdir()
        run = perf.make_runner(self.build, self.out, self.out / "test.log")
        with redirect_stderr(io.StringIO()) as err:
            g = scoring.assemble([m], passing(ADD, COPIES, EVENTS), run)
        self.assertEqual(len(self.calls.read_text().splitlines()), 1 + perf.REMEASURE)
        self.assertIn("measured again, run 2", err.getvalue())
        self.assertTrue((self.out / "perf" / f"01_timing-run{1 + perf.REMEASURE}" / "01_timing.csv").exists())
        self.assertEqual(g.items[-1].measured, 92.6)

    def test_a_measurement_taken_again_has_the_host_to_itself(self):
        # tools/grade-class's workers share a lock file (--host-lock): a first measurement holds it
        # shared (another grade may work beside it), one taken again holds it alone.
        from coursetools import hostlock
        m = manifest(performance=[perf_rule(full_at=100, host=True)])   # short of full marks every time
        self.out.mkdir()
        lock = self.out / "host.lock"
        host = hostlock.HostLock(lock)
        run = perf.make_runner(self.build, self.out, self.out / "test.log", env={"FAKE_HOST_LOCK": str(lock)},
                               host=host)
        with redirect_stderr(io.StringIO()) as err:
            scoring.assemble([m], passing(ADD, COPIES, EVENTS), run)
        seen = (self.build / "bin" / "lock.txt").read_text().split()
        self.assertEqual(seen, ["shared"] + ["alone"] * perf.REMEASURE)
        self.assertIn("with the host to itself", err.getvalue())
        self.assertTrue(host.held_alone)   # until the next first measurement or the step's end
        host.release()

        def never_waits(_seconds):
            raise AssertionError("the lock is still held")
        with hostlock.HostLock(lock, sleep=never_waits).alone() as alone:
            self.assertTrue(alone)

    def test_a_gpu_measurement_taken_again_waits_for_nobody(self):
        from coursetools import hostlock
        m = manifest(performance=[perf_rule(full_at=100)])   # no "host": the GPU's own memory
        self.out.mkdir()
        lock = self.out / "host.lock"
        run = perf.make_runner(self.build, self.out, self.out / "test.log", env={"FAKE_HOST_LOCK": str(lock)},
                               host=hostlock.HostLock(lock))
        with redirect_stderr(io.StringIO()) as err:
            scoring.assemble([m], passing(ADD, COPIES, EVENTS), run)
        self.assertEqual((self.build / "bin" / "lock.txt").read_text().split(), ["shared"] * (1 + perf.REMEASURE))
        self.assertNotIn("host to itself", err.getvalue())

    def test_a_missing_executable_is_a_grader_error(self):
        m = manifest(chapter="05_many_blocks", correctness=[], performance=[perf_rule()])
        self.out.mkdir()
        run = perf.make_runner(self.build, self.out, self.out / "test.log")
        g = scoring.assemble([m], passing(ADD), run)
        self.assertEqual(g.items[0].status, "error")
        self.assertEqual(g.exit_code(), scoring.EXIT_ERROR)


class BuildFailure(unittest.TestCase):
    def test_zero_points_and_the_compiler_error(self):
        log = "\n".join([f"[ {i}%] Building CUDA object x{i}.o" for i in range(60)]
                        + ["/s/chapters/01_timing/add.cu(31): error: identifier \"i\" is undefined",
                           "1 error detected"] + [f"make line {i}" for i in range(50)]
                        + ["make: *** [Makefile:146: all] Error 2"])
        tail = cli.build_log_excerpt(log)
        self.assertIn('error: identifier "i" is undefined', tail)
        self.assertIn("make: *** [Makefile:146: all] Error 2", tail)
        g = scoring.build_failed_grade([manifest(performance=[perf_rule()])], tail, tree="chapters")
        self.assertEqual(g.exit_code(), scoring.EXIT_ERROR)
        self.assertEqual(g.total(), (0.0, 14.0))
        r = report.gradescope_results(g)
        self.assertEqual(r["score"], 0.0)
        self.assertIn("BUILD FAILED", r["output"])
        self.assertIn("is undefined", r["output"])
        self.assertTrue(all(t["status"] == "failed" for t in r["tests"]))
        self.assertIn("## Build log", report.render_markdown(g))


class CommandLine(unittest.TestCase):
    def run_main(self, argv):
        err, out = io.StringIO(), io.StringIO()
        with redirect_stderr(err), redirect_stdout(out):
            code = cli.main(argv)
        return code, out.getvalue(), err.getvalue()

    def test_bad_arguments_exit_2(self):
        with tempfile.TemporaryDirectory() as d:
            for argv in (["--chapter", "99_nope"], ["--tree", str(Path(d) / "absent")],
                         ["--no-build", "--build-dir", d, "--out", d], ["--jobs", "0"], ["--bogus"]):
                with self.subTest(argv=argv):
                    try:
                        code, _, err = self.run_main(argv)
                    except SystemExit as e:  # argparse
                        code = e.code
                    self.assertEqual(code, scoring.EXIT_USAGE)

    def test_no_test_at_all_is_a_grader_error_not_a_zero(self):
        def fake_run_logged(cmd, log, timeout=None, cwd=None, env=None, watch=None):
            if "--show-only=json-v1" in cmd:   # no listing: every test through CTest
                return 0, ""
            junit = Path(cmd[cmd.index("--output-junit") + 1])
            junit.write_text('<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="(empty)" tests="0"/>')
            return 0, "No tests were found!!!"

        real = proc.run_logged
        proc.run_logged = fake_run_logged
        try:
            with tempfile.TemporaryDirectory() as d:
                (Path(d) / "CTestTestfile.cmake").write_text("")
                code, _, err = self.run_main(["--no-build", "--build-dir", d, "--out", str(Path(d) / "out")])
                self.assertFalse((Path(d) / "out" / "results.json").exists())
        finally:
            proc.run_logged = real
        self.assertEqual(code, scoring.EXIT_ERROR)
        self.assertIn("CTest ran no test", err)

    def test_main_end_to_end_without_a_gpu(self):
        """main() on a fake configured build: ctest is stubbed to write the real no-GPU-style
        fixture; the chapter executable is never started because its requirements were skipped."""
        calls = []

        def fake_run_logged(cmd, log, timeout=None, cwd=None, env=None, watch=None):
            if "--show-only=json-v1" in cmd:   # no listing: every test through CTest
                return 0, ""
            calls.append(cmd)
            if cmd[0] == "ctest":
                junit = Path(cmd[cmd.index("--output-junit") + 1])
                junit.write_text((FIXTURES / "ctest_mixed.xml").read_text())
                return 8, (FIXTURES / "ctest_mixed_console.txt").read_text()
            raise AssertionError(f"unexpected command {cmd}")

        real = proc.run_logged
        proc.run_logged = fake_run_logged
        try:
            with tempfile.TemporaryDirectory() as d:
                build, out = Path(d) / "build", Path(d) / "out"
                build.mkdir()
                (build / "CTestTestfile.cmake").write_text("")
                code, stdout, _ = self.run_main(["--no-build", "--build-dir", str(build), "--out", str(out),
                                                 "--chapter", "01", "--no-sanitize"])
                results = json.loads((out / "results.json").read_text())
                report = (out / "report.md").read_text()
        finally:
            proc.run_logged = real
        self.assertEqual(code, scoring.EXIT_INCOMPLETE)
        self.assertEqual([c[0] for c in calls], ["ctest"])
        self.assertIn("-L", calls[0])
        self.assertEqual(calls[0][calls[0].index("-L") + 1], "^(ch01)$")
        self.assertEqual(calls[0][calls[0].index("-j") + 1], "1")   # serial: the time limit follows one test
        self.assertIn("report.md", stdout)
        self.assertIn("GPU tests did not run", results["output"])
        by_name = {t["name"]: t for t in results["tests"]}
        self.assertEqual(by_name[ADD]["status"], "failed")     # a real failure
        self.assertNotIn(EVENTS, by_name)                      # skipped: not listed at all
        self.assertEqual(by_name[COPIES]["status"], "passed")
        self.assertEqual(by_name[f"{CRASH} (not graded)"]["max_score"], 0.0)
        perf = [t for t in results["tests"] if "performance" in t["tags"]]
        self.assertEqual(len(perf), 1)
        self.assertTrue(perf[0]["name"].startswith("ch01 performance: "))
        self.assertEqual(perf[0]["score"], 0.0)
        self.assertEqual(perf[0]["status"], "failed")          # requires add_gpu, which failed
        self.assertIn("Hint: NaN means", report)


# --------------------------------------------------------------------------------------------
# Issue 9: splicing, memory skips, honest results.json, sanitizer, cores, extras, repeats
# --------------------------------------------------------------------------------------------

ME = splice.load_make_exercises()
COURSE = ME.course_files(REPO)
LADDER = "06_ladder/dot.cu"


def student_tree(root, edit=None):
    """A student's chapters/ tree: the course's student files with the solutions' bodies in their
    holes (a complete, correct submission), then `edit(rel, text) -> text` on each file."""
    for rel, text in COURSE.items():
        if ME.holes(text):
            text = ME.fill(text, {k: h.body for k, h in
                                  ME.solution_bodies((REPO / "solutions" / rel).read_text()).items()})
        if edit:
            text = edit(rel, text)
        if text is None:
            continue
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def map_v3_to_cublas(rel, text):
    if rel != LADDER:
        return text
    out = re.sub(r'(\{"v3_sequential", [^}]*?), run_v3, true\}', r"\1, run_cublas, true}", text)
    assert out != text, "the registry line of v3_sequential has changed: update this test"
    return out


class Splice(unittest.TestCase):
    def test_every_course_file_with_holes_is_found_and_the_solutions_splice_back_cleanly(self):
        with_holes = [rel for rel, text in COURSE.items() if ME.holes(text)]
        self.assertGreaterEqual(len(with_holes), 7)
        for rel in with_holes:
            sp = ME.splice(COURSE[rel], (REPO / "solutions" / rel).read_text(), rel)
            self.assertEqual(sp.outside, [], rel)
            self.assertEqual(sp.missing, [], rel)
            self.assertEqual(sorted(sp.filled), sorted(ME.holes(COURSE[rel])), rel)

    def test_the_course_copy_is_what_chapters_holds(self):
        for rel, text in COURSE.items():
            self.assertEqual((REPO / "chapters" / rel).read_text(), text, rel)

    def test_hole_markers_are_stable_and_numbered(self):
        hs = ME.holes(COURSE[LADDER])
        self.assertEqual(sorted(hs), [1, 2])
        for k, h in hs.items():
            self.assertIn("TODO(student)", h.body)
            self.assertLess(h.begin_line, h.end_line)

    def test_a_registry_edit_outside_the_holes_is_neutralised_and_named(self):
        with tempfile.TemporaryDirectory() as d:
            tree, staging = Path(d) / "alice", Path(d) / "staged"
            student_tree(tree, map_v3_to_cublas)
            st = splice.stage_tree(tree, staging, COURSE, ME)
            staged = (staging / LADDER).read_text()
            theirs = (tree / LADDER).read_text().splitlines()
        self.assertIn("run_cublas, true}", theirs[st.outside[0][1] - 1])   # the line named is the edited one
        self.assertIn('run_v3, true}', staged)
        self.assertNotIn('run_cublas, true}', staged)
        self.assertEqual(len(st.outside), 1)
        rel, line, what = st.outside[0]
        self.assertEqual(rel, LADDER)
        self.assertIn("run_cublas", what)
        self.assertTrue(any(f"{LADDER}:{line}" in x and "neutralised" in x for x in st.lines))
        self.assertEqual(st.filled, st.holes)   # every hole's body is the student's (here: the solution)

    def test_a_header_or_baseline_edit_never_reaches_the_build(self):
        def edit(rel, text):
            return text.replace("cublas", "CUBLAS_TAMPERED") if rel.endswith("baselines.cu") else text
        with tempfile.TemporaryDirectory() as d:
            tree, staging = Path(d) / "t", Path(d) / "s"
            student_tree(tree, edit)
            splice.stage_tree(tree, staging, COURSE, ME)
            self.assertEqual((staging / "06_ladder/baselines.cu").read_text(), COURSE["06_ladder/baselines.cu"])

    def test_drivers_are_the_courses_and_only_a_foreign_source_is_named(self):
        with tempfile.TemporaryDirectory() as d:
            tree, staging = Path(d) / "t", Path(d) / "s"
            student_tree(tree, lambda rel, text: text)
            for driver in ("11_multi_gpu/main_mpi.cpp", "06_ladder/main.cpp"):
                (tree / driver).parent.mkdir(parents=True, exist_ok=True)
                (tree / driver).write_text((REPO / "chapters" / driver).read_text())
            (tree / "06_ladder/mine.cu").write_text("// a file the course does not have\n")
            st = splice.stage_tree(tree, staging, COURSE, ME)
        named = [x for x in st.lines if "not a course file" in x]
        self.assertEqual(named, ["`06_ladder/mine.cu`: not a course file; ignored"])

    def test_deleted_markers_make_that_hole_unfilled_and_a_missing_file_all_of_its(self):
        def edit(rel, text):
            if rel == "05_many_blocks/dot.cu":
                return text.replace("// [hole 2 end]\n", "", 1)
            if rel == "04_one_block/dot.cu":
                return None   # the student lost the file
            return text
        with tempfile.TemporaryDirectory() as d:
            tree, staging = Path(d) / "t", Path(d) / "s"
            student_tree(tree, edit)
            st = splice.stage_tree(tree, staging, COURSE, ME)
            staged05 = ME.holes((staging / "05_many_blocks/dot.cu").read_text())
            staged04 = (staging / "04_one_block/dot.cu").read_text()
        self.assertIn(("05_many_blocks/dot.cu", 2), st.missing)
        self.assertIn("TODO(student)", staged05[2].body)          # the stub: counts as empty
        self.assertNotIn("TODO(student)", staged05[3].body)       # the next hole still counts
        self.assertEqual(staged04, COURSE["04_one_block/dot.cu"])
        self.assertTrue(any("04_one_block/dot.cu" in x and "missing" in x for x in st.lines))

    def test_strict_refuses_before_building_and_names_the_line(self):
        with tempfile.TemporaryDirectory() as d:
            tree = Path(d) / "alice" / "chapters"
            student_tree(tree, map_v3_to_cublas)
            out = Path(d) / "out"
            err = io.StringIO()
            real = proc.run_logged
            proc.run_logged = lambda *a, **k: (_ for _ in ()).throw(AssertionError("nothing may run"))
            try:
                with redirect_stderr(err), redirect_stdout(io.StringIO()):
                    code = cli.main(["--tree", str(tree), "--strict", "--chapter", "06", "--out", str(out),
                                     "--build-dir", str(Path(d) / "build")])
            finally:
                proc.run_logged = real
            report = (out / "report.md").read_text()
            results = json.loads((out / "results.json").read_text())
        self.assertEqual(code, scoring.EXIT_ERROR)
        self.assertIn("REFUSED", report)
        self.assertIn(f"{LADDER}:", report)
        self.assertTrue(results["extra_data"]["refused"])
        self.assertEqual(results["score"], 0.0)


class MemorySkips(unittest.TestCase):
    OUT = "warning:\n  COURSE-NO-MEMORY: this test needs 36.0 GiB of free device memory and the card has 20.0 GiB\n"
    HUGE = "ch06 v4_first_add: beyond 2^31 elements"

    def test_a_memory_skip_is_not_a_missing_gpu_and_not_a_failure(self):
        t = junit._junit_case(ET.fromstring(
            f'<testcase name="{self.HUGE}" status="notrun"><skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/>'
            f'<system-out>{self.OUT}</system-out></testcase>'))
        self.assertEqual(t.status, "skipped")
        self.assertTrue(t.no_memory)
        self.assertFalse(t.no_gpu)
        m = manifest(chapter="06_ladder", correctness=[{"tests": "ch06 v4_first_add: *", "points": 2}])
        for expect_gpu in (False, True):
            (item,), _ = scoring.grade_correctness([m], [t], expect_gpu=expect_gpu)
            self.assertEqual(item.status, "skipped")
            self.assertIn("36.0 GiB", item.detail)
        g = scoring.assemble([m], [t], None, cores=4)
        self.assertIn("more device memory", g.headline())
        self.assertNotIn("GPU tests did not run", g.headline())
        self.assertIn("too little GPU memory", report.render_markdown(g))

    def test_the_retired_marker_no_longer_reads_as_no_gpu(self):
        self.assertFalse(junit.NO_GPU_GUARD.search("COURSE-NO-GPU-MEMORY: needs 36 GiB"))
        self.assertTrue(junit.NO_GPU_GUARD.search("COURSE-NO-GPU: no usable CUDA GPU"))


class HonestResults(unittest.TestCase):
    def test_only_what_ran_is_listed_and_scored(self):
        m = chapter01()
        out = "warning:\n  COURSE-NO-GPU: no usable CUDA GPU (none)\n"
        tests = [result(ADD, "passed"), result(ADD_GUARD, "failed", "boom"), result(ADD_HUGE, "passed"),
                 result(COPIES, "skipped", out, "SKIP_REGULAR_EXPRESSION_MATCHED", True),
                 result(EVENTS, "skipped", out, "SKIP_REGULAR_EXPRESSION_MATCHED", True),
                 result(EVENTS_HELD, "skipped", out, "SKIP_REGULAR_EXPRESSION_MATCHED", True),
                 result(PREDICT, "passed")] + passing(INTEGRITY01, *INDEX)
        g = scoring.assemble([m], tests, None, cores=4)
        r = report.gradescope_results(g)
        names = {t["name"] for t in r["tests"]}
        self.assertEqual(names, {ADD, ADD_GUARD, ADD_HUGE, PREDICT, INTEGRITY01, *INDEX})
        self.assertEqual(r["score"], 8.0)
        self.assertIn("Score of what ran: 8 of 10 points", r["output"])
        self.assertEqual(len(r["extra_data"]["not_assessed"]), 3)
        for t in r["tests"]:
            self.assertLessEqual(set(t), {"name", "number", "score", "max_score", "status", "output", "tags",
                                          "visibility"})


class Sanitizer(unittest.TestCase):
    CLEAN = "========= COMPUTE-SANITIZER\nAll tests passed\n========= ERROR SUMMARY: 0 errors\n"
    MEMCHECK = ("========= COMPUTE-SANITIZER\n========= Invalid __global__ write of size 4 bytes\n"
                "=========     at add_kernel(const float *, const float *, float *, unsigned long)+0x90\n"
                "=========     by thread (3,0,0) in block (4,0,0)\n========= ERROR SUMMARY: 12 errors\n")
    RACE = ("========= COMPUTE-SANITIZER\n========= Error: Race reported between Write access at "
            "block_sum_tree(float, float *)+0x1f0\n=========     and Read access at block_sum_tree+0x1d0\n"
            "========= RACECHECK SUMMARY: 3 hazards displayed (3 errors, 0 warnings)\n")

    def test_verdicts(self):
        self.assertEqual(sanitizer.sanitizer_verdict("memcheck", 0, self.CLEAN), (True, ""))
        ok, msg = sanitizer.sanitizer_verdict("memcheck", 99, self.MEMCHECK)
        self.assertFalse(ok)
        self.assertIn("12 error(s)", msg)
        self.assertIn("Invalid __global__ write of size 4 bytes", msg)
        ok, msg = sanitizer.sanitizer_verdict("racecheck", 99, self.RACE)
        self.assertFalse(ok)
        self.assertIn("Race reported between Write access", msg)
        self.assertEqual(sanitizer.sanitizer_verdict("racecheck", 0,
                                                     "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"),
                         (True, ""))
        self.assertFalse(sanitizer.sanitizer_verdict("memcheck", 1, "test failed\n")[0])
        host_only = ("========= COMPUTE-SANITIZER\nAll tests passed (8007 assertions in 1 test case)\n"
                     "========= Error: Target application terminated before first instrumented API call\n")
        self.assertEqual(sanitizer.sanitizer_verdict("memcheck", 0, host_only), (True, ""))
        self.assertEqual(sanitizer.sanitizer_verdict("memcheck", 99, host_only), (True, ""))
        self.assertFalse(sanitizer.sanitizer_verdict("memcheck", -1, host_only)[0])
        self.assertFalse(sanitizer.sanitizer_verdict("memcheck", -1, "")[0])

    def test_ctest_listing(self):
        listing = 'noise\n{"kind": "ctestInfo", "tests": [{"name": "ch05 a: b", "command": ["/b/test_05", "ch05 a\\\\: b"]}]}'
        self.assertEqual(ctest.ctest_commands(listing), {"ch05 a: b": ["/b/test_05", "ch05 a\\: b"]})
        self.assertEqual(ctest.ctest_commands("garbage"), {})

    def test_no_tool_or_no_gpu_is_said_and_is_not_a_failure(self):
        m = chapter01()
        g = scoring.assemble([m], passing(ADD, ADD_GUARD, ADD_HUGE, COPIES, EVENTS, EVENTS_HELD, PREDICT, INTEGRITY01,
                                          *INDEX), None, cores=4)
        g.gpu_visible = None
        real = shutil.which
        shutil.which = lambda name: "/usr/bin/compute-sanitizer"
        try:
            with tempfile.TemporaryDirectory() as d:
                cli.run_sanitizer(g, Path(d), Path(d), Path(d) / "log", {}, 10)
        finally:
            shutil.which = real
        self.assertIn("no GPU", g.sanitizer[0])
        self.assertTrue(all(i.status == "passed" for i in g.items))

    def sanitize_chapter01(self, m, answer):
        """run_sanitizer over chapter 01's tests (all passed, a GPU visible), each tool run answered
        by answer(cmd) -> (exit code, output); returns the grade."""
        g = scoring.assemble([m], passing(ADD, ADD_GUARD, ADD_HUGE, COPIES, EVENTS), None, cores=4)
        g.gpu_visible = "GPU 0: NVIDIA H100"
        listing = json.dumps({"tests": [{"name": n, "command": ["/bin/t", n]} for n in (ADD, ADD_GUARD, ADD_HUGE, COPIES, EVENTS)]})

        def fake(cmd, log, timeout=None, cwd=None, env=None):
            if cmd[0] == "ctest":
                return 0, listing
            self.assertEqual(env.get("COURSE_TEST_SMALL"), "1")
            return answer(cmd)
        real_run, real_which = proc.run_logged, shutil.which
        proc.run_logged, shutil.which = fake, (lambda name: "/usr/bin/compute-sanitizer")
        try:
            with tempfile.TemporaryDirectory() as d, redirect_stderr(io.StringIO()):
                cli.run_sanitizer(g, Path(d), Path(d), Path(d) / "log", {}, 10)
        finally:
            proc.run_logged, shutil.which = real_run, real_which
        return g

    def test_a_sanitizer_error_fails_the_item_with_the_first_message(self):
        g = self.sanitize_chapter01(
            chapter01(), lambda cmd: (99, self.MEMCHECK) if cmd[-1] == ADD_GUARD else (0, self.CLEAN))
        by = {i.name: i for i in g.items}
        self.assertEqual(by[ADD_GUARD].status, "failed")
        self.assertEqual(by[ADD_GUARD].points, 0.0)
        self.assertIn("Invalid __global__ write", by[ADD_GUARD].detail)
        self.assertEqual(by[ADD].status, "passed")
        self.assertEqual(by[ADD_HUGE].sanitize, [])   # sanitize_exclude: meaningless at small sizes
        self.assertIn("1 item(s) failed by the tool", g.sanitizer[-1])

    def test_the_manifests_sanitizer_arguments_reach_the_tool(self):
        m = chapter01()
        m.sanitize_args = {"memcheck": ["--report-api-errors", "no"]}
        seen = []
        self.sanitize_chapter01(m, lambda cmd: seen.append(cmd) or (0, self.CLEAN))
        memchecks = [c for c in seen if c[2] == "memcheck"]
        self.assertTrue(memchecks)
        self.assertTrue(all(c[3:7] == ["--error-exitcode", "99", "--report-api-errors", "no"] for c in memchecks))
        m11 = next(m for m in mf.load_manifests() if m.chapter == "11_multi_gpu")
        self.assertEqual(m11.sanitize_args, {})  # API errors stay reported; NCCL's probes are filtered
        self.assertEqual([(e["call"], e["library"]) for e in m11.sanitize_allowed],
                         [("cudaFuncGetAttributes", "libnccl")])

    NCCL_PROBE = (
        "========= Program hit cudaErrorNoKernelImageForDevice (error 209) due to \"no kernel image is available for "
        "execution on the device\" on CUDA API call to cudaFuncGetAttributes.\n"
        "=========     Saved host backtrace up to driver entry point at error\n"
        "=========         Host Frame: [0x1234] in /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
        "=========         Host Frame: [0x5678] in /usr/local/lib/libnccl.so.2\n"
        "=========\n")
    OWN_API_ERROR = (
        "========= Program hit cudaErrorInvalidValue (error 1) due to \"invalid argument\" on CUDA API call to "
        "cudaMemcpyAsync.\n"
        "=========     Saved host backtrace up to driver entry point at error\n"
        "=========         Host Frame: [0x9abc] in /build/bin/test_11_multi_gpu\n"
        "=========\n")

    def test_allowed_api_errors_are_left_out_and_every_other_counts(self):
        allowed = [{"call": "cudaFuncGetAttributes", "error": "cudaErrorNoKernelImageForDevice", "library": "libnccl",
                    "why": "NCCL's probes"}]
        only_probes = self.NCCL_PROBE * 3 + "========= ERROR SUMMARY: 3 errors\n"
        self.assertEqual(sanitizer.sanitizer_verdict("memcheck", 99, only_probes, allowed), (True, ""))
        self.assertFalse(sanitizer.sanitizer_verdict("memcheck", 99, only_probes)[0])  # nothing allowed: counted
        mixed = self.NCCL_PROBE * 2 + self.OWN_API_ERROR + "========= ERROR SUMMARY: 3 errors\n"
        ok, message = sanitizer.sanitizer_verdict("memcheck", 99, mixed, allowed)
        self.assertFalse(ok)
        self.assertIn("1 error(s)", message)
        # The same error from the course's own code (no libnccl frame) is not left out.
        own_probe = self.NCCL_PROBE.replace("/usr/local/lib/libnccl.so.2", "/build/bin/test_11_multi_gpu")
        self.assertFalse(sanitizer.sanitizer_verdict("memcheck", 99, own_probe + "========= ERROR SUMMARY: 1 error\n",
                                                     allowed)[0])

    def test_cpu_rules_and_excluded_tests_are_not_sanitized(self):
        m02 = next(m for m in mf.load_manifests() if m.chapter == "02_cpu_dot")
        self.assertTrue(all(r.sanitize == [] for r in m02.correctness))
        m06 = next(m for m in mf.load_manifests() if m.chapter == "06_ladder")
        def item(name):
            tests = passing(name, "ch06 integrity: the holes call no library")
            return next(i for i in scoring.grade_correctness([m06], tests)[0] if i.name == name)
        self.assertEqual(item("ch06 v3_sequential: beyond 2^31 elements").sanitize, [])
        self.assertEqual(item("ch06 v3_sequential: the same bits on every run").sanitize, ["memcheck", "racecheck"])


class Integrity(unittest.TestCase):
    def test_a_failed_hole_scan_zeroes_passing_tests_of_the_chapter(self):
        m05 = next(m for m in mf.load_manifests() if m.chapter == "05_many_blocks")
        name = "ch05 block_tree: matches the fp64 reference"
        scan = "ch05 integrity: the holes call no library or other version"
        ok = scoring.grade_correctness([m05], passing(name, scan))[0]
        self.assertEqual(next(i for i in ok if i.name == name).points, 1.5)  # the host test of tree_steps has the rest
        bad = scoring.grade_correctness([m05], passing(name) + [result(scan, "failed")])[0]
        item = next(i for i in bad if i.name == name)
        self.assertEqual((item.points, item.status), (0.0, "failed"))
        self.assertIn("required tests did not pass", item.detail)


class Cores(unittest.TestCase):
    def rule(self, **over):
        data = perf_rule(metric="speedup_vs:sequential", zero_at=1.0, full_at=4.5, reference_cores=16,
                         row={"version": "threads_partials"}, requires=["ch01 add_gpu: *"], **over)
        return manifest(performance=[data]).performance[0]

    def test_thresholds_shrink_with_the_cores_the_grader_sees(self):
        r = self.rule()
        self.assertEqual(scoring.scaled_thresholds(r, 16)[:2], (1.0, 4.5))
        self.assertEqual(scoring.scaled_thresholds(r, 64)[:2], (1.0, 4.5))   # never harder than the reference
        zero, full, note = scoring.scaled_thresholds(r, 2)
        self.assertAlmostEqual(full, 1 + 3.5 / 15)
        self.assertIn("2 core(s)", note)

    def test_one_core_is_not_assessed(self):
        m = manifest(performance=[perf_rule(metric="speedup_vs:sequential", zero_at=1.0, full_at=4.5,
                                            reference_cores=16)])
        runner = FakeRunner(ok_run())
        item = perf.grade_performance(m, m.performance[0], passing(ADD), runner, cores=1)
        self.assertEqual(item.status, "skipped")
        self.assertEqual(runner.calls, 0)

    def test_cores_placeholder_in_arguments(self):
        self.assertIn("{cores}", next(m for m in mf.load_manifests() if m.chapter == "02_cpu_dot")
                      .performance[1].args)
        self.assertGreaterEqual(scoring.grader_cores(), 1)

    def test_bad_reference_cores(self):
        with self.assertRaises(mf.ManifestError):
            manifest(performance=[perf_rule(reference_cores=1)])

    def test_host_rules(self):
        with self.assertRaises(mf.ManifestError):
            manifest(performance=[perf_rule(host="yes")])
        # The measurements of host memory or of the CPU: chapters 02, 07, 08 and 09, and only those.
        host = {m.chapter[:2] for m in mf.load_manifests() for r in m.performance if r.host}
        gpu = {m.chapter[:2] for m in mf.load_manifests() for r in m.performance if not r.host}
        self.assertEqual(host, {"02", "07", "08", "09"})
        self.assertFalse(host & gpu)


class ExtrasAndRepeats(unittest.TestCase):
    def test_instructor_rules_join_their_chapter_and_claim_their_tests_first(self):
        extra = mf.load_manifests(FIXTURES / "extra")
        m02 = next(m for m in mf.load_manifests() if m.chapter == "02_cpu_dot")
        merged = mf.merge_extra_manifests([m02], extra)
        first = merged[0].correctness[0]
        self.assertTrue(first.name.startswith("instructor's test"))
        self.assertEqual(len(m02.correctness) + 1, len(merged[0].correctness))
        name = "ch02 unrolled: exact on small integers (instructor's test)"
        graded, _ = scoring.grade_correctness(merged, passing(name, "ch02 unrolled: matches the fp64 reference at awkward sizes"))
        by = {i.name: i for i in graded}
        self.assertEqual(by[name].points, 1)                 # the instructor's rule, not "ch02 unrolled: *"
        self.assertEqual(by[name].max_points, 1)
        self.assertTrue((FIXTURES / "extra" / "02_cpu_dot_extra.cpp").exists())

    def test_repeat_summary(self):
        a = scoring.Item("01_timing", "performance", "add", 4, 4, "passed", measured=80.0)
        b = scoring.Item("01_timing", "performance", "add", 4, 4, "passed", measured=90.0)
        self.assertEqual(perf.repeat_summary([[a], [b]]), {"01_timing add": [80.0, 90.0]})
        g = scoring.assemble([chapter01()], passing(ADD), None, cores=4)
        g.repeats = {"01_timing add": [80.0, 90.0, 85.0]}
        self.assertIn("| 01_timing add | 3 | 80 | 85 | 90 |", report.render_markdown(g))

    def test_repeat_rows_give_the_worst_run_against_full_marks(self):
        def item(v, zero_at, full_at, name="add"):
            return scoring.Item("01_timing", "performance", name, 4, 4, "passed", measured=v, zero_at=zero_at, full_at=full_at)
        runs = [[item(60.0, 22, 53), item(2.0, 4.0, 1.0, "lower")], [item(50.0, 22, 53), item(3.0, 4.0, 1.0, "lower")]]
        rows = {r["measurement"]: r for r in perf.repeat_rows(perf.repeat_summary(runs), perf.repeat_rules(runs))}
        add = rows["01_timing add"]
        self.assertEqual((add["min"], add["max"], add["full_at"]), (50.0, 60.0, 53))
        self.assertAlmostEqual(add["worst_over_full"], 50.0 / 53)        # the slower run misses full marks
        self.assertEqual(add["points_max"], 4)
        self.assertLess(add["points_min"], 4)
        lower = rows["01_timing lower"]                                  # lower is better: full at 1, zero at 4
        self.assertAlmostEqual(lower["worst_over_full"], 1.0 / 3.0)      # the worst run is the largest value
        g = scoring.assemble([chapter01()], passing(ADD), None, cores=4)
        g.repeats, g.repeat_rules = perf.repeat_summary(runs), perf.repeat_rules(runs)
        md = report.render_markdown(g)
        self.assertIn("| 01_timing add | 2 | 50 | 60 | 60 | 53 | 0.943 |", md)
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "repeats.csv"
            perf.write_repeat_csv(path, perf.repeat_rows(g.repeats, g.repeat_rules))
            lines = path.read_text().splitlines()
        self.assertEqual(lines[0].split(","), perf.REPEAT_COLUMNS)
        self.assertTrue(lines[1].startswith("01_timing add,2,50,60,60,22,53,0.943396,"))

    def test_seed_and_repeat_arguments(self):
        for argv in (["--seed", "abc"], ["--repeat", "0"], ["--extra-tests", "/nonexistent/x"],
                     ["--host-lock", "/proc/no-such-folder/host.lock"]):
            with self.subTest(argv=argv), redirect_stderr(io.StringIO()):
                with self.assertRaises(SystemExit) as e:
                    cli.parse_args(argv)
                self.assertEqual(e.exception.code, 2)
        self.assertEqual(cli.parse_args(["--seed", "12"]).seed, "12")

    def test_the_seed_reaches_ctest_and_the_report(self):
        seen = {}

        def fake_run_logged(cmd, log, timeout=None, cwd=None, env=None, watch=None):
            if "--show-only=json-v1" in cmd:   # no listing: every test through CTest
                return 0, ""
            if cmd[0] == "ctest":
                seen["env"] = env
                junit = Path(cmd[cmd.index("--output-junit") + 1])
                junit.write_text((FIXTURES / "ctest_mixed.xml").read_text())
                return 8, ""
            raise AssertionError(cmd)
        real = proc.run_logged
        proc.run_logged = fake_run_logged
        try:
            with tempfile.TemporaryDirectory() as d, redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
                build = Path(d) / "b"
                build.mkdir()
                (build / "CTestTestfile.cmake").write_text("")
                cli.main(["--no-build", "--build-dir", str(build), "--out", str(Path(d) / "o"), "--chapter", "01",
                          "--seed", "99", "--no-sanitize", "--no-performance"])
                report = (Path(d) / "o" / "report.md").read_text()
        finally:
            proc.run_logged = real
        self.assertEqual(seen["env"], {"COURSE_GRADING_SEED": "99"})
        self.assertIn("grading seed: 99", report)


class ReuseTests(unittest.TestCase):
    """--reuse-tests: a --repeat run of the measurements takes an earlier grade's test results, from
    the same build folder only."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        d = Path(self.dir.name)
        self.build, self.earlier, self.out = d / "b", d / "earlier", d / "o"
        (self.build / "bin").mkdir(parents=True)
        (self.build / "CTestTestfile.cmake").write_text("")
        (self.build / "bin" / "test_01_timing").write_text("")
        self.earlier.mkdir()

    def tearDown(self):
        self.dir.cleanup()

    def grade_main(self, argv):
        calls = []

        def fake_run_logged(cmd, log, timeout=None, cwd=None, env=None, watch=None):
            calls.append(cmd)
            return 0, ""
        real = proc.run_logged
        proc.run_logged = fake_run_logged
        try:
            with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()) as err:
                code = cli.main(argv)
        finally:
            proc.run_logged = real
        return code, calls, err.getvalue()

    def argv(self):
        return ["--no-build", "--build-dir", str(self.build), "--out", str(self.out), "--chapter", "01",
                "--reuse-tests", str(self.earlier), "--no-sanitize", "--no-performance"]

    def test_the_earlier_results_are_graded_and_ctest_is_not_run(self):
        (self.earlier / "junit.xml").write_text((FIXTURES / "ctest_mixed.xml").read_text())
        (self.earlier / "test.log").write_text((FIXTURES / "ctest_mixed_console.txt").read_text())
        code, calls, _ = self.grade_main(self.argv())
        self.assertFalse([c for c in calls if c[0] == "ctest"])
        report = (self.out / "report.md").read_text()
        self.assertIn("--reuse-tests", report)
        self.assertTrue((self.out / "junit.xml").is_file())
        results = json.loads((self.out / "results.json").read_text())
        self.assertGreater(results["extra_data"]["correctness"]["max_score"], 0)

    def test_results_older_than_a_test_binary_are_refused(self):
        for f in ("junit.xml", "test.log"):
            (self.earlier / f).write_text("")
            os.utime(self.earlier / f, (1, 1))
        code, calls, err = self.grade_main(self.argv())
        self.assertEqual(code, scoring.EXIT_USAGE)
        self.assertIn("newer than those results", err)
        self.assertFalse(calls)

    def test_it_needs_no_build_and_both_files(self):
        for argv in (["--reuse-tests", str(self.earlier)],
                     ["--no-build", "--build-dir", str(self.build), "--reuse-tests", str(self.earlier)]):
            with self.subTest(argv=argv), redirect_stderr(io.StringIO()), self.assertRaises(SystemExit) as e:
                cli.main(argv)
            self.assertEqual(e.exception.code, scoring.EXIT_USAGE)


class TestSummary(unittest.TestCase):
    def test_one_honest_line_and_grouped_reasons(self):
        text = junit.summarize(FIXTURES / "ctest_mixed.xml")
        first, *reasons = text.splitlines()
        self.assertRegex(first, r"^\d+ passed, \d+ failed, \d+ skipped$")
        self.assertTrue(all("COURSE-NO-GPU" in r for r in reasons))


if __name__ == "__main__":
    unittest.main()


class Choices(unittest.TestCase):
    """A decision the exercise leaves open is named in the report (COURSE-CHOICE lines)."""

    def test_the_report_names_the_choice_once(self):
        m = chapter01()
        line = "COURSE-CHOICE: ch07 exercise 3 (a call with n > n_max): grow\n"
        tests = [result(n, "passed", line if k < 2 else "") for k, n in enumerate(INDEX)]
        g = scoring.assemble([m], tests, None, tree="chapters")
        self.assertEqual(g.choices, ["ch07 exercise 3 (a call with n > n_max): grow"])
        md = report.render_markdown(g)
        self.assertEqual(md.count("the tree's choice, ch07 exercise 3 (a call with n > n_max): grow"), 1)
        self.assertIn("The tree's choice, ch07 exercise 3", report.gradescope_results(g)["output"])

    def test_no_line_no_choice(self):
        g = scoring.assemble([chapter01()], [result(n, "passed") for n in INDEX], None, tree="chapters")
        self.assertEqual(g.choices, [])
        self.assertNotIn("the tree's choice", report.render_markdown(g))

