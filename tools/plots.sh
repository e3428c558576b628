#!/usr/bin/env bash
# Draws the plots with a Python that has matplotlib (the system's, or .venv/ made on first use), so
# the plot commands work on a fresh machine. Arguments go to plots/render_all.py, in any order:
#   tools/plots.sh --results results/local --out results/local/plots
#   tools/plots.sh --results results/reference/h100 --out results/local/plots-h100
#   tools/plots.sh --results results/local --chapter 05          (one chapter; --chapter repeats)
# A chapter asked for whose CSVs are missing is one line naming them and the reference folder that
# has them, and exit code 2.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/tools/course_python.sh"
python=$(course_python)
exec "$python" "$root/plots/render_all.py" "$@"
