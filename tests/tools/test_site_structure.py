"""Tests of tools/check_site.py's checks for issue 29: the main page, figures wider than the column,
literal Markdown, pages out of place in the tree. Each feeds a small site that has one problem and
sees the check fail on it; a site without it passes. No Doxygen, no GPU."""
import importlib.util
import json
import pathlib
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("check_site", ROOT / "tools" / "check_site.py")
cs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cs)

SCALING_CSS = "div.image img, div.image object { max-width: 100%; height: auto; }\n"


def png(width, height=100):
    """The first bytes of a PNG of that size: all check_site reads of it."""
    return (b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\x0dIHDR" + width.to_bytes(4, "big") + height.to_bytes(4, "big")
            + b"\x08\x06\x00\x00\x00")


def html(body, css=("doxygen.css",), markdown_page=True, source=None, nav=True):
    """A page; chapter 07's (source md_chapters_07_library_README) links its previous chapter, 01, as
    tools/doxygen_filter.py makes every chapter's page do, unless nav is False."""
    if nav and source == "md_chapters_07_library_README":
        body += '\n<div class="chapter-nav"><span class="prev">Previous: <a href="md_chapters_01_timing_README.html">01</a></span></div>'
    links = "".join(f'<link href="{c}" rel="stylesheet" type="text/css"/>' for c in css)
    anchor = f'<a class="anchor" id="{source}"></a>' if source else ""
    doc = "PageDoc" if markdown_page else "contents"
    return (f"<!DOCTYPE html>\n<html><head><title>t</title>{links}</head><body>\n"
            f'<div class="{doc}"><div class="textblock">{anchor}\n{body}\n</div></div>\n</body></html>\n')


def nav(entries):
    return "var NAVTREE =\n[\n  [ \"dotcourse\", \"index.html\", " + json.dumps(entries) + " ]\n];\n" \
           "var NAVTREEINDEX = [ \"index.html\" ];\n"


# A small good site: two chapters, chapter 07 with an appendix and a Python page under it.
CH01 = "md_chapters_01_timing_README.html"
INDEX = (f'<a href="{CH01}">01</a> <a href="ch07_library.html#md_chapters_07_library_README">07</a>'
         '<div class="fragment"><div class="line">tools/run_course.sh</div><div class="line">tools/test.sh</div></div>')
GOOD_TREE = [["Chapter 01", CH01, None],
             ["Chapter 07", "ch07_library.html", "ch07_library"]]
CH07_CHILDREN = [["What you will learn", "ch07_library.html#autotoc_md1", None],
                 ["Appendix", "ch07_library_appendix.html", None],
                 ["dotcourse for Python", "md_chapters_07_library_python_README.html", None]]


class SiteStructure(unittest.TestCase):
    def site(self, index=INDEX, tree=GOOD_TREE, ch07_children=CH07_CHILDREN, css=SCALING_CSS, extra=None,
             files=None):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        root = pathlib.Path(tmp.name)
        pages = {
            "index.html": html(index, css=("doxygen.css", "site.css")),
            CH01: html('<p>Chapter 01.</p><p>Next: <a class="el" href="ch07_library.html">07</a></p>',
                       css=("doxygen.css", "site.css")),
            "ch07_library.html": html('<p>Chapter 07.</p><div class="image"><img src="wide.png" alt=""/></div>',
                                      css=("doxygen.css", "site.css"), source="md_chapters_07_library_README"),
            "ch07_library_appendix.html": html("<p>How.</p>", source="md_chapters_07_library_APPENDIX"),
            "md_chapters_07_library_python_README.html": html("<p>Python.</p>"),
            "classFoo.html": html("<p>char **argv, *d_result</p>", markdown_page=False),
        }
        pages.update(extra or {})
        for name, text in pages.items():
            (root / name).write_text(text, encoding="utf-8")
        (root / "doxygen.css").write_text("body { color: black; }\n", encoding="utf-8")
        if css is not None:
            (root / "site.css").write_text(css, encoding="utf-8")
        (root / "wide.png").write_bytes(png(2250))
        for name, data in (files or {}).items():
            (root / name).write_bytes(data)
        if tree is not None:
            (root / "navtreedata.js").write_text(nav(tree), encoding="utf-8")
            (root / "ch07_library.js").write_text("var ch07_library =\n" + json.dumps(ch07_children) + ";",
                                                  encoding="utf-8")
        return cs.check_site(root)

    def assertOneProblem(self, problems, *needles):
        self.assertEqual(len(problems), 1, problems)
        for needle in needles:
            self.assertIn(needle, problems[0])

    def test_good_site_passes(self):
        self.assertEqual(self.site(), [])

    def test_chapter_missing_from_the_main_page_fails(self):
        index = INDEX.replace('<a href="ch07_library.html#md_chapters_07_library_README">07</a>', "")
        self.assertOneProblem(self.site(index=index), "index.html", "chapter 07", "docs/index.md")

    def test_main_page_without_the_readme_commands_fails(self):
        index = INDEX.replace('<div class="line">tools/test.sh</div>', "")
        self.assertOneProblem(self.site(index=index), "index.html", "tools/test.sh")

    def test_wide_image_without_scaling_fails(self):
        problems = self.site(css="img.footer { border: 0 }\n")
        self.assertOneProblem(problems, "ch07_library.html", "wide.png", "2250 px", "max-width")

    def test_wide_image_with_a_width_attribute_passes(self):
        page = html('<div class="image"><img src="wide.png" width="900" alt=""/></div>',
                    source="md_chapters_07_library_README")
        self.assertEqual(self.site(css=None, extra={"ch07_library.html": page}), [])

    def test_narrow_image_needs_no_scaling(self):
        self.assertEqual(self.site(css="", files={"wide.png": png(800)}), [])

    def test_wide_svg_object_needs_an_object_rule(self):
        svg = b'<svg xmlns="http://www.w3.org/2000/svg" width="1800" height="300"></svg>'
        page = html('<div class="image"><object type="image/svg+xml" data="fig.svg"></object></div>',
                    css=("site.css",), source="md_chapters_07_library_README")
        self.assertOneProblem(self.site(css="div.image img { max-width: 100% }", extra={"ch07_library.html": page},
                                        files={"fig.svg": svg}), "fig.svg", "1800 px")
        self.assertEqual(self.site(extra={"ch07_library.html": page}, files={"fig.svg": svg}), [])

    def test_literal_strong_fails(self):
        page = html("<ul><li>**<code>pct_link</code>.** The share.</li></ul>", source="md_chapters_07_library_README")
        problems = self.site(extra={"ch07_library.html": page})
        self.assertEqual(len(problems), 2, problems)  # the opening and the closing text nodes
        self.assertTrue(all("literal * or **" in p for p in problems))

    def test_literal_emphasis_fails(self):
        page = html('<p>still disappointed: *"the memcpy is the main cost?"*</p>',
                    source="md_chapters_07_library_README")
        self.assertOneProblem(self.site(extra={"ch07_library.html": page}), "literal * or **", "memcpy")

    def test_literal_backtick_fails_on_any_page(self):
        page = html('<p>with <a class="el" href="index.html">`__dp4a`</a>, exact</p>', markdown_page=False)
        self.assertOneProblem(self.site(extra={"classFoo.html": page}), "classFoo.html", "backtick", "__dp4a")

    def test_a_tools_quote_like_this_is_not_markup(self):
        page = html("<p>add the directory containing `dotcourse.pc' to the path</p>",
                    source="md_chapters_07_library_README")
        self.assertEqual(self.site(extra={"ch07_library.html": page}), [])

    def test_stars_that_are_not_markup_pass(self):
        page = html("<p>float32*float32 and x[i]*y[i]; 2 * n; <code>**argv</code></p>",
                    source="md_chapters_07_library_README")
        self.assertEqual(self.site(extra={"ch07_library.html": page}), [])

    def test_page_at_the_top_level_is_out_of_place(self):
        tree = GOOD_TREE + [["dotcourse for Python", "md_chapters_07_library_python_README.html", None]]
        children = [c for c in CH07_CHILDREN if "python" not in c[1]]
        self.assertOneProblem(self.site(tree=tree, ch07_children=children),
                              "md_chapters_07_library_python_README.html", "top level", "docs/pages.dox")

    def test_page_under_another_chapter_is_out_of_place(self):
        tree = [["Chapter 01", CH01, [["Appendix", "ch07_library_appendix.html", None]]],
                ["Chapter 07", "ch07_library.html", "ch07_library"]]
        children = [c for c in CH07_CHILDREN if "appendix" not in c[1]]
        self.assertOneProblem(self.site(tree=tree, ch07_children=children),
                              "ch07_library_appendix.html", f"under {CH01}")

    def test_chapter_without_its_neighbours_links_fails(self):
        page = html("<p>Chapter 07.</p>", source="md_chapters_07_library_README", nav=False)
        self.assertOneProblem(self.site(extra={"ch07_library.html": page}), "ch07_library.html", "chapter 07",
                              "previous chapter, 01")
        extra = {CH01: html("<p>Chapter 01, no link onward.</p>")}
        self.assertOneProblem(self.site(extra=extra), CH01, "next chapter, 07")

    def test_chapters_out_of_order_fail(self):
        self.assertOneProblem(self.site(tree=list(reversed(GOOD_TREE))), "out of order", "07, 01")

    def test_page_missing_from_the_tree_fails(self):
        children = [c for c in CH07_CHILDREN if "python" not in c[1]]
        self.assertOneProblem(self.site(ch07_children=children), "python_README", "not in the navigation tree")

    def test_js_value_reads_escaped_quotes(self):
        text = 'var NAVTREE =\n[\n  [ "a \\"b\\" ]", "x.html", null ]\n];\nvar OTHER = [];'
        self.assertEqual(cs.js_value(text, "NAVTREE"), [['a "b" ]', "x.html", None]])

    def test_image_width_reads_png_and_svg(self):
        with tempfile.TemporaryDirectory() as tmp:
            p = pathlib.Path(tmp)
            (p / "a.png").write_bytes(png(2125))
            (p / "b.svg").write_text('<svg width="900" height="10"/>')
            (p / "c.svg").write_text('<svg viewBox="0 0 1500 300"/>')
            (p / "d.png").write_bytes(b"")
            self.assertEqual([cs.image_width(p / n) for n in ("a.png", "b.svg", "c.svg", "d.png")],
                             [2125, 900, 1500, None])


if __name__ == "__main__":
    unittest.main()


class FilterQuotes(unittest.TestCase):
    """tools/doxygen_filter.py leaves "double-quoted" text and escaped backticks as Doxygen shows them."""
    df = None

    @classmethod
    def setUpClass(cls):
        spec = importlib.util.spec_from_file_location("doxygen_filter", ROOT / "tools" / "doxygen_filter.py")
        cls.df = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(cls.df)

    def md(self, text):
        return self.df.filter_markdown(text, pathlib.Path("x.md"))

    def test_an_option_inside_double_quotes_stays_as_typed(self):
        self.assertEqual(self.md('says so ("not measured (--no-performance)"), not --quiet'),
                         'says so ("not measured (--no-performance)"), not `--quiet`')

    def test_quotes_inside_a_code_span_do_not_open_a_quotation(self):
        self.assertEqual(self.md('`ctest --preset student -R "ch04 x"`. and --y'),
                         '`ctest --preset student -R "ch04 x"`. and `--y`')

    def test_an_escaped_backtick_opens_no_code_span(self):
        text = "containing \\`dotcourse.pc' to the\nPKG path or `LD_LIBRARY_PATH` above."
        self.assertEqual(self.md(text), text)
