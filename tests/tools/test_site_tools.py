"""Tests of tools/check_site.py (on small HTML pages), tools/doxygen_filter.py and
tools/run_metadata.py: no GPU, no Doxygen, no build."""
import importlib.util
import json
import pathlib
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


cs = load("check_site")
df = load("doxygen_filter")


def page(body):
    return f"<!DOCTYPE html>\n<html><head><title>t</title></head><body>\n{body}\n</body></html>\n"


class CheckSite(unittest.TestCase):
    def site(self, pages, files=()):
        """A site in a temporary folder: {name: body} pages plus empty files; its problems."""
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        root = pathlib.Path(tmp.name)
        for name, body in pages.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(page(body), encoding="utf-8")
        for name in files:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(b"")
        return cs.check_site(root)

    def test_clean_site_passes(self):
        problems = self.site({"index.html": '<a href="other.html#sec">x</a> <img src="plot.png"/> '
                                            '<a href="https://example.org/missing">web</a> <a href="#top">top</a> '
                                            "<p>run with <code>--help</code>; 2759 GB/s, a \u2013 b</p>",
                              "other.html": "<p>fine</p>"}, files=["plot.png"])
        self.assertEqual(problems, [])

    def test_broken_link_fails(self):
        problems = self.site({"index.html": '<a href="nowhere.html">x</a>'})
        self.assertEqual(len(problems), 1)
        self.assertIn("broken link 'nowhere.html'", problems[0])
        self.assertTrue(problems[0].startswith("index.html:"))

    def test_link_into_a_subfolder_and_back(self):
        problems = self.site({"index.html": '<a href="sub/a.html">a</a>',
                              "sub/a.html": '<a href="../index.html">up</a> <a href="../gone.html">gone</a>'})
        self.assertEqual(len(problems), 1)
        self.assertIn("sub/a.html", problems[0])
        self.assertIn("gone.html", problems[0])

    def test_missing_image_fails(self):
        problems = self.site({"index.html": '<img src="../../results/reference/h100/plots/01_timing.png" alt="x"/>'})
        self.assertEqual(len(problems), 1)
        self.assertIn("missing image", problems[0])

    def test_option_as_en_dash_fails_outside_code_only(self):
        problems = self.site({"index.html": "<p>Run it with \u2013help or (\u2014csv FILE).</p>"
                                            "<pre>x \u2013y</pre><code>a \u2013b</code>"})
        self.assertEqual(len(problems), 2)
        self.assertIn("\u2013help", problems[0])
        self.assertIn("\u2014csv", problems[1])

    def test_mangled_markup_fails(self):
        problems = self.site({"index.html": "<h1>What lands in &lt;tt&gt;--out&lt;/tt&gt;</h1>"
                                            "<td><code>a\\|b</code></td><p>measured 2759GB/s</p>"
                                            "<p>\u2018ctest -L \u2019^x</p>"})
        text = "\n".join(problems)
        self.assertIn("literal <tt>", text)
        self.assertIn("literal \\|", text)
        self.assertIn("glued to its unit: '9GB/s'", text)
        self.assertIn("quotation", text)

    def test_literal_markup_in_a_heading_fails(self):
        """Issue 36: chapter 06's "(*think*)" heading showed "(<em>think</em>)" and check_site passed."""
        problems = cs.check_site(ROOT / "tests" / "tools" / "fixtures" / "site_markup")
        self.assertEqual(len(problems), 3, problems)
        self.assertTrue(problems[0].startswith("ch06_ladder.html:"), problems[0])
        self.assertIn("a literal <em>, </em>", problems[0])
        self.assertIn("(<em>think</em>)", problems[0])
        self.assertIn("a literal &lt;, &gt; (an entity escaped twice)", problems[1])
        self.assertIn("navigation tree", problems[2])
        self.assertIn("(<em>think</em>)", problems[2])

    def test_only_markup_shown_as_text_fails(self):
        self.assertEqual(self.site({"index.html": "<h2>Exercise 5 (<em>think</em>)</h2><p>std::vector&lt;float&gt;, "
                                                  "a &lt; b &gt; c, x &amp; y, <code>&lt;em&gt;&amp;lt;</code></p>"}),
                         [])
        for shown in ("&lt;b&gt;bold&lt;/b&gt;", "&lt;br/&gt;", "&lt;a href=\"x.html\"&gt;", "&amp;nbsp;", "&amp;#160;"):
            problems = self.site({"index.html": f"<p>see {shown} here</p>"})
            self.assertEqual(len(problems), 1, (shown, problems))
            self.assertIn("a literal", problems[0])

    def test_details_split_from_their_summary_fail(self):
        good = "<details>\n <summary>Why?</summary>\nBecause. <code>x</code></details>"
        self.assertEqual(self.site({"index.html": good}), [])
        split = ("<p><details>\n <summary>Why?</summary></details></p>"
                 "<p><details>\nBecause.</details></p>")
        problems = self.site({"index.html": split})
        self.assertEqual(len(problems), 2)
        self.assertIn("nothing to unfold", problems[0])
        self.assertIn("does not start with its <summary>", problems[1])

    def test_main_exit_codes(self):
        with tempfile.TemporaryDirectory() as tmp:
            (pathlib.Path(tmp) / "index.html").write_text(page("<p>ok</p>"))
            self.assertEqual(cs.main([tmp]), 0)
            (pathlib.Path(tmp) / "index.html").write_text(page('<img src="gone.png">'))
            self.assertEqual(cs.main([tmp]), 1)
            self.assertEqual(cs.main([str(pathlib.Path(tmp) / "no-such-folder")]), 1)


class DoxygenFilter(unittest.TestCase):
    def md(self, text, files=()):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        root = pathlib.Path(tmp.name)
        md = root / "chapters" / "01_x" / "README.md"
        md.parent.mkdir(parents=True)
        for f in files:
            (root / f).parent.mkdir(parents=True, exist_ok=True)
            (root / f).write_bytes(b"")
        return df.filter_markdown(text, md)

    def test_code_folded_in_details_becomes_pre_with_no_blank_line(self):
        text = ("<details>\n<summary>After exercise 1</summary>\n\n<!-- answer-after: exercise 1 -->\n"
                "<!-- snippet: x.cu tag -->\n```cuda\nint a = b < c;\n\nint d;\n```\n<!-- /snippet -->\n</details>\n")
        out = self.md(text)
        inside = out[out.index("<details>"):out.index("</details>")]
        self.assertIn("<pre><code>\nint a = b &lt; c;\n&nbsp;\nint d;\n</code></pre>", inside)
        self.assertNotIn("\n\n", inside)
        self.assertNotIn("```", inside)

    def test_details_lose_their_blank_lines_and_keep_the_line_count(self):
        text = "a\n\n<details>\n<summary>Q?</summary>\n\nThe answer,\n`code`.\n</details>\n\nb\n"
        out = self.md(text)
        self.assertIn("<details>\n<summary>Q?</summary>\nThe answer,\n`code`.\n</details>\n", out)
        self.assertEqual(out.count("\n"), text.count("\n"))
        fenced = "```\n<details>\n\nx\n```\n"
        self.assertEqual(self.md(fenced).split("\n")[:4], ["```", "<details>", "", "x"])

    def test_local_image_becomes_its_file_name(self):
        out = self.md("![a plot](../../results/plots/01_x.png)\n![web](https://x.org/a.png)\n",
                      files=["results/plots/01_x.png"])
        self.assertIn("![a plot](01_x.png)", out)
        self.assertIn("![web](https://x.org/a.png)", out)

    def test_sync_markers_are_dropped_and_the_space_kept(self):
        out = self.md("read at <!--n:7-->2759<!--/n--> GB/s\n")
        self.assertEqual(out, "read at 2759 GB/s\n")

    def test_the_numbers_block_becomes_blank_lines(self):
        out = self.md("read at <!--n:7-->2759<!--/n--> GB/s\nend\n\n"
                      "<!-- numbers (tools/sync_snippets.py): ...\n7: 01.csv version=a col=gbps fmt=.0f\n-->\n")
        self.assertEqual(out, "read at 2759 GB/s\nend\n\n\n\n\n")

    def test_code_spans_are_left_alone(self):
        text = "write `<!--/n--> GB/s` and `![x](../../results/plots/01_x.png)`\n"
        self.assertEqual(self.md(text, files=["results/plots/01_x.png"]), text)

    def test_cuda_fences_become_cpp_and_code_is_untouched(self):
        out = self.md("```cuda\nx --y; `z\n```\n")
        self.assertEqual(out, "```cpp\nx --y; `z\n```\n")

    def test_options_in_prose_become_code(self):
        self.assertEqual(self.md("run with --help or `--csv F`\n"), "run with `--help` or `--csv F`\n")

    def test_code_span_across_a_line_break_is_joined(self):
        out = self.md("see `a --csv\nFILE` here\nnext\n\nafter\n")
        self.assertEqual(out.split("\n\n")[0], "see `a --csv FILE` here\nnext")
        self.assertEqual(out.count("\n"), "see `a --csv\nFILE` here\nnext\n\nafter\n".count("\n"))

    def test_heading_code_becomes_text(self):
        self.assertEqual(self.md("## What lands in `--out`\n"), "## What lands in \\--out\n")

    def test_heading_emphasis_becomes_text(self):
        """Doxygen 1.9.4 escapes a heading's title: "(*think*)" showed as "(<em>think</em>)" (issue 36)."""
        self.assertEqual(self.md("### Exercise 5 — the waves of a grid (*think*)\n"),
                         "### Exercise 5 — the waves of a grid (think)\n")
        self.assertEqual(self.md("## **Bold** and _under_ and <em>tag</em>, `a*b` x*y\n"),
                         "## Bold and under and tag, a\\*b x*y\n")
        self.assertEqual(self.md("## dot_kernel_v2 and 2 * n\n"), "## dot_kernel_v2 and 2 * n\n")
        self.assertEqual(self.md("a (*think*) in prose stays\n"), "a (*think*) in prose stays\n")

    def test_table_header_names_may_break_after_an_underscore(self):
        out = self.md("| n | final_vs_cublas | `a_b` |\n| --- | --- | --- |\n| 1 | x_y | 2 |\n")
        self.assertEqual(out, "| n | final_\u200bvs_\u200bcublas | `a_b` |\n| --- | --- | --- |\n| 1 | x_y | 2 |\n")

    def test_chapter_pages_link_their_neighbours(self):
        with tempfile.TemporaryDirectory() as tmp:
            chapters = pathlib.Path(tmp) / "chapters"
            for name, title in (("01_a", "# Chapter 01 — first"), ("02_b", '# Chapter 02 — "quoted" {#ch02_b}'),
                                ("03_c", "# Chapter 03 — last")):
                (chapters / name).mkdir(parents=True)
                (chapters / name / "README.md").write_text(title + "\n\ntext\n", encoding="utf-8")
                (chapters / name / "APPENDIX.md").write_text("# Appendix\n", encoding="utf-8")
            first = df.chapter_nav(chapters / "01_a" / "README.md")
            self.assertNotIn("Previous", first)
            self.assertIn('Next: @ref ch02_b "Chapter 02 — quoted" →', first)
            middle = df.chapter_nav(chapters / "02_b" / "README.md")
            self.assertIn('Previous: @ref md_chapters_01_a_README "Chapter 01 — first"', middle)
            self.assertIn('Next: @ref md_chapters_03_c_README "Chapter 03 — last"', middle)
            self.assertNotIn("Next", df.chapter_nav(chapters / "03_c" / "README.md"))
            self.assertEqual(df.chapter_nav(chapters / "02_b" / "APPENDIX.md"), "")

    def test_quote_in_code_and_pipe_in_table(self):
        self.assertIn("``ctest -L '^(a|b)$'``", self.md("2. `ctest -L '^(a|b)$'`: x\n"))
        out = self.md("| `--tree chapters\\|solutions` | what |\n")
        self.assertIn("<code>\\--tree chapters\\|solutions</code>", out)

    def test_header_comments_quote_options(self):
        out = df.filter_header("int reps = 0;  ///< repetitions (--reps)\nint a = b--c; // x --y\n")
        self.assertEqual(out, "int reps = 0;  ///< repetitions (`--reps`)\nint a = b--c; // x --y\n")




class RunMetadata(unittest.TestCase):
    def test_writes_every_field_and_a_date_for_its_chapter(self):
        rm = load("run_metadata")
        with tempfile.TemporaryDirectory() as tmp:
            out = pathlib.Path(tmp) / "sub" / "run_metadata.json"
            no_bin = str(pathlib.Path(tmp) / "no-bin")
            self.assertEqual(rm.main(["--out", str(out), "--bin", no_bin, "--chapter", "05_many_blocks"]), 0)
            meta = json.loads(out.read_text())
        self.assertEqual(set(meta), {"chapters"})
        record = meta["chapters"]["05_many_blocks"]
        fields = {"gpu", "device", "driver", "cuda", "cpu", "commit", "date"}
        # telemetry only where a GPU was found (clocks and throttle state before and after)
        self.assertEqual(set(record), fields | ({"telemetry"} if record["gpu"] is not None else set()))
        self.assertRegex(record["date"], r"^\d{4}-\d{2}-\d{2}$")
        if record["gpu"] is None:
            self.assertIsNone(record["driver"])  # no GPU: no guessed driver either

    def test_a_chapter_run_keeps_the_other_chapters_records(self):
        rm = load("run_metadata")
        with tempfile.TemporaryDirectory() as tmp:
            out = pathlib.Path(tmp) / "run_metadata.json"
            rm.update(out, ["01_timing", "06_ladder"], {"date": "2026-11-22", "commit": "aaa"})
            meta = rm.update(out, ["06_ladder"], {"date": "2026-11-23", "commit": "bbb"})
        self.assertEqual(rm.for_chapter(meta, "01_timing")["date"], "2026-11-22")
        self.assertEqual(rm.for_chapter(meta, "06_ladder")["commit"], "bbb")
        self.assertEqual(rm.for_chapter(meta, "09_streams"), {})
        self.assertEqual(rm.for_chapter({"gpu": "old", "date": "x"}, "09_streams")["gpu"], "old")  # older file

    def test_a_chapter_name_is_required(self):
        rm = load("run_metadata")
        with self.assertRaises(SystemExit):
            rm.main(["--out", "x.json", "--chapter", "not a chapter"])

    def test_the_reference_results_have_a_record_per_chapter(self):
        results = ROOT / "results" / "reference" / "h100"
        meta = json.loads((results / "run_metadata.json").read_text())
        chapters = {p.stem for p in results.glob("[0-9][0-9]_*.csv") if (ROOT / "chapters" / p.stem).is_dir()}
        self.assertTrue(chapters)
        self.assertEqual(sorted(c for c in chapters if not meta["chapters"].get(c)), [])
        for ch in chapters:
            self.assertRegex(meta["chapters"][ch]["date"], r"^\d{4}-\d{2}-\d{2}$", ch)


if __name__ == "__main__":
    unittest.main()
