"""Per-test time limits from the reference solution's own times, and the file that keeps them.

tools/grading/test_times.json is written by `tools/grade --tree solutions --expect-gpu
--record-times` on the grading GPU: every test that passed, with the seconds it took there (a
Catch2 case's own duration when it ran in a batch; the whole process when it ran alone or
through CTest), and the cores the grader saw. A test's limit is then

    max(floor, factor x its reference time x max(1, reference cores / cores here))

(10 x, at least 10 s, by default), so a hung test costs seconds, not the five minutes of a flat
limit. A test with no recorded time gets the default (300 s). A manifest's test_timeout_s, or
--test-timeout S on the command line, sets a flat limit instead (for the chapter, for every test).
No clock is read here: the limits are arithmetic on the recorded numbers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Optional, Sequence

from . import MANIFEST_DIR
from .junit import TEST_CHAPTER

TIMES_FILE = MANIFEST_DIR / "test_times.json"
DEFAULT_LIMIT = 300.0   # a test without a recorded time (four times shorter than CTest's TIMEOUT)
DEFAULT_FACTOR = 10.0
DEFAULT_FLOOR = 10.0


class TimesError(Exception):
    """A reference-times file that cannot be used (the message names it)."""


@dataclass
class ReferenceTimes:
    seconds: Dict[str, float] = field(default_factory=dict)
    cores: int = 0
    machine: str = ""
    recorded: str = ""
    path: Optional[Path] = None

    def get(self, name: str) -> Optional[float]:
        return self.seconds.get(name)


def load_times(path: Path = TIMES_FILE) -> ReferenceTimes:
    """The recorded times; empty (every test gets the default) when the file does not exist."""
    if not path.is_file():
        return ReferenceTimes(path=path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise TimesError(f"{path}: not valid JSON: {e}")
    tests = data.get("tests") if isinstance(data, dict) else None
    if not isinstance(tests, dict) or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
                                              for v in tests.values()):
        raise TimesError(f"{path}: 'tests' must map test names to seconds >= 0")
    cores = data.get("cores", 0)
    if not isinstance(cores, int) or isinstance(cores, bool) or cores < 0:
        raise TimesError(f"{path}: 'cores' must be a whole number >= 0")
    return ReferenceTimes({k: float(v) for k, v in tests.items()}, cores, str(data.get("machine", "")),
                          str(data.get("recorded", "")), path)


def save_times(path: Path, seconds: Dict[str, float], cores: int, machine: str, recorded: str,
               keep: Optional[ReferenceTimes] = None) -> None:
    """Writes the file; the tests of `keep` that this run did not time (other chapters) stay."""
    tests = dict(keep.seconds) if keep else {}
    tests.update({k: round(v, 3) for k, v in seconds.items()})
    data = {"comment": "Seconds each test took for the reference solution on the grading GPU (tools/grade "
                       "--tree solutions --expect-gpu --record-times). Per-test limit: max(floor, factor x "
                       "seconds), docs/grading.md.",
            "machine": machine, "cores": cores, "recorded": recorded,
            "tests": dict(sorted(tests.items()))}
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def time_limits(chapter_limits: Dict[str, float], flat: Optional[float], times: ReferenceTimes,
                factor: float = DEFAULT_FACTOR, floor: float = DEFAULT_FLOOR, default: float = DEFAULT_LIMIT,
                cores: int = 0) -> Callable[[str], float]:
    """test name -> its time limit in seconds (0: none). `chapter_limits`: {chapter number: the
    manifest's test_timeout_s}, which wins; then `flat` (--test-timeout) when given; then the
    reference time, scaled; else `default`."""
    scale = max(1.0, times.cores / cores) if times.cores and cores else 1.0

    def limit(name: str) -> float:
        m = TEST_CHAPTER.match(name)
        if m and m.group(1) in chapter_limits:
            return chapter_limits[m.group(1)]
        if flat is not None:
            return flat
        ref = times.get(name)
        if ref is None:
            return default
        return max(floor, factor * ref * scale)

    return limit


def describe(chapter_limits: Dict[str, str], flat: Optional[float], times: ReferenceTimes, factor: float,
             floor: float, default: float, names: Sequence[str] = ()) -> str:
    """The report's line on the per-test time limit."""
    if flat is not None:
        text = f"{flat:g} s per test (--test-timeout)" if flat > 0 else "none set by the grader (CTest's own TIMEOUT only)"
    else:
        known = sum(1 for n in names if times.get(n) is not None)
        text = (f"{factor:g} x the reference solution's own time, at least {floor:g} s ({known} of {len(names)} "
                f"tests have a recorded time{', ' + times.recorded if times.recorded else ''}); "
                f"{default:g} s for a test without one")
    own = [f"{c} {s}" for c, s in chapter_limits.items()]
    return ("per-test time limit: " + text + (f" ({', '.join(own)}, from the manifests)" if own else "")
            + "; a test past it is ended and its item fails with 'timed out after N s'")
