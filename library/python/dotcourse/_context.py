"""Context: one GPU context of the library, and its dot product of any two arrays."""
from __future__ import annotations

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

_WHERE = _auto.WHERE
_WHERE_NAMES = _auto.WHERE_NAMES


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
    path, n_gpu = lib.plan_choose(_auto.rows_for_core(rows), n, bool(registered))
    return _auto.PATHS[path], int(n_gpu)


_accumulators: Dict[Tuple[int, int, int], int] = {}  # (id(lib), tx, ty) -> the library's answer


def accumulator(lib: Any, tx: int, ty: int) -> int:
    """The accumulator dtype of a pair, asked of the library once per pair (the rule lives in the
    library, dotcourse_accumulator, and does not change); raises the library's error."""
    key = (id(lib), tx, ty)
    acc = _accumulators.get(key)
    if acc is None:
        acc = _accumulators[key] = int(lib.accumulator(tx, ty))
    return acc


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


def _pin_from(rows: List[Any]) -> Optional[int]:
    """The smallest n where the plan (the extension's rows) sends registered arrays to the GPU."""
    return min((n_min for n_min, registered, path, _ in rows if registered and path != _auto.PATH_CODES["cpu"]),
               default=None)


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

    _core: Any = None  # the extension's Core; set last: close() and __del__ work after a failed __init__
    _numpy_below: int = _auto.NUMPY_BELOW
    _numpy_from: int = _auto.NUMPY_FROM
    _pin_from: Optional[int] = None  # the smallest n where the plan sends registered arrays to the GPU

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
        self.n_max: int = SIZE_MAX if cpu_only else n_max
        self.device: Union[int, str] = "cpu" if cpu_only else device_id
        try:
            core = lib.Core(self, device_id, self.n_max, cpu_threads)
        except E.NoGpuError as e:
            if cpu_only:
                raise
            raise E.NoGpuError(e.status, e.message + "; Context(n_max, device=\"cpu\") computes on the CPU without "
                                                   "one") from None
        self._lib = lib
        self._pins = PinCache(core, 0 if cpu_only else pin_arrays, pin_bytes)
        self._core = core
        # The hot call: `ctx.dot` finds the compiled method in the instance's dict, before the
        # class's documented Python method (which calls the same), so the call goes straight into
        # the extension.
        self.dot = core.dot  # type: ignore[method-assign]
        self._sync_fast()
        if calibration == "cache":
            self._load_cached()

    def __repr__(self) -> str:
        state = "closed" if self._core is None or self._core.closed else f"{self.pinned()} arrays pinned"
        return f"<dotcourse.Context n_max={getattr(self, 'n_max', '?')} device={getattr(self, 'device', '?')} {state}>"

    def close(self) -> None:
        """Unregisters the pinned arrays and destroys the context (idempotent).

        Raises
        ------
        DotcourseError
            The library failed to unregister or destroy (the context is closed all the same).
        """
        core = self._core
        if core is None or core.closed:
            return
        try:
            self._pins.clear()
        finally:
            core.close()

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
        return len(self._pins.entries) if self._core is not None and not self._core.closed else 0

    def __enter__(self) -> "Context":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def _live(self) -> Any:
        core = self._core
        if core is None or core.closed:
            raise E.closed()
        return core

    def _sync_fast(self) -> None:
        """Tells the extension's fast path what it reads from Python's side: for which n NumPy's
        dot runs, from which n registered arrays go to the GPU, whether the cache registers."""
        self._core.set_fast(self._numpy_from, self._numpy_below,
                            SIZE_MAX if self._pin_from is None else self._pin_from, self._pins.capacity)

    # ---- where a host dot runs ------------------------------------------------------------------

    @property
    def last_call(self) -> Optional[_auto.LastCall]:
        """What the last dot on this Context did (from any thread): a ``LastCall`` with the path
        ("numpy", "cpu", "gpu", "split", "device" or "typed"), the elements on the CPU and on the
        GPU, the CPU threads, whether the arrays were registered and the plan calibrated, the time
        inside the library, and the reason in words. None before the first dot."""
        core = self._core
        record = core.last() if core is not None else None
        if record is None or isinstance(record, _auto.LastCall):
            return record
        if type(record) is int:
            return _auto.numpy_call(record, self._numpy_below, self._numpy_from)
        return _auto.from_report(record)

    def _set_last(self, call: _auto.LastCall) -> None:
        self._core.set_last(call)

    def _get_plan(self) -> Tuple[bool, int, str, List[Any]]:
        return self._live().get_plan()

    @property
    def plan(self) -> Dict[str, Any]:
        """The context's plan: ``calibrated`` (bool), ``device`` (the GPU's name, "" for a CPU-only
        context), ``cpu_threads``, ``numpy_from`` and ``numpy_below`` (for n in [numpy_from,
        numpy_below), "auto" calls NumPy's own dot) and ``rows`` (dicts: ``n_min``, ``registered``, ``path``, ``gpu_share``; no row: the CPU).

        Raises
        ------
        InvalidHandleError
            The context is closed.
        """
        calibrated, cpu_threads, device, rows = self._get_plan()
        return {"calibrated": bool(calibrated), "device": device, "cpu_threads": int(cpu_threads),
                "numpy_from": self._numpy_from, "numpy_below": self._numpy_below, "rows": _auto.plan_rows(rows)}

    def set_plan(self, rows: List[Dict[str, Any]], numpy_below: Optional[SupportsIndex] = None,
                 calibrated: bool = True, numpy_from: Optional[SupportsIndex] = None) -> None:
        """Replaces the context's plan (rows as ``plan["rows"]`` gives them; ``[]``: the built-in rule).

        Parameters
        ----------
        rows : list of dict
            ``n_min``, ``registered``, ``path`` ("cpu", "gpu", "split"), ``gpu_share``.
        numpy_below : int, optional
            Below this n, "auto" calls NumPy's own dot (0: never); unchanged when None.
        calibrated : bool, optional
            Whether the rows were measured (reported by ``last_call.calibrated``).
        numpy_from : int, optional
            From this n (up to numpy_below), "auto" calls NumPy's own dot; unchanged when None (0:
            from the smallest n).

        Raises
        ------
        ValueError
            A row is not a row; InvalidArgumentError (a ValueError) for rows that are not a plan.
        InvalidHandleError
            The context is closed.
        """
        core = self._live()
        core_rows = _auto.rows_for_core(rows)
        below = None if numpy_below is None else index("numpy_below", numpy_below, 0, SIZE_MAX)
        start = None if numpy_from is None else index("numpy_from", numpy_from, 0, SIZE_MAX)
        core.set_plan(core_rows, bool(calibrated))
        if below is not None:
            self._numpy_below = below
        if start is not None:
            self._numpy_from = start
        self._pin_from = _pin_from(core_rows)
        self._sync_fast()

    def _load_cached(self) -> None:
        _, cpu_threads, device_name, _ = self._get_plan()
        path = _auto.cache_path(device_name)
        data = _auto.load(path, device_name, int(cpu_threads))
        if data is None:
            return
        try:
            self.set_plan(data.get("rows", []) if self.device != "cpu" else [], data.get("numpy_below"),
                          calibrated=True, numpy_from=data.get("numpy_from", 0))
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
        core = self._live()
        n_limit = index("n_limit", n_limit, 0, SIZE_MAX)
        if self.device != "cpu":
            self._pin_from = _pin_from(core.calibrate(n_limit)[3])
        self._numpy_from, self._numpy_below = self._measure_numpy_window()
        self._sync_fast()
        result = self.plan
        if save:
            data = dict(result, version=_auto.CACHE_VERSION, host=_auto.socket.gethostname(), library=_lib.version())
            _auto.save(_auto.cache_path(result["device"]), data)
        return result

    def _measure_numpy_window(self) -> Tuple[int, int]:
        """(numpy_from, numpy_below): the window of n where NumPy's own dot beats a call into the
        library (where="cpu"), from medians of calls taken in turns at 2^8 to 2^20
        (_auto.numpy_window picks the window that loses least at every size). NumPy's dot is timed as
        "auto" would run it, through this context's dot (the route costs a few hundred nanoseconds,
        as much as NumPy's whole dot at small n: timed bare, NumPy won by less than its route cost
        and the plan sent small calls the slower way). Each call gets fresh copies of its arrays,
        made outside the timed region, as a program that makes new arrays does: the copy also lets
        the CPU dot's threads fall asleep between calls, as they do in use."""
        np = A.numpy()
        rng = np.random.default_rng(26)
        sizes = [1 << k for k in range(8, 21)]
        t_numpy, t_library = [], []
        saved = self._numpy_from, self._numpy_below
        self._numpy_from, self._numpy_below = 0, SIZE_MAX  # "auto" takes NumPy's route while this measures it
        self._sync_fast()
        try:
            for n in sizes:
                x = rng.standard_normal(n).astype(np.float32)
                y = rng.standard_normal(n).astype(np.float32)
                reps = max(15, min(301, (1 << 22) // n))
                t_np, t_lib = [], []
                clock = time.perf_counter
                for r in range(reps + 5):
                    a, b = x.copy(), y.copy()
                    t0 = clock()
                    self.dot(a, b)
                    t1 = clock()
                    a, b = x.copy(), y.copy()
                    t2 = clock()
                    self.dot(a, b, where="cpu")
                    t3 = clock()
                    if r >= 5:
                        t_np.append(t1 - t0)
                        t_lib.append(t3 - t2)
                t_numpy.append(statistics.median(t_np))
                t_library.append(statistics.median(t_lib))
        finally:
            self._numpy_from, self._numpy_below = saved
            self._sync_fast()
        return _auto.numpy_window(sizes, t_numpy, t_library)

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
            the GPU. On a GPU context, other host dtypes and device arrays take the GPU ("auto" or
            "gpu"; "cpu" is refused); on a CPU-only context (``device="cpu"``) host arrays of every
            dtype take the CPU ("auto" or "cpu"). ``last_call`` says what ran.

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
            where="gpu" or device arrays on a CPU-only context.
        DotcourseError
            Any failure inside the library (CudaError, OutOfMemoryError, ...).
        """
        # Context() puts the extension's Core.dot into the instance (see __init__): a call on an
        # instance goes there directly; this method is the documented signature and the route for
        # Context.dot(ctx, ...).
        return self._live().dot(x, y, where)  # type: ignore[no-any-return]

    def _pin_pair(self, x: Any, y: Any) -> None:
        """The registration cache's step for a float32 pair the GPU will read, from a producer the
        extension's fast path does not take (that path notes sightings itself: _pin_seen): registers
        an array on its second call (see the package's docstring)."""
        pins = self._pins
        with pins.lock:
            if pins.known(x) is None:
                pins.see(x, x.ctypes.data)
            if y is not x and pins.known(y) is None:
                py = y.ctypes.data
                if py != x.ctypes.data:
                    pins.see(y, py)

    def _pin_seen(self, x: Any, px: int, sx: int, y: Any, py: int, sy: int) -> None:
        """The registration cache's step from the extension's fast path, which notes first sightings
        itself and calls this only for the rest: per array, 1 when it saw this array at this address
        before (registered now, as a second sighting), 2 when the address is registered (a use, or
        see()'s own sighting of another array there), 0 for nothing to do."""
        pins = self._pins
        with pins.lock:
            for a, p, s in ((x, px, sx), (y, py, sy)):
                if s == 1:
                    pins.second(a, p)
                elif s == 2:
                    pins.see(a, p)

    def _host_float32(self, x: Any, y: Any, n: int, code: int = 0) -> float:
        """A float32 host pair that did not take the extension's fast path (another producer)."""
        core = self._live()
        wants_gpu = code == 2 or (code == 0 and self._pin_from is not None and n >= self._pin_from)
        if wants_gpu and self._pins.capacity and x.nbytes >= PIN_MIN:
            self._pin_pair(x, y)
        if code == 0 and self._numpy_from <= n < self._numpy_below:
            self._set_last(_auto.numpy_call(n, self._numpy_below, self._numpy_from))
            return float(A.numpy().dot(x, y))
        return float(core.dot_ptr(x.ctypes.data, y.ctypes.data, n, code))

    def _dot_any(self, x: Any, y: Any, code: int = 0) -> Union[float, int]:
        """Every pair but two float32 NumPy vectors (the extension calls it): one adapter for every
        producer and dtype, one wording per error."""
        core = self._live()
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
            cpu_only = self.device == "cpu"
            if code == 1 and (vx.on_device or not (tx == ty == A.FLOAT32 or cpu_only)):
                raise E.InvalidArgumentError(E.Status.INVALID_ARGUMENT,
                                             "where='cpu' takes two float32 host arrays (host arrays of every dtype "
                                             "on a Context(device='cpu')); on a GPU context, device arrays and other "
                                             "dtypes are computed on the GPU (where='auto' or 'gpu')")
            if cpu_only and code == 2:
                raise E.NoGpuError(E.Status.NO_GPU, "where='gpu' on a context made by dotcourse_create_cpu "
                                                    "(Context(device='cpu')), which has no GPU")
            if not vx.on_device:
                if tx == ty == A.FLOAT32:
                    if code != 1 and n > self.n_max:
                        raise E.too_large(n, self.n_max)
                    return self._host_float32(vx.host_array, vy.host_array, n, code)
                if n > self.n_max:
                    raise E.too_large(n, self.n_max)
                if cpu_only:
                    self._set_last(_auto.LastCall(_WHERE_NAMES[code], "cpu", n, n, 0, int(self._get_plan()[1]), False, False,
                                                  0.0, "a host pair of other dtypes than float32 on a CPU-only "
                                                  "context: the library's CPU dot of any two dtypes"))
                else:
                    self._set_last(_auto.other_call(_WHERE_NAMES[code], "typed", n,
                                                    "a host pair of other dtypes than float32: copied to the GPU"))
                result = core.dot_typed_host(vx.ptr, tx, vy.ptr, ty, n)
            else:
                for name, v in (("x", vx), ("y", vy)):
                    if v.device_id is not None and v.device_id != self.device:
                        raise E.InvalidArgumentError(E.Status.INVALID_ARGUMENT,
                                                     f"{name} is on GPU {v.device_id} and this context on GPU "
                                                     f"{self.device}: create a Context on that device")
                sx, sy = vx.stream, vy.stream
                if sx and sy and sx != sy:
                    raise E.mixed_streams()
                stream = sx or sy or 0  # 0: NULL, the legacy default stream
                self._set_last(_auto.other_call(_WHERE_NAMES[code], "device", n,
                                                "arrays already on the GPU: computed there, no copy"))
                if tx == ty == A.FLOAT32:
                    return float(core.dot_device(vx.ptr, vy.ptr, n, stream))
                result = core.dot_typed(vx.ptr, tx, vy.ptr, ty, n, stream)
        finally:
            for w in (vx, vy):
                if w is not None and w.release is not None:
                    w.release()
        acc = accumulator(self._lib, tx, ty)
        return int(result) if acc == A.INT64 else float(result)
