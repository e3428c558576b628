#!/usr/bin/env python3
"""The instructions that tell each step's story, read from the compiled binary (no GPU needed).

For every version of a chapter's registry, the kernels it launches and, per kernel, the static count
of the instructions the text talks about: global loads by width (LDG.E against LDG.E.128), global
stores, shared loads and stores, shuffles, barriers, atomics and reductions, fences, dp4a and the
total. The counts are of the SASS as compiled (instructions in the code, not executed): a loop body
counts once. What a kernel executes per element is in the counters CSV (tools/counters.py).

  tools/sass_table.py --bin build/solutions/bin --out results/local [CHAPTER...]
      runs `cuobjdump -sass` on each chapter's executable (01_timing, 05_many_blocks, 06_ladder,
      10_dtypes by default) and writes OUT/NN_name_sass.csv
  tools/sass_table.py --sass FILE --chapter 06_ladder --out DIR
      the same from a saved `cuobjdump -sass` listing
  tools/sass_table.py --check [--results results/reference/h100]
      exit 1 when a committed NN_name_sass.csv lacks a version of the chapter's registry or names one
      that is not in it (no cuobjdump needed: CI)

Without cuobjdump the tool says so and exits 3 (a skip, as the chapters exit 3 without a GPU).
The map from kernel symbols to versions (KERNELS) is also what tools/counters.py profiles.
Standard library only.
"""
import argparse
import collections
import csv
import pathlib
import re
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_SKIP = 0, 1, 2, 3

# A kernel of a version: a label for tables, and the pattern that finds it in a demangled name
# (the function name, then '<' or '('; a template instance spelled out where the version runs one).
Kernel = collections.namedtuple("Kernel", "label pattern")


def _esc(text):
    """`text` as a literal in a regular expression that both Python and ncu (ECMAScript) read: only
    the metacharacters are escaped (an escaped space is not portable)."""
    return re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", text)


def k(name, args=None):
    """A kernel called `name` (any instance), or the instance with template arguments `args`."""
    if args is None:
        return Kernel(name, r"(?:^|[^\w])" + _esc(name) + r"[<(]")
    spaced = r",\s*".join(_esc(a.strip()) for a in args.split(","))
    return Kernel(f"{name}<{args}>", r"(?:^|[^\w])" + _esc(name) + "<" + spaced + ">")


CUBLAS = [Kernel("cublas dot_kernel", r"(?:^|\s)dot_kernel<"),
          Kernel("cublas reduce_1Block_kernel", r"reduce_1Block_kernel<")]
CUB_REDUCE = [Kernel("cub DeviceReduceKernel", r"DeviceReduceKernel<"),
              Kernel("cub DeviceReduceSingleTileKernel", r"DeviceReduceSingleTileKernel<")]
LIBRARY = "library"  # a version whose kernels live in a shared library: no SASS in the binary
CPU = "cpu"          # a version that runs on the host: no kernel

_ch06_finish = k("finish_kernel")

# chapter -> version -> ([Kernel], kind). kind: "" (the course's kernels), LIBRARY or CPU. A version
# of two launches lists both kernels in launch order (counters.py profiles that many launches).
KERNELS = {
    "01_timing": {
        "add_cpu": ([], CPU),
        "add_gpu": ([k("add_kernel", "float"), k("add_kernel", "double")], ""),
        "add_gpu_copies": ([k("add_kernel", "float"), k("add_kernel", "double")], ""),
        "sqrt_cpu": ([], CPU),
        "sqrt_gpu": ([k("sqrt_kernel", "float"), k("sqrt_kernel", "double")], ""),
        "sqrt_gpu_copies": ([k("sqrt_kernel", "float"), k("sqrt_kernel", "double")], ""),
    },
    "05_many_blocks": {
        "cublas": (CUBLAS, LIBRARY),
        "speed_of_light": ([k("speed_of_light_kernel")], ""),
        "grid_atomic": ([k("dot_grid_atomic")], ""),
        "block_serial": ([k("dot_block_serial")], ""),
        "block_tree": ([k("dot_block_tree")], ""),
        "two_level": ([k("dot_two_level")], ""),
        "warp_shuffle": ([k("dot_warp_shuffle"), k("sum_partials")], ""),
    },
    "06_ladder": {
        "cublas": (CUBLAS, LIBRARY),
        "cub": (CUB_REDUCE, ""),
        "atomic_vec4": ([k("dot_kernel_atomic")], ""),
        "speed_of_light": ([k("read_only_kernel")], ""),
        "v1_divergent": ([k("dot_kernel1"), _ch06_finish], ""),
        "v2_bank_conflicts": ([k("dot_kernel2"), _ch06_finish], ""),
        "v3_sequential": ([k("dot_kernel3"), _ch06_finish], ""),
        "v4_first_add": ([k("dot_kernel4"), _ch06_finish], ""),
        "v5_unroll_warp": ([k("dot_kernel5"), _ch06_finish], ""),
        "v6_unroll_all": ([k("dot_kernel6"), _ch06_finish], ""),
        "v7_many_per_thread": ([k("dot_kernel7"), _ch06_finish], ""),
        "v8_shuffle": ([k("dot_kernel8"), _ch06_finish], ""),
        "v9_float4": ([k("dot_kernel9"), _ch06_finish], ""),
        "v10_machine_grid": ([k("dot_kernel9"), _ch06_finish], ""),
        "v11_single_pass": ([k("dot_kernel11")], ""),
        "v12_tagged_partials": ([k("dot_kernel12")], ""),
    },
    # The course kernel of each pair is one instance of dot_kernel<X, Y, Acc> (Acc from the promotion
    # rule); the speed-of-light kernel reads bytes, one kernel for every pair.
    "10_dtypes": {
        "f32_f32": ([k("dot_kernel", "float, float, float")], ""),
        "f64_f64": ([k("dot_kernel", "double, double, double")], ""),
        "f32_f64": ([k("dot_kernel", "float, double, double")], ""),
        "f32_bool": ([k("dot_kernel", "float, bool, float")], ""),
        "f32_i8": ([k("dot_kernel", "float, signed char, float")], ""),
        "f32_f16": ([k("dot_kernel", "float, __half, float")], ""),
        "f16_f16": ([k("dot_kernel", "__half, __half, float")], ""),
        "bf16_bf16": ([k("dot_kernel", "__nv_bfloat16, __nv_bfloat16, float")], ""),
        "i8_i8": ([k("dot_kernel", "signed char, signed char, long long")], ""),
    },
}
# Rows beside a chapter's registry: kernels every version of it is compared with.
EXTRA = {"10_dtypes": {"speed_of_light": ([k("speed_of_light_kernel")], "")}}
DEFAULT_CHAPTERS = list(KERNELS)

# The columns of NN_name_sass.csv after chapter, version, kernel, symbol, note. Counted per kernel.
COUNTS = ["ldg_8", "ldg_16", "ldg_32", "ldg_64", "ldg_128", "stg", "lds", "sts", "shfl", "bar", "atom", "atoms",
          "red", "membar", "dp4a", "ffma", "fadd", "fmul", "branch", "total"]
COLUMNS = ["chapter", "version", "kernel", "symbol", "arch", "note"] + COUNTS

FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
ARCH = re.compile(r"^\s*arch\s*=\s*(sm_\d+a?)")
# "/*0090*/   @!P0 LDG.E.128.CONSTANT R4, desc[UR4][R2.64] ;": the opcode after the optional predicate.
INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T\d]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)")


class SassError(Exception):
    pass


def demangle(symbols):
    """{mangled: demangled}, by c++filt (or cu++filt); a symbol neither knows stays as it is."""
    symbols = sorted(set(symbols))
    for tool in ("c++filt", "cu++filt"):
        exe = shutil.which(tool) or (shutil.which(f"/usr/local/cuda/bin/{tool}"))
        if not exe or not symbols:
            continue
        try:
            r = subprocess.run([exe], input="\n".join(symbols) + "\n", capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        out = r.stdout.splitlines()
        if r.returncode == 0 and len(out) == len(symbols):
            return dict(zip(symbols, out))
    return {s: s for s in symbols}


def parse_sass(text):
    """[(arch, symbol, Counter of opcodes)] in the order of the listing: one entry per function of
    each SASS architecture (the PTX sections of the listing have no functions and are skipped)."""
    functions, arch, current = [], "", None
    for line in text.splitlines():
        m = ARCH.match(line)
        if m:
            arch = m.group(1)
            continue
        m = FUNCTION.match(line)
        if m:
            current = (arch, m.group(1), collections.Counter())
            functions.append(current)
            continue
        if current is None:
            continue
        m = INSTRUCTION.match(line)
        if m:
            current[2][m.group(1)] += 1
    return functions


def ldg_width(opcode):
    """Bits per thread of a global load: LDG.E.128 -> 128, LDG.E.64 -> 64, LDG.E.U8 -> 8, LDG.E -> 32."""
    parts = opcode.split(".")[1:]
    for p in parts:
        if p in ("128", "64", "32"):
            return int(p)
        if p in ("U8", "S8"):
            return 8
        if p in ("U16", "S16"):
            return 16
    return 32


def classify(opcodes):
    """The table's counts from a Counter of full opcodes."""
    c = dict.fromkeys(COUNTS, 0)
    for op, count in opcodes.items():
        base = op.split(".")[0]
        c["total"] += count
        if base == "LDG":
            c[f"ldg_{ldg_width(op)}"] += count
        elif base == "STG":
            c["stg"] += count
        elif base in ("LDS", "LDSM"):
            c["lds"] += count
        elif base == "STS":
            c["sts"] += count
        elif base == "SHFL":
            c["shfl"] += count
        elif base == "BAR":
            c["bar"] += count
        elif base in ("ATOM", "ATOMG"):
            c["atom"] += count
        elif base == "ATOMS":
            c["atoms"] += count
        elif base in ("RED", "REDG", "REDUX"):
            c["red"] += count
        elif base in ("MEMBAR", "FENCE"):
            c["membar"] += count
        elif base == "IDP":
            c["dp4a"] += count
        elif base in ("FFMA", "FADD", "FMUL"):
            c[base.lower()] += count
        elif base in ("BRA", "BRX", "JMP", "JMX"):
            c["branch"] += count
    return c


def pick_arch(functions, arch=None):
    archs = sorted({a for a, _, _ in functions}, key=lambda a: int(re.sub(r"\D", "", a) or 0))
    if arch:
        if arch not in archs:
            raise SassError(f"no SASS for {arch} in the listing (it has {', '.join(archs) or 'none'})")
        return arch
    if not archs:
        raise SassError("the listing has no SASS functions (was the binary built for a real architecture?)")
    return archs[-1]


def table(chapter, functions, arch=None):
    """The rows of NN_name_sass.csv for `chapter` from parse_sass()'s functions."""
    if chapter not in KERNELS:
        raise SassError(f"no kernel map for chapter {chapter} (known: {', '.join(KERNELS)})")
    arch = pick_arch(functions, arch)
    mine = [(sym, ops) for a, sym, ops in functions if a == arch]
    names = demangle([s for s, _ in mine])
    rows = []
    versions = dict(KERNELS[chapter])
    versions.update(EXTRA.get(chapter, {}))
    for version, (kernels, kind) in versions.items():
        if kind == CPU:
            rows.append(_row(chapter, version, "", "", arch, "runs on the host: no kernel", None))
            continue
        if kind == LIBRARY:
            rows.append(_row(chapter, version, "", "", arch, "cuBLAS: its kernels are in the library, not this binary", None))
            continue
        seen = set()
        for kern in kernels:
            found = [(sym, ops) for sym, ops in mine if re.search(kern.pattern, names[sym])]
            if not found:
                rows.append(_row(chapter, version, kern.label, "", arch, "not found in the binary", None))
            for sym, ops in found:
                if (kern.label, sym) in seen:
                    continue
                seen.add((kern.label, sym))
                note = "" if len(found) == 1 else f"one of {len(found)} instances"
                rows.append(_row(chapter, version, kern.label, sym, arch, note, classify(ops)))
    return rows


def _row(chapter, version, kernel, symbol, arch, note, counts):
    row = {"chapter": chapter, "version": version, "kernel": kernel, "symbol": symbol, "arch": arch, "note": note}
    for c in COUNTS:
        row[c] = "" if counts is None else counts[c]
    return row


def write_csv(rows, path, columns=None):
    """Writes rows (dicts) to path with `columns` (default this table's), making its folder."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns or COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def registry_names(chapter, root=ROOT):
    """The version names of `chapter`'s registry (tools/version_lists.py reads the sources)."""
    import version_lists
    for ch in version_lists.chapters(root):
        if ch.name == chapter:
            return ch.names
    raise SassError(f"no registry found for chapter {chapter}")


def check(results, chapters, root=ROOT):
    """Problems with the committed NN_name_sass.csv files of `chapters` in `results`: a registry
    version without a row, a row naming no version, a chapter whose CSV is missing."""
    problems = []
    for chapter in chapters:
        path = pathlib.Path(results) / f"{chapter}_sass.csv"
        if not path.exists():
            problems.append(f"{path}: missing (run tools/sass_table.py where cuobjdump is, and commit it)")
            continue
        with path.open(newline="") as f:
            rows = list(csv.DictReader(f))
        versions = {r["version"] for r in rows}
        names = registry_names(chapter, root)
        extra = set(EXTRA.get(chapter, {}))
        for v in names:
            if v not in versions:
                problems.append(f"{path}: no row for version {v} of the registry")
        for v in sorted(versions - set(names) - extra):
            problems.append(f"{path}: version {v} is not in the registry (renamed or removed?)")
        for v in names:
            if v not in KERNELS.get(chapter, {}):
                problems.append(f"tools/sass_table.py: KERNELS['{chapter}'] has no entry for version {v}")
    return problems


def run_cuobjdump(binary):
    exe = shutil.which("cuobjdump") or shutil.which("/usr/local/cuda/bin/cuobjdump")
    if not exe:
        return None
    r = subprocess.run([exe, "-sass", str(binary)], capture_output=True, text=True)
    if r.returncode != 0:
        raise SassError(f"cuobjdump -sass {binary} failed: {r.stderr.strip()[:400]}")
    return r.stdout


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("chapters", nargs="*", help=f"chapter folder names (default: {' '.join(DEFAULT_CHAPTERS)})")
    p.add_argument("--bin", type=pathlib.Path, default=ROOT / "build" / "solutions" / "bin",
                   help="the built course's bin/ (default build/solutions/bin)")
    p.add_argument("--sass", type=pathlib.Path, help="a saved `cuobjdump -sass` listing instead of running it (one chapter)")
    p.add_argument("--chapter", help="the chapter the --sass listing is of")
    p.add_argument("--arch", help="the SASS architecture to table (default: the highest in the binary, sm_90 here)")
    p.add_argument("--out", type=pathlib.Path, default=ROOT / "results" / "local", help="folder for NN_name_sass.csv")
    p.add_argument("--check", action="store_true", help="check the committed CSVs cover every registry version")
    p.add_argument("--results", type=pathlib.Path, default=ROOT / "results" / "reference" / "h100",
                   help="the folder --check reads (default results/reference/h100)")
    args = p.parse_args(argv)
    chapters = args.chapters or DEFAULT_CHAPTERS
    for ch in chapters:
        if ch not in KERNELS:
            p.error(f"no kernel map for chapter '{ch}' (known: {', '.join(KERNELS)})")
    try:
        if args.check:
            problems = check(args.results, chapters)
            for line in problems:
                print(f"sass_table: {line}", file=sys.stderr)
            if not problems:
                print(f"sass_table: {', '.join(chapters)}: every registry version has its row in {args.results}")
            return EXIT_FAIL if problems else EXIT_OK
        if args.sass:
            if not args.chapter:
                p.error("--sass needs --chapter")
            rows = table(args.chapter, parse_sass(args.sass.read_text()), args.arch)
            out = args.out / f"{args.chapter}_sass.csv"
            write_csv(rows, out)
            print(f"sass_table: {args.chapter}: {len(rows)} rows -> {out}")
            return EXIT_OK
        status = EXIT_OK
        for ch in chapters:
            binary = args.bin / ch
            if not binary.exists():
                print(f"sass_table: {binary} does not exist (build the chapter first)", file=sys.stderr)
                status = EXIT_FAIL
                continue
            listing = run_cuobjdump(binary)
            if listing is None:
                print("sass_table: cuobjdump not found (it comes with the CUDA toolkit): no SASS tables written; "
                      "the committed ones are in results/reference/h100/ (--check verifies them)")
                return EXIT_SKIP
            rows = table(ch, parse_sass(listing), args.arch)
            out = args.out / f"{ch}_sass.csv"
            write_csv(rows, out)
            print(f"sass_table: {ch}: {len(rows)} rows -> {out}")
        return status
    except SassError as e:
        print(f"sass_table: {e}", file=sys.stderr)
        return EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
