"""The grader's test step: each chapter's Catch2 program once (catchrun), the other tests through
CTest (one at a time, with the per-test limit), and one JUnit file for both, in CTest's shape, so
that the rest of the grader (and --reuse-tests) reads it as it reads CTest's."""

from __future__ import annotations

import re
import threading
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from . import catchrun, ctest, proc
from .junit import TestResult, parse_junit
from .proc import GradeError

CRASHED_LINE_FMT = "[grade] {outcome}: {name}\n"


@dataclass
class TestStep:
    tests: List[TestResult]
    console: str                      # what parse_ctest_console reads (CTest's lines and the grader's)
    batches: List[str] = field(default_factory=list)   # one line per program run as a batch
    alone: List[str] = field(default_factory=list)     # cases run again alone, and why
    left_out: int = 0                                  # tests `keep` left out (no rule reads them)


def ctest_name_regex(names: Sequence[str]) -> str:
    """`-R` for exactly these test names (CTest's regular expressions take `\\` before a character
    as that character)."""
    return "^(" + "|".join(re.sub(r"([][.^$*+?(){}|\\])", r"\\\1", n) for n in names) + ")$"


def write_junit(results: Sequence[TestResult], path: Path) -> None:
    """A JUnit file as `ctest --output-junit` writes one (parse_junit reads it back)."""
    suite = ET.Element("testsuite", name="tools/grade", tests=str(len(results)),
                       failures=str(sum(r.status == "failed" for r in results)),
                       skipped=str(sum(r.status == "skipped" for r in results)))
    for r in results:
        status = {"passed": "run", "failed": "fail", "skipped": "notrun"}[r.status]
        case = ET.SubElement(suite, "testcase", name=r.name, classname=r.name, time=f"{r.seconds:.6f}", status=status)
        if r.status == "failed":
            ET.SubElement(case, "failure", message=r.message)
        elif r.status == "skipped":
            ET.SubElement(case, "skipped", message=r.message or "SKIP_REGULAR_EXPRESSION_MATCHED")
        ET.SubElement(case, "system-out").text = _xml_safe(r.output)
    ET.ElementTree(suite).write(str(path), encoding="utf-8", xml_declaration=True)


def _xml_safe(text: str) -> str:
    return re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", "?", text)


def kept(listed: Dict[str, "ctest.ListedTest"], keep: Optional[Callable[[str], bool]]) -> Dict[str, "ctest.ListedTest"]:
    """The listing without the tests `keep` leaves out (all of it when keep is None)."""
    if keep is None:
        return listed
    return {name: t for name, t in listed.items() if keep(name)}


def run_tests(build_dir: Path, out_dir: Path, labels: str, env: Dict[str, str], log: Path,
              limit_for: Callable[[str], float], reference: Callable[[str], Optional[float]],
              junit: Path, batch: bool = True, keep: Optional[Callable[[str], bool]] = None) -> TestStep:
    """Runs every test labelled `labels` (and, with `keep`, only those it keeps) and writes `junit`;
    returns the results (read back from that file) and the console text."""
    _, listing_text = proc.run_logged(["ctest", "--test-dir", str(build_dir), "--show-only=json-v1", "-L", labels], log)
    every = ctest.listing(listing_text)
    listed = kept(every, keep)
    if batch:
        groups, others = catchrun.groups((t, t.properties) for t in listed.values())
    else:
        groups, others = [], list(listed)
    step = TestStep([], "", left_out=len(every) - len(listed))
    results: Dict[str, TestResult] = {}
    console_lines: List[str] = []

    if others or not listed:
        ctest_junit = out_dir / "ctest-junit.xml"
        if ctest_junit.exists():
            ctest_junit.unlink()
        what = f"{len(others)} test(s) that are not Catch2 cases" if groups else f"ctest -L '{labels}'"
        print(f"[grade] testing through CTest: {what} (log: {log})", file=sys.stderr, flush=True)
        timer = ctest.TestTimer(limit_for)
        cmd = ["ctest", "--test-dir", str(build_dir), "--output-junit", str(ctest_junit), "-L", labels, "-j", "1"]
        if groups or keep is not None:
            cmd += ["-R", ctest_name_regex(others)]
        _, text = proc.run_logged(cmd, log, env=env, watch=timer)
        for name, limit in timer.timed_out.items():
            print(f"[grade] {name}: {ctest.timed_out_outcome(limit)} (the per-test time limit): ended",
                  file=sys.stderr, flush=True)
        console_lines.append(text)
        for t in parse_junit(ctest_junit):
            results[t.name] = t

    for g in groups:
        prog = Path(g.program).name
        xml = out_dir / "catch2" / f"{prog}.xml"
        xml.parent.mkdir(parents=True, exist_ok=True)
        names = [t.name for t in g.tests]
        limit = catchrun.batch_limit(names, reference, limit_for)
        print(f"[grade] testing {prog}: {len(names)} case(s) in one process"
              + (f" (limit {limit:.0f} s)" if limit > 0 else ""), file=sys.stderr, flush=True)
        rep = catchrun.run_group(g, xml, env, limit_for, limit)
        with open(log, "a", encoding="utf-8", errors="replace") as f:
            f.write(f"\n$ {' '.join(catchrun.batch_command(g.program, g.tests, xml)[:-1])} '<{len(names)} cases>'\n")
            f.write(rep.log)
            f.write(f"[grade] {prog}: exit {rep.batch_code} after {rep.batch_seconds:.1f} s"
                    + (" (ended past the batch's limit)" if rep.batch_timed_out else "") + "\n")
            for name in names:
                r = rep.results[name]
                f.write(f"[grade] {r.status:7s} {r.seconds:8.2f} s {'alone' if r.alone else 'batch'}  {name}\n")
                if r.outcome.startswith(ctest.TIMED_OUT):
                    line = f"[grade] {r.outcome} (the per-test time limit): {name}\n"
                    f.write(line)
                    console_lines.append(line)
                    print(line.strip(), file=sys.stderr, flush=True)
                elif r.outcome.startswith(catchrun.CRASHED):
                    line = CRASHED_LINE_FMT.format(outcome=r.outcome, name=name)
                    f.write(line)
                    console_lines.append(line)
                    print(line.strip(), file=sys.stderr, flush=True)
            for why in rep.alone:
                f.write(f"[grade] run again: {why}\n")
        step.batches.append(f"{prog}: {len(names)} case(s), {rep.batch_seconds:.1f} s in one process"
                            + (f", {len(rep.alone)} run again" if rep.alone else ""))
        step.alone += rep.alone
        for name in names:
            r = rep.results[name]
            results[name] = TestResult(name, r.status, r.output, r.skip_message, r.seconds)

    # CTest's order (the listing's), whoever ran the test.
    ordered = [results[n] for n in listed if n in results] + [r for n, r in results.items() if n not in listed]
    write_junit(ordered, junit)
    step.tests = parse_junit(junit)
    step.console = "".join(console_lines)
    return step


# --- several at once -----------------------------------------------------------------------------

EXCLUSIVE_TAG = "[exclusive]"   # a Catch2 case that must have the GPU to itself (times, free memory)
HUGE_TAG = "[huge]"             # a Catch2 case that needs tens of GB of device memory
SERIAL_PROPERTY = "RUN_SERIAL"  # the same for a test that is not a Catch2 case (CTest's own property)
CTEST_ONLY = "ctest"


def _truthy(value: object) -> bool:
    return str(value).strip().upper() in ("1", "ON", "YES", "TRUE", "Y")


def test_label(t: ctest.ListedTest) -> str:
    """The chapter label (chNN) of a listed test, from its LABELS (the name otherwise)."""
    labels = t.properties.get("LABELS") or []
    if isinstance(labels, str):
        labels = [labels]
    for lab in labels:
        if re.fullmatch(r"ch\d\d", str(lab)):
            return str(lab)
    m = re.match(r"^(ch\d\d)", t.name)
    return m.group(1) if m else "other"


@dataclass
class Unit:
    """One job of the test step: a Catch2 program over some of its cases, or one CTest test."""
    key: str
    label: str
    kind: str                      # "batch" | "ctest"
    tests: List[ctest.ListedTest]
    group: Optional[catchrun.Group] = None
    exclusive: bool = False
    huge: bool = False
    cost: float = 1.0


def _chunks(tests: Sequence[ctest.ListedTest], parts: int, reference: Callable[[str], Optional[float]]
            ) -> List[List[ctest.ListedTest]]:
    """`tests` cut into at most `parts` runs of consecutive tests of about equal reference time."""
    if parts <= 1 or len(tests) <= 1:
        return [list(tests)] if tests else []
    parts = min(parts, len(tests))
    cost = [reference(t.name) or 1.0 for t in tests]
    share = sum(cost) / parts
    out: List[List[ctest.ListedTest]] = [[]]
    acc = 0.0
    for t, c in zip(tests, cost):
        if out[-1] and acc + c / 2 > share * len(out) and len(out) < parts:
            out.append([])
        out[-1].append(t)
        acc += c
    return out


def plan_units(listed: Dict[str, ctest.ListedTest], groups: Sequence[catchrun.Group], others: Sequence[str],
               tagged: Dict[str, Tuple[Optional[List[str]], Optional[List[str]]]],
               reference: Callable[[str], Optional[float]], workers: int, huge_at_once: int) -> List[Unit]:
    """The jobs of the test step, in CTest's order. `tagged`: {program: (names tagged [exclusive],
    names tagged [huge])}, None where the program could not list them (its cases then all run
    alone at the end, as safe as the serial grade). A program's other cases run in batches of about
    a fair share of the whole (total / (2 x workers), at least 10 s), its [huge] ones in up to
    `huge_at_once` batches, its [exclusive] ones in one batch at the end."""
    def cost(ts: Sequence[ctest.ListedTest]) -> float:
        return sum(reference(t.name) or 1.0 for t in ts)

    total = cost(list(listed.values()))
    share = max(10.0, total / (2 * workers))
    units: List[Unit] = []
    for g in groups:
        prog = Path(g.program).name
        excl_names, huge_names = tagged.get(g.program, (None, None))
        if excl_names is None or huge_names is None:
            excl_names, huge_names = [t.name for t in g.tests], []
        excl = [t for t in g.tests if t.name in set(excl_names)]
        huge = [t for t in g.tests if t.name in set(huge_names) and t.name not in set(excl_names)]
        normal = [t for t in g.tests if t not in excl and t not in huge]
        label = test_label(g.tests[0])
        parts = _chunks(normal, max(1, int(cost(normal) // share) + (cost(normal) % share > 0)), reference)
        for k, part in enumerate(parts):
            units.append(Unit(prog if k == 0 else f"{prog}-{k + 1}", label, "batch", part,
                              catchrun.Group(g.program, g.cwd, part, g.skip), cost=cost(part)))
        for k, part in enumerate(_chunks(huge, huge_at_once, reference)):
            units.append(Unit(f"{prog}-huge" + (f"-{k + 1}" if k else ""), label, "batch", part,
                              catchrun.Group(g.program, g.cwd, part, g.skip), huge=True, cost=cost(part)))
        if excl:
            units.append(Unit(f"{prog}-exclusive", label, "batch", excl, catchrun.Group(g.program, g.cwd, excl, g.skip),
                              exclusive=True, cost=cost(excl)))
    for k, name in enumerate(others, start=1):
        t = listed[name]
        units.append(Unit(f"{CTEST_ONLY}-{t.number or k}", test_label(t), "ctest", [t],
                          exclusive=_truthy(t.properties.get(SERIAL_PROPERTY, "")), cost=cost([t])))
    return units


def run_batch_unit(u: Unit, out_dir: Path, env: Dict[str, str], limit_for: Callable[[str], float],
                   reference: Callable[[str], Optional[float]], runner=None,
                   fallback_jobs: int = 1) -> Tuple[catchrun.GroupReport, str, List[str]]:
    """(report, its lines for test.log, console lines) of one batch unit. Its cases that run again
    alone run `fallback_jobs` at once, unless the unit is exclusive or huge (one at a time)."""
    g = u.group
    xml = out_dir / "catch2" / f"{u.key}.xml"
    xml.parent.mkdir(parents=True, exist_ok=True)
    names = [t.name for t in g.tests]
    limit = catchrun.batch_limit(names, reference, limit_for)
    print(f"[grade] testing {u.key}: {len(names)} case(s) in one process"
          + (" (alone on the GPU)" if u.exclusive else "")
          + (f" (limit {limit:.0f} s)" if limit > 0 else ""), file=sys.stderr, flush=True)
    rep = catchrun.run_group(g, xml, env, limit_for, limit, runner,
                             fallback_jobs=1 if (u.exclusive or u.huge) else fallback_jobs)
    log = [f"\n$ {' '.join(catchrun.batch_command(g.program, g.tests, xml)[:-1])} '<{len(names)} cases>'\n", rep.log,
           f"[grade] {u.key}: exit {rep.batch_code} after {rep.batch_seconds:.1f} s"
           + (" (ended past the batch's limit)" if rep.batch_timed_out else "") + "\n"]
    console: List[str] = []
    for name in names:
        r = rep.results[name]
        log.append(f"[grade] {r.status:7s} {r.seconds:8.2f} s {'alone' if r.alone else 'batch'}  {name}\n")
        line = ""
        if r.outcome.startswith(ctest.TIMED_OUT):
            line = f"[grade] {r.outcome} (the per-test time limit): {name}\n"
        elif r.outcome.startswith(catchrun.CRASHED):
            line = CRASHED_LINE_FMT.format(outcome=r.outcome, name=name)
        if line:
            log.append(line)
            console.append(line)
            print(line.strip(), file=sys.stderr, flush=True)
    for why in rep.alone:
        log.append(f"[grade] run again: {why}\n")
    return rep, "".join(log), console


def run_ctest_unit(u: Unit, build_dir: Path, out_dir: Path, env: Dict[str, str],
                   limit_for: Callable[[str], float]) -> Tuple[List[TestResult], str, str]:
    """(results, log text, console text) of one test run through CTest, with its time limit."""
    t = u.tests[0]
    jdir = out_dir / "jobs"
    jdir.mkdir(parents=True, exist_ok=True)
    junit, log = jdir / f"{u.key}.xml", jdir / f"{u.key}.log"
    for f in (junit, log):
        if f.exists():
            f.unlink()
    print(f"[grade] testing through CTest: {t.name}" + (" (alone on the GPU)" if u.exclusive else ""),
          file=sys.stderr, flush=True)
    timer = ctest.TestTimer(limit_for)
    cmd = ["ctest", "--test-dir", str(build_dir), "--output-junit", str(junit), "-R", ctest_name_regex([t.name]),
           "-j", "1"]
    _, text = proc.run_logged(cmd, log, env=env, watch=timer)
    for name, limit in timer.timed_out.items():
        print(f"[grade] {name}: {ctest.timed_out_outcome(limit)} (the per-test time limit): ended",
              file=sys.stderr, flush=True)
    results = parse_junit(junit) if junit.exists() else []
    return results, log.read_text(encoding="utf-8", errors="replace"), text


# The compute-sanitizer step of one chapter, given by the grader: (label, that chapter's results,
# names to check (None: all but `skip`), names to leave out, a log file) -> what it found.
Sanitize = Callable[[str, List[TestResult], Optional[set], set, Path], object]


@dataclass
class ParallelStep(TestStep):
    workers: int = 1
    sanitized: List[object] = field(default_factory=list)    # what each sanitize call returned, in order
    busy: Dict[str, float] = field(default_factory=dict)     # seconds of jobs per kind
    wall: Dict[str, float] = field(default_factory=dict)     # seconds of the shared and the exclusive phase
    units: List[Unit] = field(default_factory=list)
    most_at_once: int = 0                                    # the most jobs that ran at once
    exclusive_first: Optional[str] = None                    # the first exclusive job to start


def run_tests_parallel(build_dir: Path, out_dir: Path, labels: str, env: Dict[str, str], log: Path,
                       limit_for: Callable[[str], float], reference: Callable[[str], Optional[float]],
                       junit: Path, workers: int, huge_at_once: int = 1, sanitize: Optional[Sanitize] = None,
                       executor=None, lister=None, group_runner=None, ctest_runner=None,
                       clock: Callable[[], float] = None, keep: Optional[Callable[[str], bool]] = None) -> TestStep:
    """The test step with `workers` jobs at once (and compute-sanitizer, when `sanitize` is given,
    one job per chapter as soon as its tests have ended); the exclusive tests, then their
    sanitizer runs, alone afterwards. Results, test.log and junit come out in CTest's order,
    whatever order the jobs ended in. Without CTest's listing, the serial step (a TestStep, and
    the sanitizer is then the caller's)."""
    import time as _time
    from .pool import Job, Pool
    clock = clock or _time.monotonic
    _, listing_text = proc.run_logged(["ctest", "--test-dir", str(build_dir), "--show-only=json-v1", "-L", labels], log)
    every = ctest.listing(listing_text)
    listed = kept(every, keep)
    if not listed:  # no listing to plan from (an old CTest, nothing labelled): the serial step says why
        return run_tests(build_dir, out_dir, labels, env, log, limit_for, reference, junit, keep=keep)
    groups, others = catchrun.groups((t, t.properties) for t in listed.values())
    lister = lister or (lambda program, spec, cwd: catchrun.list_names(program, spec, cwd))
    tagged: Dict[str, Tuple[Optional[List[str]], Optional[List[str]]]] = {}
    for g in groups:
        if g.program not in tagged:
            tagged[g.program] = (lister(g.program, EXCLUSIVE_TAG, g.cwd), lister(g.program, HUGE_TAG, g.cwd))
    units = plan_units(listed, groups, others, tagged, reference, workers, huge_at_once)
    group_runner = group_runner or (lambda u: run_batch_unit(u, out_dir, env, limit_for, reference,
                                                             fallback_jobs=workers))
    ctest_runner = ctest_runner or (lambda u: run_ctest_unit(u, build_dir, out_dir, env, limit_for))
    results: Dict[str, TestResult] = {}
    lock = threading.Lock()
    jdir = out_dir / "jobs"

    def test_job(u: Unit):
        def run():
            if u.kind == "batch":
                rep, text, console = group_runner(u)
                res = [TestResult(n, r.status, r.output, r.skip_message, r.seconds) for n, r in rep.results.items()]
                out = (res, text, "".join(console), rep)
            else:
                res, text, console = ctest_runner(u)
                out = (res, text, console, None)
            with lock:
                for r in res:
                    results[r.name] = r
            return out
        return run

    def chapter_results(label: str) -> List[TestResult]:
        """The chapter's results as the grade reads them (through a JUnit file, as CTest's)."""
        with lock:
            mine = [results[n] for n in listed if n in results and test_label(listed[n]) == label]
        jdir.mkdir(parents=True, exist_ok=True)
        path = jdir / f"{label}-{threading.get_ident()}.xml"
        write_junit(mine, path)
        back = parse_junit(path)
        path.unlink()
        return back

    excl_names = {t.name for u in units if u.exclusive for t in u.tests}
    jobs: List[Job] = []
    for u in units:
        jobs.append(Job(u.key, test_job(u), u.cost, u.exclusive, tokens={"huge": 1} if u.huge else {},
                        kind="exclusive tests" if u.exclusive else "tests"))
    san_keys: List[str] = []
    if sanitize is not None:
        for label in dict.fromkeys(u.label for u in units):
            mine = [u for u in units if u.label == label]
            mine_excl = {t.name for u in mine if u.exclusive for t in u.tests}

            def shared(label=label, mine_excl=mine_excl):
                return sanitize(label, chapter_results(label), None, mine_excl, jdir / f"sanitize-{label}.log")

            key = f"sanitize-{label}"
            jobs.append(Job(key, shared, sum(u.cost for u in mine if not u.exclusive) / 2,
                            after=[u.key for u in mine if not u.exclusive], kind="sanitizer"))
            san_keys.append(key)
            if mine_excl:
                def alone(label=label, mine_excl=mine_excl):
                    return sanitize(label, chapter_results(label), set(mine_excl), set(),
                                    jdir / f"sanitize-{label}-exclusive.log")
                key = f"sanitize-{label}-exclusive"
                jobs.append(Job(key, alone, 1.0, exclusive=True, after=[u.key for u in mine], kind="exclusive sanitizer"))
                san_keys.append(key)
    # jdir's logs are per job; test.log gets them in CTest's order once every job has ended.
    if jdir.is_dir():
        import shutil
        shutil.rmtree(jdir)
    pool = Pool(workers, {"huge": huge_at_once}, executor)
    t0 = clock()
    done = pool.run(jobs)
    first_excl = next((k for e, k in pool.events if e == "start" and next(j for j in jobs if j.key == k).exclusive), None)
    step = ParallelStep([], "", workers=workers, units=units, left_out=len(every) - len(listed))
    step.wall["all"] = clock() - t0
    for j in jobs:
        step.busy[j.kind] = step.busy.get(j.kind, 0.0) + pool.seconds.get(j.key, 0.0)
    step.most_at_once = pool.most_at_once
    step.exclusive_first = first_excl
    console_lines: List[str] = []
    with open(log, "a", encoding="utf-8", errors="replace") as f:
        for u in units:
            res, text, console, rep = done[u.key]
            f.write(text)
            console_lines.append(console)
            if rep is not None:
                names = [t.name for t in u.tests]
                step.batches.append(f"{u.key}: {len(names)} case(s), {rep.batch_seconds:.1f} s in one process"
                                    + (" alone on the GPU" if u.exclusive else "")
                                    + (f", {len(rep.alone)} run again" if rep.alone else ""))
                step.alone += rep.alone
        for key in san_keys:
            p = jdir / f"{key}.log"
            if p.exists():
                f.write(p.read_text(encoding="utf-8", errors="replace"))
    step.sanitized = [done[k] for k in san_keys]
    if jdir.is_dir():
        import shutil
        shutil.rmtree(jdir)
    ordered = [results[n] for n in listed if n in results] + [r for n, r in results.items() if n not in listed]
    write_junit(ordered, junit)
    step.tests = parse_junit(junit)
    step.console = "".join(console_lines)
    return step
