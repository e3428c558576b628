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
