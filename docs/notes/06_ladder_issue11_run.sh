#!/usr/bin/env bash
# Chapter 06, issue 11 (second round): everything one device call needs for this chapter, in about
# 200 s on the H100: build 06_ladder and its test (solutions tree), the exploration
# (docs/notes/06_ladder_explore3.cu, two passes), the chapter's full benchmark at 200 calls per
# version and size (the reference CSVs: logs/csv/06_ladder*.csv), ncu on exploration 3 at three
# sizes, compute-sanitizer memcheck (v12, atomic, read-only) and racecheck (v12) at small sizes,
# then ctest -L ch06 with the time left. Packs $OUT/ch06_run.tar.gz after every step.
# Run from the repository root on the GPU machine: bash docs/notes/06_ladder_issue11_run.sh
set -u
L=$OUT/logs; mkdir -p $L/csv
pack() { (cd $OUT && tar czf ch06_run.tar.gz logs); }
st() { echo "$(date -u +%T) t=${SECONDS}s $*" >> $L/status.txt; }
nvidia-smi -L > $L/gpu.txt 2>&1
nvcc -O3 -std=c++17 -arch=sm_90 docs/notes/06_ladder_explore3.cu -o /tmp/explore3 > $L/explore3_build.log 2>&1 &
EB=$!
cmake -S . -B /tmp/b -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=Release -DCOURSE_TREE=solutions > $L/cfg.log 2>&1
cmake --build /tmp/b --target 06_ladder test_06_ladder -j 16 > $L/build.log 2>&1; st "build rc $?"
wait $EB; st "explore build rc $?"
timeout 40 /tmp/explore3 300 2 > $L/explore3.csv 2> $L/explore3.err; st "explore rc $?"; pack
timeout 90 /tmp/b/bin/06_ladder --reps 200 --csv $L/csv/06_ladder.csv > $L/bench.log 2>&1; st "bench rc $?"; pack
for n in 4096 65536 1048576; do
  timeout 25 ncu --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size,launch__block_size,sm__cycles_active.max \
    /tmp/explore3 once $n > $L/ncu_$n.csv 2> $L/ncu_$n.err; st "ncu $n rc $?"
done; pack
export COURSE_TEST_SMALL=1
for spec in "ch06 v12*" "ch06 atomic*" "ch06 read-only*"; do
  timeout 20 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/b/bin/test_06_ladder "$spec" "~[huge]" >> $L/memcheck.log 2>&1; st "memcheck $spec rc $?"
done
timeout 35 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/b/bin/test_06_ladder "ch06 v12*" "~[huge]" > $L/racecheck.log 2>&1; st "racecheck rc $?"
unset COURSE_TEST_SMALL; pack
(cd /tmp/b && timeout $((230 - SECONDS)) ctest -L ch06 --output-on-failure > $L/ctest.log 2>&1); st "ctest rc $?"; pack
