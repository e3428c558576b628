#!/usr/bin/env python3
"""The integrity scan of a chapter's holes: what a hole body may not contain.

A benchmark can be passed without doing the exercise: by calling a library or another version of
the registry from the hole, by computing the answer on the host with threads, by keeping results
between calls, by putting the work on a stream the timer does not watch, or by noticing that it is
being graded (an environment variable, the command line) and behaving differently. Some of these
only a GPU run can see (tests/test_NN_*.cpp hold those tests); what is written in the hole's text
this scan sees without a GPU, on the tree that is built (the grader's spliced tree, a student's
chapters/, or solutions/).

It reads the hole bodies only (tools/make_exercises.py finds them: the hole markers of a student
file, or the BEGIN SOLUTION regions of a solutions/ file), so the course's own code around a hole
may use what a hole may not (chapter 05's cuBLAS baseline sits in the same file as its exercises).

Why a source scan and not a symbol check (`nm` on the hole's object file): the holes share their
translation unit with the course's code, which legitimately calls cuBLAS (03, 05), loads libraries
(08), creates streams and threads (07, 08, 11); an object file cannot say which line called what.
Header-only libraries (CUB, Thrust) leave no undefined symbol at all, and "another version's
launcher" is a call inside the same file. The scan's blind spot is the preprocessor (a macro can
paste a name together), so a directive inside a hole is refused outright; line splices
(backslash-newline) are joined before scanning, comments are removed, strings are kept.

    hole_scan.py --tree DIR --chapter 07_library     exit 0 clean, 1 a finding (each on one line), 2 usage
    hole_scan.py --self-test                          the rules on the solutions and the stubs (must be clean)
"""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT / "tools") not in sys.path:
    sys.path.append(str(ROOT / "tools"))

import make_exercises as ME  # noqa: E402  (the one parser of holes)

# (class, pattern, why). The class names are the gallery's (tests/negative/gallery_table.py).
GLOBAL_RULES = [
    ("library", r"\bcublas\w*|\bcub::|\bthrust::|\bcuda::std::reduce\b|\bcutlass\w*",
     "a library call: the exercise is to write the reduction, not to call one"),
    ("library", r"\bdlopen\b|\bdlsym\b|\bdlvsym\b",
     "a library loaded at run time"),
    ("library", r"\bnccl\w*",
     "NCCL outside chapter 11"),
    ("preprocessor", r"^[ \t]*#(?![ \t]*pragma[ \t]+unroll\b)",
     "a preprocessor directive inside a hole (a macro can hide any name from this scan; only #pragma unroll "
     "is allowed)"),
    ("cache", r"(?<!constexpr )\bstatic\b(?!\s+constexpr\b)|\bthread_local\b",
     "state that outlives the call (a static or thread_local; a constant is `constexpr`): results cached "
     "across calls"),
    ("grading_detection", r"\b(?:secure_)?getenv\b|\bsetenv\b|\bputenv\b|\bunsetenv\b|\b_?_?environ\b|"
                          r"\bprogram_invocation\w*|\b__progname\b|/proc/|\bCOURSE_(?!HOST_DEVICE\b)\w+|\bargv\b|\bargc\b",
     "reads the environment or the command line: a hole must behave the same whether or not it is graded"),
    ("grading_detection", r"\bf?open\s*\(|\bfopen\b|\bstd::[io]?fstream\b|\breadlink\b|\bpopen\b|\bsystem\s*\(",
     "opens a file or runs a command"),
    ("other_stream", r"\bcudaStreamCreate\w*|\bcudaStreamLegacy\b|\bcudaStreamPerThread\b|\bcudaLaunchHostFunc\b|"
                     r"\bcudaStreamAddCallback\b",
     "work on a stream of its own or the default stream: the timer records on the stream it was given"),
    ("host_compute", r"\bstd::(?:j?thread|async)\b|\bpthread_create\b|\bThreadPool\b|\bomp_\w+",
     "host threads inside a GPU exercise: the answer may be computed on the CPU"),
]

# The speed-of-light rows (chapters 03-11): they read the bytes and compute no dot.
FLOOR = r"\b\w*(?:read_floor|link_floor|speed_of_light|SpeedOfLight)\w*"

# The kit's copy of what a chapter teaches (common/course/kernels/): the chapter that graduates a
# primitive into the kit is the last to see it as an exercise, and its holes may not call the copy.
KIT_WHY = "the kit's graduated copy of what this chapter's exercise asks you to write (common/course/kernels/)"

# Another version's launcher, the course's baselines, and host answers per chapter: names a hole
# of that chapter may not call. `allow` drops a global rule for the chapter (its subject).
CHAPTER_RULES = {
    "01_timing": {"deny": []},
    "02_cpu_dot": {"allow": ["host threads inside a GPU exercise: the answer may be computed on the CPU"],
                   "deny": [r"\bdot_(?:threads_partials|compensated|kahan)\w*\s*\(",
                            r"\bversions\s*\(", r"\bcpu_dot\w*", r"\bstd::(?:inner_product|reduce|accumulate)\b"]},
    "03_one_thread": {"deny": [r"\b(?:run|dot)_cublas\b", r"\bversions\s*\(", FLOOR,
                               ("other_stream", r"\.\s*stream\s*\(\s*\)|\bcudaStream_t\b",
                                "a stream other than the default one in the round trip: its TODO asks for the default "
                                "stream, the one the phase clock times")]},
    "04_one_block": {"deny": [r"\bversions\s*\(", r"\brun_\w+", FLOOR]},
    "05_many_blocks": {"deny": [FLOOR, r"\brun_cublas\b", r"\bversions\s*\(", r"\blaunch_\w+\s*\("]},
    "06_ladder": {"deny": [FLOOR, r"\brun_(?:v\d+|cublas|cub|atomic_vec4|speed_of_light)\b", r"\bversions\s*\(",
                           r"\bsingle_pass\w*"]},
    "07_library": {"deny": [FLOOR, r"\bdot_(?:alloc_per_call|reuse_staged|reuse|host|device|typed\w*)\b", r"\bfastest\s*\(",
                            r"\bversions\s*\(", r"\bstager\s*\(", r"\bStager\b", r"\btyped_state\b",
                            r"\bdotcourse_\w+\s*\("]},
    "08_pinned": {"deny": [FLOOR, r"\bpaths\s*\(", r"\bdevice_dot\b", r"\bcudaHostRegister\b", r"\bRegistration\b",
                           r"\bsm_copy\b", r"\bcudaMallocManaged\b", r"\bcudaMemPrefetchAsync\b",
                           r"\bcudaHostGetDevicePointer\b", r"\bparallel_memcpy\b"]},
    "09_streams": {"deny": [FLOOR, r"\bissue_(?:serial|one_stream|depth_first|graph)\b", r"\bgraph_for\b",
                            r"\bcudaGraph\w*", r"\bversions\s*\(", r"\bcpu_dot\b", r"\bbook_reference\b",
                            r"(?<![\w.>])run\s*\(",
                            ("host_compute", r"\bh_(?:x|y)\b",
                             "the inputs read on the host in the chapter's holes: the answer must come from the "
                             "kernels' partials")]},
    "10_dtypes": {"deny": [FLOOR, r"\brun_\w+", r"\bversions\s*\(", r"\bbaseline\w*",
                           ("library", r"\bkernels\b|\bTypedAcc\b", KIT_WHY)]},
    "11_multi_gpu": {"allow": ["NCCL outside chapter 11"],
                     "deny": [FLOOR, r"\bcombine_(?:allreduce|p2p|host|graph|allgather_graph|kernel|over_peers)\b",
                              r"\bnccl(?:AllReduce|Reduce|ReduceScatter|Broadcast|Bcast)\b", r"\bversions\s*\(",
                              r"\breference_from_seed\b"]},
}
OTHER_VERSION_WHY = "another version's launcher, a course baseline or a host answer called from a hole"


# Memory order in a single-pass kernel (issue 27, part 3). No runtime test can be relied on to see
# an order weaker than the protocol needs: the hardware may deliver the partial before the ticket
# on every run of a test and not on the grading run (docs/grading.md, "What no test can see"). So
# the review rule is executable here: in the hole of the single-pass kernel, the ticket's
# read-modify-write publishes the partial (release) and the last block's read of every partial
# follows it (acquire): acq_rel or seq_cst (the default) on the fetch_*, or a __threadfence() on
# both sides of a relaxed one (atomicAdd/atomicInc are relaxed).
def ticket_order(code):
    """Findings of the ticket rule in one hole's code: [(offset, what, why)]."""
    out = []
    fences = len(re.findall(r"\b__threadfence\s*\(|\batomic_thread_fence\s*\(", code))
    acquire_fence = re.search(r"\batomic_thread_fence\s*\([^;]*memory_order_(?:acquire|acq_rel|seq_cst)", code)
    for m in re.finditer(r"\.\s*(fetch_\w+)\s*\(([^;]*)\)", code):
        order = re.findall(r"memory_order_(\w+)", m.group(2))
        if order == ["release"] and acquire_fence:
            continue
        if order and not set(order) & {"acq_rel", "seq_cst"} and fences < 2:
            out.append((m.start(), m.group(0).strip(),
                        f"the ticket's {m.group(1)} is memory_order_{order[0]}: the partial stored before it may "
                        "not be visible to the last block (release) and the last block's reads may not see the "
                        "others' partials (acquire): the ticket must order both (chapter 06's README, One launch)"))
    for m in re.finditer(r"\batomic(?:Add|Inc)\w*\s*\(", code):
        if fences < 2:
            out.append((m.start(), m.group(0).strip(),
                        "atomicAdd/atomicInc is relaxed: nothing orders the partial before the ticket (release) or "
                        "the last block's reads after it (acquire) (chapter 06's README, One launch)"))
    return out


def denied(pattern, why):
    """A hole rule refusing every match of `pattern` in the hole's code."""
    rx = re.compile(pattern)
    return lambda code: [(m.start(), m.group(0).strip(), why) for m in rx.finditer(code)]


# A timing exercise answered with a host clock (issue 38, class 1): chapter 01's exercise 2 asks for
# the GPU's clock (events). A host clock read around the launch and a synchronisation returns a time
# that passes a test of the work's length; the test that queues a known host delay before the work
# reaches the stream sees it on a GPU, this rule without one. The kit's timers are the exercise done.
HOST_CLOCK = (r"\bstd::chrono\b|\bchrono::|\b\w*_clock\b|\bclock_gettime\b|\bgettimeofday\b|\bclock\s*\(|"
              r"\btime\s*\(|\btimespec_get\b|\b_*rdtscp?\b|\btime_(?:gpu|cpu)\w*|\btime_round_robin\b|\bTimer\b")
HOST_CLOCK_WHY = ("a host clock (or the kit's timer) in the event-timing exercise: the GPU's time is read from events "
                  "the stream time-stamps; a host clock also counts the enqueue and whatever the stream waited for "
                  "(chapter 01's README, Exercise 2)")

# A float exercise answered in wider arithmetic (issue 38, class 5): chapter 02's compensated sum is
# to be done in float, as its TODO says; a double accumulator is more accurate than the exercise
# and passes every accuracy test.
WIDER = r"\bdouble\b|\b__float128\b|\b_Float(?:64|128)x?\b|\b__ibm128\b|\bstd::float(?:64|128)_t\b"
WIDER_WHY = ("arithmetic wider than float in the compensated-float exercise: the point is to recover, in float, what "
             "each float addition loses (the TODO: no double, no long double)")

# A cache kept where the tests reset but the benchmark does not (issue 38, class 4): in chapters 05
# and 06 the block's partial is written by the given code after the hole, into the workspace that
# every call of the benchmark shares. A hole that reads `partials` reads what the last call left
# there: on the same input that is this block's answer, so the loads can be skipped. The tests
# that poison the workspace before a call never see it; the ones that call as the benchmark does
# (chapter 06's "follows its input") do, on a GPU; this rule, without one. Chapter 06's holes in
# dot.cu are the single pass (hole 1), which writes and reads the partials itself, and a host
# function.
PARTIALS = r"\bpartials\b"
PARTIALS_WHY = ("the workspace's partials read in a hole that comes before the block's partial is written: what is "
                "there is the last call's (the benchmark does not reset the workspace between calls), a cache")

# A lookup answered with a walk (issue 40: the test's oracle is a linear scan, and a copy of it
# passes every answer check): chapter 07's covers runs on every dot_host call, so its TODO asks
# that the answer not cost a walk over the map. No runtime test can see the cost without timing
# it; a loop or a linear algorithm in the hole is what this rule refuses. The sorted map's own
# lookups (upper_bound, lower_bound, find) are the exercise.
WALK = (r"\bfor\b|\bwhile\b|\bgoto\b|\bstd::(?:find_if|any_of|all_of|none_of|for_each|count_if|accumulate|"
        r"distance|advance)\b|\+\+|--")
WALK_WHY = ("a loop or a linear algorithm in the lookup: covers runs on every call, so it must find the one range "
            "that can hold p through the map's own ordered lookup, not walk the registrations (chapter 07's "
            "README, Exercise 4)")

# (chapter, file, hole) -> (class, a function of the hole's code giving [(offset, what, why)]), or a list
# of those.
HOLE_RULES = {
    ("01_timing", "timing.cu", 1): ("host_clock", denied(HOST_CLOCK, HOST_CLOCK_WHY)),
    ("02_cpu_dot", "dot.cpp", 4): ("wider_arithmetic", denied(WIDER, WIDER_WHY)),
    # The round trip's steps other than the copies in (holes 2 and 3) have no use for the host
    # inputs: a hole that reads them computes the answer on the host (issue 38, class 2).
    **{("03_one_thread", "dot.cu", k): ("host_compute", denied(
        r"\bh_[xy]\b", "the host inputs read outside the copies in: the round trip's answer must be the version's, "
        "computed on the device")) for k in (1, 4, 5, 6)},
    **{("05_many_blocks", "dot.cu", k): ("workspace_cache", denied(PARTIALS, PARTIALS_WHY)) for k in (1, 2, 3, 4)},
    ("06_ladder", "dot.cu", 1): ("memory_order", ticket_order),
    ("07_library", "dot.cu", 4): ("linear_walk", denied(WALK, WALK_WHY)),
}


def code_only(body):
    """The body with line splices joined and comments removed; strings kept. Line numbers are kept
    (a removed block comment leaves its newlines)."""
    text = body.replace("\\\r\n", "").replace("\\\n", "")
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def rules_for(chapter):
    extra = CHAPTER_RULES.get(chapter, {})
    rules = [r for r in GLOBAL_RULES if r[2] not in extra.get("allow", [])]
    rules += [d if isinstance(d, tuple) else ("other_version", d, OTHER_VERSION_WHY) for d in extra.get("deny", [])]
    return [(cls, re.compile(p, re.M), why) for cls, p, why in rules]


def scan_text(text, chapter, name):
    """[(file, hole, line in the file, class, what, why)] for one file's hole bodies."""
    findings = []
    for k, hole in sorted(ME.bodies_of(text, name).items()):
        code = code_only(hole.body)
        for cls, rx, why in rules_for(chapter):
            for m in rx.finditer(code):
                line = hole.begin_line + code.count("\n", 0, m.start()) + 1
                findings.append((name, k, line, cls, m.group(0).strip() or m.group(0), why))
        entry = HOLE_RULES.get((chapter, name, k), [])
        for cls, rule in entry if isinstance(entry, list) else [entry]:
            for at, what, why in rule(code):
                findings.append((name, k, hole.begin_line + code.count("\n", 0, at) + 1, cls, what, why))
    return sorted(set(findings), key=lambda f: (f[1], f[2]))


def scan_chapter(tree, chapter):
    folder = pathlib.Path(tree) / chapter
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder")
    findings = []
    for src in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in (".cu", ".cpp", ".cuh", ".hpp", ".h")):
        text = src.read_text(errors="replace")
        findings += scan_text(text, chapter, str(src.relative_to(folder)))
    return findings


def self_test():
    """The rules must not fire on the course's own hole bodies (solutions) or stubs (chapters)."""
    bad = 0
    for tree in ("solutions", "chapters"):
        for chapter in sorted(CHAPTER_RULES):
            for f in scan_chapter(ROOT / tree, chapter):
                print(f"self-test: {tree}/{chapter}/{f[0]} hole {f[1]} line {f[2]}: {f[3]}: '{f[4]}'")
                bad += 1
    print(f"hole_scan self-test: {bad} finding(s) on the course's own bodies")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", help="the tree that is built (COURSE_TREE_DIR)")
    ap.add_argument("--chapter", help="the chapter folder, e.g. 07_library")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if not args.tree or not args.chapter:
        ap.error("--tree and --chapter are required")
    try:
        findings = scan_chapter(args.tree, args.chapter)
    except (FileNotFoundError, ME.MarkerError) as e:
        print(f"hole_scan: {e}", file=sys.stderr)
        return 2
    for name, k, line, cls, what, why in findings:
        print(f"FAILED integrity [{cls}]: {args.chapter}/{name} hole {k}, line {line}: '{what}': {why}.")
    if findings:
        print(f"{len(findings)} finding(s) in the holes of {args.chapter}. The holes are graded as written; "
              "what a hole may not contain is listed in docs/grading.md (the exploit gallery). "
              "This test's failure sets the chapter's performance points to 0.")
        return 1
    print(f"hole_scan: the holes of {args.chapter} are clean")
    return 0


if __name__ == "__main__":
    sys.exit(main())
