"""Chapter 11 plots: the dot on 1..G GPUs over a size sweep (GB/s against the GPUs' summed read
roofline, beside the floor: speed_of_light, every GPU reading its slice and nothing else); the combine's time against the kernel's per size; weak and strong scaling (speed-up and
efficiency against the ideal and the targets); one GPU alone against all of them at the same n (the
crossover); host data copied over every GPU's link at once."""
import matplotlib.pyplot as plt

import course_style as cs

STEM = "11_multi_gpu"
STYLE = {"allgather": "o-", "allgather_graph": "v-", "allreduce": "s--", "p2p": "D-", "host": "^:"}
FLOOR = "speed_of_light"  # not a combine: the registry's floor, drawn as a yardstick (absent from older CSVs)


def gpus_label(g):
    return f"{int(g)} GPU{'s' if g > 1 else ''}"


def sweep(rows):
    """One panel per combine, each with its GB/s on every GPU count (a colour per count), the floor
    (speed_of_light, dashed crosses) and the summed read roofline (dash-dot) of that count: the
    question of each panel is whether more GPUs pay for that combine, and from which n. (On one
    axis the twelve lines hid each other.)"""
    counts = sorted({r["gpus"] for r in rows})
    combines = [v for v in dict.fromkeys(r["version"] for r in rows) if v != FLOOR]
    cols = 3
    nrows = -(-(len(combines) + 1) // cols)  # and one cell for the legend
    fig, axes = plt.subplots(nrows, cols, figsize=(12.5, 3.6 * nrows + 0.6), sharex=True, sharey=True,
                             squeeze=False)
    cells = list(axes.flat)
    roofs = {}
    for g in counts:
        top = [r for r in rows if r["gpus"] == g and r["pct_roofline"] > 0]
        roofs[g] = max(r["gbps"] / r["pct_roofline"] * 100 for r in top) if top else None
    for ax, v in zip(cells, combines):
        for ci, g in enumerate(counts):
            color = cs.PALETTE[ci]
            floor = sorted((r for r in rows if r["gpus"] == g and r["version"] == FLOOR), key=lambda r: r["n"])
            if floor:
                ax.plot([r["n"] for r in floor], [r["gbps"] for r in floor], "x--", lw=1.0, ms=5, color=color, alpha=0.8)
            sel = sorted((r for r in rows if r["gpus"] == g and r["version"] == v), key=lambda r: r["n"])
            if sel:
                ax.plot([r["n"] for r in sel], [r["gbps"] for r in sel], STYLE.get(v, "o-")[0] + "-", ms=5,
                        color=color)
            if roofs[g]:
                ax.axhline(roofs[g], color=color, lw=0.8, ls="-.", alpha=0.6)
        ax.set_title(v, fontsize=12)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.tick_params(labelbottom=True, labelsize=10)
    for ax in axes[:, 0]:
        ax.set_ylabel("GB/s (2·n·4 bytes / time)")
    for ax in cells[:len(combines)]:
        ax.set_xlabel("n (all GPUs together)")
    legend_ax = cells[len(combines)]
    for ax in cells[len(combines) + 1:]:
        ax.set_visible(False)
    legend_ax.axis("off")
    handles = [plt.Line2D([], [], marker="o", color=cs.PALETTE[ci], label=f"the combine, {gpus_label(g)}")
               for ci, g in enumerate(counts)]
    handles += [plt.Line2D([], [], marker="x", ls="--", lw=1.0, color=cs.COLORS["key"],
                           label="speed_of_light: reads only, no\ncombine (the floor), same colour"),
                plt.Line2D([], [], ls="-.", lw=0.8, color=cs.COLORS["key"],
                           label="the GPUs' summed read roofline")]
    legend_ax.legend(handles=handles, loc="center", fontsize=11, title="time per call, result on every GPU",
                     title_fontsize=11)
    fig.suptitle(f"The dot on {' and '.join(str(int(g)) for g in counts)} GPUs of {cs.gpu_name()}: "
                 "one panel per combine", fontsize=13)
    return fig


def split(rows):
    sel = [r for r in rows if r["version"] == "allgather"]
    counts = sorted({r["gpus"] for r in sel})
    fig, ax = plt.subplots(figsize=(8, 5))
    for ci, g in enumerate(counts):
        pts = sorted((r for r in sel if r["gpus"] == g), key=lambda r: r["n"])
        ax.plot([r["n"] for r in pts], [r["kernel_ms"] * 1e3 for r in pts], "o-", color=cs.PALETTE[ci],
                label=f"partial kernel, {int(g)} GPU{'s' if g > 1 else ''}")
        ax.plot([r["n"] for r in pts], [r["combine_ms"] * 1e3 for r in pts], "s--", color=cs.PALETTE[ci],
                label=f"combine (allgather + pairwise add), {int(g)} GPU{'s' if g > 1 else ''}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("n (all GPUs together)")
    ax.set_ylabel("microseconds (CUDA events, slowest GPU)")
    ax.set_title(f"Where a call's time goes on {cs.gpu_name()}: the kernel against the combine", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def scaling(rows):
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    goals = {"weak": 1.9, "strong": 1.8}
    for ax, kind in zip(axes, ("weak", "strong")):
        sel = sorted((r for r in rows if r["kind"] == kind), key=lambda r: r["gpus"])
        if not sel:
            continue
        g = [r["gpus"] for r in sel]
        ax.plot(g, g, ":", color=cs.COLORS["roofline"], label="ideal")
        ax.plot(g, [r["speedup"] for r in sel], "o-", color=cs.COLORS["gpu"], label="measured")
        for r in sel:
            ax.annotate(f"{r['speedup']:.2f}x ({100 * r['efficiency']:.0f}%)", (r["gpus"], r["speedup"]),
                        textcoords="offset points", xytext=(8, 4) if r["gpus"] == g[0] else (5, -14), fontsize=10)
        if max(g) >= 2:
            ax.plot([2], [goals[kind]], "*", color=cs.COLORS["best"], markersize=12, label=f"target at 2 GPUs: {goals[kind]}x")
        else:  # a one-GPU run: the target is not missed, it cannot be tried
            ax.text(0.03, 0.95, f"target {goals[kind]}x at 2 GPUs:\nneeds 2 GPUs (this run had one)", transform=ax.transAxes,
                    ha="left", va="top", fontsize=11, color=cs.COLORS["best"])
        n_text = cs.size_label(sel[0]["n_per_gpu"]) + " per GPU" if kind == "weak" else cs.size_label(sel[0]["n"]) + " in all"
        ax.set_title(f"{kind} scaling ({n_text})")
        ax.set_xlabel("GPUs")
        ax.set_ylabel("throughput / one GPU's" if kind == "weak" else "time on one GPU / time")
        ax.set_xticks(g)
        ax.legend(fontsize=10)  # 12 inches wide, shown ~1000 px: 10 points are ~12 px there
    return fig


def crossover(rows):
    fig, ax = plt.subplots(figsize=(8, 5))
    pts = sorted(rows, key=lambda r: r["n"])
    g = int(pts[0]["gpus"])
    n = [r["n"] for r in pts]
    ax.plot(n, [r["one_gpu_us"] for r in pts], "o-", color=cs.PALETTE[0], label="1 GPU alone (no combine)")
    ax.plot(n, [r["p2p_us"] for r in pts], "D-", color=cs.PALETTE[3], label=f"{g} GPUs, p2p (combine inside the kernel)")
    ax.plot(n, [r["graph_us"] for r in pts], "s-", color=cs.PALETTE[1], label=f"{g} GPUs, allgather_graph")
    ax.plot(n, [r["eager_us"] for r in pts], "^:", color=cs.PALETTE[2], label=f"{g} GPUs, allgather (eager)")
    wins = [r["n"] for r in pts if r["team_wins"]]
    if wins:
        ax.axvline(min(wins), color=cs.COLORS["best"], lw=0.8, ls="--", label=f"{g} GPUs (p2p) win from {cs.size_label(min(wins))}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("n (the whole vector)")
    ax.set_ylabel("microseconds per call (host clock, median, in turns)")
    ax.set_title(f"When do {g} GPUs beat one? The same n, timed in turns")
    ax.legend(fontsize=8)
    return fig


def host(rows):
    fig, ax = plt.subplots()
    g = [r["gpus"] for r in rows]
    ax.bar([x - 0.2 for x in g], [r["h2d_gbps"] for r in rows], width=0.4, color=cs.ENGINES["h2d"], label="H2D, all GPUs")
    ax.bar([x + 0.2 for x in g], [r["h2d_gbps_per_gpu"] for r in rows], width=0.4, color=cs.lighter(cs.ENGINES["h2d"], 0.45),
           label="H2D, per GPU")
    ax.set_xticks(g)
    ax.set_xlabel("GPUs copying their slices at once")
    ax.set_ylabel("GB/s (pinned host memory)")
    ax.set_title(f"Host data: does H2D add up? ({cs.size_label(rows[0]['n_per_gpu'])} per GPU)")
    ax.legend()
    return fig


def main():
    args = cs.parse_args(__doc__)
    rows = cs.load_csv(args.results / f"{STEM}.csv")
    cs.apply()
    cs.save(sweep(rows), args.out, STEM)
    cs.save(split(rows), args.out, f"{STEM}_split")
    for what, fn in (("scaling", scaling), ("crossover", crossover), ("host", host)):
        path = args.results / f"{STEM}_{what}.csv"
        if path.is_file():
            cs.save(fn(cs.load_csv(path)), args.out, f"{STEM}_{what}")


if __name__ == "__main__":
    cs.run(main)
