#!/usr/bin/env python3
"""Prove that wrong solutions fail: build each deliberately broken copy and run the tests that must
catch it.

A negative case is a student submission written as hole replacements, so that it survives any
change to the code outside the holes: tests/negative/<case>/case.json holds

    chapter        the chapter folder (06_ladder)
    base           "solutions" (every other hole filled) or "stubs" (every hole of the chapter unfilled)
    holes          [{file, hole, stub_contains, body}]: hole `hole` (1, 2, ... in file order, as
                   tools/make_exercises.py numbers them) of chapters/<chapter>/<file> gets `body`
                   (a string or a list of lines); `stub_contains` is a piece of that hole's stub, so a
                   renumbered hole is caught instead of silently breaking another one
    fail           the CTest names of the tests that must FAIL on this copy
    sanitize       optional: run those tests under this compute-sanitizer tool (COURSE_TEST_SMALL=1);
                   the tool must report an error
    gpu            whether the case needs a GPU (false: it runs in CI)
    class, what    what kind of bug it is, in words

Each chapter is first checked on the unbroken solutions (the control: the same tests must pass, and
be clean under the same sanitizer), so that a test that always fails cannot "catch" anything.

    tools/check_negatives.py                 the CPU cases (CI)
    tools/check_negatives.py --gpu           every case (tools/gpu_check.sh, on a GPU machine)
    tools/check_negatives.py --case 02_skeleton --build-dir build/neg

Exit codes: 0 every case was caught · 1 a case was not caught, or a control failed · 2 bad case files.
"""
import argparse
import fnmatch
import json
import os
import pathlib
import subprocess
import sys

# tools/ holds the package and make_exercises.py. A script finds them there; this line is for a
# module that loads this file by its path (tools/sync_snippets.py reads the cases through it).
if str(pathlib.Path(__file__).resolve().parent) not in sys.path:
    sys.path.append(str(pathlib.Path(__file__).resolve().parent))

import make_exercises as ME  # noqa: E402  (the one parser of holes)
from coursetools import ctest, sanitizer  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "negative"
SKIP_MARKERS = ("COURSE-NO-GPU", "COURSE-NO-MEMORY")


class CaseError(Exception):
    pass


def load_cases(names=None):
    cases = []
    for path in sorted(CASES.glob("*/case.json")):
        name = path.parent.name
        if names and name not in names:
            continue
        try:
            c = json.loads(path.read_text())
        except json.JSONDecodeError as e:
            raise CaseError(f"{path}: not valid JSON: {e}")
        for key in ("chapter", "fail", "gpu"):
            if key not in c:
                raise CaseError(f"{path}: '{key}' is missing")
        if c.get("base", "solutions") not in ("solutions", "stubs"):
            raise CaseError(f"{path}: 'base' must be \"solutions\" or \"stubs\"")
        if not isinstance(c["fail"], list) or not c["fail"]:
            raise CaseError(f"{path}: 'fail' must name at least one test")
        c["name"] = name
        cases.append(c)
    if names:
        unknown = set(names) - {c["name"] for c in cases}
        if unknown:
            raise CaseError(f"no such case: {', '.join(sorted(unknown))} (in {CASES})")
    return cases


def case_tree(case, course, solutions_dir):
    """{relative path: text} of the whole course tree with the case applied: every hole filled with
    its solution (or the chapter's holes left as stubs, base "stubs"), then the case's bodies."""
    tree = {}
    for rel, text in course.items():
        chapter = rel.split("/")[0]
        if not ME.holes(text):
            tree[rel] = text
            continue
        if case is not None and case.get("base") == "stubs" and chapter == case["chapter"]:
            bodies = {}
        else:
            bodies = {k: h.body for k, h in ME.solution_bodies((solutions_dir / rel).read_text(), rel).items()}
        for r in (case or {}).get("holes", []):
            if f"{case['chapter']}/{r['file']}" != rel:
                continue
            hs = ME.holes(text)
            k = r["hole"]
            if k not in hs:
                raise CaseError(f"{case['name']}: {rel} has no hole {k} (it has {len(hs)})")
            if r.get("stub_contains") and r["stub_contains"] not in hs[k].body:
                raise CaseError(f"{case['name']}: hole {k} of {rel} no longer holds '{r['stub_contains']}': "
                                "were the holes renumbered? Update the case.")
            body = r["body"] if isinstance(r["body"], str) else "\n".join(r["body"]) + "\n"
            bodies[k] = body
        tree[rel] = ME.fill(text, bodies)
    for r in (case or {}).get("holes", []):
        if f"{case['chapter']}/{r['file']}" not in course:
            raise CaseError(f"{case['name']}: {case['chapter']}/{r['file']} is not a course file with holes")
    return tree


def rounds(cases):
    """The cases in groups of at most one per chapter, in their order: a group's cases are applied
    and built together (tools/check_negatives.py's main loop)."""
    pending, groups = list(cases), []
    while pending:
        group, chapters, rest = [], set(), []
        for c in pending:
            (rest if c["chapter"] in chapters else group).append(c)
            chapters.add(c["chapter"])
        groups.append(group)
        pending = rest
    return groups


def write_tree(tree, staging):
    for rel, text in tree.items():
        target = staging / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.is_file() or target.read_text() != text:
            target.write_text(text)


def run(cmd, log, env=None, timeout=None, cwd=None):
    with open(log, "a") as f:
        f.write(f"\n$ {' '.join(cmd)}\n")
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                               env=dict(os.environ, **(env or {})), timeout=timeout, cwd=cwd)
        except FileNotFoundError:
            f.write(f"(cannot run {cmd[0]}: not found)\n")
            return -2, f"cannot run {cmd[0]}: not found"
        except subprocess.TimeoutExpired as e:
            out = e.stdout if isinstance(e.stdout, str) else (e.stdout or b"").decode("utf-8", "replace")
            f.write(out + "\n(timed out)\n")
            return -1, out + "\n(timed out)"
        f.write(p.stdout)
        return p.returncode, p.stdout


def test_commands(build, log):
    code, out = run(["ctest", "--test-dir", str(build), "--show-only=json-v1"], log)
    return {name: (t.command, t.cwd) for name, t in ctest.listing(out).items()}


def run_tests(case, globs, commands, log, sanitize=None):
    """[(test name, outcome)] with outcome "failed", "passed" or "skipped: ..."."""
    names = [n for n in commands if any(fnmatch.fnmatchcase(n, g) for g in globs)]
    missing = [g for g in globs if not any(fnmatch.fnmatchcase(n, g) for n in names)]
    if missing:
        raise CaseError(f"{case}: no test is named like {', '.join(missing)} (renamed?)")
    results = []
    for name in names:
        cmd, cwd = commands[name]
        env = {}
        if sanitize:
            cmd = sanitizer.command(sanitizer.find() or sanitizer.DEFAULT_PATH, sanitize, cmd)
            env["COURSE_TEST_SMALL"] = "1"
        code, out = run(cmd, log, env=env, timeout=1800, cwd=cwd)
        marker = next((m for m in SKIP_MARKERS if m in out), None)
        if code == -2:
            results.append((name, f"not run: {out}"))
        elif marker:
            results.append((name, f"skipped: {marker}"))
        else:  # under a sanitizer, 99 is the tool's error and anything else non-zero the test's
            results.append((name, "passed" if code == 0 else "failed"))
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpu", action="store_true", help="run the GPU cases too (needs a GPU)")
    ap.add_argument("--case", action="append", help="only this case (repeatable)")
    ap.add_argument("--build-dir", default=str(ROOT / "build" / "negatives"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--cmake-arg", action="append", default=[], help="extra configure argument (repeatable)")
    ap.add_argument("--no-control", action="store_true", help="skip the controls on the unbroken solutions")
    args = ap.parse_args()
    if not (ROOT / "solutions").is_dir():
        print("check_negatives: needs solutions/ (the maintainers' checkout)", file=sys.stderr)
        return 2
    try:
        cases = [c for c in load_cases(args.case) if args.gpu or not c["gpu"]]
        course = ME.course_files(ROOT)
        for c in cases:  # find stale cases before building anything
            case_tree(c, course, ROOT / "solutions")
    except (CaseError, ME.MarkerError) as e:
        print(f"check_negatives: {e}", file=sys.stderr)
        return 2
    if not cases:
        print("check_negatives: no case to run")
        return 0
    build = pathlib.Path(args.build_dir).resolve()
    staging = build / "tree"
    log = build / "check_negatives.log"
    build.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    write_tree(case_tree(None, course, ROOT / "solutions"), staging)
    code, _ = run(["cmake", "-S", str(ROOT), "-B", str(build), f"-DCOURSE_TREE={staging}",
                   "-DCMAKE_BUILD_TYPE=Release"] + args.cmake_arg, log)
    if code != 0:
        print(f"check_negatives: configure failed (see {log})", file=sys.stderr)
        return 1
    rows, bad = [], 0

    def build_chapters(chapters):
        targets = [f"test_{chapter}" for chapter in chapters]
        # a chapter's tests on a model of the CUDA runtime are a program of their own (cmake/Course.cmake)
        targets += [f"test_{chapter}_host_calls" for chapter in chapters
                    if (ROOT / "tests" / f"test_{chapter}_host_calls.cpp").is_file()]
        return run(["cmake", "--build", str(build), "-j", str(args.jobs), "--target"] + targets, log)[0] == 0

    def build_chapter(chapter):
        return build_chapters([chapter])

    if not args.no_control:
        control_chapters = sorted({c["chapter"] for c in cases})
        write_tree(case_tree(None, course, ROOT / "solutions"), staging)
        all_built = build_chapters(control_chapters)  # one call: both cores busy from the start
        for chapter in control_chapters:
            if not all_built and not build_chapter(chapter):
                rows.append((f"control {chapter}", "the solutions", "", "FAIL: does not build"))
                bad += 1
                continue
            commands = test_commands(build, log)
            for sanitize in sorted({c.get("sanitize") or "" for c in cases if c["chapter"] == chapter}):
                globs = sorted({g for c in cases if c["chapter"] == chapter and (c.get("sanitize") or "") == sanitize
                                for g in c["fail"]})
                results = run_tests(f"control {chapter}", globs, commands, log, sanitize or None)
                wrong = [f"{n}: {o}" for n, o in results if o != "passed"]
                label = f"control {chapter}" + (f" ({sanitize})" if sanitize else "")
                rows.append((label, "the solutions pass the tests below", f"{len(results)} tests",
                             "ok" if not wrong else "FAIL: " + "; ".join(wrong)))
                bad += bool(wrong)
    results_by_case = {}
    for group in rounds(cases):
        # The group's broken copies go into the tree together (one per chapter: a chapter's test
        # program is built from its own files and the kit only), and their chapters are rebuilt in
        # one call, so that both cores have a file to compile.
        merged = case_tree(None, course, ROOT / "solutions")
        for c in group:
            tree = case_tree(c, course, ROOT / "solutions")
            merged.update({rel: text for rel, text in tree.items() if rel.split("/")[0] == c["chapter"]})
        write_tree(merged, staging)
        # Without --gpu (CI), a case caught only by the hole scan (a CTest that reads the sources) is
        # not built: the scan sees the spliced tree as written, and CI's time goes to rebuilding
        # chapters. With --gpu (tools/gpu_check.sh, every case) it is built too, so a case that
        # would not compile is still found.
        to_build = [c for c in group
                    if args.gpu or not all(t.startswith(f"ch{c['chapter'][:2]} integrity:") for t in c["fail"])]
        built = {c["name"] for c in group} - {c["name"] for c in to_build}
        if to_build and build_chapters([c["chapter"] for c in to_build]):
            built |= {c["name"] for c in to_build}
        else:  # one chapter broke the build: find which, one at a time (the others are up to date)
            built |= {c["name"] for c in to_build if build_chapters([c["chapter"]])}
        commands = test_commands(build, log)
        for c in group:
            print(f"[check_negatives] {c['name']}", file=sys.stderr, flush=True)
            if c["name"] not in built:
                results_by_case[c["name"]] = (c.get("class", ""), "", f"FAIL: the broken copy does not build (see {log})")
                continue
            results = run_tests(c["name"], c["fail"], commands, log, c.get("sanitize"))
            missed = [f"{n}: {o}" for n, o in results if o != "failed"]
            caught_by = "; ".join(n for n, o in results if o == "failed") + (
                f" (under compute-sanitizer {c['sanitize']})" if c.get("sanitize") else "")
            results_by_case[c["name"]] = (c.get("class", ""), caught_by,
                                          "caught" if not missed else "NOT CAUGHT: " + "; ".join(missed))
            print(f"[check_negatives] {c['name']}: {results_by_case[c['name']][2]} ({caught_by or 'no test failed'})",
                  file=sys.stderr, flush=True)
    for c in cases:  # the table in the cases' order
        rows.append((c["name"],) + results_by_case[c["name"]])
        bad += rows[-1][3] != "caught"
    write_tree(case_tree(None, course, ROOT / "solutions"), staging)  # leave the tree unbroken
    print("\n| case | class | caught by | result |\n| --- | --- | --- | --- |")
    for row in rows:
        print("| " + " | ".join(x.replace("|", "/") for x in row) + " |")
    caught = sum(1 for r in rows if r[3] == "caught")
    print(f"\ncheck_negatives: {caught} of {len(cases)} cases caught; {bad} problem(s); log: {log}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
