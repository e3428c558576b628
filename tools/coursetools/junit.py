"""CTest's JUnit file (`ctest --output-junit`): what each test did, why a test was skipped, the
lines of a failure a student needs, and the one honest summary line of tools/test_summary.py.

CTest writes every test it did not run as status="notrun" with <skipped message=REASON/>. Only
two reasons are deliberate skips (DELIBERATE_SKIP); any other ("Unable to find executable",
"Disabled", "Fixture dependency failed", ...) is a test that should have run and did not: a failure.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence

from .ctest import TIMED_OUT
from .proc import GradeError

NO_GPU_MARKER = "COURSE-NO-GPU"
NO_GPU_GUARD = re.compile(r"COURSE-NO-GPU(?!-)")   # not the retired COURSE-NO-GPU-MEMORY
NO_MEMORY_MARKER = "COURSE-NO-MEMORY"              # skipped: the card has too little free memory
SKIP_MARKER = re.compile(r"(COURSE-NO-[A-Z-]+:.*)")  # any guard's words (test_summary groups by them)
DELIBERATE_SKIP = re.compile(r"^(SKIP_REGULAR_EXPRESSION_MATCHED|SKIP_RETURN_CODE=-?\d+)$")
TEST_CHAPTER = re.compile(r"^ch(\d\d)\b")


@dataclass
class TestResult:
    name: str
    status: str              # "passed" | "failed" | "skipped"
    output: str = ""         # what the test printed (system-out, then system-err)
    message: str = ""        # CTest's failure or skip message (often empty for failures)
    seconds: float = 0.0
    no_gpu: bool = False     # skipped because the GPU guard printed COURSE-NO-GPU
    no_memory: bool = False  # skipped because the card lacks the memory the test needs

    @property
    def chapter_number(self) -> Optional[str]:
        m = TEST_CHAPTER.match(self.name)
        return m.group(1) if m else None


def parse_junit(path: Path) -> List[TestResult]:
    """Reads the JUnit XML that `ctest --output-junit` writes (a <testsuite> root; a
    <testsuites> root is accepted too). Raises GradeError when the file is missing or malformed."""
    try:
        root = ET.parse(str(path)).getroot()
    except FileNotFoundError:
        raise GradeError(f"CTest wrote no JUnit file at {path}")
    except ET.ParseError as e:
        raise GradeError(f"cannot read the JUnit file {path}: {e}")
    results = []
    for case in root.iter("testcase"):
        results.append(_junit_case(case))
    return results


def _text(elem: Optional[ET.Element]) -> str:
    return (elem.text or "") if elem is not None else ""


def _junit_case(case: ET.Element) -> TestResult:
    name = case.get("name") or case.get("classname") or "(unnamed test)"
    out = _text(case.find("system-out"))
    err = _text(case.find("system-err"))
    output = out + (("\n" if out and not out.endswith("\n") else "") + err if err else "")
    try:
        seconds = float(case.get("time") or 0.0)
    except ValueError:
        seconds = 0.0
    failure = case.find("failure")
    if failure is None:
        failure = case.find("error")
    skipped = case.find("skipped")
    status_attr = (case.get("status") or "").lower()

    if failure is not None:
        message = " ".join(x for x in (failure.get("message", ""), _text(failure).strip()) if x)
        return TestResult(name, "failed", output, message, seconds)
    if skipped is not None or status_attr in ("notrun", "disabled"):
        message = (skipped.get("message", "") if skipped is not None else "") or status_attr
        if DELIBERATE_SKIP.match(message):
            no_memory = NO_MEMORY_MARKER in output
            return TestResult(name, "skipped", output, message, seconds,
                              no_gpu=bool(NO_GPU_GUARD.search(output)) and not no_memory, no_memory=no_memory)
        # Not run for a reason nobody chose (missing executable, disabled, fixture failed).
        return TestResult(name, "failed", output, f"not run: {message or 'no reason given'}", seconds)
    if status_attr == "fail":
        return TestResult(name, "failed", output, "", seconds)
    return TestResult(name, "passed", output, "", seconds)


def gpu_skip_reason(tests: Sequence[TestResult]) -> Optional[str]:
    """The guard's own words ("COURSE-NO-GPU: no usable CUDA GPU (...)") from the first test that
    was skipped for want of a GPU, or None when none was."""
    for t in tests:
        if t.status == "skipped" and t.no_gpu:
            lines = t.output.splitlines()
            for k, line in enumerate(lines):
                if NO_GPU_GUARD.search(line):
                    # Catch2 wraps a long message over indented lines: join them back.
                    words = [line.strip()]
                    for more in lines[k + 1:]:
                        if not more.strip() or not more.startswith(" "):
                            break
                        words.append(more.strip())
                    return " ".join(words)
            return NO_GPU_MARKER
    return None


def failure_excerpt(test: TestResult, console_outcome: str = "", max_lines: int = 12) -> str:
    """The first lines a student needs from a failed test: Catch2's assertion and message, without
    its banner. Falls back to the last lines of output, or says the test printed nothing."""
    lines = test.output.splitlines()
    body: List[str] = []
    # Catch2 (v2 and v3) prints the test's header, a line of dots, then the failures, then a
    # line of '=' before its totals.
    dots = [i for i, line in enumerate(lines) if re.fullmatch(r"\.{20,}", line.strip())]
    if dots:  # from the first failure on (a test with sections repeats the header per section)
        for line in lines[dots[0] + 1:]:
            if re.fullmatch(r"={20,}", line.strip()):
                break
            body.append(line)
    else:
        body = [line for line in lines if not line.startswith("Filters:")][-max_lines:]
    while body and not body[0].strip():
        body.pop(0)
    while body and not body[-1].strip():
        body.pop()
    head = []
    # CTest 3.x writes <failure message=""/>, CTest 4 <failure message="Failed"/>: no news.
    if test.message and test.message.lower() not in ("", "fail", "failed"):
        head.append(test.message)
    if console_outcome.startswith((TIMED_OUT, "crashed (")):  # the limit, or a signal: said first, in those words
        head.insert(0, console_outcome)
    elif console_outcome and console_outcome not in ("Failed", "Passed"):
        head.append(f"CTest: {console_outcome}")
    if not body:
        body = ["(the test printed nothing: it crashed, timed out or was killed; run "
                f"`ctest --test-dir BUILD -R '<name>' --output-on-failure` to see more)"]
    text = head + body
    if len(text) > max_lines:
        text = text[:max_lines] + [f"... ({len(text) - max_lines} more lines in the test's output)"]
    return "\n".join(text)


def skip_reason(case: ET.Element) -> str:
    text = "".join((e.text or "") for e in case.iter() if e.tag in ("system-out", "system-err"))
    lines = text.splitlines()
    for k, line in enumerate(lines):
        m = SKIP_MARKER.search(line)
        if m:
            words = [m.group(1).strip()]
            for more in lines[k + 1:]:  # Catch2 wraps long messages over indented lines
                if not more.strip() or not more.startswith(" "):
                    break
                words.append(more.strip())
            # Sizes differ from test to test: group by the reason's words, not its numbers.
            return re.sub(r"\d[\d.,]*\s*(GiB|MiB|KiB|GB|MB|B)\b", "N \\1", " ".join(words))
    skipped = case.find("skipped")
    return (skipped.get("message") if skipped is not None else "") or "no reason given"


def summarize(path) -> str:
    """`N passed, N failed, N skipped`, then each reason for a skip with how many tests gave it (the
    guard's own words: no GPU, too little device memory, ...). A test not run for a reason nobody
    chose counts as failed, as the grader counts it. Raises OSError or ET.ParseError."""
    root = ET.parse(path).getroot()
    counts = Counter()
    reasons = Counter()
    for case in root.iter("testcase"):
        status = _junit_case(case).status
        counts[status] += 1
        if status == "skipped":
            reasons[skip_reason(case)] += 1
    lines = [f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped"]
    for reason, n in reasons.most_common():
        lines.append(f"  skipped {n}: {reason}")
    return "\n".join(lines)
