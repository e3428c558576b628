#!/usr/bin/env bash
# Builds the Go test binary and the motivating program where Go is installed, to carry them to a
# GPU machine without Go. Both look for libdotcourse.so in ../lib beside them (rpath $ORIGIN/../lib),
# or in LD_LIBRARY_PATH.
#   library/go/build_carry.sh [BUILD_DIR]      (default build/solutions)
# writes BUILD_DIR/go-bin/dotcourse.test and BUILD_DIR/go-bin/motivate. Copy go-bin/ into the GPU
# machine's build folder (e.g. build/gpu-solutions/go-bin/) after building libdotcourse.so there, and:
#   build/gpu-solutions/go-bin/dotcourse.test -test.v
#   build/gpu-solutions/go-bin/motivate -csv results/local/07_library_program_go.csv
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-build/solutions}
case $build in /*) ;; *) build=$root/$build ;; esac
[ -f "$build/lib/libdotcourse.so" ] || { echo "build_carry: no $build/lib/libdotcourse.so (build the target dotcourse first)" >&2; exit 2; }
mkdir -p "$build/go-bin"
cd "$here"
export PKG_CONFIG_PATH="$build/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"  # #cgo pkg-config: dotcourse
export CGO_ENABLED=1 GOFLAGS=-mod=mod CGO_LDFLAGS="-Wl,-rpath,\$ORIGIN/../lib"
go test -c -o "$build/go-bin/dotcourse.test" ./dotcourse
go build -o "$build/go-bin/motivate" ./cmd/motivate
echo "build_carry: wrote $build/go-bin/dotcourse.test and $build/go-bin/motivate"
