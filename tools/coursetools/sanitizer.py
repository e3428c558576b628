"""compute-sanitizer: where it is, the command that runs a test under it, how to read its log.

The one copy of each for tools/grade (its sanitizer step), tools/check_negatives.py (cases a tool
must catch) and tools/sanitizer_log.py (SANITIZER_LOG_DOC below; tools/gpu_check.sh runs it over
its logs).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from . import MANIFEST_DIR

SANITIZER_LOG_DOC = """Reads a compute-sanitizer log and counts its errors, leaving out the API errors a chapter's
grading manifest allows (tools/grading/<chapter>.json, "sanitize_allowed_api_errors").

Why: NCCL probes each of its kernels with cudaFuncGetAttributes while a communicator is set up
and ignores the "no kernel image" answers for the architectures it was not built for. memcheck
reports each as an API error of the program. Turning API-error reports off (--report-api-errors
no) would hide the course's own failing calls too; this filter drops only the reports whose call,
error and calling library all match an allowed entry, and counts everything else.

    tools/sanitizer_log.py LOG --chapter 11_multi_gpu     # exit 0: no error left; 1: errors left
    tools/sanitizer_log.py LOG --allow cudaFuncGetAttributes:cudaErrorNoKernelImageForDevice:libnccl

An allowed entry: {"call": "cudaFuncGetAttributes", "error": "cudaErrorNoKernelImageForDevice",
"library": "libnccl", "why": "..."}: a report is dropped when it is an API error of that call
with that error and one of its host frames lies in a file whose name contains the library.
Standard library only.
"""

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
DEFAULT_PATH = "/usr/local/cuda/bin/compute-sanitizer"
ERROR_EXITCODE = 99  # what the tool exits with when it found an error (the test's own codes differ)
PREFIX = "========="
API_ERROR = re.compile(r"Program hit (\w+) .*on CUDA API call to (\w+)")


@dataclass
class Allowed:
    call: str
    error: str
    library: str
    why: str = ""


@dataclass
class Report:
    """One error the tool printed: its first line and the lines that follow it."""
    lines: List[str] = field(default_factory=list)

    @property
    def head(self) -> str:
        return self.lines[0][len(PREFIX):].strip() if self.lines else ""

    def allowed_by(self, allowed: List[Allowed]) -> bool:
        m = API_ERROR.search(self.head)
        if not m:
            return False
        error, call = m.group(1), m.group(2)
        frames = [l for l in self.lines[1:] if "Host Frame" in l]
        return any(a.call == call and a.error == error and any(a.library in f for f in frames) for a in allowed)


def parse(text: str) -> List[Report]:
    """The error reports of a log: each starts at a '========= X' line (X not blank, not a
    summary, not the tool's banner) and runs to the next such line or a bare '=========' line."""
    reports: List[Report] = []
    current = None
    for line in text.splitlines():
        if not line.startswith(PREFIX):
            current = None
            continue
        body = line[len(PREFIX):]
        if not body.strip():
            current = None
        elif body.startswith(" ") and not body.startswith("  ") and not re.match(
                r" (ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY|COMPUTE-SANITIZER|Target application|Error: process)",
                body):
            current = Report([line])
            reports.append(current)
        elif current is not None:
            current.lines.append(line)
    return reports


def count(text: str, allowed: List[Allowed]) -> Tuple[List[Report], List[Report]]:
    """(counted, dropped) reports of a log."""
    counted, dropped = [], []
    for r in parse(text):
        (dropped if r.allowed_by(allowed) else counted).append(r)
    return counted, dropped


def manifest_allowed(chapter: str) -> List[Allowed]:
    path = MANIFEST_DIR / f"{chapter}.json"
    if not path.is_file():
        raise SystemExit(f"sanitizer_log: no manifest {path}")
    entries = json.loads(path.read_text()).get("sanitize_allowed_api_errors", [])
    return [Allowed(e["call"], e["error"], e["library"], e.get("why", "")) for e in entries]


def find() -> Optional[str]:
    """The compute-sanitizer executable: on PATH, else CUDA's default place; None when neither."""
    return shutil.which("compute-sanitizer") or (DEFAULT_PATH if Path(DEFAULT_PATH).exists() else None)


def command(exe: str, tool: str, cmd: Sequence[str], extra: Sequence[str] = ()) -> List[str]:
    """`cmd` under compute-sanitizer `tool`, exiting ERROR_EXITCODE when the tool finds an error."""
    return [exe, "--tool", tool, "--error-exitcode", str(ERROR_EXITCODE)] + list(extra) + list(cmd)


def sanitizer_verdict(tool: str, code: int, output: str,
                      allowed: Optional[List[Dict[str, str]]] = None) -> Tuple[bool, str]:
    """(clean, message) for one compute-sanitizer run of one test. The message is the tool's first
    error line (or why the run is not clean). `allowed`: the manifest's API errors that do not count
    (NCCL's kernel probes); a run whose only errors are those is clean."""
    summary = re.search(r"(ERROR SUMMARY: (\d+) error|RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) error)",
                        output)
    errors = int(summary.group(2) or summary.group(3)) if summary else None
    if errors and allowed:
        counted, dropped = count(output, [Allowed(e["call"], e["error"], e["library"], e.get("why", ""))
                                          for e in allowed])
        if dropped and not counted and len(dropped) == errors:
            if code in (0, ERROR_EXITCODE):
                return True, ""
        errors = max(0, errors - len(dropped)) if dropped else errors
    first = next((line.strip() for line in output.splitlines()
                  if re.match(r"^=+ +(?!COMPUTE-SANITIZER|ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY)\S", line)
                  and not re.match(r"^=+ +(at |by |Host Frame|Saved host|in |\s)", line)), "")
    if errors:
        return False, f"compute-sanitizer {tool}: {errors} error(s); first: {first or '(see the log)'}"
    if errors is None and "terminated before first instrumented API call" in output and code != -1:
        # The test made no CUDA call (a host-only test): nothing for the tool to check, and the test
        # itself already passed outside the tool. Manifests mark such items "sanitize": [].
        return True, ""
    if code == -1:
        return False, f"compute-sanitizer {tool}: the test did not finish in time"
    if code != 0 and errors is None and first:
        return False, f"compute-sanitizer {tool}: {first}"
    if code != 0:
        tail = " | ".join(x.strip() for x in output.strip().splitlines()[-3:])
        return False, f"compute-sanitizer {tool}: the test failed under the tool (exit {code}): {tail[:300]}"
    return True, ""


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=SANITIZER_LOG_DOC,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("log", type=Path, help="a compute-sanitizer log")
    p.add_argument("--chapter", help="take the allowed API errors from tools/grading/CHAPTER.json")
    p.add_argument("--allow", action="append", default=[], metavar="CALL:ERROR:LIBRARY",
                   help="one more allowed API error (repeatable)")
    args = p.parse_args(argv)
    if not args.log.is_file():
        print(f"sanitizer_log: {args.log}: no such file", file=sys.stderr)
        return 2
    allowed = manifest_allowed(args.chapter) if args.chapter else []
    for a in args.allow:
        parts = a.split(":")
        if len(parts) != 3 or not all(parts):
            print(f"sanitizer_log: --allow {a!r}: expected CALL:ERROR:LIBRARY", file=sys.stderr)
            return 2
        allowed.append(Allowed(*parts))
    counted, dropped = count(args.log.read_text(errors="replace"), allowed)
    print(f"sanitizer_log: {len(counted)} error(s) counted, {len(dropped)} allowed API error(s) left out"
          + (f" ({', '.join(sorted({a.call + ' in ' + a.library for a in allowed}))})" if dropped else ""))
    for r in counted[:5]:
        print("  " + r.head)
    return 1 if counted else 0
