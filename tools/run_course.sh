#!/usr/bin/env bash
# The course's main job: build the course, run every chapter's solution on the GPU, write the CSVs
# and each chapter's run metadata (GPU, driver, CUDA, commit, date: run_metadata.json) to results/local/,
# and the plots to results/local/plots/.
# Without a GPU it still runs the chapters that need none (their CSVs and plots come from this
# machine), and renders the other plots from the shipped H100 results into results/local/plots-h100/.
usage() {
  cat <<'USAGE'
usage: tools/run_course.sh [CHAPTER...]
  tools/run_course.sh                every chapter
  tools/run_course.sh 05 06_ladder   some chapters, by number or by name
Builds the solutions (build/solutions), runs each chapter with --csv results/local/CHAPTER.csv,
writes results/local/run_metadata.json and draws the plots into results/local/plots/.
Without a GPU: the chapters that need none still run; the rest are skipped, and the H100
reference plots are drawn into results/local/plots-h100/. Exit 1 when a chapter fails.
USAGE
}
for arg in "$@"; do
  case "$arg" in -h|--help) usage; exit 0 ;; -*) echo "run_course: unknown option '$arg'" >&2; usage >&2; exit 2 ;; esac
done
set -euo pipefail
export NCCL_NVLS_ENABLE=0  # NVLink multicast off in every process (chapter 11 starts NCCL)
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# Chapters by number ("05") or by name ("05_many_blocks"), checked before the build.
chapters=()
for arg in "$@"; do
  matches=(chapters/"${arg}"/ chapters/"${arg}"_*/)
  found=""
  for dir in "${matches[@]}"; do [ -d "$dir" ] && found=$(basename "$dir") && break; done
  [ -n "$found" ] || { echo "run_course: no chapter '$arg' (try a number such as 05, or see chapters/)" >&2; exit 2; }
  chapters+=("$found")
done
if [ ${#chapters[@]} -eq 0 ]; then
  for dir in chapters/[0-9][0-9]_*/; do chapters+=("$(basename "$dir")"); done
fi

source tools/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)
preset=solutions
[ -d solutions ] || preset=student  # a student repository: your own tree
echo "== Building the course ($preset) =="
cmake --preset $preset >/dev/null
cmake --build --preset $preset -j "$jobs"
bin=build/$preset/bin
# A chapter whose dependency is missing (11_multi_gpu without NCCL) is left out of the build with
# a message at configure time: skipped here when running every chapter, an error when asked for.
built=()
for ch in "${chapters[@]}"; do
  if [ -x "$bin/$ch" ]; then built+=("$ch")
  elif [ $# -gt 0 ]; then echo "run_course: chapter '$ch' was not built (looked for $bin/$ch; see the configure output)" >&2; exit 2
  else echo "run_course: chapter '$ch' was left out of the build (see the configure output): skipped"; fi
done
chapters=("${built[@]}")

python=$(course_python)
status=0
gpu=1
if probe=$("$bin/course_info" --probe 2>&1); then
  echo "== $probe =="
else
  gpu=0
  echo
  echo "== $probe"
  echo "== Without a GPU only the chapters that need none run; the others are skipped."
fi
mkdir -p results/local
ran=0
for ch in "${chapters[@]}"; do
  echo
  echo "== Chapter $ch =="
  rc=0
  before=$(mktemp)  # clocks, temperature, power, throttle reasons before the run (tools/telemetry.py)
  python3 tools/telemetry.py --out "$before" 2>/dev/null || true
  "$bin/$ch" --csv "results/local/$ch.csv" || rc=$?
  # Exit code 3 is "no GPU": without one, a chapter that needs it is skipped, not failed.
  if [ $gpu = 0 ] && [ $rc = 3 ]; then echo "(needs a GPU: skipped)"; rm -f "$before"; continue; fi
  # This chapter's record in run_metadata.json (the other chapters' records are kept: a chapter
  # re-run alone gets its own date, commit and driver).
  python3 tools/run_metadata.py --out results/local/run_metadata.json --bin "$bin" --chapter "$ch" \
    --telemetry-before "$before" || status=1
  rm -f "$before"
  if [ $rc = 0 ]; then
    ran=$((ran + 1))
    # Chapter 07 is also called from Python and Go: their CSVs go beside its own.
    if [ "$ch" = 07_library ]; then chapters/07_library/run_callers.sh build/$preset results/local || status=1; fi
    # Chapter 10 is also timed from Python (dotcourse's typed path beside PyTorch and CuPy, one run).
    if [ "$ch" = 10_dtypes ]; then
      if "$python" -c 'import numpy, torch' >/dev/null 2>&1; then
        DOTCOURSE_LIB=build/$preset/lib/libdotcourse.so "$python" chapters/07_library/python/bench_dtypes.py \
          --csv results/local/10_dtypes_python.csv || status=1
      else
        echo "run_course: no Python with NumPy and PyTorch: 10_dtypes_python.csv not written"
      fi
    fi
  else
    echo "run_course: chapter $ch FAILED (exit code $rc); its CSV may be missing" >&2
    status=1
  fi
done
echo
if [ $ran -gt 0 ]; then
  echo "== Plots from this run =="
  "$python" plots/render_all.py --results results/local --out results/local/plots || status=1
  echo "CSVs in results/local/, plots in results/local/plots/"
fi
if [ $gpu = 0 ]; then
  echo "== The GPU chapters' plots from the shipped H100 results, into results/local/plots-h100/ =="
  "$python" plots/render_all.py --results results/reference/h100 --out results/local/plots-h100 || status=1
fi
exit $status
