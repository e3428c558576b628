"""The C ABI of libdotcourse from the benchmarks, through ctypes: the same library file the package
opened (dotcourse._lib), called on a Context's own handle, so that a benchmark can time the C call a
Context.dot makes without the package's binding around it. The package itself no longer uses ctypes
(it calls the library from its compiled extension, dotcourse._core); this is the benchmarks' own
small handle, and only the few functions they call are declared."""
from __future__ import annotations

import ctypes
from typing import Any, Tuple

import dotcourse
from dotcourse import _lib

WHERE = {"auto": 0, "cpu": 1, "gpu": 2}


class Options(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("where", ctypes.c_int)]


class Report(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("path", ctypes.c_int), ("n_cpu", ctypes.c_size_t),
                ("n_gpu", ctypes.c_size_t), ("cpu_threads", ctypes.c_uint), ("registered", ctypes.c_int),
                ("calibrated", ctypes.c_int), ("seconds", ctypes.c_double)]


def library(ctx: "dotcourse.Context") -> Tuple[Any, int]:
    """(the ctypes library, ctx's dotcourse_context* as an int). ctypes opens the file the package
    opened: the dynamic loader hands back the same loaded library, so the handle is valid in it."""
    core = _lib.load()
    lib = ctypes.CDLL(core.path(), mode=ctypes.RTLD_LOCAL)
    p, f, sz = ctypes.c_void_p, ctypes.c_float, ctypes.c_size_t
    lib.dotcourse_dot.argtypes = [p, p, p, sz, ctypes.POINTER(f)]
    lib.dotcourse_dot_ex.argtypes = [p, p, p, sz, ctypes.POINTER(Options), ctypes.POINTER(f), ctypes.POINTER(Report)]
    lib.dotcourse_version.restype = ctypes.c_char_p
    return lib, ctx._core.handle


def options(where: str) -> Options:
    return Options(ctypes.sizeof(Options), WHERE[where])


def new_report() -> Report:
    return Report(size=ctypes.sizeof(Report))
