"""Integer arguments: anything with __index__ (int, numpy.int64, a 0-d integer array), bounds checked.

ctypes converts a Python int to size_t modulo 2^64: 2**64 + 5 would reach the library as 5. Every
integer the binding passes on goes through index() first, so it arrives whole or is refused.
"""
from __future__ import annotations

import operator

from ._errors import InvalidArgumentError, Status

SIZE_MAX = (1 << 64) - 1  # size_t on the 64-bit platforms the library builds for
INT_MAX = (1 << 31) - 1   # C int


def index(name: str, value: object, lo: int, hi: int) -> int:
    """``value`` as a Python int in [lo, hi].

    Parameters
    ----------
    name : str
        The argument's name, for the message.
    value : object
        An int or anything with ``__index__`` (``numpy.int64(1024)``); not a bool, not a float.
    lo, hi : int
        The inclusive bounds.

    Returns
    -------
    int

    Raises
    ------
    TypeError
        ``value`` is not an integer (a float, a string, a bool).
    InvalidArgumentError
        ``value`` is outside [lo, hi] (a ValueError).
    """
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, not a bool (got {value!r})")
    try:
        i = operator.index(value)  # type: ignore[arg-type]  # a TypeError is the answer for a non-integer
    except TypeError:
        raise TypeError(f"{name} must be an integer (got {value!r} of type {type(value).__name__})") from None
    if not lo <= i <= hi:
        raise InvalidArgumentError(Status.INVALID_ARGUMENT, f"{name} must be between {lo} and {hi} (got {i})")
    return i
