# Sourced by tools/setup.sh and tools/plots.sh: defines course_python, which prints the path of a
# Python that has matplotlib: the system's python3 if it has it, else .venv/ (made on first use
# from plots/requirements.txt). Needs only python3 with its venv module.
# Python for the plots: the system's python3 if it has matplotlib, else a venv in .venv.
course_python() {
  local root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  if python3 -c 'import matplotlib' >/dev/null 2>&1; then
    echo python3
  elif [ -x "$root/.venv/bin/python" ] && "$root/.venv/bin/python" -c 'import matplotlib' >/dev/null 2>&1; then
    echo "$root/.venv/bin/python"
  else
    echo "setup: creating .venv for the plots (pip install -r plots/requirements.txt)" >&2
    python3 -m venv "$root/.venv" >&2
    "$root/.venv/bin/pip" install -q -r "$root/plots/requirements.txt" >&2
    echo "$root/.venv/bin/python"
  fi
}
