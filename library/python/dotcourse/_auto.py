"""Where a host dot runs (issue 26): the C structs of dotcourse_dot_ex, the diagnostics of a call
(Context.last_call), and the calibration cache kept per host and device."""
from __future__ import annotations

import ctypes
import dataclasses
import json
import operator
import os
import pathlib
import re
import socket
from typing import Any, Dict, List, Optional

from ._ints import SIZE_MAX

WHERE = {"auto": 0, "cpu": 1, "gpu": 2}
PATHS = {1: "cpu", 2: "gpu", 3: "split"}
PATH_CODES = {v: k for k, v in PATHS.items()}

# Below this n, Context.dot(where="auto") on a float32 NumPy pair calls NumPy's own dot: a call into
# the library (ctypes, the arguments, the report, waking the CPU dot's threads) costs more than
# NumPy's whole dot of data that is still in the caches. A calibration (Context.calibrate) measures
# it on the host; this is the value without one.
NUMPY_BELOW = 1 << 17

CACHE_VERSION = 1


class Options(ctypes.Structure):
    """dotcourse_options."""

    _fields_ = [("size", ctypes.c_size_t), ("where", ctypes.c_int)]


class Report(ctypes.Structure):
    """dotcourse_report."""

    _fields_ = [("size", ctypes.c_size_t), ("path", ctypes.c_int), ("n_cpu", ctypes.c_size_t),
                ("n_gpu", ctypes.c_size_t), ("cpu_threads", ctypes.c_uint), ("registered", ctypes.c_int),
                ("calibrated", ctypes.c_int), ("seconds", ctypes.c_double)]


PLAN_ROWS = 32


class PlanRow(ctypes.Structure):
    """dotcourse_plan_row."""

    _fields_ = [("n_min", ctypes.c_size_t), ("registered", ctypes.c_int), ("path", ctypes.c_int),
                ("gpu_share", ctypes.c_double)]


class Plan(ctypes.Structure):
    """dotcourse_plan."""

    _fields_ = [("size", ctypes.c_size_t), ("calibrated", ctypes.c_int), ("cpu_threads", ctypes.c_uint),
                ("device", ctypes.c_char * 96), ("rows", ctypes.c_size_t), ("row", PlanRow * PLAN_ROWS)]


def options(where: int) -> Options:
    o = Options()
    o.size = ctypes.sizeof(Options)
    o.where = where
    return o


def new_report() -> Report:
    r = Report()
    r.size = ctypes.sizeof(Report)
    return r


def new_plan() -> Plan:
    p = Plan()
    p.size = ctypes.sizeof(Plan)
    return p


def plan_rows(plan: Plan) -> List[Dict[str, Any]]:
    """The plan's rows as dicts: n_min, registered (bool), path ("cpu", "gpu", "split"), gpu_share."""
    return [{"n_min": int(r.n_min), "registered": bool(r.registered), "path": PATHS.get(r.path, str(r.path)),
             "gpu_share": float(r.gpu_share)} for r in plan.row[:plan.rows]]


def set_rows(plan: Plan, rows: List[Dict[str, Any]]) -> None:
    """Writes rows (as plan_rows gives them) into plan; ValueError for a row that is not one."""
    if len(rows) > PLAN_ROWS:
        raise ValueError(f"a plan holds at most {PLAN_ROWS} rows, not {len(rows)}")
    for i, row in enumerate(rows):
        try:
            n_min = row["n_min"]
            if isinstance(n_min, bool) or not 0 <= operator.index(n_min) <= SIZE_MAX:
                raise ValueError(f"n_min must be an integer between 0 and {SIZE_MAX}")
            plan.row[i].n_min = operator.index(n_min)
            plan.row[i].registered = 1 if row["registered"] else 0
            plan.row[i].path = PATH_CODES[row["path"]]
            plan.row[i].gpu_share = float(row["gpu_share"])
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"plan row {i} is not a row ({row!r}): {e}") from e
    plan.rows = len(rows)


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
        host pair of other dtypes, on the GPU).
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


def from_report(where: str, n: int, r: Report) -> LastCall:
    path = PATHS.get(r.path, "?")
    if where != "auto":
        reason = f"where={where!r}"
    elif r.calibrated:
        reason = "auto: the calibrated plan's row for this n" + (" (registered arrays)" if r.registered else "")
    else:
        reason = "auto: the built-in rule (the CPU at every n: host memory is faster than the link)"
    return LastCall(where, path, n, int(r.n_cpu), int(r.n_gpu), int(r.cpu_threads), bool(r.registered),
                    bool(r.calibrated), float(r.seconds), reason)


def numpy_call(n: int, below: int) -> LastCall:
    return LastCall("auto", "numpy", n, n, 0, 1, False, False, 0.0,
                    f"auto: n < {below}, where NumPy's own dot costs less than a call into the library")


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
