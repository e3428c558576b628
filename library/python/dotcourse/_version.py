"""The package's version: the library's one version (library/packaging/version.cmake).

An installed package reads the file the build wrote into it (_build_version.py); used from its
source folder, it reads version.cmake itself. Either way it is the version of dotcourse.h's
dotcourse_version() built from the same tree.
"""
from __future__ import annotations

import pathlib
import re


def _from_source() -> str:
    here = pathlib.Path(__file__).resolve().parent
    source = here.parents[1] / "packaging" / "version.cmake"  # library/packaging
    try:
        found = re.search(r"set\(DOTCOURSE_VERSION ([0-9][0-9A-Za-z.+-]*)\)", source.read_text())
    except OSError:
        found = None
    return found.group(1) if found else "0+unknown"


__version__: str
try:
    from ._build_version import version as __version__  # type: ignore[import-not-found,no-redef,unused-ignore]
except ImportError:
    __version__ = _from_source()

__all__ = ["__version__"]
