"""Renders every chapter's plots: runs plots/NN_*.py for each chapter whose CSV is present.

    python3 plots/render_all.py --results results/reference/h100 --out results/local/plots
"""
import argparse
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", type=pathlib.Path, required=True, help="folder with the chapters' CSVs")
    p.add_argument("--out", type=pathlib.Path, required=True, help="folder for the images")
    args = p.parse_args()
    scripts = sorted(HERE.glob("[0-9][0-9]_*.py"))
    failed, skipped, done = [], [], 0
    for script in scripts:
        results = args.results
        if not (results / f"{script.stem}.csv").is_file():
            # A reference folder lacks a chapter measured on another machine (chapter 11 needs two
            # GPUs): draw it from the sibling reference folder that has it, and say so.
            siblings = sorted(d for d in args.results.parent.glob("*/") if (d / f"{script.stem}.csv").is_file())
            if args.results.resolve().parent.name != "reference" or not siblings:
                skipped.append(script.stem)
                continue
            results = siblings[0]
            print(f"render_all: {script.stem} from {results} (not measured in {args.results})")
        r = subprocess.run([sys.executable, str(script), "--results", str(results), "--out", str(args.out)])
        if r.returncode != 0:
            failed.append(script.stem)
        else:
            done += 1
    if skipped:
        print(f"render_all: no CSV in {args.results} for: {', '.join(skipped)} (skipped)")
    print(f"render_all: {done} chapters plotted into {args.out}" + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed or done == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
