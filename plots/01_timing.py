"""Chapter 01 plots: CPU vs GPU for the vector add (kernel alone, with copies; float, double),
and the GPU's advantage as the arithmetic intensity grows."""
import matplotlib.pyplot as plt

import course_style as cs


def main():
    args = cs.parse_args(__doc__)
    rows = cs.load_csv(args.results / "01_timing.csv")
    cs.apply()

    # 1. The add: time per version and precision, log scale (the CPU and the copies are ~100× apart).
    fig, ax = plt.subplots()
    versions = [("add_cpu", "CPU, one core", cs.COLORS["cpu"]),
                ("add_gpu", "GPU kernel alone", cs.COLORS["gpu"]),
                ("add_gpu_copies", "GPU with copies", cs.COLORS["copies"])]
    precisions = ["float", "double"]
    width = 0.27
    for k, (version, label, color) in enumerate(versions):
        xs, ys = [], []
        for p, precision in enumerate(precisions):
            match = [r for r in rows if r["version"] == version and r["config"] == precision]
            if match:
                xs.append(p + (k - 1) * width)
                ys.append(match[0]["median_ms"])
        bars = ax.bar(xs, ys, width, label=label, color=color)
        ax.bar_label(bars, fmt="%.3g ms", fontsize=8, padding=2)
    n = next((r["n"] for r in rows if r["version"] == "add_cpu"), None)
    ax.set_xticks(range(len(precisions)), precisions)
    ax.set_yscale("log")
    ax.set_ylabel("median time per add (ms, log scale)")
    ax.set_title(f"Adding two vectors of {cs.size_label(n) if n else '?'} elements")
    ax.legend()
    cs.save(fig, args.out, "01_timing")

    # 2. Intensity: speed-up of the GPU over the CPU as square roots per element grow.
    fig, ax = plt.subplots()
    for precision, marker in (("float", "o"), ("double", "s")):
        for version, label, color in (("sqrt_gpu", "kernel alone", cs.COLORS["gpu"]),
                                      ("sqrt_gpu_copies", "with copies", cs.COLORS["copies"])):
            points = []
            for r in rows:
                if r["version"] != version or not str(r["config"]).startswith(precision + ","):
                    continue
                iters = int(str(r["config"]).split("iters=")[1])
                cpu = [c for c in rows if c["version"] == "sqrt_cpu" and c["config"] == r["config"]]
                if cpu:
                    points.append((iters, cpu[0]["median_ms"] / r["median_ms"]))
            if points:
                points.sort()
                ax.plot([p[0] for p in points], [p[1] for p in points], marker=marker, color=color,
                        label=f"{precision}, {label}")
    ax.axhline(1.0, color=cs.COLORS["cpu"], lw=1, ls="--", label="1×: GPU and CPU equal")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("square roots per element (arithmetic intensity)")
    ax.set_ylabel("speed-up of the GPU over one CPU core")
    ax.set_title("The GPU's advantage grows with the work per byte")
    ax.legend()
    cs.save(fig, args.out, "01_timing_intensity")


if __name__ == "__main__":
    cs.run(main)
