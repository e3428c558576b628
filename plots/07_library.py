"""Chapter 07 plots: time per call against n for every version of the host-array dot (and the
device-array dot, the CPU loop and the floor, speed_of_light: the same bytes copied from pinned
memory and nothing else, beside them); where the time goes, phase by phase, as stacked bars; the
motivating program in C++, Python and Go; and the Python peers."""
import matplotlib.pyplot as plt

import course_style as cs

STEM = "07_library"
FLOOR = "speed_of_light"  # not a dot: the registry's floor, drawn as a yardstick (absent from older CSVs)
# (CSV column, phase): the colours are the course's (plots/palette.py), shared with chapter 03.
PHASES = [(col, label, cs.PHASES[label]) for col, label in (
    ("alloc_ms", "allocate"), ("copy_x_ms", "copy x"), ("copy_y_ms", "copy y"), ("kernel_ms", "kernel"),
    ("copy_back_ms", "copy back"), ("free_ms", "free"))]


def per_call(rows):
    fig, ax = plt.subplots()
    # The graded pair timed alternately (*_paired, one size) is a measurement, not a line.
    names = list(dict.fromkeys(r["version"] for r in rows
                               if not str(r["version"]).endswith("_paired") and r["version"] != FLOOR))
    for k, name in enumerate(names):
        pts = sorted((r["n"], r["median_ms"]) for r in rows if r["version"] == name)
        style = dict(marker="o", color=cs.PALETTE[k % len(cs.PALETTE)], label=name)
        if name == "cpu_loop":
            style.update(color=cs.COLORS["cpu"], ls="--")
        ax.plot([p[0] for p in pts], [p[1] for p in pts], **style)
    floor = sorted((r["n"], r["median_ms"]) for r in rows if r["version"] == FLOOR and cs.finite(r.get("median_ms")))
    if floor:  # a baseline, not a version: the link's floor in the yardstick colour
        ax.plot([p[0] for p in floor], [p[1] for p in floor], color=cs.COLORS["roofline"], ls="--", lw=1.2, marker="x",
                ms=4, label="speed_of_light: the copies alone from pinned memory (floor)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("n (floats per vector)")
    ax.set_ylabel("ms per call, result on the host")
    ax.set_title("Host arrays in: time per call")
    ax.legend()
    return fig


def phases(rows):
    """One panel per version, the bars of its sizes side by side, the legend in a row below. Drawn
    11 inches wide: the site shows it about 1,000 px wide, where 9-point text is 11 px high (at
    15 inches its totals were 7 px)."""
    versions = list(dict.fromkeys(r["version"] for r in rows))
    fig, axes = plt.subplots(1, len(versions), figsize=(3.7 * len(versions), 4.6), squeeze=False, sharey=True)
    for ax, version in zip(axes[0], versions):
        sel = sorted((r for r in rows if r["version"] == version), key=lambda r: r["n"])
        labels = [cs.size_label(r["n"]) for r in sel]
        # Shares of each call, so that every n is readable; the total is written above the bar.
        bottom = [0.0] * len(sel)
        for col, label, color in PHASES:
            share = [100 * r[col] / r["phases_ms"] if r["phases_ms"] else 0 for r in sel]
            ax.bar(range(len(sel)), share, bottom=bottom, color=color, label=label, width=0.75)
            bottom = [b + s for b, s in zip(bottom, share)]
        for i, r in enumerate(sel):
            ax.text(i, 102, f"{r['phases_ms']:.3g}", ha="center", va="bottom", fontsize=9, rotation=90)
        ax.set_xticks(range(len(sel)), labels, fontsize=9)
        ax.set_ylim(0, 128)
        ax.set_yticks(range(0, 101, 20))
        ax.set_title(version, fontsize=11)
        ax.set_xlabel("n")
        ax.grid(axis="x", visible=False)
    axes[0][0].set_ylabel("% of the call (total ms above the bar)")
    # Below the panels, not on them: inside, the legend hid the "copy x" share of the bars.
    handles = [plt.Rectangle((0, 0), 1, 1, color=color) for _, _, color in PHASES]
    fig.legend(handles, [label for _, label, _ in PHASES], loc="lower center", ncol=len(PHASES), fontsize=10,
               bbox_to_anchor=(0.5, -0.01), title="phase, from the bottom of a bar up", title_fontsize=10)
    fig.suptitle(f"Where the time goes on {cs.gpu_name()}: each call's phases, host arrays in", fontsize=12)
    fig.set_layout_engine("tight", rect=(0, 0.1, 1, 1))  # room below the panels for the legend
    return fig


def program(rows):
    fig, ax = plt.subplots()
    labels = [f"{r['language']} {r['variant']}" for r in rows]
    colors = [cs.COLORS["cpu"] if r["variant"] in ("cpu_loop", "numpy") else cs.COLORS["gpu"] for r in rows]
    bars = ax.barh(range(len(rows)), [r["per_call_ms"] for r in rows], color=colors)
    ax.bar_label(bars, fmt="%.3g", fontsize=8, padding=2)
    ax.set_yticks(range(len(rows)), labels)
    ax.invert_yaxis()
    ax.set_xlabel("ms per call (100 calls on 2^20 floats)")
    ax.set_title("The motivating program: GPU (blue) against the CPU loop (grey)")
    return fig


def peers(rows):
    """Each peer's time per call at each size: dots on a log scale (a bar's length means nothing
    there), one marker shape per size, one colour per peer; the dots of a peer joined across sizes."""
    fig, ax = plt.subplots(figsize=(9, 4.8))
    keys = list(dict.fromkeys((r["peer"], r["input"]) for r in rows))
    sizes = sorted({r["n"] for r in rows})
    peer_colors = {peer: cs.PEERS.get(peer, cs.PALETTE[k % len(cs.PALETTE)])
                   for k, peer in enumerate(dict.fromkeys(p for p, _ in keys))}
    markers = ["o", "s", "D", "^", "v", "P"]
    for j, n in enumerate(sizes):
        for i, (peer, where) in enumerate(keys):
            m = [r["median_ms"] for r in rows if r["peer"] == peer and r["input"] == where and r["n"] == n]
            if m and cs.finite(m[0]):
                ax.plot(i, m[0], marker=markers[j % len(markers)], ms=7, ls="none", color=peer_colors[peer])
    ax.set_yscale("log")
    ax.set_xlim(-0.5, len(keys) - 0.5)
    ax.set_xticks(range(len(keys)), [f"{p}\n{w}" for p, w in keys], fontsize=7)
    ax.set_ylabel("ms per call, result on the host (log scale)")
    ax.set_title("From Python: the peers, timed in the same run")
    handles = [plt.Line2D([], [], marker=markers[j % len(markers)], ls="none", color=cs.COLORS["key"],
                          label=f"n = {cs.size_label(n)}") for j, n in enumerate(sizes)]
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def main():
    args = cs.parse_args(__doc__)
    rows = cs.load_csv(args.results / f"{STEM}.csv")
    cs.apply()
    cs.save(per_call(rows), args.out, STEM)
    if (args.results / f"{STEM}_phases.csv").is_file():
        cs.save(phases(cs.load_csv(args.results / f"{STEM}_phases.csv")), args.out, f"{STEM}_phases")
    prog = []
    for what in ("program", "program_python", "program_go"):
        if (args.results / f"{STEM}_{what}.csv").is_file():
            prog += cs.load_csv(args.results / f"{STEM}_{what}.csv")
    if prog:
        cs.save(program(prog), args.out, f"{STEM}_program")
    if (args.results / f"{STEM}_peers.csv").is_file():
        cs.save(peers(cs.load_csv(args.results / f"{STEM}_peers.csv")), args.out, f"{STEM}_peers")


if __name__ == "__main__":
    cs.run(main)
