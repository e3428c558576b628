"""The Python binding of chapter 07: the checks the C side cannot make, the library's statuses,
results against an fp64 reference with the course's error bound, threads, and CuPy/PyTorch device
arrays without a copy. GPU tests skip with the reason where there is no GPU."""
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
    (np.zeros(8, np.int32), TypeError, "dtype int32; dotcourse takes float64, float32"),
    (np.zeros(8, ">f4"), TypeError, "dtype >f4"),
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


def test_host_checks_take_every_dtype():
    for dt in ("float64", "float32", "float16", "int8", "bool"):
        assert dotcourse.check_host_arrays(np.zeros(8, dt), np.zeros(8, np.float32), 100) == 8


def test_version_and_statuses(lib_available):
    assert dotcourse.version() == dotcourse.__version__, "the library and the package disagree on the version"
    lib = dotcourse._lib.load()
    for s in dotcourse.Status:
        assert len(lib.status_string(s)) > 3
        assert dotcourse.status_string(s) == lib.status_string(s)
    # A NULL handle is refused by the C side, whatever the binding does.
    assert lib.c_dot(0, 0, 0, 0)[0] == dotcourse.Status.INVALID_HANDLE
    assert "NULL" in lib.last_error()


def test_no_gpu_is_an_error_with_the_reason(lib_available):
    if gpu_reason() is None:
        with pytest.raises(dotcourse.NoGpuError) as e:
            dotcourse.Context(16, device=4096)
        assert e.value.status == dotcourse.Status.NO_GPU and "4096" in str(e.value)
    else:
        with pytest.raises(dotcourse.NoGpuError) as e:
            dotcourse.Context(16)
        assert e.value.status == dotcourse.Status.NO_GPU and e.value.message in str(e.value)


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
    with pytest.raises(dotcourse.TooLargeError, match="n_max"):
        ctx.dot(x, x)
    with pytest.raises(dotcourse.TooLargeError, match="n_max"):  # the typed host path: the same error
        ctx.dot(x, x.astype(np.float64))
    # Past the binding, the library refuses it too.
    status, _ = ctx._lib.c_dot(ctx._core.handle, x.ctypes.data, x.ctypes.data, x.size)
    assert status == dotcourse.Status.TOO_LARGE
    assert ctx.dot(x[:1000], x[:1000]) == 1000.0


def test_closed_and_destroyed():
    if gpu_reason():
        pytest.skip(gpu_reason())
    c = dotcourse.Context(100)
    handle = c._core.handle
    c.close()
    c.close()  # idempotent
    x = np.ones(10, np.float32)
    with pytest.raises(dotcourse.InvalidHandleError, match="closed"):
        c.dot(x, x)
    assert c._lib.c_dot(handle, x.ctypes.data, x.ctypes.data, 10)[0] == dotcourse.Status.INVALID_HANDLE


def test_out_of_memory():
    if gpu_reason():
        pytest.skip(gpu_reason())
    with pytest.raises(MemoryError) as e:
        dotcourse.Context(1 << 40)
    assert isinstance(e.value, dotcourse.OutOfMemoryError) and e.value.status == dotcourse.Status.OUT_OF_MEMORY
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


def test_dlpack_versioned_producer(ctx):
    """A producer that speaks DLPack 1.x: dotcourse asks for max_version=(1, 0) and reads the versioned
    capsule (CuPy 13+ answers with one; the CPU tests in test_api.py check the parsing itself)."""
    cp = _cupy()
    asked = []

    class Versioned:
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, stream=None, max_version=None):
            asked.append(max_version)
            return self.a.__dlpack__(stream=stream, max_version=max_version)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    x, y, ref, bound = inputs(10000, 10)
    got = ctx.dot(Versioned(cp.asarray(x)), Versioned(cp.asarray(y)))
    assert asked[:2] == [(1, 0), (1, 0)]
    assert abs(got - ref) <= bound
    got = ctx.dot(Versioned(cp.asarray(x).astype(cp.float16)), Versioned(cp.asarray(y)))  # the typed path
    assert abs(got - ref) <= 1e-2 * float(np.abs(x.astype(np.float64) * y).sum())


# ---- the registration cache: arrays seen again are pinned ---------------------------------------

class _FakeLib:
    """Stands in for libdotcourse.so: records registrations, refuses the pointers in `refuse`."""

    def __init__(self, refuse=()):
        self.registered, self.calls, self.refuse = {}, [], set(refuse)

    closed = False

    def register(self, ptr, nbytes):
        self.calls.append(("register", ptr))
        if ptr in self.refuse:
            return dotcourse.Status.INVALID_ARGUMENT
        assert ptr not in self.registered, "registered twice"
        self.registered[ptr] = nbytes
        return dotcourse.Status.OK

    def unregister(self, ptr):
        self.calls.append(("unregister", ptr))
        if self.registered.pop(ptr, None) is None:
            raise dotcourse._errors.error_for(dotcourse.Status.INVALID_ARGUMENT, "not registered")

    def dot(self, x, y, where="auto"):  # no fast path here: the package's Python route
        return self.owner._dot_any(x, y, {"auto": 0, "cpu": 1, "gpu": 2}[where])

    def dot_ptr(self, px, py, n, code):
        self.calls.append(("dot", px, py, n))
        return 0.0


def _fake_context(lib, n_max=1 << 21, pin_arrays=4):
    """A Context whose library is _FakeLib and whose C dot records the pointers it is given (no
    GPU): what the binding itself does before the C call."""
    ctx = object.__new__(dotcourse.Context)
    lib.owner = ctx
    ctx._core, ctx._lib, ctx.n_max, ctx.device = lib, lib, n_max, 0
    ctx._pins = dotcourse._pins.PinCache(lib, pin_arrays, 1 << 30)
    ctx.dot = lib.dot
    return ctx


def test_host_dot_passes_the_arrays_and_counts_their_uses():  # no GPU: the binding's own steps
    lib = _FakeLib()
    ctx = _fake_context(lib)
    x, y = np.ones(1 << 18, np.float32), np.ones(1 << 18, np.float32)  # 1 MiB each: pinned on the second call
    for _ in range(5):
        ctx.dot(x, y, where="gpu")
    dots = [c for c in lib.calls if c[0] == "dot"]
    assert dots == [("dot", x.ctypes.data, y.ctypes.data, 1 << 18)] * 5
    assert set(lib.registered) == {x.ctypes.data, y.ctypes.data}
    assert [e[1] for e in ctx._pins.entries.values()] == [4, 4], "every call after the registering one counts a use"
    ctx.dot(x, x, where="gpu")  # the same array twice: one pointer, one use
    assert lib.calls[-1] == ("dot", x.ctypes.data, x.ctypes.data, 1 << 18)
    assert ctx._pins.entries[(x.ctypes.data, x.nbytes)][1] == 5
    v = x[:]  # another array object at the same address, not the registered one
    ctx.dot(v, y, where="gpu")
    assert lib.calls[-1] == ("dot", x.ctypes.data, y.ctypes.data, 1 << 18)
    ctx._pins.clear()
    assert lib.registered == {} and ctx._pins.by_id == {}
    ctx.dot(x, y, where="gpu")  # unregistered again: the pointers read afresh
    assert lib.calls[-1] == ("dot", x.ctypes.data, y.ctypes.data, 1 << 18)
    small = np.ones(8, np.float32)
    ctx.dot(small, small[::-1].copy(), where="gpu")
    assert lib.calls[-1][3] == 8
    for bad, err in ((np.ones(9, np.float32), ValueError), ([1.0] * 8, TypeError),
                     (np.ones((2, 4), np.float32), ValueError), (np.ones(16, np.float32)[::2], ValueError)):
        with pytest.raises(err):
            ctx.dot(small, bad)
    lib.closed = True  # nothing real to destroy


class _FakeCAI:
    """A CUDA array as __cuda_array_interface__ describes it, with no GPU behind it: the binding's
    checks read only the dictionary."""

    def __init__(self, **cai):
        self.__cuda_array_interface__ = dict({"version": 3, "data": (0x7000, False)}, **cai)


@pytest.mark.parametrize("cai, err, text", [
    ({"shape": (8,), "typestr": "<i4"}, TypeError, "dtype '<i4'.*dotcourse takes float64, float32"),
    ({"shape": (8,), "typestr": ">f4"}, TypeError, "dtype '>f4'"),
    ({"shape": (2, 4), "typestr": "<f4"}, ValueError, "1-D"),
    ({"shape": (8,), "typestr": "<f4", "strides": (8,)}, ValueError, "contiguous"),
    ({"shape": (8,), "typestr": "<f4", "mask": object()}, ValueError, "mask"),
])
def test_device_view_checks(cai, err, text):  # no GPU: what a CUDA producer's array must be
    with pytest.raises(err, match=text):
        dotcourse._arrays.from_cai("x", _FakeCAI(**cai))


def test_device_view_reads_pointer_length_and_stream():  # no GPU
    v = dotcourse._arrays.from_cai("x", _FakeCAI(shape=(8,), typestr="<f4", strides=(4,), stream=7))
    assert (v.ptr, v.n, v.stream, v.on_device) == (0x7000, 8, 7, True)
    v = dotcourse._arrays.from_cai("x", _FakeCAI(shape=(1,), typestr="<f4", strides=(12,)))  # one element: any stride
    assert (v.n, v.stream) == (1, None)


def _see(cache, *arrays):
    with cache.lock:
        for a in arrays:
            cache.see(a, a.ctypes.data)


def test_pin_policy_second_sighting_bounded_and_released():  # no GPU: the policy alone
    import gc
    import weakref
    lib = _FakeLib()
    cache = dotcourse._pins.PinCache(lib, 2, 1 << 30)
    a, b, c = (np.zeros(1 << 18, np.float32) for _ in range(3))
    _see(cache, a)
    assert lib.registered == {}, "an array seen once must not be registered"
    _see(cache, a, b, b)
    assert set(lib.registered) == {a.ctypes.data, b.ctypes.data}
    for _ in range(5):
        _see(cache, a, b)  # used often: no churn
    _see(cache, c, c)      # a third array: the least recently used (a) goes
    assert set(lib.registered) == {b.ctypes.data, c.ctypes.data}
    ref = weakref.ref(a)
    del a
    gc.collect()
    assert ref() is None, "an evicted array must be released"
    cache.clear()
    assert lib.registered == {} and len(cache.entries) == 0


def test_pin_policy_fresh_refused_and_churn():  # no GPU
    lib = _FakeLib()
    cache = dotcourse._pins.PinCache(lib, 2, 1 << 30)
    for _ in range(5):
        _see(cache, np.ones(1 << 18, np.float32))  # a fresh array each time (maybe at the same address)
    assert lib.registered == {}
    x = np.ones(1 << 18, np.float32)
    lib.refuse.add(x.ctypes.data)
    for _ in range(4):
        _see(cache, x)
    assert [c for c in lib.calls if c[0] == "register"] == [("register", x.ctypes.data)], \
        "a refused array is staged, not offered again"
    # Three arrays in turn through a cache of two, each used twice: churn, then no more registrations.
    lib2 = _FakeLib()
    cache2 = dotcourse._pins.PinCache(lib2, 2, 1 << 30)
    arrays = [np.ones(1 << 18, np.float32) for _ in range(3)]
    for _ in range(8):
        for a in arrays:
            _see(cache2, a)
    assert cache2.stopped and len(lib2.registered) <= 2
    # The byte bound: nothing over pin_bytes is registered.
    lib3 = _FakeLib()
    cache3 = dotcourse._pins.PinCache(lib3, 4, 1 << 20)
    big = np.ones(1 << 19, np.float32)  # 2 MiB
    _see(cache3, big, big, big)
    assert lib3.registered == {}

N_PIN = (1 << 20) + 3  # over the cache's 1 MiB floor


def test_pin_cache_same_arrays_registered_and_following_their_values(ctx):
    x, y, ref, bound = inputs(N_PIN, 11)
    assert abs(ctx.dot(x, y, where="gpu") - ref) <= bound  # first sighting: staged
    assert ctx.pinned() == 0
    for _ in range(3):                         # from the second call on: registered, copied directly
        assert abs(ctx.dot(x, y, where="gpu") - ref) <= bound
    assert ctx.pinned() == 2
    x2, y2, ref2, bound2 = inputs(N_PIN, 12)
    x[:], y[:] = x2, y2                        # new values in the same (registered) memory
    assert abs(ctx.dot(x, y, where="gpu") - ref2) <= bound2
    ctx.unpin()
    assert ctx.pinned() == 0
    assert abs(ctx.dot(x, y, where="gpu") - ref2) <= bound2


def test_pin_cache_fresh_arrays_are_never_registered(ctx):
    x, y, ref, bound = inputs(N_PIN, 13)
    for _ in range(4):
        assert abs(ctx.dot(x.copy(), y.copy()) - ref) <= bound
    assert ctx.pinned() == 0


def test_pin_cache_is_bounded_and_releases_arrays():
    import gc
    import weakref
    why = gpu_reason()
    if why:
        pytest.skip(why)
    with dotcourse.Context(N_PIN, pin_arrays=2) as c:
        pairs = [inputs(N_PIN, 20 + k) for k in range(3)]
        first = weakref.ref(pairs[0][0])
        for x, y, ref, bound in pairs:
            for _ in range(6):  # used often enough not to count as churn
                assert abs(c.dot(x, y, where="gpu") - ref) <= bound
                assert c.pinned() <= 2
        del pairs, x, y
        gc.collect()
        assert first() is None, "an evicted array must not be kept alive by the cache"
        assert c.pinned() == 2
    # close() unregistered the rest: the memory can be registered by a new context.


def test_pin_cache_off_and_rotating_arrays(ctx):
    with dotcourse.Context(N_PIN, pin_arrays=0) as c:
        x, y, ref, bound = inputs(N_PIN, 30)
        for _ in range(3):
            assert abs(c.dot(x, y, where="gpu") - ref) <= bound
        assert c.pinned() == 0
    with dotcourse.Context(N_PIN, pin_arrays=2) as c:  # 3 pairs in turn through a cache of 2 arrays
        pairs = [inputs(N_PIN, 40 + k) for k in range(3)]
        for _ in range(6):
            for x, y, ref, bound in pairs:
                assert abs(c.dot(x, y, where="gpu") - ref) <= bound
        assert c.pinned() <= 2


def test_pin_cache_awkward_arrays(ctx):
    x, y, ref, bound = inputs(N_PIN, 50)
    buf = np.concatenate([x, y])           # views of one buffer: they share a page
    vx, vy = buf[:N_PIN], buf[N_PIN:]
    ro = x.copy()
    ro.setflags(write=False)               # read-only memory
    sq = x.astype(np.float64) ** 2
    xx = float(sq.sum())
    xx_bound = (math.exp(8 * math.sqrt(N_PIN) * U + N_PIN * U * U / (1 - U)) - 1) * xx
    for _ in range(3):
        assert abs(ctx.dot(vx, vy, where="gpu") - ref) <= bound
        assert abs(ctx.dot(ro, y, where="gpu") - ref) <= bound
        assert abs(ctx.dot(x, x, where="gpu") - xx) <= xx_bound
    with pytest.raises(TypeError, match="float32"):   # a dtype outside chapter 10's pairs
        ctx.dot(x.astype(np.int64), y.astype(np.int64))
    with pytest.raises(ValueError, match="contiguous"):
        ctx.dot(buf[::2], buf[1::2], where="gpu")


def test_torch_fast_path_checks(ctx):
    torch = _torch()
    x, y, ref, bound = inputs(5000, 60)
    dx = torch.from_numpy(x).cuda().requires_grad_()
    dy = torch.from_numpy(y).cuda()
    assert abs(ctx.dot(dx, dy) - ref) <= bound    # requires_grad: read as it is
    with pytest.raises(TypeError, match="float32"):   # a dtype outside chapter 10's pairs
        ctx.dot(dy.long(), dy.long())
    with pytest.raises(ValueError, match="1-D"):
        ctx.dot(dy.reshape(50, 100), dy.reshape(50, 100))
    with pytest.raises(ValueError, match="contiguous"):
        ctx.dot(dy[::2], dy[::2])
    with pytest.raises(TypeError):
        ctx.dot(torch.from_numpy(x), torch.from_numpy(y))  # CPU tensors are not NumPy arrays
