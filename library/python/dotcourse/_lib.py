"""Finding libdotcourse.so and the compiled extension (dotcourse._core) that calls it."""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import pathlib
import sys
import threading
from typing import Any, Optional

from ._errors import Status, error_for

_HERE = pathlib.Path(__file__).resolve().parent
_lib: Any = None  # the extension module, once the library is open
_lock = threading.Lock()


def _source_tree_root() -> Optional[pathlib.Path]:
    """The course repository this package sits in, when it is used from its source folder
    (library/python/dotcourse); None for an installed package."""
    if not (_HERE.parent / "pyproject.toml").is_file():
        return None
    root = _HERE.parents[2] if len(_HERE.parents) > 2 else None
    if root is None or not (root / "library" / "library.cmake").is_file():
        return None
    return root


def library_path() -> Optional[pathlib.Path]:
    """Where libdotcourse.so is taken from.

    In this order: the file named by the environment variable ``DOTCOURSE_LIB``; ``libdotcourse.so``
    beside this package (an installed wheel); and only when the package is used from its source
    folder in the course repository, the newest ``build/*/lib/libdotcourse.so`` there. An installed
    package never looks into a build folder.

    Returns
    -------
    pathlib.Path or None
        The path (it may not exist, when DOTCOURSE_LIB names a missing file), or None when nothing
        was found.
    """
    env = os.environ.get("DOTCOURSE_LIB")
    if env:
        return pathlib.Path(env)
    beside = _HERE / "libdotcourse.so"
    if beside.is_file():
        return beside
    root = _source_tree_root()
    if root is None:
        return None
    found = sorted(root.glob("build/*/lib/libdotcourse.so"), key=lambda p: p.stat().st_mtime, reverse=True)
    return found[0] if found else None


def core_path() -> Optional[pathlib.Path]:
    """Where the compiled extension (dotcourse._core) is taken from: beside this package (an
    installed wheel), else the file named by ``DOTCOURSE_CORE``, else, only when the package is used
    from its source folder, the newest ``build/*/python-core-build-*/out/_core*`` built for this Python
    (library/python/run_pytest.sh builds it)."""
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    beside = sorted(_HERE.glob("_core*" + suffix))
    if beside:
        return beside[0]
    env = os.environ.get("DOTCOURSE_CORE")
    if env:
        return pathlib.Path(env)
    root = _source_tree_root()
    if root is None:
        return None
    found = sorted(root.glob("build/*/python-core-build-*/out/_core" + suffix), key=lambda p: p.stat().st_mtime, reverse=True)
    return found[0] if found else None


def _import_core() -> Any:
    try:
        from . import _core  # an installed package: the extension lies beside this file
        return _core
    except ImportError:
        pass
    path = core_path()
    if path is None or not path.is_file():
        raise OSError("dotcourse's compiled extension (_core) not found: install the package (pip install "
                      "library/python), or build it for a course build (library/python/run_pytest.sh does), or set "
                      f"DOTCOURSE_CORE to its path (looked at {path})")
    spec = importlib.util.spec_from_file_location(__package__ + "._core", path)
    if spec is None or spec.loader is None:
        raise OSError(f"{path} is not a Python extension module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[spec.name] = module
    return module


def load() -> Any:
    """The compiled extension (dotcourse._core) with the library open (once per process).

    Raises
    ------
    OSError
        No libdotcourse.so or no extension was found, or one could not be loaded; the message says
        where it looked and how to get one.
    """
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        path = library_path()
        if path is None or not path.is_file():
            where = f"looked at {path}" if path is not None else (
                "looked beside the package" + (" and in the repository's build/*/lib" if _source_tree_root() else ""))
            raise OSError("libdotcourse.so not found: install the package (pip install library/python), "
                          "build it in the course (cmake --build --preset solutions --target dotcourse), or set "
                          f"DOTCOURSE_LIB to its path ({where})")
        core = _import_core()
        core.open(str(path.resolve()))
        _lib = core
        return core


def check(lib: Any, status: int) -> None:
    """Raises the status's DotcourseError subclass, with the library's message, unless status is OK."""
    if status != 0:
        message = lib.last_error() or lib.status_string(status)
        raise error_for(status, message)


def version() -> str:
    """The loaded library's version (``dotcourse_version()``).

    Returns
    -------
    str
        The library's one version (library/packaging/version.cmake), as ``"MAJOR.MINOR.PATCH"``;
        equal to ``dotcourse.__version__`` for a consistent install.

    Raises
    ------
    OSError
        The library could not be found or loaded.
    """
    return str(load().version())


def status_string(status: "Status | int") -> str:
    """The library's one-line description of a status code.

    Parameters
    ----------
    status : Status or int
        A ``dotcourse_status`` code.

    Returns
    -------
    str
        For example ``"n is larger than the context's n_max"``.

    Raises
    ------
    OSError
        The library could not be found or loaded.
    """
    return str(load().status_string(int(status)))
