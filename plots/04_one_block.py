"""Chapter 04 plots: one block's versions side by side (time and % of the read roofline, log
scale), beside chapter 02's CPU baselines when their CSV is present; and the race: what adding n
ones gives, run after run."""
import matplotlib.pyplot as plt

import course_style as cs

STEM = "04_one_block"


def race(race_rows):
    """Result per run and version. Versions that agree draw on top of each other, so each has its
    own marker (big hollow first, small filled last) and the legend says what it lost."""
    fig, ax = plt.subplots()
    versions = list(dict.fromkeys(r["version"] for r in race_rows))
    n = race_rows[0]["expected"]
    styles = [dict(marker="o", ms=11, markerfacecolor="none", markeredgewidth=1.8),
              dict(marker="s", ms=7, markerfacecolor="none", markeredgewidth=1.5),
              dict(marker="x", ms=6, markeredgewidth=1.5), dict(marker=".", ms=5)]
    for k, v in enumerate(versions):
        pts = [r for r in race_rows if r["version"] == v]
        lost = [r["expected"] - r["result"] for r in pts]
        if max(lost) == 0:
            what = "exact in every run"
        elif min(lost) == max(lost):
            what = f"lost {min(lost) / n:.1%} of the additions in every run"
        else:
            what = f"lost {min(lost) / n:.1%} to {max(lost) / n:.1%} of the additions"
        ax.plot([r["run"] for r in pts], [r["result"] for r in pts], lw=1, ls="-" if k == 0 else ":",
                color=cs.PALETTE[k % len(cs.PALETTE)], label=f"{v}: {what}", **styles[min(k, len(styles) - 1)])
    ax.axhline(n, color=cs.COLORS["roofline"], lw=1, ls="--", label=f"exact: n = {int(n):,}")
    ax.set_yscale("log")
    ax.set_xlabel("run (same inputs every time)")
    ax.set_ylabel("result of adding n ones (log scale)")
    ax.set_title(f"The race on {cs.gpu_name()}: additions lost (the expected sum is n)")
    ax.legend(fontsize=8, loc="center right")
    return fig


def main():
    args = cs.parse_args(__doc__)
    rows = cs.load_csv(args.results / f"{STEM}.csv")
    cs.apply()
    cs.save(cs.versions_side_by_side(rows, args.results, "One block"), args.out, STEM)
    race_path = args.results / f"{STEM}_race.csv"
    if race_path.is_file():
        cs.save(race(cs.load_csv(race_path)), args.out, f"{STEM}_race")


if __name__ == "__main__":
    cs.run(main)
