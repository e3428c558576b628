#!/usr/bin/env bash
# Draws the plots with a Python that has matplotlib (the system's, or .venv/ made on first use), so
# the plot commands work on a fresh machine. Arguments go to plots/render_all.py:
#   tools/plots.sh --results results/local --out results/local/plots
#   tools/plots.sh --results results/reference/h100 --out results/local/plots-h100
# One chapter: tools/plots.sh --chapter 05_many_blocks --results results/local --out DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/tools/course_python.sh"
python=$(course_python)
if [ "${1:-}" = "--chapter" ]; then
  [ $# -ge 2 ] || { echo "plots: --chapter needs a name, e.g. 05_many_blocks" >&2; exit 2; }
  script=$(ls "$root"/plots/"$2"*.py 2>/dev/null | head -1)
  [ -n "$script" ] || { echo "plots: no plots/$2*.py" >&2; exit 2; }
  shift 2
  exec "$python" "$script" "$@"
fi
exec "$python" "$root/plots/render_all.py" "$@"
