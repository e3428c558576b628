"""Tests of tools/check_lessons.py (the lesson spec): no GPU, no build. Each rule has a fixture
chapter that breaks only that rule, beside one that keeps them all."""
import importlib.util
import io
import pathlib
import tempfile
import unittest
from contextlib import redirect_stdout

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


cl = load("check_lessons")

CHECK = "".join(f"<details>\n<summary>Question {i}?</summary>\n\nAnswer {i}.\n</details>\n\n" for i in range(5))
GOOD = f"""# Chapter 03 — one thread

Why is one thread slow?

## What you will learn
- one
- two
- three

## The kernel

A [block](../../docs/glossary.md) of threads. `pinned` in a code span, <code>pinned</code> too.
<!-- pinned in a comment -->

```cuda
float pinned = 0;  // code is not prose
```

| version | what it does |
| --- | --- |
| `one` | a short cell |

## Exercise 3 — who reads element i? (think)

Think about it.

## Check yourself

{CHECK}## What to remember
- a point

{cl.APPENDIX_LINE}
"""
GLOSSARY = """# Glossary

| term | meaning | introduced in |
| --- | --- | --- |
| block, grid | a kernel runs as a grid of blocks | [01](../chapters/01_timing/README.md) |
| atomic (`atomicAdd`, `atomicCAS`) | one indivisible step | [04](../chapters/04_one_block/README.md) |
| pinned (page-locked) memory | host memory the OS may not move | [08](../chapters/08_pinned/README.md) |
| rpath, `$ORIGIN` | where the loader looks | [07](../chapters/07_library/README.md) |
| stream | a queue of GPU work | [01](../chapters/01_timing/README.md), [09](../chapters/09_streams/README.md) |
"""


class CheckLessons(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = pathlib.Path(self.tmp.name)
        (self.root / "docs").mkdir()
        (self.root / "docs" / "glossary.md").write_text(GLOSSARY)
        self.terms = cl.glossary_terms(self.root / "docs" / "glossary.md")

    def tearDown(self):
        self.tmp.cleanup()

    def chapter(self, readme=GOOD, appendix="# Chapter 03 — appendix: how the numbers were measured\n",
                name="03_one_thread"):
        folder = self.root / "chapters" / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "README.md").write_text(readme)
        if appendix is not None:
            (folder / "APPENDIX.md").write_text(appendix)
        return folder

    def problems(self, **kw):
        problems, facts = cl.check_chapter(self.chapter(**kw), self.terms, root=self.root)
        return [str(p) for p in problems], facts

    def assertOneProblem(self, readme, *fragments):
        problems, _ = self.problems(readme=readme)
        self.assertEqual(len(problems), 1, problems)
        for fragment in fragments:
            self.assertIn(fragment, problems[0])
        return problems[0]

    def test_good_chapter_passes(self):
        problems, facts = self.problems()
        self.assertEqual(problems, [])
        self.assertEqual(facts["sections"], "learn think check(5) remember link APPENDIX")

    def test_missing_sections(self):
        for title in (cl.LEARN, cl.REMEMBER, cl.CHECK):
            with self.subTest(title):
                problems, _ = self.problems(readme=GOOD.replace(title + "\n", "## Something else\n"))
                self.assertTrue(any(f"no '{title}'" in p for p in problems), problems)

    def test_check_yourself_needs_five_details(self):
        readme = GOOD.replace(CHECK, CHECK.split("<details>", 2)[0] + "<details>" + CHECK.split("<details>", 2)[1])
        problem = self.assertOneProblem(readme, "1 <details> blocks", "at least 5")
        self.assertTrue(problem.startswith("chapters/03_one_thread/README.md:"), problem)

    def test_details_after_check_yourself_do_not_count(self):
        readme = GOOD.replace("## Check yourself\n", "").replace("## What to remember", "## Check yourself\n\n## What to remember")
        problems, _ = self.problems(readme=readme)
        self.assertTrue(any("0 <details>" in p for p in problems), problems)

    def test_think_heading(self):
        self.assertOneProblem(GOOD.replace(" (think)", ""), "think exercise")
        self.assertOneProblem(GOOD.replace("## The kernel", "## The kernel (*think*)"), "2 headings")
        problems, _ = self.problems(readme=GOOD.replace("(think)", "(*think*)"))
        self.assertEqual(problems, [])

    def test_a_todo_that_spells_code(self):
        folder = self.chapter()
        (folder / "dot.cu").write_text(
            "// TODO(student) holes below (a header mentioning them is not a TODO block)\n"
            "//   race: every thread adds with += into *result\n"
            "void f() {\n"
            "  // TODO(student): *result holds the dot of x and y for every n.\n"
            "  // Tests: `ch03 one_thread: *`. See README §Exercise 1.\n"
            "}\n")
        problems, _ = cl.check_chapter(folder, self.terms, root=self.root)
        self.assertEqual([str(p) for p in problems], [])
        (folder / "dot.cu").write_text(
            "void f() {\n"
            "  // TODO(student): walk every element:\n"
            "  // for (std::size_t i = 0; i < n; ++i) sum += x[i] * y[i];\n"
            "  // then cudaMemcpy(h, d, 4, cudaMemcpyDeviceToHost).\n"
            "}\n")
        problems, _ = cl.check_chapter(folder, self.terms, root=self.root)
        shown = [str(p) for p in problems]
        self.assertEqual(len(shown), 2, shown)
        self.assertIn("dot.cu:3", shown[0])
        self.assertIn("for (", shown[0])
        self.assertIn("cudaMemcpy", shown[1])

    def test_design_heading_from_chapter_07(self):
        # Chapter 03 needs none; chapter 07 needs exactly one.
        problems, _ = self.problems()
        self.assertEqual(problems, [])
        appendix = "# Chapter 07 — appendix: how the numbers were measured\n"
        seven = GOOD.replace("# Chapter 03", "# Chapter 07")
        problems, _ = self.problems(readme=seven, name="07_library", appendix=appendix)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("design exercise", problems[0])
        designed = seven.replace("## The kernel", "## The kernel (*design*)")
        problems, facts = self.problems(readme=designed, name="07_library", appendix=appendix)
        self.assertEqual(problems, [])
        twice = designed.replace(" (think)", " (think) (*design*)")
        problems, _ = self.problems(readme=twice, name="07_library", appendix=appendix)
        self.assertTrue(any("2 headings mark a design" in p for p in problems), problems)

    def test_bullet_counts(self):
        self.assertOneProblem(GOOD.replace("- three\n", ""), "2 bullets")
        self.assertOneProblem(GOOD.replace("- a point\n", "- a\n" * 7), "7 bullets")

    def test_section_order(self):
        readme = GOOD.replace("## What you will learn\n- one\n- two\n- three\n", "")
        readme = readme.replace(cl.APPENDIX_LINE, "## What you will learn\n- one\n- two\n- three\n\n" + cl.APPENDIX_LINE)
        self.assertOneProblem(readme, "out of order")

    def test_appendix_link_is_last_line(self):
        self.assertOneProblem(GOOD.replace(cl.APPENDIX_LINE, "See the appendix."), "appendix link")
        problems, _ = self.problems(readme=GOOD + "\n\n")
        self.assertEqual(problems, [])
        # the numbers block of tools/sync_snippets.py may follow it, and nothing else
        block = "<!-- numbers (tools/sync_snippets.py): ...\n1: x.csv version=a col=gbps\n-->\n"
        problems, _ = self.problems(readme=GOOD.rstrip("\n") + "\n\n" + block)
        self.assertEqual(problems, [])
        self.assertOneProblem(GOOD.rstrip("\n") + "\n\nA last word.\n" + block, "appendix link")

    def test_appendix_file(self):
        problems, _ = self.problems(appendix=None)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("APPENDIX.md is missing", problems[0])
        problems, facts = self.problems(appendix="# Notes\n")
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("— appendix", problems[0])

    def test_word_budget_counts_prose_only(self):
        filler = "word " * 3990
        _, facts = self.problems()
        base = facts["words"]
        fenced = GOOD.replace("Think about it.", "```\n" + filler + "\n```\n| " + filler + " |\n<!-- " + filler + " -->")
        _, facts = self.problems(readme=fenced)
        self.assertEqual(facts["words"], base - 3)     # "Think about it." gone, nothing added
        over = GOOD.replace("Think about it.", filler)
        problem = self.assertOneProblem(over, f"{base - 3 + 3990} prose words")
        self.assertIn(":1:", problem)

    def test_word_count_rule(self):
        self.assertEqual(cl.count_words("a — b, <details> 2^20 ... x"), 4)
        self.assertEqual(cl.count_words(cl.word_text("one\n| two three |\n<!-- four -->five\n```\nsix\n```\n")), 2)

    def test_table_cells(self):
        long_cell = " ".join(["w"] * 31)
        problem = self.assertOneProblem(GOOD.replace("a short cell", long_cell), "31 words")
        self.assertIn(f":{GOOD.split(chr(10)).index('| `one` | a short cell |') + 1}:", problem)
        # sync markers' comments do not count, and a | inside a code span does not split the cell
        marked = "<!--n:1-->0.123<!--/n--> " + " ".join(["w"] * 28)
        _, facts = self.problems(readme=GOOD.replace("a short cell", marked + " `a|b`"))
        self.assertEqual(facts["cell"], 30)

    def test_run_talk(self):
        problem = self.assertOneProblem(GOOD.replace("Think about it.", "In this\nrun it took longer."), "'In this run'")
        self.assertIn("run-talk", problem)
        for phrase in cl.RUN_TALK:
            with self.subTest(phrase):
                self.assertOneProblem(GOOD.replace("Think about it.", f"As {phrase.upper()} showed."), "run-talk")
        for fine in ("Todays", "this running sum", "one reading", "mother runs"):
            with self.subTest(fine):
                problems, _ = self.problems(readme=GOOD.replace("Think about it.", fine))
                self.assertEqual(problems, [])

    def test_glossary_terms_parsed(self):
        names = {name: k for name, _, k in self.terms}
        self.assertEqual(names, {"block": 1, "grid": 1, "atomicAdd": 4, "atomicCAS": 4, "atomic": 4,
                                 "page-locked": 8, "pinned memory": 8, "$ORIGIN": 7, "rpath": 7, "stream": 1})

    def test_glossary_term_before_its_chapter(self):
        problem = self.assertOneProblem(GOOD.replace("Think about it.", "Think about Pinned\nmemory."),
                                        "'pinned memory'", "chapter 08")
        self.assertIn("README.md:" + str(GOOD.split("\n").index("Think about it.") + 1), problem)
        self.assertOneProblem(GOOD.replace("Think about it.", "Two atomics."), "'atomic'")
        self.assertOneProblem(GOOD.replace("Think about it.", "Set $ORIGIN."), "'$ORIGIN'")
        for fine in ("The origin of it.", "Set `$ORIGIN` in code.", "The [pinned memory](pinned-memory.md) link.",
                     "Nonatomic and atomicity.", "Streams of work."):
            with self.subTest(fine):
                problems, _ = self.problems(readme=GOOD.replace("Think about it.", fine))
                if "link" in fine:
                    self.assertEqual(len(problems), 1, problems)   # the link text is prose, its target is not
                else:
                    self.assertEqual(problems, [], fine)

    def test_term_allowed_in_and_after_its_chapter(self):
        readme = (GOOD.replace("# Chapter 03", "# Chapter 08").replace("Think about it.", "Pinned memory.")
                  .replace("## The kernel", "## The kernel (*design*)"))
        problems, _ = cl.check_chapter(self.chapter(readme=readme, name="08_pinned",
                                                    appendix="# Chapter 08 — appendix: how\n"), self.terms, root=self.root)
        self.assertEqual([str(p) for p in problems], [])

    def test_main_modes(self):
        out = io.StringIO()
        with redirect_stdout(out):
            self.assertEqual(cl.main(["--report", str(self.chapter())]), 0)
        self.assertIn("| 03_one_thread |", out.getvalue())
        bad = self.chapter(readme=GOOD.replace(cl.APPENDIX_LINE, ""))
        out = io.StringIO()
        with redirect_stdout(out):
            self.assertEqual(cl.main(["--glossary", str(self.root / "docs" / "glossary.md"), str(bad)]), 1)
            self.assertEqual(cl.main(["--report", str(bad)]), 0)
        self.assertIn("appendix link", out.getvalue())

    def test_enforced_chapters_pass(self):
        """What CI enforces holds in the repository itself."""
        terms = cl.glossary_terms(ROOT / "docs" / "glossary.md")
        for name in cl.ENFORCED:
            with self.subTest(name):
                problems, _ = cl.check_chapter(cl.resolve(name), terms)
                self.assertEqual([str(p) for p in problems], [])


if __name__ == "__main__":
    unittest.main()
