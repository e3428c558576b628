#!/usr/bin/env python3
"""Write a class of made-up submissions for tools/grade-class: each a student's copy of chapters/.

    tests/tools/make_class.py DEST solutions unfilled neg:02_pairwise_cached_by_pointer partial:06-11
    tests/tools/make_class.py DEST --bench      # the benchmark's twelve (tools/bench_grade_class.sh)

Kinds of submission (the folder is named after it, ':' and ',' made '-'):
    solutions         every hole filled with its solution (what a perfect student hands in)
    unfilled          the student files as shipped, chapters/ (every hole a stub)
    neg:CASE          tests/negative/CASE applied, as tools/check_negatives.py builds it
    partial:A-B       the solutions, with the holes of chapters A to B left unfilled

Needs solutions/ (the maintainers' checkout). Exit codes: 0 written · 2 bad arguments.
"""
import argparse
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT / "tools"))

import check_negatives as CN  # noqa: E402  (a case becomes a tree there, and only there)
import make_exercises as ME  # noqa: E402

# The benchmark's class: the solutions, the unfilled tree, partial solutions, and negative cases of
# several chapters (CPU ones and GPU ones), twelve in all.
BENCH = ["solutions", "unfilled", "partial:06-11", "partial:01-05",
         "neg:02_pairwise_cached_by_pointer", "neg:01_add_grid_short_gpu", "neg:04_atomic_once_cached_by_pointer",
         "neg:05_block_tree_no_barrier", "neg:06_v4_reads_past_the_end", "neg:08_exploit_deferred_last_chunk",
         "neg:09_exploit_host_answer_gpu", "neg:10_promote_same_type"]


def tree_for(kind, course):
    """{relative path: text} of the files with holes of the submission `kind` (chapters/ holds the rest)."""
    if kind == "unfilled":
        return dict(course)
    if kind == "solutions":
        return CN.case_tree(None, course, ROOT / "solutions")
    m = re.fullmatch(r"partial:(\d\d)-(\d\d)", kind)
    if m:
        lo, hi = m.group(1), m.group(2)
        solved = CN.case_tree(None, course, ROOT / "solutions")
        return {rel: (course[rel] if lo <= rel[:2] <= hi else text) for rel, text in solved.items()}
    if kind.startswith("neg:"):
        case = CN.load_cases([kind[4:]])[0]
        return CN.case_tree(case, course, ROOT / "solutions")
    raise ValueError(f"unknown kind of submission: {kind}")


def existing_cases(kinds):
    """The bench's kinds whose negative case exists (a case renamed since is left out, said)."""
    names = {p.parent.name for p in (ROOT / "tests" / "negative").glob("*/case.json")}
    kept = [k for k in kinds if not k.startswith("neg:") or k[4:] in names]
    for k in sorted(set(kinds) - set(kept)):
        print(f"make_class: no negative case {k[4:]}: left out", file=sys.stderr)
    return kept


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dest")
    ap.add_argument("kinds", nargs="*")
    ap.add_argument("--bench", action="store_true", help="the benchmark's twelve submissions")
    args = ap.parse_args(argv)
    kinds = args.kinds + (existing_cases(BENCH) if args.bench else [])
    if not kinds:
        ap.error("name the submissions (or --bench)")
    if not (ROOT / "solutions").is_dir():
        print("make_class: needs solutions/ (the maintainers' checkout)", file=sys.stderr)
        return 2
    course = ME.course_files(ROOT)
    dest = Path(args.dest)
    for kind in kinds:
        try:
            tree = tree_for(kind, course)
        except (ValueError, CN.CaseError) as e:
            print(f"make_class: {e}", file=sys.stderr)
            return 2
        folder = dest / re.sub(r"[:,]", "-", kind) / "chapters"
        # A student's copy of chapters/ (texts and drivers included), their hole bodies written in.
        shutil.copytree(ROOT / "chapters", folder, dirs_exist_ok=True)
        for rel, text in tree.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(text)
        print(f"make_class: {folder} ({len(tree)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
