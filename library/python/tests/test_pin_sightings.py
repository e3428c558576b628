"""The extension's fast path keeps the registration cache's first sightings itself (core.cpp,
sighting()): it calls Python's side (Context._pin_seen) only for an array it saw before or one at a
registered address. Here on a CPU-only context with the cache switched on by hand and _pin_seen
replaced by a recorder, so that no GPU is needed: which calls reach Python, and with what."""
import numpy as np
import pytest

import dotcourse

N = (1 << 18) + 5  # 1 MiB and a little: over the cache's floor (_pins.PIN_MIN)


@pytest.fixture
def spied():
    ctx = dotcourse.Context(1, device="cpu", cpu_threads=2, calibration="none")
    calls = []
    ctx._pin_seen = lambda x, px, sx, y, py, sy: calls.append((x, px, sx, y, py, sy))
    ctx._core.set_fast(0, 0, 0, 1)  # NumPy's window empty; every n wants the GPU; a cache of 1: 4 notes
    yield ctx, calls
    ctx.close()


def ptr(a):
    return a.__array_interface__["data"][0]


def test_fresh_arrays_never_reach_python(spied):
    ctx, calls = spied
    x, y = np.ones(N, np.float32), np.full(N, 2, np.float32)
    for _ in range(5):
        assert ctx.dot(x.copy(), y.copy()) == pytest.approx(2 * N)
    assert calls == []


def test_the_same_arrays_reach_python_on_their_second_call(spied):
    ctx, calls = spied
    x, y = np.ones(N, np.float32), np.full(N, 2, np.float32)
    ctx.dot(x, y)
    assert calls == []
    ctx.dot(x, y)
    [(cx, px, sx, cy, py, sy)] = calls
    assert (cx is x, px, sx, cy is y, py, sy) == (True, ptr(x), 1, True, ptr(y), 1)
    # Nothing registered them (no GPU here): the next call is a first sighting again.
    ctx.dot(x, y)
    assert len(calls) == 1


def test_another_array_at_the_same_address_is_new(spied):
    ctx, calls = spied
    buf = np.ones(N, np.float32)
    y = np.ones(N, np.float32)
    a = buf[:]
    ctx.dot(a, y)
    b = buf[:]  # the same memory, another object: not a's second sighting
    assert ptr(b) == ptr(a) and b is not a
    ctx.dot(b, y)
    assert [c[2] for c in calls] == [0]  # y's second sighting only
    ctx.dot(a, y)  # a's note was dropped for b's, and y's at its second sighting: both new again
    assert len(calls) == 1


def test_one_array_twice_is_one_sighting(spied):
    ctx, calls = spied
    x = np.ones(N, np.float32)
    ctx.dot(x, x)
    ctx.dot(x, x)
    [(cx, _, sx, cy, _, sy)] = calls
    assert (cx is x, sx, cy is x, sy) == (True, 1, True, 0)


def test_the_notes_are_four_times_the_cache(spied):
    ctx, calls = spied
    arrays = [np.ones(N, np.float32) for _ in range(5)]
    for _ in range(2):  # 5 arrays in turn (each as x and y: one note a call) through 4 notes
        for a in arrays:
            ctx.dot(a, a)
    assert calls == []  # each was gone before it came back
    ctx._core.set_fast(0, 0, 0, 2)  # 8 notes: the second round finds every array
    for _ in range(2):
        for a in arrays:
            ctx.dot(a, a)
    assert [c[0] for c in calls] == arrays


def test_off_below_the_floor_and_where_cpu(spied):
    ctx, calls = spied
    small = np.ones((1 << 18) - 1, np.float32)  # just under 1 MiB
    x = np.ones(N, np.float32)
    for _ in range(3):
        ctx.dot(small, small)
        ctx.dot(x, x, where="cpu")  # the CPU asked for: the cache has nothing to do
    ctx._core.set_fast(0, 0, 0, 0)  # the cache off
    for _ in range(3):
        ctx.dot(x, x)
    assert calls == []


class Lib:
    """The Core's register/unregister, recorded (registration needs a GPU)."""

    def __init__(self):
        self.registered = {}

    def register(self, p, nbytes):
        self.registered[p] = nbytes
        return 0

    def unregister(self, p):
        del self.registered[p]


def test_pin_seen_acts_on_each_flag():
    ctx = dotcourse.Context(1, device="cpu", calibration="none")
    lib = Lib()
    ctx._pins = dotcourse._pins.PinCache(lib, 2, 1 << 30)
    x, y, z = (np.ones(N, np.float32) for _ in range(3))
    ctx._pin_seen(x, ptr(x), 1, y, ptr(y), 0)  # x seen before: registered; y: nothing to do
    assert lib.registered == {ptr(x): x.nbytes}
    ctx._pin_seen(x, ptr(x), 2, y, ptr(y), 1)  # x at a registered address: one more use; y registered
    assert ctx._pins.entries[(ptr(x), x.nbytes)][1] == 2 and ptr(y) in lib.registered
    view = x[:]  # another object at x's registered address: Python's own first sighting, no new registration
    ctx._pin_seen(view, ptr(x), 2, z, ptr(z), 0)
    assert set(lib.registered) == {ptr(x), ptr(y)} and ctx._pins.entries[(ptr(x), x.nbytes)][1] == 2
    ctx.close()


def test_pin_cache_second_registers_as_see_does():
    lib = Lib()
    cache = dotcourse._pins.PinCache(lib, 2, 1 << 30)
    x = np.ones(N, np.float32)
    cache.second(x, ptr(x))
    assert lib.registered == {ptr(x): x.nbytes}
    cache.second(x, ptr(x))  # known: one more use, nothing new
    assert lib.registered == {ptr(x): x.nbytes} and cache.entries[(ptr(x), x.nbytes)][1] == 2
