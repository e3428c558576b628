#!/usr/bin/env python3
"""Write a run's metadata beside its CSVs: which GPU, driver, CUDA, commit and date, so every plot
drawn from them can say where and when it was measured (plots/course_style.py reads it).

    tools/run_metadata.py --out results/local/run_metadata.json [--bin build/solutions/bin]

Fields (a missing fact is null, never a guess):
  gpu     the GPU's name ("NVIDIA H100 80GB HBM3"), null without a GPU
  device  course_info's one-line description (SMs, L2, memory, peak bandwidth), or null
  driver  the NVIDIA driver version (nvidia-smi)
  cuda    the CUDA toolkit the course was built with (nvcc --version)
  cpu     the CPU's model name (/proc/cpuinfo), for the CPU chapters
  commit  the git commit of the course ("-dirty" when the tree had changes)
  date    the date of the run, UTC (YYYY-MM-DD)
Standard library only.
"""
import argparse
import datetime
import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def output_of(cmd):
    """stdout of cmd, or None when it is missing or fails."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=ROOT)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def gpu_facts(bin_dir):
    """(name, description) from `course_info --probe` ("GPU: NAME, sm_90, ..."), else nvidia-smi."""
    line = output_of([str(pathlib.Path(bin_dir) / "course_info"), "--probe"]) if bin_dir else None
    if line and line.startswith("GPU: "):
        device = line[len("GPU: "):].strip()
        return device.split(",")[0].strip(), device
    name = output_of(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"])
    return (name.splitlines()[0].strip(), None) if name else (None, None)


def cuda_version():
    text = output_of(["nvcc", "--version"]) or output_of(["/usr/local/cuda/bin/nvcc", "--version"])
    m = re.search(r"release (\d+\.\d+)", text or "")
    return m.group(1) if m else None


def cpu_model():
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def commit():
    sha = output_of(["git", "rev-parse", "--short", "HEAD"])
    if sha and output_of(["git", "status", "--porcelain", "--untracked-files=no"]):
        sha += "-dirty"
    return sha


def collect(bin_dir=None):
    gpu, device = gpu_facts(bin_dir)
    driver = output_of(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]) if gpu else None
    return {
        "gpu": gpu,
        "device": device,
        "driver": driver.splitlines()[0].strip() if driver else None,
        "cuda": cuda_version(),
        "cpu": cpu_model(),
        "commit": commit(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=pathlib.Path, required=True, help="the JSON file to write")
    p.add_argument("--bin", default=None, help="the built course's bin/ (for course_info)")
    args = p.parse_args(argv)
    meta = collect(args.bin)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(meta, indent=2) + "\n")
    print(f"run_metadata: {meta['gpu'] or 'no GPU'}, {meta['date']}, commit {meta['commit']} → {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
