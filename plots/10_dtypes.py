"""Chapter 10 plots: per pair at the largest size, GB/s counted in the pair's own bytes and elements
per second, for the course kernel, the library baseline (cuBLAS, or convert then cuBLAS) and CUB,
with the measured read roofline in bytes and in elements; and the Python comparison (dotcourse,
PyTorch, CuPy) when its CSV is there."""
import matplotlib.pyplot as plt

import course_style as cs

STEM = "10_dtypes"
IMPLS = (("course", "course kernel", cs.COLORS["gpu"]), ("library", "cuBLAS / convert+cuBLAS", cs.COLORS["library"]),
         ("cub", "CUB TransformReduce", cs.COLORS["copies"]))


def impl_of(version):
    return "library" if version in ("cublas", "convert_cublas") else version


def throughput(rows):
    n = max(r["n"] for r in rows)
    sel = [r for r in rows if r["n"] == n]
    pairs = list(dict.fromkeys(r["dtype"] for r in sel))
    roof = next(r["gbps"] * 100.0 / r["pct_roofline"] for r in sel if cs.finite(r["pct_roofline"]) and r["pct_roofline"] > 0)
    fig, (ax_b, ax_e) = plt.subplots(2, 1, figsize=(11, 8.5), sharex=True)
    width = 0.26
    for k, (impl, label, color) in enumerate(IMPLS):
        xs, gb, el = [], [], []
        for i, p in enumerate(pairs):
            r = next((r for r in sel if r["dtype"] == p and impl_of(r["version"]) == impl), None)
            if r is None:
                continue
            xs.append(i + (k - 1) * width)
            gb.append(r["gbps"])
            el.append(r["n"] / (r["median_ms"] * 1e-3) / 1e9)
        ax_b.bar(xs, gb, width, color=color, label=label)
        ax_e.bar(xs, el, width, color=color, label=label)
    ax_b.axhline(roof, color=cs.COLORS["roofline"], linestyle="--", label=f"measured read roofline ({roof:.0f} GB/s)")
    ax_b.set_ylabel("GB/s (the pair's own bytes)")
    ax_b.set_title(f"Each pair at n = {cs.size_label(n)} on {cs.gpu_name()}")
    ax_b.set_ylim(0, roof * 1.35)  # room above the roofline for the legend, clear of every bar
    ax_b.legend(fontsize=8, loc="upper center", ncol=2)
    # The roofline in elements: roofline / (bytes per element of the pair).
    for i, p in enumerate(pairs):
        r = next(r for r in sel if r["dtype"] == p)
        per = r["bytes"] / r["n"]
        ax_e.hlines(roof / per, i - 1.5 * width, i + 1.5 * width, color=cs.COLORS["roofline"], linestyle="--")
    ax_e.plot([], [], color=cs.COLORS["roofline"], linestyle="--", label="roofline in elements (roofline / bytes per element)")
    ax_e.set_ylabel("billions of elements per second")
    ax_e.legend(fontsize=8, loc="upper left")
    ax_e.set_xticks(range(len(pairs)), [p.replace("*", " · ") for p in pairs], rotation=25, ha="right")
    return fig


def python(rows):
    pairs = list(dict.fromkeys(r["pair"] for r in rows))
    impls = [(impl, cs.PEERS[impl]) for impl in ("dotcourse", "torch", "torch_convert", "cupy")]
    fig, ax = plt.subplots(figsize=(11, 4.8))
    width = 0.2
    for k, (impl, color) in enumerate(impls):
        xs, ys, hatch = [], [], []
        for i, p in enumerate(pairs):
            r = next((r for r in rows if r["pair"] == p and r["impl"] == impl), None)
            if r is None or not cs.finite(r["median_ms"]):
                continue
            xs.append(i + (k - 1.5) * width)
            ys.append(r["median_ms"])
            hatch.append(r["status"] != "ok")
        bars = ax.bar(xs, ys, width, color=color, label=impl)
        for b, wrong in zip(bars, hatch):
            if wrong:
                b.set_hatch("xx")
    ax.set_xticks(range(len(pairs)), pairs)
    ax.set_ylabel("ms per call (result on the host)")
    ax.set_title(f"From Python, device-resident inputs, n = {cs.size_label(rows[0]['n'])} (hatched: wrong result; "
                 "missing: refused)", fontsize=10)
    ax.legend(fontsize=8)
    return fig


def main():
    args = cs.parse_args(__doc__)
    rows = cs.load_csv(args.results / f"{STEM}.csv")
    cs.apply()
    cs.save(throughput(rows), args.out, STEM)
    py = args.results / f"{STEM}_python.csv"
    if py.is_file():
        cs.save(python(cs.load_csv(py)), args.out, f"{STEM}_python")


if __name__ == "__main__":
    cs.run(main)
