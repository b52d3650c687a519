#!/bin/sh
# check_svg.sh PLOT.svg SCREENSHOT.png: the plot of `normcheck train` in headless Chromium, from
# disk. A probe page loads the SVG as an image (a malformed SVG fails to decode and fires onerror),
# checks its size, draws it onto a canvas and counts the pixels that are not the background
# (a blank or broken drawing has none), then reads the SVG's own text for its three panels and
# both loss curves. Also takes a screenshot of the plot. Exits 77 when there is no chromium.
set -eu
svg=$1
shot=$2
browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
done
[ -n "$browser" ] || { echo "chromium is not installed: skipped"; exit 77; }
[ -s "$svg" ] || { echo "no plot $svg"; exit 1; }
svg=$(cd "$(dirname "$svg")" && pwd)/$(basename "$svg")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags="--headless --disable-gpu --hide-scrollbars --no-first-run --no-default-browser-check --user-data-dir=$work/profile"
[ "$(id -u)" != 0 ] || flags="$flags --no-sandbox"  # Chromium refuses root without it

# shellcheck disable=SC2086
timeout 120 "$browser" $flags --window-size=960,900 --virtual-time-budget=3000 \
  --screenshot="$shot" "file://$svg" >"$work/shot.log" 2>&1 || { cat "$work/shot.log"; exit 1; }
[ -s "$shot" ] || { echo "no screenshot written"; cat "$work/shot.log"; exit 1; }

# the SVG travels inside the probe page as a data: URL, so the canvas it is drawn on stays
# readable (a file:// image would taint it)
data=$(base64 -w0 "$svg")
cat >"$work/probe.html" <<PAGE
<!doctype html><html><body><pre id="nc-probe">pending</pre>
<script>
const out = document.getElementById('nc-probe');
const img = new Image();
img.onerror = () => { out.textContent = 'ERROR: the SVG did not decode'; };
img.onload = () => {
  const c = document.createElement('canvas');
  c.width = img.naturalWidth; c.height = img.naturalHeight;
  const g = c.getContext('2d');
  g.drawImage(img, 0, 0);
  const px = g.getImageData(0, 0, c.width, c.height).data;
  let ink = 0, colored = 0;
  for (let i = 0; i < px.length; i += 4) {
    const r = px[i], gr = px[i + 1], b = px[i + 2];
    if (Math.abs(r - 250) + Math.abs(gr - 250) + Math.abs(b - 250) > 60) ink++;
    if (Math.max(r, gr, b) - Math.min(r, gr, b) > 80) colored++;
  }
  const doc = new DOMParser().parseFromString(atob('$data'), 'image/svg+xml');
  const bad = doc.getElementsByTagName('parsererror').length;
  const labels = [...doc.querySelectorAll('polyline')].map((p) => p.getAttribute('data-label'));
  const titles = [...doc.querySelectorAll('g.panel > text:first-child')].map((t) => t.textContent);
  out.textContent = ['size ' + img.naturalWidth + 'x' + img.naturalHeight, 'ink ' + ink, 'colored ' + colored,
                     'parse errors ' + bad, 'panels ' + titles.length].concat(titles, labels).join('\n');
};
img.src = 'data:image/svg+xml;base64,$data';
</script></body></html>
PAGE
# shellcheck disable=SC2086
timeout 120 "$browser" $flags --virtual-time-budget=5000 --dump-dom "file://$work/probe.html" \
  >"$work/dom.html" 2>"$work/dom.log" || { cat "$work/dom.log"; exit 1; }
sed -n '/id="nc-probe"/,/<\/pre>/p' "$work/dom.html" >"$work/probe.txt"
cat "$work/probe.txt"
fail=0
grep -q 'size 960x900' "$work/probe.txt" || { echo "NOT RENDERED: the plot is not 960x900"; fail=1; }
grep -q 'parse errors 0' "$work/probe.txt" || { echo "NOT RENDERED: the SVG does not parse"; fail=1; }
grep -q 'panels 3' "$work/probe.txt" || { echo "NOT RENDERED: three panels expected"; fail=1; }
ink=$(sed -n 's/^ink \([0-9]*\)$/\1/p' "$work/probe.txt")
colored=$(sed -n 's/^colored \([0-9]*\)$/\1/p' "$work/probe.txt")
# axes, text and ten lines draw tens of thousands of pixels; the coloured ones are the curves
[ "${ink:-0}" -gt 20000 ] || { echo "NOT RENDERED: only ${ink:-0} pixels drawn"; fail=1; }
[ "${colored:-0}" -gt 2000 ] || { echo "NOT RENDERED: only ${colored:-0} coloured pixels (the curves)"; fail=1; }
for want in "reference branch" "kernel branch" "training loss" "branches apart" "exact-oracle bounds"; do
  grep -qF "$want" "$work/probe.txt" || { echo "NOT RENDERED: $want"; fail=1; }
done
[ "$fail" -eq 0 ] && echo "$browser rendered $svg: screenshot $shot"
exit "$fail"
