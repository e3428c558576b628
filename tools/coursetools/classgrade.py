"""tools/grade-class: grade every submission of a class, one worker per GPU, resumable, with each
submission's grade isolated from the others; or write a Slurm job array that does the same on a
cluster, and merge its outputs into the same gradebook.

A class folder holds one folder per student: a copy of `chapters/`, or a checkout of the student's
repository (which holds `chapters/`). Each submission is graded by tools/grade in a process of its
own (its command line and exit codes are the only interface: 0 assessed, 1 build failure or grader
error, 2 bad arguments, 3 incomplete), and the gradebook is read from the results.json files it
writes. Standard library only, like the rest of the package.

Isolation of one submission from the rest of the class:
- its tree is copied (regular files only, a size cap per file) into a scratch folder and made
  read-only; the grade reads that copy;
- each worker grades against its own copy of the course, whose files are hashed before and checked
  after every grade: a change is recorded ("wrote outside its folder: <path>") and undone;
- the class folder's submissions are watched too (sizes and times), and a change is laid at the
  door of the grade that was running when it happened (each of several is graded again alone);
- the grade runs in a session of its own under a wall-clock limit (the whole process group is
  killed), with a cap on its processes (a fork bomb is killed and the submission refused), and
  rlimits: CPU seconds, file size, no core files, and RLIMIT_NPROC where it holds (not for root);
- each worker is pinned to its own share of the cores, so one grade's build cannot slow another's
  threaded CPU measurements (tools/grade scales its CPU thresholds with the cores it sees);
- the host's memory cannot be shared out: with two workers or more, every grade gets
  `--host-lock BUILD_ROOT/host.lock`, and a measurement taken again (short of full marks) waits
  until no other grade builds, tests or measures (coursetools/hostlock.py).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import os
import queue
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from . import REPO

# Statuses of a submission in the gradebook. FINAL ones are not graded again when unchanged.
GRADED, INCOMPLETE, BUILD_ERROR, REFUSED = "graded", "incomplete", "build-error", "refused"
TIMED_OUT, CRASHED, WROTE_OUTSIDE = "timed-out", "crashed", "wrote-outside"
GRADER_ERROR, MISSING = "grader-error", "missing"
FINAL = {GRADED, INCOMPLETE, BUILD_ERROR, REFUSED, TIMED_OUT, CRASHED, WROTE_OUTSIDE}
WITH_POINTS = {GRADED, INCOMPLETE, BUILD_ERROR, WROTE_OUTSIDE}
STATUS_HELP = {
    GRADED: "every graded item was assessed (tools/grade exit 0)",
    INCOMPLETE: "some points were not assessed, as the GPU tests did not run (exit 3): not a zero",
    BUILD_ERROR: "the submission did not compile: 0 points (report.md shows the compiler's error)",
    REFUSED: "not graded: not a submission (no chapters/), refused by --strict, or a fork bomb",
    TIMED_OUT: "its grade ran past --timeout and was killed: no points recorded",
    CRASHED: "the grader died (a signal, an unexpected exit code): no points recorded",
    WROTE_OUTSIDE: "it changed files outside its folders (listed in reason); points kept for you to judge",
    GRADER_ERROR: "tools/grade could not do its job (not the student's fault); graded again on resume",
    MISSING: "a Slurm task left no result (see the task's log)",
}

RECORD = "class.json"           # one per student folder of --out: the key and the outcome
GRADEBOOK = "gradebook.csv"
SUMMARY = "class_summary.md"
PLAN = "plan.json"              # --slurm: what the array tasks grade
SBATCH = "grade-class.sbatch"

SKIP_DIRS = {".git", "__pycache__", ".pytest_cache", ".venv", "Testing", "node_modules"}
SKIP_SUFFIXES = (".o", ".obj", ".pyc", ".so", ".a")
CACHE_PARTS = {"__pycache__", ".pytest_cache", ".mypy_cache"}
MAX_FILE_BYTES = 4 << 20        # a course source is far smaller; bigger files are neither copied nor read

DEFAULT_TIMEOUT = 3600.0        # seconds per submission (a full grade with sanitizers on one GPU: minutes)
DEFAULT_MAX_PROCS = 1024        # processes in one grade's session before it counts as a fork bomb
DEFAULT_SLURM_MINUTES = 60      # per task when no earlier grade was measured


# ----------------------------------------------------------------------------------------------
# Submissions and their content


@dataclass
class Submission:
    name: str                       # the student's folder name, made safe for paths
    tree: Optional[str]             # the folder graded as --tree (a copy of chapters/), or None
    problem: str = ""               # why it is not a submission (refused without grading)
    source: str = ""                # the student's folder in the class folder


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip(".") or "student"


def looks_like_chapters(folder: Path) -> bool:
    """A copy of chapters/ holds chapter folders named NN_name."""
    try:
        return any(p.is_dir() and re.fullmatch(r"\d\d_\w+", p.name) for p in folder.iterdir())
    except OSError:
        return False


def discover(class_dir: Path) -> List[Submission]:
    """One submission per folder of the class folder, in name order (hidden folders skipped). The
    tree is FOLDER/chapters when there is one (a checkout of the student repository), else FOLDER
    itself when it holds chapter folders (a copy of chapters/)."""
    subs: List[Submission] = []
    used: Dict[str, int] = {}
    for entry in sorted(class_dir.iterdir(), key=lambda p: p.name):
        if entry.name.startswith(".") or not entry.is_dir() or entry.is_symlink():
            continue
        name = safe_name(entry.name)
        if name in used:
            used[name] += 1
            name = f"{name}-{used[name]}"
        else:
            used[name] = 1
        chapters = entry / "chapters"
        if chapters.is_dir() and not chapters.is_symlink():
            subs.append(Submission(name, str(chapters), source=str(entry)))
        elif looks_like_chapters(entry):
            subs.append(Submission(name, str(entry), source=str(entry)))
        else:
            subs.append(Submission(name, None, f"no chapters/ folder in {entry.name}/ (nor chapter folders NN_name)",
                                   source=str(entry)))
    return subs


def tree_files(tree: Path) -> Tuple[List[str], List[str]]:
    """(relative paths of the tree's regular files, in sorted order; what was left out and why).
    Build outputs, caches, links and files over MAX_FILE_BYTES are left out: the grader only reads
    hole bodies of the course's files, and a link could point anywhere."""
    files, left_out = [], []
    for dirpath, dirnames, filenames in os.walk(tree):
        rel_dir = os.path.relpath(dirpath, tree)
        keep = []
        for d in sorted(dirnames):
            full = os.path.join(dirpath, d)
            if d in SKIP_DIRS or d.startswith("build"):
                continue
            if os.path.islink(full):
                left_out.append(f"{os.path.normpath(os.path.join(rel_dir, d))} (a link)")
                continue
            keep.append(d)
        dirnames[:] = keep
        for f in filenames:
            rel = os.path.normpath(os.path.join(rel_dir, f))
            full = os.path.join(dirpath, f)
            if f.endswith(SKIP_SUFFIXES):
                continue
            if os.path.islink(full):
                left_out.append(f"{rel} (a link)")
            elif not os.path.isfile(full):
                left_out.append(f"{rel} (not a regular file)")
            elif os.path.getsize(full) > MAX_FILE_BYTES:
                left_out.append(f"{rel} (over {MAX_FILE_BYTES >> 20} MiB)")
            else:
                files.append(rel)
    return sorted(files), sorted(left_out)


def content_hash(tree: Path) -> str:
    """sha256 over the tree's graded files: each relative path and its bytes, in path order."""
    h = hashlib.sha256()
    files, _ = tree_files(tree)
    for rel in files:
        data = (tree / rel).read_bytes()
        h.update(rel.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return h.hexdigest()


def course_state(repo: Path = REPO) -> str:
    """The course's commit, with a hash of its uncommitted changes to tracked files when there are
    any ('<commit>+dirty:<hash>'); without git, a hash of the course's files."""
    try:
        commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, check=True).stdout.strip()
        diff = subprocess.run(["git", "-C", str(repo), "diff", "HEAD", "--binary"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, check=True).stdout
        untracked = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", "--others", "--exclude-standard"],
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True).stdout
        for rel in sorted(f for f in untracked.decode().split("\0") if f):  # new files count as changes too
            if (repo / rel).is_file():
                diff += rel.encode() + b"\0" + (repo / rel).read_bytes()
    except (OSError, subprocess.CalledProcessError):
        h = hashlib.sha256()
        for rel in course_files(repo):
            h.update(rel.encode() + b"\0" + (repo / rel).read_bytes())
        return "files:" + h.hexdigest()[:16]
    return commit + (f"+dirty:{hashlib.sha256(diff).hexdigest()[:16]}" if diff else "")


def grade_key(content: str, course: str, grade_args: Sequence[str], kind: str) -> str:
    """What decides whether a grade can be reused: the submission's content, the course's state,
    the options passed to tools/grade, and whether it ran with a GPU."""
    blob = json.dumps({"content": content, "course": course, "args": list(grade_args), "kind": kind},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


# ----------------------------------------------------------------------------------------------
# The course's own copy per worker, and watching files that no grade may change


def course_files(repo: Path = REPO) -> List[str]:
    """The checkout's files: what git tracks (as they are in the working tree), or, without git,
    every file outside build folders, caches and grade outputs."""
    try:
        # Tracked and untracked-but-not-ignored: a checkout copied without its latest index (a
        # course updated by copying files over it) still gives every file it holds.
        out = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True).stdout
        files = set(f for f in out.decode().split("\0") if f)
        return sorted(f for f in files if (repo / f).is_file() and not (repo / f).is_symlink())
    except (OSError, subprocess.CalledProcessError):
        files = []
        for dirpath, dirnames, filenames in os.walk(repo):
            rel_dir = os.path.relpath(dirpath, repo)
            dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.startswith(("build", "grade-"))
                           and not (rel_dir == "." and d == "results")]
            files += [os.path.normpath(os.path.join(rel_dir, f)) for f in filenames
                      if os.path.isfile(os.path.join(dirpath, f))]
        return sorted(files)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class CourseCopy:
    """A worker's private copy of the course: tools/grade runs from it, so a submission that writes
    into "the course" writes here, is seen by check(), and is undone."""

    def __init__(self, repo: Path, dest: Path):
        self.repo, self.dest = repo, dest
        self.files = course_files(repo)
        self.hashes: Dict[str, str] = {}
        if dest.exists():
            _make_writable(dest)
            shutil.rmtree(dest)
        for rel in self.files:
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(repo / rel, target)
            self.hashes[rel] = _sha(target)

    def check(self) -> List[str]:
        """The changes since the copy was made ('changed: path', 'removed: path', 'added: path'),
        each undone. Python's and pytest's caches do not count."""
        changes = []
        for rel, digest in self.hashes.items():
            path = self.dest / rel
            if not path.is_file() or path.is_symlink():
                changes.append(f"removed: {rel}")
            elif _sha(path) != digest:
                changes.append(f"changed: {rel}")
            else:
                continue
            if path.is_symlink() or path.is_dir():
                _remove(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(self.repo / rel, path)
        known = set(self.hashes)
        for dirpath, dirnames, filenames in os.walk(self.dest):
            rel_dir = os.path.relpath(dirpath, self.dest)
            dirnames[:] = [d for d in dirnames if d not in CACHE_PARTS]
            for f in filenames:
                rel = os.path.normpath(os.path.join(rel_dir, f))
                if rel not in known and not f.endswith(".pyc"):
                    changes.append(f"added: {rel}")
                    _remove(Path(dirpath) / f)
        return changes


def _remove(path: Path) -> None:
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    except OSError:
        pass


def _make_writable(folder: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                try:
                    os.chmod(p, 0o755 if os.path.isdir(p) else 0o644)
                except OSError:
                    pass
    try:
        os.chmod(folder, 0o755)
    except OSError:
        pass


def _make_read_only(folder: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(folder, topdown=False):
        for f in filenames:
            os.chmod(os.path.join(dirpath, f), 0o444)
        os.chmod(dirpath, 0o555)


def snapshot(paths: Iterable[Path]) -> Dict[str, Tuple[int, int]]:
    """{path: (size, mtime in ns)} of the files given (those that exist)."""
    snap = {}
    for p in paths:
        try:
            st = os.lstat(p)
        except OSError:
            continue
        snap[str(p)] = (st.st_size, max(st.st_mtime_ns, st.st_ctime_ns))
    return snap


def snapshot_diff(before: Dict[str, Tuple[int, int]], after: Dict[str, Tuple[int, int]]
                  ) -> List[Tuple[str, Optional[float]]]:
    """[(what happened to which path, when in seconds since the epoch or None)]."""
    out: List[Tuple[str, Optional[float]]] = []
    for path, stamp in after.items():
        if path not in before:
            out.append((f"added: {path}", stamp[1] / 1e9))
        elif before[path] != stamp:
            out.append((f"changed: {path}", stamp[1] / 1e9))
    out += [(f"removed: {path}", None) for path in before if path not in after]
    return out


class Watch:
    """Files no grade may touch (the class folder's submissions, the instructor's checkout), with
    the time span of every grade, to say which grade was running when one of them changed."""

    SLACK = 0.05  # seconds: a file's time stamp comes from the kernel's coarse clock

    def __init__(self, files: Callable[[], Iterable[Path]], clock: Callable[[], float] = time.time):
        self.files, self.clock = files, clock
        self.before = snapshot(files())
        self.spans: Dict[str, Tuple[float, Optional[float]]] = {}
        self.last_check = clock()
        self.lock = threading.Lock()

    def started(self, name: str) -> None:
        with self.lock:
            self.spans[name] = (self.clock(), None)

    def finished(self, name: str) -> List[Tuple[str, List[str]]]:
        """[(change, the grades that were running when it happened)] since the last check. A change
        with a time stamp goes to the grades running then; a removal (no time) to every grade that
        ran since the last check."""
        with self.lock:
            now = self.clock()
            start, _ = self.spans.get(name, (now, None))
            self.spans[name] = (start, now)
            after = snapshot(self.files())
            changes = snapshot_diff(self.before, after)
            self.before = after
            found = []
            for what, stamp in changes:
                if stamp is None:
                    suspects = [n for n, (s, e) in self.spans.items() if e is None or e > self.last_check or n == name]
                else:
                    suspects = [n for n, (s, e) in self.spans.items()
                                if s - self.SLACK <= stamp and (e is None or stamp <= e + self.SLACK)]
                found.append((what, sorted(suspects)))
            self.last_check = now
            # A finished grade's span is kept until the next check (a removal may still be its).
            self.spans = {n: (s, e) for n, (s, e) in self.spans.items() if e is None or n == name}
            return found


# ----------------------------------------------------------------------------------------------
# Running one grade under limits


# Sets the limits, then becomes the grade (no preexec_fn: the workers are threads). argv[1] is a
# JSON object of limits, argv[2:] the command.
_LIMITER = r"""
import json, os, resource, sys
lim = json.loads(sys.argv[1])
def cap(res, value):
    soft, hard = resource.getrlimit(res)
    value = value if hard == resource.RLIM_INFINITY else min(value, hard)
    try:
        resource.setrlimit(res, (value, value))
    except (ValueError, OSError):
        pass
cap(resource.RLIMIT_CORE, 0)
if lim.get("cpu"): cap(resource.RLIMIT_CPU, int(lim["cpu"]))
if lim.get("fsize"): cap(resource.RLIMIT_FSIZE, int(lim["fsize"]))
if lim.get("nproc") and os.geteuid() != 0: cap(resource.RLIMIT_NPROC, int(lim["nproc"]))
if lim.get("cpus"):
    try: os.sched_setaffinity(0, lim["cpus"])
    except (AttributeError, OSError): pass
os.execvp(sys.argv[2], sys.argv[2:])
"""


@dataclass
class Outcome:
    returncode: Optional[int]
    wall_s: float
    timed_out: bool = False
    fork_bomb: bool = False
    processes: int = 0


def session_processes(sid: int) -> List[int]:
    """The processes of session `sid` (read from /proc)."""
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for d in entries:
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # After the command: state ppid pgrp session ...
        if len(fields) > 3 and fields[3] == str(sid):
            found.append(int(d))
    return found


def kill_session(sid: int) -> None:
    """SIGKILL the process group and every process of the session, until none is left (a fork
    bomb keeps forking between two signals)."""
    for _ in range(100):
        try:
            os.killpg(sid, signal.SIGKILL)
        except OSError:
            pass
        left = session_processes(sid)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if not left:
            return
        time.sleep(0.05)


def run_limited(cmd: Sequence[str], env: Dict[str, str], log: Path, timeout: float, max_procs: int,
                cpus: Optional[List[int]] = None, cwd: Optional[Path] = None, poll: float = 0.2,
                clock: Callable[[], float] = time.monotonic) -> Outcome:
    """Runs `cmd` in a session of its own with its output in `log`; kills the whole session past
    `timeout` seconds or past `max_procs` processes; cleans up whatever is left when it ends."""
    limits = {"cpu": int(timeout) + 60 if timeout > 0 else 0, "fsize": 8 << 30,
              "nproc": _user_processes() + max_procs * 4, "cpus": cpus}
    full = [sys.executable, "-c", _LIMITER, json.dumps(limits)] + list(cmd)
    t0 = clock()
    with open(log, "ab") as out:
        out.write(("$ " + " ".join(shlex.quote(c) for c in cmd) + "\n").encode())
        out.flush()
        p = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                             cwd=cwd, start_new_session=True)
    outcome = Outcome(None, 0.0)
    checks = 0
    while True:
        code = p.poll()
        if code is not None:
            outcome.returncode = code
            break
        if timeout > 0 and clock() - t0 > timeout:
            outcome.timed_out = True
        else:
            checks += 1
            if checks % 2 == 0 or max_procs < 64:
                n = len(session_processes(p.pid))
                outcome.processes = max(outcome.processes, n)
                outcome.fork_bomb = n > max_procs
        if outcome.timed_out or outcome.fork_bomb:
            kill_session(p.pid)
            p.wait()
            outcome.returncode = p.returncode
            break
        time.sleep(poll)
    left = len(session_processes(p.pid))  # what the grade left behind in its session
    outcome.processes = max(outcome.processes, left)
    outcome.fork_bomb |= left > max_procs  # its head died (out of processes, say), its forks live on
    kill_session(p.pid)
    outcome.wall_s = clock() - t0
    return outcome


def _user_processes() -> int:
    uid = os.getuid()
    n = 0
    try:
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    n += len(os.listdir(f"/proc/{d}/task")) if os.stat(f"/proc/{d}").st_uid == uid else 0
                except OSError:
                    pass
    except OSError:
        pass
    return n


# ----------------------------------------------------------------------------------------------
# One submission: copy, grade, classify


@dataclass
class Worker:
    index: int
    gpu: Optional[str]              # the CUDA_VISIBLE_DEVICES value, or None (CPU worker)
    build_dir: Path
    scratch: Path
    course: Optional[CourseCopy]    # None: tools/grade of the checkout itself (a --grader given)
    cpus: Optional[List[int]] = None
    cores: int = 0
    lock: object = None             # the flock of its build slot


@dataclass
class Options:
    out: Path
    grade_args: List[str]
    grader: Optional[List[str]] = None  # default: the worker's course copy's tools/grade
    timeout: float = DEFAULT_TIMEOUT
    max_procs: int = DEFAULT_MAX_PROCS
    kind: str = "gpu"
    course: str = ""
    host_lock: Optional[Path] = None    # tools/grade --host-lock: the workers of one host share it


def classify(code: Optional[int], outcome: Outcome, results: Optional[dict], log_tail: str,
             timeout: float, max_procs: int) -> Tuple[str, str]:
    """(status, reason) from how the grade ended and what it wrote."""
    if outcome.fork_bomb:
        return REFUSED, f"more than {max_procs} processes at once (a fork bomb?): its grade was killed"
    if outcome.timed_out:
        return TIMED_OUT, f"its grade ran past {timeout:g} s and was killed"
    if code is None or code < 0:
        sig = -code if code is not None else 0
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return CRASHED, f"the grader died of {name}" + (f": {log_tail}" if log_tail else "")
    extra = (results or {}).get("extra_data", {})
    if code in (0, 3) and results is None:
        return CRASHED, f"tools/grade exited {code} but wrote no results.json"
    if code == 0:
        return GRADED, ""
    if code == 3:
        na = extra.get("points_not_assessed")
        return INCOMPLETE, ("GPU tests did not run" + (f": {na:g} points not assessed" if isinstance(na, (int, float))
                                                       else ""))
    if code == 1 and results is not None and extra.get("build_failed"):
        return BUILD_ERROR, "did not compile: " + _first_error(results.get("output", ""))
    if code == 1 and results is not None and extra.get("refused"):
        return REFUSED, "edits outside its holes (--strict)"
    if code in (1, 2):
        return GRADER_ERROR, f"tools/grade exited {code}" + (f": {log_tail}" if log_tail else "")
    return CRASHED, f"tools/grade exited {code}" + (f": {log_tail}" if log_tail else "")


def _first_error(output: str) -> str:
    for line in output.splitlines():
        if re.search(r"\berror\b", line) and "Error 1" not in line and "Error 2" not in line:
            return " ".join(line.split())[:200]
    return "see report.md"


def _log_tail(log: Path, lines: int = 1) -> str:
    try:
        text = log.read_bytes()[-4000:].decode("utf-8", "replace")
    except OSError:
        return ""
    kept = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("$ ")]
    return " / ".join(kept[-lines:])[:300]


def read_results(out: Path) -> Optional[dict]:
    try:
        data = json.loads((out / "results.json").read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


def copy_submission(tree: Path, dest: Path) -> List[str]:
    """The submission's graded files into dest, read-only; returns what was left out."""
    if dest.exists():
        _make_writable(dest)
        shutil.rmtree(dest)
    files, left_out = tree_files(tree)
    for rel in files:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tree / rel, target)
    dest.mkdir(parents=True, exist_ok=True)
    _make_read_only(dest)
    return left_out


def _given(args: Sequence[str], *names: str) -> bool:
    """Whether the instructor's tools/grade options already set one of `names` (--opt V, --opt=V,
    or a short -jN)."""
    return any(a in names or a.startswith(tuple(n + "=" if n.startswith("--") else n for n in names))
               for a in args)


def grade_one(sub: Submission, key: str, worker: Worker, opts: Options,
              clock: Callable[[], float] = time.monotonic) -> dict:
    """Grades one submission on one worker and returns its record (also written to
    OUT/<student>/class.json)."""
    out = opts.out / sub.name
    out.mkdir(parents=True, exist_ok=True)
    for stale in (RECORD, "results.json", "report.md", "grade-class.log"):
        _remove(out / stale)
    record = {"student": sub.name, "source": sub.source, "key": key, "course": opts.course,
              "gpu": worker.gpu if worker.gpu is not None else "", "worker": worker.index,
              "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    if sub.tree is None:
        record.update(status=REFUSED, reason=sub.problem, wall_s=0.0)
        return _write_record(out, record)
    copy = worker.scratch / sub.name / "chapters"
    left_out = copy_submission(Path(sub.tree), copy)
    grader = opts.grader or [sys.executable, str(worker.course.dest / "tools" / "grade")]
    cmd = grader + ["--tree", str(copy), "--out", str(out), "--build-dir", str(worker.build_dir)]
    if worker.cores and not _given(opts.grade_args, "--jobs", "-j"):
        cmd += ["--jobs", str(worker.cores)]
    cmd += opts.grade_args
    if opts.host_lock is not None and not _given(opts.grade_args, "--host-lock"):
        cmd += ["--host-lock", str(opts.host_lock)]
    # Not the paths this command was started from (PWD, OLDPWD): the grade runs in its scratch folder.
    env = {k: v for k, v in os.environ.items() if k not in ("PWD", "OLDPWD")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if worker.gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = worker.gpu
    log = out / "grade-class.log"
    outcome = run_limited(cmd, env, log, opts.timeout, opts.max_procs, worker.cpus, cwd=copy.parent, clock=clock)
    results = read_results(out)
    status, reason = classify(outcome.returncode, outcome, results, _log_tail(log), opts.timeout, opts.max_procs)
    if worker.course is not None:
        changes = worker.course.check()
        if changes:
            status, reason = WROTE_OUTSIDE, _join_reason(reason, "wrote outside its folder, into the course: "
                                                         + "; ".join(changes[:10])
                                                         + (f" (+{len(changes) - 10} more)" if len(changes) > 10 else ""))
    _make_writable(copy.parent)
    shutil.rmtree(copy.parent, ignore_errors=True)
    record.update(status=status, reason=reason, wall_s=round(outcome.wall_s, 1), exit_code=outcome.returncode,
                  max_processes=outcome.processes)
    if left_out:
        record["left_out"] = left_out
    record.update(points_from_results(results) if results is not None and status in WITH_POINTS else {})
    return _write_record(out, record)


def _join_reason(a: str, b: str) -> str:
    return f"{a}; {b}" if a else b


def _write_record(out: Path, record: dict) -> dict:
    tmp = out / (RECORD + ".tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, out / RECORD)
    return record


def read_record(out: Path) -> Optional[dict]:
    try:
        data = json.loads((out / RECORD).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


# ----------------------------------------------------------------------------------------------
# Points from results.json (report.py's layout: each test has tags [chNN, kind]; an item that did
# not run is left out of `tests` and named in extra_data.not_assessed as "NAME (P points): why")

_NOT_RUN = re.compile(r"^ch(\d\d) (?:(performance): )?.*\((\d+(?:\.\d+)?) points\): ")


def points_from_results(results: dict) -> dict:
    """{chapters: {NN: {correctness: [score, max, not assessed], performance: [...]}}, total, max,
    not_assessed, failed: [names of failed items]}."""
    chapters: Dict[str, Dict[str, List[float]]] = {}

    def cell(ch: str, kind: str) -> List[float]:
        return chapters.setdefault(ch, {}).setdefault(kind, [0.0, 0.0, 0.0])

    failed = []
    for t in results.get("tests", []):
        tags = t.get("tags") or []
        m = re.fullmatch(r"ch(\d\d)", tags[0]) if tags else None
        kind = tags[1] if len(tags) > 1 else ""
        if not m or kind not in ("correctness", "performance"):
            continue
        c = cell(m.group(1), kind)
        c[0] += float(t.get("score") or 0)
        c[1] += float(t.get("max_score") or 0)
        if t.get("status") == "failed" or (t.get("max_score") and (t.get("score") or 0) < t["max_score"]):
            failed.append(t.get("name", ""))
    for line in (results.get("extra_data") or {}).get("not_assessed", []) or []:
        m = _NOT_RUN.match(line)
        if m:
            c = cell(m.group(1), "performance" if m.group(2) else "correctness")
            c[1] += float(m.group(3))
            c[2] += float(m.group(3))
    rounded = {ch: {k: [round(x, 2) for x in v] for k, v in parts.items()} for ch, parts in chapters.items()}
    return {"chapters": rounded, "total": round(float(results.get("score") or 0), 2),
            "max": round(sum(v[1] for parts in chapters.values() for v in parts.values()), 2),
            "not_assessed": round(sum(v[2] for parts in chapters.values() for v in parts.values()), 2),
            "failed": failed}


# ----------------------------------------------------------------------------------------------
# The gradebook and the class summary


def _num(x: float) -> str:
    return f"{x:g}"


def gradebook_rows(records: Sequence[dict]) -> Tuple[List[str], List[List[str]]]:
    """(header, rows): student, status, reason, per chapter NN_correctness, NN_performance,
    NN_total, then total, max, not_assessed, wall_s, gpu. A part none of whose points was
    assessed is empty (not 0); so are the points of a submission with no results."""
    chapters = sorted({ch for r in records for ch in (r.get("chapters") or {})})
    header = ["student", "status", "reason"]
    for ch in chapters:
        header += [f"{ch}_correctness", f"{ch}_performance", f"{ch}_total"]
    header += ["total", "max", "not_assessed", "wall_s", "gpu"]
    rows = []
    for r in sorted(records, key=lambda r: r["student"]):
        row = [r["student"], r.get("status", ""), r.get("reason", "")]
        has = "chapters" in r
        for ch in chapters:
            parts = (r.get("chapters") or {}).get(ch, {})
            cells, total, any_assessed = [], 0.0, False
            for kind in ("correctness", "performance"):
                score, mx, na = parts.get(kind, [0.0, 0.0, 0.0])
                assessed = has and mx > na
                cells.append(_num(score) if assessed else "")
                total += score
                any_assessed |= assessed
            row += cells + [_num(round(total, 2)) if any_assessed else ""]
        row += [_num(r["total"]) if has else "", _num(r["max"]) if has else "",
                _num(r["not_assessed"]) if has else "", _num(r.get("wall_s", 0)), str(r.get("gpu", ""))]
        rows.append(row)
    return header, rows


def write_gradebook(out: Path, records: Sequence[dict]) -> Path:
    header, rows = gradebook_rows(records)
    path = out / GRADEBOOK
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def class_summary(records: Sequence[dict], title: str = "") -> str:
    """Markdown: statuses, per-chapter distribution of totals, and the items most students failed."""
    lines = [f"# Class summary{': ' + title if title else ''}", ""]
    counts: Dict[str, int] = {}
    for r in records:
        counts[r.get("status", "")] = counts.get(r.get("status", ""), 0) + 1
    lines += [f"{len(records)} submissions: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + ".", ""]
    lines += ["| status | meaning |", "| --- | --- |"]
    lines += [f"| {s} | {STATUS_HELP.get(s, '')} |" for s in sorted(counts)]
    lines.append("")
    attention = [r for r in records if r.get("status") not in (GRADED, INCOMPLETE)]
    if attention:
        lines += ["## Needs a look", "", "| student | status | reason |", "| --- | --- | --- |"]
        lines += [f"| {r['student']} | {r.get('status')} | {_cell(r.get('reason', ''))} |"
                  for r in sorted(attention, key=lambda r: r["student"])]
        lines.append("")
    scored = [r for r in records if "chapters" in r]
    chapters = sorted({ch for r in scored for ch in r["chapters"]})
    if chapters:
        lines += ["## Per chapter", "",
                  "Totals per chapter (correctness + performance) over the submissions with results; a "
                  "chapter none of whose points was assessed for a student is left out of its row.", "",
                  "| chapter | max | n | min | median | mean | max scored | full marks |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for ch in chapters:
            totals, mx = [], 0.0
            for r in scored:
                parts = r["chapters"].get(ch)
                if not parts:
                    continue
                chmax = sum(v[1] for v in parts.values())
                na = sum(v[2] for v in parts.values())
                mx = max(mx, chmax)
                if chmax > na:
                    totals.append((sum(v[0] for v in parts.values()), chmax))
            if not totals:
                lines.append(f"| {ch} | {_num(mx)} | 0 | | | | | |")
                continue
            vals = [t for t, _ in totals]
            full = sum(1 for t, m in totals if t >= m - 1e-9)
            lines.append(f"| {ch} | {_num(round(mx, 2))} | {len(vals)} | {_num(round(min(vals), 2))} | "
                         f"{_num(round(statistics.median(vals), 2))} | {_num(round(statistics.mean(vals), 2))} | "
                         f"{_num(round(max(vals), 2))} | {full} |")
        lines.append("")
    # What to re-teach: items failed by most of the submissions that built (a build error fails all).
    built = [r for r in scored if r.get("status") != BUILD_ERROR]
    fails: Dict[str, int] = {}
    for r in built:
        for name in set(r.get("failed", [])):
            fails[name] = fails.get(name, 0) + 1
    if fails:
        top = sorted(fails.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
        lines += ["## The items most students failed (what to re-teach)", "",
                  f"Over the {len(built)} submissions that built; an item short of full points counts as failed.", "",
                  "| item | failed by |", "| --- | ---: |"]
        lines += [f"| {_cell(name)} | {n} of {len(built)} |" for name, n in top]
        lines.append("")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def write_outputs(out: Path, records: Sequence[dict], title: str = "") -> Tuple[Path, Path]:
    book = write_gradebook(out, records)
    summ = out / SUMMARY
    summ.write_text(class_summary(records, title), encoding="utf-8")
    return book, summ


# ----------------------------------------------------------------------------------------------
# Progress


def fmt_duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


def eta_seconds(walls: Sequence[float], remaining: int, workers: int) -> Optional[float]:
    """Time left: the mean grade time so far, times the submissions left, over the workers."""
    if remaining <= 0:
        return 0.0
    if not walls:
        return None
    return statistics.mean(walls) * remaining / max(1, workers)


def progress_line(done: int, total: int, failed: int, eta: Optional[float], last: str) -> str:
    eta_text = "ETA ?" if eta is None else f"ETA {fmt_duration(eta)}"
    return f"[class] {done}/{total} done · {failed} failed · {eta_text} · {last}"


def describe(record: dict, skipped: bool = False) -> str:
    name = record["student"]
    if skipped:
        return f"{name}: skipped (unchanged)"
    st = record.get("status")
    if st in WITH_POINTS and "total" in record:
        text = f"{name}: {record['total']:g} pts"
        if st == INCOMPLETE:
            text += f" ({record.get('not_assessed', 0):g} not assessed)"
        return text + ("" if st in (GRADED, INCOMPLETE) else f" [{st}]")
    return f"{name}: {st}" + (f" ({record.get('reason')})" if record.get("reason") else "")


# ----------------------------------------------------------------------------------------------
# GPUs, workers, the local run


def detect_gpus() -> List[str]:
    """The GPU indices nvidia-smi lists ('0', '1', ...); [] without one."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return []
    try:
        p = subprocess.run([exe, "-L"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [m.group(1) for m in (re.match(r"GPU (\d+):", line) for line in p.stdout.splitlines()) if m] \
        if p.returncode == 0 else []


def split_cores(n: int) -> List[List[int]]:
    """This process's cores in n contiguous shares (a worker each); [] when there are fewer cores
    than workers."""
    try:
        cores = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return []
    if n <= 1 or len(cores) < n:
        return []
    size = len(cores) // n
    return [cores[k * size:(k + 1) * size] if k < n - 1 else cores[k * size:] for k in range(n)]


def submission_key(sub: Submission, opts: Options) -> str:
    content = content_hash(Path(sub.tree)) if sub.tree else "none:" + sub.problem
    return grade_key(content, opts.course, opts.grade_args, opts.kind)


def run_class(subs: Sequence[Submission], opts: Options, workers: Sequence[Worker], force: bool,
              watch: Optional[Watch] = None, stream=None) -> List[dict]:
    """Grades the submissions on the workers (one thread each), skipping unchanged ones, printing
    a progress line per submission; returns every submission's record. A watched file that
    changed while one grade ran marks that submission 'wrote-outside'; one that changed while
    several ran has each of them graded again alone at the end, to find which one wrote it."""
    stream = stream or sys.stderr
    total = len(subs)
    by_name = {s.name: s for s in subs}
    records: Dict[str, dict] = {}
    keys: Dict[str, str] = {}
    todo: "queue.Queue[Tuple[Submission, str]]" = queue.Queue()
    done_q: "queue.Queue[Tuple[dict, bool]]" = queue.Queue()
    skipped = 0
    for sub in subs:
        key = keys[sub.name] = submission_key(sub, opts)
        old = read_record(opts.out / sub.name)
        if not force and old and old.get("key") == key and old.get("status") in FINAL:
            done_q.put((old, True))
            skipped += 1
        else:
            todo.put((sub, key))
    n_todo = total - skipped
    stop = threading.Event()

    def grade(sub: Submission, key: str, w: Worker) -> dict:
        if watch:
            watch.started(sub.name)
        try:
            return grade_one(sub, key, w, opts)
        except Exception as e:  # the class goes on: this submission records why
            return _write_record(opts.out / sub.name, {"student": sub.name, "source": sub.source, "key": key,
                                                       "status": GRADER_ERROR, "reason": f"grade-class: {e!r}",
                                                       "wall_s": 0.0, "gpu": w.gpu or ""})

    def work(w: Worker) -> None:
        while not stop.is_set():
            try:
                sub, key = todo.get_nowait()
            except queue.Empty:
                return
            done_q.put((grade(sub, key, w), False))

    blame: Dict[str, List[str]] = {}     # student: changes made while only they were graded
    doubt: Dict[str, List[str]] = {}     # student: changes made while they and others were graded

    def observe(name: str) -> None:
        for what, suspects in (watch.finished(name) if watch else []):
            if not suspects:
                print(f"[class] a watched file changed while no grade ran: {what}", file=stream, flush=True)
            for n in suspects:
                (blame if len(suspects) == 1 else doubt).setdefault(n, []).append(
                    what if len(suspects) == 1 else f"{what} (while {', '.join(suspects)} were graded)")

    def settle(rec: dict) -> None:
        changes = blame.pop(rec["student"], [])
        if changes:
            rec["status"] = WROTE_OUTSIDE
            rec["reason"] = _join_reason(rec.get("reason", ""), "wrote outside its folder: " + "; ".join(changes[:10]))
            _write_record(opts.out / rec["student"], rec)

    threads = [threading.Thread(target=work, args=(w,), daemon=True) for w in workers[:max(1, n_todo)]]
    for t in threads:
        t.start()
    walls: List[float] = []
    failed = done = 0
    tty = hasattr(stream, "isatty") and stream.isatty()

    def show(rec: dict, was_skipped: bool, prefix: str = "") -> None:
        eta = eta_seconds(walls, total - done, len(threads))
        line = prefix + progress_line(done, total, failed, eta, describe(rec, was_skipped))
        stream.write(("\r\033[K" + line + ("\n" if done == total else "")) if tty else line + "\n")
        stream.flush()

    try:
        while done < total:
            rec, was_skipped = done_q.get()
            if not was_skipped:
                observe(rec["student"])
            records[rec["student"]] = rec
            for r in records.values():  # this grade's changes, and those of grades that ended before
                settle(r)
            done += 1
            if not was_skipped:
                walls.append(float(rec.get("wall_s") or 0))
            failed += rec.get("status") not in (GRADED, INCOMPLETE)
            show(rec, was_skipped)
            if not was_skipped and rec.get("exit_code") == 2:
                # tools/grade refused its command line: every other grade would too.
                stop.set()
                print(f"[class] tools/grade refused its arguments ({rec.get('reason')}): the class is stopped; "
                      "fix the options passed to it", file=stream, flush=True)
                break
    except KeyboardInterrupt:
        stop.set()
        raise
    for t in threads:
        t.join()
    if stop.is_set():
        while not done_q.empty():
            rec, _ = done_q.get()
            records[rec["student"]] = rec
        return [records.get(s.name) or {"student": s.name, "source": s.source, "status": GRADER_ERROR,
                                        "reason": "not graded: tools/grade refused its arguments", "wall_s": 0.0}
                for s in subs]
    for name in sorted(doubt):
        if name not in records or records[name].get("status") == WROTE_OUTSIDE:
            continue
        print(f"[class] {name}: graded again alone, as a watched file changed while it and others were graded: "
              + "; ".join(doubt[name][:3]), file=stream, flush=True)
        rec = grade(by_name[name], keys[name], workers[0])
        observe(name)
        settle(rec)
        if rec.get("status") != WROTE_OUTSIDE:
            rec["reason"] = _join_reason(rec.get("reason", ""), "cleared: graded again alone, it changed nothing "
                                                                "outside its folder")
            _write_record(opts.out / name, rec)
        records[name] = rec
        stream.write(progress_line(done, total, sum(r.get("status") not in (GRADED, INCOMPLETE)
                                                    for r in records.values()), 0, describe(rec)) + "\n")
        stream.flush()
    return [records[s.name] for s in subs]


def make_workers(root: Path, scratch: Path, gpus: Sequence[str], cpu_workers: int, use_course_copy: bool,
                 pin: bool) -> List[Worker]:
    """One worker per GPU (or CPU worker), each holding a free slot of the build root: its course
    copy and build folder, kept for the next run (and for --slurm tasks given the same root)."""
    ids: List[Optional[str]] = list(gpus) if gpus else [None] * cpu_workers
    shares = split_cores(len(ids)) if pin else []
    workers = []
    for k, gpu in enumerate(ids):
        slot, lock = build_slot(root)
        course = CourseCopy(REPO, slot / "course") if use_course_copy else None
        cpus = shares[k] if shares else None
        w = Worker(k, gpu, slot / "build", scratch / f"worker-{k}", course, cpus, len(cpus) if cpus else 0)
        w.lock = lock
        workers.append(w)
    return workers


def watched_files(subs: Sequence[Submission]) -> Callable[[], List[Path]]:
    """The files of every submission in the class folder. (The checkout is not watched: the grades
    run from private copies of it, and an instructor's own edits there would be laid on a student.)"""

    def files() -> List[Path]:
        found: List[Path] = []
        for s in subs:
            if s.tree:
                tree = Path(s.tree)
                found += [tree / f for f in tree_files(tree)[0]]
        return found

    return files


# ----------------------------------------------------------------------------------------------
# Slurm


def slurm_minutes(out: Path, subs: Sequence[Submission], given: Optional[float]) -> int:
    """The --time of one task: given, or 1.5 times the slowest earlier grade in --out plus 10
    minutes for a cold build, or DEFAULT_SLURM_MINUTES when nothing was measured."""
    if given:
        return max(1, int(math.ceil(given)))
    walls = [float(r.get("wall_s") or 0) for r in (read_record(out / s.name) for s in subs)
             if r and r.get("status") in (GRADED, INCOMPLETE)]
    if not walls:
        return DEFAULT_SLURM_MINUTES
    return max(5, int(math.ceil(1.5 * max(walls) / 60 + 10)))


def write_plan(out: Path, subs: Sequence[Submission], tasks: Sequence[Submission], opts: Options,
               keys: Dict[str, str], minutes: int = 0, build_root: Optional[str] = None) -> None:
    """plan.json: every submission of the class (the merge reads them all) and the ones the array
    tasks grade, in task order."""
    timeout = max(60.0, minutes * 60 - 120.0) if minutes > 3 else minutes * 60 * 0.8
    plan = {"version": 1, "repo": str(REPO), "out": str(out), "course": opts.course, "kind": opts.kind,
            "grade_args": opts.grade_args, "grader": opts.grader, "max_procs": opts.max_procs,
            "timeout": timeout, "submissions": [asdict(s) for s in subs], "tasks": [s.name for s in tasks],
            "keys": keys, "build_root": build_root}
    (out / PLAN).write_text(json.dumps(plan, indent=2) + "\n", encoding="utf-8")


def write_slurm(out: Path, subs: Sequence[Submission], minutes: int, gpu: bool, cpus: int,
                extra: Sequence[str]) -> Path:
    """The sbatch script: one array task per submission to grade (plan.json's tasks)."""
    (out / "slurm").mkdir(exist_ok=True)
    hh, mm = divmod(minutes, 60)
    lines = ["#!/bin/bash",
             "# Written by tools/grade-class --slurm: one array task per submission (plan.json), each",
             "# grading one student into its folder of --out; then: tools/grade-class --merge OUT",
             "#SBATCH --job-name=grade-class",
             f"#SBATCH --array=0-{len(subs) - 1}",
             f"#SBATCH --time={hh:02d}:{mm:02d}:00",
             f"#SBATCH --cpus-per-task={cpus}",
             f"#SBATCH --output={out / 'slurm'}/task-%a.log"]
    if gpu:
        lines.append("#SBATCH --gres=gpu:1")
    lines += [f"#SBATCH {a}" for a in extra]
    lines += ["set -u",
              f"exec {shlex.quote(sys.executable)} {shlex.quote(str(REPO / 'tools' / 'grade-class'))} "
              f"--slurm-task {shlex.quote(str(out))} --task-index \"$SLURM_ARRAY_TASK_ID\"", ""]
    script = out / SBATCH
    script.write_text("\n".join(lines), encoding="utf-8")
    script.chmod(0o755)
    return script


def build_slot(root: Path) -> Tuple[Path, object]:
    """A slot of `root` (slot-K: the course copy and the build folder that go together, as CMake
    remembers its source folder) that no other worker or task on this node holds: an flock on its
    lock file, held while the lock object lives. Later workers and tasks build incrementally there."""
    import fcntl
    root.mkdir(parents=True, exist_ok=True)
    for k in range(1024):
        lock = open(root / f"slot-{k}.lock", "w")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.close()
            continue
        return root / f"slot-{k}", lock
    raise RuntimeError(f"no free build slot in {root}")


def slurm_task(out: Path, index: int) -> int:
    """One array task: grade the plan's task `index` into OUT/<student>/, with a private course
    copy in node-local scratch ($TMPDIR, removed at the end) and a build folder there too, or a
    free slot of the plan's build root (kept, so that later tasks on the node build incrementally)."""
    plan = json.loads((out / PLAN).read_text(encoding="utf-8"))
    subs = {s["name"]: Submission(**s) for s in plan["submissions"]}
    if not 0 <= index < len(plan["tasks"]):
        print(f"grade-class: task {index}: the plan has {len(plan['tasks'])} tasks", file=sys.stderr)
        return 2
    sub = subs[plan["tasks"][index]]
    base = Path(os.environ.get("TMPDIR") or "/tmp") / (
        f"grade-class-{os.environ.get('SLURM_ARRAY_JOB_ID', os.getpid())}-{index}")
    base.mkdir(parents=True, exist_ok=True)
    lock = None
    try:
        slot = base
        if plan.get("build_root"):
            slot, lock = build_slot(Path(plan["build_root"]))
        build = slot / "build"
        course = CourseCopy(Path(plan["repo"]), slot / "course") if not plan.get("grader") else None
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 0
        worker = Worker(index, os.environ.get("CUDA_VISIBLE_DEVICES", "") if plan["kind"] == "gpu" else None,
                        build, base / "scratch", course, None, cores)
        opts = Options(out=out, grade_args=plan["grade_args"], grader=plan.get("grader"), timeout=plan["timeout"],
                       max_procs=plan["max_procs"], kind=plan["kind"], course=plan["course"])
        key = plan["keys"].get(sub.name) or submission_key(sub, opts)
        print(f"[class] task {index}: {sub.name} on {os.uname().nodename}, build folder {build}", file=sys.stderr,
              flush=True)
        rec = grade_one(sub, key, worker, opts)
        print(progress_line(1, 1, int(rec.get("status") not in (GRADED, INCOMPLETE)), 0, describe(rec)),
              file=sys.stderr, flush=True)
    finally:
        if lock is not None:
            lock.close()
        _make_writable(base)
        shutil.rmtree(base, ignore_errors=True)
    return 0


def merge(out: Path) -> List[dict]:
    """The records of a --slurm run (plan.json's submissions; a task that left none is 'missing')."""
    plan = json.loads((out / PLAN).read_text(encoding="utf-8"))
    tasks = {name: k for k, name in enumerate(plan.get("tasks", []))}
    records = []
    for s in plan["submissions"]:
        rec = read_record(out / s["name"])
        if rec is None or rec.get("key") != plan["keys"].get(s["name"]):
            k = tasks.get(s["name"])
            where = f"array task {k} (see {out / 'slurm'}/task-{k}.log)" if k is not None else "any array task"
            rec = {"student": s["name"], "source": s.get("source", ""), "status": MISSING,
                   "reason": f"no result from {where}", "wall_s": 0.0}
        records.append(rec)
    return records


# ----------------------------------------------------------------------------------------------
# The command line


def parse_args(argv: Optional[Sequence[str]]) -> Tuple[argparse.Namespace, List[str]]:
    p = argparse.ArgumentParser(
        prog="tools/grade-class",
        description="Grade every submission of a class folder (a folder per student: a copy of chapters/, or a "
                    "checkout of the student's repository) with tools/grade, one worker per GPU; write "
                    "gradebook.csv, class_summary.md and each student's report.md and results.json under --out. "
                    "Options it does not know are passed to tools/grade (e.g. --chapter 02 --no-performance "
                    "--expect-gpu --seed N).",
        epilog="Resumable: a submission graded before with the same content, course commit and options is "
               "skipped (--force grades it again). Statuses: " + "; ".join(f"{k}: {v}" for k, v in STATUS_HELP.items())
               + ". Exit codes: 0 every submission has a final status (their grades are in the gradebook) · "
                 "1 some grades could not be made (grader-error, missing) · 2 bad arguments (its own, or "
                 "tools/grade's: the class stops at the first grade that exits 2). docs/grading.md, "
                 "'Grading a class'.")
    p.add_argument("class_dir", nargs="?", metavar="DIR", help="the class folder: one folder per student")
    p.add_argument("--out", metavar="OUT", help="where the class's results go (default: grade-class-<DIR name>)")
    p.add_argument("--gpus", metavar="LIST", help="GPUs to use, e.g. 0,1 (default: every GPU nvidia-smi lists)")
    p.add_argument("--workers", type=int, metavar="N",
                   help="without GPUs: N CPU workers (default 1); the GPU tests are then not run (incomplete)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="S",
                   help=f"seconds one submission's grade may take before it is killed (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--max-procs", type=int, default=DEFAULT_MAX_PROCS, metavar="N",
                   help=f"processes one grade may have at once before it is killed as a fork bomb "
                        f"(default {DEFAULT_MAX_PROCS})")
    p.add_argument("--force", action="store_true", help="grade every submission again, changed or not")
    p.add_argument("--build-root", metavar="DIR",
                   help="where the workers' build folders and course copies go, one slot-K each, kept so that the "
                        "next run builds incrementally (default OUT/.work). With --slurm: a node-local folder, "
                        "e.g. /tmp/grade-class-builds, whose slots later tasks on a node reuse (default: each task "
                        "builds afresh in $TMPDIR)")
    p.add_argument("--no-pin", action="store_true", help="do not give each worker its own share of the cores")
    p.add_argument("--grader", metavar="CMD", help=argparse.SUPPRESS)  # tests: a stand-in for tools/grade
    p.add_argument("--slurm", action="store_true",
                   help="write OUT/grade-class.sbatch (a job array, one task per submission to grade) instead of "
                        "grading here; submit it with sbatch, then run --merge OUT")
    p.add_argument("--slurm-no-gpu", action="store_true", help="with --slurm: no --gres=gpu:1 (CPU-only items)")
    p.add_argument("--slurm-time", type=float, metavar="MIN",
                   help="with --slurm: minutes per task (default: from earlier grades in OUT, else "
                        f"{DEFAULT_SLURM_MINUTES})")
    p.add_argument("--slurm-cpus", type=int, default=8, metavar="N", help="with --slurm: --cpus-per-task (default 8)")
    p.add_argument("--slurm-arg", action="append", default=[], metavar="ARG",
                   help="with --slurm: one more #SBATCH line, e.g. --slurm-arg=--partition=gpu (repeatable)")
    p.add_argument("--merge", metavar="OUT", help="build gradebook.csv and class_summary.md from a --slurm run's OUT")
    p.add_argument("--slurm-task", metavar="OUT", help=argparse.SUPPRESS)
    p.add_argument("--task-index", type=int, help=argparse.SUPPRESS)
    args, rest = p.parse_known_args(argv)
    if args.merge or args.slurm_task:
        return args, rest
    if not args.class_dir:
        p.error("give the class folder (DIR), or --merge OUT")
    if not Path(args.class_dir).is_dir():
        p.error(f"{args.class_dir}: no such folder")
    if args.workers is not None and args.workers < 1:
        p.error("--workers must be at least 1")
    if args.timeout <= 0 or args.max_procs < 8:
        p.error("--timeout must be > 0 and --max-procs at least 8")
    for bad in ("--tree", "--out", "--build-dir"):
        if any(a == bad or a.startswith(bad + "=") for a in rest):
            p.error(f"{bad} is set per submission by tools/grade-class; leave it out")
    if args.gpus is not None and not re.fullmatch(r"\d+(,\d+)*", args.gpus):
        p.error("--gpus takes GPU indices, e.g. 0,1")
    return args, rest


def main(argv: Optional[Sequence[str]] = None) -> int:
    args, grade_args = parse_args(argv)
    if args.slurm_task:
        index = args.task_index if args.task_index is not None else int(os.environ.get("SLURM_ARRAY_TASK_ID", "-1"))
        return slurm_task(Path(args.slurm_task).resolve(), index)
    if args.merge:
        out = Path(args.merge).resolve()
        if not (out / PLAN).is_file():
            print(f"grade-class: --merge {out}: no {PLAN} there (written by --slurm)", file=sys.stderr)
            return 2
        records = merge(out)
        return _finish(out, records, "merged from Slurm tasks")

    class_dir = Path(args.class_dir).resolve()
    out = Path(args.out).resolve() if args.out else REPO / f"grade-class-{safe_name(class_dir.name)}"
    out.mkdir(parents=True, exist_ok=True)
    subs = discover(class_dir)
    if not subs:
        print(f"grade-class: {class_dir} holds no student folder", file=sys.stderr)
        return 2
    gpus = args.gpus.split(",") if args.gpus else ([] if args.workers or args.slurm else detect_gpus())
    if args.slurm:
        kind = "cpu" if args.slurm_no_gpu else "gpu"
    else:
        kind = "gpu" if gpus else "cpu"
    grader = shlex.split(args.grader) if args.grader else None
    opts = Options(out=out, grade_args=grade_args, grader=grader, timeout=args.timeout, max_procs=args.max_procs,
                   kind=kind, course=course_state())

    if args.slurm:
        keys = {s.name: submission_key(s, opts) for s in subs}
        todo = []
        for s in subs:
            old = read_record(out / s.name)
            if args.force or not (old and old.get("key") == keys[s.name] and old.get("status") in FINAL):
                todo.append(s)
        minutes = slurm_minutes(out, subs, args.slurm_time)
        write_plan(out, subs, todo, opts, keys, minutes,
                   str(Path(args.build_root).resolve()) if args.build_root else None)
        if not todo:
            print("grade-class: every submission is graded and unchanged (--force grades them again); "
                  f"tools/grade-class --merge {out}", file=sys.stderr)
            return 0
        script = write_slurm(out, todo, minutes, not args.slurm_no_gpu, args.slurm_cpus, args.slurm_arg)
        print(f"grade-class: {script}: {len(todo)} array task(s) for {len(subs)} submissions "
              f"({len(subs) - len(todo)} unchanged), --time {minutes} min each\n  sbatch {script}\n"
              f"  tools/grade-class --merge {out}   # when they have ended")
        return 0

    workers_n = len(gpus) or (args.workers or 1)
    where = f"{len(gpus)} GPU(s): {','.join(gpus)}" if gpus else f"{workers_n} CPU worker(s), no GPU (GPU tests not run)"
    print(f"[class] {len(subs)} submissions in {class_dir}, on {where}; results in {out}", file=sys.stderr,
          flush=True)
    work = out / ".work"
    work.mkdir(exist_ok=True)
    root = Path(args.build_root).resolve() if args.build_root else work
    workers = make_workers(root, work, gpus, workers_n, use_course_copy=grader is None, pin=not args.no_pin)
    if len(workers) > 1:
        # Grades side by side share the host's memory and page cache: a measurement taken again
        # waits to have the host to itself (coursetools/hostlock.py).
        opts.host_lock = root / "host.lock"
    watch = Watch(watched_files(subs))
    t0 = time.monotonic()
    records = run_class(subs, opts, workers, args.force, watch)
    print(f"[class] {len(subs)} submissions in {fmt_duration(time.monotonic() - t0)}", file=sys.stderr, flush=True)
    code = _finish(out, records, str(class_dir))
    return 2 if any(r.get("exit_code") == 2 for r in records) else code


def _finish(out: Path, records: Sequence[dict], title: str) -> int:
    book, summ = write_outputs(out, records, title)
    print(f"gradebook:     {book}\nclass summary: {summ}\nper student:   {out}/<student>/report.md, results.json")
    bad = [r["student"] for r in records if r.get("status") in (GRADER_ERROR, MISSING)]
    if bad:
        print(f"grade-class: no grade for {', '.join(bad)} (grader-error or missing): run again to retry",
              file=sys.stderr)
        return 1
    return 0
