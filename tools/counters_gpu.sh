#!/usr/bin/env bash
# Issue 28 on a GPU machine: Nsight Compute's counters per version (chapters 06, 05, 10, 01, in that
# order) and the SASS tables, packed into $OUT/counters.tgz with the GPU's telemetry before and after
# and a log. About 5 minutes on an H100 with the build in place (the build adds 2 to 3 minutes on 16
# cores when it is not). Run from the repository root:
#
#   OUT=/some/folder tools/counters_gpu.sh          (the device machine sets $OUT)
#
# Environment: BUILD (default build/solutions; configured with the solutions preset when absent),
# N (default 2^26), BUDGET (seconds for all counters, default what is left of 330 s after the build,
# at least 90: runs past it are noted, not started).
# The archive holds counters/NN_name_counters.csv, counters/NN_name_sass.csv, counters/ncu/ (ncu's own
# CSV per run), counters/telemetry_{before,after}.json and counters/counters_gpu.log: copy the CSVs to
# results/reference/h100/ and commit them.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${OUT:?set OUT to the folder the archive goes to}
build=${BUILD:-build/solutions}
n=${N:-2^26}
work=$(mktemp -d)
dest="$work/counters"
mkdir -p "$dest" "$out"
log="$dest/counters_gpu.log"
exec > >(tee "$log") 2>&1
start=$SECONDS
echo "== counters_gpu: $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv || true
command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null || echo "ncu not on PATH"
command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump 2>/dev/null || echo "cuobjdump not on PATH"
export PATH="$PATH:/usr/local/cuda/bin"

chapters=(06_ladder 05_many_blocks 10_dtypes 01_timing)
echo "== build ($build): ${chapters[*]}"
if [ ! -f "$build/CMakeCache.txt" ]; then
  if [ "$build" = build/solutions ]; then cmake --preset solutions >/dev/null
  else cmake -S . -B "$build" -DCOURSE_TREE=solutions -DCMAKE_BUILD_TYPE=Release >/dev/null; fi || {
    echo "counters_gpu: configure failed"; }
fi
cmake --build "$build" -j "$(nproc)" --target "${chapters[@]}" course_info || echo "counters_gpu: build failed"
echo "== built after $((SECONDS - start)) s"
# What is left of about 5.5 minutes goes to the counters (at least 90 s); SASS tables take seconds.
budget=${BUDGET:-$((330 - (SECONDS - start)))}
[ "$budget" -ge 90 ] || budget=90

python3 tools/telemetry.py --out "$dest/telemetry_before.json" || true
echo "== counters (n = $n, budget ${budget} s, ncu --clock-control none)"
python3 tools/counters.py --bin "$build/bin" --out "$dest" --n "$n" --timeout 120 --budget "$budget" "${chapters[@]}"
echo "counters.py exited $?"
python3 tools/telemetry.py --before "$dest/telemetry_before.json" --out "$dest/telemetry_after.json" || true
echo "== SASS tables"
python3 tools/sass_table.py --bin "$build/bin" --out "$dest" "${chapters[@]}"
echo "sass_table.py exited $?"
python3 tools/sass_table.py --check --results "$dest" "${chapters[@]}" || true
echo "== done after $((SECONDS - start)) s"
ls -l "$dest"
tar -czf "$out/counters.tgz" -C "$work" counters
cp "$log" "$out/counters_gpu.log" 2>/dev/null || true
echo "counters_gpu: $out/counters.tgz"
