#!/usr/bin/env python3
"""Generate the student's files in chapters/ from the filled files in solutions/.

solutions/ is the single source. In it, a hole is a region

    // BEGIN SOLUTION
    ...the solution...
    // STUB
    //> ...what the student gets instead (with "//> " removed)...
    // END SOLUTION

Files without regions are copied as they are. A file with regions gets a first line saying it was
generated, and each stub sits between two marker lines, `// [hole N begin]` and `// [hole N end]`
(N counts the file's holes from 1): the grader takes what a student wrote between them and nothing
else (tools/grade splices it into the course's own copy of the file). Usage:

    tools/make_exercises.py            write chapters/ from solutions/
    tools/make_exercises.py --check    exit 1 if chapters/ differs from what would be written (CI)

Importable (tools/grade, tools/check_negatives.py): holes(text), solution_bodies(text),
splice(course_text, student_text, name), student_text(text, name), course_files(root).
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
BANNER = ("// Generated from {src} by tools/make_exercises.py. Fill the TODO(student) holes: your code\n"
          "// goes between each `// [hole N begin]` and `// [hole N end]` line (keep those lines). Only that\n"
          "// code is graded; the rest of the file is taken from the course.\n")
HOLE_BEGIN = re.compile(r"^\s*//\s*\[hole (\d+) begin\]\s*$")
HOLE_END = re.compile(r"^\s*//\s*\[hole (\d+) end\]\s*$")
HOLE_MARK = "{indent}// [hole {k} {which}]\n"


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
                out.append(HOLE_MARK.format(indent=stub_indent, k=holes, which="begin"))
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
                out.append(HOLE_MARK.format(indent=stub_indent, k=holes, which="end"))
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


# ------------------------------------------------------------------------------------------
# The hole API: what the grader and the negative cases use (one parser of holes, not two).
# ------------------------------------------------------------------------------------------

class Hole:
    """One hole of a student-format file: its number (1, 2, ... in file order), the 1-based lines
    of its begin and end markers, and the text between them (the stub, or the student's code)."""

    def __init__(self, index, begin_line, end_line, body):
        self.index, self.begin_line, self.end_line, self.body = index, begin_line, end_line, body

    def __repr__(self):
        return f"Hole({self.index}, lines {self.begin_line}-{self.end_line})"


def holes(text):
    """The holes of a student-format file, by their markers, as {index: Hole}. A marker that is
    missing, repeated or out of order leaves its hole out: the caller treats it as unfilled."""
    found, open_at, lines = {}, {}, text.splitlines(keepends=True)
    broken = set()
    for number, line in enumerate(lines, start=1):
        m = HOLE_BEGIN.match(line)
        if m:
            k = int(m.group(1))
            if k in open_at or k in found:
                broken.add(k)
            broken.update(open_at)  # the previous hole lost its end marker
            open_at.clear()
            open_at[k] = number
            continue
        m = HOLE_END.match(line)
        if m:
            k = int(m.group(1))
            start = open_at.pop(k, None)
            if start is None or k in found or open_at:  # an end without its begin, or holes nested
                broken.add(k)
                open_at.clear()
                continue
            found[k] = Hole(k, start, number, "".join(lines[start:number - 1]))
    for k in broken | set(open_at):
        found.pop(k, None)
    return found


def solution_bodies(text, src_name="solution"):
    """The filled bodies of a solutions/ file's regions, as {index: Hole} (the same numbering as
    the holes of the student file generated from it)."""
    out, state, k, start, lines = {}, "code", 0, 0, text.splitlines(keepends=True)
    for number, line in enumerate(lines, start=1):
        if state == "code" and BEGIN.match(line):
            state, k, start = "solution", k + 1, number
        elif state == "solution" and STUB.match(line):
            out[k] = Hole(k, start, number, "".join(lines[start:number - 1]))
            state = "stub"
        elif state == "stub" and END.match(line):
            state = "code"
    if state != "code":
        raise MarkerError(f"{src_name}: region {k} is never closed")
    return out


def bodies_of(text, src_name="file"):
    """Hole bodies of any copy of a file: a solutions/ file (BEGIN SOLUTION regions) or a
    student-format file (hole markers)."""
    if any(BEGIN.match(line) for line in text.splitlines()):
        return solution_bodies(text, src_name)
    return holes(text)


class Splice:
    """What splice() made: the text to compile, and what it had to leave out."""

    def __init__(self, text, outside, missing, filled):
        self.text = text          # the course's file with the student's hole bodies
        self.outside = outside    # [(line in the student's file, what differs)] outside the holes
        self.missing = missing    # hole numbers whose markers were missing: taken as the stub
        self.filled = filled      # hole numbers whose body differs from the stub


def _without_holes(text, hs):
    """The lines outside the holes (markers kept), each with its 1-based line number."""
    inside = set()
    for h in hs.values():
        inside.update(range(h.begin_line + 1, h.end_line))
    return [(n, line.rstrip()) for n, line in enumerate(text.splitlines(), start=1) if n not in inside]


def fill(course_text, bodies):
    """The course's student-format file with hole k's stub replaced by bodies[k] (holes not in
    `bodies` keep their stub)."""
    course_holes = holes(course_text)
    lines = course_text.splitlines(keepends=True)
    out, at = [], 0
    for k in sorted(course_holes):
        h = course_holes[k]
        out += lines[at:h.begin_line]
        body = bodies.get(k, h.body)
        if body and not body.endswith("\n"):
            body += "\n"
        out.append(body)
        at = h.end_line - 1
    out += lines[at:]
    return "".join(out)


def splice(course_text, student_text, name="file"):
    """The course's student-format file with the student's hole bodies in place of its stubs.
    Everything outside the holes comes from the course; each line of the student's file that
    differs from the course outside a hole is listed (so a report can name it)."""
    import difflib
    course_holes = holes(course_text)
    theirs = bodies_of(student_text, name) if student_text is not None else {}
    missing = sorted(k for k in course_holes if k not in theirs)
    text = fill(course_text, {k: h.body for k, h in theirs.items()})
    filled = [k for k in sorted(course_holes) if k in theirs and theirs[k].body.strip() != course_holes[k].body.strip()]
    outside = []
    if student_text is not None and not any(BEGIN.match(x) for x in student_text.splitlines()):
        a = _without_holes(course_text, course_holes)
        b = _without_holes(student_text, holes(student_text))
        sm = difflib.SequenceMatcher(a=[x for _, x in a], b=[x for _, x in b], autojunk=False)
        for op, i1, i2, j1, j2 in sm.get_opcodes():
            if op == "equal":
                continue
            if j2 > j1:
                first, last = b[j1][0], b[j2 - 1][0]
                span = f"line {first}" if first == last else f"lines {first}-{last}"
                verb = "added" if op == "insert" else "changed"
                outside.append((first, f"{span} {verb}: {b[j1][1].strip()[:80]}"))
            else:
                where = b[j1][0] if j1 < len(b) else (b[-1][0] + 1 if b else 1)
                outside.append((where, f"removed {i2 - i1} course line(s), first: {a[i1][1].strip()[:80]}"))
    return Splice(text, outside, missing, filled)


def course_files(root=ROOT):
    """{path relative to chapters/: the course's student-format text} for every chapter file that
    solutions/ generates. In a student distribution (no solutions/), the shipped templates in
    tools/grading/course/ are the course's copy."""
    root = pathlib.Path(root)
    files = {}
    if (root / "solutions").is_dir():
        for chapter in sorted((root / "solutions").iterdir()):
            if not chapter.is_dir():
                continue
            for src in sorted(p for p in chapter.rglob("*") if p.is_file()):
                rel = src.relative_to(root / "solutions")
                files[str(rel)] = student_text(src.read_text(), f"solutions/{rel}")[0]
    else:
        templates = root / "tools" / "grading" / "course"
        for src in sorted(p for p in templates.rglob("*") if p.is_file()):
            rel = src.relative_to(templates)
            if len(rel.parts) > 1:  # chapter folders only (not the folder's README.md)
                files[str(rel)] = src.read_text()
    return files


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
