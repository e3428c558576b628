#!/usr/bin/env bash
# The course's main job: build the course, run every chapter's solution on the GPU, write the CSVs
# and each chapter's run metadata (GPU, driver, CUDA, commit, date: run_metadata.json) to results/local/,
# and the plots to results/local/plots/.
# Without a GPU it still runs the chapters that need none (their CSVs and plots come from this
# machine), and renders the other chapters' plots from the shipped reference results into
# results/local/plots-h100/. It ends with a summary: per chapter ran, skipped or failed, its seconds,
# and where its CSVs and plots went.
usage() {
  cat <<'USAGE'
usage: tools/run_course.sh [CHAPTER...]
  tools/run_course.sh                every chapter
  tools/run_course.sh 05 06_ladder   some chapters, by number or by name
Builds the solutions (build/solutions), runs each chapter with --csv results/local/CHAPTER.csv,
writes results/local/run_metadata.json and draws the plots into results/local/plots/.
Without a GPU: the chapters that need none still run; the rest are skipped (the reason is
said once), and their plots are drawn from the reference results into results/local/plots-h100/
(tools/run_course.sh 07: only chapter 07's). Ends with a summary table: per chapter ran, skipped
or failed, seconds, where its CSVs and plots went, and the seconds of set-up (tools/setup.sh and
the plots' Python, .venv/ on first use), build and plots. Each chapter's captions are checked
against its rows (tools/check_captions.py). Exit 1 when a chapter fails or a caption is contradicted.
Go is set up only for chapter 07 (its Go caller); COURSE_SETUP_GO=0 or 1 decides instead.
USAGE
}
for arg in "$@"; do
  case "$arg" in -h|--help) usage; exit 0 ;; -*) echo "run_course: unknown option '$arg'" >&2; usage >&2; exit 2 ;; esac
done
set -euo pipefail
export NCCL_NVLS_ENABLE=0  # NVLink multicast off in every process (chapter 11 starts NCCL)
# The kit's stopping rule for host-timed measurements (common/course/timer.hpp): stop once the mean
# is known to 0.5% or 2 s of timed work are spent, after at least 3 samples. The main job's budget;
# the tests and the grader leave it off and take every rep.
export COURSE_MAX_SECONDS=${COURSE_MAX_SECONDS:-2} COURSE_MAX_NOISE=${COURSE_MAX_NOISE:-0.005}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# Wall-clock seconds of each phase, for the summary (the main job's budget is five minutes).
job_start=$(date +%s.%N)
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }'; }

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

# Set-up: the build's dependencies (tools/setup.sh) and the plots' Python (made into .venv on first
# use, which takes a while: counted here). Go only serves chapter 07's Go caller: without chapter 07
# there is nothing to install it for (COURSE_SETUP_GO=1 asks for it anyway).
go_wanted=0
for ch in "${chapters[@]}"; do [ "$ch" = 07_library ] && go_wanted=1; done
export COURSE_SETUP_GO=${COURSE_SETUP_GO:-$go_wanted}
phase_start=$(date +%s.%N)
source tools/setup.sh
python=$(course_python)
setup_seconds=$(since "$phase_start")
jobs=$(nproc 2>/dev/null || echo 2)
preset=solutions
[ -d solutions ] || preset=student  # a student repository: your own tree
echo "== Building the course ($preset) =="
phase_start=$(date +%s.%N)
cmake --preset $preset >/dev/null
# The programs only (course_programs: every chapter's executable, course_info, libdotcourse): the
# tests are tools/test.sh's job, and building them would double the main job's time.
cmake --build --preset $preset -j "$jobs" --target course_programs
bin=build/$preset/bin
build_seconds=$(since "$phase_start")
# A chapter whose dependency is missing (11_multi_gpu without NCCL) is left out of the build with
# a message at configure time: skipped here when running every chapter, an error when asked for.
built=()
for ch in "${chapters[@]}"; do
  if [ -x "$bin/$ch" ]; then built+=("$ch")
  elif [ $# -gt 0 ]; then echo "run_course: chapter '$ch' was not built (looked for $bin/$ch; see the configure output)" >&2; exit 2
  else echo "run_course: chapter '$ch' was left out of the build (see the configure output): skipped"; fi
done
chapters=("${built[@]}")

status=0
gpu=1
if probe=$("$bin/course_info" --probe 2>&1); then
  echo "== $probe =="
else
  gpu=0
  echo
  echo "== $probe"
  echo "== Without a GPU only the chapters that need none run; the others are skipped, and their plots"
  echo "== are drawn from the shipped reference results into results/local/plots-h100/."
  # Said once here: the chapters that need a GPU exit with code 3 without repeating it.
  export COURSE_NO_GPU_SAID=1
fi
mkdir -p results/local
# One row per chapter for the summary: result, seconds, where its CSVs and plots went.
declare -A result seconds
ran_chapters=()
skipped_chapters=()
for ch in "${chapters[@]}"; do
  echo
  echo "== Chapter $ch =="
  rc=0
  # The GPU's clocks, temperature and throttle state before the run (the record compares them
  # with after; plot footers say when the GPU throttled). Nothing is sampled without a GPU.
  before=()
  if [ $gpu = 1 ] && python3 tools/telemetry.py --out "build/telemetry-$ch.json" >/dev/null 2>&1; then
    before=(--telemetry-before "build/telemetry-$ch.json")
  fi
  start=$(date +%s.%N)
  # What the chapter prints is kept: its captions are checked against its rows below.
  log="build/$preset/run_course-$ch.log"
  set +e
  "$bin/$ch" --csv "results/local/$ch.csv" | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  seconds[$ch]=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  # Exit code 3 is "no GPU": without one, a chapter that needs it is skipped, not failed.
  if [ $gpu = 0 ] && [ $rc = 3 ]; then
    echo "skipped: needs a GPU"
    result[$ch]=skipped
    skipped_chapters+=("$ch")
    continue
  fi
  # This chapter's record in run_metadata.json (the other chapters' records are kept: a chapter
  # re-run alone gets its own date, commit and driver).
  python3 tools/run_metadata.py --out results/local/run_metadata.json --bin "$bin" --chapter "$ch" "${before[@]}" || status=1
  if [ $rc = 0 ]; then
    result[$ch]=ran
    ran_chapters+=("$ch")
    # The captions against the rows: what a caption says the table shows ("valid = 0 in every row
    # where ..."), checked on this run's CSVs (tools/check_captions.py).
    if ! python3 tools/check_captions.py "$ch" --results results/local --output "$log"; then
      result[$ch]="ran, a caption contradicts its rows"
      status=1
    fi
    # Chapter 07 is also called from Python and Go: their CSVs go beside its own.
    if [ "$ch" = 07_library ] && ! library/bench/run_callers.sh build/$preset results/local; then
      result[$ch]="ran, a caller failed"
      status=1
    fi
    # Chapter 10 is also timed from Python (dotcourse's typed path beside PyTorch and CuPy, one run).
    if [ "$ch" = 10_dtypes ]; then
      if "$python" -c 'import numpy, torch' >/dev/null 2>&1; then
        lib=build/$preset/lib/libdotcourse.so
        if ! core=$(library/python/build_core.sh "$lib" "$python") ||
           ! DOTCOURSE_LIB=$lib DOTCOURSE_CORE=$core "$python" library/bench/bench_dtypes.py \
               --csv results/local/10_dtypes_python.csv; then
          result[$ch]="ran, its Python benchmark failed"
          status=1
        fi
      else
        echo "run_course: no Python with NumPy and PyTorch: 10_dtypes_python.csv not written"
      fi
    fi
  else
    result[$ch]="failed ($rc)"
    echo "run_course: chapter $ch FAILED (exit code $rc); its CSV may be missing" >&2
    status=1
  fi
done

# Plots: only the chapters of this run. Those that ran from this run's CSVs; without a GPU, those
# skipped from the shipped reference results (chapter 11's come from results/reference/h200x2).
declare -A plots
phase_start=$(date +%s.%N)
chapter_args() { local ch; for ch in "$@"; do printf -- '--chapter\n%s\n' "$ch"; done; }
if [ ${#ran_chapters[@]} -gt 0 ]; then
  echo
  echo "== Plots from this run =="
  mapfile -t args < <(chapter_args "${ran_chapters[@]}")
  if "$python" plots/render_all.py --results results/local --out results/local/plots "${args[@]}"; then
    for ch in "${ran_chapters[@]}"; do plots[$ch]="results/local/plots/$ch*.png"; done
  else
    status=1
    for ch in "${ran_chapters[@]}"; do plots[$ch]="(plotting failed: see above)"; done
  fi
fi
if [ ${#skipped_chapters[@]} -gt 0 ]; then
  echo
  echo "== The skipped chapters' plots from the shipped reference results, into results/local/plots-h100/ =="
  mapfile -t args < <(chapter_args "${skipped_chapters[@]}")
  if "$python" plots/render_all.py --results results/reference/h100 --out results/local/plots-h100 "${args[@]}"; then
    for ch in "${skipped_chapters[@]}"; do plots[$ch]="results/local/plots-h100/$ch*.png (reference)"; done
  else
    status=1
    for ch in "${skipped_chapters[@]}"; do plots[$ch]="(plotting failed: see above)"; done
  fi
fi

plot_seconds=$(since "$phase_start")

echo
echo "== Summary =="
printf '%-16s %-11s %8s  %-32s %s\n' chapter result seconds CSVs plots
for ch in "${chapters[@]}"; do
  r=${result[$ch]:-"not run"}
  csvs="-"
  if compgen -G "results/local/$ch*.csv" >/dev/null && [ "$r" != skipped ]; then csvs="results/local/$ch*.csv"; fi
  printf '%-16s %-11s %8s  %-32s %s\n' "$ch" "$r" "${seconds[$ch]:--}" "$csvs" "${plots[$ch]:--}"
done
failed=$(( ${#chapters[@]} - ${#ran_chapters[@]} - ${#skipped_chapters[@]} ))
line="${#ran_chapters[@]} ran, ${#skipped_chapters[@]} skipped, $failed failed"
if [ $gpu = 0 ] && [ ${#skipped_chapters[@]} -gt 0 ]; then line+=" (skipped: they need a GPU, and this machine has none: see the top)"; fi
echo "run_course: $line; $(since "$job_start") s in all (set-up $setup_seconds s, build $build_seconds s, plots $plot_seconds s)"
exit $status
