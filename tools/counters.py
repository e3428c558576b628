#!/usr/bin/env python3
"""Why each version is as fast as it is: Nsight Compute's counters, one row per kernel of a version.

  tools/counters.py [--bin build/solutions/bin] [--out results/local] [--n 2^26] [CHAPTER...]
      runs each version of the chapters (01_timing, 05_many_blocks, 06_ladder, 10_dtypes by default)
      once under `ncu`, profiling only the kernels of that version (tools/sass_table.py's KERNELS)
      at one size past the L2, and writes OUT/NN_name_counters.csv
  tools/counters.py --only v9_float4 06_ladder        one version (repeatable, or a comma list)
  tools/counters.py --parse NCU_LOG --chapter 06_ladder --version v9_float4 --n 2^26
      the rows of one saved `ncu --csv` output, printed as CSV (for a look at a run by hand)

Every run is the chapter's own driver (`--kernel VERSION --n N --reps 1 --warmup 0`): the first
launches of the version's kernels are profiled (its validation call), `--launch-count` of them, by
`--kernel-name regex:...` on the demangled name. Clocks: `--clock-control none`, so the counters are
read at the clocks the GPU runs at, as the timings were (ncu's default locks the base clock); the
CSV says so in its clock_control column and gives the SM and memory clocks the kernel ran at.

Columns: chapter, version, config, kernel, n, duration_us, dram_pct_peak (achieved DRAM
throughput, % of peak), dram_gbps, dram_bytes_per_element, l2_hit_pct, achieved_occupancy_pct,
issue_slot_pct (issue slots busy), shared_bank_conflicts (loads + stores), inst_per_element (warp
instructions executed / n), thread_inst_per_element, grid_size, block_size, registers,
stall_1..3 and stall_1..3_cycles (the top warp-stall reasons, cycles per issued instruction),
sm_clock_mhz, dram_clock_mhz, clock_control, ncu_version, note.

Without ncu (the build machines, CI) the tool says so and exits 3; the plots then read the committed
results/reference/h100/NN_name_counters.csv. Standard library only.
"""
import argparse
import collections
import csv
import io
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import sass_table  # noqa: E402  (the kernel map)

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_SKIP = 0, 1, 2, 3
DEFAULT_N = 1 << 26  # 2 × 256 MiB of float inputs: far past the H100's 50 MB L2
CLOCK_CONTROL = "none"  # ncu's --clock-control: "none" leaves the clocks as they are (not locked to base)
CLOCK_CELL = f"--clock-control {CLOCK_CONTROL}"  # the CSV's cell (a bare "none" reads as a missing value)

# column -> ncu metric (all read in one pass set per kernel)
METRICS = {
    "duration": "gpu__time_duration.sum",
    "dram_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram_read": "dram__bytes_read.sum",
    "dram_write": "dram__bytes_write.sum",
    "l2_hit": "lts__t_sector_hit_rate.pct",
    "occupancy": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "issue": "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "bank_ld": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "bank_st": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "inst": "smsp__inst_executed.sum",
    "thread_inst": "smsp__thread_inst_executed.sum",
    "sm_hz": "smsp__cycles_elapsed.avg.per_second",
    "dram_hz": "dram__cycles_elapsed.avg.per_second",
    "grid": "launch__grid_size",
    "block": "launch__block_size",
    "registers": "launch__registers_per_thread",
}
# Warp-stall reasons: cycles a warp spent stalled for this reason per instruction issued.
STALL_REASONS = ["barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss", "lg_throttle",
                 "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction",
                 "not_selected", "short_scoreboard", "sleeping", "tex_throttle", "wait"]
STALL_METRIC = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
TOP_STALLS = 3

COLUMNS = ["chapter", "version", "config", "kernel", "n", "duration_us", "dram_pct_peak", "dram_gbps",
           "dram_bytes_per_element", "l2_hit_pct", "achieved_occupancy_pct", "issue_slot_pct",
           "shared_bank_conflicts", "shared_bank_conflicts_ld", "shared_bank_conflicts_st", "inst_per_element",
           "thread_inst_per_element", "grid_size", "block_size", "registers"]
for _i in range(1, TOP_STALLS + 1):
    COLUMNS += [f"stall_{_i}", f"stall_{_i}_cycles"]
COLUMNS += ["sm_clock_mhz", "dram_clock_mhz", "clock_control", "ncu_version", "note"]


class CountersError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# What to run: per chapter, the driver's arguments for one version at n, and which versions.
# ---------------------------------------------------------------------------------------------

Run = collections.namedtuple("Run", "version config args kernels n")


def _common(version, n):
    return ["--kernel", version, "--n", str(n), "--reps", "1", "--warmup", "0", "--quiet"]


def runs_for(chapter, version, n):
    """The profiling runs of one version: [Run], or a string saying why it has none."""
    kernels, kind = sass_table.KERNELS[chapter][version]
    if kind == sass_table.CPU:
        return "runs on the host: no kernel"
    extra = [kern for ks, _ in sass_table.EXTRA.get(chapter, {}).values() for kern in ks]
    if chapter == "01_timing":
        if version.endswith("_copies"):
            return "the same kernels as " + version[: -len("_copies")] + ", with copies around them"
        # One run per precision: the float calls (validation, timing) all come before the double ones.
        # The square-root loop at n / 4 (still 3 × 64 MiB past the L2 at 2^26): the driver checks it
        # against the host's loop, which takes seconds at 16 square roots per element.
        sqrt = version.startswith("sqrt")
        size = max(1, n // 4) if sqrt else n
        runs = []
        for kern, config in zip(kernels, ("float", "double")):
            args = ["--kernel", version, "--reps", "1", "--warmup", "0", "--quiet", "--cpu-reps", "1"]
            args += (["--n", "1024", "--intensity-n", str(size), "--iters", "16"] if sqrt
                     else ["--n", str(size), "--intensity-n", "1024", "--iters", "1"])
            runs.append(Run(version, config + (", iters=16" if sqrt else ""), args, [kern], size))
        return runs
    if chapter == "05_many_blocks":
        return [Run(version, "", _common(version, n) + ["--per-thread", "8"], kernels, n)]
    if chapter == "10_dtypes":
        # The pair's course kernel, then (after the library and CUB) the speed-of-light kernel.
        return [Run(version, "", _common(version, n), kernels + extra, n)]
    return [Run(version, "", _common(version, n), kernels, n)]


def ncu_command(ncu, binary, run, metrics, log):
    pattern = "|".join(f"(?:{kern.pattern})" for kern in run.kernels)
    return [ncu, "--csv", "--page", "details", "--print-units", "base", "--clock-control", CLOCK_CONTROL,
            "--metrics", ",".join(metrics), "--kernel-name-base", "demangled", "--print-kernel-base", "demangled",
            "--kernel-name", f"regex:{pattern}",
            "--launch-count", str(len(run.kernels)), "--log-file", str(log), str(binary)] + run.args


def all_metrics():
    return list(METRICS.values()) + [STALL_METRIC.format(r) for r in STALL_REASONS]


# ---------------------------------------------------------------------------------------------
# Reading ncu's CSV (the details page: one line per kernel launch and metric)
# ---------------------------------------------------------------------------------------------

# ncu's units (`--print-units base` asks for the base ones; the others are read too) -> factor to
# bytes, seconds or per second.
_SCALE = {"byte": 1.0, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12,
          "second": 1.0, "msecond": 1e-3, "usecond": 1e-6, "nsecond": 1e-9, "s": 1.0, "ms": 1e-3, "us": 1e-6,
          "ns": 1e-9, "hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9, "cycle/second": 1.0, "cycle/msecond": 1e3,
          "cycle/usecond": 1e6, "cycle/nsecond": 1e9, "byte/second": 1.0, "kbyte/second": 1e3,
          "mbyte/second": 1e6, "gbyte/second": 1e9, "tbyte/second": 1e12}


def to_base(value, unit):
    """A value in ncu's unit to base units (bytes, seconds, per second); percentages, counts and
    ratios unchanged."""
    return value * _SCALE.get((unit or "").strip().lower(), 1.0)


def number(text):
    """ncu's number ("1,234,567", "12.5", "n/a") as a float, or None."""
    t = (text or "").replace(",", "").strip()
    try:
        return float(t)
    except ValueError:
        return None


def parse_ncu_csv(text):
    """[{"id", "kernel", "metrics": {name: value in base units}}] per profiled launch, in order,
    from the output of `ncu --csv --page details` (other lines of the log are skipped)."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    if not lines:
        return []
    reader = csv.DictReader(io.StringIO("\n".join(lines) + "\n"))
    needed = {"ID", "Kernel Name", "Metric Name", "Metric Value"}
    if not needed <= set(reader.fieldnames or []):
        raise CountersError(f"ncu's CSV lacks the columns {sorted(needed - set(reader.fieldnames or []))} "
                            "(expected the details page: ncu --csv --page details)")
    launches = collections.OrderedDict()
    for row in reader:
        if row["ID"] == "ID":
            continue  # a repeated header
        launch = launches.setdefault(row["ID"], {"id": row["ID"], "kernel": row["Kernel Name"], "metrics": {}})
        value = number(row["Metric Value"])
        if value is not None:
            launch["metrics"][row["Metric Name"]] = to_base(value, row.get("Metric Unit", ""))
    return list(launches.values())


def _fmt(v, digits=6):
    if v is None:
        return ""
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.{digits}g}"


def row_from_launch(chapter, version, config, label, n, launch, ncu_version="", note=""):
    """One CSV row from one profiled launch."""
    m = launch["metrics"]
    get = lambda key: m.get(METRICS[key])  # noqa: E731
    duration = get("duration")
    read, write = get("dram_read"), get("dram_write")
    moved = (read or 0) + (write or 0) if read is not None or write is not None else None
    ld, st = get("bank_ld"), get("bank_st")
    stalls = sorted(((r, m[STALL_METRIC.format(r)]) for r in STALL_REASONS if STALL_METRIC.format(r) in m),
                    key=lambda p: -p[1])
    row = {
        "chapter": chapter, "version": version, "config": config, "kernel": label, "n": n,
        "duration_us": _fmt(duration * 1e6 if duration is not None else None),
        "dram_pct_peak": _fmt(get("dram_pct")),
        "dram_gbps": _fmt(moved / duration / 1e9 if moved is not None and duration else None),
        "dram_bytes_per_element": _fmt(moved / n if moved is not None and n else None),
        "l2_hit_pct": _fmt(get("l2_hit")),
        "achieved_occupancy_pct": _fmt(get("occupancy")),
        "issue_slot_pct": _fmt(get("issue")),
        "shared_bank_conflicts": _fmt((ld or 0) + (st or 0) if ld is not None or st is not None else None),
        "shared_bank_conflicts_ld": _fmt(ld),
        "shared_bank_conflicts_st": _fmt(st),
        "inst_per_element": _fmt(get("inst") / n if get("inst") is not None and n else None),
        "thread_inst_per_element": _fmt(get("thread_inst") / n if get("thread_inst") is not None and n else None),
        "grid_size": _fmt(get("grid")), "block_size": _fmt(get("block")), "registers": _fmt(get("registers")),
        "sm_clock_mhz": _fmt(get("sm_hz") / 1e6 if get("sm_hz") is not None else None, 5),
        "dram_clock_mhz": _fmt(get("dram_hz") / 1e6 if get("dram_hz") is not None else None, 5),
        "clock_control": CLOCK_CELL, "ncu_version": ncu_version, "note": note,
    }
    for i in range(TOP_STALLS):
        name, cycles = stalls[i] if i < len(stalls) else ("", None)
        row[f"stall_{i + 1}"] = name
        row[f"stall_{i + 1}_cycles"] = _fmt(cycles, 4)
    return row


def empty_row(chapter, version, config, label, n, note):
    row = dict.fromkeys(COLUMNS, "")
    row.update({"chapter": chapter, "version": version, "config": config, "kernel": label, "n": n,
                "clock_control": CLOCK_CELL, "note": note})
    return row


def rows_for_run(chapter, run, launches, ncu_version=""):
    """Rows of one run: each profiled launch matched back to the kernel of the version it is.
    A kernel of the chapter's EXTRA map (chapter 10's speed-of-light kernel) becomes a row of
    version `speed_of_light`, its config the pair."""
    extra = {kern.label: v for v, (ks, _) in sass_table.EXTRA.get(chapter, {}).items() for kern in ks}
    # By name first; a launch whose printed name matches no pattern (another ncu's spelling of it)
    # passed ncu's own filter, so it is one of the run's kernels: it takes the first one left.
    match, used = {}, set()
    for j, launch in enumerate(launches):
        for i, kern in enumerate(run.kernels):
            if i not in used and re.search(kern.pattern, launch["kernel"]):
                match[j] = (i, "")
                used.add(i)
                break
    for j in range(len(launches)):
        left = [i for i in range(len(run.kernels)) if i not in used]
        if j not in match and left:
            match[j] = (left[0], "matched by launch order: ncu printed another name")
            used.add(left[0])
    rows = []
    for j, launch in enumerate(launches):
        if j not in match:
            continue
        i, note = match[j]
        kern = run.kernels[i]
        version, config = (extra[kern.label], run.version) if kern.label in extra else (run.version, run.config)
        rows.append(row_from_launch(chapter, version, config, kern.label, run.n, launch, ncu_version, note))
    for i, kern in enumerate(run.kernels):
        if i not in used:
            version, config = (extra[kern.label], run.version) if kern.label in extra else (run.version, run.config)
            rows.append(empty_row(chapter, version, config, kern.label, run.n, "no launch of this kernel was profiled"))
    return rows


def write_csv(rows, path):
    sass_table.write_csv(rows, path, COLUMNS)


# ---------------------------------------------------------------------------------------------
# Running ncu
# ---------------------------------------------------------------------------------------------

def find_ncu():
    """ncu on PATH, else where the CUDA toolkit and Nsight Compute install it."""
    found = shutil.which("ncu")
    if found:
        return found
    candidates = [pathlib.Path("/usr/local/cuda/bin/ncu")]
    for pattern in ("/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda/nsight-compute*/ncu"):
        candidates += sorted(pathlib.Path("/").glob(pattern.lstrip("/")), reverse=True)
    return next((str(c) for c in candidates if c.exists()), None)


def ncu_version(ncu):
    try:
        r = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    m = re.search(r"Version\s+(\S+)", r.stdout)
    return m.group(1) if m else ""


def unknown_metrics(log_text, metrics):
    """The requested metrics ncu's errors name (this ncu or this GPU does not have them)."""
    errors = "\n".join(line for line in log_text.splitlines() if "ERROR" in line or "rror" in line)
    # Named whole, or by its base name (the part before the first '.') as some versions print it.
    return [m for m in metrics if re.search(r"(?<![\w.])" + re.escape(m.split(".")[0]) + r"(?![\w])", errors)]


def profile(ncu, binary, run, raw_dir, timeout):
    """Runs one profiling run; returns (launches, note)."""
    metrics = all_metrics()
    raw_dir.mkdir(parents=True, exist_ok=True)
    log = raw_dir / f"{binary.name}_{run.version}{'_' + run.config.split(',')[0] if run.config else ''}.ncu.csv"
    dropped = []
    for _ in range(4):
        if log.exists():
            log.unlink()
        cmd = ncu_command(ncu, binary, run, metrics, log)
        try:
            # The C locale: ncu prints numbers in the locale's format ("9,00" in some).
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, "LC_ALL": "C"})
        except subprocess.TimeoutExpired:
            return [], f"ncu ran past {timeout} s"
        text = log.read_text(errors="replace") if log.exists() else ""
        text_all = text + "\n" + r.stdout + "\n" + r.stderr
        bad = unknown_metrics(text_all, metrics)
        if r.returncode != 0 and bad:
            dropped += bad
            metrics = [m for m in metrics if m not in bad]
            continue
        launches = parse_ncu_csv(text)
        note = f"metrics this ncu lacks: {' '.join(dropped)}" if dropped else ""
        if r.returncode != 0:
            tail = " ".join(text_all.strip().splitlines()[-3:])[:300]
            note = (note + "; " if note else "") + f"driver or ncu exited {r.returncode}: {tail}"
        return launches, note
    return [], "ncu kept refusing metrics: " + " ".join(dropped)


def parse_size(text):
    t = str(text).strip().replace("_", "")
    m = re.fullmatch(r"2\^(\d+)", t)
    if m:
        return 1 << int(m.group(1))
    return int(float(t))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("chapters", nargs="*", help="chapter folder names (default: 01_timing 05_many_blocks 06_ladder 10_dtypes)")
    p.add_argument("--bin", type=pathlib.Path, default=ROOT / "build" / "solutions" / "bin")
    p.add_argument("--out", type=pathlib.Path, default=ROOT / "results" / "local", help="folder for NN_name_counters.csv")
    p.add_argument("--raw", type=pathlib.Path, help="folder for ncu's own CSV logs (default OUT/ncu)")
    p.add_argument("--n", default=str(DEFAULT_N), help="elements per input (default 2^26: past the L2)")
    p.add_argument("--only", action="append", default=[], help="profile only these versions (repeat or comma list)")
    p.add_argument("--timeout", type=int, default=180, help="seconds one profiling run may take")
    p.add_argument("--budget", type=float, default=0,
                   help="seconds for the whole call: no run starts after them (its versions get a note); 0: none")
    p.add_argument("--parse", type=pathlib.Path, help="print the rows of one saved ncu CSV log and exit")
    p.add_argument("--chapter", help="with --parse: the chapter")
    p.add_argument("--version", help="with --parse: the version")
    args = p.parse_args(argv)
    try:
        n = parse_size(args.n)
    except ValueError:
        p.error(f"--n '{args.n}' is not a size (2^26, 67108864)")
    only = {v for item in args.only for v in item.split(",") if v}

    if args.parse:
        if not (args.chapter and args.version):
            p.error("--parse needs --chapter and --version")
        runs = runs_for(args.chapter, args.version, n)
        if isinstance(runs, str):
            p.error(f"{args.version}: {runs}")
        launches = parse_ncu_csv(args.parse.read_text())
        w = csv.DictWriter(sys.stdout, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        for run in runs:
            w.writerows(rows_for_run(args.chapter, run, launches))
        return EXIT_OK

    chapters = args.chapters or list(sass_table.KERNELS)
    for ch in chapters:
        if ch not in sass_table.KERNELS:
            p.error(f"no kernel map for chapter '{ch}' (known: {', '.join(sass_table.KERNELS)})")
    ncu = find_ncu()
    if not ncu:
        print("counters: ncu (Nsight Compute) not found: no counters measured here. The plots use the committed "
              "results/reference/h100/NN_name_counters.csv; run tools/counters_gpu.sh on a GPU machine to renew them.")
        return EXIT_SKIP
    version = ncu_version(ncu)
    raw = args.raw or args.out / "ncu"
    status = EXIT_OK
    started = time.monotonic()
    for ch in chapters:
        binary = args.bin / ch
        if not binary.exists():
            print(f"counters: {binary} does not exist (build the chapter first)", file=sys.stderr)
            status = EXIT_FAIL
            continue
        rows = []
        for v in sass_table.KERNELS[ch]:
            if only and v not in only:
                continue
            runs = runs_for(ch, v, n)
            if isinstance(runs, str):
                rows.append(empty_row(ch, v, "", "", n, runs))
                continue
            for run in runs:
                if args.budget and time.monotonic() - started > args.budget:
                    rows.append(empty_row(ch, v, run.config, "", n, f"not profiled: past the {args.budget:g} s budget"))
                    continue
                print(f"counters: {ch} {v} {run.config}".rstrip(), flush=True)
                launches, note = profile(ncu, binary, run, raw, args.timeout)
                got = rows_for_run(ch, run, launches, version)
                if note:
                    for r in got:
                        r["note"] = (r["note"] + "; " if r["note"] else "") + note
                    print(f"counters: {ch} {v}: {note}", file=sys.stderr)
                rows += got
            write_csv(rows, args.out / f"{ch}_counters.csv")  # after every version: a killed run keeps what it had
        out = args.out / f"{ch}_counters.csv"
        write_csv(rows, out)
        print(f"counters: {ch}: {len(rows)} rows -> {out} (clock control: {CLOCK_CONTROL})")
    return status


if __name__ == "__main__":
    sys.exit(main())
