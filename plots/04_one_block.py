"""Chapter 04 plots: one block's versions side by side (time and % of the read roofline, log
scale), beside chapter 02's CPU baselines when their CSV is present; and the race: what adding n
ones gives, run after run."""
import matplotlib.pyplot as plt

import course_style as cs

STEM = "04_one_block"


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
    cs.save(cs.versions_side_by_side(rows, args.results, "One block"), args.out, STEM)
    race_path = args.results / f"{STEM}_race.csv"
    if race_path.is_file():
        cs.save(race(cs.load_csv(race_path)), args.out, f"{STEM}_race")


if __name__ == "__main__":
    main()
