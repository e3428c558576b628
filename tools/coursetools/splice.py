"""The splice: only the student's hole bodies are theirs; everything else comes from the course.
tools/make_exercises.py finds the holes (nothing parses them twice)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from . import REPO


def load_make_exercises():
    """tools/make_exercises.py, the one parser of holes (imported, never copied)."""
    import make_exercises  # tools/, where this package lives, is on sys.path
    return make_exercises


@dataclass
class Staged:
    lines: List[str]                          # for the report, one line each
    outside: List[Tuple[str, int, str]]       # (file, line, what) edits outside holes
    missing: List[Tuple[str, int]]            # (file, hole) taken as the stub: markers gone
    filled: int = 0                           # holes whose body differs from the stub
    holes: int = 0


def stage_tree(tree_dir: Path, staging: Path, course: Dict[str, str], me=None, strict: bool = False,
               chapters: Optional[Sequence[str]] = None) -> Staged:
    """Writes into `staging` the course's copy of every chapter file, with the hole bodies of the
    file of the same path in `tree_dir` spliced in. Files without holes, and every line outside a
    hole, are the course's. Files are rewritten only when their text changes (no needless rebuild).
    `chapters` (folder names): only these are graded, so only their holes, edits and files are
    counted and reported (every chapter is still written: the build needs them all)."""
    me = me or load_make_exercises()
    st = Staged([], [], [])

    def graded(rel: str) -> bool:
        return chapters is None or rel.split("/")[0] in chapters

    for rel, course_text in sorted(course.items()):
        target = staging / rel
        text = course_text
        hs = me.holes(course_text)
        if hs:
            src = tree_dir / rel
            theirs = src.read_text(encoding="utf-8", errors="replace") if src.is_file() else None
            sp = me.splice(course_text, theirs, rel)
            text = sp.text
        if hs and graded(rel):
            st.holes += len(hs)
            st.filled += len(sp.filled)
            if theirs is None:
                st.lines.append(f"`{rel}`: missing from the tree; its {len(hs)} hole(s) count as unfilled")
            for k in sp.missing if theirs is not None else []:
                st.missing.append((rel, k))
            for line, what in sp.outside:
                st.outside.append((rel, line, what))
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.is_file() or target.read_text(encoding="utf-8", errors="replace") != text:
            target.write_text(text, encoding="utf-8")
    extra = sorted(str(p.relative_to(tree_dir)) for p in tree_dir.rglob("*")
                   if p.is_file() and str(p.relative_to(tree_dir)) not in course
                   and p.suffix in (".cu", ".cuh", ".cpp", ".hpp", ".h", ".c"))
    course_chapters = {rel.split("/")[0] for rel in course}
    # Drivers (main.cpp, main_mpi.cpp, ...: chapter files no solution generates) are always built
    # from the course's chapters/ folder, so a tree's copy of one is not worth a line in the report.
    extra = [e for e in extra if e.split("/")[0] in course_chapters and not (REPO / "chapters" / e).is_file()
             and graded(e)]
    of = "" if chapters is None else " of " + ", ".join(sorted(chapters))
    st.lines.insert(0, f"built from the course's own files with only the tree's hole bodies spliced in "
                       f"({st.filled} of {st.holes} holes{of} differ from the stub)")
    for rel, k in st.missing:
        st.lines.append(f"`{rel}` hole {k}: its `// [hole {k} begin]`/`// [hole {k} end]` markers are missing "
                        "or broken, so it counts as unfilled (the stub)")
    for rel, line, what in st.outside:
        verdict = "refused (--strict)" if strict else "neutralised (the course's code was used)"
        st.lines.append(f"`{rel}:{line}`: edit outside the holes, {verdict}: {what}")
    for e in extra:
        st.lines.append(f"`{e}`: not a course file; ignored")
    return st
