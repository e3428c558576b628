"""The package's PEP 517 build backend: scikit-build-core, after one step of its own.

The CMake project that builds libdotcourse.so (library/packaging/CMakeLists.txt) reads the course
kit (common/), the library's own sources (library/src/) and chapter 07's lesson files (c_api.cpp,
dotcourse.h, dot.cu/hpp) from the repository, outside this folder, where an sdist cannot reach. So before every hook, from inside the course repository, the files it needs
are copied into _vendor/ in the repository's own layout (git-ignored, and included in the sdist by
pyproject.toml's sdist.include). An unpacked sdist has _vendor/ already and no repository around
it: then nothing is copied. `pip install library/python`, `python -m build` and
`pip wheel` all pass through here.
"""
from __future__ import annotations

import pathlib
import shutil
from typing import Any, Dict, List, Optional

from scikit_build_core import build as _skbuild

HERE = pathlib.Path(__file__).resolve().parents[1]  # library/python (or the sdist's root)
VENDOR = HERE / "_vendor"
# What the packaging project reads, relative to the repository root (globs).
SOURCES = ["LICENSE", "common/course/**/*", "common/src/**/*", "library/src/*",
           "library/dotcourse.map", "library/packaging/*.cmake",
           "library/packaging/*.in", "library/packaging/CMakeLists.txt",
           "library/python/core.cmake", "library/python/src/*"]
# Chapter 07's lesson files the library compiles, from solutions/07_library (else chapters/07_library).
ENGINE = ["c_api.cpp", "dotcourse.h", "dot.cu", "dot.hpp"]


def _repository() -> Optional[pathlib.Path]:
    root = HERE.parents[1] if len(HERE.parents) > 1 else None
    if root is not None and HERE == root / "library" / "python" \
            and (root / "library" / "packaging" / "CMakeLists.txt").is_file():
        return root
    return None


def vendor() -> None:
    """Copies the sources into _vendor/ (from the repository), or checks they are there (an sdist)."""
    root = _repository()
    if root is None:
        if not (VENDOR / "library" / "packaging" / "CMakeLists.txt").is_file():
            raise RuntimeError(f"{HERE} is neither library/python of the course repository nor an "
                               "unpacked dotcourse sdist (no _vendor/): build from the repository or the sdist")
        return
    tree = "solutions" if (root / "solutions" / "07_library" / "dot.cu").is_file() else "chapters"
    files: List[pathlib.Path] = []
    for pattern in SOURCES:
        files += sorted(p for p in root.glob(pattern) if p.is_file())
    files += [root / tree / "07_library" / name for name in ENGINE]
    fresh = VENDOR.with_name("_vendor.tmp")
    shutil.rmtree(fresh, ignore_errors=True)
    for f in files:
        if not f.is_file():
            raise RuntimeError(f"the packaging project needs {f}, which is missing")
        target = fresh / f.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, target)
    shutil.rmtree(VENDOR, ignore_errors=True)
    fresh.rename(VENDOR)


# ---- the PEP 517 / 660 hooks: vendor(), then scikit-build-core's ----------------------------------

def get_requires_for_build_sdist(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    vendor()
    return _skbuild.get_requires_for_build_sdist(config_settings)


def get_requires_for_build_wheel(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    vendor()
    return _skbuild.get_requires_for_build_wheel(config_settings)


def get_requires_for_build_editable(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    vendor()
    return _skbuild.get_requires_for_build_editable(config_settings)


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    vendor()
    return _skbuild.prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def prepare_metadata_for_build_editable(metadata_directory: str,
                                        config_settings: Optional[Dict[str, Any]] = None) -> str:
    vendor()
    return _skbuild.prepare_metadata_for_build_editable(metadata_directory, config_settings)


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    vendor()
    return _skbuild.build_sdist(sdist_directory, config_settings)


def build_wheel(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                metadata_directory: Optional[str] = None) -> str:
    vendor()
    return _skbuild.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                   metadata_directory: Optional[str] = None) -> str:
    vendor()
    return _skbuild.build_editable(wheel_directory, config_settings, metadata_directory)
