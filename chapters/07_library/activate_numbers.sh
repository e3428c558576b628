#!/usr/bin/env bash
# Once results/reference/h100/ holds chapter 07's CSVs: turns the README's "pending" number and
# table markers into live ones, and fills them in with tools/sync_snippets.py.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
for f in 07_library.csv 07_library_phases.csv 07_library_link.csv 07_library_staging.csv 07_library_program.csv \
         07_library_program_python.csv 07_library_program_go.csv 07_library_peers.csv; do
  [ -f "results/reference/h100/$f" ] || { echo "activate_numbers: results/reference/h100/$f is missing" >&2; exit 2; }
done
sed -i -e 's/<!-- pending num: /<!-- num: /g' -e 's/<!-- \/pending -->/<!-- \/num -->/g' \
       -e 's/<!-- pending table: /<!-- table: /g' -e 's/<!-- \/pending-table -->/<!-- \/table -->/g' \
       chapters/07_library/README.md
python3 tools/sync_snippets.py
python3 tools/sync_snippets.py --check
echo "activate_numbers: done; now delete the 'pending' note at the top of the README and reread the text around each number"
