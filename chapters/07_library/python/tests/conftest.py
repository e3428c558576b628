"""Fixtures: the package from this source tree, and a Context that skips (with the reason) where
there is no GPU or no library."""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # the package, without installing

np = pytest.importorskip("numpy", reason="NumPy is not installed (pip install numpy)")
import dotcourse  # noqa: E402


def _probe():
    try:
        with dotcourse.Context(16):
            return None
    except OSError as e:
        return f"libdotcourse.so not loadable: {e}"
    except dotcourse.DotcourseError as e:
        if e.status == dotcourse.NO_GPU:
            return f"COURSE-NO-GPU: {e}"
        raise


_WHY = None
_PROBED = False


def gpu_reason():
    global _WHY, _PROBED
    if not _PROBED:
        _WHY, _PROBED = _probe(), True
    return _WHY


@pytest.fixture
def ctx():
    why = gpu_reason()
    if why:
        pytest.skip(why)
    with dotcourse.Context(1 << 21) as c:
        yield c


@pytest.fixture
def lib_available():
    try:
        dotcourse.version()
    except OSError as e:
        pytest.skip(f"libdotcourse.so not loadable: {e}")
