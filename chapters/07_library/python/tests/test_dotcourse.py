"""The Python binding of chapter 07: the checks the C side cannot make, the library's statuses,
results against an fp64 reference with the course's error bound, threads, and CuPy/PyTorch device
arrays without a copy. GPU tests skip with the reason where there is no GPU."""
import ctypes
import math
import threading

import numpy as np
import pytest

import dotcourse
from conftest import gpu_reason

U = 2.0 ** -24


def inputs(n, seed):
    """Random signed float32 vectors with a few large positive products ("spikes"), and the fp64
    reference with the course's probabilistic error bound (lambda = 8, Higham & Mary)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, n).astype(np.float32)
    y = rng.uniform(-1, 1, n).astype(np.float32)
    if n >= 64:
        idx = np.unique(np.concatenate([[0, n // 2, n - 1], rng.integers(0, n, 13)]))
        x[idx], y[idx] = 8.0, 8.0
    prod = x.astype(np.float64) * y.astype(np.float64)
    ref, sum_abs = float(prod.sum()), float(np.abs(prod).sum())
    bound = (math.exp(8 * math.sqrt(max(n, 1)) * U + n * U * U / (1 - U)) - 1) * sum_abs
    return x, y, ref, bound


# ---- no GPU needed -----------------------------------------------------------------------------

@pytest.mark.parametrize("bad, err, text", [
    (np.zeros(8, np.float64), TypeError, "float32"),
    (np.zeros(8, np.int32), TypeError, "float32"),
    ([1.0] * 8, TypeError, "NumPy"),
    (np.zeros((2, 4), np.float32), ValueError, "1-D"),
    (np.zeros(16, np.float32)[::2], ValueError, "contiguous"),
    (np.zeros(9, np.float32), ValueError, "equal lengths"),
])
def test_host_checks(bad, err, text):
    good = np.zeros(8, np.float32)
    with pytest.raises(err, match=text):
        dotcourse.check_host_arrays(bad, good, 100)
    with pytest.raises(err, match=text):
        dotcourse.check_host_arrays(good, bad, 100)


def test_n_max_check():
    x = np.zeros(101, np.float32)
    with pytest.raises(ValueError, match="n_max = 100"):
        dotcourse.check_host_arrays(x, x, 100)
    assert dotcourse.check_host_arrays(x, x, 101) == 101


def test_version_and_statuses(lib_available):
    assert dotcourse.version() == "0.7.0"
    lib = dotcourse._load()
    for s in range(8):
        assert len(lib.dotcourse_status_string(s)) > 3
    # A NULL handle is refused by the C side, whatever the binding does.
    r = ctypes.c_float()
    assert lib.dotcourse_dot(None, None, None, 0, ctypes.byref(r)) == dotcourse.INVALID_HANDLE
    assert b"NULL" in lib.dotcourse_last_error()


def test_no_gpu_is_an_error_with_the_reason(lib_available):
    if gpu_reason() is None:
        with pytest.raises(dotcourse.DotcourseError) as e:
            dotcourse.Context(16, device=4096)
        assert e.value.status == dotcourse.NO_GPU and "4096" in str(e.value)
    else:
        with pytest.raises(dotcourse.DotcourseError) as e:
            dotcourse.Context(16)
        assert e.value.status == dotcourse.NO_GPU


def test_bad_n_max():
    with pytest.raises(ValueError):
        dotcourse.Context(0)


# ---- on the GPU --------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [0, 1, 3, 255, 256, 257, 65535, 65537, (1 << 17) + 1, (1 << 20) + 3, 1 << 21])
def test_matches_reference(ctx, n):
    x, y, ref, bound = inputs(n, n)
    got = ctx.dot(x, y)
    assert isinstance(got, float)
    assert abs(got - ref) <= bound, f"n = {n}: got {got}, expected {ref}, bound {bound}"


def test_same_bits_every_call(ctx):
    x, y, _, _ = inputs(1 << 20, 5)
    assert len({ctx.dot(x, y) for _ in range(10)}) == 1


def test_too_large_and_the_context_still_works(ctx):
    x = np.ones(ctx.n_max + 1, np.float32)
    with pytest.raises(ValueError, match="n_max"):
        ctx.dot(x, x)
    # Past the binding, the library refuses it too.
    r = ctypes.c_float()
    status = ctx._lib.dotcourse_dot(ctx._handle, x.ctypes.data, x.ctypes.data, x.size, ctypes.byref(r))
    assert status == dotcourse.TOO_LARGE
    assert ctx.dot(x[:1000], x[:1000]) == 1000.0


def test_closed_and_destroyed():
    if gpu_reason():
        pytest.skip(gpu_reason())
    c = dotcourse.Context(100)
    handle = c._handle
    c.close()
    c.close()  # idempotent
    x = np.ones(10, np.float32)
    with pytest.raises(ValueError, match="closed"):
        c.dot(x, x)
    r = ctypes.c_float()
    assert c._lib.dotcourse_dot(handle, x.ctypes.data, x.ctypes.data, 10, ctypes.byref(r)) == dotcourse.INVALID_HANDLE


def test_out_of_memory():
    if gpu_reason():
        pytest.skip(gpu_reason())
    with pytest.raises(dotcourse.DotcourseError) as e:
        dotcourse.Context(1 << 40)
    assert e.value.status == dotcourse.OUT_OF_MEMORY
    with dotcourse.Context(10) as c:  # and the next one works
        assert c.dot(np.ones(10, np.float32), np.ones(10, np.float32)) == 10.0


def test_threads_share_a_context(ctx):
    data = [inputs(n, 40 + n) for n in (1000, 70000, 1 << 20)]
    errors = []

    def work(t):
        for call in range(10):
            x, y, ref, bound = data[(t + call) % len(data)]
            got = ctx.dot(x, y)
            if abs(got - ref) > bound:
                errors.append((t, call, got, ref))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors


# ---- device arrays: CuPy and PyTorch -----------------------------------------------------------

def _cupy():
    cp = pytest.importorskip("cupy", reason="CuPy is not installed")
    if gpu_reason():
        pytest.skip(gpu_reason())
    return cp


def _torch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if gpu_reason() or not torch.cuda.is_available():
        pytest.skip(gpu_reason() or "PyTorch sees no CUDA device")
    return torch


@pytest.mark.parametrize("n", [1, 257, (1 << 20) + 3])
def test_cupy_arrays_no_copy_on_their_stream(ctx, n):
    cp = _cupy()
    x, y, ref, bound = inputs(n, 300 + n)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        dx, dy = cp.asarray(x), cp.asarray(y)  # enqueued on `stream`, maybe still running
        got = ctx.dot(dx, dy)                  # must run after them, on the same stream
    assert abs(got - ref) <= bound
    with pytest.raises(TypeError, match="float32"):  # float64 is chapter 10's; int32 no dtype takes
        ctx.dot(dx.astype(cp.int32), dy.astype(cp.int32))
    if n > 2:
        with pytest.raises(ValueError, match="contiguous"):
            ctx.dot(dx[::2], dy[::2])


@pytest.mark.parametrize("n", [1, 257, (1 << 20) + 3])
def test_torch_tensors(ctx, n):
    torch = _torch()
    x, y, ref, bound = inputs(n, 400 + n)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        dx, dy = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
        got = ctx.dot(dx, dy)
    assert abs(got - ref) <= bound
    with pytest.raises(TypeError):
        ctx.dot(dx, y)  # one on the GPU, one on the host


def test_dlpack_only_producer(ctx):
    torch = _torch()

    class OnlyDLPack:  # a producer that speaks DLPack and nothing else
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    x, y, ref, bound = inputs(10000, 9)
    dx, dy = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    got = ctx.dot(OnlyDLPack(dx), OnlyDLPack(dy))
    assert abs(got - ref) <= bound
