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
# The package builds with `#cgo pkg-config: dotcourse`: the build's own dotcourse.pc (lib/pkgconfig,
# written by CMake) gives -I and -L; the rpath lets the test binary find the library at run time.
if [ ! -f "$libdir/pkgconfig/dotcourse.pc" ]; then
  echo "run_go_test: no $libdir/pkgconfig/dotcourse.pc (reconfigure the build: packaging/dotcourse_target.cmake writes it)" >&2
  exit 2
fi
export PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export CGO_ENABLED=1 CGO_LDFLAGS="-Wl,-rpath,$libdir"
export GOFLAGS=-mod=mod GOCACHE=${GOCACHE:-${TMPDIR:-/tmp}/dotcourse-gocache}
log=$(mktemp)
go vet ./... 2>&1 | tee "$log" && go test -count=1 -v ./... "$@" 2>&1 | tee -a "$log"
rc=$?
if [ "$rc" -eq 0 ] && grep -q "COURSE-NO-GPU" "$log"; then
  echo "COURSE-NO-GPU: the GPU tests above were skipped (the others passed)"
fi
rm -f "$log"
exit "$rc"
