#!/usr/bin/env python3
"""Does a name keep its colour from chapter to chapter? Draws every chapter's figures from the
reference results (nothing is written) and collects, for each labelled line, bar series, legend
entry, and bar named by its tick label, the name it stands for and its colour. A name is a label's
first words, before ",", ":" or " (" ("pinned: cudaMallocHost" is "pinned"; "allgather, 2 GPUs" is
"allgather"), lower case. Fails (exit 1) when two chapters draw one name in two colours: the
palette (plots/palette.py) gives a name one colour for the whole course.

    plots/colour_check.py            (needs matplotlib: .venv/bin/python plots/colour_check.py)

Legend entries in the key colour (palette.ROLES["key"]: a marker or a line style explained, not a
colour) and labels of one character are left out.
"""
import collections
import pathlib
import re
import runpy
import sys

HERE = pathlib.Path(__file__).resolve().parent
REFERENCE = HERE.parent / "results" / "reference"
RESULTS = {"11_multi_gpu": REFERENCE / "h200x2"}  # chapter 11 is measured on two GPUs; the rest on one
SKIP = re.compile(r"^(_|\s*$)")


def name_of(label):
    return re.split(r",|:|\s\(|\n", str(label), maxsplit=1)[0].strip().lower()


def conflicts(seen):
    """seen: {name: {(chapter, colour)}}; the names that two chapters draw in colours of which they
    share none (a chapter may add a shade of the name's colour, "H2D, per GPU" lighter than "H2D"),
    as {name: {colour: [chapters]}}."""
    out = {}
    for name, pairs in seen.items():
        by_chapter = collections.defaultdict(set)
        for chapter, colour in pairs:
            by_chapter[chapter].add(colour)
        chapters = sorted(by_chapter)
        if any(not by_chapter[a] & by_chapter[b] for i, a in enumerate(chapters) for b in chapters[i + 1:]):
            colours = collections.defaultdict(list)
            for chapter in chapters:
                for colour in sorted(by_chapter[chapter]):
                    colours[colour].append(chapter)
            out[name] = dict(sorted(colours.items()))
    return out


def collect():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex
    sys.path.insert(0, str(HERE))
    import course_style as cs
    key = to_hex(cs.COLORS["key"])
    seen = collections.defaultdict(set)
    current = {}

    def add(label, colour, edge=None):
        name = name_of(label)
        if SKIP.match(str(label)) or len(name) < 2:
            return
        try:
            colour = to_hex(colour)
            if colour == "#ffffff" and edge is not None:  # a hatched outline: its colour is the edge's
                colour = to_hex(edge)
        except (ValueError, TypeError):
            return
        if colour != key:
            seen[name].add((current["chapter"], colour))

    def record(fig, out_dir, stem):
        for ax in fig.axes:
            for line in ax.get_lines():
                add(line.get_label(), line.get_color())
            for bars in ax.containers:
                if not len(bars) or not hasattr(bars[0], "get_facecolor"):
                    continue
                add(bars.get_label(), bars[0].get_facecolor(), bars[0].get_edgecolor())
                if len(ax.containers) > 1 or not SKIP.match(bars.get_label() or ""):
                    continue  # stacked or grouped bars: a tick names a group, not one bar's colour
                horizontal = getattr(bars, "orientation", None) == "horizontal"
                ticks = ax.get_yticklabels() if horizontal else ax.get_xticklabels()
                where = {round(t.get_position()[1 if horizontal else 0], 6): t.get_text() for t in ticks}
                for bar in bars:
                    centre = bar.get_y() + bar.get_height() / 2 if horizontal else bar.get_x() + bar.get_width() / 2
                    text = where.get(round(centre, 6))
                    if text:
                        add(text, bar.get_facecolor(), bar.get_edgecolor())
            legend = ax.get_legend()
            for holder in [legend] + [lg for lg in fig.legends]:
                if holder is None:
                    continue
                handles = getattr(holder, "legend_handles", None) or getattr(holder, "legendHandles", [])
                for handle, text in zip(handles, holder.get_texts()):
                    if hasattr(handle, "get_color"):
                        add(text.get_text(), handle.get_color())
                    else:
                        add(text.get_text(), handle.get_facecolor(), handle.get_edgecolor())
        plt.close(fig)

    cs.save = record
    for script in sorted(HERE.glob("[0-9][0-9]_*.py")):
        current["chapter"] = script.stem[:2]
        results = RESULTS.get(script.stem, REFERENCE / "h100")
        sys.argv = [str(script), "--results", str(results), "--out", "unused"]
        try:
            runpy.run_path(str(script), run_name="__main__")
        except SystemExit as e:
            if e.code:
                raise SystemExit(f"colour_check: {script.name} exited {e.code}")
    return seen


def main():
    found = conflicts(collect())
    for name, colours in sorted(found.items()):
        shown = "; ".join(f"{colour} in {', '.join(chapters)}" for colour, chapters in colours.items())
        print(f"colour_check: '{name}' has more than one colour: {shown} (one colour per name: plots/palette.py)")
    print(f"colour_check: {len(found)} name(s) with more than one colour")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
