"""Chapter 10 through the Python binding: Context.dot accepts every pair of float64, float32,
float16, bfloat16, int8 and bool, from NumPy (copied), CuPy and PyTorch (on the device), and matches
the fp64 reference within the accumulator's bound (integer pairs exactly, past int32)."""
import math

import pytest

import numpy as np

N = 100_003  # not a multiple of any pack
PAIRS = [("float32", "float32"), ("float64", "float64"), ("float32", "float64"), ("float32", "bool"),
         ("float32", "int8"), ("float32", "float16"), ("float16", "float16"), ("int8", "int8"),
         ("bool", "int8"), ("float64", "float16")]


def _random(dtype, n, rng):
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(np.bool_)
    if dtype == "int8":
        return rng.integers(-128, 128, n).astype(np.int8)
    return rng.uniform(-1, 1, n).astype(dtype)


def _unit_roundoff(tx, ty):
    if tx in ("int8", "bool") and ty in ("int8", "bool"):
        return 0.0
    return 2.0 ** -53 if "float64" in (tx, ty) else 2.0 ** -24


def _bound(x64, y64, u):
    n = len(x64) + 1
    return math.expm1(8 * math.sqrt(n) * u + n * u * u / (1 - u)) * float(np.abs(x64 * y64).sum())


def _check(got, x, y, tx, ty):
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    u = _unit_roundoff(tx, ty)
    if u == 0:
        expected = int((x.astype(np.int64) * y.astype(np.int64)).sum())
        assert isinstance(got, int), f"{tx}*{ty}: an integer pair returns a Python int, got {type(got).__name__}"
        assert got == expected, f"{tx}*{ty}: got {got}, expected exactly {expected}"
    else:
        expected = float(np.dot(x64, y64))
        assert abs(got - expected) <= _bound(x64, y64, u), f"{tx}*{ty}: got {got!r}, expected {expected!r}"


@pytest.mark.parametrize("tx,ty", PAIRS, ids=[f"{a}*{b}" for a, b in PAIRS])
def test_numpy_pairs(ctx, tx, ty):
    rng = np.random.default_rng(10)
    x, y = _random(tx, N, rng), _random(ty, N, rng)
    _check(ctx.dot(x, y), x, y, tx, ty)


@pytest.mark.parametrize("tx,ty", PAIRS, ids=[f"{a}*{b}" for a, b in PAIRS])
def test_misaligned_numpy_pairs(ctx, tx, ty):
    rng = np.random.default_rng(11)
    x, y = _random(tx, N + 3, rng)[1:N + 1], _random(ty, N + 3, rng)[3:N + 3]
    _check(ctx.dot(x, y), x, y, tx, ty)


def test_int8_exact_past_int32(ctx):
    n = (1 << 17) + 5  # every product (-128)·(-128) = 2^14: the sum passes 2^31
    x = np.full(n, -128, dtype=np.int8)
    got = ctx.dot(x, x)
    assert got == n * 16384, f"got {got}, expected {n * 16384} (int32 would wrap)"


def test_rejects_unknown_dtype(ctx):
    with pytest.raises(TypeError, match="dtype"):
        ctx.dot(np.ones(8, np.float32), np.ones(8, np.int32))
    with pytest.raises(ValueError, match="equal lengths"):
        ctx.dot(np.ones(8, np.float32), np.ones(9, np.int8))


@pytest.mark.parametrize("tx,ty", PAIRS + [("bfloat16", "bfloat16"), ("float32", "bfloat16")],
                         ids=[f"{a}*{b}" for a, b in PAIRS + [("bfloat16", "bfloat16"), ("float32", "bfloat16")]])
def test_torch_pairs_on_device(ctx, tx, ty):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("COURSE-NO-GPU: PyTorch sees no CUDA device")
    rng = np.random.default_rng(12)
    xs, ys = _random("float32" if tx == "bfloat16" else tx, N, rng), _random("float32" if ty == "bfloat16" else ty, N, rng)
    tdt = {"bool": torch.bool, "int8": torch.int8, "float16": torch.float16, "bfloat16": torch.bfloat16,
           "float32": torch.float32, "float64": torch.float64}
    x = torch.from_numpy(xs).to("cuda").to(tdt[tx])
    y = torch.from_numpy(ys).to("cuda").to(tdt[ty])
    got = ctx.dot(x, y)
    # The reference from the values the tensors hold (bfloat16 rounded on the device).
    xh = x.to(torch.float64).cpu().numpy() if tx == "bfloat16" else x.cpu().numpy()
    yh = y.to(torch.float64).cpu().numpy() if ty == "bfloat16" else y.cpu().numpy()
    _check(got, xh, yh, "float32" if tx == "bfloat16" else tx, "float32" if ty == "bfloat16" else ty)


@pytest.mark.parametrize("tx,ty", PAIRS, ids=[f"{a}*{b}" for a, b in PAIRS])
def test_cupy_pairs_on_device(ctx, tx, ty):
    cp = pytest.importorskip("cupy", reason="CuPy is not installed")
    try:
        cp.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"COURSE-NO-GPU: CuPy sees no device ({e})")
    rng = np.random.default_rng(13)
    xs, ys = _random(tx, N, rng), _random(ty, N, rng)
    got = ctx.dot(cp.asarray(xs), cp.asarray(ys))
    _check(got, xs, ys, tx, ty)


def test_the_accumulator_is_asked_of_the_library_once_per_pair():
    """The promotion rule lives in the library (dotcourse_accumulator); the binding asks once per pair
    and remembers the answer, so a call pays one C call, not two. No GPU: a stand-in library."""
    import types
    from dotcourse import _arrays as _typed
    from dotcourse._context import accumulator

    calls = []

    def ask(tx, ty):
        calls.append((tx, ty))
        return _typed.INT64 if (tx, ty) == (_typed.INT8, _typed.INT8) else _typed.FLOAT32

    lib = types.SimpleNamespace(accumulator=ask)
    for _ in range(3):
        assert accumulator(lib, _typed.INT8, _typed.INT8) == _typed.INT64
        assert accumulator(lib, _typed.FLOAT32, _typed.BOOL) == _typed.FLOAT32
    assert calls == [(_typed.INT8, _typed.INT8), (_typed.FLOAT32, _typed.BOOL)]
