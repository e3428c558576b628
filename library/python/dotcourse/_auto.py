"""Where a host dot runs (issue 26): the plan's rows, the diagnostics of a call
(Context.last_call), and the calibration cache kept per host and device."""
from __future__ import annotations

import dataclasses
import json
import operator
import os
import pathlib
import re
import socket
from typing import Any, Dict, List, Optional, Tuple

from ._ints import SIZE_MAX

WHERE = {"auto": 0, "cpu": 1, "gpu": 2}
WHERE_NAMES = {v: k for k, v in WHERE.items()}
PATHS = {1: "cpu", 2: "gpu", 3: "split"}
PATH_CODES = {v: k for k, v in PATHS.items()}

# For n in [NUMPY_FROM, NUMPY_BELOW), Context.dot(where="auto") on a float32 NumPy pair calls
# NumPy's own dot: the window of a context nobody calibrated. Below it the extension's call into the
# library costs less (tens of nanoseconds, small n on the calling thread); inside it both arrays sit
# in the core's caches and NumPy's float32 dot does half the arithmetic of the library's double
# accumulators; above it the library's threads read host memory faster than one thread can. It is
# where calibrations on H200 hosts put it (library/bench/bench_host.py's calibrate(), in every run
# of d5b7668; at 2^12 the library's CPU dot was the faster once the bench warmed each block up);
# Context.calibrate measures the window of this host.
NUMPY_FROM = 1 << 13
NUMPY_BELOW = 1 << 18


def numpy_window(sizes: List[int], t_numpy: List[float], t_library: List[float]) -> Tuple[int, int]:
    """(numpy_from, numpy_below): the one window of n, from the sizes measured, where "auto" calls
    NumPy's own dot instead of the library, chosen so that the calls lose least against the faster
    of the two at every size measured (the sum over the sizes of the time taken over the better
    time). Sizes ascending; t_* their median times. (0, 0): never NumPy. A window that starts at the
    first size starts at 0; one that ends at the last size ends past it (twice the last size)."""
    m = len(sizes)
    if m == 0 or len(t_numpy) != m or len(t_library) != m:
        raise ValueError("numpy_window: one time of each kind per size")
    best = [min(a, b) for a, b in zip(t_numpy, t_library)]
    choice, cost = (0, 0), sum(t / b for t, b in zip(t_library, best))  # never NumPy
    for a in range(m):
        for b in range(a + 1, m + 1):
            c = sum((t_numpy[k] if a <= k < b else t_library[k]) / best[k] for k in range(m))
            if c < cost - 1e-12:  # strictly better: a tie keeps the library (and the smaller window)
                choice, cost = (a, b), c
    a, b = choice
    if a == b:
        return 0, 0
    return (0 if a == 0 else sizes[a]), (sizes[b] if b < m else 2 * sizes[-1])

CACHE_VERSION = 1


PLAN_ROWS = 32


def rows_for_core(rows: List[Dict[str, Any]]) -> List[Tuple[int, bool, int, float]]:
    """rows (as plan_rows gives them) as the extension takes them: (n_min, registered, path code,
    gpu_share); ValueError for a row that is not one."""
    if len(rows) > PLAN_ROWS:
        raise ValueError(f"a plan holds at most {PLAN_ROWS} rows, not {len(rows)}")
    out = []
    for i, row in enumerate(rows):
        try:
            n_min = row["n_min"]
            if isinstance(n_min, bool) or not 0 <= operator.index(n_min) <= SIZE_MAX:
                raise ValueError(f"n_min must be an integer between 0 and {SIZE_MAX}")
            out.append((operator.index(n_min), bool(row["registered"]), PATH_CODES[row["path"]],
                        float(row["gpu_share"])))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"plan row {i} is not a row ({row!r}): {e}") from e
    return out


def plan_rows(rows: List[Tuple[int, bool, int, float]]) -> List[Dict[str, Any]]:
    """The extension's rows as dicts: n_min, registered (bool), path ("cpu", "gpu", "split"), gpu_share."""
    return [{"n_min": int(n_min), "registered": bool(registered), "path": PATHS.get(path, str(path)),
             "gpu_share": float(share)} for n_min, registered, path, share in rows]


@dataclasses.dataclass(frozen=True)
class LastCall:
    """What the last host dot of a Context did (``Context.last_call``).

    Attributes
    ----------
    where : str
        What the caller asked for: "auto", "cpu" or "gpu".
    path : str
        What ran: "numpy" (NumPy's own dot: for small n a call into the library costs more than
        NumPy's whole dot), "cpu" (the library's threaded CPU dot), "gpu" (copied to the GPU),
        "split" (both at once on two parts), "device" (arrays already on the GPU) or "typed" (a
        host pair of other dtypes, on the GPU; on a CPU-only context such a pair is "cpu").
    n, n_cpu, n_gpu : int
        Elements in all, summed on the CPU, summed on the GPU.
    cpu_threads : int
        Threads of the CPU dot (0 when the CPU took no part).
    registered : bool
        Both arrays lay in ranges registered with the library (the registration cache).
    calibrated : bool
        An "auto" choice from a measured plan (Context.calibrate or the cache); False for the
        built-in rule and for a forced where.
    seconds : float
        Wall time inside the library (0.0 for "numpy").
    reason : str
        Why this path, in words.
    """

    where: str
    path: str
    n: int
    n_cpu: int
    n_gpu: int
    cpu_threads: int
    registered: bool
    calibrated: bool
    seconds: float
    reason: str


def from_report(report: Tuple[int, int, int, int, int, int, bool, bool, float]) -> LastCall:
    """The LastCall of the extension's record of a dotcourse_dot_ex call (Core.last())."""
    code, n, path_code, n_cpu, n_gpu, cpu_threads, registered, calibrated, seconds = report
    where = WHERE_NAMES[code]
    path = PATHS.get(path_code, "?")
    if where != "auto":
        reason = f"where={where!r}"
    elif calibrated:
        reason = "auto: the calibrated plan's row for this n" + (" (registered arrays)" if registered else "")
    else:
        reason = "auto: the built-in rule (the CPU at every n: host memory is faster than the link)"
    return LastCall(where, path, n, int(n_cpu), int(n_gpu), int(cpu_threads), bool(registered),
                    bool(calibrated), float(seconds), reason)


def numpy_call(n: int, below: int, start: int = 0) -> LastCall:
    where = f"{start} <= n < {below}" if start else f"n < {below}"
    return LastCall("auto", "numpy", n, n, 0, 1, False, False, 0.0,
                    f"auto: {where}, where NumPy's own dot costs less than a call into the library")


def other_call(where: str, path: str, n: int, reason: str) -> LastCall:
    return LastCall(where, path, n, 0, n, 0, False, False, 0.0, reason)


# ---- the cache --------------------------------------------------------------------------------


def cache_path(device_name: str) -> pathlib.Path:
    """Where the calibration of this host and `device_name` is kept: the file named by
    ``DOTCOURSE_CALIBRATION``, else ``$XDG_CACHE_HOME/dotcourse/<host>-<device>.json`` (default
    ``~/.cache``)."""
    env = os.environ.get("DOTCOURSE_CALIBRATION")
    if env:
        return pathlib.Path(env)
    base = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache")
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{socket.gethostname()}-{device_name or 'cpu'}").strip("_")
    return base / "dotcourse" / f"{slug}.json"


def load(path: pathlib.Path, device_name: str, cpu_threads: int) -> Optional[Dict[str, Any]]:
    """The cached calibration at `path` when it is for this host, device and thread count; None when
    there is none or it is for another (a file that is not a calibration is ignored too)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
        return None
    if data.get("host") != socket.gethostname() or data.get("device") != device_name \
            or data.get("cpu_threads") != cpu_threads:
        return None
    return data


def save(path: pathlib.Path, data: Dict[str, Any]) -> None:
    """Writes the calibration atomically (a temporary file renamed over the old one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)
