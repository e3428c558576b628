"""Chapter 02 plots: the CPU versions side by side (time and GB/s per size, log scale), and the
accuracy of each against the fp64 reference as n grows, beside the tolerance the tests allow."""
import matplotlib.pyplot as plt

import course_style as cs

STEM = "02_cpu_dot"
KIND_TITLES = {"positive": "x, y uniform in [0, 1): every product positive",
               "signed": "x, y uniform in [-1, 1): products cancel"}


# Each version has its own marker, and each bug_* (all grey) its own dash pattern: two grey dotted
# lines could not be told apart.
MARKERS = ["o", "s", "D", "^", "v", "X", "P", "*", "<", ">"]
BUG_STYLES = [":", "--", "-."]


def colors_for(versions):
    """One colour per version, in registry order; the bug_* versions in grey."""
    palette = [c for c in cs.PALETTE if c != cs.COLORS["cpu"]]
    out, k = {}, 0
    for v in versions:
        if v.startswith("bug_"):
            out[v] = cs.COLORS["cpu"]
        else:
            out[v] = palette[k % len(palette)]
            k += 1
    return out


def versions_side_by_side(rows, out_dir):
    """Two panels, time and GB/s: one column per version, one marker per size (its own shape; left
    to right: smaller to larger n). Dots, not bars: a bar's length means nothing on a log scale.
    Hollow markers are results that failed validation (the bug_* versions, on purpose)."""
    versions = list(dict.fromkeys(r["version"] for r in rows))
    sizes = sorted({r["n"] for r in rows})
    colors = colors_for(versions)
    fig, (ax_t, ax_b) = plt.subplots(1, 2, figsize=(12, 5))
    width = 0.6 / len(sizes)
    for b, version in enumerate(versions):
        for s, n in enumerate(sizes):
            match = [r for r in rows if r["version"] == version and r["n"] == n]
            if not match:
                continue
            r = match[0]
            x = b + (s - (len(sizes) - 1) / 2) * width
            wrong = r.get("valid") != 1.0
            style = dict(marker=MARKERS[s % len(MARKERS)], ms=6, ls="none", color=colors[version],
                         markerfacecolor="white" if wrong else colors[version], markeredgewidth=1.3)
            ax_t.plot(x, r["median_ms"], **style)
            if cs.finite(r.get("gbps")):
                ax_b.plot(x, r["gbps"], **style)
    handles = [plt.Line2D([], [], marker=MARKERS[s % len(MARKERS)], ls="none", color=cs.COLORS["key"],
                          label=f"n = {cs.size_label(n)}") for s, n in enumerate(sizes)]
    handles.append(plt.Line2D([], [], marker="o", ls="none", color=cs.COLORS["key"], markerfacecolor="white",
                              label="hollow: wrong answer"))
    ax_b.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # off the data
    for ax in (ax_t, ax_b):
        ax.set_xticks(range(len(versions)), versions, rotation=25, ha="right")
        ax.set_yscale("log")
    ax_t.set_ylabel("median time per dot product (ms, log scale)")
    ax_b.set_ylabel("GB/s (x and y read once, log scale)")
    ax_t.set_title("Time per dot product")
    threads = max((int(str(r["config"]).split("=")[1]) for r in rows
                   if str(r.get("config", "")).startswith("threads=")), default=1)
    ax_b.set_title(f"Bandwidth (threaded versions on {threads} threads)")
    # The CPU is the subject of this chapter: name the one that was timed (run_metadata.json).
    fig.suptitle(f"The dot product on the CPU: {cs.cpu_name()}")
    # % of the GPU's read roofline, where the run had a GPU: the ceiling of every later chapter.
    best = [r for r in rows if r["n"] == sizes[-1] and r.get("valid") == 1.0 and cs.finite(r.get("pct_roofline"))]
    if best:
        top = max(best, key=lambda r: r["gbps"])
        roofline = top["gbps"] * 100.0 / top["pct_roofline"]
        ax_b.axhline(roofline, color=cs.COLORS["roofline"], lw=1, ls="--", label=f"read roofline of {cs.gpu_name()}")
        ax_b.annotate(f"GPU read roofline {roofline:.0f} GB/s; best CPU at {cs.size_label(sizes[-1])}: "
                      f"{top['pct_roofline']:.1f}% of it", (0, roofline), xytext=(0, -12),
                      textcoords="offset points", fontsize=8)
    cs.save(fig, out_dir, STEM)


def accuracy(rows, out_dir):
    """Relative error against the fp64 reference vs n, per version, for positive and signed data;
    the dashed line is the tolerance the tests allow (course::dot_error_bound), relative."""
    kinds = list(dict.fromkeys(r["data"] for r in rows))
    versions = list(dict.fromkeys(r["version"] for r in rows))
    colors = colors_for(versions)
    fig, axes = plt.subplots(1, len(kinds), figsize=(6 * len(kinds) + 2, 5), squeeze=False)
    floor = 1e-10  # an exact result (error 0) is drawn here, on a log scale
    for ax, kind in zip(axes[0], kinds):
        for version in versions:
            pts = sorted((r["n"], max(r["rel_error"], floor)) for r in rows
                         if r["data"] == kind and r["version"] == version and cs.finite(r["rel_error"]))
            if pts:
                k = versions.index(version)
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=MARKERS[k % len(MARKERS)], ms=4,
                        color=colors[version], ls=BUG_STYLES[k % len(BUG_STYLES)] if version.startswith("bug_") else "-",
                        label=version)
        bound = sorted({(r["n"], r["rel_bound"]) for r in rows if r["data"] == kind and cs.finite(r["rel_bound"])})
        if bound:
            ax.plot([b[0] for b in bound], [b[1] for b in bound], color=cs.COLORS["roofline"], ls="--", lw=1.2,
                    label="tolerance (error bound)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("n (elements)")
        ax.set_ylabel("relative error against the fp64 reference\n(an exact result is drawn at 1e-10)")
        ax.set_title(KIND_TITLES.get(kind, kind))
    axes[0][-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    cs.save(fig, out_dir, STEM + "_accuracy")


def main():
    args = cs.parse_args(__doc__)
    cs.apply()
    versions_side_by_side(cs.load_csv(args.results / f"{STEM}.csv"), args.out)
    accuracy_csv = args.results / f"{STEM}_accuracy.csv"
    if accuracy_csv.is_file():
        accuracy(cs.load_csv(accuracy_csv), args.out)
    else:
        print(f"{accuracy_csv} not found: no accuracy plot (the run had --accuracy-n 0?)")

if __name__ == "__main__":
    cs.run(main)
