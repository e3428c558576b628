"""Tests of tools/make_exercises.py and tools/sync_snippets.py: no GPU, no build."""
import importlib.util
import pathlib
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


mx = load("make_exercises")
ss = load("sync_snippets")

SOLUTION = """int f(int x) {
  // BEGIN SOLUTION
  return x + 1;
  // STUB
  //> // TODO(student): add one.
  //> return 0;
  // END SOLUTION
}
"""


class MakeExercises(unittest.TestCase):
    def test_hole_becomes_stub_with_indentation(self):
        text, holes = mx.student_text(SOLUTION, "solutions/x.cu")
        self.assertEqual(holes, 1)
        self.assertTrue(text.startswith("// Generated from solutions/x.cu"))
        self.assertIn("  // TODO(student): add one.\n  return 0;\n", text)
        self.assertNotIn("x + 1", text)
        self.assertNotIn("BEGIN SOLUTION", text)

    def test_file_without_holes_is_copied_verbatim(self):
        text, holes = mx.student_text("int g();\n", "solutions/g.hpp")
        self.assertEqual((text, holes), ("int g();\n", 0))

    def test_marker_errors_name_the_line(self):
        bad = {
            "unclosed": "// BEGIN SOLUTION\nx;\n// STUB\n//> y;\n",
            "no stub": "// BEGIN SOLUTION\nx;\n// END SOLUTION\n",
            "nested": "// BEGIN SOLUTION\n// BEGIN SOLUTION\n",
            "stray end": "x;\n// END SOLUTION\n",
            "bare stub line": "// BEGIN SOLUTION\nx;\n// STUB\ny;\n// END SOLUTION\n",
            "stub marker outside": "//> y;\n",
        }
        for what, text in bad.items():
            with self.subTest(what), self.assertRaises(mx.MarkerError):
                mx.student_text(text, "f.cu")


class SyncSnippets(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.results = pathlib.Path(self.tmp.name)
        (self.results / "t.csv").write_text(
            "version,config,n,median_ms,gbps\n"
            "a,\"float, iters=1\",1024,2.0,100\n"
            "b,\"float, iters=1\",1024,0.5,400\n"
            "a,double,1024,4.0,100\n")

    def tearDown(self):
        self.tmp.cleanup()

    def render(self, text):
        return ss.sync_text(text, self.results, {})

    def num(self, spec, key="k1"):
        """A one-number document: the marker in a sentence, its spec in the numbers block."""
        return self.render(f"It reads <!--n:{key}-->?<!--/n--> GB/s.\n\n"
                           f"<!-- numbers (tools/sync_snippets.py): ...\n{key}: {spec}\n-->\n")

    def test_num_picks_one_row_and_formats(self):
        out = self.num('t.csv version=b config="float, iters=1" col=gbps fmt=.0f')
        self.assertIn("It reads <!--n:k1-->400<!--/n--> GB/s.", out)

    def test_num_ratio(self):
        out = self.num('t.csv version=a config="float, iters=1" col=median_ms over="version=b;config=float, iters=1" fmt=.1f')
        self.assertIn("<!--n:k1-->4.0<!--/n-->", out)

    def test_num_must_match_exactly_one_row(self):
        for spec in ("t.csv version=a col=gbps", "t.csv version=zzz col=gbps", "t.csv version=b col=nope",
                     "missing.csv version=b col=gbps"):
            with self.assertRaises(ss.SyncError):
                self.num(spec)

    def test_num_keys_and_block_agree(self):
        block = "<!-- numbers (tools/sync_snippets.py)\n1: t.csv version=b config=\"float, iters=1\" col=gbps\n-->\n"
        out = self.render("<!--n:1-->?<!--/n--> and again <!--n:1-->?<!--/n-->\n" + block)
        self.assertEqual(out.count("<!--n:1-->400<!--/n-->"), 2)  # a key may mark several places
        with self.assertRaisesRegex(ss.SyncError, "n:2 has no line"):
            self.render("<!--n:1-->?<!--/n--> <!--n:2-->?<!--/n-->\n" + block)
        with self.assertRaisesRegex(ss.SyncError, "no n:KEY marker uses 1"):
            self.render("no marker\n" + block)
        with self.assertRaisesRegex(ss.SyncError, "two lines"):
            self.render("<!--n:1-->?<!--/n-->\n" + block.replace("-->\n", "1: t.csv version=a col=gbps\n-->\n"))
        with self.assertRaisesRegex(ss.SyncError, "not 'KEY: CSV"):
            self.render("<!--n:1-->?<!--/n-->\n" + block.replace("-->\n", "what is this\n-->\n"))
        with self.assertRaisesRegex(ss.SyncError, "one, at its end"):
            self.render("<!--n:1-->?<!--/n-->\n" + block + block)

    def test_the_long_marker_is_refused(self):
        with self.assertRaisesRegex(ss.SyncError, "line 2: a '<!-- num: ... -->' marker"):
            self.render("text\n<!-- num: t.csv version=b col=gbps -->?<!-- /num -->\n")

    def test_every_document_uses_short_markers(self):
        for doc in ss.documents():
            text = doc.read_text()
            self.assertIsNone(ss.OLD_NUM.search(text), doc)
            for line in text.splitlines():
                for m in ss.NUM.finditer(line):
                    self.assertLessEqual(len(m.group(1)) + len(m.group(4)), 24, f"{doc}: {line}")

    def test_table(self):
        out = self.render("<!-- table: t.csv where=config=double cols=version,median_ms -->\nold\n<!-- /table -->")
        self.assertIn("| version | median_ms |", out)
        self.assertIn("| a | 4 |", out)
        self.assertNotIn("old", out)

    def test_negatives_table_lists_every_case(self):
        out = self.render("<!-- negatives -->\nSTALE-ROW\n<!-- /negatives -->")
        cases = sorted(d.name for d in (ROOT / "tests" / "negative").iterdir() if (d / "case.json").is_file())
        self.assertNotIn("STALE-ROW", out)
        rows = [line for line in out.splitlines() if line.startswith("| `")]
        self.assertEqual([r.split("`")[1] for r in rows], cases)
        self.assertIn("compute-sanitizer racecheck on `ch06 v3_sequential", out)

    def test_snippet_drops_solution_markers_and_stubs(self):
        src = ROOT / "build" / "test_snippet_src.cu"
        src.parent.mkdir(exist_ok=True)
        src.write_text("// [tag]\n  int y = 1;\n  // BEGIN SOLUTION\n  y += 1;\n  // STUB\n  //> // TODO\n"
                       "  // END SOLUTION\n// [tag]\n")
        try:
            out = self.render("<!-- snippet: build/test_snippet_src.cu tag -->\nold\n<!-- /snippet -->")
        finally:
            src.unlink()
        self.assertIn("```cuda\nint y = 1;\ny += 1;\n```", out)
        self.assertNotIn("TODO", out)

    def test_a_nested_region_is_printed_once_in_its_own_snippet(self):
        src = ROOT / "build" / "test_snippet_nested.cu"
        src.parent.mkdir(exist_ok=True)
        src.write_text("// [outer]\nint a = 1;\n// [inner]\nint b = 2;\n// [inner]\nint c = 3;\n// [outer]\n")
        try:
            outer = self.render("<!-- snippet: build/test_snippet_nested.cu outer -->\n<!-- /snippet -->")
            inner = self.render("<!-- snippet: build/test_snippet_nested.cu inner -->\n<!-- /snippet -->")
        finally:
            src.unlink()
        self.assertIn("int a = 1;\n// ... [inner]: printed where the text comes to it\nint c = 3;", outer)
        self.assertNotIn("int b", outer)
        self.assertIn("```cuda\nint b = 2;\n```", inner)

    def test_snippet_marker_must_appear_twice(self):
        with self.assertRaises(ss.SyncError):
            ss.extract("README.md", "no-such-tag")


if __name__ == "__main__":
    unittest.main()
