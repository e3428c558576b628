"""Chapter 04 plots: one block's versions side by side (time and % of the read roofline, log
scale), beside chapter 02's CPU baselines when their CSV is present and the floor (speed_of_light:
the whole GPU reading x and y and nothing else, a black row and a dashed line per size); and the
race: what adding n ones gives, run after run."""
import matplotlib.pyplot as plt

import course_style as cs

STEM = "04_one_block"
FLOOR = "speed_of_light"  # not a dot: the registry's floor, drawn as a yardstick (absent from older CSVs)
FLOOR_LABEL = f"{FLOOR} (floor)"


def versions_and_floor(rows, results):
    """The shared side-by-side figure, the floor's row last (at the bottom, so the versions keep their
    colours) and drawn as a yardstick: its markers in the yardstick colour, and in the time panel a
    dashed line at its time for each size, every version's distance from it in plain sight."""
    floor = [dict(r, version=FLOOR_LABEL) for r in rows if r["version"] == FLOOR]
    versions = [r for r in rows if r["version"] != FLOOR]
    fig = cs.versions_side_by_side(versions + floor if versions else floor, results, "One block")
    if not floor or not versions:
        return fig
    ax_t, ax_p = fig.axes[:2]
    b = [t.get_text() for t in ax_t.get_yticklabels()].index(FLOOR_LABEL)
    for ax in (ax_t, ax_p):
        for line in ax.get_lines():
            ys = line.get_ydata()
            if len(ys) == 1 and abs(ys[0] - b) < 0.5:
                line.set(color=cs.COLORS["roofline"], markerfacecolor=cs.COLORS["roofline"])
    for r in floor:
        if cs.finite(r.get("median_ms")):
            ax_t.axvline(r["median_ms"], color=cs.COLORS["roofline"], lw=0.8, ls="--", alpha=0.7)
    legend = ax_p.get_legend()
    handles = list(getattr(legend, "legend_handles", None) or legend.legendHandles)
    handles.append(plt.Line2D([], [], color=cs.COLORS["roofline"], lw=0.8, ls="--",
                              label="the floor's time at each n (left panel)"))
    ax_p.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


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
    cs.save(versions_and_floor(rows, args.results), args.out, STEM)
    race_path = args.results / f"{STEM}_race.csv"
    race_rows = cs.load_csv(race_path) if race_path.is_file() else []
    if race_rows:  # empty after a run of the floor alone, which adds nothing up
        cs.save(race(race_rows), args.out, f"{STEM}_race")


if __name__ == "__main__":
    cs.run(main)
