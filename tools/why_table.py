#!/usr/bin/env python3
"""Why each version is as fast as it is: one row per version, its main kernel's hardware counters
beside the instructions the compiler emitted for it, for the chapter's text to show as one table.

Reads NN_name_counters.csv (tools/counters.py, Nsight Compute on a GPU) and NN_name_sass.csv
(tools/sass_table.py, cuobjdump) from a results folder and writes NN_name_why.csv beside them. A
version's main kernel is the one of its kernels that ran longest (the first pass of a two-pass
version, not its one-block finish). Columns:

  version, kernel            the registry's name and the kernel's label
  duration_us                the main kernel's time under the profiler (clocks not locked)
  dram_pct_peak              achieved DRAM throughput, % of peak
  inst_per_element           warp instructions executed per element (a warp instruction is 32
                             threads' worth)
  bank_conflicts_per_kelem   shared-memory bank conflicts per 1,024 elements
  top_stall                  the warp-stall reason with the most cycles
  occupancy_pct              achieved occupancy, %
  ldg_128, ldg_32            16-byte and 4-byte global loads in the compiled code (static count)
  shfl, bar, lds_sts         shuffles, barriers, shared loads and stores in the compiled code

  tools/why_table.py --results results/reference/h100 06_ladder [05_many_blocks ...]
  tools/why_table.py --results results/reference/h100 --check 06_ladder   exit 1 when stale

Needs no GPU (CI checks the committed table against its two sources). Standard library only.
"""
import argparse
import csv
import io
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
COLUMNS = ["version", "kernel", "duration_us", "dram_pct_peak", "inst_per_element", "bank_conflicts_per_kelem",
           "top_stall", "occupancy_pct", "ldg_128", "ldg_32", "shfl", "bar", "lds_sts"]


class WhyError(Exception):
    pass


def read_rows(path):
    if not path.is_file():
        raise WhyError(f"{path} does not exist: run tools/counters_gpu.sh on a GPU and commit its CSVs")
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def number(text, what):
    try:
        return float(text)
    except (TypeError, ValueError):
        raise WhyError(f"{what}: '{text}' is not a number")


def main_kernels(counters):
    """The longest-running kernel of each version, in the CSV's (registry) order."""
    best, order = {}, []
    for row in counters:
        if not row.get("duration_us"):
            continue
        v = row["version"]
        if v not in best:
            order.append(v)
        if v not in best or number(row["duration_us"], v) > number(best[v]["duration_us"], v):
            best[v] = row
    return [best[v] for v in order]


def why_rows(counters, sass):
    by_kernel = {(r["version"], r["kernel"]): r for r in sass}
    rows = []
    for c in main_kernels(counters):
        s = by_kernel.get((c["version"], c["kernel"]))
        n = number(c["n"], "n")
        conflicts = number(c.get("shared_bank_conflicts") or 0, "shared_bank_conflicts")

        def static(col):
            return "" if s is None or not s.get(col, "").strip().isdigit() else s[col]

        lds_sts = "" if s is None or not static("lds") else str(int(static("lds")) + int(static("sts")))
        rows.append({
            "version": c["version"],
            "kernel": c["kernel"],
            "duration_us": c["duration_us"],
            "dram_pct_peak": c["dram_pct_peak"],
            "inst_per_element": f"{number(c['inst_per_element'], 'inst_per_element'):.4g}",
            "bank_conflicts_per_kelem": f"{1024.0 * conflicts / n:.4g}",
            "top_stall": c.get("stall_1", ""),
            "occupancy_pct": c.get("achieved_occupancy_pct", ""),
            "ldg_128": static("ldg_128"),
            "ldg_32": static("ldg_32"),
            "shfl": static("shfl"),
            "bar": static("bar"),
            "lds_sts": lds_sts,
        })
    return rows


def render(rows):
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return out.getvalue()


def table_for(results, chapter):
    counters = read_rows(results / f"{chapter}_counters.csv")
    sass = read_rows(results / f"{chapter}_sass.csv")
    rows = why_rows(counters, sass)
    if not rows:
        raise WhyError(f"{chapter}: no kernel with a duration in {chapter}_counters.csv")
    return render(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("chapters", nargs="+", metavar="CHAPTER", help="e.g. 06_ladder")
    ap.add_argument("--results", default="results/reference/h100", help="folder with the two CSVs")
    ap.add_argument("--check", action="store_true", help="exit 1 when NN_name_why.csv differs from its sources")
    args = ap.parse_args(argv)
    results = pathlib.Path(args.results)
    if not results.is_absolute():
        results = ROOT / results
    stale = 0
    for chapter in args.chapters:
        try:
            text = table_for(results, chapter)
        except WhyError as e:
            print(f"why_table: {e}", file=sys.stderr)
            return 2
        target = results / f"{chapter}_why.csv"
        if args.check:
            if not target.is_file() or target.read_text() != text:
                print(f"why_table: {target} is not what its counters and SASS CSVs give: run "
                      f"tools/why_table.py --results {args.results} {chapter}", file=sys.stderr)
                stale += 1
        else:
            target.write_text(text)
            print(f"why_table: {chapter}: {text.count(chr(10)) - 1} versions -> {target}")
    if args.check and not stale:
        print(f"why_table: {len(args.chapters)} table(s) up to date")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
