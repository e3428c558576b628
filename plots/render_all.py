"""Renders the chapters' plots: runs plots/NN_*.py for each chapter whose CSV is present.

    python3 plots/render_all.py --results results/reference/h100 --out results/local/plots
    python3 plots/render_all.py --results results/local --chapter 07 --chapter 09_streams

--chapter (by number or name, anywhere on the line, repeatable) draws only those chapters; one whose
CSV is missing is an error that names the missing CSVs and the reference folder that has them
(exit 2). Without --chapter a chapter with no CSV is skipped. When RESULTS is a reference folder, a
chapter it lacks is drawn from the sibling that has it (chapter 11 is measured on two GPUs:
results/reference/h200x2).
"""
import argparse
import concurrent.futures
import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
REFERENCE = ROOT / "results" / "reference"


def chapter_scripts():
    return sorted(HERE.glob("[0-9][0-9]_*.py"))


def pick_chapters(wanted, scripts):
    """The scripts named by --chapter ("07", "07_library"), in course order; SystemExit(2) for an unknown one."""
    picked = []
    for name in wanted:
        match = [s for s in scripts if s.stem == name or s.stem.startswith(f"{name}_")]
        if not match:
            names = ", ".join(s.stem for s in scripts)
            print(f"plots: --chapter '{name}' is not a chapter (one of: {names})", file=sys.stderr)
            raise SystemExit(2)
        picked += [s for s in match if s not in picked]
    return sorted(picked)


def reference_with(stem):
    """The reference folders that hold chapter `stem`'s main CSV."""
    return sorted(d for d in REFERENCE.glob("*/") if (d / f"{stem}.csv").is_file())


def missing_message(stem, results):
    """One line: which of the chapter's CSVs `results` lacks, and where the reference ones are."""
    refs = reference_with(stem)
    expected = sorted(p.name for p in refs[0].glob(f"{stem}*.csv")) if refs else [f"{stem}.csv"]
    missing = [name for name in expected if not (results / name).is_file()]
    where = f"; the reference ones are in {', '.join(rel(r) for r in refs)}/" if refs else ""
    return (f"plots: {stem}: missing in {rel(results)}/: {', '.join(missing)}{where} "
            f"(run the chapter with --csv {rel(results)}/{stem}.csv, "
            f"or pass --results {rel(refs[0]) if refs else 'results/reference/h100'})")


def rel(path):
    path = pathlib.Path(path).resolve()
    try:
        return str(path.relative_to(pathlib.Path.cwd()))
    except ValueError:
        return str(path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", type=pathlib.Path, default=pathlib.Path("results/local"),
                   help="folder with the chapters' CSVs (default: %(default)s)")
    p.add_argument("--out", type=pathlib.Path, default=None, help="folder for the images (default: RESULTS/plots)")
    p.add_argument("--chapter", action="append", default=[], metavar="NN",
                   help="only this chapter, by number or name (repeatable)")
    args = p.parse_args(argv)
    out = args.out if args.out is not None else args.results / "plots"
    scripts = chapter_scripts()
    only = pick_chapters(args.chapter, scripts) if args.chapter else None
    if not args.results.is_dir():
        if only is not None:  # say what the chapter needs, and where the reference has it
            print(missing_message(only[0].stem, args.results), file=sys.stderr)
        else:
            print(f"plots: no folder {args.results} (--results: where the chapters wrote their CSVs)", file=sys.stderr)
        return 2
    failed, skipped, done = [], [], 0
    jobs = []  # (chapter, results folder): each chapter's script is its own process, all at once
    for script in only or scripts:
        results = args.results
        if not (results / f"{script.stem}.csv").is_file():
            # A reference folder lacks a chapter measured on another machine (chapter 11 needs two
            # GPUs): draw it from the sibling reference folder that has it, and say so.
            siblings = reference_with(script.stem)
            if args.results.resolve().parent == REFERENCE.resolve() and siblings:
                results = siblings[0]
                print(f"render_all: {script.stem} from {rel(results)} (not measured in {args.results})")
            elif only is not None:
                print(missing_message(script.stem, args.results), file=sys.stderr)
                return 2
            else:
                skipped.append(script.stem)
                continue
        jobs.append((script, results))

    def render(job):
        script, results = job
        return subprocess.run([sys.executable, str(script), "--results", str(results), "--out", str(out)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    # Matplotlib spends most of a chapter's seconds in one core: the chapters render side by side,
    # and each one's output is printed whole, in chapter order.
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        for (script, _), r in zip(jobs, pool.map(render, jobs)):
            sys.stdout.write(r.stdout)
            if r.returncode != 0:
                failed.append(script.stem)
            else:
                done += 1
    if skipped:
        print(f"render_all: no CSV in {args.results} for: {', '.join(skipped)} (skipped)")
    print(f"render_all: {done} chapter(s) plotted into {out}" + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed or done == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
