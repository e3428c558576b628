"""Running a chapter's Catch2 program once for all its test cases, instead of one process per
case as CTest does (each process makes its own CUDA context: ~0.6 s of start-up apiece on an H200).

What CTest would have decided, case by case, is decided here the same way:
- which cases: exactly the CTest tests of the chapter that catch_discover_tests registered (a test
  whose command is `PROGRAM ESCAPED-NAME` and that has no property changing how CTest reads it);
  every other test (the hole scans, ch07's Python and Go, ch11's MPI runs, tools.*) still runs
  through CTest;
- passed, failed or skipped: a case whose Catch2 messages or captured output match the test's
  SKIP_REGULAR_EXPRESSION (COURSE-NO-GPU, ...) is skipped, as CTest skips it; otherwise Catch2's
  own verdict for the case;
- the program's report is Catch2's XML reporter (`-r xml -d yes -o FILE`, the same in Catch2 2.13
  and 3.x), read case by case, so a truncated file still gives every case it finished.

A case the batch did not finish (the program crashed, hung past the batch's limit, or the filter
did not select it) runs again alone, with its own time limit, as CTest would have run it; so does a
failed case that followed a failure which may leave the CUDA context broken (a sticky error), so
that one crash never takes the other cases' points. A case alone that runs past its limit reads
"timed out after S s"; one killed by a signal, "crashed (signal N)".
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from .ctest import ListedTest, timed_out_outcome

# Properties that do not change how CTest reads a Catch2 test's result: such a test may join a batch.
BATCH_SAFE_PROPERTIES = {"LABELS", "TIMEOUT", "SKIP_REGULAR_EXPRESSION", "WORKING_DIRECTORY", "_BACKTRACE_TRIPLES"}
CRASHED = "crashed"
# A failure after which the rest of the process's CUDA calls may fail too (a sticky error): the
# failed cases that follow it run again alone.
STICKY = re.compile(r"(?i)(cuda\s*\w*error|illegal (memory )?(access|address)|illegal instruction|launch failure|"
                    r"misaligned|device-side assert|hardware stack error|fatal error condition)")


def crashed_outcome(sig: int) -> str:
    """The words every report uses for a test killed by a signal: "crashed (signal N)"."""
    try:
        name = f", {signal.Signals(sig).name}"
    except ValueError:
        name = ""
    return f"{CRASHED} (signal {sig}{name})"


def unescape(arg: str) -> str:
    """A test-case name as catch_discover_tests passes it (`,` `[` `]` and `\\` escaped) -> the name."""
    return re.sub(r"\\(.)", r"\1", arg)


def batchable(test: ListedTest, properties: Dict[str, object]) -> bool:
    """Whether a CTest test is one Catch2 case as catch_discover_tests registers it, with nothing
    that would make CTest read its result differently from Catch2's verdict plus the skip regex."""
    cmd = test.command
    if len(cmd) < 2 or unescape(cmd[1]) != test.name or any(a for a in cmd[2:]):
        return False
    return all(p in BATCH_SAFE_PROPERTIES for p in properties)


@dataclass
class CaseResult:
    name: str
    status: str                 # passed | failed | skipped
    output: str = ""            # Catch2's messages and the case's captured output, console-like
    seconds: float = 0.0
    outcome: str = ""           # "" | "timed out after S s" | "crashed (signal N)" | "Failed"
    alone: bool = False         # run in a process of its own (the fallback)
    skip_message: str = ""      # CTest's words for a deliberate skip


@dataclass
class Group:
    """The batchable tests of one program (and working folder)."""
    program: str
    cwd: Optional[str]
    tests: List[ListedTest] = field(default_factory=list)
    skip: Optional[re.Pattern] = None   # the tests' SKIP_REGULAR_EXPRESSION (one alternation)


def skip_pattern(properties: Dict[str, object]) -> Optional[re.Pattern]:
    values = properties.get("SKIP_REGULAR_EXPRESSION")
    if not values:
        return None
    if isinstance(values, str):
        values = [values]
    return re.compile("|".join(f"(?:{v})" for v in values))


def groups(tests: Iterable[Tuple[ListedTest, Dict[str, object]]]) -> Tuple[List[Group], List[str]]:
    """(the batchable tests, grouped by program in CTest's order; the names of the others)."""
    out: Dict[Tuple[str, Optional[str], str], Group] = {}
    others: List[str] = []
    for t, props in tests:
        if not batchable(t, props):
            others.append(t.name)
            continue
        pat = skip_pattern(props)
        key = (t.command[0], t.cwd, pat.pattern if pat else "")
        g = out.setdefault(key, Group(t.command[0], t.cwd, [], pat))
        g.tests.append(t)
    return list(out.values()), others


# --- Catch2's XML reporter ---------------------------------------------------------------------

def _where(e: ET.Element) -> str:
    f, line = e.get("filename"), e.get("line")
    return f"{f}:{line}: " if f and line else ""


def _render(e: ET.Element, out: List[str]) -> None:
    """Catch2's XML for one case (or section), in the words its console reporter uses."""
    for c in e:
        text = (c.text or "").strip()
        if c.tag == "Section":
            out.append(f"section: {c.get('name', '')}")
            _render(c, out)
        elif c.tag == "Expression":
            ok = c.get("success") == "true"
            out.append(f"{_where(c)}{'PASSED' if ok else 'FAILED'}:")
            out.append(f"  {c.get('type', 'CHECK')}( {(c.findtext('Original') or '').strip()} )")
            out.append("with expansion:")
            out.append(f"  {(c.findtext('Expanded') or '').strip()}")
            for sub in c:
                if sub.tag in ("Exception", "FatalErrorCondition", "Failure", "Info", "Warning", "Skip"):
                    _render_message(sub, out)
        elif c.tag in ("Exception", "FatalErrorCondition", "Failure", "Info", "Warning", "Skip"):
            _render_message(c, out)
        elif c.tag in ("StdOut", "StdErr"):
            out.extend(text.splitlines())


def _render_message(c: ET.Element, out: List[str]) -> None:
    text = (c.text or "").strip()
    head = {"Exception": "FAILED:\ndue to unexpected exception with message:",
            "FatalErrorCondition": "FAILED:\ndue to a fatal error condition:",
            "Failure": "FAILED:\nexplicitly with message:",
            "Info": "with message:",
            "Warning": "warning:",
            "Skip": "SKIPPED:"}[c.tag]
    out.append(_where(c) + head)
    out.extend("  " + line for line in text.splitlines())


CASE_BLOCK = re.compile(r"<TestCase\b[^>]*?(?<!/)>.*?</TestCase>", re.S)


@dataclass
class CatchCase:
    name: str
    success: bool
    text: str          # console-like rendering of everything the case reported
    seconds: float
    fatal: bool = False  # Catch2 caught a signal in it (<FatalErrorCondition>): the process ends there


def parse_catch_xml(text: str) -> Dict[str, CatchCase]:
    """{case name: its result} from Catch2's XML reporter (v2: <Catch><Group><TestCase>, v3:
    <Catch2TestRun><TestCase>). Tolerant: a file cut short by a crash gives every case it holds
    whole; a case without its <OverallResult> did not finish and is left out."""
    cases: Dict[str, CatchCase] = {}
    for m in CASE_BLOCK.finditer(text):
        try:
            e = ET.fromstring(m.group(0))
        except ET.ParseError:
            continue
        res = e.find("OverallResult")
        if res is None:
            continue
        name = e.get("name", "")
        lines = [
            "-" * 79, name, "-" * 79,
            f"{e.get('filename', '')}:{e.get('line', '')}", "." * 79, "",
        ]
        body: List[str] = []
        _render(e, body)
        for sub in res:  # <StdOut>/<StdErr> live in <OverallResult>
            if sub.tag in ("StdOut", "StdErr"):
                body.extend((sub.text or "").strip().splitlines())
        try:
            seconds = float(res.get("durationInSeconds") or 0.0)
        except ValueError:
            seconds = 0.0
        cases[name] = CatchCase(name, res.get("success") == "true", "\n".join(lines + body + ["=" * 79]), seconds,
                                fatal=e.find(".//FatalErrorCondition") is not None)
    return cases


# --- running -------------------------------------------------------------------------------------

@dataclass
class Run:
    code: int               # exit code; -N: killed by signal N
    output: str
    seconds: float
    timed_out: bool = False
    stopped: str = ""      # why a watch ended it


def run_process(cmd: Sequence[str], cwd: Optional[str], env: Optional[Dict[str, str]], limit: float,
                clock: Callable[[], float] = time.monotonic,
                watch: Optional[Callable[[], Optional[str]]] = None, poll: float = 0.2) -> Run:
    """Runs cmd in a session of its own; past `limit` seconds (<= 0: none) the whole session is
    killed and the run reads timed_out. `watch`, called every `poll` seconds while it runs, may end
    it sooner: the reason it returns is the run's `stopped`."""
    t0 = clock()
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as out:
        try:
            p = subprocess.Popen(list(cmd), stdout=out, stderr=subprocess.STDOUT, cwd=cwd, text=True,
                                 errors="replace", env=dict(os.environ, **env) if env else None,
                                 start_new_session=True)
        except OSError as e:
            return Run(127, f"cannot run {cmd[0]}: {e}", 0.0)
        timed_out, stopped = False, ""
        while True:
            try:
                p.wait(timeout=poll)
                break
            except subprocess.TimeoutExpired:
                pass
            if limit > 0 and clock() - t0 > limit:
                timed_out = True
            elif watch is not None:
                stopped = watch() or ""
            if timed_out or stopped:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
                p.wait()
                break
        out.seek(0)
        text = out.read()
    code = -signal.SIGKILL if (timed_out or stopped) else p.returncode
    return Run(code, text, clock() - t0, timed_out=timed_out, stopped=stopped)


run_process.watches = True  # type: ignore[attr-defined]


class CaseWatch:
    """Reads the progress file a batch writes (COURSE_TEST_PROGRESS: "start NAME" / "end NAME"
    lines, tests/support/progress_listener.hpp) and ends the batch when its open case has run past
    that case's own limit: a hung case costs its own limit, not the whole batch's."""

    def __init__(self, path: Path, limit_for: Callable[[str], float], clock: Callable[[], float] = time.monotonic):
        self.path, self.limit_for, self.clock = path, limit_for, clock
        self.started: List[str] = []
        self.ended: set = set()
        self.open: Optional[str] = None
        self.open_since = 0.0
        self.hung: Optional[Tuple[str, float]] = None   # (case, its limit) when the watch ended the batch
        self._seen = 0

    def read(self) -> None:
        try:
            lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return
        # The last line may be half written: read it again next time.
        whole = lines if not lines or self.path.read_bytes().endswith(b"\n") else lines[:-1]
        for line in whole[self._seen:]:
            what, _, name = line.partition(" ")
            if what == "start":
                self.started.append(name)
                if self.open != name:
                    self.open, self.open_since = name, self.clock()
            elif what == "end":
                self.ended.add(name)
                if self.open == name:
                    self.open = None
        self._seen = len(whole)

    def __call__(self) -> Optional[str]:
        self.read()
        if self.open is None:
            return None
        limit = self.limit_for(self.open)
        if limit > 0 and self.clock() - self.open_since > limit:
            self.hung = (self.open, limit)
            return f"{self.open}: past its limit of {limit:.0f} s"
        return None


Runner = Callable[[Sequence[str], Optional[str], Optional[Dict[str, str]], float], Run]


def case_alone(test: ListedTest, skip: Optional[re.Pattern], env: Optional[Dict[str, str]], limit: float,
               runner: Runner) -> CaseResult:
    """One case in a process of its own, read as CTest reads it."""
    r = runner(test.command, test.cwd, env, limit)
    if r.timed_out:
        return CaseResult(test.name, "failed", r.output, r.seconds, timed_out_outcome(limit), alone=True)
    if r.code < 0:
        return CaseResult(test.name, "failed", r.output, r.seconds, crashed_outcome(-r.code), alone=True)
    if skip is not None and skip.search(r.output):
        return CaseResult(test.name, "skipped", r.output, r.seconds, alone=True,
                          skip_message="SKIP_REGULAR_EXPRESSION_MATCHED")
    if r.code == 0:
        return CaseResult(test.name, "passed", r.output, r.seconds, alone=True)
    return CaseResult(test.name, "failed", r.output, r.seconds, "Failed", alone=True)


def filter_arg(tests: Sequence[ListedTest]) -> str:
    """Catch2's test spec for exactly these cases: their escaped names (as CTest passes them), joined
    by commas."""
    return ",".join(t.command[1] for t in tests)


def batch_command(program: str, tests: Sequence[ListedTest], xml: Path) -> List[str]:
    return [program, "-r", "xml", "-d", "yes", "-o", str(xml), filter_arg(tests)]


# --- which cases carry a tag --------------------------------------------------------------------

def catch2_major(program: str, cwd: Optional[str] = None, runner: Runner = None) -> int:
    """The Catch2 major version of a test program (`--libidentify`, in 2.x and 3.x alike); 0 when
    it cannot be told."""
    r = (runner or run_process)([program, "--libidentify"], cwd, None, 60)
    m = re.search(r"(?m)^version:\s*(\d+)\.", r.output)
    return int(m.group(1)) if m and r.code == 0 else 0


def list_command(program: str, spec: str, major: int) -> List[str]:
    """The command that prints the names a test spec selects, one a line: Catch2 2's
    `--list-test-names-only SPEC`; Catch2 3 dropped that option for `--list-tests --verbosity quiet`.
    The spec's syntax is the same in both: `[exclusive]` a tag, `~[exclusive]` not it, a comma
    an or; a spec given as one argument is parsed as a spec (names with `[`, `]`, `,` or `\\` must
    be escaped, as catch_discover_tests does)."""
    if major >= 3:
        return [program, "--list-tests", "--verbosity", "quiet", spec]
    return [program, "--list-test-names-only", spec]


def list_names(program: str, spec: str, cwd: Optional[str] = None, runner: Runner = None,
               major: Optional[int] = None) -> Optional[List[str]]:
    """The names of the cases `spec` selects, in the program's order; None when the program could
    not list them (it crashed, or its Catch2 is neither 2 nor 3)."""
    runner = runner or run_process
    major = catch2_major(program, cwd, runner) if major is None else major
    if major not in (2, 3):
        return None
    r = runner(list_command(program, spec, major), cwd, None, 60)
    # Catch2 2 exits with the number of cases listed (at most 255), Catch2 3 with 0.
    if r.timed_out or r.code < 0 or (major >= 3 and r.code != 0):
        return None
    return [line.rstrip("\r") for line in r.output.splitlines() if line.strip()]


@dataclass
class GroupReport:
    program: str
    results: Dict[str, CaseResult]
    batch_seconds: float = 0.0
    batch_code: int = 0
    batch_timed_out: bool = False
    alone: List[str] = field(default_factory=list)   # cases run again alone, and why
    log: str = ""


def run_group(group: Group, xml: Path, env: Optional[Dict[str, str]], limit_for: Callable[[str], float],
              batch_limit: float, runner: Runner = None, fallback_jobs: int = 1) -> GroupReport:
    """Every case of `group`: one batch run, then the fallback for the cases it did not settle,
    `fallback_jobs` of them at once (each in its own process, with its own limit: a chapter whose
    first failure broke the CUDA context reruns its later failures side by side, not in a queue).

    With the real runner the batch is watched case by case (CaseWatch): a case open past its own
    limit ends the batch and reads "timed out after S s"; the case a crash ended runs again alone;
    the cases the batch never reached run in a new batch, not one by one."""
    runner = runner or run_process
    if xml.exists():
        xml.unlink()
    progress = xml.with_suffix(".progress")
    if progress.exists():
        progress.unlink()
    watch: Optional[CaseWatch] = None
    cmd = batch_command(group.program, group.tests, xml)
    if getattr(runner, "watches", False):
        watch = CaseWatch(progress, limit_for)
        r = runner(cmd, group.cwd, dict(env or {}, COURSE_TEST_PROGRESS=str(progress)), batch_limit, watch=watch)
        watch.read()
    else:
        r = runner(cmd, group.cwd, env, batch_limit)
    rep = GroupReport(group.program, {}, r.seconds, r.code, r.timed_out)
    rep.log = r.output
    try:
        text = xml.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    found = parse_catch_xml(text)
    sticky_seen = False
    again: List[Tuple[ListedTest, str]] = []
    unreached: List[ListedTest] = []
    for t in group.tests:
        c = found.get(t.name)
        if c is None:
            if watch is not None and watch.hung and watch.hung[0] == t.name and not sticky_seen:
                rep.results[t.name] = CaseResult(t.name, "failed", r.output, watch.hung[1],
                                                 timed_out_outcome(watch.hung[1]))
                rep.alone.append(f"{t.name}: ended in the batch past its own limit of {watch.hung[1]:.0f} s")
                continue
            if watch is not None and watch.started and t.name not in watch.started and not r.timed_out:
                unreached.append(t)
                continue
            why = ("the program was ended past the batch's limit" if r.timed_out else
                   "the batch was ended in another case past its limit" if r.stopped else
                   f"the program {crashed_outcome(-r.code)}" if r.code < 0 else "the batch did not report it")
            again.append((t, why))
            continue
        skipped = group.skip is not None and bool(group.skip.search(c.text))
        if skipped:
            rep.results[t.name] = CaseResult(t.name, "skipped", c.text, c.seconds,
                                             skip_message="SKIP_REGULAR_EXPRESSION_MATCHED")
        elif c.success:
            rep.results[t.name] = CaseResult(t.name, "passed", c.text, c.seconds)
        elif c.fatal:
            again.append((t, "a signal ended it (Catch2 reported a fatal error condition)"))
        elif sticky_seen:
            again.append((t, "it failed after a failure that can break the CUDA context"))
        else:
            rep.results[t.name] = CaseResult(t.name, "failed", c.text, c.seconds, "Failed")
        if not c.success and not skipped and STICKY.search(c.text):
            sticky_seen = True
    if unreached:
        rep.alone.append(f"{len(unreached)} case(s) the batch did not reach: run in a new batch")
        rest = Group(group.program, group.cwd, unreached, group.skip)
        names = [t.name for t in unreached]
        more = run_group(rest, xml.with_name(xml.stem + "-more.xml"), env, limit_for,
                         batch_limit_of(names, limit_for, batch_limit, len(group.tests)), runner, fallback_jobs)
        rep.results.update(more.results)
        rep.alone.extend(more.alone)
        rep.log += more.log
        rep.batch_seconds += more.batch_seconds
    for t, why in again:
        rep.alone.append(f"{t.name}: {why}")
    if fallback_jobs > 1 and len(again) > 1:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=fallback_jobs) as pool:
            done = list(pool.map(lambda tw: case_alone(tw[0], group.skip, env, limit_for(tw[0].name), runner), again))
        for (t, _), result in zip(again, done):
            rep.results[t.name] = result
    else:
        for t, _ in again:
            rep.results[t.name] = case_alone(t, group.skip, env, limit_for(t.name), runner)
    return rep


def batch_limit_of(names: Sequence[str], limit_for: Callable[[str], float], whole: float, whole_count: int) -> float:
    """The limit of a batch of the cases another batch did not reach: that batch's limit, shared out
    by count (at least the longest of their own limits plus 30 s); 0 (none) when it had none."""
    if whole <= 0:
        return 0.0
    own = max((limit_for(n) for n in names), default=0.0)
    return max(whole * len(names) / max(1, whole_count), own + 30.0)


def batch_limit(names: Sequence[str], reference: Callable[[str], Optional[float]], limit_for: Callable[[str], float],
                floor: float = 30.0, factor: float = 3.0, unknown: float = 60.0) -> float:
    """The time a whole batch may take: `floor` plus, per case, `factor` times its reference time
    (at least 2 s), or its own limit, at most `unknown` s, when it has no reference time. A hung case
    costs this plus its own limit when it runs again alone; a batch ended too soon costs only time
    (its unfinished cases run alone, each with its own limit). 0 (none) when a case has no limit."""
    total = floor
    for n in names:
        ref = reference(n)
        own = limit_for(n)
        if ref is None:
            if own <= 0:
                return 0.0
            total += min(own, unknown)
        else:
            total += max(2.0, factor * ref) if own <= 0 else min(own, max(2.0, factor * ref))
    return total
