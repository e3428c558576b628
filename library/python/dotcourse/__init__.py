"""dotcourse: the course's GPU dot product from Python (a compiled extension over libdotcourse.so).

    import numpy as np, dotcourse
    with dotcourse.Context(n_max=1 << 20) as ctx:
        r = ctx.dot(x, y)          # NumPy arrays: copied to the GPU, result a float
        r = ctx.dot(dx, dy)        # CuPy / PyTorch / CAI / DLPack CUDA arrays: no copy, on their stream
        r = ctx.dot(w, mask)       # any two of float64, float32, float16, bfloat16, int8, bool
                                   # (chapter 10; an integer pair gives an exact Python int)

Errors: every failure of the library is a DotcourseError with ``status`` (a Status) and
``message``; its subclasses are also the Python exceptions a caller expects (TooLargeError is a
ValueError, OutOfMemoryError a MemoryError, NoGpuError, InvalidHandleError, ...). A wrong Python
type is a TypeError.

The library is found, in this order: the file named by the environment variable DOTCOURSE_LIB;
libdotcourse.so beside this file (an installed wheel); and only when the package is used from its
source folder in the course repository, the newest build/*/lib/libdotcourse.so there.

Where a host dot runs: ``ctx.dot(x, y, where="auto")`` (the default) sends two float32 NumPy
arrays wherever they finish soonest on this machine: the library's CPU dot (small n on the calling
thread, inside the compiled extension; NumPy's own dot only below a bound a calibration measured), the GPU, or both at once on two parts of the vectors, as the context's plan says
(``ctx.plan``; measured by ``ctx.calibrate()`` and cached per host and GPU, else the built-in rule:
the CPU, since host memory is faster than the link). ``where="cpu"`` and ``where="gpu"`` force a
path; ``ctx.last_call`` says what the last call did. ``Context(1, device="cpu")`` needs no GPU.

A Context may be shared by threads (the library locks it; the extension releases the GIL during
every call but the shortest, n < 2^14);
threads that should run at the same time use one Context each.

NumPy arrays seen again are pinned (the registration cache), where the GPU will read them
(where="gpu", or a plan that sends registered arrays of that size to the GPU). A NumPy float32
array passed to dot a second time (the same object, still alive) is registered with the library (cudaHostRegister) and
then copied straight to the GPU on every call, at the pinned rate, without staging: the motivating
program's case, the same arrays in every call. The Context keeps a reference to each registered
array, so its memory cannot be freed while it is registered; at most `pin_arrays` arrays (default
4) and `pin_bytes` bytes (default 1 GiB) stay registered, the least recently used is unregistered
and released first, and close() releases them all (ctx.unpin() does it at any time). Arrays
under 1 MiB are never registered (staging them costs little), nor are arrays seen only once (a
fresh array in every call pays nothing for the cache: the extension notes the last 4 x pin_arrays
first sightings itself and runs no Python for them), and a Context whose arrays keep pushing
each other out of the cache stops registering new ones. Context(..., pin_arrays=0) turns it off.
"""
from ._auto import LastCall
from ._context import Context, check_host_arrays, plan_choose
from ._errors import (CudaError, DotcourseError, InternalError, InvalidArgumentError, InvalidHandleError,
                      NoGpuError, OutOfMemoryError, Status, TooLargeError)
from ._lib import library_path, status_string, version
from ._version import __version__ as __version__

for _public in (Context, LastCall, Status, DotcourseError, InvalidArgumentError, TooLargeError, InvalidHandleError, NoGpuError,
                OutOfMemoryError, CudaError, InternalError):
    _public.__module__ = __name__  # dotcourse.TooLargeError in tracebacks and reprs, not dotcourse._errors...
del _public

__all__ = [
    "Context",
    "Status",
    "DotcourseError",
    "InvalidArgumentError",
    "TooLargeError",
    "InvalidHandleError",
    "NoGpuError",
    "OutOfMemoryError",
    "CudaError",
    "InternalError",
    "check_host_arrays",
    "plan_choose",
    "LastCall",
    "library_path",
    "status_string",
    "version",
    "__version__",
]
