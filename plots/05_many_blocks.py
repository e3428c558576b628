"""Chapter 05 plots: the many-block versions side by side (time and % of the read roofline, log
scale), beside chapter 02's CPU baselines when their CSV is present; the two-level version as the
elements per thread grow; and how many different results each version gave on the same input."""
import matplotlib.pyplot as plt

import course_style as cs

STEM = "05_many_blocks"


def per_thread(sweep_rows, rows):
    fig, ax = plt.subplots()
    pts = sorted((int(str(r["config"]).split("=")[1]), r["pct_roofline"]) for r in sweep_rows)
    n = sweep_rows[0]["n"]
    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", color=cs.COLORS["gpu"], label="two_level")
    for k, (version, color) in enumerate((("cublas", cs.COLORS["library"]), ("warp_shuffle", cs.COLORS["best"]))):
        match = [r for r in rows if r["version"] == version and r["n"] == n]
        if match and cs.finite(match[0]["pct_roofline"]):
            ax.axhline(match[0]["pct_roofline"], color=color, ls="--", lw=1, label=f"{version} at the same n")
    ax.set_xscale("log", base=2)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("elements per thread (--per-thread)")
    ax.set_ylabel("% of the measured read roofline")
    ax.set_title(f"two_level at n = {cs.size_label(n)}, elements per thread swept")
    ax.legend()
    return fig


def determinism(det_rows):
    fig, ax = plt.subplots()
    labels = [r["version"] for r in det_rows]
    colors = [cs.COLORS["library"] if r["deterministic"] == 1.0 else cs.COLORS["copies"] for r in det_rows]
    bars = ax.bar(range(len(labels)), [r["distinct"] for r in det_rows], color=colors)
    ax.bar_label(bars, fmt="%d", fontsize=8, padding=2)
    runs = int(det_rows[0]["runs"])
    ax.set_xticks(range(len(labels)), labels, rotation=25, ha="right")
    ax.set_ylim(0, runs + 1)
    ax.set_ylabel(f"different results in {runs} runs")
    ax.set_title(f"Same input, n = {cs.size_label(det_rows[0]['n'])}: atomics (orange) vs a fixed order (green)")
    return fig


def main():
    args = cs.parse_args(__doc__)
    rows = cs.load_csv(args.results / f"{STEM}.csv")
    cs.apply()
    cs.save(cs.versions_side_by_side(rows, args.results, "Many blocks"), args.out, STEM)
    sweep = args.results / f"{STEM}_per_thread.csv"
    if sweep.is_file():
        cs.save(per_thread(cs.load_csv(sweep), rows), args.out, f"{STEM}_per_thread")
    det = args.results / f"{STEM}_determinism.csv"
    if det.is_file():
        cs.save(determinism(cs.load_csv(det)), args.out, f"{STEM}_determinism")


if __name__ == "__main__":
    cs.run(main)
