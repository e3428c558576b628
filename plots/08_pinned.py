"""Chapter 08 plots: the transfer sweep per path (log-log time against size, with the fitted
t = alpha + S/beta, and the bandwidth it reaches beside the link's rate), what pinning costs against
size, the staging knobs, and the dot of host data end to end on every path beside the floor
(speed_of_light: the pinned path's copies and nothing else, a hatched bar)."""
import matplotlib.pyplot as plt

import course_style as cs

STEM = "08_pinned"
FLOOR = "speed_of_light"  # not a path's dot: the registry's floor, drawn as a yardstick (absent from older CSVs)
DIRECTIONS = ("h2d", "d2h", "both")


def sweep(rows, fits):
    paths = list(dict.fromkeys(r["path"] for r in rows))
    color = {p: cs.path_color(p) for p in paths}  # the same colours as the end-to-end figure
    fig, axes = plt.subplots(2, 3, figsize=(14, 8), sharex=True)
    for col, d in enumerate(DIRECTIONS):
        t_ax, bw_ax = axes[0][col], axes[1][col]
        for p in paths:
            pts = sorted((r["bytes"], r["median_ms"], r["gbps"]) for r in rows if r["path"] == p and r["direction"] == d)
            if not pts:
                continue
            xs = [x for x, _, _ in pts]
            t_ax.plot(xs, [t * 1e3 for _, t, _ in pts], "o", ms=3, color=color[p], label=p)
            fit = [f for f in fits if f["path"] == p and f["direction"] == d]
            if fit and cs.finite(fit[0]["beta_gbps"]) and fit[0]["beta_gbps"] > 0:
                a, b = fit[0]["alpha_us"], fit[0]["beta_gbps"]
                counted = 2 if d == "both" else 1
                t_ax.plot(xs, [a + counted * x / (b * 1e3) for x in xs], "-", lw=1, color=color[p], alpha=0.7)
            bw_ax.plot(xs, [g for _, _, g in pts], "o-", ms=3, lw=1, color=color[p], label=p)
        link = [f["link_gbps"] for f in fits if f["direction"] == d and cs.finite(f["link_gbps"]) and f["link_gbps"] > 0]
        if link:
            bw_ax.axhline(link[0], color=cs.COLORS["roofline"], ls="--", lw=1)
            bw_ax.annotate(f"link {link[0]:.0f} GB/s", (0.01, link[0]), xycoords=("axes fraction", "data"),
                           xytext=(0, 3), textcoords="offset points", fontsize=7)
        t_ax.set_xscale("log", base=2)
        t_ax.set_yscale("log")
        t_ax.set_title(f"{d}: time per copy (points) and alpha + S/beta (lines)")
        t_ax.set_ylabel("microseconds")
        bw_ax.set_xscale("log", base=2)
        bw_ax.set_ylim(bottom=0)
        bw_ax.set_xlabel("bytes per copy" + (" (each direction)" if d == "both" else ""))
        bw_ax.set_ylabel("GB/s" + (" (both directions summed)" if d == "both" else ""))
    # One legend for the whole figure, beside it: every path once, and the link; none over the data.
    handles = [plt.Line2D([], [], marker="o", ms=4, lw=1, color=color[p], label=p) for p in paths]
    handles.append(plt.Line2D([], [], color=cs.COLORS["roofline"], ls="--", lw=1, label="the link's rate"))
    fig.legend(handles=handles, fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.suptitle("Host <-> device transfers on every path")
    return fig


# The operations of 08_pinned_pinning.csv: (the path whose memory they make or give back, releases).
OP_PATHS = {"malloc_and_touch": ("pageable", False), "free": ("pageable", True),
            "cudaMallocHost": ("pinned", False), "cudaFreeHost": ("pinned", True),
            "cudaHostRegister": ("registered", False), "cudaHostUnregister": ("registered", True)}


def pinning(rows):
    fig, ax = plt.subplots()
    ops = list(dict.fromkeys(r["op"] for r in rows))
    for i, op in enumerate(ops):
        pts = sorted((r["bytes"], r["median_ms"]) for r in rows if r["op"] == op)
        # Each operation in the colour of the path it serves (the other figures' colours), named
        # "path: op"; what gives memory back is dashed.
        path, release = OP_PATHS.get(op, (None, False))
        color = cs.path_color(path) if path else cs.PALETTE[i % len(cs.PALETTE)]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o--" if release else "o-", ms=3, color=color,
                label=f"{path}: {op}" if path else op)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("bytes")
    ax.set_ylabel("milliseconds")
    ax.set_title("What memory costs before the first copy: allocate, pin, free")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def staging(rows):
    fig, ax = plt.subplots()
    chunks = sorted({r["chunk_bytes"] for r in rows})
    threads = sorted({r["threads"] for r in rows})
    width = 0.8 / len(threads)
    for j, t in enumerate(threads):
        vals = [next((r["gbps"] for r in rows if r["chunk_bytes"] == c and r["threads"] == t), 0) for c in chunks]
        bars = ax.bar([i + j * width for i in range(len(chunks))], vals, width, label=f"{int(t)} threads",
                      color=cs.PALETTE[j % len(cs.PALETTE)])
        ax.bar_label(bars, fmt="%.0f", fontsize=8)
    ax.set_xticks([i + width * (len(threads) - 1) / 2 for i in range(len(chunks))],
                  [f"{int(c) >> 20} MiB chunks" for c in chunks])
    ax.set_ylabel("GB/s, pageable -> device")
    ax.set_title("The staged copy: chunk size and host threads (4 pinned buffers)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def end_to_end(rows):
    sizes = sorted({r["n"] for r in rows})
    paths = list(dict.fromkeys(r["version"] for r in rows))
    fig, axes = plt.subplots(1, len(sizes), figsize=(6 * len(sizes), 4.8), squeeze=False)
    for ax, n in zip(axes[0], sizes):
        vals = [next((r["pct_link"] for r in rows if r["version"] == p and r["n"] == n), 0) for p in paths]
        bars = ax.bar(range(len(paths)), vals, color=[cs.path_color(p) for p in paths])
        for bar, p in zip(bars, paths):
            if p == FLOOR:  # a baseline, not a path: white, hatched in the yardstick colour
                bar.set(facecolor="white", edgecolor=cs.COLORS["roofline"], hatch="//")
        ms = [next((r["median_ms"] for r in rows if r["version"] == p and r["n"] == n), 0) for p in paths]
        ax.bar_label(bars, labels=[f"{m:.3g} ms" for m in ms], fontsize=8)
        ax.set_xticks(range(len(paths)), [f"{p} (floor)" if p == FLOOR else p for p in paths], rotation=25, ha="right")
        ax.axhline(100, color=cs.COLORS["roofline"], ls="--", lw=1)
        ax.set_ylabel("% of this run's pinned H2D bandwidth")
        ax.set_ylim(0, 112)  # room above 100 for the time labels
        ax.set_title(f"dot of host data, n = {cs.size_label(n)}, result on the host")
    return fig


def main():
    args = cs.parse_args(__doc__)
    rows = cs.load_csv(args.results / f"{STEM}.csv")
    cs.apply()
    cs.save(end_to_end(rows), args.out, STEM)
    sw, fit = args.results / f"{STEM}_sweep.csv", args.results / f"{STEM}_fit.csv"
    if sw.is_file() and fit.is_file():
        cs.save(sweep(cs.load_csv(sw), cs.load_csv(fit)), args.out, f"{STEM}_sweep")
    pin = args.results / f"{STEM}_pinning.csv"
    if pin.is_file():
        cs.save(pinning(cs.load_csv(pin)), args.out, f"{STEM}_pinning")
    st = args.results / f"{STEM}_staging.csv"
    if st.is_file():
        cs.save(staging(cs.load_csv(st)), args.out, f"{STEM}_staging")


if __name__ == "__main__":
    cs.run(main)
