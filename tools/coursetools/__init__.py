"""The course's tools as a package: the grader and what the other tools share.

    junit      CTest's JUnit file: test results, skip markers, failure excerpts, the one-line summary
    ctest      CTest's console and listing, and running CTest with a time limit per test
    catchrun   a chapter's Catch2 program once for all its cases, read as CTest reads each
    testrun    the grader's test step: the batches, CTest for the rest, one JUnit file
    limits     per-test time limits from the reference solution's times (test_times.json)
    sanitizer  compute-sanitizer: finding it, its command, reading its log, the verdict on a run
    proc       running a command with its output logged
    manifest   the grading manifests, tools/grading/NN_name.json
    scoring    graded items, correctness points, the grade and its totals
    perf       performance rules: the chapter executable's CSV, repeated runs
    report     report.md, results.json (Gradescope) and the console summary
    splice     the student's hole bodies spliced into the course's own files
    cli        tools/grade's command line and its steps on the machine

The commands keep their paths (tools/grade, tools/sanitizer_log.py, tools/test_summary.py,
tools/check_negatives.py) as thin shims; run from tools/, or with tools/ on sys.path, every module
imports normally. Standard library only: only cli, proc, ctest, catchrun, testrun and the runner in
perf start processes.
"""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
MANIFEST_DIR = REPO / "tools" / "grading"
