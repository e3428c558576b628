"""The one array adapter: any array a caller passes becomes a Vector (pointer, length, dtype, where,
stream), with the same checks and the same wording whatever produced it and whatever its dtype.

Host (copied by the library): NumPy arrays, and any object with ``__array_interface__`` (read
through a NumPy view, no copy). Device (not copied): CuPy arrays and PyTorch CUDA tensors (read
directly: their own pointer and their library's current stream), any object with
``__cuda_array_interface__`` (version 3's stream honoured), and any DLPack producer on a CUDA
device, in the versioned protocol (``__dlpack__(max_version=(1, 0))``, DLPack 1.x) or the legacy
one. Element types: float64, float32, float16, bfloat16 (PyTorch, DLPack, or NumPy with
ml_dtypes), int8 and bool.
"""
from __future__ import annotations

import ctypes
import sys
from typing import Any, Callable, Dict, Optional, Tuple

from . import _errors as E

# dotcourse_dtype (dotcourse.h)
FLOAT32, FLOAT64, FLOAT16, BFLOAT16, INT8, BOOL, INT64 = range(7)
DTYPE_NAMES = {FLOAT32: "float32", FLOAT64: "float64", FLOAT16: "float16", BFLOAT16: "bfloat16", INT8: "int8",
               BOOL: "bool", INT64: "int64"}
ITEMSIZE = {FLOAT32: 4, FLOAT64: 8, FLOAT16: 2, BFLOAT16: 2, INT8: 1, BOOL: 1}
INTEGER = (INT8, BOOL)

# __array_interface__ / __cuda_array_interface__ type strings, without the byte-order character
_TYPESTR = {"f4": FLOAT32, "f8": FLOAT64, "f2": FLOAT16, "i1": INT8, "b1": BOOL}


class Vector:
    """One input of a dot product, as the C API needs it.

    Attributes
    ----------
    ptr : int
        The address of element 0.
    n : int
        The number of elements.
    dtype : int
        A dotcourse_dtype code (FLOAT32, ...).
    on_device : bool
        True for CUDA memory, False for host memory.
    device_id : int or None
        The CUDA device, where the producer says (None: unknown, or host memory).
    stream : int or None
        The producer's stream (a cudaStream_t value; 1 and 2 are CUDA's legacy and per-thread
        default streams); None when the producer needs no ordering.
    host_array : numpy.ndarray or None
        The NumPy array of a host input (the registration cache keys on it).
    """

    __slots__ = ("ptr", "n", "dtype", "on_device", "device_id", "stream", "host_array", "keep", "release")

    def __init__(self, ptr: int, n: int, dtype: int, on_device: bool, device_id: Optional[int] = None,
                 stream: Optional[int] = None, host_array: Any = None, keep: Any = None,
                 release: Optional[Callable[[], None]] = None) -> None:
        self.ptr, self.n, self.dtype, self.on_device, self.device_id = ptr, n, dtype, on_device, device_id
        self.stream, self.host_array, self.keep, self.release = stream, host_array, keep, release


def _layout(name: str, shape: Tuple[int, ...], strides_bytes: Optional[Tuple[int, ...]], itemsize: int) -> int:
    """The length of a 1-D contiguous vector (strides None: contiguous); raises otherwise."""
    if len(shape) != 1:
        raise E.not_a_vector(name, shape)
    n = int(shape[0])
    if strides_bytes is not None and n > 1 and tuple(strides_bytes) != (itemsize,):
        raise E.not_contiguous(name, strides_bytes)
    return n


def _aligned(name: str, ptr: int, n: int, dtype: int) -> None:
    if n and ptr % ITEMSIZE[dtype]:
        raise E.InvalidArgumentError(E.Status.INVALID_ARGUMENT,
                                     f"{name} starts at address {ptr:#x}, not a multiple of its element size "
                                     f"({ITEMSIZE[dtype]} bytes for {DTYPE_NAMES[dtype]}): pass an aligned copy")


# ---- host: NumPy -------------------------------------------------------------------------------

_numpy: Any = None
_np_codes: Dict[Any, int] = {}  # numpy dtype -> code (-1: not one dotcourse takes); str(dtype) costs microseconds


def numpy() -> Any:
    """NumPy, imported on first use."""
    global _numpy
    if _numpy is None:
        import numpy as np
        _numpy = np
    return _numpy


def numpy_code(dt: Any) -> int:
    """The dotcourse code of a NumPy (or CuPy) dtype, -1 when dotcourse does not take it."""
    try:
        return _np_codes[dt]
    except KeyError:
        pass
    if not dt.isnative:
        code = -1  # byte-swapped data: the kernels read native order only
    elif dt.name == "bfloat16" and dt.itemsize == 2:  # ml_dtypes' bfloat16
        code = BFLOAT16
    else:
        code = _TYPESTR.get(f"{dt.kind}{dt.itemsize}", -1)
    _np_codes[dt] = code
    return code


def from_numpy(name: str, a: Any, keep: Any = None) -> Vector:
    dt = a.dtype
    code = numpy_code(dt)
    if code < 0:
        raise E.bad_dtype(name, dt)
    n = _layout(name, a.shape, a.strides, dt.itemsize)
    return Vector(a.ctypes.data, n, code, False, host_array=a, keep=keep)


def _from_array_interface(name: str, a: Any) -> Vector:
    np = numpy()
    return from_numpy(name, np.asarray(a), keep=a)  # a view of the producer's memory, no copy


# ---- device: PyTorch and CuPy, read directly ---------------------------------------------------

_torch_codes: Dict[Any, int] = {}
_torch_stream: Optional[Callable[[int], int]] = None


def _torch_setup(torch: Any) -> None:
    global _torch_stream
    _torch_codes.update({torch.float32: FLOAT32, torch.float64: FLOAT64, torch.float16: FLOAT16,
                         torch.bfloat16: BFLOAT16, torch.int8: INT8, torch.bool: BOOL})
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # an int, without a Stream object
    _torch_stream = raw if raw is not None else (lambda device: torch.cuda.current_stream(device).cuda_stream)


def _from_torch(name: str, a: Any, torch: Any) -> Vector:
    """Read with data_ptr() and the current stream of the tensor's device (PyTorch orders its work
    there): no dictionary, no capsule. A tensor that requires grad is read as it is."""
    if _torch_stream is None:
        _torch_setup(torch)
    if not a.is_cuda:
        raise TypeError(f"{name} is a PyTorch tensor on {a.device}: pass a CUDA tensor, or {name}.numpy() "
                        "for the host")
    code = _torch_codes.get(a.dtype, -1)
    if code < 0:
        raise E.bad_dtype(name, a.dtype)
    n = _layout(name, tuple(a.shape), tuple(ITEMSIZE[code] * s for s in a.stride()), ITEMSIZE[code])
    device = a.get_device()
    stream = _torch_stream(device) if _torch_stream is not None else None
    v = Vector(a.data_ptr(), n, code, True, device, stream, keep=a)
    _aligned(name, v.ptr, n, code)
    return v


def _from_cupy(name: str, a: Any, cupy: Any) -> Vector:
    """Read with data.ptr and CuPy's current stream: CuPy builds its __cuda_array_interface__
    dictionary anew on every access, a few microseconds per call."""
    code = numpy_code(a.dtype)
    if code < 0:
        raise E.bad_dtype(name, a.dtype)
    n = _layout(name, a.shape, a.strides, a.dtype.itemsize)
    v = Vector(a.data.ptr, n, code, True, a.device.id, cupy.cuda.get_current_stream().ptr, keep=a)
    _aligned(name, v.ptr, n, code)
    return v


# ---- device: __cuda_array_interface__ ----------------------------------------------------------

def from_cai(name: str, a: Any, cai: Optional[Dict[str, Any]] = None) -> Vector:
    """A CUDA array described by its ``__cuda_array_interface__`` (versions 2 and 3).

    The producer's stream (v3's ``stream``: 1 legacy default, 2 per-thread default, else a
    cudaStream_t; absent or None: no ordering needed) is the stream the dot runs on.
    """
    if cai is None:
        cai = a.__cuda_array_interface__
    if cai.get("mask") is not None:
        raise E.InvalidArgumentError(E.Status.INVALID_ARGUMENT,
                                     f"{name} has a mask (__cuda_array_interface__['mask']): dotcourse reads "
                                     "plain arrays; fill or compress the masked elements first")
    typestr = cai["typestr"]
    code = _TYPESTR.get(typestr[1:], -1) if typestr[:1] in "<|=" else -1
    if code < 0:
        raise E.bad_dtype(name, f"{typestr!r} (__cuda_array_interface__ typestr)")
    strides = cai.get("strides")
    n = _layout(name, tuple(cai["shape"]), None if strides is None else tuple(strides), ITEMSIZE[code])
    ptr = cai["data"][0] or 0
    _aligned(name, ptr, n, code)
    return Vector(ptr, n, code, True, None, cai.get("stream") or None, keep=a)


# ---- device: DLPack (versioned 1.x and legacy) -------------------------------------------------

class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor)))]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


DLManagedTensorVersioned._fields_ = [
    ("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
    ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))),
    ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_CUDA_MANAGED = 1, 2, 3, 13
_KDL_INT, _KDL_FLOAT, _KDL_BFLOAT, _KDL_BOOL = 0, 2, 4, 6
_DL_CODES = {(_KDL_FLOAT, 32): FLOAT32, (_KDL_FLOAT, 64): FLOAT64, (_KDL_FLOAT, 16): FLOAT16,
             (_KDL_BFLOAT, 16): BFLOAT16, (_KDL_INT, 8): INT8, (_KDL_BOOL, 8): BOOL}
DLPACK_MAJOR = 1  # the versioned ABI this module reads

_api = ctypes.pythonapi
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _dlpack_capsule(a: Any) -> Any:
    # The dot runs on the legacy default stream (1 in DLPack's convention for CUDA): the producer
    # orders its pending work before that stream, as the protocol asks of it.
    try:
        return a.__dlpack__(stream=1, max_version=(DLPACK_MAJOR, 0))
    except TypeError:  # a producer from before DLPack 1.0: no max_version keyword
        return a.__dlpack__(stream=1)


def from_dlpack(name: str, a: Any) -> Vector:
    """A CUDA tensor through DLPack: the versioned capsule ("dltensor_versioned") where the producer
    offers it, else the legacy one ("dltensor"). The capsule is consumed (renamed "used_...") and its
    deleter runs when the Vector is released."""
    capsule = _dlpack_capsule(a)
    if _api.PyCapsule_IsValid(capsule, b"dltensor_versioned"):
        managed: Any = ctypes.cast(_api.PyCapsule_GetPointer(capsule, b"dltensor_versioned"),
                                   ctypes.POINTER(DLManagedTensorVersioned))
        _api.PyCapsule_SetName(capsule, b"used_dltensor_versioned")
    elif _api.PyCapsule_IsValid(capsule, b"dltensor"):
        managed = ctypes.cast(_api.PyCapsule_GetPointer(capsule, b"dltensor"), ctypes.POINTER(DLManagedTensor))
        _api.PyCapsule_SetName(capsule, b"used_dltensor")
    else:
        raise TypeError(f"{name}.__dlpack__() returned {type(capsule).__name__}, not an unused DLPack capsule")

    def release() -> None:  # we own the tensor now: its deleter must run exactly once
        deleter = managed.contents.deleter
        if deleter:
            deleter(managed)

    try:
        if isinstance(managed.contents, DLManagedTensorVersioned) and managed.contents.version.major > DLPACK_MAJOR:
            raise TypeError(f"{name} is a DLPack {managed.contents.version.major}.x tensor; dotcourse reads DLPack "
                            f"{DLPACK_MAJOR}.x and the legacy form")
        t = managed.contents.dl_tensor
        if t.device_type not in (KDL_CUDA, KDL_CUDA_MANAGED):
            raise TypeError(f"{name} is a DLPack tensor on device type {t.device_type}, not CUDA memory")
        code = _DL_CODES.get((t.code, t.bits), -1) if t.lanes == 1 else -1
        if code < 0:
            raise E.bad_dtype(name, f"(DLPack type code {t.code}, {t.bits} bits, {t.lanes} lanes)")
        shape = tuple(t.shape[i] for i in range(t.ndim))
        strides = tuple(t.strides[i] * ITEMSIZE[code] for i in range(t.ndim)) if t.strides else None
        n = _layout(name, shape, strides, ITEMSIZE[code])
        ptr = (t.data or 0) + t.byte_offset
        _aligned(name, ptr, n, code)
    except BaseException:
        release()
        raise
    return Vector(ptr, n, code, True, t.device_id, None, keep=(a, capsule), release=release)


# ---- the adapter -------------------------------------------------------------------------------

def vector(name: str, a: Any) -> Vector:
    """The Vector of any array dotcourse reads; TypeError or InvalidArgumentError with the reason.

    Parameters
    ----------
    name : str
        "x" or "y", for the messages.
    a : array
        See the module's docstring for what is read.

    Returns
    -------
    Vector
        Call its ``release`` (when not None) once the C call has returned.
    """
    np = numpy()
    if isinstance(a, np.ndarray):
        return from_numpy(name, a)
    mods = sys.modules
    torch = mods.get("torch")
    if torch is not None and isinstance(a, torch.Tensor):
        return _from_torch(name, a, torch)
    cupy = mods.get("cupy")
    if cupy is not None and type(a) is cupy.ndarray:  # exactly CuPy's: a subclass goes through CAI
        return _from_cupy(name, a, cupy)
    try:
        cai = a.__cuda_array_interface__
    except AttributeError:
        cai = None
    if cai is not None:
        return from_cai(name, a, cai)
    if hasattr(a, "__dlpack__") and hasattr(a, "__dlpack_device__"):
        device_type = a.__dlpack_device__()[0]
        if device_type in (KDL_CUDA, KDL_CUDA_MANAGED):
            return from_dlpack(name, a)
        if not hasattr(a, "__array_interface__"):
            raise TypeError(f"{name} is a DLPack tensor on device type {int(device_type)}, not CUDA memory: "
                            "pass host data as a NumPy array (numpy.from_dlpack)")
    if hasattr(a, "__array_interface__"):
        return _from_array_interface(name, a)
    raise E.not_an_array(name, a)
