"""Fixtures: the package (from this source tree, or the installed one when DOTCOURSE_TEST_INSTALLED=1,
as ci_wheel.sh runs it), and a Context that skips (with the reason) where there is no GPU or no library."""
import os
import pathlib
import sys

import pytest

SOURCE = pathlib.Path(__file__).resolve().parents[1]
if os.environ.get("DOTCOURSE_TEST_INSTALLED") != "1":
    sys.path.insert(0, str(SOURCE))  # the package, without installing

np = pytest.importorskip("numpy", reason="NumPy is not installed (pip install numpy)")
import dotcourse  # noqa: E402

if os.environ.get("DOTCOURSE_TEST_INSTALLED") == "1" and SOURCE in pathlib.Path(dotcourse.__file__).resolve().parents:
    raise RuntimeError(f"DOTCOURSE_TEST_INSTALLED=1 but dotcourse was imported from the source tree ({dotcourse.__file__})")


def _probe():
    try:
        with dotcourse.Context(16):
            return None
    except OSError as e:
        return f"libdotcourse.so not loadable: {e}"
    except dotcourse.NoGpuError as e:
        return f"COURSE-NO-GPU: {e}"


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
