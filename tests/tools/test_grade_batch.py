"""Tests of the grader's fast path (issue 37): each chapter's Catch2 program run once with the XML
reporter (coursetools.catchrun, testrun), the fallback case by case after a crash or a hang, the
per-test limits from the reference times (coursetools.limits, on numbers and fake runners, no
clock), and compute-sanitizer over a whole chapter program. No GPU, no compiler, standard library.

The Catch2 2 fixtures were written by Catch2 2.13.10 (Debian 12) for a nine-case program whose
cases pass, fail an assertion with INFO, WARN the GPU guard's marker, throw a CUDA-like error,
print to std::cout, fail in a SECTION, FAIL, and abort (catch2_v2_abort.xml, run with CRASH=1);
catch2_v3_report.xml is the same run as Catch2 3.4 writes it (by hand, after its XML reporter).
fixtures/fake_catch2.py stands in for a program when a process must really run (a crash, a hang).

    python3 -m unittest discover -s tests/tools -p 'test_*.py'
"""

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
FIXTURES = HERE / "fixtures"
sys.path.append(str(REPO / "tools"))

from coursetools import catchrun, cli, ctest, junit, limits, manifest, proc, scoring, testrun  # noqa: E402

FAKE = FIXTURES / "fake_catch2.py"
SKIP_RE = ["COURSE-NO-GPU|COURSE-NO-MEMORY|COURSE-FEW-GPUS"]
NAMES = ["ch05 a: passes", "ch05 b: fails, with a message", "ch05 c: no GPU", "ch05 d: throws",
         "ch05 e: prints, passes", "ch05 f: a section fails", "ch05 g: FAIL", "ch05 h: crashes",
         "ch05 i: after the crash, passes"]


def escaped(name):
    return "".join("\\" + c if c in ",[]\\" else c for c in name)


def listed(names, program="/b/test_05", props=None, cwd=None):
    props = {"SKIP_REGULAR_EXPRESSION": SKIP_RE, "LABELS": ["ch05"], "TIMEOUT": 1200.0} if props is None else props
    return [ctest.ListedTest(n, [program, escaped(n)], cwd, dict(props), k) for k, n in enumerate(names, 1)]


def group(names, program="/b/test_05"):
    gs, others = catchrun.groups((t, t.properties) for t in listed(names, program))
    assert len(gs) == 1 and not others
    return gs[0]


class FakeRunner:
    """Answers the batch with a fixture's XML and each case alone with `alone(name)` -> Run."""

    def __init__(self, xml_text, alone=None, batch_code=0, batch_timed_out=False):
        self.xml_text, self.alone_fn = xml_text, alone or (lambda name: catchrun.Run(0, "", 0.5))
        self.batch_code, self.batch_timed_out = batch_code, batch_timed_out
        self.calls = []

    def __call__(self, cmd, cwd, env, limit):
        self.calls.append((list(cmd), limit))
        if "-r" in cmd:
            Path(cmd[cmd.index("-o") + 1]).write_text(self.xml_text)
            return catchrun.Run(self.batch_code, "", 1.0, self.batch_timed_out)
        return self.alone_fn(catchrun.unescape(cmd[1]))


class CatchReports(unittest.TestCase):
    def test_both_versions_read_the_same(self):
        v2 = catchrun.parse_catch_xml((FIXTURES / "catch2_v2_report.xml").read_text())
        v3 = catchrun.parse_catch_xml((FIXTURES / "catch2_v3_report.xml").read_text())
        self.assertEqual(list(v2), NAMES)
        self.assertEqual(list(v3), NAMES)
        for name in NAMES:
            with self.subTest(name=name):
                self.assertEqual(v2[name].success, v3[name].success)
                self.assertEqual(v2[name].seconds, v3[name].seconds)
                self.assertEqual("COURSE-NO-GPU" in v2[name].text, "COURSE-NO-GPU" in v3[name].text)
        self.assertEqual([n for n in NAMES if v2[n].success],
                         ["ch05 a: passes", "ch05 c: no GPU", "ch05 e: prints, passes", "ch05 h: crashes",
                          "ch05 i: after the crash, passes"])
        self.assertAlmostEqual(v2["ch05 b: fails, with a message"].seconds, 0.000101)

    def test_a_failure_reads_like_catch2s_console(self):
        case = catchrun.parse_catch_xml((FIXTURES / "catch2_v2_report.xml").read_text())["ch05 b: fails, with a message"]
        t = junit.TestResult(case.name, "failed", case.text)
        text = junit.failure_excerpt(t, "Failed")
        for want in ("REQUIRE( x == 4 )", "3 == 4", "n = 17"):
            self.assertIn(want, text)
        self.assertNotIn("-----", text)  # the banner is left out, as for CTest's output
        v3 = catchrun.parse_catch_xml((FIXTURES / "catch2_v3_report.xml").read_text())
        self.assertIn("explicit <failure> & more", v3["ch05 g: FAIL"].text)
        self.assertIn("hello from e", v3["ch05 e: prints, passes"].text)

    def test_a_report_cut_short_gives_the_cases_it_holds_whole(self):
        text = (FIXTURES / "catch2_v2_report.xml").read_text()
        cut = text[:text.index("CUDA error: an illegal")]
        self.assertEqual(list(catchrun.parse_catch_xml(cut)), NAMES[:3])
        self.assertEqual(catchrun.parse_catch_xml(""), {})
        abort = catchrun.parse_catch_xml((FIXTURES / "catch2_v2_abort.xml").read_text())
        self.assertEqual(list(abort), NAMES[:8])       # Catch2 stops after the case that aborted
        self.assertTrue(abort["ch05 h: crashes"].fatal)
        self.assertFalse(abort["ch05 g: FAIL"].fatal)

    def test_only_catch2_cases_as_discovery_registers_them_are_batched(self):
        base = {"SKIP_REGULAR_EXPRESSION": SKIP_RE, "LABELS": ["ch07"]}
        cases = [
            (ctest.ListedTest("ch07 a: b", ["/b/test_07", "ch07 a: other"]), base),
            (ctest.ListedTest("ch07 x, y", ["/b/test_07", "ch07 x\\, y"]), base),               # batched
            (ctest.ListedTest("ch07 python: ok", ["/usr/bin/python3", "-m", "pytest"]), base),
            (ctest.ListedTest("ch02 integrity: x", ["/usr/bin/python3", "scan.py"]), {"LABELS": ["ch02"]}),
            (ctest.ListedTest("ch07 w: z", ["/b/test_07", "ch07 w: z"]), dict(base, WILL_FAIL=True)),
            (ctest.ListedTest("ch07 v: z", ["/b/test_07", "ch07 v: z", "--extra"]), base),
            (ctest.ListedTest("ch07 u: z", ["/b/test_07", "ch07 u: z", "", ""]), base),        # batched
        ]
        gs, others = catchrun.groups(cases)
        self.assertEqual([[t.name for t in g.tests] for g in gs], [["ch07 x, y", "ch07 u: z"]])
        self.assertEqual(others, ["ch07 a: b", "ch07 python: ok", "ch02 integrity: x", "ch07 w: z", "ch07 v: z"])
        self.assertEqual(catchrun.filter_arg(gs[0].tests), "ch07 x\\, y,ch07 u: z")


class SkipsAndItems(unittest.TestCase):
    """A case skipped for want of a GPU reads as CTest's skip did: skipped, never passed; with
    --expect-gpu, failed. Items get the same points as from CTest's JUnit."""

    def results(self, fixture):
        with tempfile.TemporaryDirectory() as d:
            rep = catchrun.run_group(group(NAMES), Path(d) / "t.xml", {}, lambda n: 10.0, 60.0,
                                     FakeRunner((FIXTURES / fixture).read_text()))
            out = [junit.TestResult(n, r.status, r.output, r.skip_message, r.seconds) for n, r in rep.results.items()]
            path = Path(d) / "junit.xml"
            testrun.write_junit(out, path)
            return {t.name: t for t in junit.parse_junit(path)}, rep

    def test_the_guards_marker_is_a_skip_in_both_versions(self):
        for fixture in ("catch2_v2_report.xml", "catch2_v3_report.xml"):
            with self.subTest(fixture=fixture):
                tests, _ = self.results(fixture)
                c = tests["ch05 c: no GPU"]
                self.assertEqual((c.status, c.no_gpu, c.message), ("skipped", True, "SKIP_REGULAR_EXPRESSION_MATCHED"))
                self.assertEqual(junit.gpu_skip_reason(list(tests.values())),
                                 "COURSE-NO-GPU: no NVIDIA GPU or driver found (test)")
                self.assertEqual(tests["ch05 a: passes"].status, "passed")
                self.assertEqual(tests["ch05 b: fails, with a message"].status, "failed")

    def test_the_same_skip_through_ctest_reads_the_same(self):
        # The CTest path's fixture: a GPU test skipped by the same regex.
        old = [t for t in junit.parse_junit(FIXTURES / "ctest_nogpu.xml") if t.status == "skipped"]
        new, _ = self.results("catch2_v2_report.xml")
        self.assertTrue(old)
        for field in ("status", "no_gpu", "no_memory", "message"):
            self.assertEqual(getattr(old[0], field), getattr(new["ch05 c: no GPU"], field))

    def test_items_from_a_batch(self):
        m = manifest.parse_manifest({"chapter": "05_many_blocks", "correctness": [
            {"tests": "ch05 a: *", "points": 1}, {"tests": "ch05 b: *", "points": 2},
            {"tests": "ch05 c: *", "points": 3}, {"tests": "ch05 e: *", "points": 4}]}, Path("05_many_blocks.json"))
        tests, _ = self.results("catch2_v3_report.xml")
        items, _ = scoring.grade_correctness([m], list(tests.values()))
        by = {i.name: (i.points, i.status) for i in items}
        self.assertEqual(by["ch05 a: passes"], (1, "passed"))
        self.assertEqual(by["ch05 b: fails, with a message"], (0, "failed"))
        self.assertEqual(by["ch05 c: no GPU"], (0, "skipped"))
        self.assertEqual(by["ch05 e: prints, passes"], (4, "passed"))
        items, _ = scoring.grade_correctness([m], list(tests.values()), expect_gpu=True)
        self.assertEqual({i.name: i.status for i in items}["ch05 c: no GPU"], "failed")

    def test_failures_after_a_sticky_cuda_error_run_again_alone(self):
        tests, rep = self.results("catch2_v2_report.xml")
        alone = [a.split(":", 2)[0] + ":" + a.split(":", 2)[1] for a in rep.alone]
        # d threw "an illegal memory access": the failed f and g after it run alone (and pass there);
        # b, before it, keeps its batch verdict; passing cases are never run twice.
        self.assertEqual(alone, ["ch05 f: a section fails", "ch05 g: FAIL"])
        self.assertEqual(tests["ch05 f: a section fails"].status, "passed")
        self.assertEqual(tests["ch05 b: fails, with a message"].status, "failed")
        self.assertEqual(tests["ch05 d: throws"].status, "failed")

    def test_a_case_catch2_saw_abort_and_the_cases_it_never_ran_run_alone(self):
        runner = FakeRunner((FIXTURES / "catch2_v2_abort.xml").read_text(), batch_code=-6,
                            alone=lambda n: catchrun.Run(-6 if "crashes" in n else 0, "", 0.2))
        with tempfile.TemporaryDirectory() as d:
            rep = catchrun.run_group(group(NAMES), Path(d) / "t.xml", {}, lambda n: 10.0, 60.0, runner)
        self.assertEqual(rep.results["ch05 h: crashes"].outcome, "crashed (signal 6, SIGABRT)")
        self.assertEqual(rep.results["ch05 i: after the crash, passes"].status, "passed")
        self.assertTrue(rep.results["ch05 i: after the crash, passes"].alone)
        self.assertFalse(rep.results["ch05 a: passes"].alone)


class ParallelFallback(unittest.TestCase):
    """The cases a batch did not settle run again alone side by side when fallback_jobs > 1: two of
    them meet at a barrier that a one-at-a-time fallback never reaches (no clock decides a pass)."""

    def test_two_reruns_overlap_and_keep_their_verdicts(self):
        import threading
        meet = threading.Barrier(2, timeout=60)

        def alone(name):
            if name in ("ch05 f: a section fails", "ch05 g: FAIL"):
                meet.wait()  # both reruns in flight at once, or BrokenBarrierError
            return catchrun.Run(0 if "section" in name else 1, "", 0.1)

        with tempfile.TemporaryDirectory() as d:
            rep = catchrun.run_group(group(NAMES), Path(d) / "t.xml", {}, lambda n: 10.0, 60.0,
                                     FakeRunner((FIXTURES / "catch2_v2_report.xml").read_text(), alone=alone),
                                     fallback_jobs=4)
        self.assertEqual(rep.results["ch05 f: a section fails"].status, "passed")
        self.assertEqual(rep.results["ch05 g: FAIL"].status, "failed")
        self.assertTrue(rep.results["ch05 g: FAIL"].alone)

    def test_one_job_runs_them_in_turn(self):
        active, most = [0], [0]

        def alone(name):
            active[0] += 1
            most[0] = max(most[0], active[0])
            active[0] -= 1
            return catchrun.Run(0, "", 0.1)

        with tempfile.TemporaryDirectory() as d:
            catchrun.run_group(group(NAMES), Path(d) / "t.xml", {}, lambda n: 10.0, 60.0,
                               FakeRunner((FIXTURES / "catch2_v2_report.xml").read_text(), alone=alone))
        self.assertEqual(most[0], 1)


class Limits(unittest.TestCase):
    """The limits are arithmetic on recorded seconds: tested on numbers, and on fake runners that
    say "timed out" (no clock is read)."""

    def test_a_limit_from_the_reference_time(self):
        times = limits.ReferenceTimes({"ch05 a: x": 0.2, "ch05 b: y": 3.0, "ch06 c: z": 1.0}, cores=16)
        limit = limits.time_limits({"06": 900.0}, None, times, factor=10, floor=10, default=300, cores=16)
        self.assertEqual(limit("ch05 a: x"), 10)       # 10 x 0.2 = 2: the floor
        self.assertEqual(limit("ch05 b: y"), 30)       # 10 x 3
        self.assertEqual(limit("ch06 c: z"), 900)      # the manifest's test_timeout_s wins
        self.assertEqual(limit("ch05 new: none"), 300)  # no recorded time: the default
        slower = limits.time_limits({}, None, times, factor=10, floor=10, cores=4)
        self.assertEqual(slower("ch05 b: y"), 120)     # recorded on 16 cores, graded on 4
        flat = limits.time_limits({}, 42.0, times)
        self.assertEqual(flat("ch05 b: y"), 42)        # --test-timeout: flat
        self.assertEqual(cli.time_limits([], 300)("ch05 b: y"), 300)

    def test_the_batch_limit(self):
        ref = {"a": 0.1, "b": 5.0}.get
        self.assertEqual(catchrun.batch_limit(["a", "b"], ref, lambda n: 50.0), 30 + 2 + 15)
        self.assertEqual(catchrun.batch_limit(["a", "c"], ref, lambda n: 300.0), 30 + 2 + 60)
        self.assertEqual(catchrun.batch_limit(["c"], ref, lambda n: 0.0), 0.0)   # no limit at all

    def test_a_hang_reads_timed_out_after_its_own_limit(self):
        def alone(name):
            return catchrun.Run(-9, "started\n", 10.0, timed_out=True) if "hangs" in name else catchrun.Run(0, "", 0.1)
        names = ["ch05 a: passes", "ch05 z: hangs", "ch05 y: passes"]
        runner = FakeRunner("", alone, batch_code=-9, batch_timed_out=True)  # the batch ran past its limit
        with tempfile.TemporaryDirectory() as d:
            rep = catchrun.run_group(group(names), Path(d) / "t.xml", {}, lambda n: 12.0 if "hangs" in n else 10.0,
                                     45.0, runner)
        self.assertEqual(runner.calls[0][1], 45.0)                       # the batch's limit
        self.assertEqual([c[1] for c in runner.calls[1:]], [10.0, 12.0, 10.0])  # each case's own
        self.assertEqual(rep.results["ch05 z: hangs"].outcome, "timed out after 12 s")
        self.assertEqual(rep.results["ch05 z: hangs"].status, "failed")
        self.assertEqual([rep.results[n].status for n in names], ["passed", "failed", "passed"])
        console = ctest.parse_ctest_console("[grade] timed out after 12 s (the per-test time limit): ch05 z: hangs\n"
                                            "[grade] crashed (signal 11, SIGSEGV): ch05 h: x\n")
        self.assertEqual(console, {"ch05 z: hangs": "timed out after 12 s", "ch05 h: x": "crashed (signal 11, SIGSEGV)"})
        text = junit.failure_excerpt(junit.TestResult("ch05 h: x", "failed", ""), "crashed (signal 11, SIGSEGV)")
        self.assertTrue(text.startswith("crashed (signal 11, SIGSEGV)"), text)

    def test_the_times_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "times.json"
            self.assertEqual(limits.load_times(path).seconds, {})     # no file: every test gets the default
            keep = limits.ReferenceTimes({"ch09 old: x": 2.0})
            limits.save_times(path, {"ch05 a: x": 0.12345}, 16, "GPU 0: NVIDIA H200", "2026-11-28 10:00", keep)
            t = limits.load_times(path)
            self.assertEqual(t.seconds, {"ch05 a: x": 0.123, "ch09 old: x": 2.0})
            self.assertEqual((t.cores, t.machine), (16, "GPU 0: NVIDIA H200"))
            path.write_text(json.dumps({"tests": {"a": "slow"}}))
            with self.assertRaises(limits.TimesError):
                limits.load_times(path)

    def test_timings_per_step(self):
        now = [0.0]
        t = cli.Timings(lambda: now[0])
        t.start("build")
        now[0] = 12.0
        t.start("tests")
        now[0] = 20.5
        t.stop()
        self.assertEqual(t.line(21.0), "build 12.0, tests 8.5; total 21.0")


@unittest.skipUnless(os.name == "posix" and shutil.which("python3"), "needs POSIX signals")
class RealProcesses(unittest.TestCase):
    """fake_catch2.py as the chapter program: a real crash and a real hang."""

    def test_one_crash_does_not_take_the_other_cases_points(self):
        names = ["ch05 a: ok", "ch05 b: fails", "ch05 c: no GPU", "ch05 h: crashes", "ch05 i: ok, after it"]
        with tempfile.TemporaryDirectory() as d:
            rep = catchrun.run_group(group(names, str(FAKE)), Path(d) / "t.xml", {}, lambda n: 60.0, 120.0)
        st = {n: (r.status, r.outcome, r.alone) for n, r in rep.results.items()}
        self.assertEqual(rep.batch_code, -11)
        self.assertEqual(st["ch05 a: ok"], ("passed", "", False))
        self.assertEqual(st["ch05 b: fails"], ("failed", "Failed", False))
        self.assertEqual(st["ch05 c: no GPU"][:2], ("skipped", ""))
        self.assertEqual(st["ch05 h: crashes"], ("failed", "crashed (signal 11, SIGSEGV)", True))
        # The case after the crash was never reached: a new batch, not a process of its own.
        self.assertEqual(st["ch05 i: ok, after it"], ("passed", "", False))
        self.assertIn("1 case(s) the batch did not reach: run in a new batch", rep.alone)

    def test_a_hang_is_ended_and_the_others_still_count(self):
        names = ["ch05 a: ok", "ch05 z: hangs", "ch05 y: ok"]
        with tempfile.TemporaryDirectory() as d:
            # The watch ends the batch once the hung case is past its own limit (1 s), long before
            # the batch's (600 s); the case after it runs in a new batch.
            rep = catchrun.run_group(group(names, str(FAKE)), Path(d) / "t.xml", {},
                                     lambda n: 1.0 if "hangs" in n else 60.0, 600.0)
        self.assertFalse(rep.batch_timed_out)
        self.assertEqual(rep.results["ch05 z: hangs"].outcome, "timed out after 1 s")
        self.assertFalse(rep.results["ch05 z: hangs"].alone)
        self.assertEqual([rep.results[n].status for n in names], ["passed", "failed", "passed"])
        self.assertFalse(rep.results["ch05 y: ok"].alone)
        self.assertLess(rep.batch_seconds, 600.0)

    def test_without_the_listener_a_hang_costs_the_batch_limit(self):
        names = ["ch05 a: ok", "ch05 z: hangs", "ch05 y: ok"]
        with tempfile.TemporaryDirectory() as d:
            # A program that writes no progress lines (an older build): the batch's own limit
            # ends it, and every case it did not finish runs alone with its own limit.
            env = {"COURSE_TEST_PROGRESS": ""}
            real = catchrun.run_process

            def runner(cmd, cwd, env_, limit, **kw):
                return real(cmd, cwd, dict(env_ or {}, COURSE_TEST_PROGRESS=""), limit, **kw)
            runner.watches = True
            rep = catchrun.run_group(group(names, str(FAKE)), Path(d) / "t.xml", env,
                                     lambda n: 1.0 if "hangs" in n else 60.0, 2.0, runner)
        self.assertTrue(rep.batch_timed_out)
        self.assertEqual(rep.results["ch05 z: hangs"].outcome, "timed out after 1 s")
        self.assertTrue(rep.results["ch05 y: ok"].alone)
        self.assertEqual([rep.results[n].status for n in names], ["passed", "failed", "passed"])


class Watch(unittest.TestCase):
    """CaseWatch on a progress file and a fake clock."""

    def test_only_the_open_case_past_its_own_limit_ends_the_batch(self):
        now = [0.0]
        with tempfile.TemporaryDirectory() as d:
            f = Path(d) / "p"
            w = catchrun.CaseWatch(f, lambda n: 10.0 if n == "slow" else 5.0, clock=lambda: now[0])
            self.assertIsNone(w())                      # no file yet
            f.write_text("start quick\nend quick\nstart slow\n")
            self.assertIsNone(w())
            now[0] = 9.0
            self.assertIsNone(w())                      # 9 s in "slow": under its 10 s
            f.write_text("start quick\nend quick\nstart slow\nend slow\nstart next\n")
            now[0] = 13.0
            self.assertIsNone(w())                      # "next" opened at 13 s
            now[0] = 18.5
            self.assertEqual(w(), "next: past its limit of 5 s")
            self.assertEqual(w.hung, ("next", 5.0))
            self.assertEqual(w.started, ["quick", "slow", "next"])

    def test_a_half_written_line_waits(self):
        with tempfile.TemporaryDirectory() as d:
            f = Path(d) / "p"
            w = catchrun.CaseWatch(f, lambda n: 5.0, clock=lambda: 0.0)
            f.write_text("start a\nsta")
            w.read()
            self.assertEqual(w.started, ["a"])
            f.write_text("start a\nstart b\n")
            w.read()
            self.assertEqual(w.started, ["a", "b"])


ADD = "ch01 add_gpu: matches the host bitwise at awkward sizes"
COPIES = "ch01 add_gpu_copies: matches the host bitwise at awkward sizes"
HOST = "ch01 add_cpu: matches the host bitwise at awkward sizes"
FAKE_PROJECT = f"""cmake_minimum_required(VERSION 3.20)
project(fake_course NONE)
enable_testing()
add_test(NAME "{ADD}" COMMAND "{FAKE}" "{ADD}")
add_test(NAME "{COPIES}" COMMAND "{FAKE}" "{COPIES}")
add_test(NAME "{HOST}" COMMAND sh -c "echo fine")
set_tests_properties("{ADD}" "{COPIES}" PROPERTIES SKIP_REGULAR_EXPRESSION "COURSE-NO-GPU" LABELS ch01 TIMEOUT 1200)
set_tests_properties("{HOST}" PROPERTIES LABELS ch01)
"""


@unittest.skipUnless(os.name == "posix" and shutil.which("cmake") and shutil.which("ctest"), "needs cmake and ctest")
class EndToEnd(unittest.TestCase):
    """tools/grade over a configured fake build: two Catch2-like cases in one batch (one crashes)
    and a test that only CTest can run; then --reuse-tests reads the same grade back."""

    def grade(self, build, out, *more):
        with redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            return cli.main(["--no-build", "--build-dir", str(build), "--out", str(out), "--chapter", "01",
                             "--no-sanitize", "--no-performance", *more])

    def test_a_crash_in_a_batch_through_tools_grade(self):
        saved = os.environ.get("FAKE_CRASH")
        os.environ["FAKE_CRASH"] = "ch01 add_gpu: matches"
        try:
            with tempfile.TemporaryDirectory() as d:
                src, build, out, again = Path(d) / "src", Path(d) / "build", Path(d) / "out", Path(d) / "again"
                src.mkdir()
                (src / "CMakeLists.txt").write_text(FAKE_PROJECT)
                subprocess.run(["cmake", "-S", str(src), "-B", str(build)], check=True, stdout=subprocess.DEVNULL)
                self.grade(build, out, "--gpu-jobs", "1")
                results = {t["name"]: t for t in json.loads((out / "results.json").read_text())["tests"]}
                log = (out / "test.log").read_text()
                report = (out / "report.md").read_text()
                self.grade(build, again, "--reuse-tests", str(out))
                reread = {t["name"]: t for t in json.loads((again / "results.json").read_text())["tests"]}
                # Several jobs at once (the parallel path, one batch and the CTest test side by side):
                # the same grade as one at a time.
                os.environ["FAKE_TAGGED"] = f"exclusive={COPIES}"   # alone at the end, through its listing
                try:
                    self.grade(build, Path(d) / "par", "--gpu-jobs", "3")
                finally:
                    os.environ.pop("FAKE_TAGGED", None)
                par = {t["name"]: t for t in json.loads((Path(d) / "par" / "results.json").read_text())["tests"]}
                par_report = (Path(d) / "par" / "report.md").read_text()
        finally:
            if saved is None:
                os.environ.pop("FAKE_CRASH", None)
            else:
                os.environ["FAKE_CRASH"] = saved
        self.assertEqual(results[ADD]["status"], "failed")
        self.assertTrue(results[ADD]["output"].startswith("crashed (signal 11, SIGSEGV)"), results[ADD]["output"])
        self.assertEqual(results[COPIES]["status"], "passed")     # ran again in a new batch after the crash
        self.assertGreater(results[COPIES]["score"], 0)
        self.assertIn(f"[grade] crashed (signal 11, SIGSEGV): {ADD}", log)
        self.assertIn("[grade] run again: 1 case(s) the batch did not reach: run in a new batch", log)
        self.assertIn(f"[grade] run again: {ADD}: the program crashed (signal 11, SIGSEGV)", log)
        self.assertIn("fake_catch2.py: 2 case(s)", report)   # the notes name the batch
        self.assertIn("Seconds per step: tests", report)
        self.assertEqual({n: (t["score"], t["status"], t["output"]) for n, t in results.items()},
                         {n: (t["score"], t["status"], t["output"]) for n, t in reread.items()})
        self.assertEqual({n: (t["score"], t["status"], t["output"]) for n, t in results.items()},
                         {n: (t["score"], t["status"], t["output"]) for n, t in par.items()})
        self.assertIn("Parallelism: 3 job(s) at once", par_report)
        self.assertIn("fake_catch2.py: 1 case(s)", par_report)
        self.assertIn("fake_catch2.py-exclusive: 1 case(s)", par_report)


class Sanitizer(unittest.TestCase):
    CLEAN = "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n"
    ERROR = ("========= COMPUTE-SANITIZER\n========= Invalid __global__ write of size 4 bytes\n"
             "=========     at k()\n=========\n========= ERROR SUMMARY: 1 error\n")

    def grade_with(self, answer):
        m = manifest.parse_manifest({"chapter": "05_many_blocks", "correctness": [
            {"tests": "ch05 *", "points": 1, "expect": 3}]}, Path("05_many_blocks.json"))
        names = ["ch05 a: x", "ch05 b: y", "ch05 c: z"]
        g = scoring.assemble([m], [junit.TestResult(n, "passed") for n in names], None, cores=4)
        g.gpu_visible = "GPU 0: NVIDIA H200"
        text = json.dumps({"tests": [{"name": n, "command": ["/b/test_05", n],
                                      "properties": [{"name": "SKIP_REGULAR_EXPRESSION", "value": SKIP_RE}]}
                                     for n in names]})
        calls = []

        def fake(cmd, log, timeout=None, cwd=None, env=None):
            if cmd[0] == "ctest":
                return 0, text
            calls.append(cmd)
            return answer(cmd)
        real_run, real_which = proc.run_logged, shutil.which
        proc.run_logged, shutil.which = fake, (lambda name: "/usr/bin/compute-sanitizer")
        try:
            with tempfile.TemporaryDirectory() as d, redirect_stderr(io.StringIO()):
                cli.run_sanitizer(g, Path(d), Path(d), Path(d) / "log", {}, 10)
        finally:
            proc.run_logged, shutil.which = real_run, real_which
        return g, calls

    @staticmethod
    def write_report(cmd, names):
        xml = Path(cmd[cmd.index("-o") + 1])
        xml.write_text("<Catch>" + "".join(f'<TestCase name="{n}"><OverallResult success="true"/></TestCase>'
                                           for n in names) + "</Catch>")

    def test_a_clean_chapter_is_one_run(self):
        def answer(cmd):
            self.write_report(cmd, ["ch05 a: x", "ch05 b: y", "ch05 c: z"])
            return 0, self.CLEAN
        g, calls = self.grade_with(answer)
        self.assertEqual(len(calls), 1)
        self.assertEqual(calls[0][-1], "ch05 a: x,ch05 b: y,ch05 c: z")
        self.assertTrue(all(i.status == "passed" for i in g.items))

    def test_an_error_falls_to_its_own_test(self):
        def answer(cmd):
            if "-r" in cmd:
                self.write_report(cmd, ["ch05 a: x", "ch05 b: y", "ch05 c: z"])
                return 99, self.ERROR
            return (99, self.ERROR) if cmd[-1] == "ch05 b: y" else (0, self.CLEAN)
        g, calls = self.grade_with(answer)
        self.assertEqual(len(calls), 4)   # the batch, then each test alone
        self.assertEqual({i.name: i.status for i in g.items},
                         {"ch05 a: x": "passed", "ch05 b: y": "failed", "ch05 c: z": "passed"})

    def test_a_filter_that_ran_nothing_is_not_trusted(self):
        def answer(cmd):
            if "-r" in cmd:
                self.write_report(cmd, [])     # 0 errors over 0 tests
                return 0, self.CLEAN
            return (99, self.ERROR) if cmd[-1] == "ch05 c: z" else (0, self.CLEAN)
        g, calls = self.grade_with(answer)
        self.assertEqual(len(calls), 4)
        self.assertEqual({i.name: i.status for i in g.items}["ch05 c: z"], "failed")


class Helpers(unittest.TestCase):
    def test_ctest_name_regex_selects_exactly_those_names(self):
        import re
        names = ["ch07 python: a (b) [c] *d*", "ch11 mpi.run: x|y"]
        rx = re.compile(testrun.ctest_name_regex(names))
        self.assertTrue(all(rx.match(n) for n in names))
        self.assertFalse(rx.match("ch07 python: a (b) [c] *d*x"))

    def test_ccache_is_the_launcher_when_installed_and_nobody_chose_one(self):
        real_which, saved = shutil.which, {k: os.environ.pop(k, None) for k in cli.LAUNCHERS}
        try:
            shutil.which = lambda name: "/usr/bin/ccache"
            args, env = cli.ccache_arguments([], REPO / "build-grade" / "x")
            self.assertEqual(args, ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache", "-DCMAKE_CUDA_COMPILER_LAUNCHER=ccache"])
            self.assertEqual(cli.ccache_arguments(["-DCMAKE_CXX_COMPILER_LAUNCHER=sccache"], REPO)[0], [])
            shutil.which = lambda name: None
            self.assertEqual(cli.ccache_arguments([], REPO / "build-grade" / "x")[0], [])
        finally:
            shutil.which = real_which
            for k, v in saved.items():
                if v is not None:
                    os.environ[k] = v


if __name__ == "__main__":
    unittest.main()
