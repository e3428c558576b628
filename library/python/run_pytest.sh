#!/usr/bin/env bash
# ctest ch07.python: runs the Python package's pytest suite against a given libdotcourse.so.
#   run_pytest.sh path/to/libdotcourse.so [pytest args]
# The Python: $DOTCOURSE_PYTHON, else python3 on PATH, else the repository's .venv; it needs
# NumPy and pytest. Without them it prints COURSE-SKIP and the reason (ctest: skipped). Without a
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
log=$(mktemp)
"$python" -m pytest -q -rs -p no:cacheprovider "$here/tests" "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" -eq 0 ] && grep -q "COURSE-NO-GPU" "$log"; then
  echo "COURSE-NO-GPU: the GPU tests above were skipped (the others passed)"
fi
rm -f "$log"
exit "$rc"
