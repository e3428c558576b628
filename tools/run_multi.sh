#!/usr/bin/env bash
# Chapter 11 on a machine with GPUs: everything the chapter's text and reference results need, in
# one script. Written for the two-GPU machine (nvidia-h200-x2); runs on one GPU too (then the
# 2-GPU tests report as skipped with the reason, and the scaling rows stop at one GPU).
#
#   tools/run_multi.sh                      into results/reference/<gpu>x<count>/ (h100x2)
#   tools/run_multi.sh --out DIR [--build DIR] [--arch 90] [--quick]
#
# Steps (each logged in OUT/logs/, a summary printed last): build the solutions of chapter 11 (and
# its MPI form), GPU topology, ctest -L ch11 (with 2 GPUs: the 2-GPU tests and MPI with 2
# processes), compute-sanitizer memcheck of the tests on one GPU at small sizes (every API error
# counts except NCCL's own kernel probes, which tools/grading/11_multi_gpu.json allows and
# tools/sanitizer_log.py leaves out), the chapter's run (size sweep; weak scaling 2^30 per GPU;
# strong scaling 2^31 in all; where the combine's time goes; one GPU against all; host data), the
# MPI form with 1 and 2 processes, the plots, the run's metadata.
# --quick: small sizes (a smoke test of the script; its numbers are not reference results).
# Environment: SANITIZE_TIMEOUT seconds for the memcheck step (300), TEST_TIMEOUT for each test
# (300), RUN_TIMEOUT for the chapter's run (900); STEPS the driver's --steps.
# NVLink multicast stays off: NCCL_NVLS_ENABLE=0 here and in every process (the programs set it too).
set -uo pipefail
export NCCL_NVLS_ENABLE=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=
build=build/multi
arch=90
quick=0
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "run_multi: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
summary=()
status=0
note() { summary+=("$(printf '%-30s %-5s %s' "$1" "$2" "$3")"); [ "$2" = FAIL ] && status=1; return 0; }
jobs=$(nproc 2>/dev/null || echo 4)
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$gpus" -ge 1 ] || { echo "run_multi: no GPU here (nvidia-smi -L lists none)" >&2; exit 3; }
if [ -z "$out" ]; then  # the GPU's short name and the count: results/reference/h100x2
  model=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | grep -o -i -E '[A-Z][0-9]{2,3}' | head -1 | tr 'A-Z' 'a-z')
  out=results/reference/${model:-gpu}x$gpus
fi
mkdir -p "$out/logs"
logs=$(cd "$out/logs" && pwd)
echo "== run_multi: $gpus GPU(s), results into $out =="
nvidia-smi -L >"$logs/gpus.txt" 2>&1
nvidia-smi topo -m >"$logs/topology.txt" 2>&1 || true

t0=$SECONDS
if cmake -S . -B "$build" -DCOURSE_TREE=solutions -DCMAKE_CUDA_ARCHITECTURES="$arch" >"$logs/configure.log" 2>&1 &&
   cmake --build "$build" -j "$jobs" --target course_info 11_multi_gpu test_11_multi_gpu >"$logs/build.log" 2>&1; then
  note build ok "$((SECONDS - t0)) s; $(grep -E 'NCCL|MPI' "$logs/configure.log" | tr '\n' ' ' | cut -c1-120)"
else
  note build FAIL "see logs/build.log"; tail -30 "$logs/build.log"; printf '%s\n' "${summary[@]}"; exit 1
fi
mpi=0
if grep -q "building 11_multi_gpu_mpi" "$logs/configure.log"; then
  cmake --build "$build" -j "$jobs" --target 11_multi_gpu_mpi >>"$logs/build.log" 2>&1 && mpi=1
  [ $mpi = 1 ] || note "build (MPI form)" FAIL "see logs/build.log"
else
  note "MPI form" info "not built: $(grep -m1 'MPI not found' "$logs/configure.log" | cut -c1-80)"
fi
bin=$build/bin
"$bin/course_info" >"$logs/course_info.txt" 2>&1 || true

# The chapter's tests: every test must pass, or be skipped only for want of GPUs.
t0=$SECONDS
ctest --test-dir "$build" -L ch11 --timeout "${TEST_TIMEOUT:-300}" --output-on-failure --output-junit "$logs/junit-ch11.xml" >"$logs/ctest-ch11.log" 2>&1
rc=$?
line=$(grep -E "tests passed|tests failed" "$logs/ctest-ch11.log" | tail -1)
nskip=$(grep -c "(Skipped)" "$logs/ctest-ch11.log")
if [ $rc -eq 0 ]; then note "ctest -L ch11" ok "$line; $nskip skipped, $((SECONDS - t0)) s"
else note "ctest -L ch11" FAIL "$line; see logs/ctest-ch11.log"; fi
grep -h -o "COURSE-[A-Z-]*: [^\"<]*" "$build"/Testing/Temporary/LastTest.log 2>/dev/null | sort | uniq -c >"$logs/skip-reasons.txt"

# compute-sanitizer memcheck on one GPU, small sizes (the multi-GPU cases are left to the 2-GPU ctest).
t0=$SECONDS
CUDA_VISIBLE_DEVICES=0 COURSE_TEST_SMALL=1 timeout "${SANITIZE_TIMEOUT:-300}" compute-sanitizer --tool memcheck --leak-check full \
  --error-exitcode 99 "$bin/test_11_multi_gpu" "~[multi]" >"$logs/memcheck.log" 2>&1
rc=$?
verdict=$(python3 tools/sanitizer_log.py "$logs/memcheck.log" --chapter 11_multi_gpu 2>&1)
vrc=$?
if [ $rc -eq 0 ] || { [ $rc -eq 99 ] && [ $vrc -eq 0 ] && grep -q "All tests passed" "$logs/memcheck.log"; }; then
  note memcheck ok "$(grep -m1 'ERROR SUMMARY' "$logs/memcheck.log" | cut -c11-); ${verdict#sanitizer_log: }, $((SECONDS - t0)) s"
else note memcheck FAIL "exit $rc; ${verdict#sanitizer_log: }; see logs/memcheck.log"; fi

# The chapter's measurements.
args=()
[ $quick = 1 ] && args=(--n 2^24 --strong-n 2^25 --host-n 2^22 --reps 5)
[ -n "${STEPS:-}" ] && args+=(--steps "$STEPS")
t0=$SECONDS
if timeout "${RUN_TIMEOUT:-900}" "$bin/11_multi_gpu" --quiet --csv "$out/11_multi_gpu.csv" "${args[@]}" >"$logs/11_multi_gpu.log" 2>&1; then
  note "11_multi_gpu ($gpus GPUs)" ok "$((SECONDS - t0)) s"
else note "11_multi_gpu ($gpus GPUs)" FAIL "see logs/11_multi_gpu.log"; tail -20 "$logs/11_multi_gpu.log"; fi

if [ $mpi = 1 ]; then
  margs=()
  [ $quick = 1 ] && margs=(--n 2^22 --reps 5)
  for np in 1 2; do
    if [ $np -gt "$gpus" ]; then note "mpirun -np $np" info "skipped: $gpus GPU(s)"; continue; fi
    t0=$SECONDS
    if mpirun --allow-run-as-root --bind-to none -np $np "$bin/11_multi_gpu_mpi" --quiet --csv "$out/11_multi_gpu_mpi_np$np.csv" \
         "${margs[@]}" >"$logs/mpi_np$np.log" 2>&1; then note "mpirun -np $np" ok "$((SECONDS - t0)) s"
    else note "mpirun -np $np" FAIL "see logs/mpi_np$np.log"; tail -20 "$logs/mpi_np$np.log"; fi
  done
fi

python3 tools/run_metadata.py --out "$out/run_metadata.json" --chapter 11_multi_gpu --bin "$bin" >"$logs/metadata.log" 2>&1 ||
  note metadata FAIL "see logs/metadata.log"
# The plots' footers name the GPUs: every one of them, and how they are linked.
python3 - "$out/run_metadata.json" "$gpus" "$(grep -m1 -o -E 'NV[0-9]+|PIX|PXB|PHB|SYS' "$logs/topology.txt" 2>/dev/null)" <<'PY' || note metadata FAIL "could not name the GPUs"
import json, sys
path, count, link = sys.argv[1], int(sys.argv[2]), sys.argv[3]
data = json.load(open(path))
record = data["chapters"]["11_multi_gpu"]
if count > 1 and record.get("gpu"):
    record["gpu"] = f"{count} × {record['gpu']}" + (f" ({link})" if link else "")
json.dump(data, open(path, "w"), indent=2, ensure_ascii=False)
PY
if [ -f "$out/11_multi_gpu.csv" ]; then
  if python3 plots/11_multi_gpu.py --results "$out" --out "$out/plots" >"$logs/plots.log" 2>&1; then note plots ok "$out/plots"
  else note plots FAIL "see logs/plots.log"; fi
fi
[ -f "$out/11_multi_gpu_targets.csv" ] && { echo; echo "targets:"; cat "$out/11_multi_gpu_targets.csv"; }
echo
echo "== run_multi summary =="
printf '%s\n' "${summary[@]}"
exit $status
