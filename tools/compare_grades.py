#!/usr/bin/env python3
"""Whether several grades of the same tree agree, item by item.

    tools/compare_grades.py grade-1 grade-2 ... grade-10        folders holding results.json
    tools/compare_grades.py a/results.json b/results.json       or the files themselves
    tools/compare_grades.py --correctness-only grade-*          performance items left out

The grading issues ask for "ten graded runs identical": the same tree graded again and again must
get the same score on every item (a test that passes one run in ten, a measurement that sits on
a threshold, a limit that a slow run trips are all grading noise a student would see). Each
results.json is tools/grade's Gradescope file; an item is a test of its `tests` list, named by
`name`, and it agrees when its score and status are the same in every run.

Prints one line per item that differs (its scores and statuses run by run) and the total of each
run. A test no rule grades (tagged "not-graded", worth 0) that a grade left out because it ran with
`tools/grade --skip-ungraded` is counted apart, not as a difference: the grades are still compared
on every item both sides have. Exit codes: 0 every item agrees in every run · 1 some item differs, or an item is missing from
a run · 2 bad arguments or an unreadable file.

A loop that makes the grades (one H200; the first grade builds, the others reuse the build folder):

    for k in $(seq 1 10); do tools/grade --tree solutions --expect-gpu --build-dir build-grade/w0 \\
        --out grades/run-$k; done; tools/compare_grades.py grades/run-*
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple

Item = Tuple[float, str]   # (score, status)


def load(path: Path) -> dict:
    f = path / "results.json" if path.is_dir() else path
    with open(f, encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, dict) or not isinstance(data.get("tests"), list):
        raise ValueError(f"{f}: not a grader's results.json (no 'tests' list)")
    return data


def items(data: dict, correctness_only: bool) -> Dict[str, Item]:
    out: Dict[str, Item] = {}
    for t in data["tests"]:
        if correctness_only and "performance" in (t.get("tags") or []):
            continue
        out[str(t.get("name"))] = (round(float(t.get("score", 0.0)), 6), str(t.get("status", "")))
    return out


def ungraded(data: dict) -> Set[str]:
    """The items of a grade that no rule grades (tag "not-graded")."""
    return {str(t.get("name")) for t in data["tests"] if "not-graded" in (t.get("tags") or [])}


def compare(runs: Sequence[Dict[str, Item]],
            optional: Set[str] = frozenset()) -> List[Tuple[str, List[Optional[Item]]]]:
    """[(item, its value in each run; None where the run lacks it)] for every item that is not the
    same in all runs, in the first run's order (then the others' new names). An item of `optional`
    (ungraded, which --skip-ungraded leaves out) is compared only among the runs that have it."""
    names: List[str] = []
    for r in runs:
        names.extend(n for n in r if n not in names)
    differ = []
    for n in names:
        values = [r.get(n) for r in runs]
        seen = [v for v in values if v is not None] if n in optional else values
        if len(set(seen)) > 1:
            differ.append((n, values))
    return differ


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description="Whether several grades of the same tree agree, item by item.",
                                epilog="exit codes: 0 identical · 1 an item differs or is missing · 2 bad input")
    p.add_argument("grades", nargs="+", help="grade folders (holding results.json) or results.json files")
    p.add_argument("--correctness-only", action="store_true", help="leave the performance items out")
    args = p.parse_args(argv)
    if len(args.grades) < 2:
        p.error("give at least two grades to compare")
    try:
        data = [load(Path(g)) for g in args.grades]
    except (OSError, ValueError) as e:
        print(f"compare_grades: {e}", file=sys.stderr)
        return 2
    runs = [items(d, args.correctness_only) for d in data]
    optional = set().union(*(ungraded(d) for d in data))
    differ = compare(runs, optional)
    left_out = sum(1 for n in optional if any(n not in r for r in runs))
    totals = [sum(s for s, _ in r.values()) for r in runs]
    for name, values in differ:
        shown = " | ".join("missing" if v is None else f"{v[0]:g} {v[1]}" for v in values)
        print(f"differs: {name}: {shown}")
    print(f"compare_grades: {len(runs)} grades, {len(runs[0])} items; totals "
          + ", ".join(f"{t:g}" for t in totals) + "; "
          + ("every item the same in every grade" if not differ else f"{len(differ)} item(s) differ")
          + (f"; {left_out} ungraded test(s) absent from some grade (--skip-ungraded), compared where present"
             if left_out else ""))
    return 0 if not differ else 1


if __name__ == "__main__":
    sys.exit(main())
