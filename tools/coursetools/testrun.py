"""The grader's test step: each chapter's Catch2 program once (catchrun), the other tests through
CTest (one at a time, with the per-test limit), and one JUnit file for both, in CTest's shape, so
that the rest of the grader (and --reuse-tests) reads it as it reads CTest's."""

from __future__ import annotations

import re
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


def run_tests(build_dir: Path, out_dir: Path, labels: str, env: Dict[str, str], log: Path,
              limit_for: Callable[[str], float], reference: Callable[[str], Optional[float]],
              junit: Path, batch: bool = True) -> TestStep:
    """Runs every test labelled `labels` and writes `junit`; returns the results (read back from
    that file) and the console text."""
    _, listing_text = proc.run_logged(["ctest", "--test-dir", str(build_dir), "--show-only=json-v1", "-L", labels], log)
    listed = ctest.listing(listing_text)
    if batch:
        groups, others = catchrun.groups((t, t.properties) for t in listed.values())
    else:
        groups, others = [], list(listed)
    step = TestStep([], "")
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
        if groups:
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
                f.write(f"[grade] run again alone: {why}\n")
        step.batches.append(f"{prog}: {len(names)} case(s), {rep.batch_seconds:.1f} s in one process"
                            + (f", {len(rep.alone)} run again alone" if rep.alone else ""))
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
