#!/usr/bin/env bash
# How far `reuse`'s reading beyond its own phases moves between processes: runs
# `07_library --kernel reuse --n N` several times per size and keeps, per run, the phase table's
# own_call_minus_phases_ms and control_host_minus_span_ms for reuse (in µs) and their difference.
#   library/bench/repeat_reuse.sh BUILD_DIR OUT_CSV [RUNS (6)] [SIZES ("2^26 2^24")]
# e.g. library/bench/repeat_reuse.sh build/solutions results/local/07_library_reuse_repeats.csv
set -euo pipefail
usage() { sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; }
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
[ $# -ge 2 ] || { usage >&2; exit 2; }
build=$1
out=$2
runs=${3:-6}
sizes=${4:-"2^26 2^24"}
exe=$build/bin/07_library
[ -x "$exe" ] || { echo "repeat_reuse: no $exe (build the target 07_library first)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "n,run,own_us,control_us,own_minus_control_us,call_ms" >"$out"
for n in $sizes; do
  for run in $(seq 1 "$runs"); do
    echo "repeat_reuse: n = $n, run $run of $runs" >&2
    "$exe" --kernel reuse --n "$n" --quiet --csv "$tmp/r.csv" >/dev/null
    python3 - "$tmp/r_phases.csv" "$run" >>"$out" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["version"] == "reuse"]
if len(rows) != 1:
    sys.exit(f"repeat_reuse: {sys.argv[1]} has {len(rows)} rows for reuse, expected 1")
r = rows[0]
own, control = 1e3 * float(r["own_call_minus_phases_ms"]), 1e3 * float(r["control_host_minus_span_ms"])
print(f"{r['n']},{sys.argv[2]},{own:.2f},{control:.2f},{own - control:.2f},{float(r['call_ms']):.2f}")
PY
  done
done
echo "repeat_reuse: wrote $out" >&2
