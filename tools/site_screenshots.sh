#!/usr/bin/env bash
# Screenshots of the built site in a real browser (headless Chromium), to look at what a reader sees:
# headings, wide tables, figures, the navigation tree. Needs the site (doxygen docs/Doxyfile) and
# Debian's chromium (apt-get install chromium).
#   tools/site_screenshots.sh [--html DIR] [--out DIR] [--width PX] [PAGE[#ANCHOR] ...]
# Defaults: build/docs/html, build/site-shots, 1400 px, and the pages of chapters 06, 07 and 11 with
# the spots issue 36 named (an exercise heading, the 12-column table, "Where the time goes", the
# many-GPU figure). Each shot is OUT/PAGE[_ANCHOR].png, one browser window high (--height PX, 1000).
# Exit 2 without the site or the browser.
set -euo pipefail
cd "$(dirname "$0")/.."
html=build/docs/html out=build/site-shots width=1400 height=1000 pages=()
while [ $# -gt 0 ]; do
  case $1 in
    --html) html=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --width) width=$2; shift 2 ;;
    --height) height=$2; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "site_screenshots: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) pages+=("$1"); shift ;;
  esac
done
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$browser" ] || { echo "site_screenshots: no chromium on PATH (apt-get install chromium)" >&2; exit 2; }
[ -f "$html/index.html" ] || { echo "site_screenshots: no site in $html (mkdir -p build/docs && doxygen docs/Doxyfile)" >&2; exit 2; }

# An anchor by the text of its heading or figure, so the defaults survive Doxygen renumbering its
# autotoc_mdNNN anchors: PAGE#text=WORDS is the anchor just before the first line holding WORDS.
anchor_of() {  # page file, words
  awk -v words="$2" '/class="anchor" id="/ { match($0, /class="anchor" id="[^"]*"/); last = substr($0, RSTART + 19, RLENGTH - 20) }
                     index($0, words) { print last; exit }' "$1"
}
if [ ${#pages[@]} -eq 0 ]; then
  pages=("ch06_ladder.html#text=Exercise 4 — the waves of a grid"
         "ch06_ladder.html#text=final_vs_cub"
         "ch06_ladder.html#text=Check yourself"
         "ch07_library.html#text=Where the time goes</h1>"
         "ch07_library.html#text=Exercise 4 — may this array"
         "ch11_multi_gpu.html#text=Throughput against n"
         "ch11_multi_gpu.html#text=Exercise 1 — slices")
fi
mkdir -p "$out"
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
for spec in "${pages[@]}"; do
  page=${spec%%#*} anchor=
  [ "$spec" != "$page" ] && anchor=${spec#*#}
  [ -f "$html/$page" ] || { echo "site_screenshots: no page $html/$page" >&2; exit 2; }
  if [ "${anchor#text=}" != "$anchor" ]; then
    words=${anchor#text=}
    anchor=$(anchor_of "$html/$page" "$words")
    [ -n "$anchor" ] || { echo "site_screenshots: '$words' not found in $page" >&2; exit 2; }
  fi
  name=${page%.html}${anchor:+_$anchor}
  url="file://$(cd "$html" && pwd)/$page${anchor:+#$anchor}"
  # --virtual-time-budget lets the navigation tree's scripts run and scroll to the anchor first.
  "$browser" --headless --no-sandbox --disable-gpu --user-data-dir="$profile" \
    --virtual-time-budget=3000 --window-size="$width,$height" --screenshot="$out/$name.png" "$url" \
    >/dev/null 2>&1 || { echo "site_screenshots: $browser failed on $url" >&2; exit 1; }
  echo "wrote $out/$name.png  ($page${anchor:+#$anchor})"
done
