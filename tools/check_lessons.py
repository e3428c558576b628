#!/usr/bin/env python3
"""Check that each chapter is a lesson plus an appendix (the lesson spec, issue 24).

For each chapter folder (chapters/NN_name/), its README.md is the LESSON and must have:
  - `## What you will learn` (3 to 6 bullets), `## Check yourself` (at least 5 <details> blocks,
    each with a <summary>) and `## What to remember` (1 to 6 bullets), in that order;
  - exactly one heading that marks the *think* exercise: `(think)`, `(*think*)`, `*think*` or `_think_`;
  - from chapter 07 on, exactly one heading that marks the *design* exercise (`(*design*)`): a
    whole function written from the contract its stub states;
  - as its last line (before the numbers block of tools/sync_snippets.py, an HTML comment at the
    end): How the numbers were measured, how they spread across runs and how the targets were set:
    [appendix](APPENDIX.md).
  - at most 4,000 prose words: the README without fenced code blocks, table rows (lines that start
    with `|`), HTML comments and HTML tags; a word is a whitespace-separated token holding a
    letter or a digit;
  - no table cell over 30 words (counted the same way, sync markers' comments left out);
  - none of the run-talk phrases (case-insensitive, whole words, anywhere in the file): RUN_TALK;
  - no term of docs/glossary.md before the chapter that introduces it: a term whose row links
    chapter k (the first link of its last column) must not appear in chapters before k. Terms are
    the first column split at commas, with parenthesised alternatives; backticked names
    (`__ldg`, `$ORIGIN`) are matched as written, case-sensitive; other terms whole-word,
    case-insensitive, with a plural s/es. Code blocks, code spans, <code> and HTML comments and
    link targets are not searched.
and the folder must have APPENDIX.md whose first line starts `# Chapter NN — appendix`.
Each hole's TODO in the chapter's sources (a comment block that starts `// TODO(student):`) states
a contract, not the statements to type: no CUDA API call, intrinsic, atomic, memory order, loop
header, compound assignment, return statement or launch (CODE_IN_TODO).

  tools/check_lessons.py                     strict: the ENFORCED chapters (exit 1 on any problem)
  tools/check_lessons.py --all               strict: every chapters/NN_*/
  tools/check_lessons.py chapters/05_many_blocks [...]   strict: those chapters
  tools/check_lessons.py --report [paths]    a table per chapter (all by default); exits 0

Problems print one per line as FILE:LINE: message. Exit status: 0 clean, 1 problems, 2 usage.
"""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

# The chapters that already pass; the lead extends this list as chapters are rewritten. Strict mode
# without arguments checks these only (CI), --all checks every chapter.
ENFORCED = ["01_timing", "02_cpu_dot", "03_one_thread", "04_one_block", "05_many_blocks", "06_ladder", "07_library",
            "08_pinned", "09_streams", "10_dtypes", "11_multi_gpu"]

MAX_WORDS = 4000
MAX_CELL_WORDS = 30
MIN_CHECKS = 5
LEARN_BULLETS = (3, 6)
REMEMBER_BULLETS = (1, 6)
RUN_TALK = ["today", "this run", "in this run", "that run", "another run", "other runs",
            "earlier run", "one reading of", "this session", "yesterday"]
APPENDIX_LINE = ("How the numbers were measured, how they spread across runs and how the targets "
                 "were set: [appendix](APPENDIX.md).")
LEARN = "## What you will learn"
CHECK = "## Check yourself"
REMEMBER = "## What to remember"
THINK = re.compile(r"\(\s*\*?think\*?\s*\)|\*think\*|_think_", re.I)
DESIGN = re.compile(r"\(\s*\*?design\*?\s*\)|\*design\*|_design_", re.I)
DESIGN_FROM = 7  # chapters 07-11 have a design exercise: a whole function from its contract


def chapter_number(readme):
    m = re.match(r"(\d+)_", readme.parent.name)
    return int(m.group(1)) if m else 0
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
COMMENT = re.compile(r"<!--.*?-->", re.S)
TRAILING_COMMENT = re.compile(r"\n\s*<!--(?:(?!<!--).)*?-->\s*\Z", re.S)  # the numbers block at a document's end
TAG = re.compile(r"</?[A-Za-z][^<>\n]*>")
CODE_TAG = re.compile(r"<code>.*?</code>", re.S | re.I)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
LINK_TARGET = re.compile(r"\]\([^)\s]*\)")
WORD = re.compile(r"\S+")
HAS_ALNUM = re.compile(r"[A-Za-z0-9]")
CHAPTER_DIR = re.compile(r"^(\d\d)_")
# What a hole's TODO must not spell out: the statements themselves (the course's rule: a hole
# states a contract, and copying its TODO into code must not pass).
CODE_IN_TODO = re.compile(r"\bcuda[A-Z]\w*\s*\(|__shfl\w*|__syncthreads\s*\(|\batomic[A-Z]\w*\s*\(|\.fetch_\w+\s*\("
                          r"|\bmemory_order_\w+|\bfor\s*\(|\bwhile\s*\(|[\w\]]\s*(\+=|-=|\*=)|\breturn\s+[^;]*;|<<<")
SOURCE_SUFFIXES = (".cu", ".cuh", ".hpp", ".h", ".cpp")


def code_in_todos(folder):
    """(file, line, what) for each piece of code written in a hole's TODO comment."""
    found = []
    for path in sorted(pathlib.Path(folder).iterdir()):
        if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
            continue
        lines = path.read_text(errors="replace").splitlines()
        i = 0
        while i < len(lines):
            if not lines[i].strip().startswith("// TODO(student):"):
                i += 1
                continue
            while i < len(lines) and lines[i].strip().startswith("//"):
                m = CODE_IN_TODO.search(lines[i])
                if m:
                    found.append((path.name, i + 1, m.group(0).strip()))
                i += 1
    return found


class Problem:
    def __init__(self, path, line, message):
        self.path, self.line, self.message = path, line, message

    def __str__(self):
        return f"{self.path}:{self.line}: {self.message}"


def blank(match):
    """The match replaced by spaces, newlines kept, so offsets and line numbers stay."""
    return re.sub(r"[^\n]", " ", match.group(0))


def mask_fences(text):
    """Fenced code blocks blanked (their lines kept, empty)."""
    out, fence = [], None
    for line in text.split("\n"):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            out.append("")
        elif fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                    and not line.strip()[len(m.group(1)):].strip():
                fence = None
            out.append("")
        else:
            out.append(line)
    return "\n".join(out)


def prose(text):
    """The text a reader reads as prose: no code blocks, comments, code spans or link targets."""
    text = mask_fences(text)
    text = COMMENT.sub(blank, text)
    text = CODE_TAG.sub(blank, text)
    text = CODE_SPAN.sub(blank, text)
    text = LINK_TARGET.sub(lambda m: "]" + " " * (len(m.group(0)) - 1), text)
    return text


def count_words(text):
    return sum(1 for w in WORD.findall(TAG.sub(" ", text)) if HAS_ALNUM.search(w))


def word_text(text):
    """The text whose words are counted: no fenced code, table rows, comments."""
    text = COMMENT.sub(blank, mask_fences(text))
    return "\n".join("" if line.lstrip().startswith("|") else line for line in text.split("\n"))


def table_cells(text):
    """(line number, cell text) for every table cell outside code blocks."""
    text = COMMENT.sub(blank, mask_fences(text))
    for no, line in enumerate(text.split("\n"), 1):
        s = line.strip()
        if not s.startswith("|"):
            continue
        cells, cur, tick = [], [], False
        i = 0
        while i < len(s):
            c = s[i]
            if c == "\\" and i + 1 < len(s):
                cur.append(s[i:i + 2])
                i += 2
                continue
            if c == "`":
                tick = not tick
            if c == "|" and not tick:
                cells.append("".join(cur))
                cur = []
            else:
                cur.append(c)
            i += 1
        cells.append("".join(cur))
        for cell in cells[1:-1] if s.endswith("|") else cells[1:]:
            if re.fullmatch(r"\s*:?-+:?\s*", cell):
                continue
            yield no, cell


def run_talk(text):
    """(offset, phrase as written) for each run-talk phrase; of overlapping ones, the longest."""
    hits = []
    for phrase in RUN_TALK:
        pattern = re.compile(r"\b" + r"\s+".join(map(re.escape, phrase.split())) + r"\b", re.I)
        hits += [(m.start(), m.end()) for m in pattern.finditer(text)]
    kept = []
    for start, end in sorted(hits, key=lambda h: (h[0], -h[1])):
        if kept and start < kept[-1][1]:
            continue
        kept.append((start, end))
    return [(start, " ".join(text[start:end].split())) for start, end in kept]


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def headings(masked):
    """(line number, heading line) for every ATX heading outside code blocks."""
    return [(no, line.rstrip()) for no, line in enumerate(masked.split("\n"), 1)
            if re.match(r"#{1,6}\s", line)]


def section(lines, start, level=2):
    """The lines of the section whose heading is lines[start], up to the next heading of its level or higher."""
    body = []
    for line in lines[start + 1:]:
        m = re.match(r"(#{1,6})\s", line)
        if m and len(m.group(1)) <= level:
            break
        body.append(line)
    return body


def find_heading(heads, title):
    for no, line in heads:
        if re.sub(r"\s*\{#[^}]*\}\s*$", "", line).strip() == title:
            return no
    return None


# --- glossary -----------------------------------------------------------------------------------

def glossary_terms(path):
    """[(term text, regex, chapter number)] from the glossary's table."""
    terms = []
    if not path.is_file():
        return terms
    for line in path.read_text().splitlines():
        if not line.startswith("|") or re.match(r"\|\s*-", line):
            continue
        cols = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cols) < 3:
            continue
        chapters = re.findall(r"\[(\d\d)\]", cols[-1])
        if not chapters:
            continue
        k = min(int(c) for c in chapters)
        for term, pattern in term_patterns(cols[0]):
            terms.append((term, pattern, k))
    return terms


def term_patterns(cell):
    """The names a glossary term cell stands for, each with the regex that finds it in prose."""
    out = []
    for code in re.findall(r"`([^`]+)`", cell):
        name = re.sub(r"\(\)$", "", code.strip())
        if re.fullmatch(r"[$\w.]+", name):
            out.append((name, re.compile(r"(?<![\w$])" + re.escape(name) + r"(?!\w)")))
    rest = re.sub(r"`[^`]*`", " ", cell)
    parts = []
    for inner in re.findall(r"\(([^)]*)\)", rest):
        parts += inner.split(",")
    parts += re.sub(r"\([^)]*\)", " ", rest).split(",")
    for part in parts:
        words = re.findall(r"[\w][\w'-]*", part)
        if not words:
            continue
        name = " ".join(words)
        body = r"\s+".join(re.escape(w) for w in words)
        out.append((name, re.compile(r"(?<![\w-])" + body + r"(?:s|es)?(?![\w-])", re.I)))
    return out


# --- one chapter ----------------------------------------------------------------------------------

def check_chapter(folder, terms, root=ROOT):
    """(problems, facts) for one chapter folder; facts feed the report."""
    folder = pathlib.Path(folder)
    problems = []
    facts = {"words": 0, "cell": 0, "sections": ""}
    m = CHAPTER_DIR.match(folder.name)
    number = int(m.group(1)) if m else None
    try:
        shown = folder.resolve().relative_to(root)
    except ValueError:
        shown = folder
    readme, appendix = shown / "README.md", shown / "APPENDIX.md"

    def problem(path, line, message):
        problems.append(Problem(path, line, message))

    apath = folder / "APPENDIX.md"
    if not apath.is_file():
        problem(appendix, 0, "APPENDIX.md is missing (method, spread across runs, target history go there)")
    elif number is not None:
        first = apath.read_text().split("\n", 1)[0]
        if not first.startswith(f"# Chapter {number:02d} — appendix"):
            problem(appendix, 1, f"first line should start '# Chapter {number:02d} — appendix: how the numbers were measured'")

    rpath = folder / "README.md"
    if not rpath.is_file():
        problem(readme, 0, "README.md (the lesson) is missing")
        return problems, facts
    text = rpath.read_text()
    fenced = mask_fences(text)
    no_comments = COMMENT.sub(blank, fenced)
    lines = no_comments.split("\n")
    heads = headings(no_comments)
    present = []

    if number is not None and not re.match(rf"# Chapter {number:02d} — ", text):
        problem(readme, 1, f"first line should be '# Chapter {number:02d} — title'")

    def bullets(start):
        return sum(1 for line in section(lines, start - 1) if re.match(r"\s{0,3}[-*+]\s", line))

    order = []
    learn = find_heading(heads, LEARN)
    if learn is None:
        problem(readme, 1, f"no '{LEARN}' section")
    else:
        present.append("learn")
        order.append((learn, LEARN))
        n = bullets(learn)
        if not LEARN_BULLETS[0] <= n <= LEARN_BULLETS[1]:
            problem(readme, learn, f"'{LEARN}' has {n} bullets; wants {LEARN_BULLETS[0]} to {LEARN_BULLETS[1]}")

    think = [(no, h) for no, h in heads if THINK.search(h)]
    if not think:
        problem(readme, 1, "no heading marks the think exercise, e.g. '## Exercise 4 — ... (*think*)'")
    else:
        present.append("think")
        if len(think) > 1:
            problem(readme, think[1][0], f"{len(think)} headings mark a think exercise (lines "
                    + ", ".join(str(no) for no, _ in think) + "); exactly one may")

    # From chapter 07 on (issue 24): one exercise written from an empty function, marked *design*.
    if chapter_number(readme) >= DESIGN_FROM:
        design = [(no, h) for no, h in heads if DESIGN.search(h)]
        if len(design) != 1:
            problem(readme, design[1][0] if len(design) > 1 else 1,
                    f"{len(design)} headings mark a design exercise; exactly one must, e.g. "
                    "'## Exercise 1 — ... (*design*)'")
        else:
            present.append("design")

    check = find_heading(heads, CHECK)
    if check is None:
        problem(readme, 1, f"no '{CHECK}' section")
    else:
        order.append((check, CHECK))
        body = "\n".join(section(lines, check - 1))
        details = len(re.findall(r"<details>", body))
        summaries = len(re.findall(r"<summary>", body))
        present.append(f"check({details})")
        if details < MIN_CHECKS:
            problem(readme, check, f"'{CHECK}' has {details} <details> blocks; wants at least {MIN_CHECKS}")
        if summaries < details:
            problem(readme, check, f"'{CHECK}': {details - summaries} <details> without a <summary> question")

    remember = find_heading(heads, REMEMBER)
    if remember is None:
        problem(readme, 1, f"no '{REMEMBER}' section")
    else:
        present.append("remember")
        order.append((remember, REMEMBER))
        n = bullets(remember)
        if not REMEMBER_BULLETS[0] <= n <= REMEMBER_BULLETS[1]:
            problem(readme, remember, f"'{REMEMBER}' has {n} bullets; wants {REMEMBER_BULLETS[0]} to {REMEMBER_BULLETS[1]}")
    wanted = [LEARN, CHECK, REMEMBER]
    found = [t for _, t in sorted(order)]
    if found != [t for t in wanted if t in found]:
        problem(readme, sorted(order)[0][0], "sections out of order: wants " + ", then ".join(f"'{t}'" for t in wanted))

    last = TRAILING_COMMENT.sub("", text).rstrip("\n").split("\n")
    if last[-1].strip() != APPENDIX_LINE:
        problem(readme, len(last), f"last line should be the appendix link: '{APPENDIX_LINE}'")
    else:
        present.append("link")
    if apath.is_file():
        present.append("APPENDIX")
    facts["sections"] = " ".join(present)

    words = count_words(word_text(text))
    facts["words"] = words
    if words > MAX_WORDS:
        problem(readme, 1, f"{words} prose words; the lesson's budget is {MAX_WORDS} (move method and run history to APPENDIX.md)")

    for no, cell in table_cells(text):
        n = count_words(cell)
        facts["cell"] = max(facts["cell"], n)
        if n > MAX_CELL_WORDS:
            problem(readme, no, f"a table cell has {n} words (at most {MAX_CELL_WORDS}): '{' '.join(cell.split())[:60]}...'")

    for start, said in run_talk(text):
        problem(readme, line_of(text, start), f"run-talk phrase '{said}' (say it once, in the appendix)")

    if number is not None:
        searched = prose(text)
        for term, pattern, k in terms:
            if k <= number:
                continue
            hits = list(pattern.finditer(searched))
            if hits:
                more = f" ({len(hits)} uses)" if len(hits) > 1 else ""
                problem(readme, line_of(searched, hits[0].start()),
                        f"glossary term '{term}' is introduced in chapter {k:02d}, after this one{more}")

    for name, no, what in code_in_todos(folder):
        problem(shown / name, no, f"a hole's TODO spells out code ('{what}'): state what must hold and which test checks it")

    problems.sort(key=lambda p: (str(p.path), p.line))
    return problems, facts


def all_chapters(root=ROOT):
    return sorted(p for p in (root / "chapters").iterdir() if p.is_dir() and CHAPTER_DIR.match(p.name))


def resolve(arg, root=ROOT):
    p = pathlib.Path(arg)
    if not p.is_dir() and (root / arg).is_dir():
        p = root / arg
    if not p.is_dir():
        matches = [c for c in all_chapters(root) if c.name.startswith(arg)]
        if len(matches) == 1:
            return matches[0]
        raise SystemExit(f"check_lessons: no chapter folder '{arg}'")
    return p


def report(folders, terms, out=None):
    out = out or sys.stdout
    print("| chapter | words | longest cell | sections present | problems |", file=out)
    print("| --- | --- | --- | --- | --- |", file=out)
    for folder in folders:
        problems, facts = check_chapter(folder, terms)
        print(f"| {folder.name} | {facts['words']} | {facts['cell']} | {facts['sections'] or '-'} | {len(problems)} |", file=out)
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.replace("RUN_TALK", ", ".join(f'"{t}"' for t in RUN_TALK)),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("chapters", nargs="*", help="chapter folders (chapters/NN_name or NN); default: ENFORCED")
    p.add_argument("--all", action="store_true", help="check every chapters/NN_*/ strictly")
    p.add_argument("--report", action="store_true", help="print a table per chapter (all by default) and exit 0")
    p.add_argument("--glossary", default=str(ROOT / "docs" / "glossary.md"), help="the glossary (default docs/glossary.md)")
    args = p.parse_args(argv)
    terms = glossary_terms(pathlib.Path(args.glossary))
    if args.chapters:
        folders = [resolve(a) for a in args.chapters]
    elif args.all or args.report:
        folders = all_chapters()
    else:
        folders = [resolve(a) for a in ENFORCED]
    if args.report:
        return report(folders, terms)
    if not folders:
        print("check_lessons: no chapters enforced yet (ENFORCED in tools/check_lessons.py); --report shows them all")
        return 0
    total = 0
    for folder in folders:
        problems, facts = check_chapter(folder, terms)
        for problem in problems:
            print(problem)
        total += len(problems)
    names = ", ".join(f.name for f in folders)
    if total:
        print(f"check_lessons: {total} problem(s) in {names}")
        return 1
    print(f"check_lessons: {len(folders)} chapter(s) pass: {names}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
