"""The host to itself for a measurement taken again: one lock file shared by the grades of one host.

tools/grade-class grades two or more submissions at once on one host, one per GPU, each pinned to
its own cores. Cores can be shared out; the host's memory bandwidth, its page cache and its PCIe
root cannot. A measurement of host memory (chapter 08's staged copy of pageable data, for one)
taken while the other grade builds or measures can come out short, every time it is taken again
too: results/reference/h200x2/grading_repeat.csv has ten grades of the solutions, two at a time,
one of them short on that item.

So every grade of the class holds the lock file shared while it works (a build, the tests, a first
measurement), and a measurement taken again (perf.REMEASURE: the first was short of full marks)
holds it alone: it waits for the other grades to end their current step, and they wait for it
before their next one. First measurements still run side by side, so the class costs no more time
unless a value was short. flock(2) does the work: the kernel drops a lock when its process dies,
so a crashed or killed grade never leaves the host locked.

A waiting exclusive lock would starve behind shared ones that keep overlapping (flock has no
writer preference), so every taker passes a turnstile first (a second file, held alone only while
taking the main lock): a grade that waits to be alone holds the turnstile, and the others queue
there instead of taking the main lock again.

    lock = HostLock(path)       # or HostLock(None): every method does nothing
    lock.hold()                 # shared, for a step; lock.next_step() lets a waiting measurement in
    lock.hold_alone()           # the host to itself until release() (our own shared hold dropped first)
    with lock.alone(): ...      # the same for a block
    lock.release()

Which measurements want the host alone is the manifest's word: a performance rule with
`"host": true` (it reads host memory or runs on the CPU: chapters 02, 07, 08, 09). A rule that
measures the GPU's own memory is not slowed by another grade's host work, and waits for nobody.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Optional

# How long a measurement waits to be alone before it measures anyway (and says so): a step of
# another grade (its tests, its build) lasts minutes at most.
WAIT_LIMIT_S = 300.0
POLL_S = 0.2


class HostLock:
    def __init__(self, path: Optional[Path], wait_limit: float = WAIT_LIMIT_S,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep):
        self.path = Path(path) if path else None
        self.wait_limit, self.clock, self.sleep = wait_limit, clock, sleep
        self._main: Optional[int] = None     # our descriptor of the main file while we hold it
        self._mode = 0                       # fcntl.LOCK_SH or LOCK_EX while held
        self.waited_s = 0.0                  # the last alone()'s wait
        self.alone_ok = True                 # whether the last alone() got the host to itself

    @property
    def active(self) -> bool:
        return self.path is not None

    def _open(self, path: Path) -> int:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(str(path), os.O_RDWR | os.O_CREAT, 0o666)

    @staticmethod
    def check(path: Path) -> Optional[str]:
        """Why `path` cannot serve as the lock (None: it can): a folder that cannot be made, a file
        that cannot be opened, a file system that refuses flock (an NFS mount without locks)."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(str(path), os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as e:
            return f"cannot open it ({e.strerror})"
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return f"cannot lock it ({e.strerror}): put it on a local file system"
        finally:
            os.close(fd)
        return None

    def _take(self, fd: int, mode: int, deadline: Optional[float]) -> bool:
        """flock(fd, mode), polled until `deadline` (None: wait for ever); True when taken."""
        while True:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
                return True
            except OSError as e:
                if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise
            if deadline is not None and self.clock() >= deadline:
                return False
            self.sleep(POLL_S)

    def _acquire(self, mode: int, deadline: Optional[float]) -> bool:
        turn = self._open(self.path.with_name(self.path.name + ".turn"))
        try:
            if not self._take(turn, fcntl.LOCK_EX, deadline):
                return False
            main = self._open(self.path)
            try:
                taken = self._take(main, mode, deadline)
            except BaseException:  # Ctrl-C in a poll: no descriptor (and no lock) left behind
                os.close(main)
                raise
            if not taken:
                os.close(main)
                return False
            self._main, self._mode = main, mode
            return True
        finally:
            os.close(turn)   # closing the turnstile's descriptor lets the next taker through

    def hold(self) -> None:
        """Shared, for a step of work; nothing when held already (or no lock file)."""
        if self.path is None or self._main is not None:
            return
        self._acquire(fcntl.LOCK_SH, None)

    def release(self) -> None:
        if self._main is not None:
            os.close(self._main)
            self._main, self._mode = None, 0

    def next_step(self) -> None:
        """Between two steps: a measurement that waits to be alone goes first."""
        if self.path is None:
            return
        self.release()
        self.hold()

    @property
    def held_alone(self) -> bool:
        return self._main is not None and self._mode == fcntl.LOCK_EX

    def hold_alone(self) -> bool:
        """The host to itself until release(): True, or False after `wait_limit` seconds of waiting
        (nothing held then). Held already: True at once. Our own shared hold is given up first (two
        descriptors of one process lock against each other)."""
        if self.path is None:
            return True
        if self.held_alone:
            self.waited_s = 0.0
            return True
        self.release()
        started = self.clock()
        self.alone_ok = self._acquire(fcntl.LOCK_EX, started + self.wait_limit)
        self.waited_s = self.clock() - started
        return self.alone_ok

    @contextmanager
    def alone(self) -> Iterator[bool]:
        """hold_alone() while the block runs (which runs also when it yields False); a shared hold
        we had before is taken again after."""
        if self.path is None:
            yield True
            return
        was_shared = self._main is not None and not self.held_alone
        ok = self.hold_alone()
        try:
            yield ok
        finally:
            self.release()
            if was_shared:
                self.hold()
