"""Tests of tools/make_exercises.py and tools/sync_snippets.py: no GPU, no build."""
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


class SyncCards(unittest.TestCase):
    """The cards table: one targets CSV from each reference card folder, side by side."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.base = pathlib.Path(self.tmp.name)
        self.card("h100", "NVIDIA H100 80GB HBM3", "target,n,value,threshold,met\n"
                  "t <= 1,1024,0.5,1,1\nt <= 1,2048,1.06,1,0\nroof,268435456,99.8,90,1\n")
        self.card("h200", "NVIDIA H200", "target,n,value,threshold,met\n"
                  "t <= 1,1024,0.4,1,1\nt <= 1,2048,0.8,1,1\n")

    def tearDown(self):
        self.tmp.cleanup()

    def card(self, folder, gpu, rows, name="06_x_targets.csv", chapter="06_x"):
        d = self.base / folder
        d.mkdir(exist_ok=True)
        (d / name).write_text(rows)
        (d / "run_metadata.json").write_text(json.dumps({"chapters": {chapter: {"gpu": gpu}}}))

    def render(self, text, cache=None):
        return ss.sync_text(text, self.base / "h100", {} if cache is None else cache)

    def cards(self, options=""):
        return self.render(f"<!-- cards: 06_x_targets.csv{options} -->\nSTALE\n<!-- /cards -->\n")

    def test_rows_join_by_target_and_n_headed_by_each_cards_gpu(self):
        out = self.cards(" show=threshold fmt=.2f")
        self.assertNotIn("STALE", out)
        self.assertIn("| target | n | threshold | NVIDIA H100 80GB HBM3 | NVIDIA H200 |", out)
        self.assertIn("| t <= 1 | 2^10 | 1 | 0.50 met | 0.40 met |", out)
        self.assertIn("| t <= 1 | 2^11 | 1 | 1.06 unmet | 0.80 met |", out)
        self.assertIn("| roof | 2^28 | 90 | 99.80 met | — |", out)  # missing on one card

    def test_by_n_makes_a_column_per_size_and_a_row_per_target_and_card(self):
        out = self.cards(" by=n fmt=.2f").splitlines()
        self.assertEqual(out[1], "| target | card | 2^10 | 2^11 | 2^28 |")
        self.assertEqual(out[3:7], ["| t <= 1 | NVIDIA H100 80GB HBM3 | 0.50 met | 1.06 unmet | — |",
                                    "| t <= 1 | NVIDIA H200 | 0.40 met | 0.80 met | — |",
                                    "| roof | NVIDIA H100 80GB HBM3 | — | — | 99.80 met |",
                                    "| roof | NVIDIA H200 | — | — | — |"])

    def test_a_changed_value_on_a_card_makes_check_fail(self):
        synced = self.cards(" fmt=.2f")
        self.assertEqual(self.render(synced), synced)  # what --check compares: nothing to change
        self.card("h200", "NVIDIA H200", "target,n,value,threshold,met\nt <= 1,1024,0.4,1,1\nt <= 1,2048,1.2,1,0\n")
        again = self.render(synced)
        self.assertNotEqual(again, synced)
        self.assertIn("| t <= 1 | 2^11 | 1.06 unmet | 1.20 unmet |", again)

    def test_a_two_gpu_target_on_one_gpu_shows_its_note_and_loose_joins_the_names(self):
        rows = "target,value,goal,met,note\n"
        self.card("h200x2", "2 × NVIDIA H200 (NV18)", rows + '"scaling: 2 GPU(s) / 1 GPU",1.98,1.9,1,\n',
                  name="11_m_targets.csv", chapter="11_m")
        self.card("h200", "NVIDIA H200", rows + '"scaling: 1 GPU(s) / 1 GPU",1,1.9,,needs 2 GPUs\n',
                  name="11_m_targets.csv", chapter="11_m")
        doc = "<!-- cards: 11_m_targets.csv cards=h200x2,h200 loose=target -->\n<!-- /cards -->\n"
        out = self.render(doc)
        self.assertIn("| target | 2 × NVIDIA H200 (NV18) | NVIDIA H200 |", out)
        self.assertIn("| scaling: 2 GPU(s) / 1 GPU | 1.98 met | 1 (needs 2 GPUs) |", out)
        strict = self.render(doc.replace(" loose=target", ""))  # without it, the names do not join
        self.assertIn("| scaling: 2 GPU(s) / 1 GPU | 1.98 met | — |", strict)
        self.assertIn("| scaling: 1 GPU(s) / 1 GPU | — | 1 (needs 2 GPUs) |", strict)

    def test_errors(self):
        with self.assertRaisesRegex(ss.SyncError, "h300/06_x_targets.csv does not exist"):
            self.cards(" cards=h100,h300")
        with self.assertRaisesRegex(ss.SyncError, "unknown option"):
            self.cards(" colour=red")
        with self.assertRaisesRegex(ss.SyncError, "no column 'nope'"):
            self.cards(" value=nope")
        with self.assertRaisesRegex(ss.SyncError, "two cards or more"):
            self.cards(" cards=h100")
        (self.base / "h200" / "run_metadata.json").write_text(json.dumps({"chapters": {"07_y": {"gpu": "X"}}}))
        with self.assertRaisesRegex(ss.SyncError, "h200/run_metadata.json has no chapter for 06_x_targets.csv"):
            self.cards()
        self.card("h200", "NVIDIA H200", "target,n,value,met\nt,1024,1,1\nt,1024,2,1\n")
        with self.assertRaisesRegex(ss.SyncError, "two rows of h200/06_x_targets.csv"):
            self.cards()

    def test_a_number_line_may_read_a_second_card(self):
        block = "<!-- numbers (tools/sync_snippets.py)\n1: ../h200/06_x_targets.csv target=\"t <= 1\" n=2048 col=value\n-->\n"
        cache = {}
        self.assertIn("<!--n:1-->0.8<!--/n-->", self.render("<!--n:1-->?<!--/n-->\n" + block, cache))
        # the cache is per folder: the same CSV name on the first card is another file
        self.assertIn("<!--n:1-->1.06<!--/n-->", self.render("<!--n:1-->?<!--/n-->\n" + block.replace("../h200/", ""), cache))


if __name__ == "__main__":
    unittest.main()
