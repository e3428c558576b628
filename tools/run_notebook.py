#!/usr/bin/env python3
"""Runs the course notebook (notebooks/course.ipynb) top to bottom, headless, as Colab would, and
says which cell failed. CI runs it without a GPU: its GPU cells must then print "skipped: no GPU".

    tools/run_notebook.py --clone-from .            clone this checkout (its HEAD), not the network
    tools/run_notebook.py --clone-from . --chapter 02 --expect-skip
    tools/run_notebook.py --clone-from . --preset solutions    the filled tree (a GPU machine's proof)

Options:
  NOTEBOOK            the notebook (default notebooks/course.ipynb)
  --clone-from PATH   the notebook clones PATH instead of its REPO_URL (environment variable
                      COURSE_CLONE_FROM); a local checkout's committed HEAD, not its uncommitted edits
  --workdir DIR       where the notebook clones to (COURSE_NOTEBOOK_WORKDIR; default build/notebook);
                      its dotcourse/ is removed first, so every run starts from a fresh clone
  --chapter NN        run with CHAPTER = "NN" in place of the notebook's own (the file is not changed)
  --preset NAME       student (default: chapters/, the holes) or solutions (COURSE_NOTEBOOK_PRESET)
  --engine E          nbclient (default: a Jupyter kernel, as Colab) or plain (the code cells in this
                      Python, one namespace, for a machine without Jupyter)
  --expect-skip       fail unless a cell printed "skipped: no GPU" (CI, which has no GPU)
  --out FILE          the executed notebook (default WORKDIR/course.executed.ipynb)
  --timeout S         seconds per cell (default 1800)

nbclient needs Debian's python3-nbclient, python3-nbformat and python3-ipykernel (tools/setup.sh
installs them with COURSE_SETUP_NOTEBOOK=1); when this Python lacks them, /usr/bin/python3 runs the
notebook if it has them. Exit code: 0 every cell ran; 1 a cell failed (or --expect-skip found no
skip line); 2 bad arguments, or no nbclient.
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time
import traceback

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHAPTER_LINE = re.compile(r'^CHAPTER = "\d\d"', re.M)
SKIP_LINE = re.compile(r"^skipped: no GPU", re.M)


def parse(argv):
    ap = argparse.ArgumentParser(description="Run the course notebook headless.",
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("notebook", nargs="?", default=str(ROOT / "notebooks" / "course.ipynb"))
    ap.add_argument("--clone-from")
    ap.add_argument("--workdir", default=str(ROOT / "build" / "notebook"))
    ap.add_argument("--chapter")
    ap.add_argument("--preset", choices=["student", "solutions"], default="student")
    ap.add_argument("--engine", choices=["nbclient", "plain"], default="nbclient")
    ap.add_argument("--expect-skip", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--timeout", type=int, default=1800)
    return ap.parse_args(argv)


def fail(message, code=2):
    print(f"run_notebook: {message}", file=sys.stderr)
    sys.exit(code)


def has_nbclient(python):
    return subprocess.run([python, "-c", "import nbclient, nbformat, ipykernel"],
                          capture_output=True).returncode == 0


def code_cells(nb):
    return [(i, c) for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"]


def source(cell):
    s = cell["source"]
    return s if isinstance(s, str) else "".join(s)


def set_chapter(nb, chapter):
    """CHAPTER = "NN" in the first code cell that sets it; SystemExit(2) when none does."""
    if not re.fullmatch(r"\d\d", chapter):
        fail(f"--chapter '{chapter}': two digits, such as 02")
    for _, cell in code_cells(nb):
        text = source(cell)
        if CHAPTER_LINE.search(text):
            cell["source"] = CHAPTER_LINE.sub(f'CHAPTER = "{chapter}"', text, count=1)
            return
    fail('--chapter: no code cell sets CHAPTER = "NN"')


def cell_name(i, cell):
    return cell.get("id") or f"#{i}"


def outputs_text(cell):
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append(source({"source": out.get("text", "")}))
        elif out.get("output_type") in ("execute_result", "display_data"):
            data = out.get("data", {})
            if "text/plain" in data and "image/png" not in data:
                parts.append(source({"source": data["text/plain"]}) + "\n")
            elif "image/png" in data:
                parts.append("[image]\n")
        elif out.get("output_type") == "error":
            parts.append("\n".join(out.get("traceback", [])) + "\n")
    return re.sub(r"\x1b\[[0-9;]*m", "", "".join(parts))


def run_nbclient(nb, args, workdir):
    import nbclient
    import nbformat
    notebook = nbformat.reads(json.dumps(nb), as_version=4)
    # The kernel's debugger warns about frozen modules on every start (Python 3.11): noise here.
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    client = nbclient.NotebookClient(notebook, timeout=args.timeout, kernel_name="python3",
                                     resources={"metadata": {"path": str(workdir)}})
    times, printed = {}, []
    with client.setup_kernel():
        for i, cell in enumerate(notebook.cells):
            if cell.cell_type != "code":
                continue
            name = cell_name(i, cell)
            print(f"\n== cell {name} ==", flush=True)
            start = time.monotonic()
            try:
                client.execute_cell(cell, i)
            except nbclient.exceptions.CellExecutionError:
                times[name] = time.monotonic() - start
                text = outputs_text(cell)
                print(text, end="")
                printed.append(text)
                return notebook, times, name, "".join(printed)
            except nbclient.exceptions.CellTimeoutError:
                times[name] = time.monotonic() - start
                return notebook, times, name + f" (timed out after {args.timeout} s)", "".join(printed)
            times[name] = time.monotonic() - start
            text = outputs_text(cell)
            print(text, end="", flush=True)
            printed.append(text)
    return notebook, times, None, "".join(printed)


class Tee:
    """stdout for plain cells: printed as it comes, and kept for --expect-skip."""
    def __init__(self, stream):
        self.stream, self.parts = stream, []

    def write(self, text):
        self.parts.append(text)
        return self.stream.write(text)

    def flush(self):
        self.stream.flush()


def run_plain(nb, args, workdir):
    os.chdir(workdir)
    namespace = {"__name__": "__main__"}
    times = {}
    tee = Tee(sys.stdout)
    real = sys.stdout
    sys.stdout = tee
    try:
        for i, cell in code_cells(nb):
            name = cell_name(i, cell)
            print(f"\n== cell {name} ==", flush=True)
            start = time.monotonic()
            try:
                exec(compile(source(cell), f"<cell {name}>", "exec"), namespace)
            except BaseException:  # a cell's SystemExit is a failure too
                times[name] = time.monotonic() - start
                traceback.print_exc(file=tee)
                return nb, times, name, "".join(tee.parts)
            times[name] = time.monotonic() - start
    finally:
        sys.stdout = real
        os.chdir(ROOT)
    return nb, times, None, "".join(tee.parts)


def main(argv):
    args = parse(argv)
    path = pathlib.Path(args.notebook)
    try:
        nb = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        fail(f"cannot read {path}: {e}")
    if args.engine == "nbclient" and not has_nbclient(sys.executable):
        other = "/usr/bin/python3"
        if os.path.realpath(other) != os.path.realpath(sys.executable) and os.access(other, os.X_OK) \
                and has_nbclient(other):
            os.execv(other, [other, __file__] + argv)
        fail("no nbclient here (Debian: apt-get install python3-nbclient python3-nbformat python3-ipykernel; "
             "tools/setup.sh with COURSE_SETUP_NOTEBOOK=1), or use --engine plain")
    if args.chapter:
        set_chapter(nb, args.chapter)

    workdir = pathlib.Path(args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    clone = workdir / "dotcourse"
    if clone.exists():
        shutil.rmtree(clone)
    os.environ["COURSE_NOTEBOOK_WORKDIR"] = str(workdir)
    os.environ["COURSE_NOTEBOOK_PRESET"] = args.preset
    if args.clone_from:
        src = pathlib.Path(args.clone_from).resolve()
        if not (src / ".git").exists():
            fail(f"--clone-from {args.clone_from}: not a git checkout")
        dirty = subprocess.run(["git", "-C", str(src), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        if dirty:
            print(f"run_notebook: {src} has uncommitted changes; the notebook clones its HEAD without them")
        os.environ["COURSE_CLONE_FROM"] = str(src)

    start = time.monotonic()
    runner = run_nbclient if args.engine == "nbclient" else run_plain
    executed, times, failed, printed = runner(nb, args, workdir)
    total = time.monotonic() - start

    out = pathlib.Path(args.out) if args.out else workdir / "course.executed.ipynb"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(executed, indent=1, ensure_ascii=False) + "\n")

    print("\n== notebook ==")
    for name, seconds in times.items():
        print(f"  {name:<12} {seconds:7.1f} s")
    skips = SKIP_LINE.findall(printed)
    if failed:
        print(f"run_notebook: cell {failed} failed ({len(times)} code cells ran, {total:.0f} s; "
              f"executed notebook: {out})")
        return 1
    print(f"run_notebook: all {len(times)} code cells ran ({args.engine}), {total:.0f} s; "
          f"{len(skips)} 'skipped: no GPU' line(s); executed notebook: {out}")
    if args.expect_skip and not skips:
        print("run_notebook: --expect-skip: no cell printed 'skipped: no GPU'")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
