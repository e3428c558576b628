# Sourced by tools/setup.sh and tools/plots.sh. Defines
#   course_python       the path of a Python that has matplotlib (for the plots)
#   course_test_python  the path of a Python that has NumPy and pytest (chapter 07's Python tests)
# Each is the system's python3 when it has those modules, else the repository's .venv/, made on
# first use (python3 -m venv) and given what it lacks with pip: plots/requirements.txt for the
# plots, library/python/requirements-test.txt for the tests. Needs only python3 with
# its venv module (and PyPI, the first time).
_course_venv_python() {  # requirements file, then the modules it must import
  local root req=$1
  shift
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  local check="import $(IFS=,; echo "$*")"
  if python3 -c "$check" >/dev/null 2>&1; then
    echo python3
    return
  fi
  if [ ! -x "$root/.venv/bin/python" ]; then
    echo "setup: creating .venv (python3 -m venv)" >&2
    python3 -m venv "$root/.venv" >&2
  fi
  if ! "$root/.venv/bin/python" -c "$check" >/dev/null 2>&1; then
    echo "setup: pip install -r ${req#"$root"/} into .venv" >&2
    "$root/.venv/bin/pip" install -q -r "$req" >&2
  fi
  echo "$root/.venv/bin/python"
}
course_python() {
  _course_venv_python "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/plots/requirements.txt" matplotlib
}
course_test_python() {
  _course_venv_python "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/library/python/requirements-test.txt" numpy pytest
}
