"""The library's status codes (dotcourse_status) and the exceptions that carry them.

Every failure the library reports, and every argument the binding refuses for the library's own
reasons, is a DotcourseError with its `status` and `message`; each status has a subclass that also
derives from the Python exception a caller would catch for it (TooLargeError is a ValueError,
OutOfMemoryError a MemoryError). A wrong Python type stays a plain TypeError.
"""
from __future__ import annotations

import enum
from typing import Any, Dict, Tuple, Type


class Status(enum.IntEnum):
    """The codes of ``dotcourse_status`` (dotcourse.h)."""

    OK = 0
    INVALID_ARGUMENT = 1
    TOO_LARGE = 2
    INVALID_HANDLE = 3
    NO_GPU = 4
    OUT_OF_MEMORY = 5
    CUDA = 6
    INTERNAL = 7


class DotcourseError(RuntimeError):
    """A call the library (or the binding, on its behalf) refused or could not complete.

    Parameters
    ----------
    status : Status or int
        The library's status code; an unknown code is kept as the int.
    message : str
        The library's message for the failing call (``dotcourse_last_error``), or the binding's.

    Attributes
    ----------
    status : Status or int
    message : str
    """

    def __init__(self, status: "Status | int", message: str) -> None:
        try:
            status = Status(status)
        except ValueError:
            pass
        name = status.name if isinstance(status, Status) else str(status)
        super().__init__(f"dotcourse {name}: {message}")
        self.status = status
        self.message = message

    def __reduce__(self) -> Tuple[Any, Tuple[Any, str]]:  # pickles (e.g. across multiprocessing) with both arguments
        return (type(self), (self.status, self.message))


class InvalidArgumentError(DotcourseError, ValueError):
    """A value out of range: unequal lengths, a NULL pointer, a bad count (INVALID_ARGUMENT)."""


class TooLargeError(DotcourseError, ValueError):
    """n is larger than the context's n_max (TOO_LARGE)."""


class InvalidHandleError(DotcourseError, ValueError):
    """The context is closed, or its handle was never created (INVALID_HANDLE)."""


class NoGpuError(DotcourseError):
    """No usable CUDA device, or no device with that number (NO_GPU)."""


class OutOfMemoryError(DotcourseError, MemoryError):
    """Device memory (or pinned host memory) is exhausted (OUT_OF_MEMORY)."""


class CudaError(DotcourseError):
    """Any other CUDA error; the message names it (CUDA)."""


class InternalError(DotcourseError):
    """A bug in the library: please report it with the message (INTERNAL)."""


_BY_STATUS: Dict[int, Type[DotcourseError]] = {
    Status.INVALID_ARGUMENT: InvalidArgumentError,
    Status.TOO_LARGE: TooLargeError,
    Status.INVALID_HANDLE: InvalidHandleError,
    Status.NO_GPU: NoGpuError,
    Status.OUT_OF_MEMORY: OutOfMemoryError,
    Status.CUDA: CudaError,
    Status.INTERNAL: InternalError,
}


def error_for(status: int, message: str) -> DotcourseError:
    """The exception for a status other than OK.

    Parameters
    ----------
    status : int
        A ``dotcourse_status`` code.
    message : str
        What went wrong, with the details.

    Returns
    -------
    DotcourseError
        An instance of the status's subclass (DotcourseError itself for an unknown code).
    """
    return _BY_STATUS.get(status, DotcourseError)(status, message)


# One wording per error: the binding's own refusals, shared by every path (host, device, any dtype).
DTYPES_TEXT = "float64, float32, float16, bfloat16, int8 or bool"


def too_large(n: int, n_max: int) -> TooLargeError:
    return TooLargeError(Status.TOO_LARGE, f"n = {n} is larger than this context's n_max = {n_max}: "
                                           "create the Context with a larger n_max")


def unequal_lengths(nx: int, ny: int) -> InvalidArgumentError:
    return InvalidArgumentError(Status.INVALID_ARGUMENT,
                                f"x has {nx} elements and y has {ny}: a dot product needs equal lengths")


def not_a_vector(name: str, shape: Tuple[int, ...]) -> InvalidArgumentError:
    return InvalidArgumentError(Status.INVALID_ARGUMENT, f"{name} has shape {tuple(shape)}; dotcourse takes 1-D "
                                                         f"vectors ({name}.ravel() if you mean all elements)")


def not_contiguous(name: str, strides: Tuple[int, ...]) -> InvalidArgumentError:
    return InvalidArgumentError(Status.INVALID_ARGUMENT, f"{name} is not contiguous (strides {tuple(strides)} "
                                                         "bytes): pass a contiguous copy")


def bad_dtype(name: str, dtype: object) -> TypeError:
    return TypeError(f"{name} has dtype {dtype}; dotcourse takes {DTYPES_TEXT} (convert it knowingly, "
                     "e.g. with .astype)")


def not_an_array(name: str, a: object) -> TypeError:
    return TypeError(f"{name} is a {type(a).__module__}.{type(a).__qualname__}, not an array dotcourse reads: "
                     "pass NumPy arrays (or objects with __array_interface__) on the host, or CuPy arrays, "
                     "PyTorch CUDA tensors, __cuda_array_interface__ or DLPack producers on the GPU")


def mixed_places() -> TypeError:
    return TypeError("one of x and y is on the GPU and the other on the host: move both to the same place")


def mixed_streams() -> InvalidArgumentError:
    return InvalidArgumentError(Status.INVALID_ARGUMENT,
                                "x and y come from different streams: synchronize one of them first")


def closed() -> InvalidHandleError:
    return InvalidHandleError(Status.INVALID_HANDLE, "this dotcourse.Context is closed")
