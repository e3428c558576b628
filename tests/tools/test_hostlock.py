"""Tests of tools/coursetools/hostlock.py: the lock that gives a measurement taken again the host to
itself while the grades of a class run side by side. No clock: waits are counted polls of a fake
sleep, and each HostLock opens its own descriptors, so two of them in one process lock against
each other as two grades would.

    python3 -m pytest tests/tools/test_hostlock.py
"""

import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.append(str(HERE.parent.parent / "tools"))

from coursetools.hostlock import POLL_S, HostLock  # noqa: E402


class WouldWait(Exception):
    pass


def never_waits(_seconds):
    raise WouldWait()


class FakeTime:
    """A clock that moves only when the lock sleeps; `on_sleep(k)` runs at the k-th sleep."""

    def __init__(self, on_sleep=None):
        self.now, self.sleeps, self.on_sleep = 0.0, 0, on_sleep

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps += 1
        self.now += seconds
        if self.on_sleep:
            self.on_sleep(self.sleeps)


class HostLockTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = Path(self.tmp.name) / "host.lock"

    def tearDown(self):
        self.tmp.cleanup()

    def lock(self, **kw):
        return HostLock(self.path, **kw)

    def test_grades_at_work_share_it(self):
        a, b = self.lock(sleep=never_waits), self.lock(sleep=never_waits)
        a.hold()
        b.hold()   # would raise WouldWait if it had to wait
        a.release()
        b.release()

    def test_a_measurement_waits_for_the_others_step_and_gives_up_at_its_limit(self):
        a = self.lock()
        a.hold()
        t = FakeTime()
        b = self.lock(clock=t.clock, sleep=t.sleep, wait_limit=5)
        with b.alone() as alone:
            self.assertFalse(alone)       # a never ended its step: measured beside it, and said so
        self.assertGreaterEqual(b.waited_s, 5)
        self.assertIn(t.sleeps, (round(5 / POLL_S), round(5 / POLL_S) + 1))  # float steps may need one more
        a.release()

    def test_alone_once_the_others_step_ends_and_nobody_starts_one_meanwhile(self):
        a = self.lock()
        a.hold()
        queued = []

        def step_ends(k):
            if k == 3:
                # a's step ends, and a asks for its next one while b waits: it must queue behind b
                # (the turnstile), not take the lock again before b had its turn.
                a.release()
                try:
                    a_next = self.lock(sleep=never_waits)
                    a_next.hold()
                    queued.append("a got in first")
                except WouldWait:
                    queued.append("a queued")

        t = FakeTime(step_ends)
        b = self.lock(clock=t.clock, sleep=t.sleep, wait_limit=60)
        with b.alone() as alone:
            self.assertTrue(alone)
            with self.assertRaises(WouldWait):
                self.lock(sleep=never_waits).hold()   # nobody works while b measures
        self.assertEqual(queued, ["a queued"])
        self.lock(sleep=never_waits).hold()           # and everyone may once b is done

    def test_its_own_shared_hold_does_not_block_it_and_comes_back(self):
        a = self.lock(sleep=never_waits)
        a.hold()
        with a.alone() as alone:
            self.assertTrue(alone)
        t = FakeTime()
        probe = self.lock(clock=t.clock, sleep=t.sleep, wait_limit=1)
        with probe.alone() as alone:
            self.assertFalse(alone, "a holds it shared again after its measurement")
        a.release()
        with self.lock(sleep=never_waits).alone() as alone:
            self.assertTrue(alone)

    def test_a_grade_that_dies_leaves_nothing_held(self):
        code = ("import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
                "fcntl.flock(fd, fcntl.LOCK_EX); os._exit(0)")
        subprocess.run([sys.executable, "-c", code, str(self.path)], check=True)
        with self.lock(sleep=never_waits).alone() as alone:
            self.assertTrue(alone)

    def test_interrupted_while_waiting_leaves_no_descriptor_and_no_lock(self):
        import os
        a = self.lock()
        a.hold()
        before = len(os.listdir("/proc/self/fd"))

        def interrupted(_seconds):
            raise KeyboardInterrupt()
        b = self.lock(sleep=interrupted)
        with self.assertRaises(KeyboardInterrupt):
            b.hold_alone()
        self.assertEqual(len(os.listdir("/proc/self/fd")), before)
        a.release()
        with self.lock(sleep=never_waits).alone() as alone:
            self.assertTrue(alone)

    def test_a_file_that_cannot_be_a_lock_is_named(self):
        self.assertIsNone(HostLock.check(self.path))
        self.assertIn("cannot open", HostLock.check(Path("/proc/no-such-folder/host.lock")))

    def test_no_lock_file_means_no_locking(self):
        none = HostLock(None, sleep=never_waits)
        self.assertFalse(none.active)
        none.hold()
        none.next_step()
        with none.alone() as alone:
            self.assertTrue(alone)
        none.release()
        self.assertFalse(self.path.exists())


if __name__ == "__main__":
    unittest.main()
