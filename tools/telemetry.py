#!/usr/bin/env python3
"""The GPU's clocks, temperature, power and throttle reasons, sampled before and after a chapter's
run, so that a table or a plot can say whether the GPU throttled while it was measured.

  tools/telemetry.py                          print one sample per GPU (JSON)
  tools/telemetry.py --out FILE.json          write it to FILE (the "before" sample of a run)
  tools/telemetry.py --before FILE.json       print the record of a run: FILE's sample, one taken
                                              now, and what happened in between (JSON)

A sample comes from `nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,temperature.gpu,
power.draw,clocks_event_reasons.active --format=csv` (older drivers spell the last field
clocks_throttle_reasons.active), plus, where the driver has them, the cumulative microseconds spent
in each throttle reason (clocks_event_reasons_counters.*): the difference between two samples is how
long the GPU throttled between them, even when neither instant caught it.

tools/run_metadata.py keeps the record of a run under "telemetry" in its chapter's metadata:
  {"before": [sample per GPU], "after": [...], "throttled": true|false|null,
   "reasons": ["sw_power_cap", ...], "throttled_us": {"sw_power_cap": 1234, ...} (when counted)}
`throttled` is null without nvidia-smi (no GPU), never a guess. A plot footer says "throttled
(REASONS)" when it is true. Standard library only.
"""
import argparse
import json
import pathlib
import shutil
import subprocess
import sys

# nvmlClocksEventReasons bits (nvml.h). Idle, application clocks, sync boost and display clocks are
# states, not throttling; the others lower the clocks below what the GPU would run at.
REASON_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clocks_setting",
}
THROTTLE = {"sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}
COUNTERS = ["sw_power_cap", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sync_boost"]
BASE_FIELDS = ["index", "name", "clocks.sm", "clocks.mem", "temperature.gpu", "power.draw"]
REASON_FIELDS = ["clocks_event_reasons.active", "clocks_throttle_reasons.active"]


def _smi(fields, runner):
    """Rows (lists of strings) of `nvidia-smi --query-gpu=FIELDS --format=csv,noheader,nounits`,
    or None when nvidia-smi is missing or refuses the fields."""
    try:
        r = runner(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"])
    except (OSError, subprocess.SubprocessError):
        return None
    if r is None or r.returncode != 0:
        return None
    rows = [[c.strip() for c in line.split(",")] for line in r.stdout.splitlines() if line.strip()]
    return rows if rows and all(len(row) == len(fields) for row in rows) else None


def _run(cmd):
    if not shutil.which(cmd[0]):
        return None
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30)


def _number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def decode_reasons(text):
    """(bitmask, [reason names]) from nvidia-smi's "0x0000000000000004" (None, [] when unreadable)."""
    try:
        mask = int(str(text).strip(), 16)
    except ValueError:
        return None, []
    return mask, [name for bit, name in sorted(REASON_BITS.items()) if mask & bit]


def sample(runner=_run):
    """One sample per GPU: [{index, name, sm_mhz, mem_mhz, temperature_c, power_w, reasons_mask,
    reasons, throttling, counters_us}], or [] without nvidia-smi."""
    rows, reason_field = None, None
    for field in REASON_FIELDS:
        rows = _smi(BASE_FIELDS + [field], runner)
        if rows:
            reason_field = field
            break
    if not rows:
        rows = _smi(BASE_FIELDS, runner)
    if not rows:
        return []
    counters = _smi(["index"] + [f"clocks_event_reasons_counters.{c}" for c in COUNTERS], runner)
    counted = {row[0]: row[1:] for row in counters} if counters else {}
    out = []
    for row in rows:
        mask, reasons = decode_reasons(row[6]) if reason_field else (None, [])
        s = {
            "index": int(row[0]) if row[0].isdigit() else row[0],
            "name": row[1],
            "sm_mhz": _number(row[2]),
            "mem_mhz": _number(row[3]),
            "temperature_c": _number(row[4]),
            "power_w": _number(row[5]),
            "reasons_mask": mask,
            "reasons": reasons,
            "throttling": None if mask is None else any(r in THROTTLE for r in reasons),
        }
        if row[0] in counted:
            s["counters_us"] = {c: _number(v) for c, v in zip(COUNTERS, counted[row[0]]) if _number(v) is not None}
        out.append(s)
    return out


def record(before, after):
    """The record of a run from its two samples: whether any GPU throttled at either instant or,
    where the driver counts it, in between; which reasons; for how many microseconds."""
    if not before and not after:
        return {"before": before, "after": after, "throttled": None, "reasons": []}
    reasons, throttled_us = set(), {}
    for s in list(before) + list(after):
        reasons.update(r for r in s.get("reasons", []) if r in THROTTLE)
    by_index = {s["index"]: s for s in before}
    for s in after:
        b = by_index.get(s["index"])
        if not b or "counters_us" not in b or "counters_us" not in s:
            continue
        for c, v in s["counters_us"].items():
            if c in THROTTLE and c in b["counters_us"] and v - b["counters_us"][c] > 0:
                throttled_us[c] = throttled_us.get(c, 0) + v - b["counters_us"][c]
                reasons.add(c)
    known = any(s.get("reasons_mask") is not None for s in list(before) + list(after)) or throttled_us
    rec = {"before": before, "after": after, "throttled": bool(reasons) if known else None,
           "reasons": sorted(reasons)}
    if throttled_us:
        rec["throttled_us"] = throttled_us
    return rec


def footer_text(rec):
    """What a plot's footer says about a run's telemetry record ("" when there is nothing to say)."""
    if not rec or rec.get("throttled") is None:
        return ""
    if not rec["throttled"]:
        return "no throttling seen"
    return "GPU throttled (" + ", ".join(r.replace("_", " ") for r in rec.get("reasons", [])) + ")"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=pathlib.Path, help="write the sample to this JSON file")
    p.add_argument("--before", type=pathlib.Path, help="a sample written earlier: print the run's record")
    args = p.parse_args(argv)
    now = sample()
    if args.before:
        try:
            before = json.loads(args.before.read_text())
        except (OSError, ValueError):
            before = []
        text = json.dumps(record(before, now), indent=2)
    else:
        text = json.dumps(now, indent=2)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    else:
        print(text)
    if not now:
        print("telemetry: nvidia-smi not found or no GPU: nothing sampled", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
