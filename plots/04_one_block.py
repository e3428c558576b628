"""Chapter 04 plots: one block's versions side by side (time and % of the read roofline, log
scale), beside chapter 02's CPU baselines when their CSV is present; and the race: what adding n
ones gives, run after run."""
import matplotlib.pyplot as plt

import course_style as cs

STEM = "04_one_block"


def cpu_baselines(results, n):
    """Chapter 02's baselines at size n, by role: its plain loop (the first valid version in its
    registry order) and its fastest valid version. Empty when 02_cpu_dot.csv is absent."""
    path = results / "02_cpu_dot.csv"
    if not path.is_file():
        return {}
    rows = [r for r in cs.load_csv(path) if r["n"] == n and r.get("valid") == 1.0 and cs.finite(r["median_ms"])]
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
    gpu_colors = [c for c in cs.PALETTE if c not in (cs.COLORS["cpu"], cs.COLORS["library"])]
    gpu_labels = [label for label in labels if not label.startswith("CPU") and label != "cublas"]
    colors = {label: gpu_colors[k % len(gpu_colors)] for k, label in enumerate(gpu_labels)}
    colors.update({label: cs.COLORS["cpu"] for label in labels if label.startswith("CPU")})
    colors["cublas"] = cs.COLORS["library"]
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
            if cs.finite(r.get("pct_roofline")):
                ax_p.bar(x, r["pct_roofline"], width, **style)
            if wrong:
                ax_t.annotate("wrong", (x, r["median_ms"]), ha="center", va="bottom", fontsize=7)
    for ax in (ax_t, ax_p):
        ax.set_xticks(range(len(labels)), labels, rotation=25, ha="right")
        ax.set_yscale("log")
    ax_t.set_ylabel("median time (ms, log scale)")
    ax_p.set_ylabel("% of the measured read roofline (log scale)")
    ax_p.axhline(100, color=cs.COLORS["roofline"], lw=1, ls="--")
    shades = ", ".join(f"{'light' if s < len(sizes) - 1 else 'dark'} n = {cs.size_label(n)}"
                       for s, n in enumerate(sizes))
    ax_t.set_title(f"{title}: time ({shades})")
    ax_p.set_title("Bandwidth reached (hatched: wrong answer)")
    return fig


def race(race_rows):
    fig, ax = plt.subplots()
    versions = list(dict.fromkeys(r["version"] for r in race_rows))
    for k, v in enumerate(versions):
        pts = [r for r in race_rows if r["version"] == v]
        ax.plot([r["run"] for r in pts], [r["result"] for r in pts], marker="o",
                color=cs.PALETTE[k % len(cs.PALETTE)], label=v)
    n = race_rows[0]["expected"]
    ax.axhline(n, color=cs.COLORS["roofline"], lw=1, ls="--", label=f"exact: n = {int(n):,}")
    ax.set_yscale("log")
    ax.set_xlabel("run (same inputs every time)")
    ax.set_ylabel("result of adding n ones (log scale)")
    ax.set_title("The race: additions lost (the expected sum is n)")
    ax.legend()
    return fig


def main():
    args = cs.parse_args(__doc__)
    rows = cs.load_csv(args.results / f"{STEM}.csv")
    cs.apply()
    cs.save(versions_side_by_side(rows, args.results, "One block"), args.out, STEM)
    race_path = args.results / f"{STEM}_race.csv"
    if race_path.is_file():
        cs.save(race(cs.load_csv(race_path)), args.out, f"{STEM}_race")


if __name__ == "__main__":
    main()
