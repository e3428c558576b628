#!/usr/bin/env python3
"""Check the built docs site: what Doxygen builds without a warning but a reader sees broken.

    tools/check_site.py [HTML_DIR]      (default build/docs/html; exit 1 on any problem)

Fails on:
  - a local link (href) to a file that is not in the site;
  - an image (img src, object data) that is not in the site;
  - a `<details>` (a "Check yourself" answer) that does not start with its `<summary>`, or has
    nothing after it: what Doxygen made of a blank line inside one, before the filter fixed it;
  - an option written as an en dash or em dash ("–help" where the text said "--help"): Markdown
    turns "--" into a dash outside code;
  - markup shown as text outside code: a literal HTML tag ("<em>", "<tt>", "</b>": Doxygen 1.9.4 shows
    a heading's emphasis or code span that way), "\\|", "<!--" or an entity ("&lt;em&gt;" shown as
    typed, after a double escape); a number glued
    to its unit ("2759GB/s"); a code span Doxygen read as a `quotation'; a backtick; on the pages
    written in Markdown, a literal "**" or an emphasis "*" (Doxygen 1.9.4 shows `**`x`**`, *"a quote"*
    and [`code`](link) as typed);
  - a figure wider than the text column (COLUMN_PX) that nothing scales down: no width attribute
    and no stylesheet rule "img { max-width: 100% }" (docs/site.css), so its right side is cut off;
  - the main page (index.html) not linking every chapter, or not showing the README's commands;
  - a chapter's page not linking the previous and the next chapter;
  - markup in a title of the navigation tree (shown as typed there, as in the page's heading);
  - a page out of place in the navigation tree: the chapters not in order, or a chapter folder's
    other page (its appendix, "dotcourse for Python") not under its chapter (docs/pages.dox).

Standard library only, so CI needs nothing installed for it.
"""
import argparse
import html.parser
import json
import pathlib
import re
import sys
import urllib.parse

# A dash glued to a lowercase word, after a space, a bracket or the start: "–help", "(—csv".
DASHED_OPTION = re.compile(r"(?:^|[\s(\[{'\"/])([\u2013\u2014][a-z][a-z0-9_-]*)")
MANGLED = [("\\|", "a literal \\| (an escaped pipe in a table)"),
           ("<!--", "a literal HTML comment")]
# An HTML tag the reader sees as text: "(<em>think</em>)" in a heading, where Doxygen 1.9.4 escapes what
# Markdown made of "(*think*)", or "<tt>--out</tt>" from a code span. Tags of text, not of C++ (a
# template's "<float>" is not one of these names).
LITERAL_TAG = re.compile(r"</?(?:a|b|i|u|s|em|strong|tt|code|kbd|var|samp|sup|sub|small|mark|del|ins|span|div|p|br|hr|"
                         r"img|details|summary|table|thead|tbody|tr|td|th|ul|ol|li|dl|dt|dd|h[1-6]|pre|blockquote)"
                         r"(?:\s[^<>]*)?/?>", re.I)
# An entity the reader sees as typed ("&lt;em&gt;", "&amp;", "&#160;"): it was escaped twice.
LITERAL_ENTITY = re.compile(r"&(?:[a-zA-Z][a-zA-Z0-9]{1,9}|#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6});")
# A number glued to its unit: Doxygen swallowed the space after a sync marker ("2759GB/s").
GLUED_UNIT = re.compile(r"\d(?:GB/s|TB/s|ms|µs|ns|GiB|MiB|KiB|MB|KB)\b")
# Markdown emphasis Doxygen did not render: "**" anywhere, a "*" opening or closing a phrase.
LITERAL_STRONG = re.compile(r"\*\*")
LITERAL_EM = re.compile(r"(?:^|(?<=[\s(\[\"'\u201c]))\*(?=[^\s*])|(?<=[^\s*])\*(?=$|[\s.,;:!?)\]\"'\u201d])")
# A backtick that belongs in the text: a tool's message quoting `like this' (pkg-config does).
TEX_QUOTE = re.compile(r"`[^`'\s][^`']*'")
COLUMN_PX = 1000  # the text column of the site, about 1,000 px beside the navigation tree
MAIN_PAGE_COMMANDS = ("tools/run_course.sh", "tools/test.sh")  # README.md's "The two commands"
CHAPTER_SOURCE = re.compile(r"^md_chapters_(\d\d)_")  # the page of a Markdown file in chapters/NN_*/
BLOCK_TAGS = {"pre", "script", "style"}
INLINE_CODE_TAGS = {"code", "tt"}
CODE_CLASSES = {"fragment", "line"}  # Doxygen's code blocks: <div class="fragment"><div class="line">
VOID_TAGS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


def is_local(url):
    if not url or url.startswith(("#", "//")):
        return False
    scheme = urllib.parse.urlsplit(url).scheme
    return scheme == "" or scheme == "file"


class Page(html.parser.HTMLParser):
    """Collects a page's links, images, and the text outside code, with line numbers."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links, self.images, self.text = [], [], []
        self.figures = []  # (line, tag, src, width attribute, style attribute) of each <img>/<object>
        self.all_text = []  # every piece of text, code included
        self.stylesheets = []
        self.markdown_page = False  # a page (PageDoc), not a file's or class's reference
        self.source = None  # the page's own anchor "md_chapters_07_library_README": its Markdown file
        self.details = []  # open <details>: [line, its first child was a <summary>, summary closed, text after it]
        self.details_problems = []
        self.stack = []  # (tag, kind) of the open elements; kind: None, "inline" or "block" (code)

    def code_kind(self):
        kinds = {kind for _, kind in self.stack}
        return "block" if "block" in kinds else "inline" if "inline" in kinds else None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        line = self.getpos()[0]
        if tag == "details":
            self.details.append([line, None, False, False])
        elif self.details and self.details[-1][1] is None:
            self.details[-1][1] = tag == "summary"
        if tag == "a" and a.get("href"):
            self.links.append((line, a["href"]))
        if tag in ("img", "image") and a.get("src"):
            self.images.append((line, a["src"]))
            self.figures.append((line, tag, a["src"], a.get("width"), a.get("style") or ""))
        if tag == "object" and a.get("data"):
            self.images.append((line, a["data"]))
            self.figures.append((line, tag, a["data"], a.get("width"), a.get("style") or ""))
        if tag == "link" and "stylesheet" in (a.get("rel") or "").split() and a.get("href"):
            self.stylesheets.append(a["href"])
        if tag == "div" and "PageDoc" in (a.get("class") or "").split():
            self.markdown_page = True
        if tag == "a" and self.source is None and (a.get("id") or "").startswith("md_"):
            self.source = a["id"]
        if tag in VOID_TAGS:
            return
        classes = set((a.get("class") or "").split())
        kind = "block" if tag in BLOCK_TAGS or classes & CODE_CLASSES else "inline" if tag in INLINE_CODE_TAGS else None
        self.stack.append((tag, kind))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID_TAGS and self.stack and self.stack[-1][0] == tag:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag == "summary" and self.details:
            self.details[-1][2] = True
        if tag == "details" and self.details:
            line, summary_first, _, body = self.details.pop()
            if not summary_first:
                self.details_problems.append((line, "a <details> that does not start with its <summary> (Doxygen "
                                                    "split a question from its answer? see tools/doxygen_filter.py)"))
            elif not body:
                self.details_problems.append((line, "a <details> with a <summary> and nothing to unfold"))
        for k in range(len(self.stack) - 1, -1, -1):  # tolerate unclosed tags
            if self.stack[k][0] == tag:
                del self.stack[k:]
                return

    def handle_data(self, data):
        self.all_text.append(data)
        if data.strip() and self.details:
            if self.details[-1][1] is None:
                self.details[-1][1] = False  # text before any <summary>
            elif self.details[-1][2]:
                self.details[-1][3] = True
        if data.strip() and self.code_kind() != "block":
            self.text.append((self.getpos()[0], data, self.code_kind()))


def parse_page(page_path):
    parser = Page()
    parser.feed(page_path.read_text(encoding="utf-8", errors="replace"))
    parser.close()
    return parser


def image_width(path):
    """The width in pixels of a PNG, GIF or SVG file; None when unknown (another format, unreadable)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return None
    if head[:8] == b"\x89PNG\r\n\x1a\n" and len(head) >= 24:
        return int.from_bytes(head[16:20], "big")
    if head[:6] in (b"GIF87a", b"GIF89a") and len(head) >= 8:
        return int.from_bytes(head[6:8], "little")
    m = re.search(rb"<svg\b[^>]*>", head)
    if m:
        w = re.search(rb"\swidth=\"([\d.]+)(?:px)?\"", m.group(0))
        if w:
            return round(float(w.group(1)))
        vb = re.search(rb"viewBox=\"[\d.\s-]+?\s([\d.]+)\s[\d.]+\"", m.group(0))
        if vb:
            return round(float(vb.group(1)))
    return None


CSS_RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")
FULL_WIDTH = re.compile(r"max-width\s*:\s*(?:100%|\d{1,3}(?:\.\d+)?%)")


def css_scales(css_text, tag):
    """True when a rule of the stylesheet caps the width of `tag` elements ("... img { max-width: 100% }")."""
    css_text = re.sub(r"/\*.*?\*/", "", css_text, flags=re.S)
    for selectors, body in CSS_RULE.findall(css_text):
        if FULL_WIDTH.search(body) and any(re.search(rf"(?:^|[\s>+~]){tag}(?:$|[.:\[#])", s.strip())
                                           for s in selectors.split(",")):
            return True
    return False


def check_page(page_path, root, parser=None):
    """Problems of one HTML file, as strings "FILE:LINE: what"."""
    parser = parser or parse_page(page_path)
    rel = page_path.relative_to(root)
    problems = []

    def local_target(url):
        path = urllib.parse.unquote(urllib.parse.urlsplit(url).path)
        return (page_path.parent / path).resolve() if path else None

    def target_exists(url):
        target = local_target(url)
        return target is None or target.exists()  # "?query" or "#anchor" alone: this page

    for line, url in parser.links:
        if is_local(url) and not target_exists(url):
            problems.append(f"{rel}:{line}: broken link '{url}'")
    for line, url in parser.images:
        if is_local(url) and not target_exists(url):
            problems.append(f"{rel}:{line}: missing image '{url}'")
        elif not is_local(url) and not url.startswith(("http://", "https://", "data:")):
            problems.append(f"{rel}:{line}: image '{url}' is neither in the site nor a web address")
    sheets = []
    for href in parser.stylesheets:
        if is_local(href) and target_exists(href):
            sheets.append(local_target(href).read_text(encoding="utf-8", errors="replace"))
    for line, tag, url, width, style in parser.figures:
        if not is_local(url) or not target_exists(url):
            continue
        natural = image_width(local_target(url))
        if natural is None or natural <= COLUMN_PX:
            continue
        scaled = (width and width.strip().rstrip("px").isdigit() and int(width.strip().rstrip("px")) <= COLUMN_PX) \
            or FULL_WIDTH.search(style) \
            or any(css_scales(css, "object" if tag == "object" else "img") for css in sheets)
        if not scaled:
            problems.append(f"{rel}:{line}: image '{url}' is {natural} px wide, wider than the {COLUMN_PX}-px column, "
                            "and nothing scales it (a stylesheet rule 'img { max-width: 100%; height: auto }': "
                            "docs/site.css), so its right side is cut off")
    for line, what in parser.details_problems:
        problems.append(f"{rel}:{line}: {what}")
    for line, text, code in parser.text:
        if code == "inline":  # inline code: only what never belongs in code
            if "\\|" in text:
                problems.append(f"{rel}:{line}: a literal \\| in code (an escaped pipe in a table): '{text.strip()[:80]}'")
            continue
        for m in DASHED_OPTION.finditer(text):
            problems.append(f"{rel}:{line}: '{m.group(1)}' looks like an option written with '--' that "
                            "became a dash: put it in backticks")
        for m in GLUED_UNIT.finditer(text):
            problems.append(f"{rel}:{line}: a number glued to its unit: '{m.group(0)}'")
        if "\u2018" in text:
            problems.append(f"{rel}:{line}: a code span read as a `quotation' (a ' inside backticks?): "
                            f"'{text.strip()[:80]}'")
        for needle, what in MANGLED:
            if needle in text:
                problems.append(f"{rel}:{line}: {what}: '{text.strip()[:80]}'")
        problems.extend(f"{rel}:{line}: {what}" for what in literal_markup(text))
        if "`" in TEX_QUOTE.sub("", text):
            problems.append(f"{rel}:{line}: a literal backtick (a code span in link text or inside \"quotes\"?): "
                            f"'{text.strip()[:80]}'")
        if parser.markdown_page and (LITERAL_STRONG.search(text) or LITERAL_EM.search(text)):
            problems.append(f"{rel}:{line}: a literal * or ** (emphasis that opens on a backtick, a quote or a tag "
                            f"is shown as typed: use <em>/<b>): '{text.strip()[:80]}'")
    return problems


def literal_markup(text):
    """What a reader would see as typed markup in `text` (already unescaped once, as shown): HTML tags
    and entities. Doxygen 1.9.4 escapes a heading's title, so "## Exercise (*think*)" shows
    "(<em>think</em>)" (tools/doxygen_filter.py makes a heading's emphasis plain text)."""
    found = []
    tags = list(dict.fromkeys(m.group(0) for m in LITERAL_TAG.finditer(text)))
    if tags:
        found.append(f"a literal {', '.join(tags)} (HTML shown as text: emphasis or code in a heading? "
                     f"see tools/doxygen_filter.py): '{text.strip()[:80]}'")
    entities = list(dict.fromkeys(m.group(0) for m in LITERAL_ENTITY.finditer(text)))
    if entities:
        found.append(f"a literal {', '.join(entities)} (an entity escaped twice): '{text.strip()[:80]}'")
    return found


def js_value(text, name):
    """The array assigned to `var name =` in Doxygen's navigation scripts, as Python lists; None if absent."""
    m = re.search(rf"\bvar\s+{re.escape(name)}\s*=\s*", text)
    if not m:
        return None
    start, depth, quoted, escaped = m.end(), 0, False, False
    for i in range(start, len(text)):
        c = text[i]
        if quoted:
            escaped = not escaped and c == "\\"
            if c == '"' and not escaped:
                quoted = False
            elif c != "\\":
                escaped = False
            continue
        if c == '"':
            quoted = True
        elif c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                try:
                    return json.loads(text[start:i + 1])
                except ValueError:
                    return None
    return None


def nav_tree(root):
    """The navigation tree [(title, page file, children)], its top level under the project's root entry;
    None when the site has no tree (GENERATE_TREEVIEW = NO)."""
    data = root / "navtreedata.js"
    if not data.is_file():
        return None
    tree = js_value(data.read_text(encoding="utf-8", errors="replace"), "NAVTREE")
    if not tree or not isinstance(tree[0], list) or len(tree[0]) < 3:
        return None

    def expand(children, seen):
        if isinstance(children, str):  # the children live in NAME.js
            if children in seen or not (root / f"{children}.js").is_file():
                return []
            seen = seen | {children}
            children = js_value((root / f"{children}.js").read_text(encoding="utf-8", errors="replace"), children)
        out = []
        for entry in children or []:
            if isinstance(entry, list) and len(entry) >= 2:
                url = entry[1] if isinstance(entry[1], str) else ""
                page = urllib.parse.unquote(urllib.parse.urlsplit(url).path)
                out.append((entry[0], page, expand(entry[2] if len(entry) > 2 else None, seen)))
        return out

    return expand(tree[0][2], set())


def chapter_of(source):
    m = CHAPTER_SOURCE.match(source or "")
    return m.group(1) if m else None


def check_structure(root, parsed):
    """The site-wide checks: the main page, and where the pages sit in the navigation tree.
    `parsed` maps each page's path relative to root (POSIX) to its Page."""
    problems = []
    sources = {name: (p.source or (pathlib.PurePosixPath(name).stem if name.startswith("md_") else None))
               for name, p in parsed.items()}
    # Chapter NN's own page: the README of chapters/NN_*/ (the shortest md_chapters_NN_..._README).
    chapters = {}
    for name, source in sources.items():
        nn = chapter_of(source)
        if nn and source.endswith("_README") and (nn not in chapters or len(source) < len(sources[chapters[nn]])):
            chapters[nn] = name
    index = parsed.get("index.html")
    if index is not None and chapters:
        linked = {urllib.parse.unquote(urllib.parse.urlsplit(url).path) for _, url in index.links}
        for nn, name in sorted(chapters.items()):
            if name not in linked:
                problems.append(f"index.html: the main page does not link chapter {nn} ({name}): "
                                "add it to the list in docs/index.md")
        shown = "".join(index.all_text)
        for command in MAIN_PAGE_COMMANDS:
            if command not in shown:
                problems.append(f"index.html: the main page does not show the command '{command}' "
                                "(README.md's \"The two commands\"): add it to docs/index.md")
    order = sorted(chapters)
    for k, nn in enumerate(order):  # each chapter's page links the one before it and the one after it
        page = parsed.get(chapters[nn])
        linked = {urllib.parse.unquote(urllib.parse.urlsplit(url).path) for _, url in page.links} if page else set()
        for other, which in ((order[k - 1] if k > 0 else None, "previous"),
                             (order[k + 1] if k + 1 < len(order) else None, "next")):
            if other is not None and chapters[other] not in linked:
                problems.append(f"{chapters[nn]}: chapter {nn}'s page does not link the {which} chapter, {other} "
                                f"({chapters[other]}): tools/doxygen_filter.py adds those links to a chapter's README")
    tree = nav_tree(root)
    if tree is None:
        return problems
    where = {}  # page → the chapter page whose subtree holds it ("" at the top level)

    def walk(entries, under):
        for title, page, children in entries:
            where.setdefault(page, under)
            walk(children, page if under == "" and page in chapters.values() else under)

    walk(tree, "")

    def titles(entries):
        for title, page, children in entries:
            yield title, page
            yield from titles(children)

    for title, page in titles(tree):  # navtree.js shows each title as text (createTextNode): no markup
        problems.extend(f"navtreedata.js: the navigation tree's entry for {page}: {what}" for what in literal_markup(title))
    order = [chapter_of(sources.get(page)) for _, page, _ in tree if page in chapters.values()]
    if order != sorted(order):
        problems.append(f"navtreedata.js: the chapters are out of order in the navigation tree: {', '.join(order)}")
    for name, source in sorted(sources.items()):
        nn = chapter_of(source)
        if not nn or name == chapters.get(nn):
            continue
        if name not in where:
            problems.append(f"navtreedata.js: page {name} (from chapter {nn}'s folder) is not in the navigation tree")
        elif where[name] != chapters[nn]:
            place = "at the top level" if where[name] == "" else f"under {where[name]}"
            problems.append(f"navtreedata.js: page {name} (from chapter {nn}'s folder) is {place}, not under its "
                            f"chapter {chapters[nn]}: make it a @subpage of the chapter in docs/pages.dox")
    return problems


def check_site(root):
    root = pathlib.Path(root)
    if not root.is_dir():
        return [f"{root}: no such folder (build the site first: doxygen docs/Doxyfile)"]
    pages = sorted(root.rglob("*.html"))
    if not pages:
        return [f"{root}: no HTML pages"]
    problems, parsed = [], {}
    for page in pages:
        parser = parse_page(page)
        parsed[page.relative_to(root).as_posix()] = parser
        problems.extend(check_page(page, root, parser))
    problems.extend(check_structure(root, parsed))
    return problems


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("html_dir", nargs="?", default="build/docs/html", help="the built site (default: %(default)s)")
    args = p.parse_args(argv)
    problems = check_site(args.html_dir)
    for line in problems:
        print(line)
    pages = len(list(pathlib.Path(args.html_dir).rglob("*.html"))) if pathlib.Path(args.html_dir).is_dir() else 0
    print(f"check_site: {pages} pages, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
