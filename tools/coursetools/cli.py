"""tools/grade's command line and its steps on the machine: the splice, configure and build, CTest
(with a time limit per test), compute-sanitizer, the measurements, and the two reports.

Exit codes: 0 everything was assessed · 1 build failure or grader error · 2 bad arguments ·
3 incomplete (GPU tests skipped, for example on a machine without a GPU: not a zero).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from . import MANIFEST_DIR, REPO, catchrun, ctest, hostlock, limits, pool, proc, sanitizer, scoring, testrun
from .ctest import parse_ctest_console
from .junit import TEST_CHAPTER, parse_junit
from .manifest import Manifest, ManifestError, graded_globs, load_manifests, merge_extra_manifests
from .perf import REPEAT_COLUMNS, make_runner, repeat_rows, repeat_rules, repeat_summary, write_repeat_csv
from .proc import GradeError
from .report import gradescope_results, render_markdown, summary
from .scoring import (EXIT_ERROR, EXIT_USAGE, Grade, assemble, build_failed_grade,
                      grader_cores, number_items, round_points)
from .splice import Staged, load_make_exercises, stage_tree

DEFAULT_TEST_TIMEOUT = None  # no flat limit: each test's own, from the reference times (limits.py)


class UsageError(Exception):
    """A bad command line: exit code 2."""


def resolve_tree(tree: str) -> Tuple[str, Path, str]:
    """(value for -DCOURSE_TREE, folder, short name for default paths)."""
    if tree in ("chapters", "solutions"):
        if not (REPO / tree).is_dir():
            raise UsageError(f"--tree {tree}: this checkout has no {tree}/ folder"
                             + (" (a student repository has no solutions: grade your own tree, the default, "
                                "with `tools/grade --chapter NN`)" if tree == "solutions" else ""))
        return tree, REPO / tree, tree
    path = Path(tree).expanduser().resolve()
    if not path.is_dir():
        raise UsageError(f"--tree {tree}: no such folder (expected chapters, solutions, or a copy of chapters/)")
    for known in ("chapters", "solutions"):
        if path == (REPO / known).resolve():
            return known, REPO / known, known
    name = path.name if path.name not in ("chapters", "solutions") else f"{path.parent.name}-{path.name}"
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "tree"
    return str(path), path, name


def build_targets(manifests: Sequence[Manifest], only_these: bool) -> List[str]:
    """`--target ...` for the chapters asked for with --chapter: each chapter's `<chapter>_all`
    (cmake/Course.cmake: its executable, its tests and every extra target its CTest checks run,
    such as chapter 11's MPI program); nothing, that is everything, otherwise."""
    if not only_these:
        return []
    return ["--target"] + [f"{m.chapter}_all" for m in manifests]


def resolve_chapters(requested: Sequence[str], manifests: Sequence[Manifest]) -> List[Manifest]:
    if not requested:
        return list(manifests)
    chosen = []
    for want in requested:
        hit = [m for m in manifests if m.chapter == want or m.number == want or m.label == want]
        if not hit:
            known = ", ".join(m.chapter for m in manifests) or "none"
            raise UsageError(f"--chapter {want}: no manifest tools/grading/{want}.json (known: {known})")
        if hit[0] not in chosen:
            chosen.append(hit[0])
    return chosen


def detect_gpu() -> Optional[str]:
    """nvidia-smi's first "GPU 0: ..." line, or None. Only used to warn about suspicious skips."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        p = subprocess.run([exe, "-L"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [line.strip() for line in p.stdout.splitlines() if line.startswith("GPU ")]
    return lines[0] if p.returncode == 0 and lines else None


def build_log_excerpt(log: str, tail: int = 40) -> str:
    """The first compiler error with a little context (with -j it is often far from the end),
    then the last `tail` lines."""
    lines = log.splitlines()
    first = next((k for k, line in enumerate(lines)
                  if re.search(r"(\berror\b|Error:|CMake Error)", line) and "Error 1" not in line
                  and "Error 2" not in line), None)
    parts = []
    if first is not None and first < len(lines) - tail:
        parts.append("--- first error ---")
        parts += lines[max(0, first - 3):first + 15]
        parts.append("--- last lines ---")
    parts += lines[-tail:]
    return "\n".join(parts)


class Timings:
    """Seconds per step of the grade (splice, configure, build, tests, sanitizer, performance), for
    the report and the console: what to measure against the time a grade may take."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.steps: Dict[str, float] = {}
        self._current: Optional[str] = None
        self._t = 0.0

    def start(self, name: str) -> None:
        self.stop()
        self._current, self._t = name, self.clock()

    def stop(self) -> None:
        if self._current is not None:
            self.steps[self._current] = self.steps.get(self._current, 0.0) + self.clock() - self._t
            self._current = None

    def line(self, total: float) -> str:
        return ", ".join(f"{k} {v:.1f}" for k, v in self.steps.items()) + f"; total {total:.1f}"


LAUNCHERS = ("CMAKE_CXX_COMPILER_LAUNCHER", "CMAKE_CUDA_COMPILER_LAUNCHER")


def _cache_value(build_dir: Path, key: str) -> str:
    try:
        text = (build_dir / "CMakeCache.txt").read_text(errors="replace")
    except OSError:
        return ""
    m = re.search(rf"^{key}:[A-Z]+=(.*)$", text, re.M)
    return m.group(1).strip() if m else ""


def ccache_arguments(cmake_args: Sequence[str], build_dir: Path) -> Tuple[List[str], Dict[str, str]]:
    """(configure arguments, environment for configure and build): ccache as the compiler launcher
    when it is installed and nobody chose a launcher (--cmake-arg or the environment). Its base_dir
    (CCACHE_BASEDIR, unless set) is the folder that holds the course and the build folder, so a
    second build folder at the same depth (another submission) reuses the objects of the first.
    ccache keys an object on the preprocessed source and the flags: an object is reused only for
    the same text, never for another submission's hole bodies."""
    if any("COMPILER_LAUNCHER" in a for a in cmake_args) or any(os.environ.get(k) for k in LAUNCHERS):
        return [], {}
    if not shutil.which("ccache"):
        # A folder configured with ccache before, on a machine that no longer has it: unset.
        stale = [k for k in LAUNCHERS if _cache_value(build_dir, k).endswith("ccache")]
        return [f"-D{k}=" for k in stale], {}
    env = {}
    if not os.environ.get("CCACHE_BASEDIR"):
        base = os.path.commonpath([str(REPO), str(build_dir)])
        if base != os.path.sep:
            env["CCACHE_BASEDIR"] = base
    return [f"-D{k}=ccache" for k in LAUNCHERS], env


def describe_ccache(build_dir: Path, env: Dict[str, str]) -> str:
    """The report's line on ccache, from the build folder's own cache."""
    used = {k: _cache_value(build_dir, k) for k in LAUNCHERS}
    if any(v.endswith("ccache") for v in used.values()):
        base = env.get("CCACHE_BASEDIR") or os.environ.get("CCACHE_BASEDIR")
        return ("ccache: used as the compiler launcher" + (f" (base_dir {base})" if base else "")
                + "; an object is reused only for the same preprocessed source and flags, never for another "
                  "tree's hole bodies")
    return "ccache: not used" + ("" if shutil.which("ccache") else " (not installed)")


def chapter_limits(manifests: Sequence[Manifest]) -> Dict[str, float]:
    return {m.number: m.test_timeout_s for m in manifests if m.test_timeout_s}


def time_limits(manifests: Sequence[Manifest], flat: Optional[float],
                times: Optional[limits.ReferenceTimes] = None, factor: float = limits.DEFAULT_FACTOR,
                floor: float = limits.DEFAULT_FLOOR, cores: int = 0) -> Callable[[str], float]:
    """test name -> its time limit in seconds: its chapter's test_timeout_s, else `flat`
    (--test-timeout; 0 or less: none), else from the reference time (coursetools.limits)."""
    return limits.time_limits(chapter_limits(manifests), flat, times or limits.ReferenceTimes(), factor, floor,
                              cores=cores)


def describe_time_limits(manifests: Sequence[Manifest], flat: Optional[float],
                         times: Optional[limits.ReferenceTimes] = None, factor: float = limits.DEFAULT_FACTOR,
                         floor: float = limits.DEFAULT_FLOOR, names: Sequence[str] = ()) -> str:
    """The report's line on the per-test time limit."""
    own = {m.chapter: f"{m.test_timeout_s:g} s" for m in manifests if m.test_timeout_s}
    return limits.describe(own, flat, times or limits.ReferenceTimes(), factor, floor, limits.DEFAULT_LIMIT, names)


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="tools/grade",
        description="Build a tree of the course (the course's files with only the tree's hole bodies spliced "
                    "in), run its tests, compute-sanitizer and measurements, and write a Markdown report and a "
                    "Gradescope results.json. Points come from tools/grading/*.json (docs/grading.md).",
        epilog="exit codes: 0 all assessed · 1 build failure, refused tree or grader error · 2 bad arguments · "
               "3 incomplete (GPU tests skipped: not a zero) · a whole class: tools/grade-class DIR "
               "(one worker per GPU, resumable, gradebook.csv, Slurm; docs/grading.md, 'Grading a class')")
    p.add_argument("--tree", default="chapters", metavar="chapters|solutions|PATH",
                   help="what to grade: the student build (default), the solutions, or a student's copy of chapters/")
    p.add_argument("--build-dir", metavar="DIR", help="build folder (default: <repo>/build-grade/<tree name>)")
    p.add_argument("--out", metavar="DIR", help="where report.md and results.json go (default: <repo>/grade-<tree name>)")
    p.add_argument("--chapter", action="append", default=[], metavar="NN_name",
                   help="grade only this chapter (repeatable; NN or chNN work too)")
    p.add_argument("--no-build", action="store_true",
                   help="use the build folder as it is (configured and built; no splicing)")
    p.add_argument("--no-performance", action="store_true",
                   help="do not run the chapter executables; performance points are left out of the totals")
    p.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 2, metavar="N", help="parallel build jobs")
    p.add_argument("--expect-gpu", action="store_true",
                   help="a GPU must be present: a skipped test or a 'no GPU' exit counts as failed, not as "
                        "'not assessed' (use on the grading GPU machine)")
    p.add_argument("--cmake-arg", action="append", default=[], metavar="ARG",
                   help="extra argument for the configure step, e.g. -DCMAKE_CUDA_ARCHITECTURES=native (repeatable)")
    p.add_argument("--strict", action="store_true",
                   help="refuse a tree with any edit outside its holes (score 0) instead of neutralising the edits")
    p.add_argument("--seed", metavar="N", default=os.environ.get("COURSE_GRADING_SEED"),
                   help="grading seed: changes every input of every test (default: $COURSE_GRADING_SEED, or none)")
    p.add_argument("--no-sanitize", action="store_true",
                   help="skip compute-sanitizer over the passed GPU tests (faster)")
    p.add_argument("--test-timeout", type=float, default=DEFAULT_TEST_TIMEOUT, metavar="S",
                   help="a flat limit: seconds any test may run before the grader ends it and fails its item with "
                        "'timed out after S s' (default: from the reference solution's own time, see --time-factor; "
                        "a manifest's test_timeout_s wins for its chapter; 0: no limit but CTest's own)")
    p.add_argument("--time-factor", type=float, default=limits.DEFAULT_FACTOR, metavar="K",
                   help=f"per-test limit: K times the reference solution's time in tools/grading/test_times.json "
                        f"(default {limits.DEFAULT_FACTOR:g}), at least --time-floor; {limits.DEFAULT_LIMIT:g} s "
                        "for a test with no recorded time")
    p.add_argument("--time-floor", type=float, default=limits.DEFAULT_FLOOR, metavar="S",
                   help=f"the shortest per-test limit (default {limits.DEFAULT_FLOOR:g} s)")
    p.add_argument("--record-times", nargs="?", const=str(limits.TIMES_FILE), metavar="FILE",
                   help="write each passed test's seconds to FILE (default tools/grading/test_times.json), for "
                        "the per-test limits: run it on the solutions, on the grading GPU, with --expect-gpu")
    p.add_argument("--one-process-per-test", action="store_true",
                   help="run every test through CTest in a process of its own, as before the batches (slower; "
                        "for comparison)")
    p.add_argument("--gpu-jobs", default="auto", metavar="N|auto",
                   help="test and compute-sanitizer processes at once on the GPU (default auto: 4 on a card of at "
                        "least 64 GiB in a machine of at least 8 cores, else 1; one per core, at most 8, without a "
                        "GPU). Tests tagged [exclusive] (RUN_SERIAL outside Catch2) run alone afterwards; 1: the "
                        "serial grade, one process at a time")
    p.add_argument("--skip-ungraded", action="store_true",
                   help="run only the tests a rule of the manifests reads (a correctness rule's tests or "
                        "requires, a performance rule's requires); the others earn nothing and gate nothing, and "
                        "are then not run (a class's grade: shorter; the report lists no 'not graded' tests)")
    p.add_argument("--sanitize-timeout", type=float, default=600, metavar="S",
                   help="seconds one test may take under compute-sanitizer (default 600)")
    p.add_argument("--extra-tests", metavar="DIR",
                   help="instructor-only tests: DIR holds NN_name*.cpp Catch2 files and NN_name.json manifests")
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="run the performance measurements N times and report min/median/max of every ratio; "
                        "the grade is the first run's")
    p.add_argument("--host-lock", metavar="FILE",
                   help="a lock file shared by the grades running at once on this host (tools/grade-class passes "
                        "one): each step holds it shared, and a host measurement (a rule with \"host\": true) "
                        "taken again, its value short of full marks, holds it alone: no other grade builds, tests "
                        "or measures meanwhile")
    p.add_argument("--reuse-tests", metavar="DIR",
                   help="with --no-build: take the test results from an earlier grade of the same build folder "
                        "(its --out DIR: junit.xml and test.log) instead of running CTest again; for --repeat runs "
                        "of the measurements. Refused when a test binary is newer than those results")
    args = p.parse_args(argv)
    if args.reuse_tests and not args.no_build:
        p.error("--reuse-tests needs --no-build (the results must come from the same build)")
    if args.reuse_tests and not all((Path(args.reuse_tests) / f).is_file() for f in ("junit.xml", "test.log")):
        p.error(f"--reuse-tests {args.reuse_tests}: needs junit.xml and test.log there (an earlier grade's --out)")
    if args.host_lock:
        why = hostlock.HostLock.check(Path(args.host_lock))
        if why:
            p.error(f"--host-lock {args.host_lock}: {why}")
    if args.jobs < 1:
        p.error("--jobs must be at least 1")
    if args.test_timeout is not None and not (args.test_timeout >= 0 and math.isfinite(args.test_timeout)):
        p.error("--test-timeout must be a number of seconds >= 0")
    if not (args.time_factor > 0 and math.isfinite(args.time_factor)):
        p.error("--time-factor must be a number > 0")
    if not (args.time_floor > 0 and math.isfinite(args.time_floor)):
        p.error("--time-floor must be a number of seconds > 0")
    if args.record_times and args.reuse_tests:
        p.error("--record-times needs the tests to run (drop --reuse-tests)")
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    if args.gpu_jobs != "auto" and not (str(args.gpu_jobs).isdigit() and int(args.gpu_jobs) >= 1):
        p.error(f"--gpu-jobs must be a whole number >= 1 or 'auto', not '{args.gpu_jobs}'")
    if args.seed is not None and not re.fullmatch(r"\d{1,19}", str(args.seed)):
        p.error(f"--seed (or COURSE_GRADING_SEED) must be a whole number, not '{args.seed}'")
    if args.extra_tests and not Path(args.extra_tests).is_dir():
        p.error(f"--extra-tests {args.extra_tests}: no such folder")
    return args


def _sanitize_alone(item, tool: str, cmd: List[str], cwd: Optional[str], exe: str, log: Path, small: Dict[str, str],
                    timeout: float, sdir: Path, tag: str) -> bool:
    """One test under one tool, in a process of its own; fails the item on an error. True: clean."""
    extra = item.sanitize_args.get(tool, [])
    code, output = proc.run_logged(sanitizer.command(exe, tool, cmd, extra), log, timeout=timeout, env=small,
                                   cwd=Path(cwd) if cwd else None)
    (sdir / f"{tag}-{tool}.log").write_text(output, encoding="utf-8")
    ok, message = sanitizer.sanitizer_verdict(tool, code, output, item.sanitize_allowed)
    if not ok:
        item.points, item.status = 0.0, "failed"
        item.detail = message + "\n(COURSE_TEST_SMALL=1; the tool's full output is in sanitizer/ of the results)"
    return ok


def sanitizer_unavailable(gpu_visible: Optional[str]) -> Optional[str]:
    """Why compute-sanitizer cannot run here (the report's line), or None."""
    if not sanitizer.find():
        return "compute-sanitizer: not run (not found on this machine); not a failure"
    if not gpu_visible:
        return "compute-sanitizer: not run (no GPU on this machine); not a failure"
    return None


def sanitizer_summary(runs: int, batches: int, tests: int, failed: int) -> str:
    return (f"compute-sanitizer: {runs} run(s) ({batches} over a whole chapter program) over "
            f"{tests} passed GPU test(s) at small sizes; {failed} item(s) failed by the tool"
            + (" (racecheck where the manifest asks)" if runs else ""))


def run_sanitizer(grade: Grade, build_dir: Path, out_dir: Path, log: Path, env: Dict[str, str],
                  timeout: float, batch: bool = True, only: Optional[set] = None, skip: Optional[set] = None,
                  summary: bool = True) -> Tuple[int, int, int, int]:
    """compute-sanitizer over every passed GPU test of a graded item, at small sizes
    (COURSE_TEST_SMALL=1): memcheck, and the tools the manifest adds (racecheck for shared memory).
    An error fails the item with the tool's first message. No tool or no GPU: said, not failed.

    One process per chapter program and tool, over the Catch2 filter of exactly those tests; the
    run is trusted only when Catch2's XML report names every one of them as run (a filter that
    selects nothing reports no error) and the tool found nothing. Otherwise (an error, whose test
    the tool's log cannot name for sure, a failure at small sizes, a case not run) that program's
    tests run under the tool one by one, as without batches, and the errors fall to their items.

    `only`/`skip`: the test names to check / to leave out (the parallel grade checks a chapter's
    exclusive tests apart, alone on the GPU). Returns (runs, runs over a whole program, tests
    checked, items failed); `summary` adds the line that says so."""
    todo = [i for i in grade.items if i.kind == "correctness" and i.status == "passed" and i.sanitize
            and (only is None or i.test_name in only) and not (skip and i.test_name in skip)]
    if not todo:
        if summary:
            grade.sanitizer.append("compute-sanitizer: no passed GPU test to check")
        return 0, 0, 0, 0
    why = sanitizer_unavailable(grade.gpu_visible)
    if why:
        if summary:
            grade.sanitizer.append(why)
        return 0, 0, 0, 0
    exe = sanitizer.find()
    _, listing_text = proc.run_logged(["ctest", "--test-dir", str(build_dir), "--show-only=json-v1"], log)
    listed = ctest.listing(listing_text)
    small = dict(env, COURSE_TEST_SMALL="1")
    sdir = out_dir / "sanitizer"
    sdir.mkdir(parents=True, exist_ok=True)
    runs = batches = failed = 0
    tools = [t for t in sanitizer.TOOLS if any(t in i.sanitize for i in todo)]
    part = "" if only is None else "-exclusive"
    for tool in tools:
        # Tests an earlier tool failed are not run again (one message per item).
        items = [i for i in todo if tool in i.sanitize and i.status == "passed"]
        by_group: Dict[Tuple[str, Optional[str], str], List] = {}
        alone: List = []
        for item in items:
            t = listed.get(item.test_name)
            if not t:
                grade.sanitizer.append(f"compute-sanitizer: no command for `{item.test_name}` in ctest's listing")
                continue
            if batch and catchrun.batchable(t, t.properties):
                by_group.setdefault((t.command[0], t.cwd, item.chapter), []).append(item)
            else:
                alone.append(item)
        for (program, cwd, chapter), group in by_group.items():
            tests = [listed[i.test_name] for i in group]
            xml = sdir / f"{chapter}{part}-{tool}.xml"
            if xml.exists():
                xml.unlink()
            cmd = catchrun.batch_command(program, tests, xml)
            print(f"[grade] compute-sanitizer {tool}: {Path(program).name}, {len(tests)} test(s) in one process",
                  file=sys.stderr, flush=True)
            extra = group[0].sanitize_args.get(tool, [])
            code, output = proc.run_logged(sanitizer.command(exe, tool, cmd, extra), log,
                                           timeout=timeout * 2, env=small, cwd=Path(cwd) if cwd else None)
            runs += 1
            batches += 1
            (sdir / f"{chapter}{part}-{tool}.log").write_text(output, encoding="utf-8")
            ok, _ = sanitizer.sanitizer_verdict(tool, code, output, group[0].sanitize_allowed)
            try:
                reported = catchrun.parse_catch_xml(xml.read_text(encoding="utf-8", errors="replace"))
            except OSError:
                reported = {}
            unrun = [t.name for t in tests if t.name not in reported]
            if ok and not unrun:
                continue
            why = (f"{len(unrun)} of the tests were not reported as run" if ok
                   else "the run was not clean: each test runs again alone, so the error falls to its own item")
            print(f"[grade] compute-sanitizer {tool}: {Path(program).name}: {why}", file=sys.stderr, flush=True)
            grade.sanitizer.append(f"compute-sanitizer {tool}: {chapter}: {why}")
            alone += group
        for item in alone:
            t = listed[item.test_name]
            print(f"[grade] compute-sanitizer {tool}: {item.test_name}", file=sys.stderr, flush=True)
            runs += 1
            tag = item.number or f"{item.chapter}{part}-{runs}"
            if not _sanitize_alone(item, tool, t.command, t.cwd, exe, log, small, timeout, sdir, tag):
                failed += 1
    if summary:
        grade.sanitizer.append(sanitizer_summary(runs, batches, len(todo), failed))
    return runs, batches, len(todo), failed


def make_chapter_sanitizer(manifests: Sequence[Manifest], build_dir: Path, out_dir: Path, env: Dict[str, str],
                           args: argparse.Namespace, cores: int, gpu: Optional[str], common: Dict[str, str]):
    """testrun.Sanitize for the parallel grade: compute-sanitizer over one chapter's passed tests (its
    items assembled from that chapter's results alone, as the whole grade assembles them), returning
    (chapter, {test name: the failure}, the report's lines, (runs, batches, tests, failed))."""
    def run(label, results, only, skip, log):
        m = next((m for m in manifests if m.label == label), None)
        if m is None:
            return None
        g = assemble([m], results, None, console={}, expect_gpu=args.expect_gpu, cores=cores, **common)
        g.gpu_visible = gpu
        stats = run_sanitizer(g, build_dir, out_dir, log, env, args.sanitize_timeout, batch=True, only=only,
                              skip=skip, summary=False)
        failures = {i.test_name: i.detail for i in g.items
                    if i.kind == "correctness" and i.test_name and i.status == "failed"}
        return m.chapter, failures, list(g.sanitizer), stats
    return run


def apply_sanitized(grade: Grade, found: Sequence[object]) -> None:
    """The parallel grade's compute-sanitizer results, in manifest order: each failure fails its item
    (0 points, the tool's message), the lines go to the report, and one summary line as the serial
    grade writes it."""
    failures: Dict[str, str] = {}
    totals = [0, 0, 0, 0]
    for f in found:
        if f is None:
            continue
        _, fails, lines, stats = f
        failures.update(fails)
        grade.sanitizer += lines
        totals = [a + b for a, b in zip(totals, stats)]
    for i in grade.items:
        if i.kind == "correctness" and i.test_name in failures and i.status == "passed":
            i.points, i.status, i.detail = 0.0, "failed", failures[i.test_name]
    grade.sanitizer.append(sanitizer_summary(*totals) if totals[2] else "compute-sanitizer: no passed GPU test to check")


def parallel_note(step) -> str:
    """The report's line on how the test step shared the GPU."""
    busy = ", ".join(f"{k} {v:.1f} s" for k, v in step.busy.items())
    return (f"Parallelism: {step.workers} job(s) at once on the GPU (--gpu-jobs), at most {step.most_at_once} ran "
            f"together; {len(step.units)} test job(s); the tests tagged [exclusive] (RUN_SERIAL outside Catch2) and "
            f"their compute-sanitizer runs ran alone afterwards. Seconds of work: {busy}; "
            f"{step.wall.get('all', 0.0):.1f} s of wall time for tests and compute-sanitizer together.")


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    t0 = time.monotonic()
    started = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    try:
        manifests = load_manifests()
        tree_value, tree_dir, tree_name = resolve_tree(args.tree)
        manifests = resolve_chapters(args.chapter, manifests)
        if args.extra_tests:
            manifests = merge_extra_manifests(manifests, load_manifests(Path(args.extra_tests).resolve()))
    except UsageError as e:
        print(f"tools/grade: {e}", file=sys.stderr)
        return EXIT_USAGE
    except ManifestError as e:
        print(f"tools/grade: bad manifest: {e}", file=sys.stderr)
        return EXIT_ERROR
    if not manifests:
        print(f"tools/grade: no manifest in {MANIFEST_DIR}: nothing to grade", file=sys.stderr)
        return EXIT_ERROR

    build_dir = Path(args.build_dir).resolve() if args.build_dir else REPO / "build-grade" / tree_name
    out_dir = Path(args.out).resolve() if args.out else REPO / f"grade-{tree_name}"
    if args.no_build and not (build_dir / "CTestTestfile.cmake").exists():
        print(f"tools/grade: --no-build but {build_dir} holds no configured build", file=sys.stderr)
        return EXIT_USAGE
    reused = None
    if args.reuse_tests:
        src = Path(args.reuse_tests).resolve()
        junit_src = src / "junit.xml"
        newest = max((p.stat().st_mtime for p in (build_dir / "bin").glob("test_*") if p.is_file()), default=0.0)
        if newest > junit_src.stat().st_mtime:
            print(f"tools/grade: --reuse-tests {src}: a test binary in {build_dir / 'bin'} is newer than those "
                  "results; run the tests again (drop --reuse-tests)", file=sys.stderr)
            return EXIT_USAGE
        ran_at = _dt.datetime.fromtimestamp(junit_src.stat().st_mtime).strftime("%Y-%m-%d %H:%M")
        reused = (junit_src.read_text(encoding="utf-8", errors="replace"),
                  (src / "test.log").read_text(encoding="utf-8", errors="replace"), str(src), ran_at)
    out_dir.mkdir(parents=True, exist_ok=True)
    build_log = out_dir / "build.log"
    test_log = out_dir / "test.log"
    for stale in (build_log, test_log, out_dir / "junit.xml", out_dir / "report.md", out_dir / "results.json",
                  out_dir / "ctest-junit.xml"):
        if stale.exists():
            stale.unlink()
    for stale_dir in ("perf", "sanitizer", "catch2"):
        if (out_dir / stale_dir).is_dir():
            shutil.rmtree(out_dir / stale_dir)
    common = dict(tree=args.tree, tree_dir=str(tree_dir), build_dir=str(build_dir))
    env = {"COURSE_GRADING_SEED": str(args.seed)} if args.seed is not None else {}
    cores = grader_cores()
    try:
        times = limits.load_times()
    except limits.TimesError as e:
        print(f"tools/grade: {e}", file=sys.stderr)
        return EXIT_ERROR
    limit_for = time_limits(manifests, args.test_timeout, times, args.time_factor, args.time_floor, cores)
    gpu_gib = pool.gpu_memory_gib()
    # --record-times times each test alone (the reference the limits scale): one job at a time.
    workers = 1 if args.record_times else (int(args.gpu_jobs) if args.gpu_jobs != "auto"
                                           else pool.auto_jobs(gpu_gib, cores))
    huge_at_once = pool.huge_tokens(gpu_gib)
    clock = Timings()
    ccache_line = ""
    graded_names: List[str] = []

    staged: Optional[Staged] = None
    host = hostlock.HostLock(Path(args.host_lock) if args.host_lock else None)
    try:
        host.hold()
        grade = None
        if not args.no_build:
            # The student's hole bodies, spliced into the course's own files: registries, baselines
            # and every line outside a hole come from the course, whatever the tree holds.
            me = load_make_exercises()
            try:
                course = me.course_files(REPO)
            except me.MarkerError as e:
                raise GradeError(f"the course's own files are broken: {e}")
            if not course:
                raise GradeError("no course copy to splice into: neither solutions/ nor tools/grading/course/ exists")
            staging = build_dir / "spliced-tree"
            clock.start("splice")
            staged = stage_tree(tree_dir, staging, course, me, strict=args.strict,
                                chapters=[m.chapter for m in manifests] if args.chapter else None)
            if args.strict and (staged.outside or staged.missing):
                grade = build_failed_grade(manifests, "", **common)
                grade.refused = True
                for i in grade.items:
                    i.detail = "refused: the tree changes code outside its holes (--strict)"
            tree_value = str(staging)
        if grade is None and not args.no_build:
            print(f"[grade] configuring and building {tree_dir} (spliced into {tree_value}) in {build_dir} "
                  f"(log: {build_log})", file=sys.stderr, flush=True)
            extra_arg = [f"-DCOURSE_EXTRA_TESTS_DIR={Path(args.extra_tests).resolve()}"] if args.extra_tests \
                else ["-DCOURSE_EXTRA_TESTS_DIR="]
            launcher, ccache_env = ccache_arguments(args.cmake_arg, build_dir)
            clock.start("configure")
            code, out = proc.run_logged(["cmake", "-S", str(REPO), "-B", str(build_dir),
                                         f"-DCOURSE_TREE={tree_value}", "-DCMAKE_BUILD_TYPE=Release"]
                                        + extra_arg + launcher + args.cmake_arg, build_log, env=ccache_env)
            ccache_line = describe_ccache(build_dir, ccache_env)
            if code == 0:
                clock.start("build")
                targets = build_targets(manifests, bool(args.chapter))
                if targets and args.extra_tests:
                    targets += [f"test_extra_{p.stem}" for p in sorted(Path(args.extra_tests).glob("*.cpp"))
                                if any(p.name.startswith(m.chapter) for m in manifests)]
                code, out = proc.run_logged(["cmake", "--build", str(build_dir), "-j", str(args.jobs)] + targets,
                                            build_log, env=ccache_env)
            if code != 0:
                grade = build_failed_grade(manifests, build_log_excerpt(build_log.read_text(errors="replace")),
                                           **common)
        if grade is None:
            host.next_step()
            junit = out_dir / "junit.xml"
            labels = "^(" + "|".join(m.label for m in manifests) + ")$"
            par = reused is None and workers > 1 and not args.one_process_per_test
            keep = None
            if args.skip_ungraded:
                globs = graded_globs(manifests)
                keep = lambda name: any(scoring.match(g, name) for g in globs)  # noqa: E731
            clock.start("tests and sanitizer" if par else "tests")
            step = None
            if reused is not None:
                junit.write_text(reused[0], encoding="utf-8")
                test_log.write_text(reused[1], encoding="utf-8")
                console_text = reused[1]
                print(f"[grade] test results reused from {reused[2]} (ran {reused[3]})", file=sys.stderr, flush=True)
                tests = parse_junit(junit)
            elif par:
                # Several jobs at once, compute-sanitizer among them; the [exclusive] tests alone at
                # the end (testrun.run_tests_parallel, pool.py say how).
                grade_gpu = detect_gpu()
                san = None
                if not args.no_sanitize and sanitizer_unavailable(grade_gpu) is None:
                    san = make_chapter_sanitizer(manifests, build_dir, out_dir, env, args, cores, grade_gpu, common)
                step = testrun.run_tests_parallel(build_dir, out_dir, labels, env, test_log, limit_for, times.get,
                                                  junit, workers, huge_at_once, sanitize=san, keep=keep)
                tests, console_text = step.tests, step.console
            else:
                # Each chapter's Catch2 program once, the other tests through CTest one at a time (-j 1
                # whatever CTEST_PARALLEL_LEVEL says: the timer follows one test); testrun.py says how.
                step = testrun.run_tests(build_dir, out_dir, labels, env, test_log, limit_for, times.get, junit,
                                         batch=not args.one_process_per_test, keep=keep)
                tests, console_text = step.tests, step.console
            graded_names = [t.name for t in tests]
            if not tests:
                # Every graded chapter has tests: none at all means a broken build folder, not a zero.
                raise GradeError(f"CTest ran no test labelled {labels} in {build_dir}: is the build complete? "
                                 f"(see {test_log})")
            console = parse_ctest_console(console_text)
            # Correctness first, so that the sanitizer can fail items before performance reads them.
            grade = assemble(manifests, tests, None, console=console, expect_gpu=args.expect_gpu, cores=cores,
                             **common)
            grade.notes = []
            parallel = isinstance(step, testrun.ParallelStep)
            if step is not None and step.batches:
                grade.notes.append("Tests: each chapter's Catch2 program ran once for all its cases ("
                                   + "; ".join(step.batches) + ")"
                                   + (f"; {len(step.alone)} case(s) ran again alone (a crash, a hang, or a failure "
                                      "after one that can break the CUDA context; test.log says which)"
                                      if step.alone else "")
                                   + ("; the other tests ran through CTest, one process each." if parallel else
                                      "; the other tests ran through CTest, one at a time."))
            if step is not None and step.left_out:
                line = (f"--skip-ungraded: {step.left_out} test(s) that no rule reads were not run "
                        "(ctest -L chNN runs them)")
                grade.notes.append(line)
                print(f"[grade] {line}", file=sys.stderr, flush=True)
            if parallel:
                grade.notes.append(parallel_note(step))
                print(f"[grade] {parallel_note(step)}", file=sys.stderr, flush=True)
            if args.record_times and step is not None:
                recorded = {t.name: t.seconds for t in tests if t.status == "passed"}
                limits.save_times(Path(args.record_times), recorded, cores, detect_gpu() or "no GPU",
                                  started, keep=times if Path(args.record_times) == limits.TIMES_FILE else None)
                print(f"[grade] --record-times: {len(recorded)} passed test(s) timed into {args.record_times}",
                      file=sys.stderr, flush=True)
            if reused is not None:
                grade.notes.append(f"--reuse-tests: the test results are those of {reused[2]} (CTest ran "
                                   f"{reused[3]} on this build folder); the tests were not run again")
            grade.gpu_visible = detect_gpu()
            if not (parallel and step.sanitized):
                clock.start("sanitizer")
            if parallel and not args.no_sanitize and step.sanitized:
                apply_sanitized(grade, step.sanitized)
            elif args.no_sanitize:
                grade.sanitizer.append("compute-sanitizer: not run (--no-sanitize)")
            else:
                run_sanitizer(grade, build_dir, out_dir, test_log, env, args.sanitize_timeout,
                              batch=not args.one_process_per_test)
            clock.start("performance")
            host.release()  # each measurement takes the host lock itself (perf.make_runner)
            sanitized = {i.test_name: i for i in grade.items if i.kind == "correctness" and i.test_name}
            for t in tests:  # a test the sanitizer failed fails the performance rules that require it
                if t.name in sanitized and sanitized[t.name].status == "failed" and t.status == "passed":
                    t.status, t.message = "failed", sanitized[t.name].detail.splitlines()[0]
            if not args.no_performance:
                runs = []
                for k in range(args.repeat):
                    runner = make_runner(build_dir, out_dir, test_log, env, cores,
                                         tag=f"repeat{k + 1}-" if args.repeat > 1 else "", host=host)
                    g = assemble(manifests, tests, runner, console=console, expect_gpu=args.expect_gpu,
                                 cores=cores, **common)
                    runs.append([i for i in g.items if i.kind == "performance"])
                perf = runs[0]
                grade.items = [i for i in grade.items if i.kind != "performance"] + perf
                number_items(manifests, grade.items, grade.others)
                grade.no_performance = False
                if args.repeat > 1:
                    grade.repeats = repeat_summary(runs)
                    grade.repeat_rules = repeat_rules(runs)
                    totals = [round_points(sum(i.points for i in r)) for r in runs]
                    grade.repeat_totals = totals
                    grade.notes.append(f"--repeat {args.repeat}: performance points per run: "
                                       + ", ".join(f"{t:g}" for t in totals)
                                       + f" (of {round_points(sum(i.max_points for i in perf)):g}); "
                                       "the grade is the first run's")
            else:
                left_out = sum(r.points for m in manifests for r in m.performance)
                grade.items = [i for i in grade.items if i.kind != "performance"]
                grade.no_performance = True
                grade.notes.append(f"Performance was not measured (--no-performance): the {left_out:g} points of "
                                   "performance rules are left out of the totals.")
    except GradeError as e:
        print(f"tools/grade: {e}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        host.release()

    if staged is not None:
        grade.splice = staged.lines
    else:
        grade.splice = [f"not spliced (--no-build): the build folder was graded as it is, with COURSE_TREE from "
                        "its own configuration"]
    grade.seed = str(args.seed) if args.seed is not None else None
    grade.time_limit = describe_time_limits(manifests, args.test_timeout, times, args.time_factor, args.time_floor,
                                            graded_names)
    if ccache_line:
        grade.splice.append(ccache_line)
    clock.stop()
    grade.notes.append("Seconds per step: " + clock.line(time.monotonic() - t0))
    print(f"[grade] seconds per step: {clock.line(time.monotonic() - t0)}", file=sys.stderr, flush=True)
    grade.cores = cores
    if grade.gpu_visible is None:
        grade.gpu_visible = detect_gpu()
    grade.started = started
    grade.seconds = time.monotonic() - t0
    report, results = out_dir / "report.md", out_dir / "results.json"
    report.write_text(render_markdown(grade), encoding="utf-8")
    data = gradescope_results(grade)
    if grade.repeats:
        rows = repeat_rows(grade.repeats, grade.repeat_rules)
        data["extra_data"]["repeats"] = {r["measurement"]: dict({k: r[k] for k in REPEAT_COLUMNS[2:]},
                                                                values=grade.repeats[r["measurement"]])
                                         for r in rows}
        write_repeat_csv(out_dir / "repeats.csv", rows)
    results.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(summary(grade, report, results))
    return grade.exit_code()
