#!/usr/bin/env bash
# Builds the Python package's extension (dotcourse._core) for a course build and prints its path:
#   library/python/build_core.sh path/to/libdotcourse.so PYTHON
# into <build>/python-core-build-<python version> (CMakeLists.txt here; no CUDA, seconds once
# ccache has it). Callers export DOTCOURSE_LIB and DOTCOURSE_CORE from it (run_pytest.sh, the
# benchmarks in library/bench). Exit 1 with the build log's tail on stderr when the build fails;
# exit 3 when PYTHON has no nanobind (the caller decides whether that is a skip).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -eq 2 ] || { echo "usage: build_core.sh path/to/libdotcourse.so PYTHON" >&2; exit 2; }
lib=$1
python=$2
[ -f "$lib" ] || { echo "build_core: no library at $lib (build the course first)" >&2; exit 2; }
"$python" -c 'import nanobind' >/dev/null 2>&1 ||
  { echo "build_core: $python has no nanobind, needed to build dotcourse._core (pip install nanobind)" >&2; exit 3; }
tag=$("$python" -c 'import sys; print("%d%d" % sys.version_info[:2])')
core_build=$(cd "$(dirname "$lib")/.." && pwd)/python-core-build-$tag
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# ch07.python and ch07.python_cpu may start together (ctest -j): one builds, the other waits for
# the lock (flock, util-linux) and then finds the extension up to date.
exec 9>"$core_build.lock"
flock 9
if ! { cmake -S "$here" -B "$core_build" "${generator[@]}" -DPython_EXECUTABLE="$(command -v "$python")" \
         -DCMAKE_LIBRARY_OUTPUT_DIRECTORY="$core_build/out" >"$core_build.log" 2>&1 &&
       cmake --build "$core_build" >>"$core_build.log" 2>&1; }; then
  tail -n 30 "$core_build.log" >&2
  echo "build_core: building dotcourse._core failed (log: $core_build.log)" >&2
  exit 1
fi
flock -u 9
core=$(ls "$core_build"/out/_core*.so 2>/dev/null | head -n 1)
[ -n "$core" ] || { echo "build_core: the build left no _core*.so in $core_build/out" >&2; exit 1; }
echo "$core"
