"""The dot of any two element types (chapter 10) for dotcourse.Context.dot.

Context.dot sends every pair that is not float32 · float32 here. Inputs: NumPy arrays (copied to the
GPU by the library), CuPy arrays and PyTorch CUDA tensors (not copied; computed on the current
stream of their library), or anything with __cuda_array_interface__. Element types: float64,
float32, float16, bfloat16 (PyTorch), int8 and bool. The result is a Python float, or a Python int
for two integer inputs (exact).
"""
import ctypes
import sys

# dotcourse_dtype (dotcourse.h)
FLOAT32, FLOAT64, FLOAT16, BFLOAT16, INT8, BOOL, INT64 = range(7)
NAMES = {FLOAT32: "float32", FLOAT64: "float64", FLOAT16: "float16", BFLOAT16: "bfloat16", INT8: "int8",
         BOOL: "bool", INT64: "int64"}
_BY_NAME = {v: k for k, v in NAMES.items() if k != INT64}
_SIZE = {FLOAT32: 4, FLOAT64: 8, FLOAT16: 2, BFLOAT16: 2, INT8: 1, BOOL: 1}
# __cuda_array_interface__ typestr (byte order "<", "|" or "=") -> dtype
_TYPESTR = {"f4": FLOAT32, "f8": FLOAT64, "f2": FLOAT16, "i1": INT8, "b1": BOOL}

_declared = set()
_torch_stream = None


def _declare(lib):
    if id(lib) in _declared:
        return
    c_status, ctx_p, c_dtype = ctypes.c_int, ctypes.c_void_p, ctypes.c_int
    lib.dotcourse_accumulator.restype = c_status
    lib.dotcourse_accumulator.argtypes = [c_dtype, c_dtype, ctypes.POINTER(c_dtype)]
    lib.dotcourse_dot_typed.restype = c_status
    lib.dotcourse_dot_typed.argtypes = [ctx_p, ctypes.c_void_p, c_dtype, ctypes.c_void_p, c_dtype, ctypes.c_size_t,
                                        ctypes.c_void_p, ctypes.POINTER(ctypes.c_double)]
    lib.dotcourse_dot_typed_host.restype = c_status
    lib.dotcourse_dot_typed_host.argtypes = [ctx_p, ctypes.c_void_p, c_dtype, ctypes.c_void_p, c_dtype,
                                             ctypes.c_size_t, ctypes.POINTER(ctypes.c_double)]
    _declared.add(id(lib))


def _module(a):
    return type(a).__module__.split(".", 1)[0]


_codes = {}  # (array type, dtype object) -> dotcourse dtype: str(dtype) costs microseconds per call


def dtype_of(a):
    """The dotcourse dtype of an array, or None when it is not an array dotcourse knows."""
    dt = getattr(a, "dtype", None)
    if dt is not None:
        key = (type(a), dt)
        try:
            return _codes[key]
        except KeyError:
            code = _dtype_of(a)
            _codes[key] = code
            return code
        except TypeError:  # a dtype that cannot be a dict key
            pass
    return _dtype_of(a)


def _dtype_of(a):
    mod = _module(a)
    if mod == "torch":
        name = str(a.dtype).replace("torch.", "")
        return _BY_NAME.get(name, -1)
    dt = getattr(a, "dtype", None)
    if dt is not None and mod in ("numpy", "cupy"):
        return _BY_NAME.get(str(dt), -1)
    cai = getattr(a, "__cuda_array_interface__", None)
    if cai is not None:
        return _TYPESTR.get(cai["typestr"][1:], -1)
    return None


def wants_typed(x, y):
    """True when Context.dot should take this module's path: an array of a dtype other than float32."""
    tx, ty = dtype_of(x), dtype_of(y)
    return (tx is not None and tx != FLOAT32) or (ty is not None and ty != FLOAT32)


_accumulators = {}  # (id(lib), tx, ty) -> the library's answer: the rule is fixed, one C call per pair


def accumulator(lib, tx, ty):
    key = (id(lib), tx, ty)
    if key in _accumulators:
        return 0, _accumulators[key]
    _declare(lib)
    acc = ctypes.c_int()
    status = lib.dotcourse_accumulator(tx, ty, ctypes.byref(acc))
    if status == 0:
        _accumulators[key] = acc.value
    return status, acc.value


def _check_shape(name, shape, strides_bytes, itemsize):
    if len(shape) != 1:
        raise ValueError(f"{name} has shape {tuple(shape)}; dotcourse takes 1-D vectors")
    if strides_bytes is not None and shape[0] > 1 and tuple(strides_bytes) != (itemsize,):
        raise ValueError(f"{name} is not contiguous (strides {tuple(strides_bytes)} bytes): make a contiguous copy first")


def _device_view(name, a):
    """(pointer, n, dtype, stream) of a CUDA array, or None for a host array."""
    mod = _module(a)
    t = dtype_of(a)
    if t is None or t < 0:
        kind = getattr(a, "dtype", type(a).__name__)
        raise TypeError(f"{name} has dtype {kind}; dotcourse takes float64, float32, float16, bfloat16, int8 or bool")
    if mod == "torch":
        if not a.is_cuda:
            raise TypeError(f"{name} is a PyTorch tensor on {a.device}: pass a CUDA tensor or a NumPy array")
        if a.dim() != 1:
            raise ValueError(f"{name} has shape {tuple(a.shape)}; dotcourse takes 1-D vectors")
        if a.numel() > 1 and a.stride(0) != 1:
            raise ValueError(f"{name} is not contiguous (stride {a.stride(0)}): pass {name}.contiguous()")
        global _torch_stream
        if _torch_stream is None:  # the raw stream as an int: no Stream object per call (see __init__)
            from . import _torch_stream_getter
            _torch_stream = _torch_stream_getter(sys.modules["torch"])
        return a.data_ptr(), a.numel(), t, _torch_stream(a.get_device())
    if mod == "numpy":
        return None
    cai = getattr(a, "__cuda_array_interface__", None)
    if cai is None:
        raise TypeError(f"{name} is a {type(a).__name__}: pass NumPy arrays, CuPy arrays or PyTorch CUDA tensors")
    _check_shape(name, cai["shape"], cai.get("strides"), _SIZE[t])
    stream = cai.get("stream") or 0
    return cai["data"][0], cai["shape"][0], t, stream


def dot(ctx, x, y):
    """x·y for any two supported dtypes (see the module's docstring)."""
    from . import _check, _np  # the package's error check and lazy NumPy
    lib = ctx._lib
    _declare(lib)
    handle = ctx._live()
    np = _np()
    result = ctypes.c_double()
    if isinstance(x, np.ndarray) and isinstance(y, np.ndarray):
        tx, ty = dtype_of(x), dtype_of(y)
        for name, a, t in (("x", x, tx), ("y", y, ty)):
            if t is None or t < 0:
                raise TypeError(f"{name} has dtype {a.dtype}; dotcourse takes float64, float32, float16, int8 or bool "
                                "(bfloat16: a PyTorch tensor)")
            _check_shape(name, a.shape, a.strides, _SIZE[t])
        if x.shape[0] != y.shape[0]:
            raise ValueError(f"x has {x.shape[0]} elements and y has {y.shape[0]}: a dot product needs equal lengths")
        n = int(x.shape[0])
        if n > ctx.n_max:
            raise ValueError(f"n = {n} is larger than this context's n_max = {ctx.n_max}: create the Context with a larger n_max")
        _check(lib, lib.dotcourse_dot_typed_host(handle, x.ctypes.data, tx, y.ctypes.data, ty, n, ctypes.byref(result)))
    else:
        vx, vy = _device_view("x", x), _device_view("y", y)
        if vx is None or vy is None:
            raise TypeError("one of x and y is a CUDA array and the other is not: move both to the same place")
        (px, nx, tx, sx), (py, ny, ty, sy) = vx, vy
        if nx != ny:
            raise ValueError(f"x has {nx} elements and y has {ny}: a dot product needs equal lengths")
        if sx and sy and sx != sy:
            raise ValueError("x and y come from different streams: synchronize one of them first")
        _check(lib, lib.dotcourse_dot_typed(handle, px, tx, py, ty, nx, sx or sy or None, ctypes.byref(result)))
    status, acc = accumulator(lib, tx, ty)
    _check(lib, status)
    return int(result.value) if acc == INT64 else float(result.value)
