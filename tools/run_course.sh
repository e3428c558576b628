#!/usr/bin/env bash
# The course's main job: build the course, run every chapter's solution on the GPU, write the CSVs
# to results/local/ and the plots to results/local/plots/.
# Without a GPU it builds, says so, and renders the plots from the shipped H100 results instead.
#   tools/run_course.sh                  every chapter
#   tools/run_course.sh 05_many_blocks   some chapters
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source tools/setup.sh

jobs=$(nproc 2>/dev/null || echo 2)
preset=solutions
[ -d solutions ] || preset=student  # a student repository: your own tree
echo "== Building the course ($preset) =="
cmake --preset $preset >/dev/null
cmake --build --preset $preset -j "$jobs"
bin=build/$preset/bin

chapters=("$@")
if [ ${#chapters[@]} -eq 0 ]; then
  for dir in chapters/[0-9][0-9]_*/; do chapters+=("$(basename "$dir")"); done
fi
for ch in "${chapters[@]}"; do
  [ -x "$bin/$ch" ] || { echo "run_course: no chapter '$ch' (looked for $bin/$ch)" >&2; exit 2; }
done

python=$(course_python)
status=0
if probe=$("$bin/course_info" --probe 2>&1); then
  echo "== $probe =="
  mkdir -p results/local
  for ch in "${chapters[@]}"; do
    echo
    echo "== Chapter $ch =="
    if ! "$bin/$ch" --csv "results/local/$ch.csv"; then
      echo "run_course: chapter $ch FAILED (exit code above); its CSV may be missing" >&2
      status=1
    fi
  done
  echo
  echo "== Plots from this run =="
  "$python" plots/render_all.py --results results/local --out results/local/plots || status=1
  echo "CSVs in results/local/, plots in results/local/plots/"
else
  echo
  echo "== No GPU: $probe"
  echo "== The course is built; the GPU runs are skipped. Rendering the plots from the shipped H100"
  echo "== results (results/reference/h100) into results/local/plots-h100/ instead."
  "$python" plots/render_all.py --results results/reference/h100 --out results/local/plots-h100 || status=1
fi
exit $status
