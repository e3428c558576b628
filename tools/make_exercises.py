#!/usr/bin/env python3
"""Generate the student's files in chapters/ from the filled files in solutions/.

solutions/ is the single source. In it, a hole is a region

    // BEGIN SOLUTION
    ...the solution...
    // STUB
    //> ...what the student gets instead (with "//> " removed)...
    // END SOLUTION

Files without regions are copied as they are. A file with regions gets a first line saying it was
generated. Usage:

    tools/make_exercises.py            write chapters/ from solutions/
    tools/make_exercises.py --check    exit 1 if chapters/ differs from what would be written (CI)
"""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
BEGIN = re.compile(r"^(\s*)//\s*BEGIN SOLUTION\s*$")
STUB = re.compile(r"^\s*//\s*STUB\s*$")
END = re.compile(r"^\s*//\s*END SOLUTION\s*$")
STUB_LINE = re.compile(r"^(\s*)//>(?: (.*)|())$")
BANNER = "// Generated from {src} by tools/make_exercises.py. Fill the TODO(student) holes.\n"


class MarkerError(Exception):
    pass


def student_text(text, src_name):
    """Returns the student's version of a solution file's text, or the text itself if it has no holes."""
    out, state, region_line, stub_indent, holes = [], "code", 0, "", 0
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        where = f"{src_name}:{number}"
        if state == "code":
            m = BEGIN.match(line)
            if m:
                state, region_line, stub_indent = "solution", number, m.group(1)
                holes += 1
            elif STUB.match(line) or END.match(line):
                raise MarkerError(f"{where}: '{line.strip()}' outside a BEGIN SOLUTION region")
            elif STUB_LINE.match(line):
                raise MarkerError(f"{where}: '//>' stub line outside a STUB section")
            else:
                out.append(line)
        elif state == "solution":
            if BEGIN.match(line):
                raise MarkerError(f"{where}: BEGIN SOLUTION inside the region opened at line {region_line}")
            if END.match(line):
                raise MarkerError(f"{where}: region opened at line {region_line} has no '// STUB' section")
            if STUB.match(line):
                state = "stub"
        else:  # stub
            if END.match(line):
                state = "code"
                continue
            m = STUB_LINE.match(line)
            if not m:
                raise MarkerError(f"{where}: in a STUB section every line starts with '//>' (got '{line.strip()}')")
            body = m.group(2) if m.group(2) is not None else ""
            out.append((stub_indent + body).rstrip() + "\n" if body else "\n")
    if state != "code":
        raise MarkerError(f"{src_name}: region opened at line {region_line} is never closed with END SOLUTION")
    if holes == 0:
        return text, 0
    return BANNER.format(src=src_name) + "".join(out), holes


def plan(chapter_filter):
    """Yields (target path, expected text, holes) for every file of every chapter."""
    for chapter in sorted((ROOT / "solutions").iterdir()):
        if not chapter.is_dir() or (chapter_filter and chapter.name not in chapter_filter):
            continue
        for src in sorted(p for p in chapter.rglob("*") if p.is_file()):
            rel = src.relative_to(ROOT / "solutions")
            text, holes = student_text(src.read_text(), f"solutions/{rel}")
            yield ROOT / "chapters" / rel, text, holes


def stale_files(chapter_filter, expected):
    """Generated files in chapters/ whose solution source is gone."""
    for banner_file in (ROOT / "chapters").rglob("*"):
        if not banner_file.is_file() or banner_file in expected:
            continue
        if chapter_filter and banner_file.relative_to(ROOT / "chapters").parts[0] not in chapter_filter:
            continue
        try:
            first = banner_file.open().readline()
        except (UnicodeDecodeError, OSError):
            continue
        if first.startswith("// Generated from solutions/"):
            yield banner_file


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 on any difference")
    parser.add_argument("--chapter", action="append", help="only this chapter (NN_name); repeatable")
    args = parser.parse_args()
    try:
        files = list(plan(args.chapter))
    except MarkerError as e:
        print(f"make_exercises: {e}", file=sys.stderr)
        return 2
    expected = {path for path, _, _ in files}
    differ = []
    for path, text, holes in files:
        current = path.read_text() if path.exists() else None
        if current == text:
            continue
        differ.append(path)
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    stale = list(stale_files(args.chapter, expected))
    holes = sum(h for _, _, h in files)
    if args.check:
        for path in differ:
            print(f"make_exercises: {path.relative_to(ROOT)} differs from what solutions/ generates", file=sys.stderr)
        for path in stale:
            print(f"make_exercises: {path.relative_to(ROOT)} was generated but its solution is gone", file=sys.stderr)
        if differ or stale:
            print("make_exercises: run 'python3 tools/make_exercises.py' and commit chapters/", file=sys.stderr)
            return 1
        print(f"make_exercises: chapters/ is up to date ({len(files)} files, {holes} holes)")
        return 0
    for path in stale:
        print(f"make_exercises: warning: {path.relative_to(ROOT)} is stale (solution gone); remove it", file=sys.stderr)
    print(f"make_exercises: wrote {len(differ)} of {len(files)} files ({holes} holes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
