#!/bin/sh
# gpu_foreign.sh: the foreign-kernel verification in one device call, ON the GPU machine from
# the repository root, over a carried build (harness/bench/carry.sh unpack first):
# Steps 1, 1b and 2 run side by side on the one device.
#   1 ctest      the cuda tests: kernel_test_cuda, the seed design's cuda plugin and its
#                divide-by-BLOCK variant, the device-fault plugin's isolation test
#   1b check     `normcheck check all --backend cuda`: the property campaign on the shipped
#                cuda kernel, each property in an isolated worker with a CUDA context of its own;
#                with MUTANT_BUDGET set, `normcheck mutants --backend cuda` instead: that same
#                campaign as its baseline, then the seeded mutants' cuda plugins (MUTANT_JOBS at
#                once, 3 by default; none started after MUTANT_BUDGET seconds; MUTANT_ONLY a
#                comma-separated list of ids, MUTANT_TIMEOUT a fixed timeout a run)
#   2 python     kernels/python/run_on_gpu.sh: the seed Triton kernel, its variant, the peers
#   3 orders     (beside 1 and 2, niced, on the host's cores) the false-positive campaign of
#                kernels/examples/false_positive_campaign.sh for ORDERS
# Logs under OUT (default gpu-foreign). Environment: BUILD (build/cuda), CTEST_LIMIT (240),
# CHECK_CASES and CHECK_LIMIT for 1b (200, 150),
# CASES, RUN_LIMIT and JOBS for run_on_gpu.sh (60, 150, 1), PEERS, PEER_EXPECT, PEER_CASES, ONLY (its own),
# ORDERS (none by default), ORDER_CASES, ORDER_SHARDS, ORDER_SEED, ORDER_LIMIT (6200, 8, 501, 480).
set -u
OUT=$(realpath -m "${OUT:-gpu-foreign}")
BUILD=${BUILD:-build/cuda}
mkdir -p "$OUT"
status=0
{
  echo "gpu_foreign: $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv 2>&1
  nproc
} | tee "$OUT/environment.log"

orders_pid=""
if [ -n "${ORDERS:-}" ]; then
  # shellcheck disable=SC2086  # ORDERS is a list
  nice -n 19 env CASES="${ORDER_CASES:-6200}" SHARDS="${ORDER_SHARDS:-8}" SEED="${ORDER_SEED:-501}" OUT="$OUT/orders" \
    timeout -k 5 "${ORDER_LIMIT:-480}" sh kernels/examples/false_positive_campaign.sh "$BUILD" $ORDERS \
    >"$OUT/orders.log" 2>&1 &
  orders_pid=$!
fi

# the GPU streams run side by side (one device, 16 host cores): the cuda tests then the cuda
# campaign, and the Python kernels
(
  timeout -k 10 "${CTEST_LIMIT:-240}" ctest --test-dir "$BUILD" -j4 --output-on-failure --timeout 200 \
    -R "kernel_test_cuda|seed_design_cuda|isolation.device_fault" >"$OUT/ctest.log" 2>&1 || exit 1
  # a gpu test that exits 77 (Skipped) saw no device: here that is a failure
  ! grep -q "(Skipped)" "$OUT/ctest.log"
) &
ctest_pid=$!
(
  if [ -n "${MUTANT_BUDGET:-}" ]; then
    timeout -k 10 "${CHECK_LIMIT:-150}" "$BUILD/bin/normcheck" mutants --backend cuda --cases "${CHECK_CASES:-200}" \
      --jobs "${MUTANT_JOBS:-3}" --budget "$MUTANT_BUDGET" ${MUTANT_ONLY:+--only "$MUTANT_ONLY"} \
      ${MUTANT_TIMEOUT:+--timeout "$MUTANT_TIMEOUT"} --out "$OUT/mutants" >"$OUT/check-cuda.log" 2>&1
  else
    timeout -k 10 "${CHECK_LIMIT:-150}" "$BUILD/bin/normcheck" check all --backend cuda --cases "${CHECK_CASES:-200}" \
      --case-dir "$OUT/cases_cuda" --json "$OUT/check-cuda.json" >"$OUT/check-cuda.log" 2>&1
  fi
) &
check_pid=$!
(
  OUT="$OUT/python" CASES="${CASES:-60}" JOBS="${JOBS:-1}" RUN_LIMIT="${RUN_LIMIT:-150}" sh kernels/python/run_on_gpu.sh "$BUILD" \
    >"$OUT/python.log" 2>&1
) &
python_pid=$!
wait "$ctest_pid" || status=1
echo "=== ctest"
tail -30 "$OUT/ctest.log"
wait "$check_pid" || status=1
echo "=== check all on cuda${MUTANT_BUDGET:+ (the mutation campaign's baseline, then the mutants)}"
tail -45 "$OUT/check-cuda.log"
wait "$python_pid" || status=1
echo "=== python"
tail -20 "$OUT/python.log"

if [ -n "$orders_pid" ]; then
  wait "$orders_pid" || status=1
  echo "=== orders"
  cat "$OUT/orders.log"
fi
echo "gpu_foreign: exit $status"
exit $status
