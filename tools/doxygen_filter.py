#!/usr/bin/env python3
"""Doxygen's INPUT_FILTER (docs/Doxyfile): the course's Markdown, as GitHub shows it, made to read
the same on the Doxygen 1.9.4 site. The files in the repository stay as they are; Doxygen reads
this script's output instead (`python3 tools/doxygen_filter.py FILE`, result on stdout).

Markdown (*.md):
  - images: `![a plot](../../results/reference/h100/plots/X.png)` resolves on GitHub but not from
    build/docs/html/. A local image becomes `![a plot](X.png)`; Doxygen then finds X.png in
    IMAGE_PATH and copies it into the site. (A new image folder goes into IMAGE_PATH.)
  - the markers of tools/sync_snippets.py (`<!--n:3-->2759<!--/n--> GB/s`, `<!-- snippet: ... -->`, tables)
    are dropped: Doxygen swallowed the space after them ("2759GB/s"); the numbers block at the end
    of a document (`<!-- numbers ...` to `-->`) becomes blank lines.
  - fenced code in `cuda` (GitHub highlights it; Doxygen knows no such language) is shown as `cpp`.
  - a code span that crosses a line break is joined onto one line (Doxygen 1.9.4 ends it at the
    break and swaps code and prose).
  - `--option` in prose becomes a code span (Markdown made "--" an en dash), except inside
    "double quotes", which Doxygen shows as typed.
  - a code span in a heading becomes plain text (Doxygen showed "<tt>--out</tt>"), and so does
    emphasis, `*x*`, `**x**`, `_x_` or `<em>x</em>` (Doxygen escapes a heading's title: "(*think*)"
    showed as "(<em>think</em>)", in the page and in the navigation tree).
  - a `<details>` block (the chapters' "Check yourself" answers) loses its blank lines: GitHub needs
    the one after `</summary>` to render the answer's Markdown, and Doxygen 1.9.4 closed the
    `<details>` at it, showing the question with no answer and the answer as a second, unlabelled
    `<details>`. (The answers are single paragraphs; the lines come back after `</details>`.) Code
    folded in a `<details>` (an answer shown after its exercise) becomes <pre><code>, its blank
    lines a non-breaking space, for the same reason.
  - a code span holding a single quote gets double backticks (Doxygen read `like this' as a
    quotation and swapped code and prose); one holding `\\|` in a table row becomes <code>...</code>
    (Doxygen showed the backslash).
  - a table's header names (CSV columns: final_vs_cublas) may break after an underscore (a zero-width
    space): chapter 06's 12 columns then fit the text column instead of running past it.
  - a chapter's page (chapters/NN_*/README.md) ends with links to the previous and the next
    chapter, from the list of chapter folders (nothing to keep in step by hand when one is added).
C++ headers (*.hpp, *.cuh, *.h): `--option` in a `///` or `//!` comment becomes a code span.
Everything else passes through unchanged.

tools/check_site.py checks the built HTML for what this filter exists to prevent.
"""
import html
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from sync_snippets import BLOCK_NAMES, NUM_BLOCK, NUM_CLOSE, NUM_OPEN  # noqa: E402  (one definition of the markers)

FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+.{}-]*)\s*$")
END_NUM_BLOCK = re.compile(NUM_BLOCK.pattern + r"\s*\Z", NUM_BLOCK.flags)
SYNC_MARKER = re.compile(r"<!-- /?(?:" + "|".join(BLOCK_NAMES) + r")(?::[^>]*?)? -->|" + NUM_OPEN + "|" + NUM_CLOSE)
IMAGE = re.compile(r"(!\[[^\]]*\]\()([^)\s]+)((?:\s+\"[^\"]*\")?\))")
OPTION = re.compile(r"(^|[\s(\[/])(--[a-zA-Z][\w-]*(?:[= ][A-Z][\w|]*)?)")
CODE_SPAN = re.compile(r"(?<!\\)(`+)(.+?)(?<!`)\1(?!`)")
HEADING = re.compile(r"^(#{1,6}\s+)(.*)$")
CHAPTER_FOLDER = re.compile(r"^\d\d_[\w-]+$")
PAGE_TITLE = re.compile(r"^#\s+(.*?)\s*(?:\{#([\w-]+)\})?\s*$")
TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
WORD_UNDERSCORE = re.compile(r"(?<=[A-Za-z0-9])_(?=[A-Za-z0-9])")
CODE_LANGS = {"cuda": "cpp", "cu": "cpp", "cuh": "cpp", "c++": "cpp", "hpp": "cpp"}


def outside_code(line, fn):
    """Applies fn to the parts of `line` outside inline code spans."""
    parts, last = [], 0
    for m in CODE_SPAN.finditer(line):
        parts.append(fn(line[last:m.start()]))
        parts.append(m.group(0))
        last = m.end()
    parts.append(fn(line[last:]))
    return "".join(parts)


def quote_options(text):
    return OPTION.sub(lambda m: f"{m.group(1)}`{m.group(2)}`", text)


def prose(line, fn):
    """Applies fn to the parts of `line` that Doxygen 1.9.4 reads as prose, left to right: not a code
    span, and not "double-quoted" text, which it shows as typed (it keeps "--" there, and a code
    span added inside would show its backticks). Whichever opens first wins, as in Doxygen."""
    out, text, i = [], [], 0
    while i < len(line):
        c = line[i]
        if c == "\\" and i + 1 < len(line) and line[i + 1] == "`":  # an escaped backtick is text
            text.append(line[i:i + 2])
            i += 2
            continue
        end = -1
        if c == "`":
            run = len(line[i:]) - len(line[i:].lstrip("`"))
            m = re.compile(r"(?<!`)" + "`" * run + r"(?!`)").search(line, i + run)
            end = m.end() if m else -1
        elif c == '"':
            k = line.find('"', i + 1)
            end = k + 1 if k > 0 else -1
        if end > 0:
            out.append(fn("".join(text)))
            text = []
            out.append(line[i:end])
            i = end
        else:
            text.append(c)
            i += 1
    out.append(fn("".join(text)))
    return "".join(out)


def image_link(md_path, match):
    target = match.group(2)
    if "://" in target or target.startswith(("#", "/", "data:")):
        return match.group(0)
    if (md_path.parent / target).is_file():
        target = pathlib.PurePosixPath(target).name
    return f"{match.group(1)}{target}{match.group(3)}"


# Emphasis in a heading, outside code: **x**, __x__, *x*, _x_ (not the _ inside dot_kernel_v2), <em>x</em>.
HEADING_EMPHASIS = [re.compile(r"(?<![\\*])\*\*(?=\S)(.+?)(?<=\S)\*\*"),
                    re.compile(r"(?<![\\\w])__(?=\S)(.+?)(?<=\S)__(?!\w)"),
                    re.compile(r"(?<![\\*\w])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![*\w])"),
                    re.compile(r"(?<![\\\w])_(?=[^\s_])(.+?)(?<=[^\s_])_(?!\w)"),
                    re.compile(r"<(em|i|b|strong)>(.*?)</\1>", re.I)]


def heading_text(text):
    """A heading's code spans and emphasis as plain text (Doxygen 1.9.4 shows a heading's markup as
    typed); "--" escaped so it stays two hyphens, "_" and "*" from code so they emphasize nothing."""
    def plain(m):
        return m.group(2).replace("--", "\\--").replace("_", "\\_").replace("*", "\\*")

    def no_emphasis(t):
        for pattern in HEADING_EMPHASIS:
            t = pattern.sub(lambda m: m.group(m.lastindex), t)
        return t
    return CODE_SPAN.sub(plain, outside_code(text, no_emphasis))


def fragile_code(line, in_table):
    """Code spans Doxygen 1.9.4 breaks: one holding a single quote (Doxygen reads `like this' as a
    quotation) gets double backticks; in a table row, one holding an escaped pipe becomes
    <code>...</code>, where Doxygen's own \\| and \\-- commands give "|" and "--"."""
    def code(m):
        body = m.group(2)
        if in_table and "\\|" in body:
            body = body.replace("&", "&amp;").replace("<", "&lt;").replace("--", "\\--")
            return f"<code>{body}</code>"
        if len(m.group(1)) == 1 and "'" in body:
            return f"`` {body} ``" if body.startswith("`") or body.endswith("`") else f"``{body}``"
        return m.group(0)
    return CODE_SPAN.sub(code, line)


def odd_backticks(line):
    """True when `line` opens a single-backtick code span that it does not close."""
    return len(re.findall(r"(?<![`\\])`(?!`)", line)) % 2 == 1


def details_joined(lines):
    """The lines with the blank ones inside each <details> ... </details> moved after its end."""
    out, inside, dropped, fence = [], False, 0, None
    for line in lines:
        stripped = line.strip()
        m = FENCE.match(line)
        if inside and fence is not None and fence.startswith("<pre"):  # code folded in a <details>
            if m and not m.group(3):
                fence = None
                out.append("</code></pre>")
            else:
                out.append(html.escape(line) if line.strip() else "&nbsp;")
            continue
        if inside and fence is None and m:
            fence = "<pre>"
            out.append("<pre><code>")
            continue
        if fence is not None:
            if m and m.group(2)[0] == fence[0] and len(m.group(2)) >= len(fence) and not m.group(3):
                fence = None
        elif m:
            fence = m.group(2)
        elif stripped.startswith("<details>"):
            inside = True
        if inside and fence is None and (not stripped or re.fullmatch(r"<!--.*?-->", stripped)):
            dropped += 1  # a marker alone on its line becomes a blank one later: drop it here
            continue
        out.append(line)
        if inside and fence is None and "</details>" in stripped:
            inside = False
            out.extend([""] * dropped)
            dropped = 0
    out.extend([""] * dropped)
    return out


def filter_markdown(text, md_path):
    out, fence, owed = [], None, 0  # owed: blank lines to add back where a paragraph ends
    # The numbers block that ends the document (not an example of one in a code block) becomes blank
    # lines, so that every other line keeps its number.
    text = END_NUM_BLOCK.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    lines = details_joined(text.split("\n"))
    i = 0
    while i < len(lines):
        line = lines[i]
        m = FENCE.match(line)
        if fence is not None:
            if m and m.group(2)[0] == fence[0] and len(m.group(2)) >= len(fence) and not m.group(3):
                fence = None
            out.append(line)
            i += 1
            continue
        if m:
            fence = m.group(2)
            lang = m.group(3)
            out.append(f"{m.group(1)}{m.group(2)}{CODE_LANGS.get(lang, lang)}")
            i += 1
            continue
        if not line.strip():
            out.extend([""] * owed)
            owed = 0
        # A code span across a line break: join the paragraph's next lines until it closes.
        while odd_backticks(line) and i + 1 < len(lines) and lines[i + 1].strip() and not FENCE.match(lines[i + 1]):
            i += 1
            line = line.rstrip() + " " + lines[i].lstrip()
            owed += 1
        line = outside_code(line, lambda t: IMAGE.sub(lambda mm: image_link(md_path, mm), SYNC_MARKER.sub("", t)))
        h = HEADING.match(line)
        if h:
            line = h.group(1) + heading_text(outside_code(h.group(2), lambda s: s.replace("--", "\\--")))
        else:
            line = prose(line, quote_options)
            line = fragile_code(line, line.lstrip().startswith("|"))
            if line.lstrip().startswith("|") and i + 1 < len(lines) and TABLE_RULE.match(lines[i + 1]):
                line = outside_code(line, lambda t: WORD_UNDERSCORE.sub("_\u200b", t))
        out.append(line)
        i += 1
    out.extend([""] * owed)
    return "\n".join(out)


def chapter_pages(chapters_dir):
    """Every chapter in order, as (folder name, Doxygen page name, title): the folders NN_*/ of
    `chapters_dir` with a README.md. The page name is the README's own {#label}, else the one Doxygen
    gives a Markdown file (md_chapters_01_timing_README)."""
    out = []
    for readme in sorted(pathlib.Path(chapters_dir).glob("[0-9][0-9]_*/README.md")):
        if not CHAPTER_FOLDER.match(readme.parent.name):
            continue
        first = readme.read_text(encoding="utf-8").split("\n", 1)[0]
        m = PAGE_TITLE.match(first)
        title = m.group(1) if m else readme.parent.name
        page = m.group(2) if m and m.group(2) else f"md_chapters_{readme.parent.name}_README"
        out.append((readme.parent.name, page, title))
    return out


def chapter_nav(md_path):
    """The links to the previous and next chapter for a chapter's README (a Doxygen HTML block, styled
    by docs/site.css), or "" for any other file."""
    md_path = pathlib.Path(md_path).resolve()
    if md_path.name != "README.md" or md_path.parent.parent.name != "chapters" \
            or not CHAPTER_FOLDER.match(md_path.parent.name):
        return ""
    pages = chapter_pages(md_path.parent.parent)
    names = [folder for folder, _, _ in pages]
    if md_path.parent.name not in names:
        return ""
    k = names.index(md_path.parent.name)

    def ref(entry):
        title = re.sub(r"[\"*`]", "", entry[2])  # the text of a @ref "...": no quote, no markup
        return f'@ref {entry[1]} "{title}"'
    parts = []
    if k > 0:
        parts.append(f'<span class="prev">← Previous: {ref(pages[k - 1])}</span>')
    if k + 1 < len(pages):
        parts.append(f'<span class="next">Next: {ref(pages[k + 1])} →</span>')
    return f'<div class="chapter-nav">{"".join(parts)}</div>' if parts else ""


def filter_header(text):
    out = []
    for line in text.split("\n"):
        at = -1
        for marker in ("///", "//!"):
            k = line.find(marker)
            if k >= 0 and (at < 0 or k < at):
                at = k
        if at >= 0:
            start = at + 3 + (1 if line[at + 3:at + 4] == "<" else 0)
            line = line[:start] + outside_code(line[start:], quote_options)
        out.append(line)
    return "\n".join(out)


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    path = pathlib.Path(argv[1])
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".md":
        text = filter_markdown(text, path)
        nav = chapter_nav(path)
        if nav:  # after the last line, so that the lines Doxygen's warnings name stay where they were
            text = text.rstrip("\n") + "\n\n" + nav + "\n"
    elif path.suffix in (".hpp", ".cuh", ".h"):
        text = filter_header(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
