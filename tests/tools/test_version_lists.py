"""Tests of tools/version_lists.py: the registry is the one list of versions. No GPU, no build."""
import importlib.util
import pathlib
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("version_lists", ROOT / "tools" / "version_lists.py")
vl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(vl)

SOURCE = '''// Chapter 42 -- a test.
//
// Versions (ch42::versions(); one with `42_x --kernel NAME`):
//   first    the first one          42_x --kernel first
//   second   the second, which has  42_x --kernel second
//            a continuation line (exercise)
//   third    "quoted, with commas"  42_x --kernel third
//
// More text.

namespace ch42 {
const std::vector<course::Version<Launcher>>& versions() {
  // name, description, launcher, exercise
  static const std::vector<course::Version<Launcher>> registry = {
      {"first", "the first one", run_first},
      {"second", "the second, {braced} and \\"quoted\\"",
       {run_second, true}, true},
      {"third", "split " "literal", run_third, false},
  };
  return registry;
}
}
'''


class FakeChapter:
    def __init__(self, text, name="42_x"):
        self.text, self.name, self.number = text, name, name[:2]
        self.source = ROOT / "solutions" / name / "x.cu"
        self.function, self.versions = vl.parse_registry(text)
        self.element = vl.REGISTRY.search(text).group(2)

    @property
    def names(self):
        return [v.name for v in self.versions]


class Registry(unittest.TestCase):
    def test_parses_names_descriptions_and_exercise_flags(self):
        function, versions = vl.parse_registry(SOURCE)
        self.assertEqual(function, "versions")
        self.assertEqual([v.name for v in versions], ["first", "second", "third"])
        self.assertEqual(versions[1].description, 'the second, {braced} and "quoted"')
        self.assertEqual(versions[2].description, "split literal")
        self.assertEqual([v.exercise for v in versions], [False, True, False])

    def test_a_pairs_registry_of_make_pair_calls_is_parsed(self):
        text = """const std::vector<Pair>& versions() {
  static const std::vector<Pair> registry = {
      make_pair<float, float>("f32_f32", "float32 . float32, float32", "cublasSdot", run_a, 0, true),
      make_pair<float, bool>("f32_bool", "float32 . bool (a mask)", "convert y, cublasSdot",
                             run_b, 8, false),
  };
  return registry;
}"""
        function, versions = vl.parse_registry(text)
        self.assertEqual(function, "versions")
        self.assertEqual([(v.name, v.description, v.exercise) for v in versions],
                         [("f32_f32", "float32 . float32, float32", True), ("f32_bool", "float32 . bool (a mask)", False)])

    def test_duplicate_name_is_refused(self):
        with self.assertRaises(vl.ListError):
            vl.parse_registry(SOURCE.replace('{"third"', '{"first"'))

    def test_every_course_chapter_has_a_registry(self):
        chapters = vl.chapters()
        self.assertGreaterEqual(len(chapters), 9)
        for ch in chapters:
            self.assertTrue(ch.versions, ch.name)


class TableOfContents(unittest.TestCase):
    def test_toc_names_in_order_without_continuation_lines(self):
        self.assertEqual(vl.parse_toc(SOURCE), ["first", "second", "third"])

    def test_a_missing_or_reordered_entry_is_reported(self):
        self.assertEqual(vl.check_toc(FakeChapter(SOURCE)), [])
        missing = SOURCE.replace('//   third    "quoted, with commas"  42_x --kernel third\n', "")
        self.assertEqual(len(vl.check_toc(FakeChapter(missing))), 1)
        reordered = SOURCE.replace("//   first ", "//   FIRST ").replace("//   third ", "//   first ") \
                          .replace("//   FIRST ", "//   third ")
        self.assertEqual(len(vl.check_toc(FakeChapter(reordered))), 1)


class Readme(unittest.TestCase):
    def test_table_is_written_between_the_markers(self):
        ch = FakeChapter(SOURCE)
        text = "intro\n<!-- versions: begin -->\nold table\n<!-- versions: end -->\nafter\n"
        out = vl.sync_readme(ch, text, "README.md")
        self.assertIn("| `second` | the second, {braced} and \"quoted\" (**exercise**) | `42_x --kernel second` |", out)
        self.assertNotIn("old table", out)
        self.assertTrue(out.startswith("intro\n<!-- versions: begin -->\n| version |"))
        self.assertTrue(out.endswith("<!-- versions: end -->\nafter\n"))
        self.assertEqual(vl.sync_readme(ch, out, "README.md"), out)

    def test_missing_markers_are_an_error(self):
        with self.assertRaises(vl.ListError):
            vl.sync_readme(FakeChapter(SOURCE), "no table here\n", "README.md")


class Manifest(unittest.TestCase):
    def manifest(self, kernel="second", version="second", glob="ch42 second: *"):
        return {"correctness": [{"tests": glob}],
                "performance": [{"name": "p", "args": ["--kernel", kernel, "--n", "2^20"], "row": {"version": version}}]}

    def test_agreeing_manifest_passes(self):
        self.assertEqual(vl.check_manifest(FakeChapter(SOURCE), self.manifest(), "m.json"), [])

    def test_paired_row_of_a_version_passes_and_of_an_unknown_one_fails(self):
        ch = FakeChapter(SOURCE)
        self.assertEqual(vl.check_manifest(ch, self.manifest(version="second_paired"), "m.json"), [])
        self.assertEqual(len(vl.check_manifest(ch, self.manifest(version="gone_paired"), "m.json")), 1)

    def test_unknown_kernel_row_and_missing_exercise_entry_fail(self):
        ch = FakeChapter(SOURCE)
        self.assertEqual(len(vl.check_manifest(ch, self.manifest(kernel="gone"), "m.json")), 1)
        # a comma list: every name must be a version
        self.assertEqual(vl.check_manifest(ch, self.manifest(kernel="first,second"), "m.json"), [])
        self.assertEqual(len(vl.check_manifest(ch, self.manifest(kernel="first,gone"), "m.json")), 1)
        self.assertEqual(len(vl.check_manifest(ch, self.manifest(version="gone"), "m.json")), 1)
        self.assertEqual(len(vl.check_manifest(ch, self.manifest(glob="ch42 other: *"), "m.json")), 1)


class Course(unittest.TestCase):
    def test_the_course_agrees_with_its_registries(self):
        problems, changed = vl.run(check=True)
        self.assertEqual(problems, [])
        self.assertEqual(changed, [])

    def test_list_output_is_parsed(self):
        self.assertEqual(vl.parse_list_output("a      one thing\nlong_name  two  spaces\n\n"),
                         [("a", "one thing"), ("long_name", "two  spaces")])


if __name__ == "__main__":
    unittest.main()
