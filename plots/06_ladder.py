"""Chapter 06 plots: the reduction ladder as bars (GB/s and % of the measured read roofline, per
version, baselines marked), time per call against N for the final kernel, version 11, the baselines
(cuBLAS, CUB, the atomic kernel) and two classic steps with the launch-latency floor (an empty
kernel's time per call + bytes / read roofline, from the _sweep CSV) and the read-only kernel (the
final version's loads without any combine: the floor with memory latency), and each one's time as
a fraction of cuBLAS's."""

import matplotlib.pyplot as plt

import course_style as cs

BASELINES = ("cublas", "cub", "atomic_vec4")
FINAL = "v12_tagged_partials"
SWEEP_LINES = [  # (version, label, colour, style)
    (FINAL, "v12 tagged partials (final)", cs.COLORS["best"], "-"),
    ("v11_single_pass", "v11 single pass (counter)", "#ff9896", "--"),
    ("atomic_vec4", "atomic baseline (not deterministic)", "#9467bd", "-"),
    ("cublas", "cuBLAS", cs.COLORS["library"], "-"),
    ("cub", "CUB", "#98df8a", "--"),
    ("v7_many_per_thread", "v7 many per thread (2007's last)", cs.COLORS["gpu"], "-."),
    ("v1_divergent", "v1 divergent (2007's first)", cs.COLORS["cpu"], ":"),
]


def roofline_gbps(rows):
    """The measured read roofline the executable used: gbps / (pct_roofline / 100) of any row."""
    for r in rows:
        if cs.finite(r.get("gbps")) and cs.finite(r.get("pct_roofline")) and r["pct_roofline"] > 0:
            return 100.0 * r["gbps"] / r["pct_roofline"]
    return None


LADDER_FLOOR = "speed_of_light"  # the registry's floor: reads only, no sum (a yardstick, not a rung)


def colour_of(version):
    if version in BASELINES:
        return cs.COLORS["library"]
    if version == FINAL:
        return cs.COLORS["best"]
    return cs.COLORS["gpu"]


def ladder_bars(ladder, out):
    sizes = sorted({int(r["n"]) for r in ladder})
    if not sizes:
        return
    fig, axes = plt.subplots(1, len(sizes), figsize=(6.2 * len(sizes), 5.4), sharey=True, squeeze=False)
    roof = roofline_gbps(ladder)
    for ax, n in zip(axes[0], sizes):
        rows = [r for r in ladder if int(r["n"]) == n]
        names = [r["version"] for r in rows]
        gbps = [r["gbps"] for r in rows]
        ys = list(range(len(rows)))
        bars = ax.barh(ys, gbps, color=[colour_of(v) for v in names])
        for bar, name in zip(bars, names):
            if name == LADDER_FLOOR:  # a yardstick, not a version: outlined as in chapters 03, 08 and 09
                bar.set(facecolor="white", edgecolor=cs.COLORS["roofline"], hatch="//")
        for bar, r in zip(bars, rows):
            label = f"{r['gbps']:.0f} GB/s, {r['pct_roofline']:.0f}%"
            # The labels stand in a column right of the roofline, so its line crosses none of them.
            x = max(roof * 1.03, bar.get_width()) if roof else bar.get_width()
            ax.text(x, bar.get_y() + bar.get_height() / 2, " " + label, va="center", fontsize=7.5)
        if roof:
            ax.axvline(roof, color=cs.COLORS["roofline"], lw=1, ls="--")
            ax.text(roof, len(rows) - 0.4, f"measured read roofline {roof:.0f} GB/s ", fontsize=7.5, va="bottom",
                    ha="right")
            ax.set_xlim(0, roof * 1.45)
        ax.set_yticks(ys, names)
        ax.invert_yaxis()
        ax.set_xlabel("GB/s (2 × 4 bytes per element read once)")
        ax.set_title(f"n = {cs.size_label(n)}: {8 * n / 1e6:.0f} MB per call")
    handles = [plt.Rectangle((0, 0), 1, 1, color=cs.COLORS[k]) for k in ("library", "gpu", "best")]
    labels = ["baseline", "course version", "final version"]
    if any(r["version"] == LADDER_FLOOR for r in ladder):
        handles.append(plt.Rectangle((0, 0), 1, 1, facecolor="white", edgecolor=cs.COLORS["roofline"], hatch="//"))
        labels.append("speed_of_light: reads only (floor)")
    axes[0][-1].legend(handles, labels, loc="upper left",
                       bbox_to_anchor=(1.0, 1.0), fontsize=8)  # outside: it hid value labels
    fig.suptitle(f"The reduction ladder on {cs.gpu_name()} (labels: GB/s, % of the measured read roofline)")
    cs.save(fig, out, "06_ladder")


def time_vs_n(rows, sweep, out):
    fig, ax = plt.subplots()
    roof = roofline_gbps(rows)
    all_n = sorted({int(r["n"]) for r in rows})
    floor = sorted((int(r["n"]), r["floor_ms"]) for r in sweep if cs.finite(r.get("floor_ms")))
    for version, label, colour, style in SWEEP_LINES:
        points = sorted((int(r["n"]), r["median_ms"]) for r in rows
                        if r["version"] == version and cs.finite(r.get("median_ms")))
        if points:
            ax.plot([p[0] for p in points], [1e3 * p[1] for p in points], style, marker="o", ms=3.5, color=colour,
                    label=label)
    if floor:
        ax.plot([p[0] for p in floor], [1e3 * p[1] for p in floor], color=cs.COLORS["roofline"], lw=1.6,
                label="launch-latency floor (empty kernel + bytes / roofline)")
    read_only = sorted((int(r["n"]), r["read_only_ms"]) for r in sweep if cs.finite(r.get("read_only_ms")))
    if read_only:  # absent from CSVs written before the read-only kernel was timed
        ax.plot([p[0] for p in read_only], [1e3 * p[1] for p in read_only], color=cs.COLORS["roofline"], lw=1.2,
                ls="--", marker="x", ms=4, label="read-only kernel: the final loads, no combine (floor with latency)")
    if roof and all_n:
        floor_us = [8.0 * n / (roof * 1e9) * 1e6 for n in all_n]
        ax.plot(all_n, floor_us, color=cs.COLORS["roofline"], lw=0.8, ls=":",
                label=f"bytes / roofline alone ({roof:.0f} GB/s)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylim(bottom=0.3)  # bytes / roofline keeps falling to the left: there the launch is the whole cost
    ax.set_xlabel("n (elements per vector)")
    ax.set_ylabel("median time per call (µs, log scale)")
    ax.set_title(f"Time per call on {cs.gpu_name()}: launch latency at small n, bandwidth at large n")
    ax.legend(fontsize=8)
    cs.save(fig, out, "06_ladder_sweep")


def versus_cublas(rows, sweep, out):
    fig, ax = plt.subplots()
    by = {(r["version"], int(r["n"])): r["median_ms"] for r in rows if cs.finite(r.get("median_ms"))}
    sizes = sorted({n for (_, n) in by})
    for version, label, colour, style in SWEEP_LINES:
        if version == "cublas":
            continue
        points = [(n, by[(version, n)] / by[("cublas", n)]) for n in sizes
                  if (version, n) in by and ("cublas", n) in by and by[("cublas", n)] > 0]
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], style, marker="o", ms=3.5, color=colour,
                    label=label)
    floor = sorted((int(r["n"]), r["floor_ms"] / r["cublas_ms"]) for r in sweep
                   if cs.finite(r.get("floor_ms")) and cs.finite(r.get("cublas_ms")) and r["cublas_ms"] > 0)
    if floor:
        ax.plot([p[0] for p in floor], [p[1] for p in floor], color=cs.COLORS["roofline"], lw=1.6,
                label="launch-latency floor")
    ax.axhline(1.0, color=cs.COLORS["library"], lw=1, label="cuBLAS (1.0)")
    ax.axhline(0.75, color=cs.COLORS["roofline"], lw=0.8, ls="--")
    ax.text(sizes[0] if sizes else 1, 0.75, "target for n ≤ 2^20: 0.75", fontsize=7.5, va="bottom")
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, 1.6)  # version 1 runs off the top at large n: it is there for the small sizes
    ax.set_xlabel("n (elements per vector)")
    ax.set_ylabel("time / cuBLAS time (below 1: faster than cuBLAS)")
    ax.set_title(f"Against cuBLAS, measured in the same run on {cs.gpu_name()}")
    ax.legend(fontsize=8)
    cs.save(fig, out, "06_ladder_vs_cublas")


def why_each_step(why, out):
    """Per version, the two counters that explain the ladder (tools/why_table.py: Nsight Compute at
    2^26): warp instructions executed per element (log scale) and DRAM throughput as % of peak.
    Steps 1-4 are bound by instructions; from step 5 on, by memory."""
    rows = [r for r in why if cs.finite(r.get("inst_per_element")) and cs.finite(r.get("dram_pct_peak"))]
    if not rows:
        return
    names = [r["version"] for r in rows]
    ys = list(range(len(rows)))[::-1]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 0.38 * len(rows) + 1.8), sharey=True)
    colours = [colour_of(v) for v in names]
    left.scatter([r["inst_per_element"] for r in rows], ys, c=colours, zorder=3)
    left.set_xscale("log")
    left.set_xlabel("warp instructions executed per element (log)")
    right.scatter([r["dram_pct_peak"] for r in rows], ys, c=colours, zorder=3)
    right.set_xlim(0, 100)
    right.set_xlabel("DRAM throughput, % of peak")
    for r, y in zip(rows, ys):
        left.text(r["inst_per_element"], y, f"  {r['inst_per_element']:.2f}", va="center", fontsize=7.5)
        right.text(r["dram_pct_peak"], y, f"  {r['dram_pct_peak']:.0f}%", va="center", fontsize=7.5)
    left.set_yticks(ys)
    left.set_yticklabels(names)
    for ax in (left, right):
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle(f"Why each step is faster: Nsight Compute counters at 2^26 on {cs.gpu_name()}")
    cs.save(fig, out, "06_ladder_why")


def main():
    args = cs.parse_args(__doc__)
    rows = [r for r in cs.load_csv(args.results / "06_ladder.csv") if r.get("valid") in (1.0, 1)]
    cs.apply()
    ladder_path = args.results / "06_ladder_ladder.csv"
    if ladder_path.is_file():
        ladder_bars(cs.load_csv(ladder_path), args.out)
    else:
        print(f"{ladder_path} not found: no ladder bars (run 06_ladder with sizes that include 2^24 or 2^28)")
    sweep_path = args.results / "06_ladder_sweep.csv"
    sweep = cs.load_csv(sweep_path) if sweep_path.is_file() else []
    time_vs_n(rows, sweep, args.out)
    versus_cublas(rows, sweep, args.out)
    why_path = args.results / "06_ladder_why.csv"
    if why_path.is_file():
        why_each_step(cs.load_csv(why_path), args.out)


if __name__ == "__main__":
    cs.run(main)
