#!/usr/bin/env bash
# Makes sure the course's build dependencies are present: CMake >= 3.25, nvcc (CUDA 12.x/13.x),
# Catch2 (2.13 or 3.x) and CLI11, and Go for chapter 07's Go package (COURSE_SETUP_GO=0: no Go);
# with COURSE_SETUP_DOCS=1 doxygen, with COURSE_SETUP_NOTEBOOK=1 what runs the notebook headless.
# Installs the missing ones with apt-get where that is possible (Debian/Ubuntu, as root, with a
# package registry in reach: apt's sources are probed first, for 3 s at most, so a machine that
# cannot reach one is told at once); otherwise says exactly what to install and exits 2 (Go: says
# so and goes on). Sourced or run by tools/test.sh and tools/run_course.sh; safe to run again.
set -euo pipefail

missing_pkgs=()
say() { echo "setup: $*" >&2; }

command -v cmake >/dev/null || { say "cmake not found: install CMake >= 3.25"; exit 2; }
cmake_version=$(cmake --version | head -1 | awk '{print $3}')
if [ "$(printf '%s\n3.25\n' "$cmake_version" | sort -V | head -1)" != "3.25" ]; then
  say "CMake $cmake_version is too old: 3.25 or newer is needed"; exit 2
fi
if ! command -v nvcc >/dev/null; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH="/usr/local/cuda/bin:$PATH"
  else
    say "nvcc not found: install the CUDA Toolkit (12.x or 13.x) and put its bin/ on PATH"; exit 2
  fi
fi

have_cmake_package() {  # name: is a CMake config for it installed where find_package looks?
  local name=$1
  for dir in /usr/lib/cmake /usr/share/cmake /usr/local/lib/cmake /usr/local/share/cmake \
             /usr/lib/x86_64-linux-gnu/cmake /usr/lib/aarch64-linux-gnu/cmake /usr/local/lib64/cmake \
             ${CMAKE_PREFIX_PATH:+${CMAKE_PREFIX_PATH//:/ }}; do
    compgen -G "$dir/${name}*/${name}Config.cmake" >/dev/null 2>&1 && return 0
    compgen -G "$dir/${name}Config.cmake" >/dev/null 2>&1 && return 0
  done
  return 1
}
# Can apt reach a package registry? A machine behind a firewall (the GPU machines) cannot, and
# apt-get takes seconds to find out. This asks in 3 s at most: one TCP connection to each host of
# apt's sources (or to its proxy), all at once; a local source (file:, cdrom:) counts as reachable.
# Sets registry_hosts (what was probed, for the message).
registry_hosts=""
apt_registry_reachable() {
  local list="" parts="" proxy uri rest host port
  eval "$(apt-config shell list Dir::Etc::sourcelist/f parts Dir::Etc::sourceparts/d proxy Acquire::http::Proxy 2>/dev/null)"
  proxy=${proxy:-${http_proxy:-${HTTP_PROXY:-}}}
  local uris=()
  if [ -n "$proxy" ] && [ "$proxy" != DIRECT ]; then
    uris=("$proxy")
  else
    local files=() f
    [ -n "$list" ] && [ -f "$list" ] && files+=("$list")
    for f in "$parts"*.list "$parts"*.sources; do
      if [ -n "$parts" ] && [ -f "$f" ]; then files+=("$f"); fi
    done
    [ ${#files[@]} -gt 0 ] || return 1
    # One-line sources ("deb [opts] URI suite ...") and deb822 ones ("URIs: URI ..."), comments out.
    mapfile -t uris < <(sed -e 's/#.*//' "${files[@]}" | grep -E '^[[:space:]]*(deb|deb-src|URIs:)[[:space:]]' |
                        grep -oE '[a-z0-9+]+:/[^[:space:]]*' | sort -u)
  fi
  local targets=()
  for uri in "${uris[@]}"; do
    case "$uri" in file:*|cdrom:*|copy:*) registry_hosts="$uri"; return 0 ;; esac
    rest=${uri#*://}; rest=${rest%%/*}; rest=${rest##*@}
    host=${rest%:*}; port=${rest##*:}
    if [ "$host" = "$rest" ]; then case "$uri" in https*) port=443 ;; *) port=80 ;; esac; fi
    targets+=("$host:$port")
  done
  [ ${#targets[@]} -gt 0 ] || return 1
  registry_hosts=$(printf '%s\n' "${targets[@]}" | sort -u | paste -sd ' ')
  # Each connection in a subshell of its own; the first to succeed answers. Polled by process id:
  # `wait -n` misses a job that ended before it was called (seen with bash 5.2).
  # shellcheck disable=SC2016
  timeout 3 bash -c '
    pids=()
    for t in "$@"; do (: <>"/dev/tcp/${t%:*}/${t##*:}") 2>/dev/null & pids+=($!); done
    while [ ${#pids[@]} -gt 0 ]; do
      left=()
      for p in "${pids[@]}"; do
        if kill -0 "$p" 2>/dev/null; then left+=("$p"); elif wait "$p"; then exit 0; fi
      done
      pids=("${left[@]}")
      [ ${#pids[@]} -eq 0 ] || sleep 0.05
    done
    exit 1' _ $registry_hosts
}

have_cmake_package Catch2 || missing_pkgs+=(catch2)
have_cmake_package CLI11 || missing_pkgs+=(libcli11-dev)
if [ "${COURSE_SETUP_DOCS:-0}" = 1 ] && ! command -v doxygen >/dev/null; then missing_pkgs+=(doxygen); fi
# The notebook's runner (tools/run_notebook.py, COURSE_SETUP_NOTEBOOK=1: CI): a Jupyter kernel and
# nbclient for Debian's Python, and matplotlib there, so the notebook draws its plot without a .venv.
if [ "${COURSE_SETUP_NOTEBOOK:-0}" = 1 ] && [ -x /usr/bin/python3 ] &&
   ! /usr/bin/python3 -c 'import nbclient, nbformat, ipykernel, matplotlib' >/dev/null 2>&1; then
  missing_pkgs+=(python3-nbclient python3-nbformat python3-ipykernel python3-matplotlib)
fi
# Go, for chapter 07's Go package and its tests (ctest ch07.go): installed where apt can do it;
# elsewhere the Go tests are not registered, and configure says so.
# Go is optional: where it cannot be installed (no package registry: a GPU machine behind a
# firewall), setup says so and goes on. A caller that runs no Go sets COURSE_SETUP_GO=0
# (run_course.sh does, unless chapter 07 is among its chapters).
can_apt=0
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then can_apt=1; fi
want_go=0
if ! command -v go >/dev/null && [ "${COURSE_SETUP_GO:-1}" = 1 ]; then
  if [ $can_apt = 1 ]; then want_go=1
  else say "no Go toolchain: chapter 07's Go tests will not run (install Go >= 1.19, e.g. apt-get install golang-go)"; fi
fi
# Asked once, and only when something is to be installed.
if [ $can_apt = 1 ] && { [ ${#missing_pkgs[@]} -gt 0 ] || [ $want_go = 1 ]; } && ! apt_registry_reachable; then
  can_apt=0
  say "no package registry in reach (probed ${registry_hosts:-no apt source} for 3 s at most): nothing can be installed here"
  if [ $want_go = 1 ]; then
    want_go=0
    say "no Go toolchain: chapter 07's Go tests will not run here (install Go >= 1.19 elsewhere, or carry a Go test binary)"
  fi
fi

if [ ${#missing_pkgs[@]} -gt 0 ]; then
  if [ $can_apt = 1 ]; then
    say "installing ${missing_pkgs[*]} with apt-get"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing_pkgs[@]}" >/dev/null
  else
    say "missing: ${missing_pkgs[*]}. Install them (Debian/Ubuntu: sudo apt-get install ${missing_pkgs[*]};"
    say "elsewhere: Catch2 2.13 or 3.x and CLI11 2.x from your package manager or their sources), then run again."
    exit 2
  fi
fi

if [ $want_go = 1 ]; then
  say "installing golang-go with apt-get (chapter 07's Go package)"
  if ! { apt-get update -qq >/dev/null 2>&1; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go >/dev/null 2>&1; }; then
    say "could not install golang-go: chapter 07's Go tests will not run here (COURSE_SETUP_GO=0 skips this)"
  fi
fi

# Ninja, where it is installed, for build folders made from here on: it builds in parallel by
# itself. Presets cannot say "Ninja if present" (a generator that is missing fails), and a build
# folder cannot change generator, so this holds only while no build/*/ was made with another one.
if [ -z "${CMAKE_GENERATOR:-}" ] && command -v ninja >/dev/null; then
  setup_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  if ! grep -qsv "^CMAKE_GENERATOR:INTERNAL=Ninja$" <(grep -hs "^CMAKE_GENERATOR:INTERNAL=" "$setup_root"/build/*/CMakeCache.txt); then
    export CMAKE_GENERATOR=Ninja
  fi
fi

# Python for the plots (course_python): in its own file, so tools/plots.sh needs no compiler.
source "$(dirname "${BASH_SOURCE[0]}")/course_python.sh"
