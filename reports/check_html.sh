#!/bin/sh
# check_html.sh PAGE.html SCREENSHOT.png EXPECTED...
# Opens a mutation report page in headless Chromium from disk (file://, no server), takes a
# 1400x1000 screenshot of it, and checks that the mutation-testing-elements component rendered:
# each EXPECTED text (a mutant id, a file name, the score) must appear in what the component
# drew. The component draws into shadow roots, which --dump-dom does not print, so a probe
# script appended to a copy of the page copies the text and attributes of every shadow root,
# overview and each file's view, into a <pre id="nc-probe"> first. Exits 77 when there is no
# chromium.
set -eu
page=$1
shot=$2
shift 2
browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
done
[ -n "$browser" ] || { echo "chromium is not installed: skipped"; exit 77; }
[ -f "$page" ] || { echo "no page $page"; exit 1; }
page=$(cd "$(dirname "$page")" && pwd)/$(basename "$page")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
set -- "$@"
flags="--headless --disable-gpu --hide-scrollbars --no-first-run --no-default-browser-check --user-data-dir=$work/profile"
[ "$(id -u)" != 0 ] || flags="$flags --no-sandbox"  # Chromium refuses root without it

# shellcheck disable=SC2086
timeout 120 "$browser" $flags --window-size=1400,1000 --virtual-time-budget=5000 \
  --screenshot="$shot" "file://$page" >"$work/shot.log" 2>&1 || { cat "$work/shot.log"; exit 1; }
[ -s "$shot" ] || { echo "no screenshot written"; cat "$work/shot.log"; exit 1; }

cp "$page" "$work/probe.html"
cat >>"$work/probe.html" <<'PROBE'
<script>
// the text and the mutant/id/title attributes of a node and all shadow roots below it
function ncCollect(node, out) {
  if (node.nodeType === Node.TEXT_NODE) { const t = node.textContent.trim(); if (t) out.push(t); return; }
  if (node.attributes)
    for (const a of node.attributes) if (/mutant|id|title/.test(a.name)) out.push('@' + a.name + '=' + a.value);
  if (node.shadowRoot) ncCollect(node.shadowRoot, out);
  for (const c of node.childNodes) ncCollect(c, out);
}
function ncLinks(node, out) {
  if (node.nodeType !== Node.ELEMENT_NODE && node.nodeType !== Node.DOCUMENT_FRAGMENT_NODE) return;
  if (node.tagName === 'A' && /#mutant\/./.test(node.getAttribute('href') || '')) out.add(node.getAttribute('href'));
  if (node.shadowRoot) ncLinks(node.shadowRoot, out);
  for (const c of node.childNodes) ncLinks(c, out);
}
setTimeout(() => {
  const app = document.querySelector('mutation-test-report-app');
  const out = ['== overview'];
  ncCollect(app, out);
  const links = new Set();
  ncLinks(app, links);
  const views = [...links].map((h) => h.slice(h.indexOf('#')));
  const next = () => {
    if (views.length === 0) {
      const pre = document.createElement('pre');
      pre.id = 'nc-probe';
      pre.textContent = out.join('\n');
      document.body.appendChild(pre);
      return;
    }
    const view = views.shift();
    location.hash = view;
    setTimeout(() => { out.push('== ' + view); ncCollect(app, out); next(); }, 400);
  };
  next();
}, 1500);
</script>
PROBE
# shellcheck disable=SC2086
timeout 120 "$browser" $flags --virtual-time-budget=20000 --dump-dom "file://$work/probe.html" \
  >"$work/dom.html" 2>"$work/dom.log" || { cat "$work/dom.log"; exit 1; }
grep -q 'id="nc-probe"' "$work/dom.html" || { echo "the probe did not finish: the page did not render"; exit 1; }
sed -n '/id="nc-probe"/,/<\/pre>/p' "$work/dom.html" >"$work/probe.txt"
views=$(grep -c '== ' "$work/probe.txt" || true)
missing=0
for want in "$@"; do
  if grep -qF -- "$want" "$work/probe.txt"; then
    echo "rendered: $want"
  else
    echo "NOT RENDERED: $want"
    missing=$((missing + 1))
  fi
done
echo "$browser rendered $page: $views views, screenshot $shot"
[ "$missing" -eq 0 ]
