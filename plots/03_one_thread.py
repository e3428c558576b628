"""Chapter 03 plots: the one-thread kernel and cuBLAS, kernel alone and in a full round trip, beside
chapter 02's CPU baselines and the floor (time and % of the read roofline, log scale; the floor,
speed_of_light, is the whole GPU reading x and y and nothing else: a hatched bar and a dashed
line); and where a round trip's time goes, step by step."""
import matplotlib.pyplot as plt

import course_style as cs

STEM = "03_one_thread"
PHASES = [(name, cs.PHASES[name]) for name in ("allocate", "copy x", "copy y", "kernel", "copy back", "free", "other")]
FLOOR = "speed_of_light"  # not a dot: the registry's floor, drawn as a yardstick (absent from older CSVs)


def cpu_baselines(results, n):
    """Chapter 02's plain loop (its first valid version in registry order) and its fastest valid
    version at size n, labelled "CPU: ..."; empty when 02_cpu_dot.csv is absent."""
    path = results / "02_cpu_dot.csv"
    if not path.is_file():
        return []
    rows = [r for r in cs.load_csv(path) if r["n"] == n and r.get("valid") == 1.0 and cs.finite(r["median_ms"])
            and not str(r["version"]).startswith("bug_")]
    if not rows:
        return []
    fastest = min(rows, key=lambda r: r["median_ms"])
    picks = [(f"CPU: {rows[0]['version']}", rows[0], cs.COLORS["cpu"])]
    if fastest is not rows[0]:
        picks.append((f"CPU: {fastest['version']} ({fastest['config']})", fastest, cs.darker(cs.COLORS["cpu"], 0.4)))
    return picks


def versions_side_by_side(rows, results, out_dir):
    sizes = sorted({r["n"] for r in rows})
    colors = {("cublas", "kernel only"): cs.COLORS["library"], ("cublas", "round trip"): cs.lighter(cs.COLORS["library"], 0.5),
              ("one_thread", "kernel only"): cs.COLORS["gpu"], ("one_thread", "round trip"): cs.lighter(cs.COLORS["gpu"], 0.6)}
    fig, axes = plt.subplots(1, len(sizes), figsize=(4.2 * len(sizes) + 1, 5.2), squeeze=False, sharey=False)
    for ax, n in zip(axes[0], sizes):
        bars = cpu_baselines(results, n)
        for r in rows:
            if r["n"] == n:
                key = (r["version"], r["config"])
                name = f"{r['version']} (floor)" if r["version"] == FLOOR else r["version"]
                label = f"{name}, {r['config']}"
                bars.append((label, r, colors.get(key, cs.PALETTE[len(bars) % 10])))
        labels = [b[0] for b in bars]
        ys = [b[1]["median_ms"] for b in bars]
        drawn = ax.barh(range(len(bars)), ys, color=[b[2] for b in bars])
        for bar, (_, r, _) in zip(drawn, bars):
            if r["version"] == FLOOR:  # a baseline, not a version: white, hatched in the yardstick colour
                bar.set(facecolor="white", edgecolor=cs.COLORS["roofline"], hatch="//")
                ax.axvline(r["median_ms"], color=cs.COLORS["roofline"], lw=0.8, ls="--")  # every bar against it
        for bar, (_, r, _) in zip(drawn, bars):
            pct = r.get("pct_roofline")
            text = f"{r['median_ms']:.3g} ms" + (f", {pct:.2g}%" if cs.finite(pct) else "")
            ax.annotate(text, (bar.get_width(), bar.get_y() + bar.get_height() / 2), xytext=(3, 0),
                        textcoords="offset points", va="center", fontsize=7)
        ax.set_yticks(range(len(bars)), labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("median time (ms, log scale)")
        ax.set_title(f"n = {cs.size_label(n)}")
        lo, hi = min(ys), max(ys)
        ax.set_xlim(lo / 3, hi * 300)  # room for the labels, whose width is fixed in points
    floor = " (dashed: the floor)" if any(r["version"] == FLOOR for r in rows) else ""
    fig.suptitle(f"One GPU thread against cuBLAS and the CPU on {cs.gpu_name()} "
                 f"(labels: time, % of the GPU's read roofline){floor}")
    cs.save(fig, out_dir, STEM)


def phases(rows, out_dir):
    """One bar per version and size, split into the round trip's steps (% of the median call)."""
    groups = list(dict.fromkeys((r["version"], r["n"]) for r in rows))
    fig, ax = plt.subplots(figsize=(10, 0.55 * len(groups) + 1.8))
    for g, (version, n) in enumerate(groups):
        left = 0.0
        mine = {r["phase"]: r for r in rows if r["version"] == version and r["n"] == n}
        for phase, color in PHASES:
            r = mine.get(phase)
            if r is None or not cs.finite(r["pct_of_total"]):
                continue
            width = max(r["pct_of_total"], 0.0)
            ax.barh(g, width, left=left, color=color, label=phase if g == 0 else None, edgecolor="white", lw=0.5)
            if width >= 7:
                ax.annotate(phase, (left + width / 2, g), ha="center", va="center", fontsize=7)
            left += width
        total = mine.get("total")
        if total is not None:
            ax.annotate(f"{total['median_ms']:.3g} ms", (100, g), xytext=(4, 0), textcoords="offset points",
                        va="center", fontsize=8)
    ax.set_yticks(range(len(groups)), [f"{v}, n = {cs.size_label(n)}" for v, n in groups])
    ax.invert_yaxis()
    ax.set_xlim(0, 112)
    ax.set_xlabel("share of one round trip (%), median call; total time on the right")
    ax.set_title("Where a round trip goes: allocate, copy in, kernel, copy back, free")
    ax.legend(ncol=len(PHASES), fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.18))
    cs.save(fig, out_dir, STEM + "_phases")


def main():
    args = cs.parse_args(__doc__)
    cs.apply()
    versions_side_by_side(cs.load_csv(args.results / f"{STEM}.csv"), args.results, args.out)
    phases_csv = args.results / f"{STEM}_phases.csv"
    phase_rows = cs.load_csv(phases_csv) if phases_csv.is_file() else []
    if phase_rows:  # empty after a run of the floor alone, which has no round trip
        phases(phase_rows, args.out)
    elif phases_csv.is_file():
        print(f"{phases_csv} has no rows: no phases plot")
    else:
        print(f"{phases_csv} not found: no phases plot")


if __name__ == "__main__":
    cs.run(main)
