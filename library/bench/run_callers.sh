#!/usr/bin/env bash
# Chapter 07's measurements from the other languages, after `07_library --csv OUT/07_library.csv`:
#   library/bench/run_callers.sh BUILD_DIR OUT_DIR
# writes OUT_DIR/07_library_peers.csv and 07_library_program_python.csv (Python: NumPy, CuPy,
# PyTorch and dotcourse in one run) and 07_library_program_go.csv (the Go program: from
# BUILD_DIR/go-bin/motivate, carried from a machine with Go, or built here when Go is installed).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$1
out=$2
status=0
export DOTCOURSE_LIB="$build/lib/libdotcourse.so"
python=""
for p in "${DOTCOURSE_PYTHON:-}" python3 "$root/.venv/bin/python"; do
  [ -n "$p" ] && "$p" -c 'import numpy' >/dev/null 2>&1 && { python=$p; break; }
done
if [ -n "$python" ]; then
  # The package's compiled extension for this build and this Python (seconds once built).
  if core=$("$root/library/python/build_core.sh" "$DOTCOURSE_LIB" "$python"); then
    DOTCOURSE_CORE=$core "$python" "$root/library/bench/bench_peers.py" --out "$out" || status=1
  else
    echo "run_callers: no dotcourse._core for $python (above): 07_library_peers.csv and 07_library_program_python.csv not written"
    status=1
  fi
else
  echo "run_callers: no Python with NumPy: 07_library_peers.csv and 07_library_program_python.csv not written"
fi
if [ ! -x "$build/go-bin/motivate" ] && command -v go >/dev/null; then
  "$root/library/go/build_carry.sh" "$build" || status=1
fi
if [ -x "$build/go-bin/motivate" ]; then
  rm -f "$out/07_library_program_go.csv"
  "$build/go-bin/motivate" -csv "$out/07_library_program_go.csv" || status=1
else
  echo "run_callers: no Go program (no go here, none carried into $build/go-bin): 07_library_program_go.csv not written"
fi
exit $status
