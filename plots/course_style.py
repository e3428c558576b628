"""Shared look and CSV loading for every chapter's plot script.

A chapter's script does:

    import course_style as cs
    rows = cs.load_csv(args.results / "05_many_blocks.csv")   # list of dicts, numbers as float
    cs.apply()
    fig, ax = plt.subplots()
    ...
    cs.save(fig, args.out, "05_many_blocks")                  # writes .png and .svg

Every figure save() writes carries a footer naming the machine and the date of the run, from the
chapter's record in RESULTS/run_metadata.json (tools/run_metadata.py writes it beside the CSVs,
one record per chapter, since chapters are measured at different times): a plot never claims to
show an H100 when it was drawn from another card's run, nor another day's run.
"""
import argparse
import csv
import json
import math
import pathlib
import re
import sys

import matplotlib

matplotlib.use("Agg")  # headless: no display on CI or the GPU machine
import matplotlib.pyplot as plt  # noqa: E402

sys.path.append(str(pathlib.Path(__file__).resolve().parent.parent / "tools"))
import telemetry  # noqa: E402  (the one reading of a run's throttle record)

REFERENCE = pathlib.Path(__file__).resolve().parent.parent / "results" / "reference"

# The colours live in plots/palette.py, one per role, engine, path and phase across the course.
from palette import (ENGINES, PALETTE, PATHS, PEERS, PHASES, ROLES as COLORS, darker, engine_color, lighter,  # noqa: E402,F401
                     path_color, stream_shade)


def parse_args(description, chapter=None):
    """--results DIR (the CSVs) and --out DIR (the images), the arguments of every plot script.
    `chapter` names whose record of RESULTS/run_metadata.json the footers show; by default the
    script's own name (plots/06_ladder.py: "06_ladder")."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--results", type=pathlib.Path, default=pathlib.Path("results/reference/h100"),
                   help="folder with the chapter's CSV files")
    p.add_argument("--out", type=pathlib.Path, default=None, help="folder for PNG and SVG (default: RESULTS/plots)")
    args = p.parse_args()
    if args.out is None:
        args.out = args.results / "plots"
    global RUN
    RUN = load_metadata(args.results, chapter or pathlib.Path(sys.argv[0]).stem)
    return args


# The run the plots are drawn from: the chapter's record of RESULTS/run_metadata.json, loaded by
# parse_args().
RUN = {}


def load_metadata(results, chapter):
    """The metadata of `chapter`'s run (gpu, driver, cuda, commit, date, cpu), {} when the file or
    the chapter's record is absent. An older file with one record for the whole folder (no
    "chapters" key) applies to every chapter."""
    path = pathlib.Path(results) / "run_metadata.json"
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if "chapters" in meta:
        return meta["chapters"].get(chapter) or {}
    return meta


def gpu_name(default="this GPU"):
    """The GPU of the run, for titles: "NVIDIA H100 80GB HBM3", or `default` when not known."""
    return RUN.get("gpu") or default


def cpu_name(default="a CPU not recorded in run_metadata.json"):
    """The CPU of the run, for the titles of the CPU chapters: "Intel(R) Xeon(R) Processor"."""
    return RUN.get("cpu") or default


def run_label(meta=None):
    """One line naming where and when the data was measured, for a figure's footer."""
    meta = RUN if meta is None else meta
    if not meta:
        return "Measured on: unknown (no record for this chapter in run_metadata.json beside the CSVs)"
    machine = meta.get("gpu") or f"{meta.get('cpu') or 'a CPU'} (no GPU)"
    parts = [f"Measured on {machine}", meta.get("date") or "date unknown"]
    if meta.get("gpu") and meta.get("cpu"):
        parts.append(f"CPU {meta['cpu']}")
    if meta.get("driver"):
        parts.append(f"driver {meta['driver']}")
    if meta.get("cuda"):
        parts.append(f"CUDA {meta['cuda']}")
    if meta.get("commit"):
        parts.append(f"commit {meta['commit']}")
    throttle = telemetry.footer_text(meta.get("telemetry"))
    if throttle:
        parts.append(throttle)
    return " · ".join(parts)


def _convert(value):
    if value == "":
        return None
    try:
        number = float(value)
    except ValueError:
        return value
    return number


class MissingCsv(FileNotFoundError):
    """A CSV a plot needs is not there: run() prints its message as one line, no traceback."""


def load_csv(path):
    """Rows of a course CSV as dicts; numeric cells become float (nan stays nan), text stays text.

    Raises MissingCsv with a message that says which run produces the file."""
    path = pathlib.Path(path)
    if not path.is_file():
        # The lessons' reference first (h100), then the run with the most GPUs (h200x2 for chapter 11).
        def preference(d):
            m = re.search(r"x(\d+)$", d.name)
            return (d.name != "h100", -(int(m.group(1)) if m else 1), d.name)
        refs = sorted((d for d in REFERENCE.glob("*/") if (d / path.name).is_file()), key=preference)
        ref = str(refs[0].relative_to(REFERENCE.parent.parent)) if refs else "results/reference/h100"
        raise MissingCsv(f"{path} not found: run the chapter with --csv {path} on a GPU, "
                         f"or point --results at {ref}")
    with path.open(newline="") as f:
        return [{k: _convert(v) for k, v in row.items()} for row in csv.DictReader(f)]


def run(main):
    """A plot script's entry point: main(), with a missing CSV as one line on stderr and exit code 2."""
    try:
        main()
    except MissingCsv as e:
        print(f"{pathlib.Path(sys.argv[0]).name}: {e}", file=sys.stderr)
        sys.exit(2)


def finite(x):
    return isinstance(x, float) and math.isfinite(x)


def apply():
    plt.rcParams.update({
        "figure.figsize": (8, 4.8),
        "figure.dpi": 110,
        "savefig.dpi": 150,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "font.size": 10,
        "axes.titlesize": 11,
        "legend.frameon": False,
        "svg.hashsalt": "dotcourse",  # stable SVG ids: re-rendering an unchanged plot changes nothing
    })


def size_label(n):
    n = int(n)
    if n >= 1024 and n & (n - 1) == 0:
        return f"$2^{{{n.bit_length() - 1}}}$"
    return f"{n:,}"


def save(fig, out_dir, stem):
    """Writes OUT/stem.png and OUT/stem.svg and returns the PNG's path."""
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if fig.get_layout_engine() is None:  # a figure that set its own (a legend below its panels) keeps it
        fig.tight_layout()
    # The footer sits below everything; "tight" saving grows the image to hold it and any label
    # that runs past an axis, so nothing is clipped. The site shows a figure about 1,000 px wide
    # whatever its size, so a wider figure gets a larger footer (7 points up to 8 inches, 10 at 12).
    size = min(10.0, max(7.0, 0.8 * fig.get_figwidth()))
    fig.text(0.005, 0.0, run_label(), fontsize=size, color="#555555", ha="left", va="top")
    tight = dict(bbox_inches="tight", pad_inches=0.12)
    png = out / f"{stem}.png"
    fig.savefig(png, metadata={"Software": None}, **tight)
    fig.savefig(out / f"{stem}.svg", metadata={"Date": None, "Creator": None}, **tight)
    plt.close(fig)
    print(f"wrote {png}")
    return png


# Shared by the GPU chapters' plots (04, 05): versions side by side beside chapter 02's CPU.
def cpu_baselines(results, n):
    """Chapter 02's baselines at size n, by role: its plain loop (the first valid version in its
    registry order) and its fastest valid version. Empty when 02_cpu_dot.csv is absent."""
    path = results / "02_cpu_dot.csv"
    if not path.is_file():
        return {}
    rows = [r for r in load_csv(path) if r["n"] == n and r.get("valid") == 1.0 and finite(r["median_ms"])]
    if not rows:
        return {}
    fastest = min(rows, key=lambda r: r["median_ms"])
    picks = {f"CPU: {rows[0]['version']}": rows[0]}
    picks[f"CPU best: {fastest['version']}"] = fastest
    return picks


def versions_side_by_side(rows, results, title):
    """Two panels, time and % of roofline: one row per version, one marker per size, log scale.
    Markers, not bars: a bar's length means nothing on a log axis, and a version measured at one
    size only is one marker, not a bar beside a gap. Chapter 02's CPU baselines come first, by role
    (its plain loop, its fastest version at that size, named beside the marker)."""
    sizes = sorted({r["n"] for r in rows})
    by_size = {}
    for n in sizes:
        bars = {}
        for k, (label, r) in enumerate(cpu_baselines(results, n).items()):
            role = "CPU: plain loop" if k == 0 else "CPU: fastest"
            bars[role] = dict(r, _note=str(r["version"]) if role == "CPU: fastest" else None)
        bars.update({r["version"]: r for r in rows if r["n"] == n})
        by_size[n] = bars
    labels = list(dict.fromkeys(label for n in sizes for label in by_size[n]))  # CPU first, then registry order
    gpu_colors = [c for c in PALETTE if c not in (COLORS["cpu"], COLORS["library"])]
    gpu_labels = [label for label in labels if not label.startswith("CPU") and label != "cublas"]
    colors = {label: gpu_colors[k % len(gpu_colors)] for k, label in enumerate(gpu_labels)}
    colors.update({label: COLORS["cpu"] for label in labels if label.startswith("CPU")})
    colors["cublas"] = COLORS["library"]
    markers = ["o", "s", "D", "^", "v", "P"]
    fig, (ax_t, ax_p) = plt.subplots(1, 2, figsize=(11, 0.42 * len(labels) + 2.2), sharey=True)
    for s, n in enumerate(sizes):
        for b, label in enumerate(labels):
            r = by_size[n].get(label)
            if r is None:
                continue
            wrong = r.get("valid") != 1.0
            style = dict(marker=markers[s % len(markers)], ms=7, ls="none", color=colors[label],
                         markerfacecolor="white" if wrong else colors[label], markeredgewidth=1.5)
            y = b + (s - (len(sizes) - 1) / 2) * 0.18
            ax_t.plot(r["median_ms"], y, **style)
            if finite(r.get("pct_roofline")):
                ax_p.plot(r["pct_roofline"], y, **style)
            note = " wrong" if wrong else ""
            if r.get("_note"):
                note = f" {r['_note']}" + note
            if note:
                ax_t.annotate(note, (r["median_ms"], y), xytext=(5, 0), textcoords="offset points", va="center",
                              fontsize=7)
    ax_t.set_yticks(range(len(labels)), labels)
    ax_t.set_ylim(len(labels) - 0.5, -0.5)
    for ax in (ax_t, ax_p):
        ax.set_xscale("log")
    ax_t.set_xlabel("median time (ms, log scale; left is faster)")
    ax_p.set_xlabel("% of the measured read roofline (log scale)")
    ax_p.axvline(100, color=COLORS["roofline"], lw=1, ls="--")
    handles = [plt.Line2D([], [], marker=markers[s % len(markers)], ls="none", color=COLORS["key"],
                          label=f"n = {size_label(n)}") for s, n in enumerate(sizes)]
    handles.append(plt.Line2D([], [], marker="o", ls="none", color=COLORS["key"], markerfacecolor="white",
                              label="hollow: wrong answer"))
    handles.append(plt.Line2D([], [], color=COLORS["roofline"], lw=1, ls="--", label="100% of the read roofline"))
    ax_p.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: no data hidden
    ax_p.set_xlim(right=150)
    ax_t.set_title(f"{title}: time per dot product")
    ax_p.set_title(f"Bandwidth reached on {gpu_name()}")
    return fig
