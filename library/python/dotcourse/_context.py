"""Context: one GPU context of the library, and its dot product of any two arrays."""
from __future__ import annotations

import ctypes
import statistics
import time
import warnings
from typing import Any, Dict, List, Optional, Tuple, Union

from . import _arrays as A
from . import _auto
from . import _errors as E
from . import _lib
from ._ints import INT_MAX, SIZE_MAX, index
from ._lib import check
from ._pins import PIN_MIN, PinCache

from typing import SupportsIndex

_ndarray: Any = None
_F32: Any = None  # numpy.dtype(numpy.float32): a float32 array's dtype is this object, compared by identity
_np_dot: Any = None

_WHERE = _auto.WHERE
_WHERE_NAMES = {v: k for k, v in _WHERE.items()}
_OPTIONS = {code: _auto.options(code) for code in _WHERE.values()}  # read-only: shared by every call
_OPTIONS_REF = {code: ctypes.byref(o) for code, o in _OPTIONS.items()}
_Report = _auto.Report
_REPORT_SIZE = ctypes.sizeof(_auto.Report)
_view = (ctypes.c_char * 0).from_buffer  # a ctypes view of an array's memory, passed as its address


def _numpy_fast() -> None:
    global _ndarray, _F32, _np_dot
    np = A.numpy()
    _ndarray, _F32, _np_dot = np.ndarray, np.dtype(np.float32), np.dot


def plan_choose(rows: List[Dict[str, Any]], n: SupportsIndex, registered: bool = False) -> Tuple[str, int]:
    """The library's choice for a host dot of n elements under a plan (``dotcourse_plan_choose``).

    A pure function of its arguments: it needs no GPU and no Context.

    Parameters
    ----------
    rows : list of dict
        The plan's rows, as ``Context.plan["rows"]`` gives them: ``n_min``, ``registered``,
        ``path`` ("cpu", "gpu" or "split"), ``gpu_share`` (0 < share < 1 for "split").
    n : int
        Elements (0 <= n < 2**64).
    registered : bool, optional
        Whether both arrays lie in registered ranges.

    Returns
    -------
    (str, int)
        The path ("cpu", "gpu" or "split") and how many elements go to the GPU.

    Raises
    ------
    ValueError
        A row is not a row, or the rows are not a plan (out of order, a share outside (0, 1));
        InvalidArgumentError for the latter.
    OSError
        The library could not be found or loaded.
    """
    n = index("n", n, 0, SIZE_MAX)
    lib = _lib.load()
    plan = _auto.new_plan()
    _auto.set_rows(plan, rows)
    path, n_gpu = ctypes.c_int(), ctypes.c_size_t()
    check(lib, lib.dotcourse_plan_choose(ctypes.byref(plan), n, 1 if registered else 0, ctypes.byref(path),
                                         ctypes.byref(n_gpu)))
    return _auto.PATHS[path.value], int(n_gpu.value)


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
    """One context of the library: device memory for vectors of up to n_max elements, allocated
    once, the registration cache of its NumPy arrays, and the CPU dot's threads.

    A host dot runs where it finishes soonest (``dot(x, y, where="auto")``): NumPy's own dot for
    small n, the library's threaded CPU dot, the GPU, or both at once on two parts, as the context's
    plan says. The plan is measured by ``calibrate()`` and cached per host and device (loaded here
    when one exists); without one, the built-in rule: the CPU at every n.

    Use it as a context manager, or call close().

    Parameters
    ----------
    n_max : int
        The largest n a host dot on the GPU will be given (1 <= n_max < 2**64); any integer type
        (``numpy.int64(1024)`` too). Device arrays and ``where="cpu"`` are not limited by it.
    device : int or "cpu", optional
        The CUDA device (default 0), or "cpu": a context without a GPU (every host float32 dot on
        the CPU, any n; a GPU function raises NoGpuError).
    pin_arrays : int, optional
        How many NumPy arrays the registration cache may keep registered (default 4; 0 turns it off).
    pin_bytes : int, optional
        How many bytes it may keep registered (default 1 GiB).
    cpu_threads : int, optional
        Threads of the CPU dot (default 0: ``$DOTCOURSE_CPU_THREADS``, else one per hardware thread).
    calibration : {"cache", "none"}, optional
        "cache" (default): use this host's and device's cached calibration when there is one
        (see ``calibrate``); "none": the built-in rule until ``calibrate()`` or ``set_plan()``.

    Raises
    ------
    TypeError
        An argument is not an integer.
    ValueError
        device is a string other than "cpu", or calibration is not "cache" or "none".
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
    ...     ctx.last_call.path                              # "numpy", "cpu", "gpu" or "split"
    >>> with dotcourse.Context(1, device="cpu") as cpu:    # doctest: +SKIP
    ...     cpu.dot(x, y, where="cpu")
    """

    _handle: Optional[ctypes.c_void_p] = None  # set last: close() and __del__ work after a failed __init__
    _numpy_below: int = _auto.NUMPY_BELOW
    _pin_from: Optional[int] = None  # the smallest n where the plan sends registered arrays to the GPU
    _last: Any = None

    def __init__(self, n_max: SupportsIndex, device: Union[SupportsIndex, str] = 0, pin_arrays: SupportsIndex = 4,
                 pin_bytes: SupportsIndex = 1 << 30, *, cpu_threads: SupportsIndex = 0,
                 calibration: str = "cache") -> None:
        n_max = index("n_max", n_max, 1, SIZE_MAX)
        cpu_only = isinstance(device, str)
        if cpu_only and device != "cpu":
            raise ValueError(f"device must be a CUDA device number or 'cpu', not {device!r}")
        device_id = -1 if cpu_only else index("device", device, 0, INT_MAX)
        pin_arrays = index("pin_arrays", pin_arrays, 0, INT_MAX)
        pin_bytes = index("pin_bytes", pin_bytes, 0, SIZE_MAX)
        cpu_threads = index("cpu_threads", cpu_threads, 0, 1024)
        if calibration not in ("cache", "none"):
            raise ValueError(f"calibration must be 'cache' or 'none', not {calibration!r}")
        lib = _lib.load()
        handle = ctypes.c_void_p()
        if cpu_only:
            check(lib, lib.dotcourse_create_cpu(cpu_threads, ctypes.byref(handle)))
        else:
            check(lib, lib.dotcourse_create(device_id, n_max, ctypes.byref(handle)))
        self._lib = lib
        self.n_max: int = SIZE_MAX if cpu_only else n_max
        self.device: Union[int, str] = "cpu" if cpu_only else device_id
        self._dot_host = lib.dotcourse_dot
        self._dot_ex = lib.dotcourse_dot_ex
        self._dot_device = lib.dotcourse_dot_device
        self._dot_typed_host = lib.dotcourse_dot_typed_host
        self._dot_typed = lib.dotcourse_dot_typed
        self._pins = PinCache(lib, handle, 0 if cpu_only else pin_arrays, pin_bytes)
        self._handle = handle
        if calibration == "cache":
            self._load_cached()

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

    # ---- where a host dot runs ------------------------------------------------------------------

    @property
    def last_call(self) -> Optional[_auto.LastCall]:
        """What the last dot on this Context did (from any thread): a ``LastCall`` with the path
        ("numpy", "cpu", "gpu", "split", "device" or "typed"), the elements on the CPU and on the
        GPU, the CPU threads, whether the arrays were registered and the plan calibrated, the time
        inside the library, and the reason in words. None before the first dot."""
        last = self._last
        if last is None or isinstance(last, _auto.LastCall):
            return last
        if type(last) is int:
            return _auto.numpy_call(last, self._numpy_below)
        where, n, report = last
        return _auto.from_report(where, n, report)

    def _get_plan(self) -> _auto.Plan:
        plan = _auto.new_plan()
        check(self._lib, self._lib.dotcourse_get_plan(self._live(), ctypes.byref(plan)))
        return plan

    @property
    def plan(self) -> Dict[str, Any]:
        """The context's plan: ``calibrated`` (bool), ``device`` (the GPU's name, "" for a CPU-only
        context), ``cpu_threads``, ``numpy_below`` (below this n, "auto" calls NumPy's own dot) and
        ``rows`` (dicts: ``n_min``, ``registered``, ``path``, ``gpu_share``; no row: the CPU).

        Raises
        ------
        InvalidHandleError
            The context is closed.
        """
        plan = self._get_plan()
        return {"calibrated": bool(plan.calibrated), "device": plan.device.decode(errors="replace"),
                "cpu_threads": int(plan.cpu_threads), "numpy_below": self._numpy_below,
                "rows": _auto.plan_rows(plan)}

    def set_plan(self, rows: List[Dict[str, Any]], numpy_below: Optional[SupportsIndex] = None,
                 calibrated: bool = True) -> None:
        """Replaces the context's plan (rows as ``plan["rows"]`` gives them; ``[]``: the built-in rule).

        Parameters
        ----------
        rows : list of dict
            ``n_min``, ``registered``, ``path`` ("cpu", "gpu", "split"), ``gpu_share``.
        numpy_below : int, optional
            Below this n, "auto" calls NumPy's own dot (0: never); unchanged when None.
        calibrated : bool, optional
            Whether the rows were measured (reported by ``last_call.calibrated``).

        Raises
        ------
        ValueError
            A row is not a row; InvalidArgumentError (a ValueError) for rows that are not a plan.
        InvalidHandleError
            The context is closed.
        """
        handle = self._live()
        plan = _auto.new_plan()
        _auto.set_rows(plan, rows)
        plan.calibrated = 1 if calibrated else 0
        below = None if numpy_below is None else index("numpy_below", numpy_below, 0, SIZE_MAX)
        check(self._lib, self._lib.dotcourse_set_plan(handle, ctypes.byref(plan)))
        if below is not None:
            self._numpy_below = below
        self._pin_from = min((r["n_min"] for r in _auto.plan_rows(plan) if r["registered"] and r["path"] != "cpu"),
                             default=None)

    def _load_cached(self) -> None:
        plan = self._get_plan()
        device_name = plan.device.decode(errors="replace")
        path = _auto.cache_path(device_name)
        data = _auto.load(path, device_name, int(plan.cpu_threads))
        if data is None:
            return
        try:
            self.set_plan(data.get("rows", []) if self.device != "cpu" else [], data.get("numpy_below"),
                          calibrated=True)
        except (ValueError, TypeError, E.DotcourseError) as e:
            warnings.warn(f"dotcourse: ignoring the calibration cache {path}: {e}", RuntimeWarning, stacklevel=3)

    def calibrate(self, n_limit: SupportsIndex = 1 << 26, save: bool = True) -> Dict[str, Any]:
        """Measures where a host dot finishes soonest on this host and GPU, and makes it the plan.

        The library (``dotcourse_calibrate``) times the CPU, the GPU and both at once on several
        shares, with arrays staged and registered, at n = 2^12, 2^14, ... up to
        min(n_limit, n_max, 2^26); this method also times NumPy's own dot against a call into the
        library for small n (``numpy_below``). Takes a few seconds. A CPU-only context measures only
        ``numpy_below``.

        Parameters
        ----------
        n_limit : int, optional
            The largest n to measure (at least 4096 on a GPU context).
        save : bool, optional
            Keep the result in the cache (``$DOTCOURSE_CALIBRATION``, else
            ``~/.cache/dotcourse/<host>-<gpu>.json``), which every new Context of this host and
            device loads.

        Returns
        -------
        dict
            The new plan, as ``plan`` gives it.

        Raises
        ------
        InvalidArgumentError
            n_limit or n_max below 4096 (a ValueError).
        InvalidHandleError
            The context is closed.
        DotcourseError
            Any failure inside the library.
        """
        handle = self._live()
        n_limit = index("n_limit", n_limit, 0, SIZE_MAX)
        if self.device != "cpu":
            plan = _auto.new_plan()
            check(self._lib, self._lib.dotcourse_calibrate(handle, n_limit, ctypes.byref(plan)))
            self._pin_from = min((r["n_min"] for r in _auto.plan_rows(plan) if r["registered"] and r["path"] != "cpu"),
                                 default=None)
        self._numpy_below = self._measure_numpy_below()
        result = self.plan
        if save:
            data = dict(result, version=_auto.CACHE_VERSION, host=_auto.socket.gethostname(), library=_lib.version())
            _auto.save(_auto.cache_path(result["device"]), data)
        return result

    def _measure_numpy_below(self) -> int:
        """The smallest n from which a call into the library (where="cpu") beats NumPy's own dot at
        every size measured (2^8 to 2^20, medians of calls taken in turns). Each call gets fresh
        copies of its arrays, made outside the timed region, as a program that makes new arrays
        does: the copy also lets the CPU dot's threads fall asleep between calls, as they do in use."""
        np = A.numpy()
        rng = np.random.default_rng(26)
        sizes = [1 << k for k in range(8, 21)]
        wins = []
        for n in sizes:
            x = rng.standard_normal(n).astype(np.float32)
            y = rng.standard_normal(n).astype(np.float32)
            reps = max(15, min(301, (1 << 22) // n))
            t_np, t_lib = [], []
            clock = time.perf_counter
            for r in range(reps + 5):
                a, b = x.copy(), y.copy()
                t0 = clock()
                np.dot(a, b)
                t1 = clock()
                a, b = x.copy(), y.copy()
                t2 = clock()
                self.dot(a, b, where="cpu")
                t3 = clock()
                if r >= 5:
                    t_np.append(t1 - t0)
                    t_lib.append(t3 - t2)
            wins.append(statistics.median(t_lib) < statistics.median(t_np))
        below = sizes[-1] * 2
        for n, win in zip(reversed(sizes), reversed(wins)):
            if not win:
                break
            below = n
        return below

    def dot(self, x: Any, y: Any, where: str = "auto") -> Union[float, int]:
        """x·y, where it finishes soonest (host float32 pairs) or on the context's GPU.

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
        where : {"auto", "cpu", "gpu"}, optional
            For two float32 host arrays: "auto" (default) takes the context's plan (see ``plan``,
            ``calibrate``): NumPy's own dot for small n, the library's threaded CPU dot, the GPU, or
            both at once; "cpu" the threaded CPU dot (no GPU needed, n not limited by n_max); "gpu"
            the GPU. Other host dtypes and device arrays take the GPU ("auto" or "gpu"; "cpu" is
            refused). ``last_call`` says what ran.

        Returns
        -------
        float or int
            A Python float; a Python int, exact, for two integer inputs (int8, bool).

        Raises
        ------
        TypeError
            Not an array dotcourse reads, a dtype it does not take, or one array on the host and the
            other on the GPU.
        ValueError
            where is not "auto", "cpu" or "gpu".
        InvalidArgumentError
            Not 1-D, not contiguous, misaligned, unequal lengths, another device, different streams
            (a ValueError).
        TooLargeError
            A host n larger than n_max on the GPU ("auto" or "gpu"; a ValueError).
        InvalidHandleError
            The context is closed (a ValueError).
        NoGpuError
            where="gpu", a dtype other than float32, or device arrays on a CPU-only context.
        DotcourseError
            Any failure inside the library (CudaError, OutOfMemoryError, ...).
        """
        if where == "auto":  # the default object: an identity test, the cheapest
            code = 0
        else:
            code = _WHERE.get(where) if type(where) is str else None  # type: ignore[call-overload]
            if code is None:
                raise ValueError(f"where must be 'auto', 'cpu' or 'gpu', not {where!r}")
        handle = self._handle
        if handle is None:
            raise E.closed()
        if _ndarray is None:
            _numpy_fast()
        # The common case, float32 NumPy vectors, with the fewest Python steps: a binding's own work is
        # what a caller pays on every call (for small n, NumPy's whole dot takes about a microsecond).
        if type(x) is _ndarray and type(y) is _ndarray:
            shape = x.shape
            if shape == y.shape and len(shape) == 1 and x.dtype is _F32 and y.dtype is _F32 \
                    and x.flags.c_contiguous and y.flags.c_contiguous:
                n = shape[0]
                if code != 1 and n > self.n_max:
                    raise E.too_large(n, self.n_max)
                if code == 0 and n < self._numpy_below:  # a call into the library costs more than this
                    self._last = n
                    return float(_np_dot(x, y))
                return self._host_float32(handle, x, y, n, code)
        return self._dot_any(handle, x, y, code)

    def _host_float32(self, handle: Any, x: Any, y: Any, n: int, code: int = 0) -> float:
        pins = self._pins
        # Registering pays only where the GPU will read the arrays: where="gpu", or a plan that sends
        # registered arrays of this n to the GPU.
        pin_from = self._pin_from
        wants_gpu = code == 2 or (code == 0 and pin_from is not None and n >= pin_from)
        if wants_gpu and pins.capacity and x.nbytes >= PIN_MIN:
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
            # A zero-length ctypes view of each array's buffer: ctypes passes its address, and it
            # costs a fifth of reading x.ctypes.data. Read-only arrays export no writable buffer.
            try:
                px = _view(x)
            except TypeError:
                px = x.ctypes.data
            try:
                py = _view(y)
            except TypeError:
                py = y.ctypes.data
        result = ctypes.c_float()
        report = _Report(_REPORT_SIZE)
        status = self._dot_ex(handle, px, py, n, _OPTIONS_REF[code], ctypes.byref(result), ctypes.byref(report))
        if status != 0:
            check(self._lib, status)
        self._last = (_WHERE_NAMES[code], n, report)
        return float(result.value)

    def _dot_any(self, handle: Any, x: Any, y: Any, code: int = 0) -> Union[float, int]:
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
            if code == 1 and (vx.on_device or not tx == ty == A.FLOAT32):
                raise E.InvalidArgumentError(E.Status.INVALID_ARGUMENT,
                                             "where='cpu' takes two float32 host arrays; device arrays and other "
                                             "dtypes are computed on the GPU (where='auto' or 'gpu')")
            if not vx.on_device:
                if tx == ty == A.FLOAT32:
                    if code != 1 and n > self.n_max:
                        raise E.too_large(n, self.n_max)
                    return self._host_float32(handle, vx.host_array, vy.host_array, n, code)
                if n > self.n_max:
                    raise E.too_large(n, self.n_max)
                self._last = _auto.other_call(_WHERE_NAMES[code], "typed", n,
                                              "a host pair of other dtypes than float32: copied to the GPU")
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
                self._last = _auto.other_call(_WHERE_NAMES[code], "device", n,
                                              "arrays already on the GPU: computed there, no copy")
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
