#!/usr/bin/env bash
# The course's test command: installs what is missing, builds the solutions and runs every test.
# Without a GPU the GPU tests are reported as skipped (with the reason), never as passed.
#   tools/test.sh              all tests of the solutions build
#   tools/test.sh -L ch05      only one chapter's tests (any ctest arguments pass through)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source tools/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake --preset solutions >/dev/null
cmake --build --preset solutions -j "$jobs"
# Serially: GPU tests share one card, and some allocate gigabytes.
ctest --preset solutions "$@"
# (ctest includes chapter 07's pytest suite, ch07.python, and `go test`, ch07.go, where Go is
# installed; without Go, configure says so and the Go test is not registered.)
