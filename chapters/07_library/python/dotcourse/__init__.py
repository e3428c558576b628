"""dotcourse: the course's GPU dot product from Python (ctypes over libdotcourse.so).

    import numpy as np, dotcourse
    with dotcourse.Context(n_max=1 << 20) as ctx:
        r = ctx.dot(x, y)          # NumPy float32 1-D arrays: copied to the GPU, result a float
        r = ctx.dot(dx, dy)        # CuPy / PyTorch CUDA arrays: no copy, on the producer's stream
        r = ctx.dot(w, mask)       # any two of float64, float32, float16, bfloat16, int8, bool
                                   # (chapter 10; an integer pair gives an exact Python int)

The library is found, in this order: the file named by the environment variable DOTCOURSE_LIB;
libdotcourse.so beside this file (an installed wheel); the newest build/*/lib/libdotcourse.so of
the course repository this package sits in (use it from the build tree without installing).

A Context may be shared by threads (the library locks it; ctypes releases the GIL during a call);
threads that should run at the same time use one Context each.

NumPy arrays seen again are pinned (the registration cache). A NumPy array passed to dot a second
time (the same object, still alive) is registered with the library (cudaHostRegister) and then
copied straight to the GPU on every call, at the pinned rate, without staging: the motivating
program's case, the same arrays in every call. The Context keeps a reference to each registered
array, so its memory cannot be freed while it is registered; at most `pin_arrays` arrays (default
4) and `pin_bytes` bytes (default 1 GiB) stay registered, the least recently used is unregistered
and released first, and close() releases them all (ctx.unpin() does it at any time). Arrays
under 1 MiB are never registered (staging them costs little), nor are arrays seen only once (a
fresh array in every call pays nothing for the cache), and a Context whose arrays keep pushing
each other out of the cache stops registering new ones. Context(..., pin_arrays=0) turns it off.
"""
import collections
import ctypes
import os
import pathlib
import sys
import threading
import weakref

from . import _typed

__all__ = ["Context", "DotcourseError", "library_path", "version", "check_host_arrays"]

# dotcourse_status (dotcourse.h)
OK, INVALID_ARGUMENT, TOO_LARGE, INVALID_HANDLE, NO_GPU, OUT_OF_MEMORY, CUDA, INTERNAL = range(8)
STATUS_NAMES = {OK: "OK", INVALID_ARGUMENT: "INVALID_ARGUMENT", TOO_LARGE: "TOO_LARGE",
                INVALID_HANDLE: "INVALID_HANDLE", NO_GPU: "NO_GPU", OUT_OF_MEMORY: "OUT_OF_MEMORY",
                CUDA: "CUDA", INTERNAL: "INTERNAL"}


class DotcourseError(RuntimeError):
    """A status other than DOTCOURSE_OK; `status` is the code, the text is the library's message."""

    def __init__(self, status, message):
        super().__init__(f"dotcourse {STATUS_NAMES.get(status, status)}: {message}")
        self.status = status


_lib = None
_lib_lock = threading.Lock()


def library_path():
    """Where libdotcourse.so is taken from (see the module's docstring), or None."""
    env = os.environ.get("DOTCOURSE_LIB")
    if env:
        return pathlib.Path(env)
    here = pathlib.Path(__file__).resolve().parent
    beside = here / "libdotcourse.so"
    if beside.is_file():
        return beside
    root = here.parents[3]  # chapters/07_library/python/dotcourse -> the repository
    found = sorted(root.glob("build/*/lib/libdotcourse.so"), key=lambda p: p.stat().st_mtime, reverse=True)
    return found[0] if found else None


def _load():
    global _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        path = library_path()
        if path is None or not path.is_file():
            raise OSError("libdotcourse.so not found: build it (cmake --build --preset solutions --target dotcourse), "
                          "install the package (pip install chapters/07_library/python), or set DOTCOURSE_LIB "
                          f"to its path (looked at {path})")
        lib = ctypes.CDLL(str(path))
        c_status = ctypes.c_int
        ctx_p = ctypes.c_void_p
        fp = ctypes.POINTER(ctypes.c_float)
        lib.dotcourse_version.restype = ctypes.c_char_p
        lib.dotcourse_version.argtypes = []
        lib.dotcourse_status_string.restype = ctypes.c_char_p
        lib.dotcourse_status_string.argtypes = [c_status]
        lib.dotcourse_last_error.restype = ctypes.c_char_p
        lib.dotcourse_last_error.argtypes = []
        lib.dotcourse_create.restype = c_status
        lib.dotcourse_create.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.POINTER(ctx_p)]
        lib.dotcourse_destroy.restype = c_status
        lib.dotcourse_destroy.argtypes = [ctx_p]
        lib.dotcourse_n_max.restype = c_status
        lib.dotcourse_n_max.argtypes = [ctx_p, ctypes.POINTER(ctypes.c_size_t)]
        lib.dotcourse_dot.restype = c_status
        lib.dotcourse_dot.argtypes = [ctx_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, fp]
        lib.dotcourse_host_register.restype = c_status
        lib.dotcourse_host_register.argtypes = [ctx_p, ctypes.c_void_p, ctypes.c_size_t]
        lib.dotcourse_host_unregister.restype = c_status
        lib.dotcourse_host_unregister.argtypes = [ctx_p, ctypes.c_void_p]
        lib.dotcourse_dot_device.restype = c_status
        lib.dotcourse_dot_device.argtypes = [ctx_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                             ctypes.c_void_p, fp]
        _lib = lib
        return lib


def _check(lib, status):
    if status != OK:
        raise DotcourseError(status, lib.dotcourse_last_error().decode(errors="replace")
                             or lib.dotcourse_status_string(status).decode())


def version():
    """The library's version string."""
    return _load().dotcourse_version().decode()


# ---- what the C side cannot see: dtype, shape, contiguity, lengths --------------------------------

def check_host_arrays(x, y, n_max):
    """Checks two NumPy arrays for Context.dot; returns n. TypeError for a wrong type or dtype,
    ValueError for a wrong shape, layout or length. Needs no GPU and no library."""
    import numpy as np
    for name, a in (("x", x), ("y", y)):
        if not isinstance(a, np.ndarray):
            raise TypeError(f"{name} is a {type(a).__name__}, not a NumPy array or a CUDA array "
                            f"(use np.asarray({name}, dtype=np.float32))")
        if a.dtype != np.float32:
            raise TypeError(f"{name} has dtype {a.dtype}; dotcourse computes in float32: pass "
                            f"{name}.astype(np.float32) (a copy you make knowingly)")
        if a.ndim != 1:
            raise ValueError(f"{name} has {a.ndim} dimensions {a.shape}; dotcourse takes 1-D vectors "
                             f"({name}.ravel() if you mean all elements)")
        if not a.flags.c_contiguous:
            raise ValueError(f"{name} is not contiguous (strides {a.strides}): pass np.ascontiguousarray({name})")
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"x has {x.shape[0]} elements and y has {y.shape[0]}: a dot product needs equal lengths")
    n = int(x.shape[0])
    if n > n_max:
        raise ValueError(f"n = {n} is larger than this context's n_max = {n_max}: create the Context with a larger n_max")
    return n


_numpy = None
_f32 = None  # numpy.dtype(numpy.float32): a float32 array's dtype is this object, compared by identity


def _np():
    global _numpy, _f32
    if _numpy is None:
        import numpy
        _numpy, _f32 = numpy, numpy.dtype(numpy.float32)
    return _numpy


class _DeviceArray:
    """A CUDA vector seen through __cuda_array_interface__ or DLPack: pointer, length, stream."""

    def __init__(self, ptr, n, stream, keep=None, release=None):
        self.ptr, self.n, self.stream, self.keep, self.release = ptr, n, stream, keep, release


def _device_vector(name, is_float32, what, value, convert, shape, strides):
    """The checks every CUDA producer's vector passes, read from its own attributes: float32 (else
    the message says `what`.format(value), e.g. "dtype {}", and names the producer's own conversion
    `convert`), 1-D, contiguous (strides in bytes, None when the producer leaves them out:
    contiguous). Returns the length. The message is formatted only when it is raised: str() of a
    dtype costs microseconds, and this runs twice on every call of the device path."""
    if not is_float32:
        raise TypeError(f"{name} has {what.format(value)}; dotcourse computes in float32: convert it with "
                        f"{convert} on the device")
    _typed._check_shape(name, shape, strides, 4)  # the same layout checks as chapter 10's typed arrays
    return int(shape[0])


def _from_cai(name, a):
    cai = a.__cuda_array_interface__
    typestr, strides = cai["typestr"], cai.get("strides")
    n = _device_vector(name, typestr in ("<f4", "=f4", "|f4"),
                       "typestr {!r}", typestr, ".astype(float32)", tuple(cai["shape"]),
                       None if strides is None else tuple(strides))
    # The producer's stream (CAI v3): 1 is the legacy default stream, 2 per-thread default, else a
    # cudaStream_t; the values 1 and 2 are CUDA's own cudaStreamLegacy and cudaStreamPerThread.
    stream = cai.get("stream")
    return _DeviceArray(cai["data"][0], n, stream or 0, keep=a)


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    pass


_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                             ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor)))]
_KDL_CUDA, _KDL_FLOAT = 2, 2


def _from_dlpack(name, a):
    # We compute on the legacy default stream (1 in DLPack's convention): the producer makes its
    # work ordered before that stream, as the protocol asks of it.
    capsule = a.__dlpack__(stream=1)
    api = ctypes.pythonapi
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    api.PyCapsule_SetName.restype = ctypes.c_int
    api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
    managed = ctypes.cast(api.PyCapsule_GetPointer(capsule, b"dltensor"), ctypes.POINTER(_DLManagedTensor))
    api.PyCapsule_SetName(capsule, b"used_dltensor")  # we own it now and must call its deleter

    def release():
        if managed.contents.deleter:
            managed.contents.deleter(managed)

    t = managed.contents.dl_tensor
    try:
        if t.device_type != _KDL_CUDA:
            raise TypeError(f"{name} is a DLPack tensor on device type {t.device_type}, not CUDA memory")
        shape = tuple(t.shape[i] for i in range(t.ndim))
        n = _device_vector(name, (t.code, t.bits, t.lanes) == (_KDL_FLOAT, 32, 1),
                           "DLPack type (code {0[0]}, {0[1]} bits)", (t.code, t.bits), "a float32 conversion", shape,
                           (t.strides[0] * t.bits // 8,) if t.strides and t.ndim == 1 else None)
    except Exception:
        release()
        raise
    return _DeviceArray((t.data or 0) + t.byte_offset, n, 0, keep=(a, capsule), release=release)


def _torch_stream_getter(torch):
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # an int, without a Stream object
    if raw is not None:
        return raw
    return lambda device: torch.cuda.current_stream(device).cuda_stream


_torch_stream = None


def _from_torch(name, a):
    """A PyTorch CUDA tensor read directly (data_ptr(), the current stream of its device): no
    __cuda_array_interface__ dictionary, no DLPack capsule; a tensor that requires grad is read
    as it is (dot does not record a gradient)."""
    global _torch_stream
    torch = sys.modules["torch"]
    if not a.is_cuda:
        return None
    stride = a.stride()  # in elements; the layout check reads bytes
    n = _device_vector(name, a.dtype is torch.float32, "dtype {}", a.dtype, ".float()", a.shape,
                       (4 * stride[0],) if len(stride) == 1 else tuple(4 * s for s in stride))
    if _torch_stream is None:
        _torch_stream = _torch_stream_getter(torch)
    # PyTorch orders its work on the current stream of the tensor's device: the dot runs there too.
    return _DeviceArray(a.data_ptr(), n, _torch_stream(a.get_device()) or None, keep=a)


def _from_cupy(name, a):
    """A CuPy array read directly (data.ptr, its length, CuPy's current stream): CuPy builds its
    __cuda_array_interface__ dictionary anew on every access, a few microseconds per call."""
    n = _device_vector(name, a.dtype.char == "f", "dtype {}", a.dtype, ".astype(cupy.float32)", a.shape, a.strides)
    # CuPy orders its work on its current stream (0: the legacy default stream): the dot runs there.
    stream = sys.modules["cupy"].cuda.get_current_stream().ptr
    return _DeviceArray(a.data.ptr, n, stream or None, keep=a)


def _device_view(name, a):
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(a, torch.Tensor):
        view = _from_torch(name, a)
        if view is not None:
            return view
    cupy = sys.modules.get("cupy")
    if cupy is not None and type(a) is cupy.ndarray:  # exactly CuPy's: a subclass goes through CAI
        return _from_cupy(name, a)
    if hasattr(a, "__cuda_array_interface__"):
        try:
            return _from_cai(name, a)
        except AttributeError:
            pass  # e.g. a tensor that refuses CAI; DLPack may still work
    if hasattr(a, "__dlpack__") and hasattr(a, "__dlpack_device__") and a.__dlpack_device__()[0] == _KDL_CUDA:
        return _from_dlpack(name, a)
    return None


# ---- the registration cache (see the module's docstring for the policy) ---------------------------

_PIN_MIN = 1 << 20  # bytes: below this a staged copy costs less than registering


class _PinCache:
    """Arrays seen once (weak references: a candidate never keeps memory alive), and arrays
    registered with the library (strong references, in least-recently-used order)."""

    def __init__(self, lib, handle, capacity, max_bytes):
        self.lib, self.handle = lib, handle
        self.capacity, self.max_bytes = capacity, max_bytes
        self.lock = threading.Lock()
        self.entries = collections.OrderedDict()  # (ptr, nbytes) -> [array, uses]
        self.seen = collections.OrderedDict()     # (ptr, nbytes) -> weakref to the array
        self.refused = collections.OrderedDict()  # (ptr, nbytes) -> weakref: registration failed
        self.bytes = 0
        self.churn = 0  # registered arrays evicted after fewer than 4 uses
        self.stopped = False
        self.by_id = {}  # id(array) -> its key in entries, for the registered arrays (see known)

    def known(self, a):
        """A registered array's data pointer, its use counted as see() counts it, without reading
        a.ctypes (about a microsecond per array); None for any other array. The entry holds the
        array, so its id is not reused and its data cannot move (ndarray.resize refuses an array
        with other references, unless told refcheck=False, which NumPy documents as unsafe)."""
        key = self.by_id.get(id(a))
        if key is None:
            return None
        entry = self.entries[key]
        entry[1] += 1
        self.entries.move_to_end(key)
        return key[0]

    def see(self, a, ptr):
        if self.known(a) is not None:  # registered: one more use
            return
        key = (ptr, a.nbytes)
        entry = self.entries.get(key)
        if self.stopped or a.nbytes > self.max_bytes:
            return
        bad = self.refused.get(key)
        if bad is not None and bad() is a:
            return
        ref = self.seen.get(key)
        if ref is None or ref() is not a:  # first sighting (or another array at a reused address)
            self.seen[key] = weakref.ref(a)
            self.seen.move_to_end(key)
            while len(self.seen) > 4 * self.capacity:
                self.seen.popitem(last=False)
            return
        del self.seen[key]
        if entry is not None:  # a dead array's registration at the same address: drop it first
            self._evict(key)
        while self.entries and (len(self.entries) >= self.capacity or self.bytes + a.nbytes > self.max_bytes):
            self._evict(next(iter(self.entries)))
        if self.stopped:
            return
        if self.lib.dotcourse_host_register(self.handle, ptr, a.nbytes) != OK:
            self.refused[key] = weakref.ref(a)  # e.g. a page shared with a registered array: staged
            while len(self.refused) > 4 * self.capacity:
                self.refused.popitem(last=False)
            return
        self.entries[key] = [a, 1]
        self.by_id[id(a)] = key
        self.bytes += a.nbytes

    def _evict(self, key):
        a, uses = self.entries.pop(key)
        del self.by_id[id(a)]
        self.bytes -= a.nbytes
        _check(self.lib, self.lib.dotcourse_host_unregister(self.handle, key[0]))
        if uses < 4:
            self.churn += 1
            if self.churn >= 3:
                self.stopped = True  # the arrays rotate through more than the cache holds

    def clear(self):
        with self.lock:
            while self.entries:
                self._evict(next(iter(self.entries)))
            self.seen.clear()
            self.refused.clear()
            self.churn, self.stopped = 0, False


class Context:
    """One GPU context of the library: device memory for up to n_max elements, made once.
    Use it as a context manager, or call close()."""

    def __init__(self, n_max, device=0, pin_arrays=4, pin_bytes=1 << 30):
        if not isinstance(n_max, int) or isinstance(n_max, bool) or n_max < 1:
            raise ValueError(f"n_max must be a whole number >= 1 (got {n_max!r})")
        if not isinstance(pin_arrays, int) or pin_arrays < 0:
            raise ValueError(f"pin_arrays must be a whole number >= 0 (got {pin_arrays!r})")
        self._lib = _load()
        handle = ctypes.c_void_p()
        _check(self._lib, self._lib.dotcourse_create(int(device), n_max, ctypes.byref(handle)))
        self._handle = handle
        self.n_max = n_max
        self.device = device
        self._dot_host = self._lib.dotcourse_dot
        self._dot_device = self._lib.dotcourse_dot_device
        self._pins = _PinCache(self._lib, handle, pin_arrays, pin_bytes)

    def close(self):
        """Unregisters the pinned arrays and destroys the context (idempotent)."""
        if getattr(self, "_handle", None) is not None:
            pins = getattr(self, "_pins", None)
            if pins is not None:
                pins.clear()
            handle, self._handle = self._handle, None
            _check(self._lib, self._lib.dotcourse_destroy(handle))

    def unpin(self):
        """Unregisters and releases every array the registration cache holds."""
        self._live()
        self._pins.clear()

    def pinned(self):
        """How many NumPy arrays the registration cache holds registered now."""
        return len(self._pins.entries)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _live(self):
        if self._handle is None:
            raise ValueError("this dotcourse.Context is closed")
        return self._handle

    def dot(self, x, y):
        """x·y as a Python float. NumPy float32 1-D arrays (copied to the GPU), or CuPy/PyTorch
        (any __cuda_array_interface__ or DLPack) float32 1-D CUDA arrays (not copied; computed on
        the producer's stream)."""
        handle = self._live()
        result = ctypes.c_float()
        np = _np()
        # The common case, float32 NumPy vectors, with the fewest Python steps: a binding's own work
        # is what a caller pays on every call (the target: at most 10 us over the same call from C++).
        plain = type(x) is np.ndarray and type(y) is np.ndarray and x.dtype is _f32 and y.dtype is _f32
        if not plain and _typed.wants_typed(x, y):  # any pair but float32 · float32: chapter 10's typed path
            return _typed.dot(self, x, y)
        if plain or (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)):
            if plain and x.ndim == 1 and y.ndim == 1 and x.flags.c_contiguous and y.flags.c_contiguous \
                    and x.shape[0] == y.shape[0] <= self.n_max:
                n = x.shape[0]
            else:
                n = check_host_arrays(x, y, self.n_max)  # it raises, with the reason
            pins = self._pins
            if pins.capacity and x.nbytes >= _PIN_MIN:
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
            status = self._dot_host(handle, px, py, n, ctypes.byref(result))
            if status != OK:
                _check(self._lib, status)
            return float(result.value)
        dx, dy = _device_view("x", x), _device_view("y", y)
        if dx is not None or dy is not None:
            try:
                if dx is None or dy is None:
                    raise TypeError("one of x and y is a CUDA array and the other is not: move both to the same place")
                if dx.n != dy.n:
                    raise ValueError(f"x has {dx.n} elements and y has {dy.n}: a dot product needs equal lengths")
                if dx.stream != dy.stream and dx.stream and dy.stream:
                    raise ValueError("x and y come from different streams: synchronize one of them first")
                status = self._dot_device(handle, dx.ptr, dy.ptr, dx.n, dx.stream or dy.stream or None,
                                          ctypes.byref(result))
                _check(self._lib, status)
            finally:
                for d in (dx, dy):
                    if d is not None and d.release is not None:
                        d.release()
            return float(result.value)
        check_host_arrays(x, y, self.n_max)  # neither is a NumPy or a CUDA array: it raises TypeError
        raise TypeError("x and y must be NumPy arrays or CUDA arrays")
