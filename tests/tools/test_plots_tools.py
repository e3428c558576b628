"""Tests of the plot commands (plots/render_all.py, tools/plots.sh), the course's palette
(plots/palette.py), which plots the chapters show, and tools/run_metadata.py --fill-missing.
No GPU; the tests that draw need a Python with matplotlib (.venv/) and are skipped without one."""
import importlib.util
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


palette = load(ROOT / "plots" / "palette.py", "palette")
run_metadata = load(ROOT / "tools" / "run_metadata.py", "run_metadata")


def has_matplotlib(python):
    if not pathlib.Path(python).exists():
        return False
    return subprocess.run([str(python), "-c", "import matplotlib"], capture_output=True).returncode == 0


def render_all(*args):
    """plots/render_all.py run with this Python (it needs no matplotlib to refuse): (code, stdout, stderr)."""
    r = subprocess.run([sys.executable, str(ROOT / "plots" / "render_all.py"), *map(str, args)],
                       capture_output=True, text=True, cwd=ROOT)
    return r.returncode, r.stdout, r.stderr


class RenderAll(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.results = pathlib.Path(tmp.name) / "results"
        self.results.mkdir()
        (self.results / "01_timing.csv").write_text("version,n\n")  # any chapter but 11

    def test_a_chapter_without_its_csvs_names_them_and_the_reference_in_one_line(self):
        for args in (["--chapter", "11_multi_gpu", "--results", self.results],
                     ["--results", self.results, "--chapter", "11"],
                     ["--results", self.results, "--out", self.results / "p", "--chapter", "11_multi_gpu"]):
            code, out, err = render_all(*args)
            self.assertEqual(code, 2, (args, out, err))
            self.assertEqual(len(err.strip().splitlines()), 1, err)
            self.assertNotIn("Traceback", err)
            self.assertIn("11_multi_gpu.csv", err)
            self.assertIn("11_multi_gpu_scaling.csv", err)  # every CSV the reference has for the chapter
            self.assertIn("results/reference/h200x2", err)
            self.assertFalse((self.results / "p").exists())

    def test_an_unknown_chapter_is_exit_2(self):
        code, _, err = render_all("--results", self.results, "--chapter", "99")
        self.assertEqual(code, 2)
        self.assertIn("'99' is not a chapter", err)
        self.assertIn("07_library", err)

    def test_a_missing_results_folder_is_exit_2(self):
        code, _, err = render_all("--results", self.results / "nowhere", "--chapter", "07")
        self.assertEqual(code, 2)
        self.assertIn("nowhere", err)
        self.assertIn("07_library.csv", err)
        self.assertIn("results/reference/h100", err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)

    @unittest.skipUnless(has_matplotlib(VENV_PYTHON), "needs .venv/ with matplotlib (tools/plots.sh makes it)")
    def test_plots_sh_takes_chapter_in_any_position_and_draws_only_it(self):
        ref = ROOT / "results" / "reference" / "h100"
        for name in ("04_one_block.csv", "04_one_block_race.csv", "02_cpu_dot.csv", "run_metadata.json"):
            shutil.copy(ref / name, self.results / name)
        out = self.results / "plots"
        r = subprocess.run(["bash", str(ROOT / "tools" / "plots.sh"), "--results", str(self.results), "--chapter", "04",
                            "--out", str(out)], capture_output=True, text=True, cwd=ROOT)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(sorted(p.name for p in out.glob("*.png")), ["04_one_block.png", "04_one_block_race.png"])

    @unittest.skipUnless(has_matplotlib(VENV_PYTHON), "needs .venv/ with matplotlib (tools/plots.sh makes it)")
    def test_a_plot_script_without_its_csv_is_one_line_not_a_traceback(self):
        r = subprocess.run([str(VENV_PYTHON), str(ROOT / "plots" / "11_multi_gpu.py"), "--results", str(self.results),
                            "--out", str(self.results / "p")], capture_output=True, text=True, cwd=ROOT)
        self.assertEqual(r.returncode, 2)
        self.assertNotIn("Traceback", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("results/reference/h200x2", r.stderr)


class Palette(unittest.TestCase):
    def test_engines_paths_and_phases_have_one_colour_each(self):
        for name, table in (("ENGINES", palette.ENGINES), ("PATHS", palette.PATHS), ("PEERS", palette.PEERS)):
            self.assertEqual(len(set(table.values())), len(table), f"two {name} share a colour: {table}")
        self.assertEqual(palette.PHASES["copy x"], palette.ENGINES["h2d"])
        self.assertEqual(palette.PHASES["kernel"], palette.ENGINES["kernel"])
        self.assertEqual(palette.PHASES["copy back"], palette.ENGINES["d2h"])
        self.assertFalse(set(palette.PATHS.values()) & set(palette.ENGINES.values()),
                         "a path drawn in an engine's colour")

    def test_stream_shades_keep_the_engine_and_differ(self):
        shades = [palette.stream_shade("h2d", s, 4) for s in range(4)]
        self.assertEqual(shades[0], palette.ENGINES["h2d"])
        self.assertEqual(len(set(shades)), 4)
        self.assertEqual(palette.lighter("#000000", 1.0), "#ffffff")

    def test_the_chapter_scripts_take_their_colours_from_the_palette(self):
        """No colour literal in the scripts that draw paths, engines, phases or peers: a second copy drifts
        (chapter 08's two figures and chapter 09's two timelines disagreed)."""
        for stem in ("03_one_thread", "07_library", "08_pinned", "09_streams", "10_dtypes", "11_multi_gpu"):
            text = (ROOT / "plots" / f"{stem}.py").read_text()
            self.assertEqual(re.findall(r"[\"']#[0-9a-fA-F]{6}[\"']", text), [], f"plots/{stem}.py")

    def test_colour_check_fails_when_two_chapters_give_a_name_two_colours(self):
        cc = load(ROOT / "plots" / "colour_check.py", "colour_check")
        self.assertEqual(cc.name_of("pinned: cudaMallocHost"), "pinned")
        self.assertEqual(cc.name_of("allgather, 2 GPUs"), "allgather")
        self.assertEqual(cc.name_of("cuBLAS (1.0)"), "cublas")
        clash = {"speed_of_light": {("06", "#1f77b4"), ("07", "#000000"), ("09", "#000000")}}
        self.assertEqual(cc.conflicts(clash), {"speed_of_light": {"#000000": ["07", "09"], "#1f77b4": ["06"]}})
        shade = {"h2d": {("09", "#ff7f0e"), ("11", "#ff7f0e"), ("11", "#ffb97a")}}  # a lighter H2D beside H2D
        self.assertEqual(cc.conflicts(shade), {})
        one_chapter = {"v1": {("06", "#1f77b4"), ("06", "#d62728")}}
        self.assertEqual(cc.conflicts(one_chapter), {})

    @unittest.skipUnless(has_matplotlib(VENV_PYTHON), "no .venv with matplotlib (tools/plots.sh makes it)")
    def test_every_name_keeps_its_colour_across_the_chapters(self):
        r = subprocess.run([str(VENV_PYTHON), str(ROOT / "plots" / "colour_check.py")], capture_output=True, text=True,
                           cwd=ROOT)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("0 name(s) with more than one colour", r.stdout)

    def test_unknown_path_gets_a_colour_no_known_path_has(self):
        self.assertNotIn(palette.path_color("some_new_path"), palette.PATHS.values())


# Plots that the chapters do not show yet: the line each chapter's text should get. When a line is
# added, remove the plot from here (the test fails until then, so no plot is drawn for nobody).
PENDING = {}


class PlotsShown(unittest.TestCase):
    def test_every_reference_plot_is_shown_by_a_chapter(self):
        text = "\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "chapters").glob("*/*.md")))
        shown = set(re.findall(r"!\[[^\]]*\]\([^)]*/([\w.-]+\.png)\)", text))
        drawn = {p.name for p in (ROOT / "results" / "reference").glob("*/plots/*.png")}
        unshown = drawn - shown
        self.assertEqual(sorted(unshown - set(PENDING)), [],
                         "plots drawn that no chapter shows: show each in its chapter, or stop drawing it")
        self.assertEqual(sorted(set(PENDING) - unshown), [],
                         "shown now (or no longer drawn): remove from PENDING in this test")


class FillMissing(unittest.TestCase):
    def meta_file(self, record):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        path = pathlib.Path(tmp.name) / "run_metadata.json"
        path.write_text(json.dumps({"chapters": {"08_pinned": record}}))
        return path

    def test_fills_only_null_fields_and_keeps_the_rest(self):
        path = self.meta_file({"gpu": "G", "driver": None, "cpu": "old cpu", "date": "2026-11-23", "commit": "abc"})
        here = {"gpu": "G", "driver": "580.1", "cpu": "new cpu", "date": "2026-11-26", "commit": "def"}
        filled = run_metadata.fill_missing(path, ["08_pinned"], here, ["driver", "cpu"])
        self.assertEqual(filled, {"08_pinned": ["driver"]})
        record = json.loads(path.read_text())["chapters"]["08_pinned"]
        self.assertEqual(record, {"gpu": "G", "driver": "580.1", "cpu": "old cpu", "date": "2026-11-23", "commit": "abc"})

    def test_refuses_another_machine_and_an_absent_record(self):
        path = self.meta_file({"gpu": "G", "driver": None})
        with self.assertRaises(ValueError):
            run_metadata.fill_missing(path, ["08_pinned"], {"gpu": None, "driver": "1"}, ["driver"])
        with self.assertRaises(KeyError):
            run_metadata.fill_missing(path, ["02_cpu_dot"], {"gpu": "G", "driver": "1"}, ["driver"])
        self.assertIsNone(json.loads(path.read_text())["chapters"]["08_pinned"]["driver"])


if __name__ == "__main__":
    unittest.main()
