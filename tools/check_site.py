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
  - markup shown as text outside code: a literal "<tt>", "\\|", "<!--" or entity; a number glued
    to its unit ("2759GB/s"); a code span Doxygen read as a `quotation'.

Standard library only, so CI needs nothing installed for it.
"""
import argparse
import html.parser
import pathlib
import re
import sys
import urllib.parse

# A dash glued to a lowercase word, after a space, a bracket or the start: "–help", "(—csv".
DASHED_OPTION = re.compile(r"(?:^|[\s(\[{'\"/])([\u2013\u2014][a-z][a-z0-9_-]*)")
MANGLED = [("<tt>", "a literal <tt> (a code span inside a heading?)"),
           ("</tt>", "a literal </tt>"),
           ("\\|", "a literal \\| (an escaped pipe in a table)"),
           ("<!--", "a literal HTML comment"),
           ("&#", "a literal character entity"),
           ("&amp;", "a doubly escaped &")]
# A number glued to its unit: Doxygen swallowed the space after a sync marker ("2759GB/s").
GLUED_UNIT = re.compile(r"\d(?:GB/s|TB/s|ms|µs|ns|GiB|MiB|KiB|MB|KB)\b")
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
        if tag == "object" and a.get("data"):
            self.images.append((line, a["data"]))
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
        if data.strip() and self.details:
            if self.details[-1][1] is None:
                self.details[-1][1] = False  # text before any <summary>
            elif self.details[-1][2]:
                self.details[-1][3] = True
        if data.strip() and self.code_kind() != "block":
            self.text.append((self.getpos()[0], data, self.code_kind()))


def check_page(page_path, root):
    """Problems of one HTML file, as strings "FILE:LINE: what"."""
    parser = Page()
    parser.feed(page_path.read_text(encoding="utf-8", errors="replace"))
    parser.close()
    rel = page_path.relative_to(root)
    problems = []

    def target_exists(url):
        path = urllib.parse.unquote(urllib.parse.urlsplit(url).path)
        if not path:
            return True  # "?query" or "#anchor" alone: this page
        target = (page_path.parent / path).resolve()
        return target.exists()

    for line, url in parser.links:
        if is_local(url) and not target_exists(url):
            problems.append(f"{rel}:{line}: broken link '{url}'")
    for line, url in parser.images:
        if is_local(url) and not target_exists(url):
            problems.append(f"{rel}:{line}: missing image '{url}'")
        elif not is_local(url) and not url.startswith(("http://", "https://", "data:")):
            problems.append(f"{rel}:{line}: image '{url}' is neither in the site nor a web address")
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
    return problems


def check_site(root):
    root = pathlib.Path(root)
    if not root.is_dir():
        return [f"{root}: no such folder (build the site first: doxygen docs/Doxyfile)"]
    pages = sorted(root.rglob("*.html"))
    if not pages:
        return [f"{root}: no HTML pages"]
    problems = []
    for page in pages:
        problems.extend(check_page(page, root))
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
