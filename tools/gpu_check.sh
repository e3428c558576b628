#!/usr/bin/env bash
# On a machine with a GPU: build both trees, run every test, run compute-sanitizer over every
# chapter's GPU tests at small sizes, grade both trees, and print a summary table last.
# Uses only what the course needs (CMake, nvcc, Catch2, CLI11, compute-sanitizer, python3).
#   tools/gpu_check.sh [--out DIR] [--skip build,tests,sanitize,grade] [--tools memcheck,racecheck,...]
#   Environment: CUDA_ARCHS (default native), SANITIZE_TIMEOUT seconds per test binary and tool (300).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${OUT:-$root/build/gpu-check}
skip=""
tools="memcheck,racecheck,synccheck,initcheck"
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --skip) skip=$2; shift 2 ;;
    --tools) tools=$2; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "gpu_check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
summary=()
overall=0
note() { summary+=("$(printf '%-34s %-6s %s' "$1" "$2" "$3")"); [ "$2" = FAIL ] && overall=1; return 0; }
skipped() { [[ ",$skip," == *",$1,"* ]]; }
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
       cmake --build "$dir" -j "$jobs" >"$out/build-$tree.log" 2>&1; then
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
  ctest --test-dir build/gpu-solutions --output-on-failure --output-junit "$out/junit-solutions.xml" \
    >"$out/ctest-solutions.log" 2>&1
  rc=$?
  line=$(grep -E "tests passed|tests failed" "$out/ctest-solutions.log" | tail -1)
  nskip=$(grep -c "(Skipped)" "$out/ctest-solutions.log")
  if [ $rc -eq 0 ] && [ "$nskip" -eq 0 ]; then note "tests (solutions)" ok "$line, $((SECONDS - t0)) s"
  else note "tests (solutions)" FAIL "$line; $nskip skipped"; grep -E "Failed|Skipped|\*\*\*" "$out/ctest-solutions.log" | head -30; fi
fi

if ! skipped tests; then
  # Chapter 07's callers: the pytest suite (ctest runs it too, as ch07.python), and the Go test
  # binary carried from a machine with Go (chapters/07_library/go/build_carry.sh) when present.
  lib=build/gpu-solutions/lib/libdotcourse.so
  if bash chapters/07_library/python/run_pytest.sh "$lib" >"$out/pytest-ch07.log" 2>&1 && ! grep -q COURSE- "$out/pytest-ch07.log"; then
    note "pytest ch07" ok "$(tail -1 "$out/pytest-ch07.log" | cut -c1-60)"
  else note "pytest ch07" FAIL "see pytest-ch07.log"; tail -15 "$out/pytest-ch07.log"; fi
  if [ -x build/gpu-solutions/go-bin/dotcourse.test ]; then
    if build/gpu-solutions/go-bin/dotcourse.test -test.v >"$out/go-test-ch07.log" 2>&1 && ! grep -q -- "--- SKIP" "$out/go-test-ch07.log"; then
      note "go test ch07 (carried)" ok "$(grep -c -- '--- PASS' "$out/go-test-ch07.log") tests passed"
    else note "go test ch07 (carried)" FAIL "see go-test-ch07.log"; tail -15 "$out/go-test-ch07.log"; fi
  else
    note "go test ch07" info "no build/gpu-solutions/go-bin/dotcourse.test (build it with go/build_carry.sh where Go is)"
  fi
fi

if ! skipped sanitize; then
  command -v compute-sanitizer >/dev/null || note "compute-sanitizer" FAIL "not found"
  for exe in build/gpu-solutions/bin/test_*; do
    name=$(basename "$exe")
    for tool in ${tools//,/ }; do
      filter="~[huge]~[slow]"
      extra=()
      [ "$tool" = racecheck ] && filter="~[huge]~[slow]~[race]"
      [ "$tool" = memcheck ] && { extra=(--leak-check full); filter="$filter~[api_error]"; }
      t0=$SECONDS
      log="$out/sanitize-$name-$tool.log"
      COURSE_TEST_SMALL=1 timeout "${SANITIZE_TIMEOUT:-300}" \
        compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 99 "$exe" "$filter" >"$log" 2>&1
      rc=$?
      if [ $rc -ne 0 ] && ! grep -q "SUMMARY" "$log" && grep -q "All tests passed" "$log"; then
        note "$tool $name" ok "no CUDA calls to check (a CPU-only chapter)"
      elif [ $rc -eq 0 ]; then
        note "$tool $name" ok "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitize-$name-$tool.log" | tail -1 | cut -c1-50), $((SECONDS - t0)) s"
      else
        note "$tool $name" FAIL "see sanitize-$name-$tool.log"
        grep -m5 -E "=========|FAILED|failed" "$out/sanitize-$name-$tool.log"
      fi
    done
  done
fi

if ! skipped grade; then
  # The grader proves the tests: the unfilled student tree must score zero on every exercise,
  # the solutions full marks (correctness and performance).
  for tree in chapters solutions; do
    t0=$SECONDS
    tools/grade --tree $tree --build-dir build/gpu-$tree --no-build --expect-gpu --out "$out/grade-$tree" \
      >"$out/grade-$tree.log" 2>&1
    rc=$?
    verdict=$(python3 - "$out/grade-$tree/results.json" "$tree" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except OSError:
    print("FAIL no results.json"); sys.exit()
c, p = d["extra_data"]["correctness"], d["extra_data"]["performance"]
text = f"correctness {c['score']:g}/{c['max_score']:g}, performance {p['score']:g}/{p['max_score']:g}"
if sys.argv[2] == "chapters":
    ok = c["score"] == 0 and p["score"] == 0 and c["max_score"] > 0
else:
    ok = c["score"] == c["max_score"] > 0 and p["score"] == p["max_score"]
print(("ok" if ok else "FAIL") + " " + text)
PY
)
    [ $rc -ne 0 ] && verdict="FAIL exit $rc; ${verdict#* }"
    note "grade $tree" "${verdict%% *}" "${verdict#* }, $((SECONDS - t0)) s"
  done
fi

echo
echo "== gpu_check summary =="
printf '%s\n' "${summary[@]}"
echo "logs in $out"
exit $overall
