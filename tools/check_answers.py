#!/usr/bin/env python3
"""No answer within reach: for every hole of the course, look for its solution body where a student
of that chapter can read it, and report each place that shows it.

    tools/check_answers.py              every chapter; exit 1 when any hole's answer is shown
    tools/check_answers.py 06 07        some chapters (number or name)
    tools/check_answers.py --report     list every finding, exit 0 (informative)

Where a student looks (for the holes of chapter C):
  - every fenced code block of C's README.md and APPENDIX.md;
  - C's own student files, outside their holes (a neighbouring function, a header);
  - the kit (common/), which every chapter ships and includes; a kit file's copy of a primitive
    may answer the holes of the one chapter its header names ("taught in chapter NN": the chapter
    that graduates it), and no other chapter's.
A place shows a hole's answer when it holds the body's tokens (comments dropped, spacing ignored)
exactly, or with one token changed, added or removed, or (outside the lesson's code blocks, for
bodies of MIN_RENAMED_TOKENS or more) with its names consistently renamed, most kept, and one
token changed: "a one-line variant" (another name for one variable, `+` for `-`). In a code block of the lesson (README.md, APPENDIX.md) a renamed copy counts
too: a block holding SHAPE_FAIL or more of the body's shape (names aside: similarity()). Bodies of fewer than MIN_TOKENS tokens are not searched: any code holds a
`return s;`. A hole whose answer the lesson must show after the exercise goes in a folded block
that `<!-- answer-after: exercise N -->` precedes, which this check leaves out.

Exit codes: 0 nothing found (or --report) · 1 an answer within reach · 2 bad arguments.
"""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import make_exercises  # noqa: E402

MIN_TOKENS = 12
MIN_RENAMED_TOKENS = 20  # a renamed copy of a shorter body is any call with the same arguments
SHAPE_FAIL = 0.85  # share of an answer's shape that a lesson's code block may not hold
ANSWER_AFTER = re.compile(r"<!--\s*answer-after:\s*exercise\s+\d+\s*-->")
TOKEN = re.compile(r"""
    "(?:\\.|[^"\\])*"            # a string literal
  | '(?:\\.|[^'\\])*'            # a character literal
  | [A-Za-z_]\w*                 # a name or keyword
  | \d[\w.']*                    # a number (with suffixes and separators)
  | <<=|>>=|->\*|\.\.\.|::|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^!=<>]=
  | \S                           # any other one character
""", re.VERBOSE)
COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


def tokens(code):
    return TOKEN.findall(COMMENT.sub(" ", code))


def one_edit_apart(a, b):
    """True when the token lists a and b are equal or one substitution, insertion or deletion apart."""
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b)) <= 1
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    return a[i:] == b[i + 1:]


def find_variant(body, text_tokens):
    """The start of a window of text_tokens one edit or less from body, or None. A window one edit
    from the body matches one of the body's halves exactly (pigeonhole), so only the places where a
    half occurs are compared in full."""
    n = len(body)
    half = n // 2
    heads, tails = body[:half], body[half:]
    joined = "\x00".join(text_tokens)

    def occurrences(part):
        needle = "\x00".join(part)
        pos = joined.find(needle)
        while pos != -1:
            if pos == 0 or joined[pos - 1] == "\x00":
                yield joined.count("\x00", 0, pos)
            pos = joined.find(needle, pos + 1)

    for where in occurrences(heads):
        for length in (n - 1, n, n + 1):
            if one_edit_apart(body, text_tokens[where:where + length]):
                return where
    for where in occurrences(tails):
        for length in (n - 1, n, n + 1):
            start = where + len(tails) - length
            if start >= 0 and one_edit_apart(body, text_tokens[start:start + length]):
                return start
    return None


KEEP_NAMES = {"if", "else", "for", "while", "return", "const", "auto", "unsigned", "int", "float", "double",
              "bool", "void", "static", "__syncthreads", "__shared__", "true", "false", "std", "size_t",
              "template", "typename", "struct", "class", "using", "nullptr"}


def erase_names(toks):
    """Tokens with every name but the keywords replaced by one placeholder."""
    return ["\x01" if re.match(r"[A-Za-z_]\w*$", t) and t not in KEEP_NAMES else t for t in toks]


def kept_names(body, window):
    """Whether at least half of the body's distinct names (keywords aside) are in the window too:
    a transliteration keeps most of the names it calls (shfl_down, kWarp, ...); a call with every
    name different is only the shape of any call."""
    names = {t for t in body if re.match(r"[A-Za-z_]\w*$", t) and t not in KEEP_NAMES}
    return not names or 2 * len(names & set(window)) >= len(names)


def find_renamed(body, text_tokens):
    """The start of a window of text_tokens that is the body with its names consistently renamed
    (one name for another wherever it occurs: `v` for `value`, at least half of its names kept) and
    at most one other token changed, added or removed; None when there is none. Candidates are the windows one edit from the body
    with every name erased; each is then compared by shape (the same names in the same places)."""
    erased_text = erase_names(text_tokens)
    erased_body = erase_names(body)
    want = shape(body)
    start, seen = 0, set()
    while True:
        at = find_variant(erased_body, erased_text[start:])
        if at is None:
            return None
        at += start
        for length in (len(body) - 1, len(body), len(body) + 1):
            window = text_tokens[at:at + length]
            if (at, length) not in seen and one_edit_apart(want, shape(window)) and kept_names(body, window):
                return at
            seen.add((at, length))
        start = at + 1


def shape(toks):
    """Tokens with every name replaced by the distance back to its previous use (`N@7`; `N@new` at
    its first): the same code with other names has the same shape, wherever it starts. Keywords
    and built-in types stay."""
    keep = KEEP_NAMES
    last, out = {}, []
    for k, t in enumerate(toks):
        if re.match(r"[A-Za-z_]\w*$", t) and t not in keep:
            out.append(f"N@{k - last[t]}" if t in last else "N@new")
            last[t] = k
        else:
            out.append(t)
    return out


def similarity(body, text_tokens):
    """(share of the body's tokens, 0 to 1, that a window of text_tokens matches in order, by
    shape, in runs of 4 tokens or more; the window's start). The window is twice the body long
    and moves by a quarter of it."""
    import difflib
    n = len(body)
    want = shape(body)
    best, where = 0.0, 0
    step = max(1, n // 4)
    for start in range(0, max(1, len(text_tokens) - n // 2), step):
        window = shape(text_tokens[start:start + 2 * n])
        m = difflib.SequenceMatcher(None, want, window, autojunk=False)
        got = sum(b.size for b in m.get_matching_blocks() if b.size >= 4)
        if got / n > best:
            best, where = got / n, start
    return best, where


def near_answers(chapters, threshold, root=ROOT):
    """[(chapter, file, hole, where, share)] of places whose code has the shape of a hole's answer
    for at least `threshold` of its tokens: a report for authors, not a verdict."""
    out = []
    for chapter in chapters:
        for src in sorted((root / "solutions" / chapter).glob("*")):
            if not src.is_file():
                continue
            for k, hole in sorted(make_exercises.solution_bodies(src.read_text(), str(src)).items()):
                body = tokens(hole.body)
                if len(body) < MIN_TOKENS:
                    continue
                for label, text in places(chapter, root):
                    share, at = similarity(body, tokens(text))
                    if share >= threshold:
                        where = label if "(code block)" in label else f"{label}:{line_of(text, at)}"
                        out.append((chapter, src.name, k, where, share))
    return out


def fenced_blocks(markdown):
    """[(first line number, code)] of the fenced blocks not marked as shown after their exercise."""
    out, lines, k = [], markdown.splitlines(), 0
    while k < len(lines):
        m = re.match(r"^\s*(```+|~~~+)", lines[k])
        if not m:
            k += 1
            continue
        fence, start = m.group(1), k
        k += 1
        while k < len(lines) and not lines[k].lstrip().startswith(fence):
            k += 1
        before = "\n".join(lines[max(0, start - 3):start])
        if not ANSWER_AFTER.search(before):
            out.append((start + 2, "\n".join(lines[start + 1:k])))
        k += 1
    return out


def outside_holes(text):
    """A student-format file's text with every hole's body blanked (its stub is not an answer)."""
    hs = make_exercises.holes(text)
    inside = set()
    for h in hs.values():
        inside.update(range(h.begin_line + 1, h.end_line))
    return "\n".join("" if n in inside else line for n, line in enumerate(text.splitlines(), start=1))


def places(chapter, root=ROOT):
    """[(label, text)] where a student of `chapter` can read code."""
    out = []
    folder = root / "chapters" / chapter
    for doc in ("README.md", "APPENDIX.md"):
        path = folder / doc
        if path.is_file():
            for line, code in fenced_blocks(path.read_text()):
                out.append((f"chapters/{chapter}/{doc}:{line} (code block)", code))
    for path in sorted(folder.iterdir()):
        if path.suffix in (".cu", ".cuh", ".hpp", ".h", ".cpp", ".c"):
            out.append((f"chapters/{chapter}/{path.name}", outside_holes(path.read_text())))
    for path in sorted((root / "common").rglob("*")):
        if path.is_file() and path.suffix in (".cu", ".cuh", ".hpp", ".h", ".cpp"):
            out.append((str(path.relative_to(root)), path.read_text()))
    return out


def line_of(text, token_index):
    """The 1-based line of `text` where its token number `token_index` starts (comments dropped as
    tokens() drops them, their line breaks kept)."""
    stripped = COMMENT.sub(lambda m: "\n" * m.group(0).count("\n") or " ", text)
    for k, m in enumerate(TOKEN.finditer(stripped)):
        if k == token_index:
            return stripped.count("\n", 0, m.start()) + 1
    return 0


GRADUATED = re.compile(r"taught in chapter (\d\d)\b")


def graduated_from(text):
    """The chapter a kit file says it was taught in (its first "taught in chapter NN"), or None: the
    graduating chapter, the one chapter whose holes that copy may answer."""
    m = GRADUATED.search(text)
    return m.group(1) if m else None


def findings(chapters, root=ROOT):
    """[(chapter, file, hole, where)] for every answer within reach. The kit's copy of a primitive
    answers the holes of the chapter that teaches it and graduates it into common/ (its header says
    "taught in chapter NN"): that chapter is the last to see it as an exercise, and the hole scan
    refuses a call to the copy from its holes. The same copy answering a hole of another chapter is
    a finding: a chapter after the graduating one teaching the primitive again."""
    found = []
    for chapter in chapters:
        for src in sorted((root / "solutions" / chapter).glob("*")):
            if not src.is_file():
                continue
            bodies = make_exercises.solution_bodies(src.read_text(), str(src))
            for k, hole in sorted(bodies.items()):
                body = tokens(hole.body)
                if len(body) < MIN_TOKENS:
                    continue
                for label, text in places(chapter, root):
                    at = find_variant(body, tokens(text))
                    renamed = False
                    if at is None and "(code block)" not in label and len(body) >= MIN_RENAMED_TOKENS:
                        at = find_renamed(body, tokens(text))
                        renamed = at is not None
                    if at is not None and label.startswith("common/") and graduated_from(text) == chapter[:2]:
                        at = None  # the graduating chapter's own primitive (see the docstring)
                    if at is not None:
                        where = label if "(code block)" in label else f"{label}:{line_of(text, at)}"
                        where += " (the kit)" if label.startswith("common/") else ""
                        where += ", its names renamed" if renamed else ""
                        found.append((chapter, src.name, k, where))
                    elif "(code block)" in label:
                        share, _ = similarity(body, tokens(text))
                        if share >= SHAPE_FAIL:
                            found.append((chapter, src.name, k, f"{label}, renamed ({100 * share:.0f}% of its shape)"))
    return found


def main(argv=None):
    p = argparse.ArgumentParser(prog="tools/check_answers.py", description=__doc__.split("\n\n")[0])
    p.add_argument("chapters", nargs="*", help="chapter numbers or names (default: all)")
    p.add_argument("--report", action="store_true", help="list every finding and exit 0")
    p.add_argument("--near", type=float, metavar="SHARE",
                   help="also list places whose code has the shape (names aside) of SHARE (0-1) or more of a "
                        "hole's answer: a report for authors, never a failure")
    args = p.parse_args(argv)
    every = sorted(d.name for d in (ROOT / "solutions").iterdir() if d.is_dir())
    chosen = []
    for want in args.chapters or every:
        hit = [c for c in every if c == want or c.split("_")[0] == want.zfill(2)]
        if not hit:
            p.error(f"no chapter '{want}' (known: {', '.join(every)})")
        chosen += hit
    found = findings(chosen, ROOT)
    for chapter, src, k, where in found:
        print(f"{chapter}/{src} hole {k}: its answer is shown in {where}")
    print(f"check_answers: {len(found)} answer(s) within reach over {len(chosen)} chapter(s)")
    if args.near is not None:
        near = near_answers(chosen, args.near, ROOT)
        for chapter, src, k, where, share in sorted(near, key=lambda r: -r[4]):
            print(f"near: {chapter}/{src} hole {k}: {100 * share:.0f}% of its answer's shape in {where}")
        print(f"check_answers: {len(near)} place(s) at or above {args.near:g} of an answer's shape (informative)")
    return 0 if args.report or not found else 1


if __name__ == "__main__":
    sys.exit(main())
