#!/usr/bin/env python3
"""The exploit gallery's table in docs/grading.md, generated from the negative cases.

Every tests/negative/<case>/case.json with an "exploit" key (the class: other_stream, deferred,
host_compute, library, cache, grading_detection, serial_loop, host_clock, tuned_constant, wider_arithmetic,
memory_order, workspace_cache, order_dependent) is a row; the block between
<!-- exploit-gallery --> and <!-- /exploit-gallery --> in docs/grading.md is written from them:
a matrix of classes by chapters (the cases, or why the class does not apply there), then one row
per case with what catches it and whether it needs a GPU.

    gallery_table.py            rewrite the block
    gallery_table.py --check    exit 1 if the block is not what the cases give (CI)
"""
import argparse
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "negative"
DOC = ROOT / "docs" / "grading.md"
BEGIN, END = "<!-- exploit-gallery -->", "<!-- /exploit-gallery -->"
INTEGRITY = " integrity: the holes call no library or other version, keep no state, read no environment"

# The classes, in the order, with what catches them (the mechanisms, in words).
CLASSES = {
    "other_stream": ("work on another stream than the timer's",
                     "hole scan (stream creation, `cudaStreamLegacy`, `cudaStreamPerThread`, host callbacks; "
                     "03: any stream but the default); 03: the spy version records the stream it was given; "
                     "`StreamGate` tests: the stream given is held, and a synchronous call must not return (07) or "
                     "an asynchronous one must land nothing (08, 11) until it goes on; chapter 09's unused pipeline "
                     "streams are put in capture mode and must capture nothing"),
    "deferred": ("deferred work (returns before its result is computed)",
                 "every call's result is checked after the stream or device synchronizes, call by call; the "
                 "`StreamGate` test (a call that returns while its stream is held has not waited); the hole scan "
                 "for the state a deferral needs (`static`)"),
    "host_compute": ("the answer computed on the host",
                     "hole scan (host threads and pools; chapter 09's inputs named in a hole; chapter 03's host "
                     "inputs outside the copies in); 03: a spy version, which answers x·x, must be launched once "
                     "and its answer returned; 07: the engine's "
                     "buffers must hold the call's input and the result must be the course kernel's bits; 09: the "
                     "combine, called again with the inputs zeroed, must give the same bits"),
    "library": ("a library or another version called from a hole",
                "hole scan: cuBLAS, CUB, Thrust, NCCL outside chapter 11, `dlopen`/`dlsym`, and per chapter the "
                "other versions' launchers, the baselines and the host answers (`tests/support/hole_scan.py`)"),
    "cache": ("results cached across calls",
              "hole scan (`static`, `thread_local`); the \"follows its input\" tests (all values new); 07 and 08: "
              "one element (byte) changed away from the ends between calls"),
    "grading_detection": ("a hole that detects grading",
                          "hole scan: the environment (`getenv`, `environ`, `COURSE_*`), the command line (`argv`, "
                          "`/proc`), files, and any preprocessor directive (a macro can paste a name together)"),
    "serial_loop": ("a correct but serial loop where independent lanes are asked",
                    "the compiled loop must hold packed adds (`tests/support/lanes_check.py`, objdump of the "
                    "exercise's function in the Release build; CTest `ch02 unrolled lanes: ...`), and the "
                    "chapter's performance rule (`02 unrolled, × sequential`: 0 points at 1.0); 11: the host "
                    "simulation of the pairwise combine (`ch11 pairwise: *`: a level's adds shared evenly)"),
    "host_clock": ("a timing exercise answered with a host clock",
                   "hole scan of chapter 01's timing hole (`std::chrono`, `clock_gettime`, the kit's timers); "
                   "`ch01 time_with_events_ms: counts what the stream runs, ...`: the stream is held while "
                   "launch() spends a known host delay, which events do not count and a host clock does"),
    "tuned_constant": ("a design exercise answered with a constant tuned to one card",
                       "`ch09 plan: on other machines' engine figures, ...`: the plan, fed synthetic engine "
                       "figures (T4 on PCIe 3, A100 on PCIe 4, H200 on PCIe 5, latency-bound paths, small jobs), "
                       "must be within 15 % of exercise 3's model's best shape on each (host only)"),
    "wider_arithmetic": ("a float exercise answered in wider arithmetic",
                         "hole scan: no `double`, `long double` or wider type in chapter 02's compensated hole "
                         "(its TODO says so)"),
    "order_dependent": ("an order-dependent combine where a fixed order is asked",
                        "the order of finishing is forced, not hoped for: 06, a test switch delays one block "
                        "after another, then all in reverse (`ch06 v11_single_pass: the same bits whichever block "
                        "finishes last (forced orders)`); 11, the host simulation runs a step's adds in any order and "
                        "refuses two adds on one value between barriers, and the GPUs are delayed in turn (`... the "
                        "same bits on every run, whichever GPU finishes first`)"),
    "workspace_cache": ("a cache kept where the tests reset but the benchmark does not",
                        "the tests call as the benchmark does: one workspace (engine) kept between calls and never "
                        "reset, planned for more than n, new values in the same buffers each call, every result "
                        "checked (`... follows its input ...`; 11: one team called again with new inputs, no poisoning "
                        "between calls); the benchmark checks every timed call of a version or changes its input "
                        "between them (05-11); the hole scan refuses `partials` in 05's holes, which come before "
                        "the partial is written"),
    "memory_order": ("a memory order weaker than the protocol needs (single pass)",
                     "no runtime test can be relied on (docs below); the hole scan's ticket rule for chapter 06's "
                     "single pass: acq_rel (or fences on both sides)"),
}
CHAPTERS = ["01_timing", "02_cpu_dot", "03_one_thread", "05_many_blocks", "06_ladder", "07_library", "08_pinned", "09_streams", "10_dtypes", "11_multi_gpu"]
# Where a class cannot be written in a chapter's holes, and why (a cell of the matrix).
NOT_APPLICABLE = {
    **{(k, "01_timing"): "no such hole" for k in ("other_stream", "deferred", "host_compute", "library", "cache",
                                                  "grading_detection", "serial_loop", "memory_order", "tuned_constant",
                                                  "wider_arithmetic", "workspace_cache", "order_dependent")},
    **{(k, "03_one_thread"): "no such hole" for k in ("deferred", "serial_loop", "memory_order", "tuned_constant",
                                                      "wider_arithmetic", "host_clock")},
    ("library", "03_one_thread"): "scan: cuBLAS",
    ("cache", "03_one_thread"): "scan: `static`",
    ("grading_detection", "03_one_thread"): "scan: as 07-09",
    **{("host_clock", ch): "no timing hole" for ch in ("02_cpu_dot", "05_many_blocks", "06_ladder", "07_library",
                                                        "08_pinned", "09_streams", "10_dtypes", "11_multi_gpu")},
    **{("tuned_constant", ch): "no design hole" for ch in ("02_cpu_dot", "05_many_blocks", "06_ladder", "07_library",
                                                            "08_pinned", "10_dtypes", "11_multi_gpu")},
    **{("wider_arithmetic", ch): "accumulator given outside the holes" for ch in ("09_streams", "11_multi_gpu")},
    ("wider_arithmetic", "10_dtypes"): "the accumulator type is the exercise",
    **{("wider_arithmetic", ch): "no compensated-float hole" for ch in ("05_many_blocks", "06_ladder", "07_library",
                                                                     "08_pinned")},
    **{(k, "02_cpu_dot"): "CPU chapter" for k in ("other_stream", "deferred", "host_compute", "memory_order")},
    ("library", "02_cpu_dot"): "scan: other sums, std algorithms",
    ("grading_detection", "02_cpu_dot"): "scan: as 07-09",
    ("serial_loop", "05_many_blocks"): "device code only",
    ("serial_loop", "06_ladder"): "device code only",
    ("serial_loop", "07_library"): "no lanes asked",
    ("serial_loop", "08_pinned"): "no lanes asked",
    ("serial_loop", "09_streams"): "serial by contract (fixed order)",
    ("serial_loop", "10_dtypes"): "GPU: the roofline rules",
    ("other_stream", "05_many_blocks"): "device code only",
    ("other_stream", "06_ladder"): "device code only",
    ("other_stream", "10_dtypes"): "device code only",
    ("deferred", "05_many_blocks"): "device code only",
    ("deferred", "06_ladder"): "device code only",
    ("deferred", "10_dtypes"): "device code only",
    ("deferred", "09_streams"): "run() waits and checks each call",
    ("deferred", "11_multi_gpu"): "scan: state (`static`)",
    ("host_compute", "05_many_blocks"): "device code only",
    ("host_compute", "06_ladder"): "device code only",
    ("host_compute", "10_dtypes"): "device code only",
    ("host_compute", "08_pinned"): "the exercise is a copy: no answer",
    ("host_compute", "11_multi_gpu"): "scan: threads; inputs not in reach",
    ("library", "05_many_blocks"): "scan: cuBLAS, launchers",
    ("library", "06_ladder"): "scan: cuBLAS, CUB, launchers",
    ("library", "10_dtypes"): "scan: baselines",
    ("library", "11_multi_gpu"): "scan: other collectives",
    ("cache", "09_streams"): "scan: `static`",
    ("cache", "10_dtypes"): "scan: `static`",
    ("grading_detection", "05_many_blocks"): "device code: no environment",
    ("grading_detection", "06_ladder"): "device code: no environment",
    ("grading_detection", "10_dtypes"): "device code: no environment",
    ("memory_order", "05_many_blocks"): "no single pass",
    ("memory_order", "07_library"): "no single pass in a hole",
    ("memory_order", "08_pinned"): "no single pass",
    ("memory_order", "09_streams"): "no single pass",
    ("memory_order", "10_dtypes"): "single pass outside the holes",
    ("memory_order", "11_multi_gpu"): "protocol outside the holes",
    ("order_dependent", "02_cpu_dot"): "CPU chapter",
    ("order_dependent", "03_one_thread"): "one thread: one order",
    ("order_dependent", "05_many_blocks"): "atomics are the lesson; the host sums two_level's partials",
    ("order_dependent", "07_library"): "no combine in a hole",
    ("order_dependent", "08_pinned"): "no combine",
    ("order_dependent", "09_streams"): "the combine runs after every stream joined",
    ("order_dependent", "10_dtypes"): "single pass outside the holes",
    ("workspace_cache", "02_cpu_dot"): "CPU chapter: no workspace",
    ("workspace_cache", "03_one_thread"): "no workspace: the round trip frees all",
    ("workspace_cache", "08_pinned"): "one Stager kept between calls: `one byte changed`",
    ("workspace_cache", "09_streams"): "one pipeline kept; run() checks every call",
    ("workspace_cache", "06_ladder"): "the index holes and wave_efficiency get no workspace; the single pass writes it",
    ("workspace_cache", "05_many_blocks"): "holes 1–4 are helpers that get no workspace; the kernels write the partials",
    ("workspace_cache", "10_dtypes"): "no workspace in the holes' reach",
}


def load():
    cases = []
    for path in sorted(CASES.glob("*/case.json")):
        c = json.loads(path.read_text())
        if "exploit" not in c:
            continue
        if c["exploit"] not in CLASSES:
            raise SystemExit(f"{path}: exploit '{c['exploit']}' is not one of {', '.join(CLASSES)}")
        c["name"] = path.parent.name
        cases.append(c)
    return cases


def caught_by(c):
    parts = []
    for t in c["fail"]:
        if t.endswith(INTEGRITY):
            parts.append("hole scan (`" + t.split(" integrity:")[0] + " integrity`)")
        else:
            parts.append(f"`{t}`")
    if c.get("sanitize"):
        parts.append(f"compute-sanitizer {c['sanitize']}")
    return "; ".join(parts)


def table(cases):
    lines = ["| class | " + " | ".join(ch[:2] for ch in CHAPTERS) + " |",
             "| --- |" + " --- |" * len(CHAPTERS)]
    for key, (title, _) in CLASSES.items():
        cells = []
        for ch in CHAPTERS:
            names = [f"`{c['name'][3:]}`" + (" (GPU)" if c["gpu"] else "") for c in cases
                     if c["exploit"] == key and c["chapter"] == ch]
            cells.append("<br>".join(names) if names else NOT_APPLICABLE.get((key, ch), "—"))
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    lines += ["", "| class | what catches it |", "| --- | --- |"]
    for key, (title, how) in CLASSES.items():
        lines.append(f"| {title} | {how} |")
    lines += ["", "| case | class | the exploit | caught by | runs in |", "| --- | --- | --- | --- | --- |"]
    for c in sorted(cases, key=lambda c: (list(CLASSES).index(c["exploit"]), c["name"])):
        where = "`tools/gpu_check.sh` (GPU)" if c["gpu"] else "CI"
        lines.append(f"| `{c['name']}` | {CLASSES[c['exploit']][0]} | {c['class'].replace('|', '/')} | "
                     f"{caught_by(c)} | {where} |")
    return "\n".join(lines)


def render(doc, cases):
    if BEGIN not in doc or END not in doc:
        raise SystemExit(f"{DOC}: the markers {BEGIN} and {END} are missing")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{table(cases)}\n{END}{tail}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="fail if docs/grading.md's block is out of date")
    args = ap.parse_args()
    doc = DOC.read_text()
    new = render(doc, load())
    if args.check:
        if new != doc:
            print(f"gallery_table: the exploit gallery in {DOC.relative_to(ROOT)} is out of date: "
                  "run tests/negative/gallery_table.py", file=sys.stderr)
            return 1
        print("gallery_table: docs/grading.md is up to date")
        return 0
    if new != doc:
        DOC.write_text(new)
        print(f"gallery_table: wrote the exploit gallery in {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
