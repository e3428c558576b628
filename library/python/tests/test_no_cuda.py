"""The installed package on a host without CUDA (issue 41): Context(device="cpu") imports and computes
every dtype pair with no CUDA library findable, and maps none.

The wheel's libdotcourse.so links the CUDA runtime statically and opens cuBLAS only on a GPU
context's first use (library/src/cublas_lazy.cpp). To check that on a machine that has the toolkit,
a child Python runs a copy of the installed package from a temporary folder under the loader
started by hand with --inhibit-cache (no ld.so.cache, where the toolkit's folder is listed) and no
LD_LIBRARY_PATH or CUDA_HOME: the child first checks that libcudart and libcublas cannot be opened
at all, then computes, then reads /proc/self/maps. A library that still needed libcudart or
libcublas fails to load there. The course build's libdotcourse.so links the runtime dynamically
(it is the course's, next to its toolkit), so this runs against the installed wheel only
(DOTCOURSE_TEST_INSTALLED=1: library/python/ci_wheel.sh)."""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

LOADER = pathlib.Path("/lib64/ld-linux-x86-64.so.2")

CHILD = textwrap.dedent(r"""
    import ctypes, json, re, sys
    import numpy as np
    result = {"findable": [], "wrong": [], "mapped": []}
    # The premise: the toolkit's libraries cannot be opened by name in this process. (The driver's
    # libcuda.so.1 lives in a system folder on a GPU machine; a CPU context must still not map it.)
    for name in ("libcudart.so.12", "libcudart.so.13", "libcublas.so.12", "libcublas.so.13"):
        try:
            ctypes.CDLL(name)
            result["findable"].append(name)
        except OSError:
            pass
    import dotcourse
    result["package"] = dotcourse.__file__
    result["library"] = str(dotcourse._lib.library_path())
    dtypes = ["float64", "float32", "float16", "int8", "bool"]
    try:
        import ml_dtypes
        dtypes.append("bfloat16")
    except ImportError:
        pass
    rng = np.random.default_rng(41)
    n = 100_003  # past the CPU dot's serial bound: the pool's threads too
    def sample(dtype):
        if dtype == "bool":
            return rng.integers(0, 2, n).astype(np.bool_)
        if dtype == "int8":
            return rng.integers(-128, 128, n).astype(np.int8)
        if dtype == "bfloat16":
            return rng.uniform(-1, 1, n).astype(np.float32).astype(ml_dtypes.bfloat16)
        return rng.uniform(-1, 1, n).astype(dtype)
    with dotcourse.Context(1, device="cpu") as ctx:
        for tx in dtypes:
            for ty in dtypes:
                x, y = sample(tx), sample(ty)
                x64, y64 = x.astype(np.float64), y.astype(np.float64)
                want, scale = float(np.dot(x64, y64)), float(np.abs(x64 * y64).sum())
                for where in ("auto", "cpu"):
                    got = ctx.dot(x, y, where=where)
                    if abs(got - want) > 1e-4 * scale:
                        result["wrong"].append(f"{tx}*{ty} where={where}: {got} against {want}")
        result["pairs"] = len(dtypes) ** 2
    with open("/proc/self/maps") as maps:
        pattern = re.compile(r"/lib(cudart|cublas|cublasLt|cuda|nvrtc|nvJitLink)[^/]*\.so")
        result["mapped"] = sorted({line.split()[-1] for line in maps if pattern.search(line)})
    print("RESULT " + json.dumps(result))
""")


def test_cpu_context_needs_and_maps_no_cuda_library(tmp_path):
    if os.environ.get("DOTCOURSE_TEST_INSTALLED") != "1":
        pytest.skip("the installed wheel only (library/python/ci_wheel.sh): the course build's libdotcourse.so "
                    "links the CUDA runtime dynamically (ctest ch07.no_cublas_needed checks it needs no cuBLAS)")
    if not LOADER.is_file() or not pathlib.Path("/proc/self/maps").is_file():
        pytest.skip(f"needs Linux x86-64 ({LOADER} and /proc/self/maps)")
    import dotcourse  # the installed package; its files are copied, the copy is tested
    installed = pathlib.Path(dotcourse.__file__).parent
    site = tmp_path / "site"
    shutil.copytree(installed, site / "dotcourse", ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD", "CUDA_HOME", "CUDA_PATH", "DOTCOURSE_LIB", "DOTCOURSE_CORE")}
    env["PYTHONPATH"] = str(site)
    env["DOTCOURSE_CALIBRATION"] = str(tmp_path / "calibration.json")
    # sys.executable as the venv names it (a symlink): the venv's site-packages (NumPy) still apply.
    run = subprocess.run([str(LOADER), "--inhibit-cache", sys.executable, "-c", CHILD], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    lines = [line for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    assert run.returncode == 0 and lines, (
        f"the package copy failed without findable CUDA libraries (exit {run.returncode}): does libdotcourse.so "
        f"still need libcudart or libcublas (readelf -d)?\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
    result = json.loads(lines[-1][len("RESULT "):])
    assert result["findable"] == [], f"the test's premise: these should not be openable in the child: {result['findable']}"
    assert result["package"].startswith(str(site)) and result["library"].startswith(str(site)), result
    assert result["wrong"] == [], "\n".join(result["wrong"])
    assert result["pairs"] >= 25
    assert result["mapped"] == [], f"a CPU-only context mapped CUDA libraries: {result['mapped']}"
