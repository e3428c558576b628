#!/usr/bin/env python3
"""Every hole has a test that checks it without a GPU (issue 39): list them, fail on a gap.

The holes are the BEGIN SOLUTION regions of solutions/ (tools/make_exercises.py numbers them per
file, 1, 2, ...). A test checks hole N of chapter NN_name's FILE without a GPU when, in
tests/test_NN_name.cpp, it carries the Catch2 tag `[hole:FILE:N]`:

    TEST_CASE("ch06 v11 player: ...", "[ch06][exercise][hole:dot.cu:4]") { ... }

and is a host test: its tags are string literals without `[gpu]`, and its body never calls
COURSE_REQUIRE_GPU. The tags are the one registry; this script only reads them. A hole's TODO must
name at least one of its host tests (as `ch06 v11 player: *` or the full name), so that a hole that
was renumbered cannot keep a tag that now points at another hole.

Holes still without a host test are listed in tests/host_holes.json, each with its reason:
"pending" (a host check is possible and not written yet) or "no_host_check" (none can be
meaningful; the reason says why). Strict mode fails on a hole that has no host test and is not
listed, on a listed hole that has one (the list only shrinks), on a tag that names no hole, on a
tagged test that needs a GPU, and on a hole whose TODO names none of its host tests.

    tools/check_host_holes.py            strict (CI); exit 1 on any problem
    tools/check_host_holes.py --list     every hole with its host tests, or its listed reason

Importable: holes_without_host_check(root) -> [(hole key, kind, reason)] (tools/progress).
"""
import argparse
import fnmatch
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT / "tools") not in sys.path:
    sys.path.append(str(ROOT / "tools"))

import make_exercises as ME  # noqa: E402  (the one parser of holes)

REGISTRY = pathlib.Path("tests") / "host_holes.json"
HOLE_TAG = re.compile(r"\[hole:([^\]:]+):(\d+)\]")
KINDS = ("pending", "no_host_check")


def hole_list(root):
    """{"06_ladder/dot.cu:4": stub text} for every hole of solutions/, in file order."""
    out = {}
    for path in sorted((root / "solutions").glob("[0-9][0-9]_*/*")):
        if not path.is_file() or path.suffix not in (".cu", ".cuh", ".hpp", ".cpp", ".h"):
            continue
        text = path.read_text()
        rel = path.relative_to(root / "solutions").as_posix()
        student, _ = ME.student_text(text, rel)
        for k, h in ME.holes(student).items():
            out[f"{rel}:{k}"] = h.body
    return out


def _skip_string(text, i):
    """Index just past the string literal opening at text[i] (a '"')."""
    j = i + 1
    while j < len(text) and text[j] != '"':
        j += 2 if text[j] == "\\" else 1
    return j + 1


def _args(text, open_paren):
    """The top-level arguments of the call whose '(' is at open_paren, and the index past ')'."""
    args, depth, start, i = [], 0, open_paren + 1, open_paren + 1
    while i < len(text):
        c = text[i]
        if c == '"':
            i = _skip_string(text, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                args.append(text[start:i])
                return args, i + 1
            depth -= 1
        elif c == "," and depth == 0:
            args.append(text[start:i])
            start = i + 1
        i += 1
    return args, len(text)


LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')


def _literal(expr):
    """(the concatenated text of expr's string literals, whether expr is literals only)."""
    parts = LITERAL.findall(expr)
    rest = LITERAL.sub("", expr).strip()
    return "".join(parts), rest == ""


def _body(text, at):
    """The brace-matched body of the first '{' at or after `at`."""
    i = text.find("{", at)
    if i < 0:
        return ""
    depth, j = 0, i
    while j < len(text):
        c = text[j]
        if c == '"':
            j = _skip_string(text, j)
            continue
        if text.startswith("//", j):
            j = text.find("\n", j)
            j = len(text) if j < 0 else j
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[i:j + 1]
        j += 1
    return text[i:]


def tagged_tests(root):
    """[(hole key, test name, problem or "")] for every `[hole:FILE:N]` tag in tests/test_*.cpp."""
    found = []
    for path in sorted((root / "tests").glob("test_[0-9][0-9]_*.cpp")):
        chapter = path.stem[len("test_"):]
        chapter = chapter[:-len("_host_calls")] if chapter.endswith("_host_calls") else chapter  # its own program
        text = path.read_text()
        for m in re.finditer(r"\b(TEST_CASE|add_case)\s*\(", text):
            args, end = _args(text, m.end() - 1)
            if len(args) < 2:
                continue
            name, name_literal = _literal(args[0])
            tags, tags_literal = _literal(args[1])
            holes = HOLE_TAG.findall(tags) if tags_literal else HOLE_TAG.findall(args[1])
            if not holes:
                continue
            if not name_literal:
                name = LITERAL.sub(lambda s: s.group(1), args[0]).strip()
            where = f"{path.relative_to(root).as_posix()}:{text.count(chr(10), 0, m.start()) + 1}"
            body = _body(text, end if m.group(1) == "TEST_CASE" else m.end() + len(",".join(args[:2])))
            problem = ""
            if not tags_literal:
                problem = f"{where}: a hole tag needs tags written as string literals only (to see there is no [gpu])"
            elif "[gpu]" in tags:
                problem = f"{where}: '{name}' is tagged [gpu]: a hole's host check must run without a GPU"
            elif "COURSE_REQUIRE_GPU" in body:
                problem = f"{where}: '{name}' calls COURSE_REQUIRE_GPU: a hole's host check must run without a GPU"
            for file, k in holes:
                found.append((f"{chapter}/{file}:{k}", name, problem))
    return found


def _todo_names(stub, test):
    """Whether a hole's TODO names `test`: its full name, or a pattern `chNN ...*` that matches it."""
    flat = " ".join(line.strip().lstrip("/").strip() for line in stub.splitlines())
    flat = re.sub(r"\s+", " ", flat)
    if test in flat:
        return True
    for pat in re.findall(r"(ch\d\d [^`\"*]*\*)", flat):
        pat = pat.strip()
        if fnmatch.fnmatchcase(test, pat) or fnmatch.fnmatchcase(test, pat.replace(" *", "*")):
            return True
    return False


def load_registry(root):
    path = root / REGISTRY
    if not path.is_file():
        return {k: {} for k in KINDS}
    data = json.loads(path.read_text())
    return {k: data.get(k, {}) for k in KINDS}


def survey(root=ROOT):
    """(holes {key: stub}, host tests {key: [names]}, registry, problems [str])."""
    root = pathlib.Path(root)
    holes = hole_list(root)
    tests, problems = {}, []
    for key, name, problem in tagged_tests(root):
        if problem:
            problems.append(problem)
            continue
        if key not in holes:
            problems.append(f"'{name}' is tagged for {key}, which is not a hole (holes are numbered per file, from 1)")
            continue
        tests.setdefault(key, []).append(name)
    registry = load_registry(root)
    listed = {}
    for kind in KINDS:
        for key, reason in registry[kind].items():
            if key not in holes:
                problems.append(f"{REGISTRY}: {kind} lists {key}, which is not a hole")
            elif key in listed:
                problems.append(f"{REGISTRY}: {key} is listed twice")
            else:
                listed[key] = (kind, reason)
    for key, stub in holes.items():
        if key in tests:
            if key in listed:
                problems.append(f"{REGISTRY}: {key} has a host test now ({tests[key][0]}): take it off the list")
            if not any(_todo_names(stub, t) for t in tests[key]):
                problems.append(f"{key}: its TODO names none of its host tests ({'; '.join(tests[key])}): "
                                "name one (a renumbered hole?)")
        elif key not in listed:
            problems.append(f"{key}: no host test checks it (tag one [hole:{key.split('/', 1)[1]}]) "
                            f"and {REGISTRY} does not list it")
    return holes, tests, listed, problems


def holes_without_host_check(root=ROOT):
    """[(hole key "NN_name/FILE:N", kind "pending"/"no_host_check"/"unlisted", reason)] for every
    hole that no host test checks, in file order."""
    holes, tests, listed, _ = survey(root)
    return [(key,) + listed.get(key, ("unlisted", "")) for key in holes if key not in tests]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--list", action="store_true", help="every hole with its host tests or its reason")
    ap.add_argument("--root", default=str(ROOT), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    root = pathlib.Path(args.root)
    holes, tests, listed, problems = survey(root)
    if args.list:
        for key in holes:
            if key in tests:
                print(f"{key:28} host: {'; '.join(tests[key])}")
            elif key in listed:
                print(f"{key:28} {listed[key][0]}: {listed[key][1]}")
            else:
                print(f"{key:28} MISSING")
    covered = sum(1 for k in holes if k in tests)
    by_kind = {kind: sum(1 for v in listed.values() if v[0] == kind) for kind in KINDS}
    for p in problems:
        print(p)
    print(f"host checks: {covered} of {len(holes)} holes; {by_kind['pending']} pending, "
          f"{by_kind['no_host_check']} without a possible host check ({REGISTRY})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
