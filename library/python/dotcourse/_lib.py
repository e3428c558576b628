"""Finding and loading libdotcourse.so, and the C signatures of every function of dotcourse.h."""
from __future__ import annotations

import ctypes
import os
import pathlib
import threading
from typing import Optional

from ._errors import Status, error_for

_HERE = pathlib.Path(__file__).resolve().parent
_lib: Optional[ctypes.CDLL] = None
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


def _declare(lib: ctypes.CDLL) -> None:
    c_status, ctx_p, c_dtype, vp, size = ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t
    fp, dp = ctypes.POINTER(ctypes.c_float), ctypes.POINTER(ctypes.c_double)
    sigs = {
        "dotcourse_version": (ctypes.c_char_p, []),
        "dotcourse_status_string": (ctypes.c_char_p, [c_status]),
        "dotcourse_last_error": (ctypes.c_char_p, []),
        "dotcourse_create": (c_status, [ctypes.c_int, size, ctypes.POINTER(ctx_p)]),
        "dotcourse_destroy": (c_status, [ctx_p]),
        "dotcourse_n_max": (c_status, [ctx_p, ctypes.POINTER(size)]),
        "dotcourse_dot": (c_status, [ctx_p, vp, vp, size, fp]),
        "dotcourse_host_register": (c_status, [ctx_p, vp, size]),
        "dotcourse_host_unregister": (c_status, [ctx_p, vp]),
        "dotcourse_dot_device": (c_status, [ctx_p, vp, vp, size, vp, fp]),
        "dotcourse_accumulator": (c_status, [c_dtype, c_dtype, ctypes.POINTER(c_dtype)]),
        "dotcourse_dot_typed": (c_status, [ctx_p, vp, c_dtype, vp, c_dtype, size, vp, dp]),
        "dotcourse_dot_typed_host": (c_status, [ctx_p, vp, c_dtype, vp, c_dtype, size, dp]),
        # Host arrays on the fastest path (issue 26); the structs are in _auto.py, passed by reference.
        "dotcourse_create_cpu": (c_status, [ctypes.c_uint, ctypes.POINTER(ctx_p)]),
        "dotcourse_dot_ex": (c_status, [ctx_p, vp, vp, size, vp, fp, vp]),
        "dotcourse_plan_choose": (c_status, [vp, size, ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                                             ctypes.POINTER(size)]),
        "dotcourse_get_plan": (c_status, [ctx_p, vp]),
        "dotcourse_set_plan": (c_status, [ctx_p, vp]),
        "dotcourse_calibrate": (c_status, [ctx_p, size, vp]),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes


def _preload_cuda() -> bool:
    """Loads libcudart and libcublas (with their dependencies) from $CUDA_HOME, $CUDA_PATH or
    /usr/local/cuda, so that libdotcourse.so, whose rpath is only its own folder, finds them by
    name. True when something was loaded."""
    dirs = [pathlib.Path(d) / sub for d in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda")
            if d for sub in ("lib64", "lib", "targets/x86_64-linux/lib")]
    loaded = False
    for stem in ("libcudart.so", "libcublasLt.so", "libcublas.so"):
        for d in dirs:
            found = sorted(d.glob(stem + ".[0-9]*"))
            if found:
                try:
                    ctypes.CDLL(str(found[0]), mode=ctypes.RTLD_GLOBAL)
                    loaded = True
                    break
                except OSError:
                    pass
    return loaded


def load() -> ctypes.CDLL:
    """The loaded library, with every function's signature declared (loaded once per process).

    Raises
    ------
    OSError
        No libdotcourse.so was found, or it could not be loaded; the message says where it looked
        and how to get one.
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
        try:
            lib = ctypes.CDLL(str(path))
        except OSError as e:  # libcudart/libcublas not on the loader's path: look where CUDA lives
            if not _preload_cuda():
                raise OSError(f"{path} could not be loaded: {e}. It needs the CUDA runtime and cuBLAS of its "
                              "CUDA major version: put their folder on LD_LIBRARY_PATH or set CUDA_HOME") from e
            lib = ctypes.CDLL(str(path))
        _declare(lib)
        _lib = lib
        return lib


def check(lib: ctypes.CDLL, status: int) -> None:
    """Raises the status's DotcourseError subclass, with the library's message, unless status is OK."""
    if status != 0:
        message = lib.dotcourse_last_error().decode(errors="replace") or lib.dotcourse_status_string(status).decode()
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
    return str(load().dotcourse_version().decode())


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
    return str(load().dotcourse_status_string(int(status)).decode())
