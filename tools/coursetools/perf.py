"""Performance rules: running the chapter executable with --csv, reading the row a rule names,
the metric and its points; and the spread of repeated runs (--repeat)."""

from __future__ import annotations

import csv
import math
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from . import proc
from .hostlock import HostLock
from .junit import TestResult
from .manifest import (METRIC_LINK, METRIC_ROOFLINE, METRIC_SPEEDUP, Manifest, PerformanceRule,
                       describe_select)
from .scoring import (Item, grader_cores, linear_points, match, requirement_state, scaled_thresholds,
                      status_from_points)

# The chapter executables' exit codes (course::ExitCode in common/course/check.hpp).
EXE_OK, EXE_FAILURE, EXE_USAGE, EXE_NO_GPU, EXE_DOES_NOT_FIT = 0, 1, 2, 3, 4

# A measurement short of full marks is taken again, up to this many more times, and the best one
# counts. A host that is busy for a moment (another tenant's memory traffic, a page-cache flush) can
# halve a staged copy's speed in one process: on an H200, chapter 08's staged dot measured 88% of the
# link in one grade and 43% (median 22.5 ms, mean 29.5, minimum 12.9) in the next, same build. A
# solution that is slow stays slow in every run; noise does not repeat three times.
REMEASURE = 2


@dataclass
class PerfRun:
    """One run of `bin/NN_name --csv FILE ARGS...`."""
    exit_code: int
    rows: List[Dict[str, str]] = field(default_factory=list)
    output: str = ""         # the tail of what it printed
    csv_path: str = ""
    error: str = ""          # why there are no rows although it exited 0 (no CSV, unreadable CSV)
    timed_out: bool = False


def read_csv_rows(path: Path) -> List[Dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return [{(k or "").strip(): (v or "").strip() for k, v in row.items()} for row in csv.DictReader(f)]


def row_valid(row: Dict[str, str]) -> bool:
    return row.get("valid", "").strip().lower() in ("1", "true", "yes")


def _row_matches(row: Dict[str, str], select: Dict[str, object]) -> bool:
    if not match(str(select["version"]), row.get("version", "")):
        return False
    if "config" in select and row.get("config", "") != select["config"]:
        return False
    if "n" in select and not _same(row.get("n", ""), str(select["n"])):
        return False
    return True


def _same(a: str, b: str) -> bool:
    """Cells compare as numbers when both are numbers ("1e+08" == "100000000"), else as text."""
    try:
        return float(a) == float(b)
    except ValueError:
        return a == b


def select_row(rows: Sequence[Dict[str, str]], select: Dict[str, object]) -> Dict[str, str]:
    """The one row the rule measures. Raises LookupError when none or several match."""
    hits = [r for r in rows if _row_matches(r, select)]
    if not hits:
        raise LookupError(f"no CSV row has {describe_select(select)}")
    if len(hits) > 1:
        raise LookupError(f"{len(hits)} CSV rows have {describe_select(select)}: "
                          "add config and n to the rule's row so that it names one")
    return hits[0]


def _float(row: Dict[str, str], column: str) -> float:
    try:
        value = float(row.get(column, ""))
    except ValueError:
        raise ValueError(f"column '{column}' is '{row.get(column, '')}', not a number")
    if not math.isfinite(value):
        raise ValueError(f"column '{column}' is {value}")
    return value


def metric_value(rows: Sequence[Dict[str, str]], row: Dict[str, str], metric: str) -> Tuple[float, str]:
    """(value, what it was computed from). pct_roofline and pct_link are read from the row (the
    column of that name); speedup_vs:<v> is the baseline row's median_ms divided by this row's (same
    run, same config and n where present)."""
    if metric in (METRIC_ROOFLINE, METRIC_LINK):
        return _float(row, metric), ""
    base_version = metric[len(METRIC_SPEEDUP):]
    candidates = [r for r in rows if r.get("version", "") == base_version]
    for column in ("n", "config"):
        narrowed = [r for r in candidates if _same(r.get(column, ""), row.get(column, ""))]
        if narrowed:
            candidates = narrowed
    if not candidates:
        raise LookupError(f"no baseline row with version={base_version} in the CSV")
    if len(candidates) > 1:
        raise LookupError(f"{len(candidates)} baseline rows with version={base_version} match "
                          f"config='{row.get('config', '')}' n={row.get('n', '')}")
    base = candidates[0]
    if not row_valid(base):
        raise LookupError(f"the baseline row version={base_version} is not valid (valid={base.get('valid', '')})")
    mine, theirs = _float(row, "median_ms"), _float(base, "median_ms")
    if mine <= 0:
        raise ValueError(f"median_ms is {mine}")
    return theirs / mine, f"{base_version} median {theirs:.4g} ms / this median {mine:.4g} ms"


def grade_performance(m: Manifest, rule: PerformanceRule, tests: Sequence[TestResult],
                      run: Callable[..., PerfRun], expect_gpu: bool = False,
                      cores: Optional[int] = None, remeasure: int = REMEASURE) -> Item:
    """One performance item. `run(rule, attempt=K)` runs (or fetches a cached run of) the chapter
    executable, attempt 0 first; it is not called unless every required test passed. A value short
    of full marks is measured again, up to `remeasure` more times (REMEASURE), and the best counts."""
    cores = grader_cores() if cores is None else cores
    zero_at, full_at, scale_note = scaled_thresholds(rule, cores)
    item = Item(m.chapter, "performance", rule.name, rule.points, 0.0, "failed",
                visibility=rule.visibility or m.visibility, metric=rule.metric, zero_at=zero_at,
                full_at=full_at, row=describe_select(rule.row), leaderboard=rule.leaderboard)
    if rule.reference_cores and cores < 2:
        item.status, item.detail = "skipped", ("not assessed: the grader sees 1 core, so a threaded speed-up "
                                               "cannot be measured")
        return item
    state, why = requirement_state(rule.requires, tests, expect_gpu)
    if state == "failed":
        item.detail = f"0 points: {why}"
        return item
    if state == "skipped":
        item.status, item.detail = "skipped", f"not assessed: {why}"
        item.no_gpu = any(t.no_gpu for t in tests if t.status == "skipped"
                          and any(match(g, t.name) for g in rule.requires))
        return item
    best = _score(m, rule, replace(item), run(rule), expect_gpu, scale_note)
    values = [best.measured] if best.measured is not None else []
    attempt = 0
    while best.measured is not None and best.points < rule.points and attempt < remeasure:
        attempt += 1
        again = _score(m, rule, replace(item), run(rule, attempt=attempt), expect_gpu, scale_note)
        if again.measured is None:  # a run that failed outright is not noise: it counts as it is
            best = again
            break
        values.append(again.measured)
        if again.points > best.points:
            best = again
    if len(values) > 1:
        best.detail += (f"; measured {len(values)} times (a value short of full marks is measured again, "
                        f"the best counts): " + ", ".join(f"{v:.4g}" for v in values))
    return best


def _score(m: Manifest, rule: PerformanceRule, item: Item, result: PerfRun, expect_gpu: bool,
           scale_note: str) -> Item:
    """`item` filled from one run of the chapter executable (item.measured stays None unless the
    run gave a value)."""
    zero_at, full_at = item.zero_at, item.full_at
    cmd = f"bin/{m.chapter} --csv FILE {' '.join(rule.args)}".rstrip()
    if result.exit_code == EXE_NO_GPU:
        if expect_gpu:
            item.detail = f"0 points: `{cmd}` found no GPU (exit 3) although --expect-gpu says there is one"
        else:
            item.status, item.detail = "skipped", f"not assessed: `{cmd}` found no GPU (exit 3)"
            item.no_gpu = True
        return item
    if result.timed_out:
        item.detail = f"0 points: `{cmd}` did not finish in {rule.timeout_s:g} s" + _tail(result.output)
        return item
    if result.exit_code in (EXE_USAGE, EXE_DOES_NOT_FIT) or result.error:
        # Not the student's doing: the manifest's arguments, the card, or the driver program.
        item.status = "error"
        item.detail = (f"`{cmd}` exited {result.exit_code}: "
                       + (result.error or ("bad arguments in the manifest" if result.exit_code == EXE_USAGE
                                           else "the size does not fit in this card's memory"))
                       + _tail(result.output))
        return item
    if result.exit_code != EXE_OK:
        item.detail = f"0 points: `{cmd}` exited {result.exit_code} (a CUDA error or a failed validation)" \
                      + _tail(result.output)
        return item
    try:
        row = select_row(result.rows, rule.row)
    except LookupError as e:
        item.status, item.detail = "error", f"{e} (in {result.csv_path or 'the CSV'})"
        return item
    if not row_valid(row):
        item.detail = f"0 points: the row {describe_select(rule.row)} is not valid (valid={row.get('valid', '')}): " \
                      "its result did not match the reference"
        return item
    try:
        value, how = metric_value(result.rows, row, rule.metric)
    except LookupError as e:
        item.status, item.detail = "error", str(e)
        return item
    except ValueError as e:
        item.detail = f"0 points: {e}"
        return item
    item.measured = value
    item.points = linear_points(value, zero_at, full_at, rule.points)
    item.status = status_from_points(item.points, rule.points)
    item.detail = (f"{rule.metric} = {value:.4g}" + (f" ({how})" if how else "")
                   + f"; 0 points at {zero_at:.3g}, full at {full_at:.3g}: "
                   + f"{item.points:g} of {rule.points:g}" + (f" ({scale_note})" if scale_note else ""))
    return item


def _tail(text: str, lines: int = 8) -> str:
    text = text.strip()
    if not text:
        return ""
    return "\n" + "\n".join(text.splitlines()[-lines:])


@contextmanager
def _measuring(host: HostLock, alone: bool) -> Iterator[str]:
    """The host lock around one measurement: shared, or alone for a host rule's measurement taken
    again. Alone is kept after the run (the item's next measurement, if any, needs it too; the
    next first measurement or the end of the step gives it up). Yields what the progress line
    says about it."""
    if not host.active:
        yield ""
    elif not alone:
        host.release()
        host.hold()
        try:
            yield ""
        finally:
            host.release()
    elif host.hold_alone():
        yield f" with the host to itself (waited {host.waited_s:.0f} s for the other grades)"
    else:
        yield f" (the other grades did not pause within {host.wait_limit:.0f} s: measured beside them)"


def make_runner(build_dir: Path, out_dir: Path, log: Path, env: Optional[Dict[str, str]] = None,
                cores: Optional[int] = None, tag: str = "",
                host: Optional[HostLock] = None) -> Callable[[Manifest, PerformanceRule], PerfRun]:
    """Runs each distinct (chapter, args, attempt) once; rules sharing arguments share the run (and
    a measurement taken again for one rule, attempt 1, 2, ..., serves the others). `{cores}` in a
    rule's arguments becomes the number of cores the grader sees. `host`: the lock file of the
    grades on this host (tools/grade --host-lock): a measurement holds it shared, a host rule's
    measurement taken again holds it alone (hostlock.py says why)."""
    cache: Dict[Tuple[str, Tuple[str, ...]], PerfRun] = {}
    cores = grader_cores() if cores is None else cores
    host = host if host is not None else HostLock(None)

    def run(m: Manifest, rule: PerformanceRule, attempt: int = 0) -> PerfRun:
        args = [a.replace("{cores}", str(cores)) for a in rule.args]
        key = (m.chapter, tuple(args), attempt)
        if key in cache:
            return cache[key]
        exe = build_dir / "bin" / m.chapter
        run_dir = out_dir / "perf" / f"{tag}{m.chapter}-run{sum(1 for k in cache if k[0] == m.chapter) + 1}"
        run_dir.mkdir(parents=True, exist_ok=True)
        csv_path = run_dir / f"{m.chapter}.csv"
        if not exe.exists():
            result = PerfRun(-1, error=f"{exe} does not exist (was the chapter built?)")
        else:
            again = f" (measured again, run {attempt + 1}: the value was short of full marks)" if attempt else ""
            with _measuring(host, attempt > 0 and rule.host) as alone_note:
                print(f"[grade] measuring: bin/{m.chapter} {' '.join(args)}{again}{alone_note}", file=sys.stderr,
                      flush=True)
                started = time.monotonic()
                code, output = proc.run_logged([str(exe), "--csv", str(csv_path)] + args, log, timeout=rule.timeout_s,
                                               env=env)
            print(f"[grade] measured bin/{m.chapter} in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
            (run_dir / "output.txt").write_text(output, encoding="utf-8")
            result = PerfRun(code, output=output[-4000:], csv_path=str(csv_path))
            if code == -1:
                result.timed_out = True
            elif code == EXE_OK:
                if not csv_path.exists():
                    result.error = f"it exited 0 but wrote no CSV at {csv_path}"
                else:
                    try:
                        result.rows = read_csv_rows(csv_path)
                    except (OSError, csv.Error, UnicodeDecodeError) as e:
                        result.error = f"cannot read {csv_path}: {e}"
        cache[key] = result
        return result

    return run


def repeat_summary(runs: Sequence[Sequence[Item]]) -> Dict[str, List[float]]:
    """{measurement: its values over the runs} for --repeat (the metric, not the points)."""
    out: Dict[str, List[float]] = {}
    for items in runs:
        for i in items:
            if i.kind == "performance" and i.measured is not None:
                out.setdefault(f"{i.chapter} {i.name}", []).append(i.measured)
    return out


def repeat_rules(runs: Sequence[Sequence[Item]]) -> Dict[str, Tuple[float, float, float]]:
    """{measurement: (zero_at, full_at, max points)} as the runs applied them (CPU rules already
    scaled to the grader's cores)."""
    out: Dict[str, Tuple[float, float, float]] = {}
    for items in runs:
        for i in items:
            if i.kind == "performance" and i.zero_at is not None and i.full_at is not None:
                out.setdefault(f"{i.chapter} {i.name}", (i.zero_at, i.full_at, i.max_points))
    return out


REPEAT_COLUMNS = ["measurement", "runs", "min", "median", "max", "zero_at", "full_at", "worst_over_full",
                  "points_min", "points_max", "max_points"]


def repeat_rows(values: Dict[str, List[float]], rules: Dict[str, Tuple[float, float, float]]) -> List[dict]:
    """One row per measurement of a --repeat run: the spread of its values and how close the worst
    run came to full marks. worst_over_full is the worst value over the full-marks threshold (its
    inverse where lower is better): 1 or more means every run earned full points, and the amount
    above 1 is the margin a slower host or a noisier run has before points are lost."""
    rows = []
    for name, vs in values.items():
        if not vs:
            continue
        ordered = sorted(vs)
        row = {"measurement": name, "runs": len(vs), "min": ordered[0], "median": ordered[len(ordered) // 2],
               "max": ordered[-1], "zero_at": None, "full_at": None, "worst_over_full": None,
               "points_min": None, "points_max": None, "max_points": None}
        if name in rules:
            zero_at, full_at, points = rules[name]
            higher_is_better = full_at >= zero_at
            worst = ordered[0] if higher_is_better else ordered[-1]
            got = [linear_points(v, zero_at, full_at, points) for v in vs]
            row.update(zero_at=zero_at, full_at=full_at, max_points=points, points_min=min(got), points_max=max(got))
            if full_at != 0 and worst != 0:
                row["worst_over_full"] = worst / full_at if higher_is_better else full_at / worst
        rows.append(row)
    return rows


def write_repeat_csv(path: Path, rows: Sequence[dict]) -> None:
    """repeats.csv beside report.md: the rows of repeat_rows, an empty field where a value is missing."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(REPEAT_COLUMNS)
        for r in rows:
            w.writerow(["" if r[c] is None else (f"{r[c]:.6g}" if isinstance(r[c], float) else r[c])
                        for c in REPEAT_COLUMNS])
