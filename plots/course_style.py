"""Shared look and CSV loading for every chapter's plot script.

A chapter's script does:

    import course_style as cs
    rows = cs.load_csv(args.results / "05_many_blocks.csv")   # list of dicts, numbers as float
    cs.apply()
    fig, ax = plt.subplots()
    ...
    cs.save(fig, args.out, "05_many_blocks")                  # writes .png and .svg
"""
import argparse
import csv
import math
import pathlib

import matplotlib

matplotlib.use("Agg")  # headless: no display on CI or the GPU machine
import matplotlib.pyplot as plt  # noqa: E402

# One colour per role, the same in every chapter.
COLORS = {
    "cpu": "#7f7f7f",
    "gpu": "#1f77b4",
    "copies": "#ff7f0e",
    "library": "#2ca02c",
    "best": "#d62728",
    "roofline": "#000000",
}
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf"]


def parse_args(description):
    """--results DIR (the CSVs) and --out DIR (the images), the arguments of every plot script."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--results", type=pathlib.Path, default=pathlib.Path("results/reference/h100"),
                   help="folder with the chapter's CSV files")
    p.add_argument("--out", type=pathlib.Path, default=None, help="folder for PNG and SVG (default: RESULTS/plots)")
    args = p.parse_args()
    if args.out is None:
        args.out = args.results / "plots"
    return args


def _convert(value):
    if value == "":
        return None
    try:
        number = float(value)
    except ValueError:
        return value
    return number


def load_csv(path):
    """Rows of a course CSV as dicts; numeric cells become float (nan stays nan), text stays text.

    Raises FileNotFoundError with a message that says which run produces the file."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: run the chapter with --csv {path} on a GPU, "
                                "or point --results at results/reference/h100")
    with path.open(newline="") as f:
        return [{k: _convert(v) for k, v in row.items()} for row in csv.DictReader(f)]


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
    fig.tight_layout()
    png = out / f"{stem}.png"
    fig.savefig(png, metadata={"Software": None})
    fig.savefig(out / f"{stem}.svg", metadata={"Date": None, "Creator": None})
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
    """Two panels, time and % of roofline, one bar per version and size (light: smaller n)."""
    sizes = sorted({r["n"] for r in rows})
    by_size = {}
    for n in sizes:
        bars = dict(cpu_baselines(results, n))
        bars.update({r["version"]: r for r in rows if r["n"] == n})
        by_size[n] = bars
    labels = list(dict.fromkeys(label for n in sizes for label in by_size[n]))  # CPU first, then registry order
    # CPU grey, the library green (as in every chapter), the GPU versions from the rest of the palette.
    gpu_colors = [c for c in PALETTE if c not in (COLORS["cpu"], COLORS["library"])]
    gpu_labels = [label for label in labels if not label.startswith("CPU") and label != "cublas"]
    colors = {label: gpu_colors[k % len(gpu_colors)] for k, label in enumerate(gpu_labels)}
    colors.update({label: COLORS["cpu"] for label in labels if label.startswith("CPU")})
    colors["cublas"] = COLORS["library"]
    fig, (ax_t, ax_p) = plt.subplots(1, 2, figsize=(11, 4.8))
    width = 0.8 / len(sizes)
    for s, n in enumerate(sizes):
        for b, label in enumerate(labels):
            r = by_size[n].get(label)
            if r is None:
                continue
            x = b + (s - (len(sizes) - 1) / 2) * width
            color = colors[label]
            wrong = r.get("valid") != 1.0
            style = dict(color=color, alpha=0.45 if s < len(sizes) - 1 else 0.95, hatch="//" if wrong else None,
                         edgecolor="black" if wrong else None)
            ax_t.bar(x, r["median_ms"], width, **style)
            if finite(r.get("pct_roofline")):
                ax_p.bar(x, r["pct_roofline"], width, **style)
            if wrong:
                ax_t.annotate("wrong", (x, r["median_ms"]), ha="center", va="bottom", fontsize=7)
    for ax in (ax_t, ax_p):
        ax.set_xticks(range(len(labels)), labels, rotation=25, ha="right")
        ax.set_yscale("log")
    ax_t.set_ylabel("median time (ms, log scale)")
    ax_p.set_ylabel("% of the measured read roofline (log scale)")
    ax_p.axhline(100, color=COLORS["roofline"], lw=1, ls="--")
    shades = ", ".join(f"{'light' if s < len(sizes) - 1 else 'dark'} n = {size_label(n)}"
                       for s, n in enumerate(sizes))
    ax_t.set_title(f"{title}: time ({shades})")
    ax_p.set_title("Bandwidth reached (hatched: wrong answer)")
    return fig
