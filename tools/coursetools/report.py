"""The grade written out: report.md for people, results.json for Gradescope, and the summary the
console shows."""

from __future__ import annotations

import platform
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from .ctest import TIMED_OUT
from .perf import repeat_rows
from .scoring import Grade, Item, round_points

STATUS_WORDS = {"passed": "passed", "partial": "partial", "failed": "**failed**",
                "skipped": "not run (no GPU)", "error": "**grader error**", "not graded": "not graded"}


def _md_cell(text: str, limit: int = 0) -> str:
    text = " ".join(str(text).split())
    if limit and len(text) > limit:
        text = text[:limit - 1] + "…"
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def one_line(detail: str) -> str:
    """The line of a failure that says most: that it timed out, else the first Catch2 message (the
    text under "with message:"), else the first line."""
    lines = [line.strip() for line in detail.splitlines()]
    if lines and lines[0].startswith((TIMED_OUT, "crashed (signal")):
        return lines[0]
    for k, line in enumerate(lines):
        if line == "with message:" and k + 1 < len(lines) and lines[k + 1]:
            return lines[k + 1]
    return next((line for line in lines if line), "")


def _fmt(x: Optional[float]) -> str:
    return "" if x is None else f"{x:.4g}"


def _status_word(item: Item) -> str:
    if item.status == "skipped" and item.no_memory:
        return "not run (too little GPU memory)"
    if item.status == "skipped" and not item.no_gpu:
        return "not run (skipped)"
    return STATUS_WORDS.get(item.status, item.status)


def render_markdown(g: Grade) -> str:
    out: List[str] = []
    w = out.append
    w(f"# Grade of `{g.tree}`")
    w("")
    w(f"- tree: `{g.tree_dir}`")
    w(f"- build: `{g.build_dir}`")
    w(f"- graded: {g.started} on {platform.node() or 'this machine'}, in {g.seconds:.0f} s")
    w(f"- GPU: {g.gpu_visible or ('none usable' if g.gpu_skip_reason else 'none listed by nvidia-smi')}")
    w("")
    head = g.headline()
    if head:
        w("> " + head.replace("\n", "\n> "))
        w("")
    for note in g.notes:
        w(f"> {note}")
        w("")
    if g.splice or g.seed is not None or g.cores or g.sanitizer or g.time_limit or g.choices:
        w("## What was graded")
        w("")
        for line in g.splice:
            w(f"- {line}")
        for line in g.choices:
            w(f"- the tree's choice, {line} (the tests held it to that choice's rules)")
        if g.seed is not None:
            w(f"- grading seed: {g.seed} (COURSE_GRADING_SEED: every test input differs from the public one)")
        if g.cores:
            w(f"- cores the grader sees: {g.cores} (threaded CPU speed-ups are judged against this count)")
        if g.time_limit:
            w(f"- {g.time_limit}")
        for line in g.sanitizer:
            w(f"- {line}")
        w("")
    if g.repeats:
        w("## Performance over repeated runs")
        w("")
        w("The worst run over the full-marks threshold (inverted where lower is better): 1 or more means "
          "every run earned full points; what is above 1 is the margin before a slower or noisier run loses "
          "points. The same table is in repeats.csv.")
        w("")
        w("| measurement | runs | min | median | max | full at | worst / full at | points per run |")
        w("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        for r in repeat_rows(g.repeats, g.repeat_rules):
            full = "" if r["full_at"] is None else f"{r['full_at']:.4g}"
            ratio = "" if r["worst_over_full"] is None else f"{r['worst_over_full']:.3f}"
            pts = "" if r["points_min"] is None else (
                f"{r['points_min']:g}" if r["points_min"] == r["points_max"] else f"{r['points_min']:g} to {r['points_max']:g}")
            if pts:
                pts += f" of {r['max_points']:g}"
            w(f"| {_md_cell(r['measurement'])} | {r['runs']} | {r['min']:.4g} | {r['median']:.4g} | {r['max']:.4g} "
              f"| {full} | {ratio} | {pts} |")
        w("")
    if g.build_failed:
        w("## Build log (last lines)")
        w("")
        w("```text")
        w(g.build_log_tail.rstrip())
        w("```")
        w("")
    w("## Totals")
    w("")
    w("| part | points | max | not assessed |")
    w("| --- | ---: | ---: | ---: |")
    for kind in ("correctness", "performance"):
        p, mx = g.total(kind)
        w(f"| {kind} | {p:g} | {mx:g} | {g.not_assessed(kind):g} |")
    p, mx = g.total()
    w(f"| **total** | **{p:g}** | **{mx:g}** | **{g.not_assessed():g}** |")
    w("")
    pa, ma = g.total(assessed_only=True)
    if g.incomplete and ma > 0:
        w(f"Checked here: {ma:g} of the {g.total()[1]:g} points, of which {pa:g} earned; "
          f"not checked: {g.not_assessed():g}.")
        w("")

    chapters = [m.chapter for m in g.manifests]
    chapters += sorted({i.chapter for i in g.others} - set(chapters))
    titles = {m.chapter: m.title for m in g.manifests}
    for ch in chapters:
        items = [i for i in g.items if i.chapter == ch]
        others = [i for i in g.others if i.chapter == ch]
        if not items and not others:
            continue
        w(f"## {ch}" + (f": {titles[ch]}" if titles.get(ch) else ""))
        w("")
        corr = [i for i in items if i.kind == "correctness"]
        perf = [i for i in items if i.kind == "performance"]
        if corr:
            p, mx = _sum(corr)
            w(f"### Correctness: {p:g} of {mx:g}")
            w("")
            w("| # | test | status | points | max | message |")
            w("| --- | --- | --- | ---: | ---: | --- |")
            for i in corr:
                first = one_line(i.detail) if i.status != "passed" else ""
                w(f"| {i.number} | {_md_cell(i.name)} | {_status_word(i)} | {i.points:g} | {i.max_points:g} "
                  f"| {_md_cell(first, 100)} |")
            w("")
            for i in corr:
                if i.status == "failed" and i.detail:
                    w(f"**{i.number} {_md_cell(i.name)}**")
                    w("")
                    w("```text")
                    w(i.detail.replace("```", "'''"))
                    w("```")
                    w("")
        if perf:
            p, mx = _sum(perf)
            w(f"### Performance: {p:g} of {mx:g}")
            w("")
            w("| # | measurement | CSV row | metric | measured | 0 points at | full at | status | points | max |")
            w("| --- | --- | --- | --- | ---: | ---: | ---: | --- | ---: | ---: |")
            for i in perf:
                w(f"| {i.number} | {_md_cell(i.name)} | {_md_cell(i.row)} | {_md_cell(i.metric)} | {_fmt(i.measured)} "
                  f"| {_fmt(i.zero_at)} | {_fmt(i.full_at)} | {_status_word(i)} | {i.points:g} | {i.max_points:g} |")
            w("")
            for i in perf:
                if i.detail:
                    w(f"- {i.number} {_md_cell(i.name)}: {i.detail.splitlines()[0]}")
                    rest = i.detail.splitlines()[1:]
                    if rest:
                        w("")
                        w("  ```text")
                        for line in rest:
                            w("  " + line.replace("```", "'''"))
                        w("  ```")
            w("")
        if others:
            w(f"### Not graded ({len(others)} tests, 0 points)")
            w("")
            w("| test | result |")
            w("| --- | --- |")
            for i in others:
                result = ("skipped (no GPU)" if i.no_gpu else "skipped (too little GPU memory)" if i.no_memory
                          else i.test_status)
                if i.detail:
                    result += ": " + i.detail.splitlines()[0]
                w(f"| {_md_cell(i.name)} | {_md_cell(result, 100)} |")
            w("")
    w("---")
    w("Points per test and per measurement come from `tools/grading/*.json`; see `docs/grading.md`.")
    return "\n".join(out) + "\n"


def _sum(items: Sequence[Item]) -> Tuple[float, float]:
    return round_points(sum(i.points for i in items)), round_points(sum(i.max_points for i in items))


def gradescope_results(g: Grade) -> dict:
    """results.json in Gradescope's format (the documented fields only: score, max_score, status,
    name, number, output, tags, visibility). An item that did not run (skipped, or a grader error)
    is left out of `tests` altogether, so Gradescope shows no 0/N for it; the top-level output names
    it and says that the score covers only what ran."""
    tests = []
    not_run = []
    for i in g.items + g.others:
        if i.status in ("skipped", "error") or (i.status == "not graded" and i.test_status == "skipped"):
            if i.kind != "not graded":
                not_run.append(f"{gradescope_name(i)} ({i.max_points:g} points): {one_line(i.detail) or 'not run'}")
            continue
        entry = {
            "name": gradescope_name(i),
            "number": i.number,
            "score": i.points,
            "max_score": i.max_points,
            "output": _gs_output(i),
            "tags": [f"ch{i.chapter[:2]}" if i.chapter[:2].isdigit() else i.chapter, i.kind.replace(" ", "-")],
            "visibility": i.visibility,
        }
        if i.status in ("passed", "partial", "failed"):
            entry["status"] = "passed" if i.status == "passed" else "failed"
        elif i.status == "not graded" and i.test_status in ("passed", "failed"):
            entry["status"] = i.test_status
        tests.append(entry)
    output = [g.headline()] if g.headline() else []
    pc, mc = g.total("correctness")
    pp, mp = g.total("performance")
    if g.incomplete or not_run:
        pa, ma = g.total(assessed_only=True)
        output.append(f"Score of what ran: {pa:g} of {ma:g} points (correctness {pc:g}, performance {pp:g}). "
                      f"{g.not_assessed():g} points were not assessed and are not in this score nor in the "
                      "list of tests:\n" + "\n".join("- " + x for x in not_run))
    else:
        output.append(f"Correctness {pc:g} of {mc:g}; performance {pp:g} of {mp:g}.")
    output += g.splice
    output += [f"The tree's choice, {c}." for c in g.choices]
    if g.build_failed:
        output.append(g.build_log_tail.rstrip())
    output += g.notes
    result = {
        "score": g.total()[0],
        "execution_time": int(round(g.seconds)),
        "output": "\n\n".join(output),
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "extra_data": {
            "tree": g.tree,
            "incomplete": g.incomplete,
            "build_failed": g.build_failed,
            "points_not_assessed": g.not_assessed(),
            "not_assessed": not_run,
            "refused": g.refused,
            "seed": g.seed,
            "cores": g.cores,
            "correctness": {"score": pc, "max_score": mc},
            "performance": {"score": pp, "max_score": mp},
            "sanitizer": list(g.sanitizer),
        },
        "tests": tests,
    }
    if g.repeat_totals:  # --repeat N: each run's performance points, and the most it could earn
        result["extra_data"]["performance_per_run"] = {"scores": list(g.repeat_totals), "max_score": mp}
    board = [{"name": f"{i.chapter} {i.name}", "value": round(i.measured, 3), "order": "desc"}
             for i in g.items if i.leaderboard and i.measured is not None]
    if board:
        result["leaderboard"] = board
    return result


def gradescope_name(i: Item) -> str:
    """Test names already start with chNN; a measurement gets the same prefix."""
    if i.kind == "performance":
        return f"ch{i.chapter[:2]} performance: {i.name}"
    return i.name + (" (not graded)" if i.kind == "not graded" else "")


def _gs_output(i: Item) -> str:
    if i.kind == "performance":
        return f"CSV row {i.row}: {i.detail}" if i.detail else ""
    if i.status == "passed":
        return "passed"
    return i.detail[:4000]


def summary(g: Grade, report: Path, results: Path) -> str:
    """What the console shows at the end: the points per part and in all, saying so where nothing
    was assessed (never "0 of 16" for points that were not run), then the headline and the paths."""
    lines = [f"tools/grade: {g.tree}"]
    for kind in ("correctness", "performance"):
        p, mx = g.total(kind)
        na = g.not_assessed(kind)
        if kind == "performance" and g.no_performance and mx == 0:
            lines.append(f"  {kind:<12} not measured (--no-performance)")
        elif mx > 0 and na >= mx:
            lines.append(f"  {kind:<12} not run: none of its {mx:g} points was assessed")
        else:
            lines.append(f"  {kind:<12} {p:>7g} of {mx:<7g}" + (f" ({na:g} not assessed)" if na else ""))
    p, mx = g.total()
    na = g.not_assessed()
    if mx > 0 and na >= mx:
        lines.append(f"  {'total':<12} nothing was assessed ({mx:g} points not run)")
    else:
        lines.append(f"  {'total':<12} {p:>7g} of {mx:<7g}" + (f" ({na:g} not assessed)" if na else ""))
    head = g.headline()
    if head:
        lines.append(head)
    lines.append(f"report:       {report}")
    lines.append(f"results.json: {results}")
    return "\n".join(lines)
