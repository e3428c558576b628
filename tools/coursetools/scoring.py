"""Scoring: the graded items, correctness points from test results, requirements and CPU
thresholds, and the grade with its totals, headline and exit code.

An item's status: passed (full points) · partial · failed (0 points, assessed) · skipped (not
assessed: no GPU) · error (not assessed: a problem of the grader or the manifest) · not graded (a
test no rule names: 0 points max).
"""

from __future__ import annotations

import fnmatch
import math
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Tuple

from .junit import NO_MEMORY_MARKER, TestResult, failure_excerpt, gpu_skip_reason
from .manifest import CorrectnessRule, Manifest, PerformanceRule, describe_select

if TYPE_CHECKING:
    from .perf import PerfRun

EXIT_OK = 0          # every graded item was assessed
EXIT_ERROR = 1       # the build failed, or the grader could not do its job
EXIT_USAGE = 2       # bad command line, unknown chapter, missing tree
EXIT_INCOMPLETE = 3  # some points were not assessed (GPU tests skipped)

ASSESSED = ("passed", "partial", "failed")


@dataclass
class Item:
    chapter: str
    kind: str                # "correctness" | "performance" | "not graded"
    name: str
    max_points: float
    points: float = 0.0
    status: str = "failed"
    detail: str = ""         # the failure excerpt, or how performance points were computed
    number: str = ""         # "1.3": chapter number . position
    visibility: str = "visible"
    measured: Optional[float] = None
    metric: str = ""
    zero_at: Optional[float] = None
    full_at: Optional[float] = None
    row: str = ""
    leaderboard: bool = False
    test_status: str = ""    # for a not-graded test: passed, failed or skipped
    no_gpu: bool = False     # skipped because there was no GPU
    no_memory: bool = False  # skipped because the card lacks the memory the test needs
    test_name: str = ""      # the CTest name behind a correctness item
    sanitize: List[str] = field(default_factory=list)  # tools to run over it (a passed GPU test)
    sanitize_args: Dict[str, List[str]] = field(default_factory=dict)  # the manifest's extra arguments
    sanitize_allowed: List[Dict[str, str]] = field(default_factory=list)  # the manifest's allowed API errors


def round_points(x: float) -> float:
    return round(x + 0.0, 2)


def linear_points(value: float, zero_at: float, full_at: float, points: float) -> float:
    """Points rise linearly from 0 at `zero_at` to `points` at `full_at` and are clamped outside.
    Works either way round (full_at < zero_at for a metric where lower is better)."""
    if not math.isfinite(value):
        return 0.0
    frac = (value - zero_at) / (full_at - zero_at)
    return round_points(points * min(1.0, max(0.0, frac)))


def match(glob: str, name: str) -> bool:
    return fnmatch.fnmatchcase(name, glob)


def status_from_points(points: float, max_points: float) -> str:
    if points >= max_points:
        return "passed"
    return "partial" if points > 0 else "failed"


def grade_correctness(manifests: Sequence[Manifest], tests: Sequence[TestResult],
                      console: Optional[Dict[str, str]] = None, expect_gpu: bool = False,
                      ) -> Tuple[List[Item], List[Item]]:
    """(graded items, not-graded items). Each test goes to the first rule that matches it, in
    chapter order, then rule order. A rule matching fewer tests than its `expect` gets failing
    items for the missing ones, so a test that never ran cannot lower the maximum."""
    console = console or {}
    claimed = set()
    graded: List[Item] = []
    for m in manifests:
        for rule in m.correctness:
            hits = [t for t in tests if id(t) not in claimed and match(rule.tests, t.name)]
            for t in hits:
                claimed.add(id(t))
                item = _correctness_item(m, rule, t, console.get(t.name, ""), expect_gpu)
                if rule.requires and item.status == "passed":
                    # A passing test earns nothing when the holes failed their integrity check (the
                    # hole scan: a library, another version, state kept between calls, ...).
                    state, why = requirement_state(rule.requires, tests, expect_gpu)
                    if state == "failed":
                        item = Item(m.chapter, "correctness", t.name, rule.points, 0.0, "failed",
                                    f"passed, but {why}", visibility=item.visibility)
                graded.append(item)
            for k in range(len(hits), rule.expect):
                label = rule.name or rule.tests
                graded.append(Item(m.chapter, "correctness", f"{label} (no such test ran)", rule.points,
                                   0.0, "failed",
                                   f"no test named like '{rule.tests}' ran (expected {rule.expect}, "
                                   f"found {len(hits)}): it was not built, not registered, or renamed",
                                   visibility=rule.visibility or m.visibility))
    others = []
    for t in tests:
        if id(t) in claimed:
            continue
        chapter = next((m.chapter for m in manifests if m.number == t.chapter_number), None)
        chapter = chapter or (f"ch{t.chapter_number}" if t.chapter_number else "other")
        detail = failure_excerpt(t, console.get(t.name, ""), 3) if t.status == "failed" else ""
        others.append(Item(chapter, "not graded", t.name, 0.0, 0.0, "not graded", detail, test_status=t.status,
                           no_gpu=t.no_gpu, no_memory=t.no_memory))
    return graded, others


def _correctness_item(m: Manifest, rule: CorrectnessRule, t: TestResult, console_outcome: str,
                      expect_gpu: bool) -> Item:
    vis = rule.visibility or m.visibility
    if t.status == "passed":
        excluded = any(match(g, t.name) for g in m.sanitize_exclude)
        return Item(m.chapter, "correctness", t.name, rule.points, rule.points, "passed", "", visibility=vis,
                    test_name=t.name, sanitize=[] if excluded else list(rule.sanitize),
                    sanitize_args=m.sanitize_args, sanitize_allowed=m.sanitize_allowed)
    if t.status == "skipped" and t.no_memory:
        # The card's memory, not the student's code: never a failure, never a pass.
        return Item(m.chapter, "correctness", t.name, rule.points, 0.0, "skipped",
                    f"not run: {memory_skip_reason(t)}; not assessed", visibility=vis, no_memory=True,
                    test_name=t.name)
    if t.status == "skipped":
        why = "no GPU on the grading machine" if t.no_gpu else f"skipped ({t.message})"
        if expect_gpu:
            return Item(m.chapter, "correctness", t.name, rule.points, 0.0, "failed",
                        f"skipped ({why}) although --expect-gpu says a GPU is present: counted as failed",
                        visibility=vis)
        return Item(m.chapter, "correctness", t.name, rule.points, 0.0, "skipped",
                    f"not run: {why}; not assessed", visibility=vis, no_gpu=t.no_gpu)
    return Item(m.chapter, "correctness", t.name, rule.points, 0.0, "failed",
                failure_excerpt(t, console_outcome), visibility=vis)


def memory_skip_reason(t: TestResult) -> str:
    """The line of a test's output that says how much memory it needed."""
    for line in t.output.splitlines():
        if NO_MEMORY_MARKER in line:
            return line.strip()
    return f"{NO_MEMORY_MARKER}: the card has too little free memory for this test"


def grader_cores() -> int:
    """The cores this process may run on (its affinity mask, as a container or taskset limits it),
    not the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def scaled_thresholds(rule: PerformanceRule, cores: int) -> Tuple[float, float, str]:
    """(zero_at, full_at, note) for this machine. A rule with reference_cores measures a threaded
    CPU speed-up: its thresholds hold at reference_cores cores, and the gain over 1.0 they ask for
    shrinks in proportion to the cores the grader sees, (cores - 1) / (reference_cores - 1), never
    grows."""
    if not rule.reference_cores:
        return rule.zero_at, rule.full_at, ""
    share = min(1.0, max(0, cores - 1) / (rule.reference_cores - 1))
    zero = 1.0 + (rule.zero_at - 1.0) * share
    full = 1.0 + (rule.full_at - 1.0) * share
    note = (f"thresholds scaled to the {cores} core(s) the grader sees (set for {rule.reference_cores}): "
            f"0 points at {zero:.3g}, full at {full:.3g}")
    return zero, full, note


def requirement_state(requires: Sequence[str], tests: Sequence[TestResult],
                      expect_gpu: bool = False) -> Tuple[str, str]:
    """("passed" | "failed" | "skipped", why). Every glob must match at least one test and every
    matching test must have passed. A failure outranks a skip: a failed requirement is 0 points
    even on a machine without a GPU."""
    failed, skipped, missing = [], [], []
    for glob in requires:
        hits = [t for t in tests if match(glob, t.name)]
        if not hits:
            missing.append(glob)
        for t in hits:
            if t.status == "failed" or (t.status == "skipped" and expect_gpu):
                failed.append(t.name)
            elif t.status == "skipped":
                skipped.append(t.name)
    if failed:
        return "failed", "required tests did not pass: " + "; ".join(failed)
    if missing:
        return "failed", "no test ran that is named like: " + ", ".join(f"'{g}'" for g in missing)
    if skipped:
        return "skipped", f"{len(skipped)} required test(s) were skipped"
    return "passed", ""


@dataclass
class Grade:
    manifests: List[Manifest]
    items: List[Item]        # graded (correctness, then performance, per chapter)
    others: List[Item]       # not graded
    tree: str = "chapters"   # as given: chapters, solutions, or a path
    tree_dir: str = ""
    build_dir: str = ""
    build_failed: bool = False
    build_log_tail: str = ""
    gpu_skip_reason: Optional[str] = None
    gpu_visible: Optional[str] = None   # nvidia-smi's first GPU line when one is listed
    notes: List[str] = field(default_factory=list)
    started: str = ""
    seconds: float = 0.0
    no_performance: bool = False
    refused: bool = False    # --strict and the tree had edits outside its holes
    splice: List[str] = field(default_factory=list)   # what the splice step did, one line each
    seed: Optional[str] = None                        # the grading seed, when one was set
    cores: int = 0                                    # the cores the grader saw
    time_limit: str = ""                              # the per-test time limit, in words
    sanitizer: List[str] = field(default_factory=list)  # what the sanitizer step did
    repeats: Dict[str, List[float]] = field(default_factory=dict)  # --repeat: item name -> values
    repeat_rules: Dict[str, Tuple[float, float, float]] = field(default_factory=dict)  # name -> zero_at, full_at, max points
    repeat_totals: List[float] = field(default_factory=list)  # --repeat: each run's performance points
    choices: List[str] = field(default_factory=list)  # the tree's declared design choices (choices_of)

    def total(self, kind: Optional[str] = None, assessed_only: bool = False) -> Tuple[float, float]:
        items = [i for i in self.items if (kind is None or i.kind == kind)]
        if assessed_only:
            items = [i for i in items if i.status in ASSESSED]
        return round_points(sum(i.points for i in items)), round_points(sum(i.max_points for i in items))

    def not_assessed(self, kind: Optional[str] = None) -> float:
        return round_points(sum(i.max_points for i in self.items
                                if i.status not in ASSESSED and (kind is None or i.kind == kind)))

    @property
    def incomplete(self) -> bool:
        return any(i.status == "skipped" for i in self.items)

    @property
    def has_errors(self) -> bool:
        return self.build_failed or any(i.status == "error" for i in self.items)

    def exit_code(self) -> int:
        if self.has_errors:
            return EXIT_ERROR
        return EXIT_INCOMPLETE if self.incomplete else EXIT_OK

    def headline(self) -> str:
        """The top-level message: what the score means, first."""
        if self.refused:
            return ("REFUSED: the tree changes the course's code outside its holes and --strict was given, so it "
                    "was not built and the score is 0. The edits are listed under 'What was graded'.")
        if self.build_failed:
            return ("BUILD FAILED: the tree did not compile, so no test ran and the score is 0. "
                    "The compiler's last lines are below.")
        parts = []
        if self.incomplete:
            na, nac, nap = self.not_assessed(), self.not_assessed("correctness"), self.not_assessed("performance")
            total = self.total()[1]
            if self.gpu_skip_reason is not None or any(i.no_gpu for i in self.items):
                parts.append(f"INCOMPLETE: the GPU tests did not run on this machine"
                             + (f" ({self.gpu_skip_reason})" if self.gpu_skip_reason else "") + ". ")
                needs = "need a GPU"
            elif any(i.no_memory for i in self.items):
                parts.append("INCOMPLETE: some tests need more device memory than this card has free. ")
                needs = "need more free GPU memory"
            else:
                parts.append("INCOMPLETE: some graded items were not run. ")
                needs = "were not run"
            # What was checked here and what was not, in points of the whole grade: a tree whose holes
            # are filled and one whose holes are empty read differently even where no GPU test ran.
            pa, ma = self.total(assessed_only=True)
            if ma > 0:
                parts.append(f"Checked here: {ma:g} of the {total:g} points, of which {pa:g} earned. ")
            else:
                parts.append(f"Checked here: none of the {total:g} points: nothing was assessed, so there is "
                             "no score yet. ")
            parts.append(f"Not checked: {na:g} points {needs} ({nac:g} correctness, {nap:g} performance). "
                         "This is not a zero: grade this tree on a machine with an NVIDIA GPU (and the memory "
                         "the skipped tests name) for a complete score.")
            if self.gpu_visible and self.gpu_skip_reason:
                parts.append(f" Note: nvidia-smi lists a GPU ({self.gpu_visible}) although the tests found "
                             "none usable: check the driver, or grade with --expect-gpu to count skips as failures.")
        if any(i.status == "error" for i in self.items):
            parts.append(" GRADER ERROR: some items could not be assessed because of the grader, the manifest "
                         "or the machine (see the items marked 'grader error'); their points count as not assessed.")
        return "".join(parts).strip()


# A decision an exercise leaves open (chapter 07's exercise 3: refuse or grow) is declared in the
# student's code; a host test reads it and prints one line, "COURSE-CHOICE: <what>: <choice>", which
# the report repeats, so that whoever reads a grade knows which rules the tests held the tree to.
CHOICE_LINE = re.compile(r"COURSE-CHOICE:[ \t]*(\S[^\r\n]*)")


def choices_of(tests: Sequence[TestResult]) -> List[str]:
    """Every COURSE-CHOICE line the tests printed, once each, in test order."""
    seen: List[str] = []
    for t in tests:
        for m in CHOICE_LINE.finditer(t.output or ""):
            text = m.group(1).strip()
            if text not in seen:
                seen.append(text)
    return seen


def number_items(manifests: Sequence[Manifest], items: List[Item], others: Sequence[Item] = ()) -> None:
    """Gives each item its number "C.K": C the chapter's number (0 when it has none), K its
    position in the chapter: correctness, then performance, then the tests not graded."""
    count: Dict[str, int] = {}
    ordered = [i for m in manifests for kind in ("correctness", "performance")
               for i in items if i.chapter == m.chapter and i.kind == kind]
    for i in ordered + list(others):
        digits = i.chapter[2:4] if i.chapter.startswith("ch") else i.chapter[:2]
        count[i.chapter] = count.get(i.chapter, 0) + 1
        i.number = f"{int(digits) if digits.isdigit() else 0}.{count[i.chapter]}"


def assemble(manifests: Sequence[Manifest], tests: Sequence[TestResult],
             run: Optional[Callable[..., PerfRun]], *, tree: str = "chapters",
             tree_dir: str = "", build_dir: str = "", console: Optional[Dict[str, str]] = None,
             expect_gpu: bool = False, cores: Optional[int] = None) -> Grade:
    """Everything but the build and the runs: the graded items of a list of test results.
    `run(manifest, rule)` runs a chapter executable (None: performance not measured)."""
    from .perf import grade_performance  # perf builds on this module's items: imported when used
    graded, others = grade_correctness(manifests, tests, console, expect_gpu)
    items: List[Item] = []
    left_out = 0.0
    for m in manifests:
        items += [i for i in graded if i.chapter == m.chapter]
        for rule in m.performance:
            if run is None:
                left_out += rule.points
                continue
            items.append(grade_performance(m, rule, tests, lambda r, attempt=0, m=m: run(m, r, attempt=attempt) if attempt else run(m, r),
                                            expect_gpu, cores))
    number_items(manifests, items, others)
    g = Grade(tree=tree, tree_dir=tree_dir, build_dir=build_dir, manifests=list(manifests), items=items,
              others=others, gpu_skip_reason=None if expect_gpu else gpu_skip_reason(tests),
              no_performance=run is None, cores=grader_cores() if cores is None else cores,
              choices=choices_of(tests))
    if run is None:
        g.notes.append(f"Performance was not measured (--no-performance): the {left_out:g} points of "
                       "performance rules are left out of the totals.")
    return g


def build_failed_grade(manifests: Sequence[Manifest], log_tail: str, **kw) -> Grade:
    """A grade of zero for a tree that did not build: every rule's points are failed."""
    items = []
    for m in manifests:
        for rule in m.correctness:
            for _ in range(max(1, rule.expect)):
                items.append(Item(m.chapter, "correctness", rule.name or rule.tests, rule.points, 0.0, "failed",
                                  "the tree did not build", visibility=rule.visibility or m.visibility))
        for rule in m.performance:
            items.append(Item(m.chapter, "performance", rule.name, rule.points, 0.0, "failed",
                              "the tree did not build", visibility=rule.visibility or m.visibility,
                              metric=rule.metric, zero_at=rule.zero_at, full_at=rule.full_at,
                              row=describe_select(rule.row)))
    number_items(manifests, items)
    return Grade(manifests=list(manifests), items=items, others=[], build_failed=True, build_log_tail=log_tail, **kw)
