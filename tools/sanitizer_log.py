#!/usr/bin/env python3
"""Reads a compute-sanitizer log and counts its errors, leaving out the API errors a chapter's
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
import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Tuple

ROOT = Path(__file__).resolve().parent.parent
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
    path = ROOT / "tools" / "grading" / f"{chapter}.json"
    if not path.is_file():
        raise SystemExit(f"sanitizer_log: no manifest {path}")
    entries = json.loads(path.read_text()).get("sanitize_allowed_api_errors", [])
    return [Allowed(e["call"], e["error"], e["library"], e.get("why", "")) for e in entries]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
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


if __name__ == "__main__":
    sys.exit(main())
