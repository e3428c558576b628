"""Context: one GPU context of the library, and its dot product of any two arrays."""
from __future__ import annotations

import ctypes
from typing import Any, Dict, Optional, Tuple, Union


from . import _arrays as A
from . import _errors as E
from . import _lib
from ._ints import INT_MAX, SIZE_MAX, index
from ._lib import check
from ._pins import PIN_MIN, PinCache

from typing import SupportsIndex

_ndarray: Any = None
_F32: Any = None  # numpy.dtype(numpy.float32): a float32 array's dtype is this object, compared by identity


def _numpy_fast() -> None:
    global _ndarray, _F32
    np = A.numpy()
    _ndarray, _F32 = np.ndarray, np.dtype(np.float32)


_accumulators: Dict[Tuple[int, int, int], int] = {}  # (id(lib), tx, ty) -> the library's answer


def accumulator(lib: Any, tx: int, ty: int) -> Tuple[int, int]:
    """(status, accumulator dtype) of a pair, asked of the library once per pair (the rule lives in
    the library, dotcourse_accumulator, and does not change)."""
    key = (id(lib), tx, ty)
    acc = _accumulators.get(key)
    if acc is not None:
        return 0, acc
    out = ctypes.c_int()
    status = lib.dotcourse_accumulator(tx, ty, ctypes.byref(out))
    if status == 0:
        _accumulators[key] = out.value
    return status, out.value


def check_host_arrays(x: Any, y: Any, n_max: SupportsIndex) -> int:
    """Checks two host arrays as Context.dot does, without a GPU or the library.

    Parameters
    ----------
    x, y : numpy.ndarray or object with ``__array_interface__``
        1-D contiguous vectors of equal length, each of float64, float32, float16, bfloat16 (with
        ml_dtypes), int8 or bool (the two dtypes may differ).
    n_max : int
        The context's n_max.

    Returns
    -------
    int
        n, the common length.

    Raises
    ------
    TypeError
        Not a host array, or a dtype dotcourse does not take.
    InvalidArgumentError
        Not 1-D, not contiguous, or unequal lengths (a ValueError).
    TooLargeError
        n > n_max (a ValueError).
    """
    n_max = index("n_max", n_max, 1, SIZE_MAX)
    views = []
    try:
        for name, a in (("x", x), ("y", y)):
            v: A.Vector = A.vector(name, a)
            views.append(v)
            if v.on_device:
                raise TypeError(f"{name} is a CUDA array; check_host_arrays checks host arrays")
        vx, vy = views
        if vx.n != vy.n:
            raise E.unequal_lengths(vx.n, vy.n)
        if vx.n > n_max:
            raise E.too_large(vx.n, n_max)
        return vx.n
    finally:
        for v in views:
            if v.release is not None:
                v.release()


class Context:
    """One GPU context of the library: device memory for vectors of up to n_max elements, allocated
    once, and the registration cache of its NumPy arrays.

    Use it as a context manager, or call close().

    Parameters
    ----------
    n_max : int
        The largest n a host dot will be given (1 <= n_max < 2**64); any integer type
        (``numpy.int64(1024)`` too). Device arrays are not limited by it.
    device : int, optional
        The CUDA device (default 0).
    pin_arrays : int, optional
        How many NumPy arrays the registration cache may keep registered (default 4; 0 turns it off).
    pin_bytes : int, optional
        How many bytes it may keep registered (default 1 GiB).

    Raises
    ------
    TypeError
        An argument is not an integer.
    InvalidArgumentError
        An argument is out of range (a ValueError); nothing was allocated.
    NoGpuError
        No usable CUDA device, or no device with that number.
    OutOfMemoryError
        n_max does not fit on the device (a MemoryError).
    OSError
        libdotcourse.so was not found (see ``library_path``).

    Examples
    --------
    >>> with dotcourse.Context(n_max=1 << 20) as ctx:      # doctest: +SKIP
    ...     ctx.dot(x, y)
    """

    _handle: Optional[ctypes.c_void_p] = None  # set last: close() and __del__ work after a failed __init__

    def __init__(self, n_max: SupportsIndex, device: SupportsIndex = 0, pin_arrays: SupportsIndex = 4,
                 pin_bytes: SupportsIndex = 1 << 30) -> None:
        n_max = index("n_max", n_max, 1, SIZE_MAX)
        device = index("device", device, 0, INT_MAX)
        pin_arrays = index("pin_arrays", pin_arrays, 0, INT_MAX)
        pin_bytes = index("pin_bytes", pin_bytes, 0, SIZE_MAX)
        lib = _lib.load()
        handle = ctypes.c_void_p()
        check(lib, lib.dotcourse_create(device, n_max, ctypes.byref(handle)))
        self._lib = lib
        self.n_max: int = n_max
        self.device: int = device
        self._dot_host = lib.dotcourse_dot
        self._dot_device = lib.dotcourse_dot_device
        self._dot_typed_host = lib.dotcourse_dot_typed_host
        self._dot_typed = lib.dotcourse_dot_typed
        self._pins = PinCache(lib, handle, pin_arrays, pin_bytes)
        self._handle = handle

    def __repr__(self) -> str:
        state = "closed" if self._handle is None else f"{self.pinned()} arrays pinned"
        return f"<dotcourse.Context n_max={getattr(self, 'n_max', '?')} device={getattr(self, 'device', '?')} {state}>"

    def close(self) -> None:
        """Unregisters the pinned arrays and destroys the context (idempotent).

        Raises
        ------
        DotcourseError
            The library failed to unregister or destroy (the context is closed all the same).
        """
        handle = self._handle
        if handle is None:
            return
        self._handle = None
        try:
            self._pins.clear()
        finally:
            check(self._lib, self._lib.dotcourse_destroy(handle))

    def unpin(self) -> None:
        """Unregisters and releases every array the registration cache holds.

        Raises
        ------
        InvalidHandleError
            The context is closed.
        """
        self._live()
        self._pins.clear()

    def pinned(self) -> int:
        """How many NumPy arrays the registration cache holds registered now.

        Returns
        -------
        int
            0 for a closed context.
        """
        return len(self._pins.entries) if self._handle is not None else 0

    def __enter__(self) -> "Context":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def _live(self) -> ctypes.c_void_p:
        handle = self._handle
        if handle is None:
            raise E.closed()
        return handle

    def dot(self, x: Any, y: Any) -> Union[float, int]:
        """x·y, computed on the context's GPU.

        Parameters
        ----------
        x, y : array
            Two 1-D contiguous vectors of equal length, both on the host or both on the GPU, each of
            float64, float32, float16, bfloat16, int8 or bool (the two may differ; the library
            accumulates in the pair's type: dotcourse_accumulator in dotcourse.h).
            Host: NumPy arrays or objects with ``__array_interface__``; copied to the GPU, n at most
            n_max; NumPy float32 arrays passed again are pinned (the registration cache).
            GPU: CuPy arrays, PyTorch CUDA tensors, ``__cuda_array_interface__`` or DLPack (versioned
            or legacy) producers; not copied; computed on the producer's stream (PyTorch's and CuPy's
            current stream, CAI v3's ``stream``), on the context's device.

        Returns
        -------
        float or int
            A Python float; a Python int, exact, for two integer inputs (int8, bool).

        Raises
        ------
        TypeError
            Not an array dotcourse reads, a dtype it does not take, or one array on the host and the
            other on the GPU.
        InvalidArgumentError
            Not 1-D, not contiguous, misaligned, unequal lengths, another device, different streams
            (a ValueError).
        TooLargeError
            A host n larger than n_max (a ValueError).
        InvalidHandleError
            The context is closed (a ValueError).
        DotcourseError
            Any failure inside the library (CudaError, OutOfMemoryError, ...).
        """
        handle = self._handle
        if handle is None:
            raise E.closed()
        if _ndarray is None:
            _numpy_fast()
        # The common case, float32 NumPy vectors, with the fewest Python steps: a binding's own work is
        # what a caller pays on every call (the target: at most 10 us over the same call from C++).
        if type(x) is _ndarray and type(y) is _ndarray and x.dtype is _F32 and y.dtype is _F32 \
                and x.ndim == 1 and y.ndim == 1 and x.flags.c_contiguous and y.flags.c_contiguous \
                and x.shape[0] == y.shape[0]:
            n = x.shape[0]
            if n > self.n_max:
                raise E.too_large(n, self.n_max)
            return self._host_float32(handle, x, y, n)
        return self._dot_any(handle, x, y)

    def _host_float32(self, handle: Any, x: Any, y: Any, n: int) -> float:
        pins = self._pins
        if pins.capacity and x.nbytes >= PIN_MIN:
            with pins.lock:  # the cache's bookkeeping; the call itself runs outside the lock
                px = pins.known(x)
                if px is None:
                    px = x.ctypes.data
                    pins.see(x, px)
                py = px if y is x else pins.known(y)
                if py is None:
                    py = y.ctypes.data
                    if py != px:
                        pins.see(y, py)
        else:
            px, py = x.ctypes.data, y.ctypes.data
        result = ctypes.c_float()
        status = self._dot_host(handle, px, py, n, ctypes.byref(result))
        if status != 0:
            check(self._lib, status)
        return float(result.value)

    def _dot_any(self, handle: Any, x: Any, y: Any) -> Union[float, int]:
        """Every other pair: one adapter for every producer and dtype, one wording per error."""
        vx: Optional[A.Vector] = None
        vy: Optional[A.Vector] = None
        try:
            vx = A.vector("x", x)
            vy = A.vector("y", y)
            if vx.on_device != vy.on_device:
                raise E.mixed_places()
            n = vx.n
            if n != vy.n:
                raise E.unequal_lengths(n, vy.n)
            tx, ty = vx.dtype, vy.dtype
            if not vx.on_device:
                if n > self.n_max:
                    raise E.too_large(n, self.n_max)
                if tx == ty == A.FLOAT32:
                    return self._host_float32(handle, vx.host_array, vy.host_array, n)
                result = ctypes.c_double()
                check(self._lib, self._dot_typed_host(handle, vx.ptr, tx, vy.ptr, ty, n, ctypes.byref(result)))
            else:
                for name, v in (("x", vx), ("y", vy)):
                    if v.device_id is not None and v.device_id != self.device:
                        raise E.InvalidArgumentError(E.Status.INVALID_ARGUMENT,
                                                     f"{name} is on GPU {v.device_id} and this context on GPU "
                                                     f"{self.device}: create a Context on that device")
                sx, sy = vx.stream, vy.stream
                if sx and sy and sx != sy:
                    raise E.mixed_streams()
                stream = sx or sy or None
                if tx == ty == A.FLOAT32:
                    result32 = ctypes.c_float()
                    check(self._lib, self._dot_device(handle, vx.ptr, vy.ptr, n, stream, ctypes.byref(result32)))
                    return float(result32.value)
                result = ctypes.c_double()
                check(self._lib, self._dot_typed(handle, vx.ptr, tx, vy.ptr, ty, n, stream, ctypes.byref(result)))
        finally:
            for w in (vx, vy):
                if w is not None and w.release is not None:
                    w.release()
        status, acc = accumulator(self._lib, tx, ty)
        check(self._lib, status)
        return int(result.value) if acc == A.INT64 else float(result.value)
