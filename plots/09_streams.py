"""Chapter 09 plots: the issue orders beside each engine's work alone, the yardstick, the CPU and the
floor (speed_of_light: x and y copied in whole and nothing else, a hatched bar); the 1-16 stream sweep; Gantt charts of the recorded timelines, per engine and per stream; and what a
CUDA graph saves per call."""
import matplotlib.pyplot as plt
from matplotlib.patches import Patch

import course_style as cs

STEM = "09_streams"
ENGINES = ("h2d", "kernel", "d2h")
# Both timelines colour by engine (plots/palette.py: the same orange, blue and purple as chapter 07's
# phases); the per-engine one tells streams apart by shade.
ENGINE_COLORS = cs.ENGINES
FLOOR = "speed_of_light"  # not an issue order: the registry's floor, drawn as a yardstick (absent from older CSVs)


def order_color(version):
    """A bar of the orders figure: an engine alone in its engine's colour, the copies together in
    a lighter h2d, the yardstick black, the CPU grey, the issue orders in a dark blue (the kernel's
    blue is kernel_alone's)."""
    engine = version[:-len("_alone")] if version.endswith("_alone") else None
    if engine in ENGINE_COLORS:
        return ENGINE_COLORS[engine]
    return {"copies_together": cs.lighter(ENGINE_COLORS["h2d"], 0.45), "bound": cs.COLORS["roofline"],
            "cpu_threads": cs.COLORS["cpu"]}.get(version, cs.darker(cs.COLORS["gpu"], 0.5))


def orders(rows):
    sizes = sorted({r["n"] for r in rows})
    fig, axes = plt.subplots(1, len(sizes), figsize=(6.5 * len(sizes), 4.8), squeeze=False)
    for ax, n in zip(axes[0], sizes):
        # The graded rows from the book's recorded timelines have their own config: not bars here.
        sel = [r for r in rows if r["n"] == n and not str(r["config"]).startswith("book timeline")]
        names = [r["version"] for r in sel]
        bars = ax.bar(range(len(sel)), [r["median_ms"] for r in sel], color=[order_color(v) for v in names])
        for bar, v in zip(bars, names):
            if v == FLOOR:  # a baseline, not an order: white, hatched in the yardstick colour
                bar.set(facecolor="white", edgecolor=cs.COLORS["roofline"], hatch="//")
        ax.bar_label(bars, fmt="%.3g", fontsize=8)
        # The CSV row "bound" is the yardstick: a target a good pipeline beats, not a lower bound.
        labels = ["yardstick" if v == "bound" else f"{v} (floor)" if v == FLOOR else v for v in names]
        ax.set_xticks(range(len(sel)), labels, rotation=30, ha="right")
        ax.set_ylabel("milliseconds per call (result on the host)")
        ax.set_title(f"n = {cs.size_label(n)}, {sel[0]['config']}")
    floor = " and the floor (hatched: the copies in alone)" if any(r["version"] == FLOOR for r in rows) else ""
    fig.suptitle("Issue orders (dark blue), each engine alone (its engine's colour) and both copies together, the "
                 "yardstick 1.10 x busiest engine + one chunk's share (black: a target, not a lower bound), the CPU (grey)"
                 + floor)
    return fig


def sweep(rows, main_rows):
    fig, ax = plt.subplots()
    for i, v in enumerate(dict.fromkeys(r["version"] for r in rows)):
        pts = sorted((int(str(r["config"]).split("=")[1]), r["median_ms"]) for r in rows if r["version"] == v)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", color=cs.PALETTE[i], label=v)
    n = rows[0]["n"]
    for name, style, label in (("h2d_alone", ":", "h2d_alone"), ("bound", "--", "yardstick (1.10 x busiest + one chunk)"),
                               (FLOOR, "-.", "speed_of_light: the copies in alone (floor)")):
        match = [r for r in main_rows if r["version"] == name and r["n"] == n]
        if match:
            ax.axhline(match[0]["median_ms"], color=cs.COLORS["roofline"], ls=style, lw=1, label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("streams")
    ax.set_ylabel("milliseconds per call")
    ax.set_title(f"n = {cs.size_label(n)}: streams swept")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def gantt(rows, by):
    scenarios = list(dict.fromkeys(r["scenario"] for r in rows))
    fig, axes = plt.subplots(len(scenarios), 1, figsize=(12, 1.2 + 1.3 * len(scenarios) + (
        0.15 * max(r["streams"] for r in rows) * len(scenarios) if by == "stream" else 0)), squeeze=False)
    for ax, sc in zip(axes[:, 0], scenarios):
        sel = [r for r in rows if r["scenario"] == sc]
        t0 = min(r["start_ms"] for r in sel)
        if by == "engine":
            lanes = list(ENGINES)
            lane_of = lambda r: lanes.index(r["engine"])  # noqa: E731
            streams = int(max(r["stream"] for r in sel)) + 1
            color_of = lambda r: cs.stream_shade(r["engine"], int(r["stream"]), streams)  # noqa: E731
        else:
            lanes = [f"stream {s}" for s in range(int(max(r["stream"] for r in sel)) + 1)]
            lane_of = lambda r: int(r["stream"])  # noqa: E731
            color_of = lambda r: ENGINE_COLORS[r["engine"]]  # noqa: E731
        for r in sel:
            ax.broken_barh([(r["start_ms"] - t0, max(r["end_ms"] - r["start_ms"], 1e-4))], (lane_of(r) - 0.4, 0.8),
                           facecolors=color_of(r), edgecolor="white", linewidth=0.3)
        ax.set_yticks(range(len(lanes)), lanes)
        ax.invert_yaxis()
        ax.set_title(f"{sc} ({sel[0]['version']}, {int(sel[0]['streams'])} streams)", fontsize=9, loc="left")
    axes[-1, 0].set_xlabel("milliseconds from the first operation (GPU clock, CUDA events)")
    handles = [Patch(color=ENGINE_COLORS[e], label=e) for e in ENGINES]
    if by == "engine":
        most = int(max(r["stream"] for r in rows)) + 1
        shade = lambda s: cs.lighter(cs.COLORS["key"], 0.6 * s / max(most - 1, 1))  # noqa: E731
        handles += [Patch(color=shade(s), label=f"stream {s}") for s in range(most)]
    fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 0.98), fontsize=8,
               title="colour: engine" + ("\nshade: stream" if by == "engine" else ""), title_fontsize=8)
    fig.suptitle("Timeline per " + by)
    return fig


def graphs(rows):
    fig, ax = plt.subplots()
    xs = [r["n"] for r in rows]
    ax.plot(xs, [r["depth_first_ms"] * 1e3 for r in rows], "o-", color=cs.COLORS["gpu"], label="depth_first, issued")
    ax.plot(xs, [r["graph_ms"] * 1e3 for r in rows], "o-", color=cs.COLORS["best"], label="the same, graph replayed")
    for r in rows:
        ax.annotate(f"-{r['saved_us']:.0f} us", (r["n"], r["graph_ms"] * 1e3), textcoords="offset points", xytext=(4, -12),
                    fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("n")
    ax.set_ylabel("microseconds per call")
    ax.set_title("What a CUDA graph saves per call")
    ax.legend()
    return fig


def main():
    args = cs.parse_args(__doc__)
    rows = cs.load_csv(args.results / f"{STEM}.csv")
    cs.apply()
    cs.save(orders(rows), args.out, STEM)
    for what, fn in (("sweep", lambda r: sweep(r, rows)), ("graph", graphs)):
        path = args.results / f"{STEM}_{what}.csv"
        if path.is_file():
            cs.save(fn(cs.load_csv(path)), args.out, f"{STEM}_{what}")
    tl = args.results / f"{STEM}_timeline.csv"
    if tl.is_file():
        trows = cs.load_csv(tl)
        cs.save(gantt(trows, "engine"), args.out, f"{STEM}_gantt_engine")
        cs.save(gantt(trows, "stream"), args.out, f"{STEM}_gantt_stream")


if __name__ == "__main__":
    cs.run(main)
