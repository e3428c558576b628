"""CTest: its console lines, its listing of tests (`--show-only=json-v1`), and a time limit per test.

The one parser of each: tools/grade and tools/check_negatives.py both read the listing here, and
the grader's per-test time limit (TestTimer) lives here.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

from . import proc

CTEST_LINE = re.compile(r"^\s*\d+/\d+\s+Test\s+#\d+:\s(?P<rest>.*?)\s+(?P<seconds>[\d.]+)\s+sec\s*$")
CTEST_START = re.compile(r"^\s*Start\s+\d+:\s(?P<name>.+?)\s*$")
# The line the grader adds to CTest's console for a test it ended (TestTimer.report).
TIMED_OUT_LINE = re.compile(r"^\[grade\] timed out after (?P<seconds>[\d.]+) s \(the per-test time limit\): "
                            r"(?P<name>.+?)\s*$")
TIMED_OUT = "timed out after"
# The line the grader adds for a test that a signal killed when it ran alone (catchrun).
CRASHED_LINE = re.compile(r"^\[grade\] (?P<outcome>crashed \(signal [^)]*\)): (?P<name>.+?)\s*$")


def timed_out_outcome(seconds: float) -> str:
    """The words every report uses for a test that ran past its time: "timed out after N s"."""
    return f"{TIMED_OUT} {seconds:.0f} s" if seconds >= 10 else f"{TIMED_OUT} {seconds:g} s"


def parse_ctest_console(text: str) -> Dict[str, str]:
    """CTest's console lines (`3/5 Test #3: NAME ....***Timeout   1.00 sec`) give what JUnit does
    not: whether a failed test timed out or crashed. Returns {test name: outcome}; best effort. A
    timeout, CTest's own or the grader's (its "[grade] timed out after N s" lines, which come last),
    reads "timed out after N s"."""
    outcomes = {}
    for line in text.splitlines():
        t = TIMED_OUT_LINE.match(line)
        if t:
            outcomes[t.group("name")] = timed_out_outcome(float(t.group("seconds")))
            continue
        c = CRASHED_LINE.match(line)
        if c:
            outcomes[c.group("name")] = c.group("outcome")
            continue
        m = CTEST_LINE.match(line)
        if not m:
            continue
        rest = m.group("rest")
        # The name is followed by a run of dots (at least three, after a space), then the outcome.
        dm = re.search(r" \.{3,}\s*(\*{3})?(?P<outcome>[^.].*)$", rest)
        if not dm:
            continue
        outcome = dm.group("outcome").strip()
        if outcome == "Timeout":  # CTest's own TIMEOUT property
            outcome = timed_out_outcome(float(m.group("seconds")))
        outcomes[rest[:dm.start()]] = outcome
    return outcomes


@dataclass
class ListedTest:
    name: str
    command: List[str]
    cwd: Optional[str] = None   # the WORKING_DIRECTORY property, when the test has one
    properties: Dict[str, object] = field(default_factory=dict)   # every property: {name: value}
    number: int = 0             # CTest's number for it (its place in the listing, from 1)


def listing(show_only_json: str) -> Dict[str, ListedTest]:
    """{test name: its command and working folder} from `ctest --show-only=json-v1` ({} when the
    text holds no JSON)."""
    try:
        data = json.loads(show_only_json[show_only_json.index("{"):])
    except (ValueError, json.JSONDecodeError):
        return {}
    tests = {}
    for k, t in enumerate(data.get("tests", []), start=1):
        if not t.get("name"):
            continue
        props = {p.get("name"): p.get("value") for p in t.get("properties", []) if isinstance(p, dict)}
        tests[t["name"]] = ListedTest(t["name"], list(t.get("command") or []), props.get("WORKING_DIRECTORY"),
                                      props, k)
    return tests


def ctest_commands(show_only_json: str) -> Dict[str, List[str]]:
    """{test name: its command} from `ctest --show-only=json-v1`."""
    return {name: t.command for name, t in listing(show_only_json).items()}


class TestTimer:
    """A time limit per test for a serial CTest run (`ctest` without -j), given to proc.run_logged
    as its `watch`. CTest prints "Start N: NAME" when a test begins and a result line when it ends;
    a test still running `limit_for(NAME)` seconds after its start has every process below ctest
    killed, so CTest records it as failed ("Subprocess killed") and goes on with the next test.
    CTest's own --timeout cannot do this: every Catch2 test carries a TIMEOUT property
    (cmake/Course.cmake), which wins over it. A limit of 0 or less: no limit.

    timed_out: {test name: the limit it ran past}; report() gives the lines that say so, which
    parse_ctest_console reads back (also from a saved test.log, for --reuse-tests)."""

    def __init__(self, limit_for: Callable[[str], float], kill: Callable[[int], int] = proc.kill_children):
        self.limit_for = limit_for
        self.kill = kill
        self.timed_out: Dict[str, float] = {}
        self._lock = threading.Lock()
        self._current: Optional[str] = None
        self._started = 0.0

    def line(self, text: str) -> None:
        with self._lock:
            m = CTEST_START.match(text)
            if m:
                self._current, self._started = m.group("name"), time.monotonic()
            elif CTEST_LINE.match(text):
                self._current = None

    def check(self, pid: int) -> None:
        with self._lock:
            name = self._current
            if name is None:
                return
            limit = self.limit_for(name)
            if limit <= 0 or time.monotonic() - self._started <= limit:
                return
            self.timed_out[name] = limit
            self._current = None
        self.kill(pid)

    def report(self) -> str:
        return "".join(f"[grade] {timed_out_outcome(s)} (the per-test time limit): {n}\n"
                       for n, s in self.timed_out.items())
