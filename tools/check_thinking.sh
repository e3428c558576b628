#!/usr/bin/env bash
# Proves the "think" exercises of chapters 01-09 on a machine with a GPU (their host-only tests run
# anywhere): each test fails on the student's unfilled tree and passes on the solutions (none
# skipped), the GPU ones are clean under compute-sanitizer (memcheck; racecheck for the shared-memory
# tree), and every negative case written for them is caught. tools/gpu_check.sh covers the same
# through the grader (the manifests hold these tests); this script is the quick, focused proof.
#   tools/check_thinking.sh [--out DIR] [--cpu-only] [--build-prefix P]
#   --cpu-only: no GPU here: the host-only exercises (01-03, 06-09), chapter 05's host test of its
#   tree's steps, and their negative cases only.
#   --build-prefix P: build in P-solutions and P-chapters (default build/think; reuses what is there).
#   Environment: CUDA_ARCHS (default native; 90-real without a GPU), JOBS (default nproc).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${OUT:-$root/build/check-thinking}
cpu_only=0
prefix=build/think
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --cpu-only) cpu_only=1; shift ;;
    --build-prefix) prefix=$2; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "check_thinking: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)  # absolute: ctest writes a relative --output-junit path inside the build folder
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
if [ $cpu_only = 1 ]; then archs=${CUDA_ARCHS:-90-real}; else archs=${CUDA_ARCHS:-native}; fi

# The exercises' tests, by name (each is also a rule of tools/grading/NN_*.json), and their cases.
cpu_tests='^ch01 predicted_add_ms: |^ch02 compensated: |^ch03 chunk_owner: |^ch06 wave_efficiency: |^ch07 covers: '
cpu_tests+='|^ch08 staged_copy_ms: |^ch09 pipeline_ms: |^ch05 index: tree_steps_any '
gpu_tests='^ch04 max_product: |^ch05 block_sum_any: '
cpu_cases="01_predicted_add_reads_only 02_compensated_kahan_original 03_chunk_owner_equal_chunks 06_wave_efficiency_no_rounding
           07_covers_start_only 07_covers_next_range 08_staged_no_fill_term 08_staged_full_last_chunk
           09_pipeline_yardstick 09_pipeline_no_latency 05_tree_any_pow2_only"
gpu_cases="04_max_product_int_bits 04_max_product_no_retry 05_block_sum_any_pow2_tree"
targets="test_01_timing test_02_cpu_dot test_03_one_thread test_04_one_block test_05_many_blocks test_06_ladder
         test_07_library test_08_pinned test_09_streams"
regex=$cpu_tests
cases=$cpu_cases
if [ $cpu_only = 0 ]; then regex="$cpu_tests|$gpu_tests"; cases="$cpu_cases $gpu_cases"; fi
expected=$(( $cpu_only == 1 ? 13 : 18 ))  # 1 + 3 + 2 + 1 + 1 + 2 + 1 + 2 host tests (05: tree_steps_any); 3 + 2 GPU tests

summary=()
overall=0
note() { summary+=("$(printf '%-30s %-5s %s' "$1" "$2" "$3")"); [ "$2" = FAIL ] && overall=1; return 0; }

for tree in solutions chapters; do
  dir=$prefix-$tree
  if cmake -S . -B "$dir" -DCOURSE_TREE=$tree -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$archs" \
       >"$out/configure-$tree.log" 2>&1 &&
     cmake --build "$dir" -j "$jobs" --target $targets >"$out/build-$tree.log" 2>&1; then
    note "build $tree" ok "$targets"
  else
    note "build $tree" FAIL "see build-$tree.log"; tail -20 "$out/build-$tree.log"; continue
  fi
  ctest --test-dir "$dir" -R "$regex" --output-junit "$out/junit-$tree.xml" >"$out/ctest-$tree.log" 2>&1
  read -r total passed failed skipped < <(python3 - "$out/junit-$tree.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
cases = ET.parse(sys.argv[1]).getroot().iter("testcase")
n = p = f = s = 0
for c in cases:
    n += 1
    st = c.get("status", "")
    if c.find("skipped") is not None or st in ("notrun", "disabled"): s += 1
    elif c.find("failure") is not None or c.find("error") is not None or st == "fail": f += 1
    else: p += 1
print(n, p, f, s)
PY
)
  what="$total tests: $passed passed, $failed failed, $skipped skipped (expected $expected)"
  if [ "$tree" = solutions ]; then
    ok=$([ "$total" = "$expected" ] && [ "$passed" = "$total" ] && echo ok || echo FAIL)
  else
    ok=$([ "$total" = "$expected" ] && [ "$failed" = "$total" ] && echo ok || echo FAIL)
  fi
  note "tests ($tree)" "$ok" "$what"
  [ "$ok" = FAIL ] && grep -E "Passed|Failed|Skipped|Not Run" "$out/ctest-$tree.log" | head -20
done

if [ $cpu_only = 0 ] && [ -x "$prefix-solutions/bin/test_04_one_block" ]; then
  for pair in "test_04_one_block:memcheck:*max_product*" "test_05_many_blocks:memcheck:*block_sum_any*" \
              "test_05_many_blocks:racecheck:*block_sum_any*"; do
    exe=${pair%%:*}; rest=${pair#*:}; tool=${rest%%:*}; spec=${rest#*:}
    log="$out/sanitize-$exe-$tool.log"
    COURSE_TEST_SMALL=1 timeout 600 compute-sanitizer --tool "$tool" --error-exitcode 99 \
      "$prefix-solutions/bin/$exe" "$spec" >"$log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then note "$tool $spec" ok "$(grep -E 'SUMMARY' "$log" | tail -1 | cut -c1-50)"
    else note "$tool $spec" FAIL "exit $rc, see $(basename "$log")"; tail -15 "$log"; fi
  done
fi

args=()
for c in $cases; do args+=(--case "$c"); done
[ $cpu_only = 0 ] && args+=(--gpu)
python3 tools/check_negatives.py "${args[@]}" --build-dir "$prefix-negatives" --jobs "$jobs" \
  --cmake-arg=-DCMAKE_CUDA_ARCHITECTURES="$archs" >"$out/negatives.log" 2>&1
rc=$?
line=$(grep -E "^check_negatives:" "$out/negatives.log" | tail -1 | cut -c18-100)
if [ $rc -eq 0 ]; then note "negative cases" ok "$line"
else note "negative cases" FAIL "${line:-see negatives.log}"; tail -20 "$out/negatives.log"; fi

echo
echo "== check_thinking summary =="
printf '%s\n' "${summary[@]}"
echo "logs in $out"
exit $overall
