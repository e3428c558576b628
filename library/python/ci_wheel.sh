#!/usr/bin/env bash
# CI step for the Python package as its users get it (.ci/run may call it):
#   1. python -m build: the sdist, then the wheel built from that sdist (so the sdist is complete);
#   2. the wheel's libdotcourse.so has rpath $ORIGIN and nothing else (no build machine path), and
#      needs no CUDA library to load (readelf -d: no NEEDED libcudart, libcublas);
#   3. the wheel installed into a fresh venv (with NumPy and pytest), and the pytest suite run from
#      the source folder's tests/ against the installed package (DOTCOURSE_TEST_INSTALLED=1,
#      DOTCOURSE_LIB unset: the wheel's own library; conftest refuses the source tree).
#   library/python/ci_wheel.sh [WORK_DIR]                      (default build/ci-wheel)
#   DOTCOURSE_WHEEL=path/to/dotcourse-*.whl ci_wheel.sh ...    skip 1 (a GPU machine without Go,
#                                                              pip index or toolkit build: carry the wheel)
# Where no package index can be reached, step 3 installs the wheel with --target into WORK_DIR and
# uses the NumPy and pytest of $DOTCOURSE_PYTHON (else python3). Exit status: 0 when everything
# ran and passed (GPU tests skip with the reason without a GPU; the last line then says
# COURSE-NO-GPU); 0 with a line starting COURSE-SKIP and the reason when a tool could not be had
# (no venv module, no index for `build`, no NumPy/pytest); non-zero on a real failure.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${1:-$root/build/ci-wheel}
case $work in /*) ;; *) work=$PWD/$work ;; esac  # absolute: the script changes folders below
python=${DOTCOURSE_PYTHON:-python3}
pip_net=(--disable-pip-version-check --retries 1 --timeout 20)

skip() { echo "COURSE-SKIP: ci_wheel: $*"; exit 0; }
fail() { echo "ci_wheel: FAILED: $*" >&2; exit 1; }

rm -rf "$work" && mkdir -p "$work" || fail "cannot create $work"
"$python" -c 'import venv' 2>/dev/null || skip "$python has no venv module"

wheel=${DOTCOURSE_WHEEL:-}
if [ -z "$wheel" ]; then
  echo "== ci_wheel: python -m build (sdist, then the wheel from the sdist) =="
  "$python" -m venv "$work/tools" || skip "$python -m venv failed"
  # The index is needed for `build` here and for scikit-build-core in build's isolated environment.
  "$work/tools/bin/python" -m pip install -q "${pip_net[@]}" build >"$work/pip-tools.log" 2>&1 ||
    skip "no package index: pip could not install 'build' (offline?), see $work/pip-tools.log"
  if ! "$work/tools/bin/python" -m build --outdir "$work/dist" "$here" >"$work/build.log" 2>&1; then
    tail -n 40 "$work/build.log"
    fail "python -m build (log: $work/build.log)"
  fi
  sdist=$(ls "$work"/dist/dotcourse-*.tar.gz 2>/dev/null | head -n 1)
  wheel=$(ls "$work"/dist/dotcourse-*.whl 2>/dev/null | head -n 1)
  [ -n "$sdist" ] && [ -n "$wheel" ] || fail "python -m build made no sdist or no wheel (log: $work/build.log)"
  listing=$(tar tzf "$sdist") || fail "cannot list $sdist"
  grep -q "_vendor/library/packaging/CMakeLists.txt" <<<"$listing" ||
    fail "the sdist lacks the CMake project (_vendor/library/packaging)"
  # One defined tree: the library (its header and C ABI) and chapter 07's engine from solutions/,
  # nothing else of any tree (the wheel built from this sdist below proves nothing is missing).
  for f in library/include/dotcourse/dotcourse.h library/src/c_api.cpp library/src/engine.hpp \
           solutions/07_library/dot.cu solutions/07_library/dot.hpp; do
    grep -q "/_vendor/$f\$" <<<"$listing" || fail "the sdist lacks _vendor/$f"
  done
  other=$(grep -E "/_vendor/(chapters|solutions)/" <<<"$listing" | grep -vE "/_vendor/solutions/(07_library/(dot\.cu|dot\.hpp)?)?\$" || true)
  [ -z "$other" ] || fail "the sdist carries more of a tree than solutions/07_library/dot.cu, dot.hpp: $other"
  echo "ci_wheel: built $(basename "$sdist") and $(basename "$wheel")"
fi
[ -f "$wheel" ] || fail "no wheel at $wheel"

echo "== ci_wheel: the wheel's library =="
"$python" - "$wheel" "$work/unpacked" <<'PY' || fail "the wheel's contents"
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
need = ["dotcourse/__init__.py", "dotcourse/py.typed", "dotcourse/libdotcourse.so", "dotcourse/_build_version.py",
        "dotcourse/_core.pyi"]
missing = [n for n in need if n not in names]
if not any(n.startswith("dotcourse/_core.") and n.endswith(".so") for n in names):
    missing.append("dotcourse/_core*.so (the compiled extension)")
if missing:
    sys.exit(f"the wheel lacks {missing}")
zipfile.ZipFile(sys.argv[1]).extract("dotcourse/libdotcourse.so", sys.argv[2])
PY
if command -v readelf >/dev/null; then
  runpath=$(readelf -d "$work/unpacked/dotcourse/libdotcourse.so" | grep -E "R(UN)?PATH" || true)
  echo "$runpath"
  grep -q 'R[UN]*PATH) *Library r[a-z]*path: \[\$ORIGIN\]$' <<<"$runpath" ||
    fail "the wheel's libdotcourse.so must have rpath \$ORIGIN and nothing else"
  # No CUDA library at load time: the runtime is linked statically, cuBLAS opened on first use
  # (tests/test_no_cuda.py runs the installed package where none can be found).
  needed=$(readelf -d "$work/unpacked/dotcourse/libdotcourse.so" | grep NEEDED || true)
  echo "$needed"
  if grep -Eq '\[lib(cudart|cublas|cublasLt|cuda)\.so' <<<"$needed"; then
    fail "the wheel's libdotcourse.so needs a CUDA library at load time"
  fi
fi

echo "== ci_wheel: install the wheel into a fresh environment =="
env_python=""
if "$python" -m venv "$work/venv" &&
   "$work/venv/bin/python" -m pip install -q "${pip_net[@]}" "$wheel" numpy pytest >"$work/pip-venv.log" 2>&1; then
  env_python=$work/venv/bin/python
  pythonpath=""
  echo "ci_wheel: installed into the fresh venv $work/venv"
else
  # No index (a GPU machine): the wheel alone into a folder of its own, with this Python's NumPy and pytest.
  "$python" -m pip install -q --disable-pip-version-check --no-index --no-deps --target "$work/site" "$wheel" \
    >"$work/pip-target.log" 2>&1 || fail "pip could not install $wheel even with --target (log: $work/pip-target.log)"
  "$python" -c 'import numpy, pytest' 2>/dev/null ||
    skip "no package index and $python lacks NumPy or pytest: the installed wheel was not tested"
  env_python=$python
  pythonpath=$work/site
  echo "ci_wheel: no package index; installed with --target into $work/site (NumPy and pytest of $python)"
fi

echo "== ci_wheel: pytest against the installed package =="
log=$work/pytest.log
(cd "$work" && env -u DOTCOURSE_LIB DOTCOURSE_TEST_INSTALLED=1 PYTHONPATH="$pythonpath" \
  "$env_python" -m pytest -q -rs -p no:cacheprovider "$here/tests") 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] || fail "pytest against the installed wheel (exit $rc)"
if grep -q "COURSE-NO-GPU" "$log"; then
  echo "COURSE-NO-GPU: ci_wheel: the installed wheel passed; its GPU tests were skipped (reason above)"
else
  echo "ci_wheel: the installed wheel passed every test"
fi
