"""Tests of the parallel grade (issue 37): the pool that runs test batches and compute-sanitizer
side by side (coursetools.pool), how the test step is cut into jobs, and that the grade does not
depend on the order jobs end in. A fake executor chooses which running job ends next, so every
order is checked without a clock or a thread; the exclusive jobs are checked on the pool's own
event order (start/end), never on wall time. No GPU, no compiler; the check of Catch2's filters
runs a real Catch2 2 program when this checkout has one built (build/solutions/bin/test_01_timing).

    python3 -m unittest discover -s tests/tools -p 'test_*.py'
"""

import io
import json
import random
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.append(str(REPO / "tools"))

from coursetools import catchrun, cli, ctest, junit, manifest, pool, proc, scoring, testrun  # noqa: E402
from coursetools.pool import Job, Pool  # noqa: E402


class FakeExecutor:
    """Starts nothing; wait() ends one of the running jobs, chosen by `pick` (a list of running
    keys, oldest first -> the one to end), and only then calls its run()."""

    def __init__(self, pick):
        self.pick = pick
        self.running = []
        self.jobs = {}

    def start(self, job):
        self.running.append(job.key)
        self.jobs[job.key] = job

    def wait(self):
        key = self.pick(list(self.running))
        self.running.remove(key)
        return key, self.jobs[key].run(), None, 1.0


def orders():
    """Ways to choose which running job ends next: oldest, newest, and a few seeded shuffles."""
    yield "oldest", lambda keys: keys[0]
    yield "newest", lambda keys: keys[-1]
    for seed in range(5):
        rng = random.Random(seed)
        yield f"random {seed}", lambda keys, rng=rng: rng.choice(keys)


def check_events(test, p, jobs, workers, huge):
    """No exclusive job overlaps anything; never more than `workers` at once, nor `huge` [huge]
    jobs; no job starts before the jobs it waits for have ended."""
    by = {j.key: j for j in jobs}
    running, ended = set(), set()
    for what, key in p.events:
        if what == "start":
            if by[key].exclusive:
                test.assertEqual(running, set(), f"{key} started while {running} ran")
                test.assertTrue(all(j.key in ended for j in jobs if not j.exclusive), f"{key} started early")
            else:
                test.assertFalse(any(by[k].exclusive for k in running), f"{key} started beside an exclusive job")
            test.assertTrue(all(d in ended for d in by[key].after), f"{key} started before {by[key].after}")
            running.add(key)
            test.assertLessEqual(len(running), workers)
            test.assertLessEqual(sum(1 for k in running if by[k].tokens.get("huge")), huge)
        else:
            running.remove(key)
            ended.add(key)
    test.assertEqual(ended, set(by))


class PoolRules(unittest.TestCase):
    def jobs(self, log):
        def job(key, cost, **kw):
            return Job(key, lambda: log.append(key) or key.upper(), cost, **kw)
        return [job("a", 5), job("b", 9), job("c", 1), job("x1", 2, exclusive=True), job("h1", 3, tokens={"huge": 1}),
                job("h2", 3, tokens={"huge": 1}), job("h3", 3, tokens={"huge": 1}), job("x2", 1, exclusive=True),
                job("san-a", 1, after=["a", "c"]), job("san-x", 1, exclusive=True, after=["x1", "a"])]

    def test_every_order_of_endings_keeps_the_rules_and_the_results(self):
        for name, pick in orders():
            for workers in (1, 2, 4):
                with self.subTest(order=name, workers=workers):
                    log = []
                    jobs = self.jobs(log)
                    p = Pool(workers, {"huge": 2}, FakeExecutor(pick))
                    done = p.run(jobs)
                    self.assertEqual(done, {j.key: j.key.upper() for j in jobs})
                    check_events(self, p, jobs, workers, 2)
                    # the exclusive ones last, in the order given (their dependencies allowing)
                    self.assertEqual([k for w, k in p.events if w == "start"][-3:], ["x1", "x2", "san-x"])

    def test_longest_first(self):
        log = []
        p = Pool(1, {"huge": 1}, FakeExecutor(lambda keys: keys[0]))
        p.run(self.jobs(log))
        self.assertEqual(log[:3], ["b", "a", "h1"])

    def test_one_worker_is_one_at_a_time(self):
        p = Pool(1, {}, FakeExecutor(lambda keys: keys[0]))
        p.run([Job(str(k), lambda: None, k) for k in range(6)])
        self.assertEqual(p.most_at_once, 1)

    def test_a_checker_that_would_miss_an_overlap_is_not_one(self):
        # The check itself must fail on events where an exclusive job overlaps another.
        p = Pool(2, {}, None)
        jobs = [Job("a", lambda: None), Job("x", lambda: None, exclusive=True)]
        p.events = [("start", "a"), ("start", "x"), ("end", "a"), ("end", "x")]
        with self.assertRaises(AssertionError):
            check_events(self, p, jobs, 2, 1)

    def test_bad_plans_are_refused(self):
        with self.assertRaises(ValueError):
            Pool(2).run([Job("a", lambda: None, after=["nobody"])])
        with self.assertRaises(ValueError):
            Pool(2).run([Job("x", lambda: None, exclusive=True), Job("a", lambda: None, after=["x"])])
        with self.assertRaises(ValueError):   # a token the machine has none of
            Pool(2, {"huge": 0}, FakeExecutor(lambda k: k[0])).run([Job("h", lambda: None, tokens={"huge": 1})])

    def test_an_error_is_raised_once_every_job_has_ended(self):
        ran = []

        def boom():
            raise proc.GradeError("broken")
        with self.assertRaises(proc.GradeError):
            Pool(2, {}, pool.ThreadExecutor()).run([Job("a", boom, 5), Job("b", lambda: ran.append("b"))])
        self.assertEqual(ran, ["b"])

    def test_how_many_at_once(self):
        self.assertEqual(pool.auto_jobs(139.8, 16), 4)    # an H200
        self.assertEqual(pool.auto_jobs(139.8, 4), 1)     # few cores
        self.assertEqual(pool.auto_jobs(15.0, 16), 1)     # a small card
        self.assertEqual(pool.auto_jobs(None, 2), 2)      # no GPU: one per core
        self.assertEqual(pool.auto_jobs(None, 64), 8)
        self.assertEqual(pool.huge_tokens(139.8), 2)
        self.assertEqual(pool.huge_tokens(79.6), 1)
        self.assertEqual(pool.huge_tokens(None), 1)


# --- the test step's jobs ---------------------------------------------------------------------------

def listed_tests(spec):
    """{name: ListedTest} for [(program or None, name, extra properties)]: a program means a Catch2
    case as catch_discover_tests registers it, None a test only CTest runs."""
    out = {}
    for k, (program, name, props) in enumerate(spec, 1):
        label = name[:4]
        if program:
            cmd = [program, "".join("\\" + c if c in ",[]\\" else c for c in name)]
            p = {"LABELS": [label], "TIMEOUT": 1200.0, "SKIP_REGULAR_EXPRESSION": ["COURSE-NO-GPU"]}
        else:
            cmd = ["sh", "-c", "true"]
            p = {"LABELS": [label]}
        p.update(props)
        out[name] = ctest.ListedTest(name, cmd, None, p, k)
    return out


SPEC = ([("/b/test_06", f"ch06 v{k}: beyond 2^31 elements", {}) for k in range(1, 7)]
        + [("/b/test_06", f"ch06 v{k}: matches", {}) for k in range(1, 5)]
        + [("/b/test_07", "ch07 context: leaks nothing", {}), ("/b/test_07", "ch07 a: works", {}),
           ("/b/test_07", "ch07 b: works", {}),
           (None, "ch07.python", {}), (None, "ch07.timed", {"RUN_SERIAL": "TRUE"}), (None, "ch06 integrity: scan", {})])
TAGS = {"/b/test_06": ([], [f"ch06 v{k}: beyond 2^31 elements" for k in range(1, 7)]),
        "/b/test_07": (["ch07 context: leaks nothing"], [])}
REF = {f"ch06 v{k}: beyond 2^31 elements": 2.8 for k in range(1, 7)}
REF.update({"ch07.python": 18.0, "ch07 context: leaks nothing": 7.0})


def plan(workers=4, huge=2, tags=TAGS):
    listed = listed_tests(SPEC)
    groups, others = catchrun.groups((t, t.properties) for t in listed.values())
    return testrun.plan_units(listed, groups, others, tags, REF.get, workers, huge)


class Planning(unittest.TestCase):
    def test_units(self):
        units = {u.key: u for u in plan()}
        self.assertTrue(units["test_07-exclusive"].exclusive)
        self.assertEqual([t.name for t in units["test_07-exclusive"].tests], ["ch07 context: leaks nothing"])
        self.assertEqual([t.name for t in units["test_07"].tests], ["ch07 a: works", "ch07 b: works"])
        huge = [u for u in units.values() if u.huge]
        self.assertEqual(len(huge), 2)                      # two at once on this card: two batches
        self.assertEqual(sorted(t.name for u in huge for t in u.tests),
                         sorted(f"ch06 v{k}: beyond 2^31 elements" for k in range(1, 7)))
        self.assertEqual([t.name for t in units["test_06"].tests], [f"ch06 v{k}: matches" for k in range(1, 5)])
        serial = [u for u in units.values() if u.kind == "ctest" and u.exclusive]
        self.assertEqual([u.tests[0].name for u in serial], ["ch07.timed"])   # RUN_SERIAL
        # every test in exactly one unit
        names = [t.name for u in units.values() for t in u.tests]
        self.assertEqual(sorted(names), sorted(n for _, n, _ in SPEC))

    def test_a_program_that_cannot_list_its_tags_runs_alone(self):
        units = plan(tags={"/b/test_06": (None, None), "/b/test_07": TAGS["/b/test_07"]})
        six = [u for u in units if u.group and u.group.program == "/b/test_06"]
        self.assertEqual(len(six), 1)
        self.assertTrue(six[0].exclusive)

    def test_a_big_program_is_cut_into_shares(self):
        spec = [("/b/test_09", f"ch09 t{k}: x", {}) for k in range(12)]
        listed = listed_tests(spec)
        groups, others = catchrun.groups((t, t.properties) for t in listed.values())
        units = testrun.plan_units(listed, groups, others, {"/b/test_09": ([], [])}, lambda n: 5.0, 2, 1)
        self.assertEqual(len(units), 4)        # 60 s of work, a share of 60 / (2 x 2) = 15 s each
        self.assertEqual([t.name for u in units for t in u.tests], [n for _, n, _ in spec])   # order kept


class ParallelStep(unittest.TestCase):
    """run_tests_parallel with fake runners: every order of endings gives the same junit.xml,
    test.log and grade, and the sanitizer of a chapter runs after its tests."""

    def step(self, pick, out_dir, sanitize=None, workers=4, keep=None):
        listed = listed_tests(SPEC)
        listing = json.dumps({"tests": [{"name": t.name, "command": t.command,
                                         "properties": [{"name": k, "value": v} for k, v in t.properties.items()]}
                                        for t in listed.values()]})
        order = []

        def group_runner(u):
            order.append(u.key)
            rep = catchrun.GroupReport(u.group.program, {}, 1.0)
            for t in u.tests:
                status = "failed" if "v3: beyond" in t.name else "passed"
                rep.results[t.name] = catchrun.CaseResult(t.name, status, f"out of {t.name}", 0.5)
            return rep, f"log of {u.key}\n", []

        def ctest_runner(u):
            order.append(u.key)
            t = u.tests[0]
            return [junit.TestResult(t.name, "passed", "fine", "", 0.1)], f"log of {u.key}\n", ""

        def lister(program, spec, cwd):
            excl, huge = TAGS[program]
            return list(excl if spec == "[exclusive]" else huge)

        real = proc.run_logged
        proc.run_logged = lambda cmd, log, **kw: (0, listing)
        try:
            with redirect_stderr(io.StringIO()):
                step = testrun.run_tests_parallel(Path("/b"), out_dir, "^(ch06|ch07)$", {}, out_dir / "test.log",
                                                  lambda n: 30.0, REF.get, out_dir / "junit.xml", workers, 2,
                                                  sanitize=sanitize, executor=FakeExecutor(pick), lister=lister,
                                                  group_runner=group_runner, ctest_runner=ctest_runner, keep=keep)
        finally:
            proc.run_logged = real
        return step, order

    def test_skip_ungraded_runs_only_what_a_rule_reads(self):
        from coursetools.manifest import graded_globs, Manifest, CorrectnessRule
        rules = [CorrectnessRule("ch06 v1*", 1.0, requires=["ch06 integrity: *"]),
                 CorrectnessRule("ch07 a: *", 1.0)]
        globs = graded_globs([Manifest("06_x", "t", Path("/m"), rules, [])])
        self.assertEqual(globs, ["ch06 v1*", "ch06 integrity: *", "ch07 a: *"])
        with_report = graded_globs([Manifest("07_x", "t", Path("/m"), rules, [], report_tests=["ch07 says: *"])])
        self.assertEqual(with_report[0], "ch07 says: *", "a test whose output the report reads is kept")

        def keep(name):
            return any(scoring.match(g, name) for g in globs)

        with tempfile.TemporaryDirectory() as d:
            out = Path(d)
            (out / "test.log").write_text("")
            step, order = self.step(lambda ready: ready[0], out, keep=keep)
        ran = sorted(t.name for t in step.tests)
        self.assertEqual(ran, ["ch06 integrity: scan", "ch06 v1: beyond 2^31 elements", "ch06 v1: matches",
                               "ch07 a: works"])
        self.assertEqual(step.left_out, len(SPEC) - 4)
        self.assertNotIn("ch07.python", " ".join(order))
        with tempfile.TemporaryDirectory() as d:  # without keep: everything, nothing left out
            out = Path(d)
            (out / "test.log").write_text("")
            step, _ = self.step(lambda ready: ready[0], out)
        self.assertEqual(len(step.tests), len(SPEC))
        self.assertEqual(step.left_out, 0)

    def test_the_same_results_whatever_order_the_jobs_end_in(self):
        seen = set()
        for name, pick in orders():
            with self.subTest(order=name), tempfile.TemporaryDirectory() as d:
                out = Path(d)
                (out / "test.log").write_text("")
                step, order = self.step(pick, out)
                seen.add(tuple(order))
                text = ((out / "junit.xml").read_text(), (out / "test.log").read_text(),
                        [(t.name, t.status, t.output) for t in step.tests], step.batches)
                if name == "oldest":
                    first = text
                self.assertEqual(text, first)
        self.assertGreater(len(seen), 1)   # the orders really differed

    def test_one_worker_gives_the_same_results(self):
        with tempfile.TemporaryDirectory() as d, tempfile.TemporaryDirectory() as e:
            (Path(d) / "test.log").write_text("")
            (Path(e) / "test.log").write_text("")
            a, _ = self.step(lambda k: k[0], Path(d), workers=4)
            b, _ = self.step(lambda k: k[0], Path(e), workers=1)
            self.assertEqual([(t.name, t.status) for t in a.tests], [(t.name, t.status) for t in b.tests])

    def test_the_sanitizer_follows_each_chapters_tests_and_the_exclusive_ones_come_alone(self):
        calls = []

        def sanitize(label, results, only, skip, log):
            calls.append((label, sorted(r.name for r in results), only, sorted(skip)))
            return label
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "test.log").write_text("")
            step, order = self.step(lambda k: k[-1], Path(d), sanitize=sanitize)
        by = {(c[0], c[2] is None): c for c in calls}
        self.assertEqual(set(by), {("ch06", True), ("ch07", True), ("ch07", False)})
        six = by[("ch06", True)]
        self.assertEqual(len(six[1]), 11)          # every ch06 result was there when it ran
        shared, alone = by[("ch07", True)], by[("ch07", False)]
        self.assertEqual(shared[3], ["ch07 context: leaks nothing", "ch07.timed"])   # left for the exclusive run
        self.assertEqual(alone[2], {"ch07 context: leaks nothing", "ch07.timed"})
        self.assertEqual(step.sanitized, ["ch06", "ch07", "ch07"])   # in manifest order, whatever the endings


class ChoicesSurviveSkipUngraded(unittest.TestCase):
    def test_every_test_that_prints_a_choice_is_read_by_the_report(self):
        """A test that prints COURSE-CHOICE (the decision an exercise leaves open, which the report
        names) must match a manifest's report_tests: else --skip-ungraded drops it and the grade
        stops naming the student's choice (the H200's warm grade of 1a11c2c did)."""
        import re
        globs = manifest.graded_globs(manifest.load_manifests())
        case = re.compile(r'TEST_CASE\(\s*"((?:[^"\\]|\\.)*)"')
        printing = []
        for src in sorted((REPO / "tests").glob("test_*.cpp")):
            text = src.read_text(encoding="utf-8")
            starts = [(m.start(), m.group(1)) for m in case.finditer(text)] + [(len(text), "")]
            for (at, name), (end, _) in zip(starts, starts[1:]):
                if '"COURSE-CHOICE:' in text[at:end]:  # the printed literal, not a comment naming it
                    printing.append(name)
        self.assertTrue(printing, "no test prints COURSE-CHOICE: this check would see nothing")
        for name in printing:
            self.assertTrue(any(scoring.match(g, name) for g in globs),
                            f"'{name}' prints COURSE-CHOICE but no rule or report_tests reads it")


class SanitizerResults(unittest.TestCase):
    def test_failures_fall_to_their_items_and_one_summary_line(self):
        m = manifest.parse_manifest({"chapter": "05_many_blocks", "correctness": [
            {"tests": "ch05 *", "points": 1, "expect": 2}]}, Path("05_many_blocks.json"))
        g = scoring.assemble([m], [junit.TestResult("ch05 a: x", "passed"), junit.TestResult("ch05 b: y", "passed")],
                             None, cores=4)
        cli.apply_sanitized(g, [("05_many_blocks", {"ch05 b: y": "compute-sanitizer memcheck: 1 error(s)"},
                                 ["compute-sanitizer memcheck: 05_many_blocks: the run was not clean"], (3, 1, 2, 1)),
                                None])
        self.assertEqual({i.name: (i.status, i.points) for i in g.items},
                         {"ch05 a: x": ("passed", 1.0), "ch05 b: y": ("failed", 0.0)})
        self.assertEqual(g.sanitizer[-1], cli.sanitizer_summary(3, 1, 2, 1))


TEST_01 = REPO / "build" / "solutions" / "bin" / "test_01_timing"


@unittest.skipUnless(TEST_01.is_file(), "needs a built tests/test_01_timing.cpp (build/solutions)")
class RealCatch2Filters(unittest.TestCase):
    """The specs the grader lists with, on a real Catch2 program: `[exclusive]` names exactly the
    tagged case, `~[exclusive]` exactly the others (what the batches run)."""

    def names(self, spec):
        return catchrun.list_names(str(TEST_01), spec)

    def test_exclusive_and_the_rest(self):
        major = catchrun.catch2_major(str(TEST_01))
        self.assertIn(major, (2, 3))
        every = self.names("*")
        tagged = self.names("[exclusive]")
        rest = self.names("~[exclusive]")
        src = (REPO / "tests" / "test_01_timing.cpp").read_text()
        self.assertEqual(len(tagged), src.count("[exclusive]"))
        self.assertEqual(tagged, ["ch01 time_with_events_ms: measures GPU time, not the launch"])
        self.assertEqual(sorted(tagged + rest), sorted(every))
        self.assertFalse(set(tagged) & set(rest))
        self.assertEqual(self.names("[huge]"), ["ch01 add_gpu: beyond 2^32 elements"])
        self.assertEqual(self.names("[gpu]~[exclusive]"),
                         [n for n in self.names("[gpu]") if n not in tagged])


if __name__ == "__main__":
    unittest.main()
