"""Tests of the Colab notebook (notebooks/course.ipynb) and its runner (tools/run_notebook.py): no GPU,
no build. The notebook's structure: the README's badge, the cells in the course's order, no outputs
committed, the one chapter variable; GPU cells that say "skipped: no GPU" and never "passed". The
runner: a broken cell is exit 1 naming the cell, --chapter replaces the variable, --expect-skip fails
without a skip line."""
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "course.ipynb"
RUNNER = ROOT / "tools" / "run_notebook.py"
# The code cells by id, in the order a student runs them: install, clone, configure, build, test, run, plot.
ORDER = ["settings", "helpers", "card", "cmake", "clone", "install", "configure", "build", "tests",
         "progress", "run", "plot"]
BADGE = re.compile(r"\[!\[Open in Colab\]\(https://colab\.research\.google\.com/assets/colab-badge\.svg\)\]"
                   r"\(([^)]+)\)")


def source(cell):
    s = cell["source"]
    return s if isinstance(s, str) else "".join(s)


def notebook(*codes):
    """A notebook of code cells, with ids c0, c1, ..."""
    return {"cells": [{"cell_type": "code", "id": f"c{i}", "metadata": {}, "execution_count": None,
                       "outputs": [], "source": code} for i, code in enumerate(codes)],
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


class Structure(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.nb = json.loads(NOTEBOOK.read_text())
        cls.code = [c for c in cls.nb["cells"] if c["cell_type"] == "code"]
        cls.by_id = {c["id"]: source(c) for c in cls.code}

    def test_readme_has_the_badge(self):
        readme = (ROOT / "README.md").read_text()
        m = BADGE.search(readme)
        self.assertIsNotNone(m, "README.md: no 'Open in Colab' badge")
        self.assertTrue(m[1].endswith("notebooks/course.ipynb"), f"the badge links to {m[1]}, not the notebook")
        if not m[1].startswith("http"):
            self.assertTrue((ROOT / m[1]).is_file(), f"the badge's link {m[1]} is no file")

    def test_cells_in_order(self):
        self.assertEqual([c["id"] for c in self.code], ORDER)
        self.assertEqual(self.nb["cells"][0]["cell_type"], "markdown", "the notebook opens with its text")

    def test_no_outputs_committed(self):
        for cell in self.code:
            self.assertEqual(cell["outputs"], [], f"cell {cell['id']} has outputs: clear them before committing")
            self.assertIsNone(cell["execution_count"], f"cell {cell['id']} has an execution count")

    def test_one_chapter_variable_at_the_top(self):
        lines = [l for l in source(self.code[0]).splitlines() if l.strip() and not l.startswith("#")]
        self.assertEqual(len(lines), 1, "the first code cell is the one setting a student changes")
        m = re.fullmatch(r'CHAPTER = "(\d\d)"\s*#.*', lines[0])
        self.assertIsNotNone(m, f"not CHAPTER = \"NN\": {lines[0]}")
        self.assertTrue(list((ROOT / "chapters").glob(f"{m[1]}_*")), f"no chapter {m[1]}")
        for cell in self.code[1:]:
            self.assertNotRegex(source(cell), r"(?m)^CHAPTER\s*=", f"cell {cell['id']} sets CHAPTER again")

    def test_gpu_cells_say_skipped_never_passed(self):
        for cid in ("card", "tests", "run"):
            self.assertIn("skipped: no GPU", self.by_id[cid], f"cell {cid} does not say 'skipped: no GPU'")
        for cid, text in self.by_id.items():
            self.assertNotRegex(text, r"print\([^)]*\bpassed\b", f"cell {cid} prints 'passed' itself")

    def test_configures_for_the_card(self):
        self.assertIn("compute_cap", self.by_id["card"])
        self.assertRegex(self.by_id["configure"], r"CMAKE_CUDA_ARCHITECTURES=\{ARCH\}")
        self.assertIn('"75-virtual"', self.by_id["configure"], "no configure without a GPU")
        self.assertRegex(self.by_id["tests"], r"ctest .*-L ch\{CHAPTER\}")
        self.assertIn("tools/progress", self.by_id["progress"])
        self.assertIn("results/reference/h100", self.by_id["plot"])

    def test_clone_source_from_the_environment(self):
        self.assertIn('os.environ.get("COURSE_CLONE_FROM")', self.by_id["clone"])
        self.assertIn("tools/setup.sh", self.by_id["install"], "install through the course's own set-up")


class Runner(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def run_notebook(self, nb, *args, engine="plain"):
        path = self.dir / "nb.ipynb"
        path.write_text(json.dumps(nb))
        return subprocess.run([sys.executable, str(RUNNER), str(path), "--engine", engine,
                               "--workdir", str(self.dir / "work"), *args],
                              capture_output=True, text=True, timeout=120)

    def test_all_cells_run(self):
        r = self.run_notebook(notebook('CHAPTER = "02"  # pick', "x = 2", "print('x is', x)"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("x is 2", r.stdout)
        self.assertIn("all 3 code cells ran", r.stdout)
        executed = json.loads((self.dir / "work" / "course.executed.ipynb").read_text())
        self.assertEqual(len(executed["cells"]), 3)

    def test_a_broken_cell_fails_and_is_named(self):
        r = self.run_notebook(notebook("x = 1", "raise ValueError('broken on purpose')", "print('after')"))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("cell c1 failed", r.stdout)
        self.assertIn("broken on purpose", r.stdout)
        self.assertNotIn("after", r.stdout.split("== notebook ==")[0].split("== cell c1 ==")[1])

    def test_a_cell_that_exits_fails(self):
        r = self.run_notebook(notebook("import sys; sys.exit(0)", "print('after')"))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("cell c0 failed", r.stdout)

    def test_chapter_replaced_in_memory(self):
        nb = notebook('CHAPTER = "01"  # pick', "print('chapter', CHAPTER)")
        r = self.run_notebook(nb, "--chapter", "05")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("chapter 05", r.stdout)
        self.assertEqual(json.loads((self.dir / "nb.ipynb").read_text()), nb, "the notebook file changed")
        r = self.run_notebook(notebook("print(1)"), "--chapter", "05")
        self.assertEqual(r.returncode, 2, "a notebook without CHAPTER = \"NN\" is bad input")
        r = self.run_notebook(nb, "--chapter", "5")
        self.assertEqual(r.returncode, 2)

    def test_expect_skip(self):
        r = self.run_notebook(notebook("print('ran')"), "--expect-skip")
        self.assertEqual(r.returncode, 1, "no 'skipped: no GPU' line, yet --expect-skip passed")
        r = self.run_notebook(notebook("print('skipped: no GPU (chapter needs one)')"), "--expect-skip")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_clone_from_is_passed_to_the_notebook(self):
        r = self.run_notebook(notebook("import os; print('from', os.environ['COURSE_CLONE_FROM'])"),
                              "--clone-from", str(ROOT))
        if not (ROOT / ".git").exists():
            self.assertEqual(r.returncode, 2)
            return
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"from {ROOT}", r.stdout)
        r = self.run_notebook(notebook("print(1)"), "--clone-from", str(self.dir))
        self.assertEqual(r.returncode, 2, "a folder that is no git checkout is bad input")

    def test_nbclient_engine_fails_on_a_broken_cell(self):
        pythons = [p for p in (sys.executable, "/usr/bin/python3") if os.access(p, os.X_OK) and subprocess.run(
            [p, "-c", "import nbclient, nbformat, ipykernel"], capture_output=True).returncode == 0]
        if not pythons:
            self.skipTest("no Python with nbclient, nbformat and ipykernel here (COURSE_SETUP_NOTEBOOK=1 tools/setup.sh)")
        r = self.run_notebook(notebook("y = 3", "print('y is', y)"), engine="nbclient")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("y is 3", r.stdout)
        r = self.run_notebook(notebook("y = 3", "1 / 0", "print('after')"), engine="nbclient")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("cell c1 failed", r.stdout)
        self.assertIn("ZeroDivisionError", r.stdout)


if __name__ == "__main__":
    unittest.main()
