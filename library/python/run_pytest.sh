#!/usr/bin/env bash
# ctest ch07.python: runs the Python package's pytest suite against a given libdotcourse.so.
#   run_pytest.sh path/to/libdotcourse.so [pytest args]
# The Python: $DOTCOURSE_PYTHON, else python3 on PATH, else the repository's .venv; it needs
# NumPy and pytest, and nanobind to build the package's extension (dotcourse._core) for this
# build: into <build>/python-core (CMakeLists.txt here; no CUDA, seconds once ccache has it). A
# .venv without nanobind gets it from pip (library/python/requirements-test.txt). Without them it
# prints COURSE-SKIP and the reason (ctest: skipped). Without a
# GPU the GPU tests skip with the reason; if everything else passed it prints COURSE-NO-GPU, so
# ctest reports the test as skipped, never as passed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export DOTCOURSE_LIB=$1
shift
python=""
for p in "${DOTCOURSE_PYTHON:-}" python3 "$root/.venv/bin/python"; do
  [ -n "$p" ] || continue
  if "$p" -c 'import numpy, pytest' >/dev/null 2>&1; then python=$p; break; fi
done
if [ -z "$python" ]; then
  echo "COURSE-SKIP: no Python with NumPy and pytest (python3 -m venv .venv && .venv/bin/pip install numpy pytest)"
  exit 0
fi
if ! "$python" -c 'import nanobind' >/dev/null 2>&1; then
  case $python in
    "$root"/.venv/*) "$root/.venv/bin/pip" install -q -r "$here/requirements-test.txt" >&2 || true ;;
  esac
fi
"$python" -c 'import nanobind' >/dev/null 2>&1 ||
  { echo "COURSE-SKIP: $python has no nanobind, needed to build dotcourse._core (pip install nanobind)"; exit 0; }
# The extension for this Python, next to the library's build (one per interpreter version).
DOTCOURSE_CORE=$("$here/build_core.sh" "$DOTCOURSE_LIB" "$python") || exit 1
export DOTCOURSE_CORE
log=$(mktemp)
"$python" -m pytest -q -rs -p no:cacheprovider "$here/tests" "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" -eq 0 ] && grep -q "COURSE-NO-GPU" "$log"; then
  echo "COURSE-NO-GPU: the GPU tests above were skipped (the others passed)"
fi
rm -f "$log"
exit "$rc"
