"""The grading manifests: one JSON file per chapter, tools/grading/NN_name.json (the format is in
docs/grading.md). Every mistake raises ManifestError naming the file and the rule, so a typo is
found when the grader starts, not after the GPU runs."""

from __future__ import annotations

import copy
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from . import MANIFEST_DIR
from .sanitizer import TOOLS as SANITIZERS

CHAPTER_NAME = re.compile(r"^(\d\d)_[A-Za-z0-9_]+$")
METRIC_ROOFLINE = "pct_roofline"
METRIC_LINK = "pct_link"  # chapters 08 and 09: % of the run's pinned host-to-device bandwidth
METRIC_SPEEDUP = "speedup_vs:"
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")


class ManifestError(Exception):
    """A manifest file that cannot be used as written (the message names the file and the field)."""


@dataclass
class CorrectnessRule:
    tests: str               # glob on the test name (fnmatch, case-sensitive)
    points: float            # points for each matching test
    expect: int = 1          # at least this many tests must match; missing ones score 0
    name: str = ""
    visibility: str = ""
    sanitize: List[str] = field(default_factory=lambda: ["memcheck"])  # compute-sanitizer tools
    requires: List[str] = field(default_factory=list)  # test globs that must have passed too (integrity)


@dataclass
class PerformanceRule:
    name: str
    points: float
    row: Dict[str, object]   # version (required), config, n: which CSV row is measured
    metric: str              # "pct_roofline", "pct_link" or "speedup_vs:<version>"
    zero_at: float
    full_at: float
    requires: List[str]      # test-name globs that must all have passed
    args: List[str] = field(default_factory=list)
    timeout_s: float = 600.0
    visibility: str = ""
    leaderboard: bool = False
    reference_cores: int = 0  # >0: a threaded CPU speed-up; thresholds hold at this many cores
    host: bool = False        # it reads host memory or runs on the CPU: taken again, it has the host alone


@dataclass
class Manifest:
    chapter: str             # "01_timing"
    title: str
    path: Path
    correctness: List[CorrectnessRule]
    performance: List[PerformanceRule]
    visibility: str = "visible"
    sanitize_exclude: List[str] = field(default_factory=list)  # test globs compute-sanitizer skips
    sanitize_args: Dict[str, List[str]] = field(default_factory=dict)  # tool -> extra arguments
    sanitize_allowed: List[Dict[str, str]] = field(default_factory=list)  # API errors left out (sanitizer_log.py)
    test_timeout_s: Optional[float] = None  # the chapter's per-test time limit (None: the grader's default)
    report_tests: List[str] = field(default_factory=list)  # test globs whose output the report reads (COURSE-CHOICE)

    @property
    def number(self) -> str:
        return self.chapter[:2]

    @property
    def label(self) -> str:
        return "ch" + self.number


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _check_keys(obj: dict, allowed: set, where: str) -> None:
    for key in obj:
        if key in allowed or key.startswith("$") or key == "comment":
            continue
        raise ManifestError(f"{where}: unknown key '{key}' (allowed: {', '.join(sorted(allowed))})")


def _visibility(value, where: str) -> str:
    if value in ("", None):
        return ""
    if value not in VISIBILITIES:
        raise ManifestError(f"{where}: visibility must be one of {', '.join(VISIBILITIES)}")
    return value


def parse_manifest(data, path: Path) -> Manifest:
    """Validates one manifest (already decoded JSON). Every mistake raises ManifestError naming
    the file and the rule, so a typo is found when the grader starts, not after the GPU runs."""
    src = str(path)
    if not isinstance(data, dict):
        raise ManifestError(f"{src}: the top level must be an object")
    _check_keys(data, {"chapter", "title", "visibility", "correctness", "performance", "sanitize_exclude",
                       "sanitize_args", "sanitize_allowed_api_errors", "test_timeout_s", "report_tests"}, src)
    sanitize_allowed = data.get("sanitize_allowed_api_errors", [])
    if not isinstance(sanitize_allowed, list) or not all(
            isinstance(e, dict) and all(isinstance(e.get(k), str) and e.get(k) for k in ("call", "error", "library", "why"))
            for e in sanitize_allowed):
        raise ManifestError(f"{src}: 'sanitize_allowed_api_errors' must be a list of objects with call, error, "
                            f"library and why")
    sanitize_args = data.get("sanitize_args", {})
    if not isinstance(sanitize_args, dict) or not all(
            t in SANITIZERS and isinstance(a, list) and all(isinstance(x, str) and x for x in a)
            for t, a in sanitize_args.items()):
        raise ManifestError(f"{src}: 'sanitize_args' must map compute-sanitizer tools "
                            f"({', '.join(SANITIZERS)}) to lists of arguments")
    sanitize_exclude = data.get("sanitize_exclude", [])
    if not isinstance(sanitize_exclude, list) or not all(isinstance(g, str) and g for g in sanitize_exclude):
        raise ManifestError(f"{src}: 'sanitize_exclude' must be a list of test globs")
    report_tests = data.get("report_tests", [])
    if not isinstance(report_tests, list) or not all(isinstance(g, str) and g for g in report_tests):
        raise ManifestError(f"{src}: 'report_tests' must be a list of test globs")
    chapter = data.get("chapter")
    if not isinstance(chapter, str) or not CHAPTER_NAME.match(chapter):
        raise ManifestError(f"{src}: 'chapter' must be a chapter folder name like \"01_timing\"")
    if path.suffix == ".json" and path.stem != chapter:
        raise ManifestError(f"{src}: 'chapter' is \"{chapter}\" but the file is named {path.name}")
    title = data.get("title", "")
    if not isinstance(title, str):
        raise ManifestError(f"{src}: 'title' must be a string")
    visibility = _visibility(data.get("visibility", "visible"), src) or "visible"
    test_timeout = data.get("test_timeout_s")
    if test_timeout is not None and (not _is_number(test_timeout) or test_timeout <= 0):
        raise ManifestError(f"{src}: 'test_timeout_s' must be a positive number of seconds")

    correctness = []
    rules = data.get("correctness", [])
    if not isinstance(rules, list):
        raise ManifestError(f"{src}: 'correctness' must be a list")
    for i, r in enumerate(rules):
        where = f"{src}: correctness[{i}]"
        if not isinstance(r, dict):
            raise ManifestError(f"{where}: must be an object")
        _check_keys(r, {"tests", "points", "expect", "name", "visibility", "sanitize", "requires"}, where)
        sanitize = r.get("sanitize", ["memcheck"])
        if not isinstance(sanitize, list) or not all(t in SANITIZERS for t in sanitize):
            raise ManifestError(f"{where}: 'sanitize' must be a list of compute-sanitizer tools "
                                f"({', '.join(SANITIZERS)}); [] for a CPU-only test")
        if not isinstance(r.get("tests"), str) or not r["tests"]:
            raise ManifestError(f"{where}: 'tests' must be a non-empty glob string")
        if not _is_number(r.get("points")) or r["points"] < 0:
            raise ManifestError(f"{where}: 'points' must be a number >= 0")
        expect = r.get("expect", 1)
        if not isinstance(expect, int) or isinstance(expect, bool) or expect < 0:
            raise ManifestError(f"{where}: 'expect' must be a whole number >= 0")
        if not isinstance(r.get("name", ""), str):
            raise ManifestError(f"{where}: 'name' must be a string")
        requires = r.get("requires", [])
        if isinstance(requires, str):
            requires = [requires]
        if not isinstance(requires, list) or not all(isinstance(g, str) and g for g in requires):
            raise ManifestError(f"{where}: 'requires' must be a list of test globs")
        correctness.append(CorrectnessRule(r["tests"], float(r["points"]), expect, r.get("name", ""),
                                           _visibility(r.get("visibility"), where), list(sanitize),
                                           list(requires)))

    performance = []
    rules = data.get("performance", [])
    if not isinstance(rules, list):
        raise ManifestError(f"{src}: 'performance' must be a list")
    for i, r in enumerate(rules):
        where = f"{src}: performance[{i}]"
        if not isinstance(r, dict):
            raise ManifestError(f"{where}: must be an object")
        _check_keys(r, {"name", "points", "row", "metric", "zero_at", "full_at", "requires", "args",
                        "timeout_s", "visibility", "leaderboard", "reference_cores", "host"}, where)
        if not isinstance(r.get("host", False), bool):
            raise ManifestError(f"{where}: 'host' must be true or false")
        ref_cores = r.get("reference_cores", 0)
        if not isinstance(ref_cores, int) or isinstance(ref_cores, bool) or ref_cores < 0 or ref_cores == 1:
            raise ManifestError(f"{where}: 'reference_cores' must be a whole number >= 2 (the cores of the "
                                "machine the thresholds were measured for)")
        name = r.get("name")
        if not isinstance(name, str) or not name:
            raise ManifestError(f"{where}: 'name' must be a non-empty string")
        if not _is_number(r.get("points")) or r["points"] < 0:
            raise ManifestError(f"{where}: 'points' must be a number >= 0")
        row = r.get("row")
        if not isinstance(row, dict) or not isinstance(row.get("version"), str) or not row["version"]:
            raise ManifestError(f"{where}: 'row' must be an object with a 'version' string")
        _check_keys(row, {"version", "config", "n"}, f"{where}.row")
        if "config" in row and not isinstance(row["config"], str):
            raise ManifestError(f"{where}.row: 'config' must be a string")
        if "n" in row and (not isinstance(row["n"], int) or isinstance(row["n"], bool) or row["n"] < 0):
            raise ManifestError(f"{where}.row: 'n' must be a whole number")
        metric = r.get("metric")
        if not isinstance(metric, str) or not (
                metric in (METRIC_ROOFLINE, METRIC_LINK)
                or (metric.startswith(METRIC_SPEEDUP) and len(metric) > len(METRIC_SPEEDUP))):
            raise ManifestError(f"{where}: 'metric' must be \"{METRIC_ROOFLINE}\", \"{METRIC_LINK}\" or "
                                f"\"{METRIC_SPEEDUP}<version>\" (absolute times are never graded)")
        for key in ("zero_at", "full_at"):
            if not _is_number(r.get(key)):
                raise ManifestError(f"{where}: '{key}' must be a number")
        if r["zero_at"] == r["full_at"]:
            raise ManifestError(f"{where}: 'zero_at' and 'full_at' must differ")
        requires = r.get("requires")
        if isinstance(requires, str):
            requires = [requires]
        if not isinstance(requires, list) or not requires or not all(isinstance(g, str) and g for g in requires):
            raise ManifestError(f"{where}: 'requires' must name at least one test glob "
                                "(no performance points for a kernel that is not correct)")
        args = r.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, (str, int, float)) and not isinstance(a, bool)
                                                 for a in args):
            raise ManifestError(f"{where}: 'args' must be a list of strings")
        if any(str(a) == "--csv" for a in args):
            raise ManifestError(f"{where}: 'args' must not contain --csv (the grader adds it)")
        timeout = r.get("timeout_s", 600)
        if not _is_number(timeout) or timeout <= 0:
            raise ManifestError(f"{where}: 'timeout_s' must be a positive number")
        if not isinstance(r.get("leaderboard", False), bool):
            raise ManifestError(f"{where}: 'leaderboard' must be true or false")
        performance.append(PerformanceRule(
            name=name, points=float(r["points"]), row=dict(row), metric=metric,
            zero_at=float(r["zero_at"]), full_at=float(r["full_at"]), requires=list(requires),
            args=[str(a) for a in args], timeout_s=float(timeout),
            visibility=_visibility(r.get("visibility"), where), leaderboard=r.get("leaderboard", False),
            reference_cores=ref_cores, host=r.get("host", False)))
    return Manifest(chapter, title, path, correctness, performance, visibility, list(sanitize_exclude),
                    {t: list(a) for t, a in sanitize_args.items()}, list(sanitize_allowed),
                    None if test_timeout is None else float(test_timeout), list(report_tests))


def graded_globs(manifests: Sequence[Manifest]) -> List[str]:
    """Every test-name glob a rule or the report reads: the correctness rules' tests and requires,
    the performance rules' requires, the manifest's report_tests (a test that prints the tree's
    choice, COURSE-CHOICE). A test no glob matches earns nothing, gates nothing and tells the
    report nothing (tools/grade --skip-ungraded leaves it out)."""
    globs: List[str] = []
    for m in manifests:
        globs += m.report_tests
        for r in m.correctness:
            globs.append(r.tests)
            globs += r.requires
        for r in m.performance:
            globs += r.requires
    return list(dict.fromkeys(globs))


def load_manifests(directory: Optional[Path] = None) -> List[Manifest]:
    """Every tools/grading/*.json (or DIRECTORY/*.json), sorted by chapter. Raises ManifestError on
    any bad file."""
    directory = MANIFEST_DIR if directory is None else directory
    manifests = []
    for path in sorted(Path(directory).glob("[0-9][0-9]_*.json")):  # test_times.json beside them is no manifest
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise ManifestError(f"{path}: not valid JSON: {e}")
        manifests.append(parse_manifest(data, path))
    seen = {}
    for m in manifests:
        if m.number in seen:
            raise ManifestError(f"{m.path} and {seen[m.number]} both grade chapter {m.number}")
        seen[m.number] = m.path
    return manifests


def merge_extra_manifests(manifests: Sequence[Manifest], extra: Sequence[Manifest]) -> List[Manifest]:
    """Instructor-only tests: each extra manifest's rules join its chapter's, named as such."""
    out = []
    for m in manifests:
        more = [e for e in extra if e.chapter == m.chapter]
        if more:
            m = copy.copy(m)
            # First, so that they claim their tests before the chapter's globs ("ch02 unrolled: *") do.
            extra_rules = []
            for e in more:
                for r in e.correctness:
                    r = copy.copy(r)
                    r.name = "instructor's test: " + (r.name or r.tests)
                    extra_rules.append(r)
            m.correctness = extra_rules + list(m.correctness)
            m.performance = list(m.performance) + [r for e in more for r in e.performance]
        out.append(m)
    return out


def describe_select(select: Dict[str, object]) -> str:
    return " ".join(f"{k}={select[k]}" for k in ("version", "config", "n") if k in select)
