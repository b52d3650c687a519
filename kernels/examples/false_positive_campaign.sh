#!/bin/sh
# The false-positive guard of the error bound, at full strength: `normcheck check all` on each
# example order plugin (kernels/examples/*_order) at 100,000+ cases a property. Every example
# is a correct kernel, so any failure is a false positive of the bound (or a harness bug): the
# run must end with zero failures. Nightly or before a bound change, like a benchmark; ctest
# runs the same check at a few hundred cases (example_order.*).
#
#   kernels/examples/false_positive_campaign.sh [BUILD_DIR] [ORDER...]
#   CASES=6400 SHARDS=16 SEED=1 OUT=reports/orders kernels/examples/false_positive_campaign.sh build/cpu torch_order
#
# SHARDS runs go in parallel (one a core), shard k with seed SEED+k and CASES cases a property,
# so a property gets SHARDS x CASES distinct cases (default 16 x 6400 = 102,400). Writes
# OUT/<order>/seed-<s>.log (and a case file per failure) and prints a line per order.
set -u
build=${1:-build/cpu}
[ $# -gt 0 ] && shift
orders=${*:-abi_order reference_order torch_order liger_order}
cases=${CASES:-6400}
shards=${SHARDS:-16}
seed=${SEED:-1}
out=${OUT:-reports/orders}
status=0
for order in $orders; do
  plugin="$build/lib/libnormcheck_example_$order.so"
  if [ ! -f "$plugin" ]; then
    echo "$order: $plugin is missing (cmake --build $build --target normcheck_example_$order)" >&2
    status=70
    continue
  fi
  mkdir -p "$out/$order"
  start=$(date +%s)
  k=0
  while [ "$k" -lt "$shards" ]; do
    s=$((seed + k))
    "$build/bin/normcheck" check all --kernel "$plugin" --cases "$cases" --seed "$s" \
      --case-dir "$out/$order/cases-$s" >"$out/$order/seed-$s.log" 2>&1 &
    k=$((k + 1))
  done
  wait
  seconds=$(($(date +%s) - start))
  passed=$(grep -l "every property passed" "$out/$order"/seed-*.log | wc -l)
  failing=$(cat "$out/$order"/seed-*.log | grep -c '^FAIL')
  echo "$order: $shards x $cases = $((shards * cases)) cases a property (seeds $seed..$((seed + shards - 1))), $passed/$shards shards passed, $failing failing properties, ${seconds} s"
  [ "$passed" -ne "$shards" ] && status=1
done
exit $status
