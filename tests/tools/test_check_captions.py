"""Tests of tools/check_captions.py (the captions against the rows): no GPU, no build. The claims are
read from the drivers' own string literals and checked on the real reference CSVs; the captions that
chapter 02 and 04 printed before issue 36 fail, and a row that contradicts a claim is named."""
import contextlib
import io
import pathlib
import shutil
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT / "tools"))
import check_captions  # noqa: E402

REFERENCE = ROOT / "results/reference/h100"


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = check_captions.main([str(a) for a in argv])
    return rc, out.getvalue() + err.getvalue()


class Parsing(unittest.TestCase):
    def test_literals_join_as_the_compiler_joins_them(self):
        source = ('// a "quoted" comment, don\'t\nstd::cout << "valid = 1 in every row "\n'
                  '  "where version!=bug_*.\\n" << n << "x = \\"y\\"" << \'"\';\n'
                  'auto s = R"(raw text)";')
        self.assertEqual(check_captions.caption_text_of_source(source),
                         ["valid = 1 in every row where version!=bug_*.\n", 'x = "y"', "raw text"])

    def test_a_claim_spans_line_breaks_and_has_conditions(self):
        claims, mentions = check_captions.parse_claims(
            "so within_bound = 0 in every row where version=sequential,\ndata=positive, n>=2^22. And")
        self.assertEqual(mentions, [])
        self.assertEqual(len(claims), 1)
        self.assertEqual((claims[0]["col"], claims[0]["value"]), ("within_bound", "0"))
        self.assertEqual(claims[0]["conds"], [("version", "=", "sequential"), ("data", "=", "positive"),
                                              ("n", ">=", "2^22")])

    def test_definitions_are_not_claims(self):
        claims, mentions = check_captions.parse_claims("(deterministic = 1: no atomics). x = 1 means y")
        self.assertEqual((claims, mentions), ([], []))

    def test_conditions(self):
        self.assertTrue(check_captions.matches("16777216", ">=", "2^24"))
        self.assertFalse(check_captions.matches("4194304", ">=", "2^24"))
        self.assertTrue(check_captions.matches("bug_shared_accumulator", "=", "bug_*"))
        self.assertTrue(check_captions.matches("pairwise", "!=", "bug_*"))
        self.assertTrue(check_captions.matches("1.0", "=", "1"))


class OnTheReferenceRows(unittest.TestCase):
    """The real rows: the reference CSVs of chapter 02 (and 04), as sync_snippets reads them."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def caption(self, text):
        path = self.dir / "caption.txt"
        path.write_text(text)
        return path

    def test_every_drivers_captions_hold_on_the_reference(self):
        rc, text = run("--strict")
        self.assertEqual(rc, 0, text)
        claims = sum(len(check_captions.parse_claims(check_captions.caption_text_of_source(p.read_text()))[0])
                     for p in (ROOT / "chapters").glob("*/main.cpp"))
        self.assertGreaterEqual(claims, 5, "chapter 02's captions state what its rows show")

    def test_the_old_caption_of_chapter_02_fails(self):
        # What 02_cpu_dot printed before issue 36: "bug_* versions are wrong on purpose (valid = 0 is
        # their point)". In a form nobody could check, it is refused as such ...
        rc, text = run("02_cpu_dot", "--output", self.caption(
            "valid = within the bound.\nbug_* versions are wrong on purpose (valid = 0 is their point).\n"))
        self.assertEqual(rc, 1, text)
        self.assertIn("cannot be checked", text)
        # ... and written as a claim, the reference rows contradict it: the race lost nothing at 2^12.
        rc, text = run("02_cpu_dot", "--output", self.caption(
            "bug_* versions are wrong on purpose: valid = 0 in every row where version=bug_*.\n"))
        self.assertEqual(rc, 1, text)
        self.assertRegex(text, r"02_cpu_dot\.csv:\d+: version=bug_shared_accumulator config=threads=16 n=4096 "
                               r"has valid = 1")

    def test_a_tolerance_is_not_a_verdict(self):
        # The accuracy table of the reference run: the plain loop leaves the bound on positive data
        # while the int accumulator's 0 sits inside it on signed data (issue 36's "contradiction").
        rc, text = run("02_cpu_dot", "--output", self.caption(
            "within_bound = 1 in every row where version!=bug_*. "
            "within_bound = 0 in every row where version=bug_*, data=signed.\n"))
        self.assertEqual(rc, 1, text)
        self.assertIn("version=sequential data=positive n=16777216 has within_bound = 0", text)
        self.assertIn("version=bug_int_accumulator data=signed n=16777216 has within_bound = 1", text)

    def test_a_changed_row_is_caught(self):
        # Chapter 02's own captions, against reference rows with one value changed.
        for csv in REFERENCE.glob("02_cpu_dot*.csv"):
            shutil.copy(csv, self.dir)
        rc, text = run("02_cpu_dot", "--results", self.dir, "--strict")
        self.assertEqual(rc, 0, text)
        path = self.dir / "02_cpu_dot.csv"
        lines = path.read_text().splitlines()
        row = next(i for i, line in enumerate(lines) if line.startswith("bug_int_accumulator,"))
        lines[row] = lines[row][: lines[row].rindex(",")] + ",1"
        path.write_text("\n".join(lines) + "\n")
        rc, text = run("02_cpu_dot", "--results", self.dir)
        self.assertEqual(rc, 1, text)
        self.assertIn(f"02_cpu_dot.csv:{row + 1}: version=bug_int_accumulator", text)

    def test_strict_wants_a_row_for_every_claim(self):
        rc, text = run("02_cpu_dot", "--strict", "--output",
                       self.caption("valid = 1 in every row where version=no_such_version."))
        self.assertEqual(rc, 1, text)
        self.assertIn("no row", text)
        rc, text = run("02_cpu_dot", "--output", self.caption("valid = 1 in every row where version=no_such_version."))
        self.assertEqual(rc, 0, text)

    def test_bad_input(self):
        self.assertEqual(run("no_such_chapter")[0], 2)
        self.assertEqual(run("02_cpu_dot", "--results", self.dir / "missing")[0], 2)
        self.assertEqual(run("--output", self.caption("x"))[0], 2)  # --output needs one chapter


if __name__ == "__main__":
    unittest.main()
