#!/bin/sh
# mutants_in_training.sh BUILD_DIR OUT_DIR [normcheck train options...]
# Runs `normcheck train` on the shipped simt kernel and on every simt mutant plugin built in
# BUILD_DIR (lib/libnormcheck_mutant_<id>_simt.so; build them with the normcheck_mutant_plugins
# target), one run folder each under OUT_DIR, then writes OUT_DIR/mutants-in-training.md: which
# mutants training exposes, at which step, through which tensor, and what the losses show.
# Extra options go to every run (e.g. --hidden 256 for the 16-byte vector path).
set -u
build=$1
out=$2
shift 2
normcheck=$build/bin/normcheck
[ -x "$normcheck" ] || { echo "no $normcheck: build the normcheck target first"; exit 70; }
mkdir -p "$out"
runs=""
run() {  # run NAME normcheck-train-arguments...
  name=$1
  shift
  "$normcheck" train "$@" --out "$out/$name" >"$out/$name.log" 2>&1
  echo "$name: exit $? ($(tail -n 1 "$out/$name.log"))"
  runs="$runs $out/$name"
}
run shipped --backend simt "$@"
for plugin in "$build"/lib/libnormcheck_mutant_*_simt.so; do
  [ -e "$plugin" ] || { echo "no mutant plugins in $build/lib"; exit 70; }
  id=$(basename "$plugin" .so | sed 's/^libnormcheck_mutant_//; s/_simt$//')
  run "$id" --kernel "$plugin" "$@"
done
commit=$(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo unknown)
# shellcheck disable=SC2086
"$build/bin/train_mutant_table" "## normcheck train on simt, $(date -u +%Y-%m-%d), commit \`$commit\`, options: ${*:-(defaults)}" $runs \
  >"$out/mutants-in-training.md"
echo "table: $out/mutants-in-training.md"
