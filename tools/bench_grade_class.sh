#!/usr/bin/env bash
# The class-grading benchmark: twelve submissions (the solutions, the unfilled tree, two partial
# solutions, eight negative cases of tests/negative; tests/tools/make_class.py --bench) graded by
# tools/grade-class on every GPU of the machine, cold (fresh build folders, ccache off), and one row
# per submission written to a CSV: student, status, wall_s, gpu, points, max, not_assessed, reason,
# class_wall_s, gpus, grade_args, commit (COURSE_COMMIT if set, else git's HEAD).
#
#   tools/bench_grade_class.sh                         # in the foreground
#   tools/bench_grade_class.sh --background --wait 540 # detached (setsid), then follow it 540 s
#   tools/bench_grade_class.sh --wait 540              # follow a detached run again, until it ends
#   tools/bench_grade_class.sh -- --expect-gpu --no-sanitize   # tools/grade's options (default: --expect-gpu)
#
# Options: --work DIR (default build/bench-grade-class: the class, the outputs, the log)
#          --csv FILE (default results/reference/h200x2/grading_class.csv)
# A lent GPU machine ends a command after 10 minutes: --background survives the command, and a
# later --wait picks it up. --wait exits 0 when the run has ended (its CSV written), 124 while it
# still runs, 1 when it ended without a CSV. Not a test: it measures.
set -euo pipefail
cd "$(dirname "$0")/.."
work=build/bench-grade-class
csv=results/reference/h200x2/grading_class.csv
background=0 wait_s="" child=0
grade_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --work) work=$2; shift 2 ;;
    --csv) csv=$2; shift 2 ;;
    --background) background=1; shift ;;
    --child) child=1; shift ;;  # the detached run itself (its parent made $work)
    --wait) wait_s=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; grade_args=("$@"); break ;;
    *) echo "bench_grade_class.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#grade_args[@]} -gt 0 ] || grade_args=(--expect-gpu)
log=$work/bench.log

follow() {  # the progress lines until the run ends or $1 seconds pass
  local until=$((SECONDS + $1)) shown=0 n
  while [ $SECONDS -lt $until ]; do
    if [ -f "$log" ]; then
      n=$(wc -l <"$log")
      [ "$n" -gt "$shown" ] && sed -n "$((shown + 1)),${n}p" "$log"
      shown=$n
    fi
    if [ -f "$work/ended" ]; then
      [ -f "$work/csv-written" ] && { echo "bench_grade_class.sh: done: $(cat "$work/csv-written")"; return 0; }
      echo "bench_grade_class.sh: the run ended without a CSV (see $log)" >&2; return 1
    fi
    sleep 5
  done
  echo "bench_grade_class.sh: still running after $1 s (log: $log); --wait SECONDS again to follow it" >&2
  return 124
}

if [ "$background" = 1 ]; then
  rm -rf "$work"; mkdir -p "$work"
  setsid nohup "$0" --work "$work" --csv "$csv" --child -- "${grade_args[@]}" >"$log" 2>&1 </dev/null &
  echo "bench_grade_class.sh: started in the background (pid $!), log $log"
  [ -n "$wait_s" ] && { follow "$wait_s"; exit $?; }
  exit 0
fi
if [ -n "$wait_s" ]; then follow "$wait_s"; exit $?; fi
exit_with() { touch "$work/ended"; exit "$1"; }
[ "$child" = 1 ] || rm -rf "$work"   # a foreground run starts afresh too
mkdir -p "$work"
# COURSE_COMMIT names the tree when git cannot (a copy of a working tree whose .git is older).
commit=${COURSE_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo "?")}
echo "== $(date '+%Y-%m-%d %H:%M:%S') bench_grade_class: commit $commit"
nvidia-smi -L 2>/dev/null || echo "(nvidia-smi lists no GPU: the GPU tests will not run)"
python3 tests/tools/make_class.py "$work/class" --bench || exit_with 1
export CCACHE_DISABLE=1   # cold: nothing reused from an earlier build
start=$SECONDS
set +e
tools/grade-class "$work/class" --out "$work/out" --build-root "$work/builds" "${grade_args[@]}"
rc=$?
set -e
class_wall=$((SECONDS - start))
echo "== tools/grade-class exited $rc after $class_wall s"
[ -f "$work/out/gradebook.csv" ] || exit_with 1
mkdir -p "$(dirname "$csv")"
python3 - "$work/out/gradebook.csv" "$csv" "$class_wall" "${grade_args[*]}" "$commit" <<'EOF'
import csv, subprocess, sys
book, dest, wall, args, commit = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
gpus = subprocess.run(["nvidia-smi", "-L"], stdout=subprocess.PIPE, text=True).stdout.count("GPU ") if \
    subprocess.run(["which", "nvidia-smi"], stdout=subprocess.DEVNULL).returncode == 0 else 0
cols = ["student", "status", "wall_s", "gpu", "points", "max", "not_assessed", "reason", "class_wall_s", "gpus",
        "grade_args", "commit"]
with open(book, newline="") as f, open(dest, "w", newline="") as g:
    w = csv.writer(g, lineterminator="\n")
    w.writerow(cols)
    for r in csv.DictReader(f):
        w.writerow([r["student"], r["status"], r["wall_s"], r["gpu"], r["total"], r["max"], r["not_assessed"],
                    r["reason"][:200], wall, gpus, args, commit])
print(f"bench_grade_class: {dest}")
EOF
echo "$csv (class of 12 in $class_wall s)" >"$work/csv-written"
exit_with 0
