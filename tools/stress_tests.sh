#!/usr/bin/env bash
# Runs tools/test.sh again and again to find flaky tests (a maintainers' check, not run in CI).
# Stops at the first run that fails and says which run and which tests failed; every run's output is
# kept in build/stress/run-K.log.
usage() {
  cat <<'EOF'
Usage: tools/stress_tests.sh [N] [--load] [--keep-going] [-- TEST_SH_ARGS...]

Runs tools/test.sh N times back to back (default 50) and stops at the first failure, printing
which run failed and which tests (or the last lines of its output when no test list was printed,
for a failed build). Every run's output goes to build/stress/run-K.log.

  N              how many runs (a whole number >= 1; default 50)
  --load         keep every core busy meanwhile: one busy loop per core (nproc), ended on exit;
                 a test that depends on the host's speed fails sooner under load
  --keep-going   do not stop at a failure: run all N and count the failed runs
  -- ARGS        passed to every tools/test.sh run (e.g. -- -L common, -- -R 'stopping rule')
  -h, --help     this text

Exit status: 0 when every run passed, 1 when a run failed, 2 for bad arguments.
Example: tools/stress_tests.sh 3 --load -- -L common
EOF
}
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=50
load=0
keep_going=0
test_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --load) load=1 ;;
    --keep-going) keep_going=1 ;;
    --) shift; test_args=("$@"); break ;;
    *)
      if [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ]; then
        runs=$1
      else
        echo "stress_tests.sh: '$1' is neither a number of runs (1, 2, ...) nor an option (see --help)" >&2
        exit 2
      fi ;;
  esac
  shift
done

logs="$root/build/stress"
mkdir -p "$logs"
load_pids=()
stop_load() {
  local pid
  for pid in "${load_pids[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${load_pids[@]}"; do wait "$pid" 2>/dev/null; done
  load_pids=()
}
trap stop_load EXIT
trap 'exit 130' INT TERM
if [ "$load" = 1 ]; then
  cores=$(nproc 2>/dev/null || echo 2)
  for ((c = 0; c < cores; c++)); do
    (while :; do :; done) &
    load_pids+=($!)
  done
  echo "stress: $cores busy loops running (--load)"
fi

# The names of the tests a run failed, from CTest's own list at the end of its output.
failed_tests() {
  sed -n '/The following tests FAILED:/,$p' "$1" | sed -n 's/^[[:space:]]*[0-9]\+ - \(.*\) ([A-Za-z ]*)$/\1/p'
}

failures=0
started=$SECONDS
for ((k = 1; k <= runs; k++)); do
  log="$logs/run-$k.log"
  t0=$SECONDS
  "$root/tools/test.sh" "${test_args[@]}" >"$log" 2>&1
  rc=$?
  seconds=$((SECONDS - t0))
  summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$log" | tail -1)
  if [ "$rc" = 0 ]; then
    echo "stress: run $k of $runs passed in ${seconds} s (${summary:-no summary line})"
    continue
  fi
  failures=$((failures + 1))
  echo "stress: run $k of $runs FAILED (exit $rc) after ${seconds} s (${summary:-no summary line}); log: $log"
  names=$(failed_tests "$log")
  if [ -n "$names" ]; then
    echo "stress: failed in run $k:"
    printf '%s\n' "$names" | sed 's/^/  /'
  else
    echo "stress: no test list in the output (a build or set-up failure?); its last lines:"
    tail -n 15 "$log" | sed 's/^/  | /'
  fi
  [ "$keep_going" = 1 ] || break
done
total=$((SECONDS - started))
done_runs=$((k > runs ? runs : k))
if [ "$failures" = 0 ]; then
  echo "stress: all $runs runs passed in ${total} s ($((total / runs)) s a run)"
  exit 0
fi
echo "stress: $failures of $done_runs runs failed (${total} s)"
exit 1
