"""Where a host dot runs (issue 26 item 5): Context.dot(where=...), the CPU-only context, the plan's
pure choice, the diagnostics (last_call) and the calibration cache. Everything but the last block
needs no GPU: a Context(1, device="cpu") runs the library's CPU path. The GPU tests' names begin
with test_gpu_: ctest ch07.python_cpu runs the others (-k "test_where and not test_gpu_")."""
import json
import socket

import numpy as np
import pytest

import dotcourse
from conftest import gpu_reason
from test_dotcourse import inputs
from test_dtypes import _check, _random

try:
    from ml_dtypes import bfloat16 as _bfloat16
except ImportError:  # bfloat16 pairs are then checked on the GPU's tests only
    _bfloat16 = None

SIZES = [0, 1, 7, 255, 256, 257, 4096 + 3, (1 << 15) - 1, 1 << 15, (1 << 20) + 3]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """The calibration cache in a temporary file (never the user's ~/.cache)."""
    path = tmp_path / "calibration.json"
    monkeypatch.setenv("DOTCOURSE_CALIBRATION", str(path))
    return path


@pytest.fixture
def cpu(lib_available, cache):
    with dotcourse.Context(1, device="cpu", cpu_threads=4) as c:
        yield c


# ---- the CPU-only context: no GPU needed ---------------------------------------------------------

@pytest.mark.parametrize("n", SIZES)
def test_cpu_path_matches_the_reference(cpu, n):
    x, y, ref, bound = inputs(n, 2600 + n)
    got = cpu.dot(x, y, where="cpu")
    assert abs(got - ref) <= bound, f"where='cpu' at n = {n}: {got} against the fp64 {ref} (bound {bound:.3g})"
    call = cpu.last_call
    assert (call.where, call.path, call.n, call.n_cpu, call.n_gpu) == ("cpu", "cpu", n, n, 0)
    assert call.cpu_threads >= 1 and call.seconds >= 0.0 and not call.registered and not call.calibrated
    assert cpu.dot(x, y, where="cpu") == got, "the CPU dot adds its threads' partials in a fixed order"


def test_auto_takes_the_library_at_small_n_and_numpy_only_below_a_measured_bound(cpu):
    assert cpu.last_call is None
    assert (cpu.plan["numpy_from"], cpu.plan["numpy_below"]) == (1 << 13, 1 << 18), \
        "uncalibrated: NumPy's dot only where both arrays fit a core's caches"
    x, y, ref, bound = inputs(16, 4)
    assert abs(cpu.dot(x, y) - ref) <= bound
    assert cpu.last_call.path == "cpu" and cpu.last_call.cpu_threads == 1, "small n: on the calling thread"
    below = 4096
    cpu.set_plan([], numpy_below=below, calibrated=False, numpy_from=0)  # as a calibration that saw NumPy win below 4096
    x, y, ref, bound = inputs(below - 1, 1)
    assert abs(cpu.dot(x, y) - ref) <= bound
    call = cpu.last_call
    assert call.path == "numpy" and call.where == "auto" and call.n == below - 1
    assert "NumPy" in call.reason
    x, y, ref, bound = inputs(below, 2)
    assert abs(cpu.dot(x, y) - ref) <= bound
    assert cpu.last_call.path == "cpu" and "built-in rule" in cpu.last_call.reason
    cpu.set_plan([], numpy_below=0)  # never NumPy
    x, y, ref, bound = inputs(5, 3)
    assert abs(cpu.dot(x, y) - ref) <= bound
    assert cpu.last_call.path == "cpu"


def test_auto_takes_numpy_only_inside_the_plans_window(cpu):
    # A calibration that saw the library win at small n and NumPy between 1024 and 4096 (a CPU dot
    # whose threads wake slowly there): NumPy's dot for n in [1024, 4096) only.
    cpu.set_plan([], numpy_below=4096, calibrated=False, numpy_from=1024)
    assert (cpu.plan["numpy_from"], cpu.plan["numpy_below"]) == (1024, 4096)
    for n, path in ((1023, "cpu"), (1024, "numpy"), (4095, "numpy"), (4096, "cpu"), (16, "cpu")):
        x, y, ref, bound = inputs(n, n)
        assert abs(cpu.dot(x, y) - ref) <= bound
        assert cpu.last_call.path == path, f"n = {n}"
    x, y, _, _ = inputs(2000, 1)
    cpu.dot(x, y)
    assert "1024 <= n < 4096" in cpu.last_call.reason
    cpu.set_plan([], numpy_below=0, numpy_from=0)


@pytest.mark.parametrize("t_numpy, t_library, window", [
    # the H200 host's medians (µs, 2^8 ... 2^20 by 2^2): the library at small n and from 2^18,
    # NumPy where the CPU dot's threads wake (2^14, 2^16)
    ([0.9, 0.95, 1.3, 2.8, 6.5, 75.0, 300.0], [0.6, 0.7, 1.26, 3.3, 23.7, 46.0, 95.0], (1 << 14, 1 << 18)),
    ([1.0] * 7, [0.5] * 7, (0, 0)),                      # the library everywhere: never NumPy
    ([0.5] * 7, [1.0] * 7, (0, 1 << 21)),                # NumPy everywhere: from 0, past the last size
    ([1.0] * 7, [1.0] * 7, (0, 0)),                      # a tie keeps the library
    # one size where NumPy wins by a hair does not pull a window over sizes it loses badly
    ([0.99, 2.0, 2.0, 0.5, 0.5, 2.0, 2.0], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], (1 << 14, 1 << 18)),
])
def test_the_numpy_window_loses_least(t_numpy, t_library, window):
    sizes = [1 << k for k in range(8, 21, 2)]
    assert dotcourse._auto.numpy_window(sizes, t_numpy, t_library) == window


def test_cpu_context_has_no_n_max_and_no_gpu(cpu):
    assert cpu.n_max == 2 ** 64 - 1 and cpu.device == "cpu"
    assert cpu.plan["device"] == "" and cpu.plan["rows"] == [] and not cpu.plan["calibrated"]
    x = np.ones(1000, np.float32)
    with pytest.raises(dotcourse.NoGpuError, match="dotcourse_create_cpu"):
        cpu.dot(x, x, where="gpu")
    with pytest.raises(dotcourse.NoGpuError, match="dotcourse_create_cpu"):
        cpu.dot(x.astype(np.float64), x, where="gpu")
    assert cpu.dot(x, x, where="cpu") == 1000.0  # still usable after a refusal
    assert cpu.dot(x.astype(np.float64), x) == 1000.0  # other dtypes: the CPU too
    assert cpu.pinned() == 0


@pytest.mark.parametrize("where", ["CPU", "Auto", "", " gpu", "both", None, 0, 1, b"cpu", ["cpu"], {"cpu": 1}])
def test_bad_where_is_a_value_error(cpu, where):
    x = np.ones(8, np.float32)
    with pytest.raises(ValueError, match="where must be 'auto', 'cpu' or 'gpu'"):
        cpu.dot(x, x, where=where)
    with pytest.raises(ValueError, match="where must be"):  # the same on the other paths
        cpu.dot(x.astype(np.float64), x, where=where)


def test_where_cpu_refuses_what_it_cannot_compute(cpu):
    x = np.ones(8, np.float32)

    class FakeCAI:
        __cuda_array_interface__ = {"version": 3, "data": (0x7000, False), "shape": (8,), "typestr": "<f4"}
    with pytest.raises(dotcourse.InvalidArgumentError, match="where='cpu' takes two float32 host arrays"):
        cpu.dot(FakeCAI(), FakeCAI(), where="cpu")
    for bad, err in ((np.ones(9, np.float32), ValueError), ([1.0] * 8, TypeError),
                     (np.ones((2, 4), np.float32), ValueError), (np.ones(16, np.float32)[::2], ValueError)):
        with pytest.raises(err):
            cpu.dot(x, bad, where="cpu")


# ---- every dtype on the CPU-only context (issue 41): the library's CPU dot of any two dtypes ----------

DTYPES = ["float64", "float32", "float16", "int8", "bool"] + (["bfloat16"] if _bfloat16 is not None else [])
ALL_PAIRS = [(a, b) for a in DTYPES for b in DTYPES]


def _typed(dtype, n, rng):
    return _random("float32", n, rng).astype(_bfloat16) if dtype == "bfloat16" else _random(dtype, n, rng)


@pytest.mark.parametrize("n", [1, 7, 4096 + 3, (1 << 15) + 5, 100_003])
@pytest.mark.parametrize("tx,ty", ALL_PAIRS, ids=[f"{a}*{b}" for a, b in ALL_PAIRS])
def test_cpu_context_takes_every_dtype_pair(cpu, tx, ty, n):
    rng = np.random.default_rng(n)
    x, y = _typed(tx, n, rng), _typed(ty, n, rng)
    cpu.set_plan([], numpy_below=0, numpy_from=0)  # the library's own CPU path (NumPy's window: above)
    for where in ("auto", "cpu"):
        got = cpu.dot(x, y, where=where)
        _check(got, x.astype(np.float64) if tx == "bfloat16" else x, y.astype(np.float64) if ty == "bfloat16" else y,
               "float32" if tx == "bfloat16" else tx, "float32" if ty == "bfloat16" else ty)
        call = cpu.last_call
        assert (call.where, call.path, call.n, call.n_cpu, call.n_gpu) == (where, "cpu", n, n, 0), call
        assert cpu.dot(x, y, where=where) == got, f"{tx}*{ty}: the CPU dot adds its parts in a fixed order"


def test_cpu_context_reads_every_float16_exactly(cpu):
    """Each finite float16 (subnormals, the largest, both zeros) and the infinities, times 1.0: the
    CPU path converts half bits itself (no CUDA header), so every pattern is checked."""
    bits = np.arange(1 << 16, dtype=np.uint16)
    halves = bits.view(np.float16)
    halves = halves[~np.isnan(halves)]
    one = np.ones(1, np.float32)
    got = np.array([cpu.dot(halves[i:i + 1], one) for i in range(len(halves))])
    want = halves.astype(np.float64)
    wrong = np.flatnonzero(got != want)
    assert wrong.size == 0, f"float16 bits {bits[~np.isnan(bits.view(np.float16))][wrong[:5]]} read as {got[wrong[:5]]}, " \
                            f"not {want[wrong[:5]]}"


def test_cpu_context_integer_pairs_are_exact_past_int32(cpu):
    n = (1 << 17) + 1  # 127 * 127 * n > 2^31
    x = np.full(n, 127, np.int8)
    assert cpu.dot(x, x) == 127 * 127 * n
    assert cpu.dot(x, -x) == -127 * 127 * n


@pytest.mark.parametrize("kwargs, err, text", [
    ({"device": "gpu"}, ValueError, "device must be"),
    ({"device": "CPU"}, ValueError, "device must be"),
    ({"device": "cpu", "cpu_threads": -1}, ValueError, "cpu_threads"),
    ({"device": "cpu", "cpu_threads": 2000}, ValueError, "cpu_threads"),
    ({"device": "cpu", "cpu_threads": 2.0}, TypeError, "cpu_threads"),
    ({"device": "cpu", "cpu_threads": "4"}, TypeError, "cpu_threads"),
    ({"device": "cpu", "calibration": "yes"}, ValueError, "calibration"),
    ({"device": "cpu", "calibration": None}, ValueError, "calibration"),
])
def test_bad_context_arguments(lib_available, kwargs, err, text):
    with pytest.raises(err, match=text):
        dotcourse.Context(1, **kwargs)


def test_closed_context(cpu):
    cpu.close()
    x = np.ones(8, np.float32)
    with pytest.raises(dotcourse.InvalidHandleError):
        cpu.dot(x, x, where="cpu")
    with pytest.raises(dotcourse.InvalidHandleError):
        cpu.plan
    with pytest.raises(dotcourse.InvalidHandleError):
        cpu.set_plan([])
    with pytest.raises(dotcourse.InvalidHandleError):
        cpu.calibrate()


# ---- the plan: a pure function -------------------------------------------------------------------

ROWS = [
    {"n_min": 1 << 12, "registered": False, "path": "cpu", "gpu_share": 0.0},
    {"n_min": 1 << 22, "registered": False, "path": "split", "gpu_share": 0.25},
    {"n_min": 1 << 16, "registered": True, "path": "split", "gpu_share": 0.375},
    {"n_min": 1 << 24, "registered": True, "path": "gpu", "gpu_share": 1.0},
]


@pytest.mark.parametrize("n, registered, expected", [
    (100, False, ("cpu", 0)), ((1 << 22) - 1, False, ("cpu", 0)), (1 << 22, False, ("split", 1 << 20)),
    (1 << 28, False, ("split", 1 << 26)), ((1 << 16) - 1, True, ("cpu", 0)), (1 << 16, True, ("split", 3 << 13)),
    (1 << 24, True, ("gpu", 1 << 24)), (0, True, ("cpu", 0)),
])
def test_plan_choose(lib_available, n, registered, expected):
    assert dotcourse.plan_choose(ROWS, n, registered) == expected
    assert dotcourse.plan_choose([], n, registered) == ("cpu", 0), "the built-in rule: the CPU at every n"


@pytest.mark.parametrize("rows, err", [
    ([dict(ROWS[1], gpu_share=0.0)], "gpu_share"),
    ([dict(ROWS[1], gpu_share=1.0)], "gpu_share"),
    ([ROWS[1], ROWS[0]], "n_min must grow"),
    ([dict(ROWS[0], path="tpu")], "not a row"),
    ([{"n_min": 1}], "not a row"),
    ([dict(ROWS[0], n_min=-1)], "n_min"),
    ([ROWS[0]] * 33, "at most 32"),
])
def test_bad_plans(cpu, rows, err):
    with pytest.raises(ValueError, match=err):
        dotcourse.plan_choose(rows, 10)
    with pytest.raises(ValueError, match=err):
        cpu.set_plan(rows)
    assert cpu.plan["rows"] == [], "a refused plan leaves the context's as it was"


def test_plan_choose_bad_n(lib_available):
    with pytest.raises(ValueError):
        dotcourse.plan_choose([], -1)
    with pytest.raises(TypeError):
        dotcourse.plan_choose([], 1.5)


def test_set_plan_round_trip(cpu):
    cpu.set_plan(ROWS, numpy_below=4096)
    plan = cpu.plan
    assert plan["rows"] == ROWS and plan["calibrated"] and plan["numpy_below"] == 4096
    x, y, ref, bound = inputs(1 << 22, 5)
    assert abs(cpu.dot(x, y) - ref) <= bound
    assert cpu.last_call.path == "cpu", "a CPU-only context takes the CPU whatever its plan says"


# ---- the calibration cache -----------------------------------------------------------------------

def test_calibrate_on_the_cpu_saves_numpy_below_and_a_new_context_loads_it(cpu, cache):
    # NumPy's side is timed along the route "auto" takes to it (through the context's dot), not as
    # a bare numpy.dot: that route costs as much as NumPy's whole dot at small n.
    routes = []
    measured_dot = cpu.dot

    def spy(x, y, where="auto"):
        r = measured_dot(x, y, where=where)
        routes.append((where, cpu.last_call.path))
        return r

    cpu.dot = spy
    try:
        plan = cpu.calibrate()
    finally:
        del cpu.dot
    assert ("auto", "numpy") in routes and ("cpu", "cpu") in routes
    assert {path for where, path in routes if where == "auto"} == {"numpy"}
    assert 0 <= plan["numpy_below"] <= 1 << 21
    x, y, _, _ = inputs(1 << 21, 3)
    cpu.dot(x, y)
    assert cpu.last_call.path == "cpu", "after the calibration, numpy_below is the measured one again"
    data = json.loads(cache.read_text())
    assert data["host"] == socket.gethostname() and data["device"] == "" and data["version"] == 1
    assert data["numpy_below"] == plan["numpy_below"] and data["cpu_threads"] == 4
    assert data["numpy_from"] == plan["numpy_from"] <= plan["numpy_below"] or plan["numpy_below"] == 0
    data["numpy_below"] = 12345
    data["numpy_from"] = 0
    cache.write_text(json.dumps(data))
    with dotcourse.Context(1, device="cpu", cpu_threads=4) as again:
        assert again.plan["numpy_below"] == 12345
    with dotcourse.Context(1, device="cpu", cpu_threads=3) as other:  # measured with other threads: not used
        assert other.plan["numpy_below"] != 12345
    with dotcourse.Context(1, device="cpu", cpu_threads=4, calibration="none") as none:
        assert none.plan["numpy_below"] != 12345
    with dotcourse.Context(1, device="cpu", cpu_threads=4) as again:  # the extension's fast path reads it too
        again.dot(np.ones(100, np.float32), np.ones(100, np.float32))
        assert again.last_call.path == "numpy"


@pytest.mark.parametrize("text", ["not json", "[]", '{"version": 99}', ""])
def test_a_broken_cache_is_ignored(lib_available, cache, text):
    cache.write_text(text)
    with dotcourse.Context(1, device="cpu") as c:
        assert c.plan["rows"] == []


def test_a_cache_with_bad_rows_warns_and_is_ignored(lib_available, cache):
    with dotcourse.Context(1, device="cpu", cpu_threads=2) as c:
        data = dict(c.plan, version=1, host=socket.gethostname(), numpy_below="many")
    cache.write_text(json.dumps(data))
    with pytest.warns(RuntimeWarning, match="ignoring the calibration cache"):
        with dotcourse.Context(1, device="cpu", cpu_threads=2) as c:
            assert c.plan["numpy_below"] == dotcourse._auto.NUMPY_BELOW


# ---- on a GPU ------------------------------------------------------------------------------------

@pytest.fixture
def gpu_ctx(cache):
    why = gpu_reason()
    if why:
        pytest.skip(why)
    with dotcourse.Context(1 << 22, calibration="none") as c:
        yield c


@pytest.mark.parametrize("n", [1, 4096 + 3, (1 << 20) + 3, 1 << 22])
def test_gpu_every_where_on_a_gpu_context(gpu_ctx, n):
    x, y, ref, bound = inputs(n, 2700 + n)
    for where, path in (("cpu", "cpu"), ("gpu", "gpu")):
        assert abs(gpu_ctx.dot(x, y, where=where) - ref) <= bound
        assert gpu_ctx.last_call.path == path
    gpu_ctx.set_plan([{"n_min": 0, "registered": False, "path": "split", "gpu_share": 0.375}], numpy_below=0)
    assert abs(gpu_ctx.dot(x, y) - ref) <= bound
    call = gpu_ctx.last_call
    expected = "split" if int(n * 0.375) > 0 else "cpu"
    assert call.path == expected and call.n_cpu + call.n_gpu == n and call.calibrated


def test_gpu_device_arrays_keep_their_path(gpu_ctx):
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    x, y, ref, bound = inputs(5000, 71)
    assert abs(gpu_ctx.dot(cupy.asarray(x), cupy.asarray(y)) - ref) <= bound
    assert gpu_ctx.last_call.path == "device"


def test_gpu_calibrate(gpu_ctx, cache):
    plan = gpu_ctx.calibrate(n_limit=1 << 20)
    assert plan["calibrated"] and plan["device"] and plan["rows"]
    assert json.loads(cache.read_text())["device"] == plan["device"]
    x, y, ref, bound = inputs(1 << 20, 72)
    gpu_ctx.set_plan(plan["rows"], numpy_below=0)  # the library's choice, not NumPy's, at 2^20
    assert abs(gpu_ctx.dot(x, y) - ref) <= bound
    call = gpu_ctx.last_call
    assert (call.path, call.n_gpu) == dotcourse.plan_choose(plan["rows"], 1 << 20) and call.calibrated
    with dotcourse.Context(1 << 20) as again:  # the cache, loaded
        assert again.plan["rows"] == plan["rows"]


def test_read_only_arrays_and_views_on_the_cpu(cpu):
    x, y, ref, bound = inputs(5000, 80)
    ro = x.copy()
    ro.setflags(write=False)  # no writable buffer: the binding reads its address another way
    assert abs(cpu.dot(ro, y, where="cpu") - ref) <= bound
    assert abs(cpu.dot(y, ro, where="cpu") - ref) <= bound
    buf = np.concatenate([x, y])
    assert abs(cpu.dot(buf[:5000], buf[5000:], where="cpu") - ref) <= bound
    empty = np.zeros(0, np.float32)
    assert cpu.dot(empty, empty, where="cpu") == 0.0
