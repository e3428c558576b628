#!/usr/bin/env python3
"""Write a run's metadata beside its CSVs, per chapter: which GPU, driver, CUDA, commit and date, so
every plot drawn from a chapter's CSVs can say where and when that chapter was measured
(plots/course_style.py reads it). Chapters are measured at different times (a chapter is re-run
alone after a fix), so the file holds one record per chapter and a run updates only its own:

    tools/run_metadata.py --out results/local/run_metadata.json --chapter 05_many_blocks [--bin build/solutions/bin]
    tools/run_metadata.py --out results/reference/h100/run_metadata.json --chapter 08_pinned --fill-missing driver,cpu

--fill-missing fills only the named fields that a chapter's existing record has as null, from this
machine, and leaves the rest of the record (date, commit, telemetry) as it was: for a record written
before a field was collected, on the machine that measured it (the reference H100).

The file: {"chapters": {"05_many_blocks": {record}, ...}}; the other chapters' records are kept.
Record fields (a missing fact is null, never a guess):
  gpu     the GPU's name ("NVIDIA H100 80GB HBM3"), null without a GPU
  device  course_info's one-line description (SMs, L2, memory, peak bandwidth), or null
  driver  the NVIDIA driver version (nvidia-smi, else /proc/driver/nvidia/version)
  cuda    the CUDA toolkit the course was built with (nvcc --version)
  cpu     the CPU's model name (/proc/cpuinfo, else lscpu), for the CPU chapters
  commit  the git commit of the course ("-dirty" when the tree had changes); the environment
          variable COURSE_COMMIT overrides it, for a copy of the tree whose .git is not its own
  date    the date of the run, UTC (YYYY-MM-DD)
  telemetry  only where a GPU was found: clocks, temperature, power and throttle reasons before
          (--telemetry-before, a sample tools/telemetry.py --out wrote) and after the run, and
          whether it throttled (tools/telemetry.py documents the record)
An older file with a single record for the whole folder (no "chapters") is still read by
for_chapter() as the record of every chapter; writing a chapter's record drops it.
Standard library only.
"""
import argparse
import datetime
import json
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import telemetry  # noqa: E402


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
    for line in (output_of(["lscpu"]) or "").splitlines():  # Arm's /proc/cpuinfo has no model name
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip() or None
    return None


def driver_version():
    """The NVIDIA driver's version: nvidia-smi's, else the kernel module's (no nvidia-smi, or it failed)."""
    text = output_of(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    if text:
        return text.splitlines()[0].strip()
    try:
        m = re.search(r"Kernel Module(?: for \S+)?\s+(\d+(?:\.\d+)+)", pathlib.Path("/proc/driver/nvidia/version").read_text())
    except OSError:
        return None
    return m.group(1) if m else None


def commit():
    if os.environ.get("COURSE_COMMIT"):
        return os.environ["COURSE_COMMIT"]
    sha = output_of(["git", "rev-parse", "--short", "HEAD"])
    if sha and output_of(["git", "status", "--porcelain", "--untracked-files=no"]):
        sha += "-dirty"
    return sha


def collect(bin_dir=None, telemetry_before=None):
    gpu, device = gpu_facts(bin_dir)
    driver = driver_version() if gpu else None
    extra = {}
    if gpu or telemetry_before is not None:
        extra["telemetry"] = telemetry.record(telemetry_before or [], telemetry.sample())
    return {
        "gpu": gpu,
        "device": device,
        "driver": driver,
        "cuda": cuda_version(),
        "cpu": cpu_model(),
        "commit": commit(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        **extra,
    }


def for_chapter(meta, chapter):
    """The record of `chapter` (e.g. "06_ladder") in a loaded run_metadata.json, {} when absent."""
    if "chapters" in meta:
        return meta["chapters"].get(chapter) or {}
    return meta  # an older file: one record for every chapter


def update(path, chapters, record):
    """Writes `record` as the record of each of `chapters` into the file at `path`, keeping the
    records of the other chapters; returns the whole file's content."""
    path = pathlib.Path(path)
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError):
        meta = {}
    kept = meta.get("chapters", {}) if isinstance(meta, dict) else {}
    for ch in chapters:
        kept[ch] = dict(record)
    meta = {"chapters": dict(sorted(kept.items()))}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def fill_missing(path, chapters, record, fields):
    """Sets each of `fields` that a chapter's existing record has as null (or lacks) to this machine's
    value in `record`; keeps everything else. Returns {chapter: [filled fields]}."""
    path = pathlib.Path(path)
    meta = json.loads(path.read_text())
    filled = {}
    for ch in chapters:
        old = meta.get("chapters", {}).get(ch)
        if old is None:
            raise KeyError(f"{path} has no record of {ch}: run the chapter instead")
        if old.get("gpu") != record.get("gpu"):  # facts of another machine would be a guess
            raise ValueError(f"{ch} was measured on {old.get('gpu') or 'no GPU'}, this machine has "
                             f"{record.get('gpu') or 'no GPU'}: fill its record on a machine like the one that measured it")
        for field in fields:
            if old.get(field) is None and record.get(field) is not None:
                old[field] = record[field]
                filled.setdefault(ch, []).append(field)
    path.write_text(json.dumps(meta, indent=2) + "\n")
    return filled


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=pathlib.Path, required=True, help="the JSON file to write (or update)")
    p.add_argument("--chapter", action="append", required=True,
                   help="the chapter this run measured (05_many_blocks); repeat for several")
    p.add_argument("--bin", default=None, help="the built course's bin/ (for course_info)")
    p.add_argument("--telemetry-before", type=pathlib.Path, default=None,
                   help="the sample tools/telemetry.py --out wrote before the run")
    p.add_argument("--fill-missing", default=None, metavar="FIELDS",
                   help="only fill these null fields (comma list, e.g. driver,cpu) of the chapters' existing records")
    args = p.parse_args(argv)
    for ch in args.chapter:
        if not re.fullmatch(r"\d\d_\w+", ch):
            p.error(f"--chapter '{ch}' is not a chapter folder name such as 05_many_blocks")
    before = None
    if args.telemetry_before:
        try:
            before = json.loads(args.telemetry_before.read_text())
        except (OSError, ValueError):
            before = []
    meta = collect(args.bin, before)
    if args.fill_missing:
        fields = [f.strip() for f in args.fill_missing.split(",") if f.strip()]
        unknown = [f for f in fields if f not in meta or f == "telemetry"]
        if unknown:
            p.error(f"--fill-missing: not a field of a record: {', '.join(unknown)}")
        try:
            filled = fill_missing(args.out, args.chapter, meta, fields)
        except (OSError, ValueError, KeyError) as e:
            print(f"run_metadata: {e}", file=sys.stderr)
            return 2
        for ch in args.chapter:
            what = ", ".join(f"{f} = {meta[f]}" for f in filled.get(ch, [])) or "nothing to fill"
            print(f"run_metadata: {ch}: {what} → {args.out}")
        return 0
    update(args.out, args.chapter, meta)
    print(f"run_metadata: {', '.join(args.chapter)}: {meta['gpu'] or 'no GPU'}, {meta['date']}, "
          f"commit {meta['commit']} → {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
