#!/usr/bin/env bash
# ctest ch07.go: `go test` of the Go package against a given build's libdotcourse.so.
#   run_go_test.sh LIBDIR [go test args]
# Without a GPU the GPU tests skip with the reason; if the rest passed it prints COURSE-NO-GPU,
# so ctest reports the test as skipped, never as passed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
libdir=$(cd "$1" && pwd)
shift
cd "$here"
export CGO_ENABLED=1 CGO_LDFLAGS="-L$libdir -Wl,-rpath,$libdir"
export GOFLAGS=-mod=mod GOCACHE=${GOCACHE:-${TMPDIR:-/tmp}/dotcourse-gocache}
log=$(mktemp)
go vet ./... 2>&1 | tee "$log" && go test -count=1 -v ./... "$@" 2>&1 | tee -a "$log"
rc=$?
if [ "$rc" -eq 0 ] && grep -q "COURSE-NO-GPU" "$log"; then
  echo "COURSE-NO-GPU: the GPU tests above were skipped (the others passed)"
fi
rm -f "$log"
exit "$rc"
