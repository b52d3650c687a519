#!/bin/sh
# The false-positive guard of the error bound, at full strength: `normcheck check all` on each
# example order plugin (kernels/examples/*_order) at 100,000 cases a property (or CASES).
# Every example is a correct kernel, so any failure is a false positive of the bound (or a
# harness bug): the run must end with zero failures. Nightly or before a bound change, like a
# benchmark; ctest runs the same check at a few hundred cases (example_order.*).
#
#   kernels/examples/false_positive_campaign.sh [BUILD_DIR] [ORDER...]
#   CASES=100000 SEED=1 OUT=reports/orders kernels/examples/false_positive_campaign.sh build/cpu torch_order
#
# Writes OUT/<order>.log and OUT/<order>.json and prints one line an order: cases, failures, seconds.
set -u
build=${1:-build/cpu}
[ $# -gt 0 ] && shift
orders=${*:-abi_order reference_order torch_order liger_order}
cases=${CASES:-100000}
seed=${SEED:-1}
out=${OUT:-reports/orders}
mkdir -p "$out"
status=0
for order in $orders; do
  plugin="$build/lib/libnormcheck_example_$order.so"
  if [ ! -f "$plugin" ]; then
    echo "$order: $plugin is missing (cmake --build $build --target normcheck_example_$order)" >&2
    status=70
    continue
  fi
  start=$(date +%s)
  "$build/bin/normcheck" check all --kernel "$plugin" --cases "$cases" --seed "$seed" \
    --case-dir "$out/cases-$order" --json "$out/$order.json" >"$out/$order.log" 2>&1
  rc=$?
  seconds=$(($(date +%s) - start))
  failed=$(grep -c '^FAIL' "$out/$order.log")
  echo "$order: $cases cases a property, seed $seed, exit $rc, $failed failing properties, ${seconds} s"
  [ "$rc" -ne 0 ] && status=1
done
exit $status
