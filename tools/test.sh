#!/usr/bin/env bash
# The course's test command: installs what is missing, builds the solutions and runs every test
# (in a student repository, which has no solutions/, the student's own tree).
# Without a GPU the GPU tests are reported as skipped (with the reason), never as passed.
#   tools/test.sh              all tests of the solutions build
#   tools/test.sh -L ch05      only one chapter's tests, and only that chapter is built (any ctest
#                              arguments pass through); ends with passed, failed, skipped and why
#   tools/test.sh --student -L ch05   the student tree (chapters/) even where solutions/ exists
# tools/progress then shows every chapter's holes and tests, and the next step.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source tools/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)
preset=solutions
[ -d solutions ] || preset=student
if [ "${1:-}" = --student ]; then
  preset=student
  shift
fi
# Chapter 07's pytest suite (ctest ch07.python) runs with a Python that has NumPy and pytest.
export DOTCOURSE_PYTHON=${DOTCOURSE_PYTHON:-$(course_test_python)}
cmake --preset $preset >/dev/null
# One chapter's label (-L chNN): build that chapter's target only (its executable and its tests).
target=()
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  if [ "${args[$i]}" = -L ] && [[ "${args[$((i + 1))]:-}" =~ ^ch([0-9][0-9])$ ]]; then
    folder=$(cd chapters && ls -d "${BASH_REMATCH[1]}"_* 2>/dev/null | head -1)
    [ -n "$folder" ] && target=(--target "${folder}_all")
  fi
done
cmake --build --preset $preset -j "$jobs" "${target[@]}"
# Serially where there is a GPU: GPU tests share one card, and some allocate gigabytes. Without
# one (nvidia-smi lists none) every GPU test skips at once and the host tests run side by side,
# one per core, unless the arguments choose (-j). The last line is the honest count (CTest's own
# "100% tests passed" counts a skipped test as passed), then each skip's reason.
parallel=()
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU' && [[ " $* " != *" -j"* ]] && [[ " $* " != *" --parallel"* ]]; then
  parallel=(-j "$jobs")
fi
junit="$root/build/$preset/ctest-junit.xml"
rm -f "$junit"
set +e
ctest --preset $preset --output-junit "$junit" "${parallel[@]}" "$@"
rc=$?
# (ctest includes chapter 07's pytest suite, ch07.python, and `go test`, ch07.go, where Go is
# installed; without Go, configure says so and the Go test is not registered.)
set -e
echo
python3 tools/test_summary.py "$junit" || true
# Each chapter's latest results, kept across runs for tools/progress (a run of one chapter keeps
# the others' results).
python3 tools/progress --record "$junit" >/dev/null 2>&1 || true
exit $rc
