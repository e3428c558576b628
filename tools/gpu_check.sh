#!/usr/bin/env bash
# On a machine with a GPU: build both trees, run every test, run compute-sanitizer over every
# chapter's GPU tests at small sizes, prove every negative case fails its tests, grade both trees
# (through the grader's splice, with its sanitizer step), and print a summary table last.
# Uses only what the course needs (CMake, nvcc, Catch2, CLI11, compute-sanitizer, python3).
#   tools/gpu_check.sh [--out DIR] [--skip build,tests,sanitize,negatives,grade,tamper]
#                      [--tools memcheck,racecheck,...] [--grade-repeats N] [--chapters 07,09]
#   --chapters LIST: only these chapters (NN or NN_name, comma-separated): their targets, their
#   labelled tests, their test binaries under the sanitizers, their negative cases, their grades,
#   the Python and Go callers where 07 or 10 is among them, the tampering check where 06 is.
#   A check of what a change touched, on one warm machine; the whole course needs no --chapters.
#   --grade-repeats N: then grade the solutions' performance N times (no rebuild, no sanitizer) and
#   require full performance marks in every run; the spread of every ratio is in grade-repeats/.
#   Environment: CUDA_ARCHS (default native), SANITIZE_TIMEOUT seconds per test binary and tool (300).
set -uo pipefail
export NCCL_NVLS_ENABLE=0  # NVLink multicast off in every process (chapter 11 starts NCCL)
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${OUT:-$root/build/gpu-check}
skip=""
tools="memcheck,racecheck,synccheck,initcheck"
repeats=0
chapter_list=""
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --skip) skip=$2; shift 2 ;;
    --tools) tools=$2; shift 2 ;;
    --grade-repeats) repeats=$2; shift 2 ;;
    --chapters) chapter_list=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "gpu_check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
# The chapters checked: every folder of chapters/, or those that --chapters names.
chapters=()
for arg in ${chapter_list//,/ }; do
  arg=${arg#ch}  # ch07 as the grader writes it
  match=(chapters/"${arg%%_*}"_*/)
  if [ ! -d "${match[0]}" ] || { [[ $arg == *_* ]] && [ ! -d "chapters/$arg" ]; }; then
    echo "gpu_check: no chapter '$arg' (chapters/ holds: $(cd chapters && ls -d [0-9][0-9]_* | paste -sd ' '))" >&2
    exit 2
  fi
  match=${match[0]%/}
  chapters+=("${match#chapters/}")
done
checking() {  # chapter number -> whether it is checked (every chapter without --chapters)
  [ ${#chapters[@]} -eq 0 ] && return 0
  local c
  for c in "${chapters[@]}"; do [ "${c%%_*}" = "$1" ] && return 0; done
  return 1
}
grade_chapters=()  # tools/grade arguments: every chapter, or --chapter for each checked one
for c in "${chapters[@]}"; do grade_chapters+=(--chapter "$c"); done
build_targets=()  # cmake --build arguments: everything, or the chapters' own targets
ctest_filter=()
if [ ${#chapters[@]} -gt 0 ]; then
  build_targets=(--target course_info)
  labels=""
  for c in "${chapters[@]}"; do
    build_targets+=("${c}_all")
    labels+="${labels:+|}ch${c%%_*}"
  done
  { checking 07 || checking 10; } && build_targets+=(dotcourse)
  ctest_filter=(-L "^($labels)\$")
fi

mkdir -p "$out"
summary=()
overall=0
note() { summary+=("$(printf '%-34s %-6s %s' "$1" "$2" "$3")"); [ "$2" = FAIL ] && overall=1; return 0; }
skipped() { [[ ",$skip," == *",$1,"* ]]; }
# Whether a Catch2 run's log ends with no test failed: "All tests passed (...)", or, when some
# tests were skipped (Catch2 3 then prints no such line), "test cases: N | P passed | S skipped".
tests_all_passed() {
  grep -q "All tests passed" "$1" ||
    grep -E "^test cases: " "$1" | tail -1 | grep -qvE "failed"
}
jobs=$(nproc 2>/dev/null || echo 4)
archs=${CUDA_ARCHS:-native}

if ! build/gpu-solutions/bin/course_info --probe >/dev/null 2>&1 && ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_check: no GPU here (nvidia-smi -L failed): this script is for a GPU machine" >&2
  exit 3
fi

if ! skipped build; then
  trees="solutions"
  skipped grade || trees="solutions chapters"  # the student tree is only needed for grading
  for tree in $trees; do
    dir=build/gpu-$tree
    t0=$SECONDS
    if cmake -S . -B "$dir" -DCOURSE_TREE=$tree -DCMAKE_CUDA_ARCHITECTURES="$archs" >"$out/configure-$tree.log" 2>&1 &&
       cmake --build "$dir" -j "$jobs" "${build_targets[@]}" >"$out/build-$tree.log" 2>&1; then
      note "build $tree" ok "$((SECONDS - t0)) s"
    else
      note "build $tree" FAIL "see build-$tree.log"; tail -30 "$out/build-$tree.log"
    fi
  done
fi
"build/gpu-solutions/bin/course_info" | tee "$out/course_info.txt"
note "device" info "$(head -1 "$out/course_info.txt" | cut -c6-90)"
note "roofline" info "$(tail -1 "$out/course_info.txt" | cut -c1-90)"

if ! skipped tests; then
  t0=$SECONDS
  ctest --test-dir build/gpu-solutions "${ctest_filter[@]}" --output-on-failure --output-junit "$out/junit-solutions.xml" \
    >"$out/ctest-solutions.log" 2>&1
  rc=$?
  line=$(grep -E "tests passed|tests failed" "$out/ctest-solutions.log" | tail -1)
  nskip=$(grep -c "(Skipped)" "$out/ctest-solutions.log")
  # Tests that need more GPUs than this machine has (chapter 11's 2-GPU and 2-process tests) skip
  # with COURSE-FEW-GPUS: reported, not failed; tools/run_multi.sh runs them on two.
  nfew=$(grep -c "COURSE-FEW-GPUS" build/gpu-solutions/Testing/Temporary/LastTest.log 2>/dev/null)
  nfew=${nfew:-0}
  [ "$nfew" -gt "$nskip" ] && nfew=$nskip
  if [ $rc -eq 0 ] && [ "$((nskip - nfew))" -eq 0 ]; then note "tests (solutions)" ok "$line, $((SECONDS - t0)) s"
  else note "tests (solutions)" FAIL "$line; $nskip skipped"; grep -E "Failed|Skipped|\*\*\*" "$out/ctest-solutions.log" | head -30; fi
  [ "$nfew" -gt 0 ] && note "tests needing more GPUs" info "$nfew skipped (COURSE-FEW-GPUS): run tools/run_multi.sh on 2 GPUs"
fi

if ! skipped tests && { checking 07 || checking 10; }; then
  # Chapter 07's callers: the pytest suite (ctest runs it too, as ch07.python; it holds chapter 10's
  # typed pairs too, tests/test_dtypes.py), and the Go test
  # binary carried from a machine with Go (library/go/build_carry.sh) when present.
  lib=build/gpu-solutions/lib/libdotcourse.so
  if bash library/python/run_pytest.sh "$lib" >"$out/pytest-ch07.log" 2>&1 && ! grep -q COURSE- "$out/pytest-ch07.log"; then
    note "pytest ch07" ok "$(tail -1 "$out/pytest-ch07.log" | cut -c1-60)"
  else note "pytest ch07" FAIL "see pytest-ch07.log"; tail -15 "$out/pytest-ch07.log"; fi
  if [ -x build/gpu-solutions/go-bin/dotcourse.test ]; then
    if build/gpu-solutions/go-bin/dotcourse.test -test.v >"$out/go-test-ch07.log" 2>&1 && ! grep -q -- "--- SKIP" "$out/go-test-ch07.log"; then
      note "go test ch07 (carried)" ok "$(grep -c -- '--- PASS' "$out/go-test-ch07.log") tests passed"
    else note "go test ch07 (carried)" FAIL "see go-test-ch07.log"; tail -15 "$out/go-test-ch07.log"; fi
  else
    note "go test ch07" info "no build/gpu-solutions/go-bin/dotcourse.test (build it with library/go/build_carry.sh where Go is)"
  fi
fi

manifest_sanitize_args() {  # chapter, tool -> the extra arguments tools/grading/<chapter>.json gives the tool
  python3 - "$root/tools/grading/$1.json" "$2" <<'PY'
import json, os, sys
path, tool = sys.argv[1], sys.argv[2]
if os.path.isfile(path):
    print(" ".join(json.load(open(path)).get("sanitize_args", {}).get(tool, [])))
PY
}

if ! skipped sanitize; then
  command -v compute-sanitizer >/dev/null || note "compute-sanitizer" FAIL "not found"
  for exe in build/gpu-solutions/bin/test_*; do
    name=$(basename "$exe")
    # With --chapters: only the chapters' own test binaries (test_NN_name), not test_common.
    [ ${#chapters[@]} -gt 0 ] && { [[ $name =~ ^test_([0-9][0-9])_ ]] && checking "${BASH_REMATCH[1]}" || continue; }
    for tool in ${tools//,/ }; do
      filter="~[huge]~[slow]"
      extra=()
      [ "$tool" = racecheck ] && filter="~[huge]~[slow]~[race]"
      [ "$tool" = memcheck ] && { extra=(--leak-check full); filter="$filter~[api_error]"; }
      # Tests that count free device memory ([free_memory]) read the tool's own bookkeeping under
      # initcheck (20 typed contexts "lost" 320 MiB there, while memcheck's --leak-check full found no
      # leak): memcheck checks them.
      [ "$tool" = initcheck ] && filter="$filter~[free_memory]"
      # The chapter's manifest may give a tool extra arguments (sanitize_args), the same ones the
      # grader uses; the API errors it allows (chapter 11: NCCL's own kernel probes) are left out of
      # the count by tools/sanitizer_log.py, as the grader does.
      read -r -a margs <<<"$(manifest_sanitize_args "${name#test_}" "$tool")"
      extra+=("${margs[@]}")
      t0=$SECONDS
      log="$out/sanitize-$name-$tool.log"
      COURSE_TEST_SMALL=1 timeout "${SANITIZE_TIMEOUT:-300}" \
        compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 99 "$exe" "$filter" >"$log" 2>&1
      rc=$?
      if [ $rc -ne 0 ] && ! grep -q "SUMMARY" "$log" && grep -q "All tests passed" "$log"; then
        note "$tool $name" ok "no CUDA calls to check (a CPU-only chapter)"
      elif [ $rc -eq 0 ]; then
        note "$tool $name" ok "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitize-$name-$tool.log" | tail -1 | cut -c1-50), $((SECONDS - t0)) s"
      elif [ $rc -eq 99 ] && tests_all_passed "$log" &&
           verdict=$(python3 tools/sanitizer_log.py "$log" --chapter "${name#test_}"); then
        note "$tool $name" ok "${verdict#sanitizer_log: }, $((SECONDS - t0)) s"
      else
        note "$tool $name" FAIL "see sanitize-$name-$tool.log"
        grep -m5 -E "=========|FAILED|failed" "$out/sanitize-$name-$tool.log"
      fi
    done
  done
fi

if ! skipped negatives; then
  # Every deliberately broken copy (tests/negative/*/case.json) must fail the tests it names, and
  # the unbroken solutions must pass them (the controls).
  t0=$SECONDS
  cases=()  # with --chapters: the chapters' own cases (tests/negative/NN_*)
  if [ ${#chapters[@]} -gt 0 ]; then
    for d in tests/negative/[0-9][0-9]_*/; do
      d=${d%/}; d=${d##*/}
      checking "${d%%_*}" && cases+=(--case "$d")
    done
  fi
  if [ ${#chapters[@]} -gt 0 ] && [ ${#cases[@]} -eq 0 ]; then
    note "negative cases" info "none in tests/negative/ for ${chapters[*]}"
  else
    python3 tools/check_negatives.py --gpu --build-dir build/gpu-negatives --jobs "$jobs" "${cases[@]}" \
      --cmake-arg=-DCMAKE_CUDA_ARCHITECTURES="$archs" >"$out/negatives.log" 2>&1
    rc=$?
    line=$(grep -E "^check_negatives:" "$out/negatives.log" | tail -1 | cut -c18-90)
    if [ $rc -eq 0 ]; then note "negative cases" ok "$line, $((SECONDS - t0)) s"
    else note "negative cases" FAIL "${line:-see negatives.log}"; grep -E "NOT CAUGHT|FAIL" "$out/negatives.log" | head -20; fi
  fi
fi

# The grade is read from the grader's results.json (its extra_data), never from report.md's text.
grade_json() {  # what, results.json [, tree] -> one line: "ok|FAIL text" (verdict, repeats, tamper) or text
  python3 - "$@" <<'PY'
import json, re, sys
what, path = sys.argv[1], sys.argv[2]
try:
    d = json.load(open(path))
except (OSError, ValueError):
    print("FAIL no results.json" if what != "sanitizer" else ""); sys.exit()
x = d["extra_data"]
if what == "verdict":
    c, p = x["correctness"], x["performance"]
    text = f"correctness {c['score']:g}/{c['max_score']:g}, performance {p['score']:g}/{p['max_score']:g}"
    if sys.argv[3] == "chapters":
        ok = c["score"] == 0 and p["score"] == 0 and c["max_score"] > 0
    else:
        ok = c["score"] == c["max_score"] > 0 and p["score"] == p["max_score"]
    print(("ok" if ok else "FAIL") + " " + text)
elif what == "sanitizer":  # the grader's line on its compute-sanitizer step
    print(next((line for line in x.get("sanitizer", []) if "compute-sanitizer:" in line), "")[:88])
elif what == "repeats":  # every run at full performance marks
    r = x.get("performance_per_run")
    if not r:
        print("FAIL no performance_per_run in results.json"); sys.exit()
    runs, full = r["scores"], r["max_score"]
    print(("ok" if all(s == full for s in runs) else "FAIL") + f" {sum(s == full for s in runs)}/{len(runs)} runs at {full:g}/{full:g}")
elif what == "tamper":  # refused, and the output names the file and line
    m = re.search(r"06_ladder/dot\.cu:\d+", d.get("output", ""))
    print(("ok " if x.get("refused") and m else "FAIL ") + (m.group(0) if m else "no 06_ladder/dot.cu:LINE in the output"))
PY
}

if ! skipped grade; then
  # The grader proves the tests: the unfilled student tree must score zero on every exercise,
  # the solutions full marks (correctness and performance). Both go through the grader's own
  # build: the tree's hole bodies spliced into the course's files, then compute-sanitizer over
  # every passed GPU test (memcheck; racecheck where the manifest asks).
  for tree in chapters solutions; do
    t0=$SECONDS
    tools/grade --tree $tree "${grade_chapters[@]}" --build-dir build/gpu-grade-$tree --expect-gpu --out "$out/grade-$tree" \
      --cmake-arg=-DCMAKE_CUDA_ARCHITECTURES="$archs" >"$out/grade-$tree.log" 2>&1
    rc=$?
    verdict=$(grade_json verdict "$out/grade-$tree/results.json" $tree)
    [ $rc -ne 0 ] && verdict="FAIL exit $rc; ${verdict#* }"
    note "grade $tree" "${verdict%% *}" "${verdict#* }, $((SECONDS - t0)) s"
  done
  san=$(grade_json sanitizer "$out/grade-solutions/results.json")
  note "grade: sanitizer step" info "${san:-no line in the report}"
fi

if [ "$repeats" -gt 0 ] 2>/dev/null; then
  # "Full marks in N consecutive runs": the measurements only, N times, on the graded build.
  t0=$SECONDS
  reuse=()  # the tests ran (and were sanitized) in the grade step above: measure only
  [ -f "$out/grade-solutions/junit.xml" ] && reuse=(--reuse-tests "$out/grade-solutions")
  tools/grade --tree solutions "${grade_chapters[@]}" --build-dir build/gpu-grade-solutions --no-build --no-sanitize --expect-gpu \
    "${reuse[@]}" --repeat "$repeats" --out "$out/grade-repeats" >"$out/grade-repeats.log" 2>&1
  verdict=$(grade_json repeats "$out/grade-repeats/results.json")
  note "grade repeats ($repeats)" "${verdict%% *}" "${verdict#* }, $((SECONDS - t0)) s (spread: grade-repeats/report.md)"
fi

if ! skipped tamper && checking 06; then
  # A tree that maps v3_sequential to the cuBLAS launcher (an edit outside the holes) is refused
  # with --strict before anything is built, and the report names the file and line.
  tamper="$out/tamper-tree"
  rm -rf "$tamper"; cp -r chapters "$tamper"
  sed -i 's/{"v3_sequential", \(.*\), run_v3, true}/{"v3_sequential", \1, run_cublas, true}/' "$tamper/06_ladder/dot.cu"
  tools/grade --tree "$tamper" --chapter 06 --strict --no-performance --build-dir build/gpu-grade-tamper \
    --out "$out/grade-tamper" >"$out/grade-tamper.log" 2>&1
  rc=$?
  verdict=$(grade_json tamper "$out/grade-tamper/results.json")
  if [ "${verdict%% *}" = ok ]; then
    note "tampered tree (--strict)" ok "refused, exit $rc: ${verdict#* }"
  else note "tampered tree (--strict)" FAIL "not refused (exit $rc; ${verdict#* }); see grade-tamper/"; fi
fi

echo
echo "== gpu_check summary =="
printf '%s\n' "${summary[@]}"
echo "logs in $out"
exit $overall
