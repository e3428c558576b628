"""Chapter 11 plots: the dot on 1..G GPUs over a size sweep (GB/s against the GPUs' summed read
roofline, beside the floor: speed_of_light, every GPU reading its slice and nothing else); the combine's time against the kernel's per size; weak and strong scaling (speed-up and
efficiency against the ideal and the targets); one GPU alone against all of them at the same n (the
crossover); host data copied over every GPU's link at once."""
import matplotlib.pyplot as plt

import course_style as cs

STEM = "11_multi_gpu"
STYLE = {"allgather": "o-", "allgather_graph": "v-", "allreduce": "s--", "p2p": "D-", "host": "^:"}
FLOOR = "speed_of_light"  # not a combine: the registry's floor, drawn as a yardstick (absent from older CSVs)


def sweep(rows):
    fig, ax = plt.subplots(figsize=(8, 5))
    counts = sorted({r["gpus"] for r in rows})
    for ci, g in enumerate(counts):
        for v in dict.fromkeys(r["version"] for r in rows):
            sel = sorted((r for r in rows if r["gpus"] == g and r["version"] == v), key=lambda r: r["n"])
            if not sel:
                continue
            gpus = f"{int(g)} GPU{'s' if g > 1 else ''}"
            if v == FLOOR:  # a baseline, not a combine: a thin dashed line of crosses
                ax.plot([r["n"] for r in sel], [r["gbps"] for r in sel], "x--", lw=1.0, ms=5, color=cs.PALETTE[ci],
                        label=f"speed_of_light: reads only (floor), {gpus}")
            else:
                ax.plot([r["n"] for r in sel], [r["gbps"] for r in sel], STYLE.get(v, "o-"), color=cs.PALETTE[ci],
                        label=f"{v}, {gpus}")
        top = [r for r in rows if r["gpus"] == g]
        roof = max(r["gbps"] / r["pct_roofline"] * 100 for r in top if r["pct_roofline"] > 0)
        ax.axhline(roof, color=cs.PALETTE[ci], lw=0.8, ls="-.", alpha=0.6)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("n (all GPUs together)")
    ax.set_ylabel("GB/s (2·n·4 bytes / time per call, result on every GPU)")
    ax.set_title("The dot on many GPUs (dash-dot: the GPUs' summed read roofline)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
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
    ax.set_title("Where a call's time goes: the kernel against the combine")
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
                        textcoords="offset points", xytext=(5, -12), fontsize=8)
        if max(g) >= 2:
            ax.plot([2], [goals[kind]], "*", color=cs.COLORS["best"], markersize=12, label=f"target at 2 GPUs: {goals[kind]}x")
        n_text = cs.size_label(sel[0]["n_per_gpu"]) + " per GPU" if kind == "weak" else cs.size_label(sel[0]["n"]) + " in all"
        ax.set_title(f"{kind} scaling ({n_text})")
        ax.set_xlabel("GPUs")
        ax.set_ylabel("throughput / one GPU's" if kind == "weak" else "time on one GPU / time")
        ax.set_xticks(g)
        ax.legend(fontsize=8)
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
