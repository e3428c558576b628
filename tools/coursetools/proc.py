"""Running a command with its output appended to a log, and ending a process's children."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple


class GradeError(Exception):
    """The grader cannot do its job (not the student's fault): exit code 1."""


def run_logged(cmd: List[str], log: Path, timeout: Optional[float] = None, cwd: Optional[Path] = None,
               env: Optional[Dict[str, str]] = None, watch=None) -> Tuple[int, str]:
    """Runs cmd with stdout+stderr into `log` (appended); returns (exit code, its output). `env`:
    variables added to this process's environment. `watch`: an object with line(text) and
    check(pid), told of every line as it is printed and asked a few times a second whether to act on
    the running process (ctest.TestTimer ends a test that runs past its limit); its own lines, if
    it has any (watch.report()), end the output."""
    if watch is not None:
        return _run_watched(cmd, log, cwd, env, watch)
    with open(log, "a", encoding="utf-8", errors="replace") as f:
        f.write(f"\n$ {' '.join(cmd)}\n")
        f.flush()
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                               cwd=cwd, text=True, errors="replace",
                               env=dict(os.environ, **env) if env else None)
        except FileNotFoundError:
            raise GradeError(f"cannot run {cmd[0]}: not found on PATH")
        except subprocess.TimeoutExpired as e:
            out = e.stdout if isinstance(e.stdout, str) else (e.stdout or b"").decode("utf-8", "replace")
            f.write(out + f"\n(timed out after {timeout} s)\n")
            return -1, out + f"\n(timed out after {timeout} s)"
        f.write(p.stdout)
        return p.returncode, p.stdout


def _run_watched(cmd: List[str], log: Path, cwd: Optional[Path], env: Optional[Dict[str, str]],
                 watch) -> Tuple[int, str]:
    with open(log, "a", encoding="utf-8", errors="replace") as f:
        f.write(f"\n$ {' '.join(cmd)}\n")
        f.flush()
        try:
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=cwd, text=True,
                                 errors="replace", env=dict(os.environ, **env) if env else None)
        except FileNotFoundError:
            raise GradeError(f"cannot run {cmd[0]}: not found on PATH")
        lines: List[str] = []

        def read() -> None:
            for line in p.stdout:
                lines.append(line)
                f.write(line)
                watch.line(line)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        while p.poll() is None:
            watch.check(p.pid)
            time.sleep(0.1)
        reader.join()
        extra = watch.report()
        if extra:
            f.write(extra)
        return p.returncode, "".join(lines) + extra


def descendants(pid: int) -> List[int]:
    """Every process below `pid` (children, their children, ...), read from /proc; [] where there is
    no /proc (not Linux)."""
    parent: Dict[int, int] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for d in entries:
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as s:
                stat = s.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after the last ')'.
        try:
            parent[int(d)] = int(stat.rsplit(")", 1)[1].split()[1])
        except (IndexError, ValueError):
            continue
    found: List[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        found += kids
        todo += kids
    return found


def kill_children(pid: int) -> int:
    """SIGKILL every process below `pid`, not `pid` itself; returns how many were signalled."""
    n = 0
    for child in descendants(pid):
        try:
            os.kill(child, signal.SIGKILL)
            n += 1
        except OSError:
            pass
    return n
