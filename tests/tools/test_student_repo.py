"""Tests of tools/make_student_repo's README: the student repository gets its own README, made from
tools/student_readme.md with sections of the course README pulled in, and never one that names
what the student repository lacks (solutions/, the maintainers' tools)."""
import importlib.machinery
import importlib.util
import pathlib
import shutil
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
loader = importlib.machinery.SourceFileLoader("course_make_student_repo", str(ROOT / "tools" / "make_student_repo"))
spec = importlib.util.spec_from_loader("course_make_student_repo", loader)
msr = importlib.util.module_from_spec(spec)
loader.exec_module(msr)


class StudentReadme(unittest.TestCase):
    def fake_root(self, readme, template):
        tmp = pathlib.Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, tmp)
        (tmp / "tools").mkdir()
        (tmp / "README.md").write_text(readme)
        (tmp / msr.STUDENT_README).write_text(template)
        return tmp

    def test_the_real_one_names_no_solutions_and_has_the_chapters(self):
        text = msr.student_readme(ROOT)
        self.assertNotIn("solutions", text)
        self.assertIn("tools/progress", text)
        chapters = sorted(p.name for p in (ROOT / "chapters").iterdir() if p.is_dir())
        for ch in chapters:  # every chapter's row, pulled from the course README's table
            self.assertIn(f"chapters/{ch}/README.md", text, ch)

    def test_sections_are_pulled_from_the_course_readme(self):
        root = self.fake_root("# C\n\n## Chapters\n| a | b |\n| --- | --- |\n| 1 | 2 |\n\nprose\n\n## License\nMIT\n",
                              "# S\n<!-- course-readme: Chapters table -->\n<!-- course-readme: License -->\n")
        text = msr.student_readme(root)
        self.assertIn("| 1 | 2 |", text)
        self.assertNotIn("prose", text)
        self.assertIn("## License\nMIT", text)

    def test_a_readme_naming_solutions_is_refused(self):
        root = self.fake_root("# C\n\n## License\nsee solutions/ for the answers\n",
                              "# S\n<!-- course-readme: License -->\n")
        with self.assertRaises(SystemExit) as e:
            msr.student_readme(root)
        self.assertIn("solutions", str(e.exception))

    def test_a_missing_section_is_refused(self):
        root = self.fake_root("# C\n", "# S\n<!-- course-readme: Nowhere -->\n")
        with self.assertRaises(SystemExit):
            msr.student_readme(root)


class SnippetMarkers(unittest.TestCase):
    """A chapter's code blocks are pulled from files the student repository has: chapters/ and
    common/, never solutions/ (which it lacks)."""

    def test_every_snippet_marker_names_a_file_students_have(self):
        import re
        bad = []
        for doc in sorted((ROOT / "chapters").glob("*/*.md")):
            for k, line in enumerate(doc.read_text().splitlines(), 1):
                m = re.match(r"\s*<!--\s*snippet:\s*(\S+)", line)
                if m and (m.group(1).startswith("solutions/") or not (ROOT / m.group(1)).is_file()):
                    bad.append(f"{doc.relative_to(ROOT)}:{k}: {m.group(1)}")
        self.assertEqual(bad, [])


if __name__ == "__main__":
    unittest.main()


class StudentBanner(unittest.TestCase):
    def test_the_banner_names_no_solutions_file(self):
        text = "// Generated from solutions/06_ladder/dot.cu by tools/make_exercises.py. Fill the TODO(student) holes\nbody\n"
        out = msr.student_banner(text)
        self.assertNotIn("solutions/", out)
        self.assertTrue(out.startswith("// Generated from the course's solution by tools/make_exercises.py. Fill"))
        self.assertTrue(out.endswith("\nbody\n"))

    def test_every_generated_file_of_the_course_loses_it(self):
        me = msr.load_make_exercises()
        for rel, text in me.course_files(ROOT).items():
            self.assertNotIn("solutions/", msr.student_banner(text).partition("\n")[0], rel)

    def test_other_files_are_left_alone(self):
        self.assertEqual(msr.student_banner("#pragma once\n"), "#pragma once\n")



class StudentPresets(unittest.TestCase):
    def test_the_solutions_presets_are_dropped(self):
        import json
        data = json.loads(msr.student_presets((ROOT / "CMakePresets.json").read_text()))
        names = [p["name"] for p in data["configurePresets"]]
        self.assertIn("student", names)
        self.assertNotIn("solutions", names)
        self.assertNotIn("native", names)  # inherits solutions
        for kind in ("buildPresets", "testPresets"):
            self.assertTrue(all(p["configurePreset"] in names for p in data[kind]), kind)
        self.assertEqual([w["name"] for w in data["workflowPresets"]], ["student"])
        self.assertNotIn("solutions", json.dumps(data))
