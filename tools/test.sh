#!/usr/bin/env bash
# The course's test command: installs what is missing, builds the solutions and runs every test
# (in a student repository, which has no solutions/, the student's own tree).
# Without a GPU the GPU tests are reported as skipped (with the reason), never as passed.
#   tools/test.sh              all tests of the solutions build
#   tools/test.sh -L ch05      only one chapter's tests (any ctest arguments pass through)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source tools/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)
preset=solutions
[ -d solutions ] || preset=student
# Chapter 07's pytest suite (ctest ch07.python) runs with a Python that has NumPy and pytest.
export DOTCOURSE_PYTHON=${DOTCOURSE_PYTHON:-$(course_test_python)}
cmake --preset $preset >/dev/null
cmake --build --preset $preset -j "$jobs"
# Serially: GPU tests share one card, and some allocate gigabytes. The last line is the honest
# count (CTest's own "100% tests passed" counts a skipped test as passed), then each skip's reason.
junit="$root/build/$preset/ctest-junit.xml"
rm -f "$junit"
set +e
ctest --preset $preset --output-junit "$junit" "$@"
rc=$?
# (ctest includes chapter 07's pytest suite, ch07.python, and `go test`, ch07.go, where Go is
# installed; without Go, configure says so and the Go test is not registered.)
set -e
echo
python3 tools/test_summary.py "$junit" || true
exit $rc
