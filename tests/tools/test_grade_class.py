"""Tests of tools/grade-class (tools/coursetools/classgrade.py): no GPU, no build, standard library.

    python3 -m unittest discover -s tests/tools -p 'test_grade_class.py'

The grades are made by tests/tools/fixtures/fake_grade.py (the hidden --grader option), which takes
tools/grade's command line and hangs, crashes, fails to build, forks or writes outside its folder
as the submission's BEHAVIOUR file says. The real tools/grade over a class runs in
tests/tools/class_e2e_test.py (locally and through a real Slurm; a CI step).
"""

import csv
import io
import json
import os
import shutil
import sys
import tempfile
import time
import unittest
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.append(str(REPO / "tools"))

from coursetools import classgrade as cg  # noqa: E402

FAKE = f"{sys.executable} {HERE / 'fixtures' / 'fake_grade.py'}"


def make_class(root: Path, behaviours: dict) -> Path:
    """A class folder: one student per entry, a copy of chapters/ with a BEHAVIOUR file and one
    source file; None makes a folder that is not a submission."""
    cls = root / "class"
    for name, what in behaviours.items():
        if what is None:
            (cls / name / "notes").mkdir(parents=True)
            continue
        ch = cls / name / "chapters" / "02_cpu_dot"
        ch.mkdir(parents=True)
        (cls / name / "chapters" / "BEHAVIOUR").write_text(what + "\n")
        (ch / "dot.cpp").write_text(f"// {name}\nint answer = 42;\n")
    return cls


def run(argv):
    err, out = io.StringIO(), io.StringIO()
    with redirect_stderr(err), redirect_stdout(out):
        code = cg.main([str(a) for a in argv])
    return code, err.getvalue() + out.getvalue()


def gradebook(out: Path):
    with open(out / "gradebook.csv", newline="") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


class ClassMode(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="grade-class-test-"))
        self.log = self.tmp / "grades.log"
        os.environ["FAKE_GRADE_LOG"] = str(self.log)

    def tearDown(self):
        os.environ.pop("FAKE_GRADE_LOG", None)
        cg._make_writable(self.tmp)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def grades(self):
        return self.log.read_text().splitlines() if self.log.exists() else []

    def test_one_bad_submission_never_stops_the_others(self):
        cls = make_class(self.tmp, {"alice": "graded 10", "bob": "hang", "carol": "crash", "dave": "build-error",
                                    "eve": "incomplete 5", "frank": "forkbomb", "gina": "grader-error",
                                    "henry": None})
        out = self.tmp / "out"
        t0 = time.monotonic()
        code, text = run([cls, "--out", out, "--workers", "2", "--timeout", "8", "--max-procs", "30",
                          "--grader", FAKE, "--chapter", "02"])
        book = gradebook(out)
        self.assertEqual(code, 1, text)  # gina's grader error: no grade, run again
        want = {"alice": "graded", "bob": "timed-out", "carol": "crashed", "dave": "build-error",
                "eve": "incomplete", "frank": "refused", "gina": "grader-error", "henry": "refused"}
        self.assertEqual({k: v["status"] for k, v in book.items()}, want, text)
        self.assertIn("past 8 s", book["bob"]["reason"])
        self.assertIn("SIGSEGV", book["carol"]["reason"])
        self.assertIn("expected ';'", book["dave"]["reason"])
        self.assertIn("fork bomb", book["frank"]["reason"])
        self.assertIn("no chapters/", book["henry"]["reason"])
        self.assertIn("CTest ran no test", book["gina"]["reason"])
        # Points: full for alice, zeros for the build error, nothing (not 0) where nothing ran.
        self.assertEqual((book["alice"]["02_correctness"], book["alice"]["02_performance"], book["alice"]["total"]),
                         ("6", "4", "10"))
        self.assertEqual(book["dave"]["total"], "0")
        self.assertEqual(book["bob"]["total"], "")
        # Incomplete: the correctness that ran, the performance that did not run left empty.
        self.assertEqual((book["eve"]["02_correctness"], book["eve"]["02_performance"], book["eve"]["not_assessed"]),
                         ("5", "", "4"))
        # The hang and the fork bomb are gone: nothing of theirs is left running.
        self.assertFalse(any("fake_grade" in line for line in os.popen("ps -eo args").read().splitlines()
                             if str(self.tmp) in line))
        self.assertLess(time.monotonic() - t0, 120)
        # Each student's report and results are in their folder, and the summary names the statuses.
        self.assertTrue((out / "alice" / "report.md").is_file() and (out / "alice" / "results.json").is_file())
        summary = (out / "class_summary.md").read_text()
        self.assertIn("| 02 | 10 |", summary)
        self.assertIn("timed-out", summary)
        self.assertRegex(text, r"\[class\] 8/8 done · \d+ failed · ETA 0s")

    def test_resume_grades_only_what_changed(self):
        cls = make_class(self.tmp, {"alice": "graded 10", "bob": "graded 7", "carol": "grader-error"})
        out = self.tmp / "out"
        args = [cls, "--out", out, "--workers", "1", "--grader", FAKE]
        run(args)
        self.assertEqual(len(self.grades()), 3)
        code, text = run(args)
        self.assertEqual(len(self.grades()), 4, "only the grader error is graded again")
        self.assertIn("alice: skipped (unchanged)", text)
        self.assertIn("bob: skipped (unchanged)", text)
        # The same size, another content: graded again; the gradebook still holds everyone.
        src = cls / "bob" / "chapters" / "02_cpu_dot" / "dot.cpp"
        src.write_text(src.read_text().replace("42", "43"))
        run(args)
        self.assertEqual(len(self.grades()), 6)
        self.assertIn("/bob/chapters graded 7", self.grades()[-2] + self.grades()[-1])
        self.assertEqual(set(gradebook(out)), {"alice", "bob", "carol"})
        self.assertEqual(gradebook(out)["alice"]["total"], "10")
        # Other options for tools/grade: another grade.
        run(args + ["--chapter", "02"])
        self.assertEqual(len(self.grades()), 9)
        run(args + ["--chapter", "02", "--force"])
        self.assertEqual(len(self.grades()), 12)

    def test_a_change_outside_its_folder_is_found_and_laid_at_the_right_door(self):
        cls = make_class(self.tmp, {"alice": "graded 10", "mallory": "graded 10", "bob": "graded 8"})
        target = cls / "alice" / "chapters" / "02_cpu_dot" / "dot.cpp"
        (cls / "mallory" / "chapters" / "BEHAVIOUR").write_text(f"write {target}\n")
        out = self.tmp / "out"
        code, text = run([cls, "--out", out, "--workers", "2", "--grader", FAKE])
        book = gradebook(out)
        self.assertEqual(book["mallory"]["status"], "wrote-outside", text)
        self.assertIn(str(target), book["mallory"]["reason"])
        self.assertNotEqual(book["alice"]["status"], "wrote-outside")
        self.assertNotEqual(book["bob"]["status"], "wrote-outside")

    def test_one_worker_per_gpu(self):
        cls = make_class(self.tmp, {f"s{k}": "graded 10" for k in range(6)})
        code, text = run([cls, "--out", self.tmp / "out", "--gpus", "0,1", "--grader", FAKE])
        self.assertEqual(code, 0, text)
        seen = sorted({line.split("cuda=")[1] for line in self.grades()})
        self.assertEqual(seen, ["0", "1"])
        self.assertEqual({r["gpu"] for r in gradebook(self.tmp / "out").values()}, {"0", "1"})

    def test_workers_side_by_side_share_one_host_lock(self):
        cls = make_class(self.tmp, {f"s{k}": "graded 10" for k in range(4)})
        code, text = run([cls, "--out", self.tmp / "two", "--gpus", "0,1", "--grader", FAKE])
        self.assertEqual(code, 0, text)
        locks = {line.split("host-lock=")[1].split()[0] for line in self.grades()}
        self.assertEqual(locks, {str(self.tmp / "two" / ".work" / "host.lock")})
        self.log.unlink()
        code, text = run([cls, "--out", self.tmp / "one", "--workers", "1", "--grader", FAKE])
        self.assertEqual(code, 0, text)
        self.assertEqual({line.split("host-lock=")[1].split()[0] for line in self.grades()}, {"-"},
                         "one worker alone on the host needs no lock")

    def test_slurm_script_plan_and_merge(self):
        cls = make_class(self.tmp, {"alice": "graded 10", "bob": "graded 5", "carol": "graded 1"})
        out = self.tmp / "out"
        run([cls, "--out", out, "--workers", "1", "--grader", FAKE])  # alice, bob, carol graded
        (cls / "carol" / "chapters" / "02_cpu_dot" / "dot.cpp").write_text("// changed\n")
        code, text = run([cls, "--out", out, "--slurm", "--slurm-no-gpu", "--grader", FAKE, "--slurm-cpus", "2"])
        self.assertEqual(code, 0, text)
        script = (out / "grade-class.sbatch").read_text()
        self.assertIn("#SBATCH --array=0-0", script)  # only carol changed
        self.assertNotIn("--gres", script)
        self.assertIn("#SBATCH --cpus-per-task=2", script)
        self.assertRegex(script, r"#SBATCH --time=00:(1\d|0[5-9]):00")  # measured: 1.5 x the slowest + 10 min
        plan = json.loads((out / "plan.json").read_text())
        self.assertEqual(plan["tasks"], ["carol"])
        # Before the task ran: carol's result is missing (her old one is for another content).
        records = {r["student"]: r for r in cg.merge(out)}
        self.assertEqual(records["carol"]["status"], "missing")
        self.assertEqual(records["alice"]["status"], "graded")
        # The task, as Slurm starts it; then the merge builds the gradebook.
        self.assertEqual(cg.main(["--slurm-task", str(out), "--task-index", "0"]), 0)
        code, text = run(["--merge", out])
        self.assertEqual(code, 0, text)
        self.assertEqual({k: v["status"] for k, v in gradebook(out).items()},
                         {"alice": "graded", "bob": "graded", "carol": "graded"})
        # On GPUs, another grade than the CPU one: every submission is a task.
        code, text = run([cls, "--out", out, "--slurm", "--slurm-time", "7", "--grader", FAKE])
        script = (out / "grade-class.sbatch").read_text()
        self.assertIn("#SBATCH --gres=gpu:1", script)
        self.assertIn("#SBATCH --array=0-2", script)
        self.assertIn("#SBATCH --time=00:07:00", script)

    def test_bad_command_lines(self):
        cls = make_class(self.tmp, {"alice": "graded 10"})
        for argv in ([self.tmp / "nope"], [cls, "--tree", "x"], [cls, "--workers", "0"], [cls, "--gpus", "a"],
                     ["--merge", self.tmp]):
            with self.subTest(argv=argv):
                try:
                    code, _ = run(argv)
                except SystemExit as e:
                    code = e.code
                self.assertEqual(code, 2)


    def test_options_that_tools_grade_refuses_stop_the_class_at_once(self):
        cls = make_class(self.tmp, {f"s{k}": "graded 10" for k in range(4)})
        real = f"{sys.executable} {REPO / 'tools' / 'grade'}"
        code, text = run([cls, "--out", self.tmp / "out", "--workers", "1", "--grader", real, "--no-such-option"])
        self.assertEqual(code, 2, text)
        self.assertIn("the class is stopped", text)
        book = gradebook(self.tmp / "out")
        self.assertEqual(len(book), 4)
        # The first grade's refusal stops the class; a worker may have started one more meanwhile.
        self.assertGreaterEqual(sum("not graded" in r["reason"] for r in book.values()), 2)


class Pieces(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="grade-class-unit-"))

    def tearDown(self):
        cg._make_writable(self.tmp)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_content_hash_reads_contents_and_paths_not_build_outputs(self):
        t = self.tmp / "chapters"
        (t / "02_cpu_dot").mkdir(parents=True)
        (t / "02_cpu_dot" / "dot.cpp").write_text("int a = 1;\n")
        h = cg.content_hash(t)
        (t / "build" ).mkdir()
        (t / "build" / "x.o").write_text("object")
        (t / "02_cpu_dot" / "dot.o").write_text("object")
        self.assertEqual(cg.content_hash(t), h, "build outputs are not part of a submission")
        (t / "02_cpu_dot" / "dot.cpp").write_text("int a = 2;\n")  # same size, other bytes
        self.assertNotEqual(cg.content_hash(t), h)
        (t / "02_cpu_dot" / "dot.cpp").write_text("int a = 1;\n")
        self.assertEqual(cg.content_hash(t), h)
        (t / "02_cpu_dot" / "dot.cpp").rename(t / "02_cpu_dot" / "dot2.cpp")
        self.assertNotEqual(cg.content_hash(t), h)

    def test_discover_takes_chapters_or_a_copy_of_it(self):
        (self.tmp / "c" / "repo" / "chapters" / "01_timing").mkdir(parents=True)
        (self.tmp / "c" / "copy" / "01_timing").mkdir(parents=True)
        (self.tmp / "c" / "empty").mkdir(parents=True)
        (self.tmp / "c" / ".hidden" / "chapters").mkdir(parents=True)
        subs = {s.name: s for s in cg.discover(self.tmp / "c")}
        self.assertEqual(sorted(subs), ["copy", "empty", "repo"])
        self.assertTrue(subs["repo"].tree.endswith("repo/chapters"))
        self.assertTrue(subs["copy"].tree.endswith("copy"))
        self.assertIsNone(subs["empty"].tree)

    def test_a_submissions_links_are_not_followed(self):
        t = self.tmp / "chapters" / "02_cpu_dot"
        t.mkdir(parents=True)
        (t / "dot.cpp").write_text("x")
        os.symlink("/etc/hostname", t / "main.cpp")
        files, left_out = cg.tree_files(self.tmp / "chapters")
        self.assertEqual(files, ["02_cpu_dot/dot.cpp"])
        self.assertEqual(left_out, ["02_cpu_dot/main.cpp (a link)"])

    def test_the_course_copy_undoes_what_a_grade_changed(self):
        repo = self.tmp / "repo"
        (repo / "tests").mkdir(parents=True)
        (repo / "tests" / "test_02.cpp").write_text("REQUIRE(dot == 42);\n")
        (repo / "tools").mkdir()
        (repo / "tools" / "grade").write_text("#!/bin/sh\n")
        copy = cg.CourseCopy(repo, self.tmp / "copy")
        self.assertEqual(copy.check(), [])
        (self.tmp / "copy" / "tests" / "test_02.cpp").write_text("REQUIRE(true);     \n")
        (self.tmp / "copy" / "tools" / "grade").unlink()
        (self.tmp / "copy" / "tools" / "planted.py").write_text("x")
        (self.tmp / "copy" / "tools" / "__pycache__").mkdir()
        (self.tmp / "copy" / "tools" / "__pycache__" / "x.pyc").write_text("cache")
        self.assertEqual(sorted(copy.check()), ["added: tools/planted.py", "changed: tests/test_02.cpp",
                                                "removed: tools/grade"])
        self.assertEqual((self.tmp / "copy" / "tests" / "test_02.cpp").read_text(), "REQUIRE(dot == 42);\n")
        self.assertTrue((self.tmp / "copy" / "tools" / "grade").is_file())
        self.assertEqual(copy.check(), [])

    def test_watch_blames_the_grades_running_when_a_file_changed(self):
        f = self.tmp / "watched.txt"
        f.write_text("a")
        t = time.time()
        now = [t - 100]
        watch = cg.Watch(lambda: [f], clock=lambda: now[0])
        watch.started("alice")               # long before the change
        f.write_text("b")                    # now (its ctime is the kernel's: no test can set it)
        now[0] = t + 5
        watch.started("bob")                 # after it
        now[0] = t + 6
        self.assertEqual(watch.finished("alice"), [(f"changed: {f}", ["alice"])])
        self.assertEqual(watch.finished("bob"), [])
        now[0] = t - 60
        watch.started("carol")
        now[0] = t - 50                      # a grade that started before the next change, too
        watch.started("dave")
        f.write_text("c")
        now[0] = t + 60
        self.assertEqual(watch.finished("carol"), [(f"changed: {f}", ["carol", "dave"])])
        f.unlink()                           # no time stamp: every grade since the last check
        self.assertEqual(watch.finished("dave"), [(f"removed: {f}", ["dave"])])

    def test_points_per_chapter_from_results_json(self):
        results = {"score": 7.5, "tests": [
            {"name": "ch01 add_gpu: a", "score": 4, "max_score": 4, "status": "passed", "tags": ["ch01", "correctness"]},
            {"name": "ch02 unrolled: b", "score": 0, "max_score": 1.5, "status": "failed",
             "tags": ["ch02", "correctness"]},
            {"name": "ch02 performance: unrolled", "score": 3.5, "max_score": 4, "tags": ["ch02", "performance"]},
            {"name": "ch02 x (not graded)", "score": 0, "max_score": 0, "tags": ["ch02", "not-graded"]}],
            "extra_data": {"not_assessed": ["ch01 performance: add kernel (2 points): not run",
                                            "ch01 add_gpu: b (1.5 points): COURSE-NO-GPU"]}}
        p = cg.points_from_results(results)
        self.assertEqual(p["chapters"]["01"], {"correctness": [4, 5.5, 1.5], "performance": [0, 2, 2]})
        self.assertEqual(p["chapters"]["02"], {"correctness": [0, 1.5, 0], "performance": [3.5, 4, 0]})
        self.assertEqual((p["total"], p["max"], p["not_assessed"]), (7.5, 13, 3.5))
        self.assertEqual(sorted(p["failed"]), ["ch02 performance: unrolled", "ch02 unrolled: b"])
        header, rows = cg.gradebook_rows([dict(p, student="s", status="incomplete", reason="")])
        row = dict(zip(header, rows[0]))
        self.assertEqual((row["01_correctness"], row["01_performance"], row["01_total"]), ("4", "", "4"))

    def test_eta_and_progress_line(self):
        self.assertIsNone(cg.eta_seconds([], 5, 2))
        self.assertEqual(cg.eta_seconds([100.0, 140.0], 4, 2), 240.0)
        self.assertEqual(cg.eta_seconds([100.0], 0, 2), 0.0)
        self.assertEqual(cg.progress_line(5, 12, 2, 190.0, "alice: 88.5 pts"),
                         "[class] 5/12 done · 2 failed · ETA 3m10s · alice: 88.5 pts")
        self.assertEqual(cg.fmt_duration(3725), "1h02m")

    def test_slurm_time_from_earlier_grades(self):
        out = self.tmp / "out"
        subs = [cg.Submission("a", "x"), cg.Submission("b", "y")]
        self.assertEqual(cg.slurm_minutes(out, subs, None), cg.DEFAULT_SLURM_MINUTES)
        for name, wall in (("a", 300.0), ("b", 1200.0)):
            (out / name).mkdir(parents=True)
            cg._write_record(out / name, {"student": name, "status": "graded", "wall_s": wall})
        self.assertEqual(cg.slurm_minutes(out, subs, None), 40)  # 1.5 x 20 min + 10
        self.assertEqual(cg.slurm_minutes(out, subs, 12.5), 13)


if __name__ == "__main__":
    unittest.main()
