"""A small scheduler for the grade's test step: several jobs at once on one GPU, the exclusive ones
alone at the end.

A job is a callable with a cost (its reference seconds, for longest-first order), the jobs it must
wait for (`after`: a chapter's compute-sanitizer run waits for that chapter's tests), tokens it
holds while it runs (`huge`: the tests that need tens of GB of device memory, so that two of them
never make each other skip), and whether it is exclusive (it compares times or the device's free
memory: it runs after every other job has ended, with nothing else running).

Rules, in this order, each time a job ends (or at the start):
- an exclusive job runs only when no other job runs and no job that is not exclusive is left;
  exclusive jobs run one at a time, in the order given;
- otherwise, while fewer than `workers` jobs run, the ready job (its `after` all done, its tokens
  free) with the largest cost starts (the first given among equals).

The executor that runs the jobs is given: threads in the grade (each job waits on its own
subprocesses), a synchronous fake in the tests, which choose which running job ends next, so
that every order of endings can be checked without a clock. `events` records ("start"|"end", key)
in the order they happened.
"""

from __future__ import annotations

import queue
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple


@dataclass
class Job:
    key: str
    run: Callable[[], object]
    cost: float = 1.0
    exclusive: bool = False
    after: List[str] = field(default_factory=list)
    tokens: Dict[str, int] = field(default_factory=dict)
    kind: str = ""          # for the report's busy seconds: tests, sanitizer, exclusive tests, ...


class ThreadExecutor:
    """Runs each job in a thread of its own; wait() returns (key, result, error, seconds) of a job
    that ended."""

    def __init__(self, clock: Optional[Callable[[], float]] = None):
        import time
        self.clock = clock or time.monotonic
        self._done: "queue.Queue[Tuple[str, object, Optional[BaseException], float]]" = queue.Queue()

    def start(self, job: Job) -> None:
        def body() -> None:
            t0 = self.clock()
            try:
                result, error = job.run(), None
            except BaseException as e:  # re-raised by Pool.run once every job has ended
                result, error = None, e
            self._done.put((job.key, result, error, self.clock() - t0))

        threading.Thread(target=body, name=f"grade-{job.key}", daemon=True).start()

    def wait(self) -> Tuple[str, object, Optional[BaseException], float]:
        return self._done.get()


class Pool:
    def __init__(self, workers: int, tokens: Optional[Dict[str, int]] = None, executor=None):
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.workers = workers
        self.tokens = dict(tokens or {})
        self.executor = executor or ThreadExecutor()
        self.events: List[Tuple[str, str]] = []
        self.seconds: Dict[str, float] = {}
        self.most_at_once = 0

    def _fits(self, job: Job, held: Dict[str, int]) -> bool:
        return all(held.get(t, 0) + n <= self.tokens.get(t, n) for t, n in job.tokens.items())

    def _next(self, pending: List[Job], running: Dict[str, Job], done: Dict[str, object],
              held: Dict[str, int]) -> Optional[Job]:
        if any(j.exclusive for j in running.values()):
            return None
        ready = [j for j in pending if all(d in done for d in j.after) and self._fits(j, held)]
        normal = [j for j in ready if not j.exclusive]
        if normal:
            if len(running) >= self.workers:
                return None
            best = normal[0]
            for j in normal[1:]:
                if j.cost > best.cost:
                    best = j
            return best
        if running or any(not j.exclusive for j in pending):
            return None
        exclusive = [j for j in ready if j.exclusive]
        return exclusive[0] if exclusive else None

    def run(self, jobs: Sequence[Job]) -> Dict[str, object]:
        """Runs every job; returns {key: what its run() returned}. A job that raised: the first
        such error (in the order given) is raised once every started job has ended."""
        keys = [j.key for j in jobs]
        if len(set(keys)) != len(keys):
            raise ValueError("two jobs with the same key")
        known = set(keys)
        for j in jobs:
            missing = [d for d in j.after if d not in known]
            if missing:
                raise ValueError(f"job {j.key} waits for unknown job(s) {missing}")
            if not j.exclusive and any(d for d in j.after if next(x for x in jobs if x.key == d).exclusive):
                raise ValueError(f"job {j.key} is not exclusive but waits for an exclusive job")
        pending = list(jobs)
        running: Dict[str, Job] = {}
        done: Dict[str, object] = {}
        errors: Dict[str, BaseException] = {}
        held: Dict[str, int] = {}
        while pending or running:
            while True:
                job = self._next(pending, running, done, held)
                if job is None:
                    break
                pending.remove(job)
                running[job.key] = job
                for t, n in job.tokens.items():
                    held[t] = held.get(t, 0) + n
                self.events.append(("start", job.key))
                self.most_at_once = max(self.most_at_once, len(running))
                self.executor.start(job)
            if not running:
                raise ValueError("jobs that can never start: " + ", ".join(j.key for j in pending))
            key, result, error, seconds = self.executor.wait()
            job = running.pop(key)
            for t, n in job.tokens.items():
                held[t] -= n
            self.events.append(("end", key))
            self.seconds[key] = seconds
            done[key] = result
            if error is not None:
                errors[key] = error
        for k in keys:
            if k in errors:
                raise errors[k]
        return done


# --- how many at once ------------------------------------------------------------------------------

GIB = 1 << 30
BIG_GPU_GIB = 64      # a card with at least this much memory takes AUTO_GPU_JOBS jobs at once
AUTO_GPU_JOBS = 4
MIN_CORES = 8
HUGE_GIB = 64         # one [huge] test (up to ~53 GB: chapter 01's 3 x 2^32 floats) per this much memory


def gpu_memory_gib(run=subprocess.run) -> Optional[float]:
    """The first GPU's total memory in GiB from nvidia-smi, or None (no nvidia-smi, no GPU)."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        p = run([exe, "--query-gpu=memory.total", "--format=csv,noheader,nounits"], stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    try:
        return float(p.stdout.strip().splitlines()[0]) / 1024.0 if p.returncode == 0 else None
    except (ValueError, IndexError):
        return None


def auto_jobs(gpu_gib: Optional[float], cores: int) -> int:
    """--gpu-jobs auto: 4 on a card of at least 64 GiB in a machine of at least 8 cores; 1 on a
    smaller card or machine; without a GPU (every GPU test skips at once) one per core, at most 8."""
    if gpu_gib is None:
        return max(1, min(cores, 8))
    return AUTO_GPU_JOBS if gpu_gib >= BIG_GPU_GIB and cores >= MIN_CORES else 1


def huge_tokens(gpu_gib: Optional[float]) -> int:
    """How many [huge] tests may run at once: one per 64 GiB of the card, at least one."""
    return max(1, int(gpu_gib // HUGE_GIB)) if gpu_gib else 1
