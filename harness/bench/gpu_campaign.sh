#!/usr/bin/env bash
# The whole GPU verification in one call, ON the GPU machine from the repo root, given a
# build/cuda folder built on the development machine: gpu_session.sh (GPU tests, the four
# compute-sanitizer tools, the benchmark and its torch peer), then the property campaign's
# on cuda followed by the mutant zoo on its cuda plugins (`normcheck run`), and the fuzz
# corpora replayed on cuda under compute-sanitizer memcheck. Logs under $OUT.
set -u
set -o pipefail
OUT=$(realpath -m "${OUT:-gpu-session}")
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build/cuda}
mkdir -p "$OUT"
status=0
# the property tests are the campaign below at a larger scale: CTEST_ARGS may take them back in
CTEST_ARGS=${CTEST_ARGS:-"-j8 -E mutation|property_cuda"} OUT="$OUT" BUILD="$BUILD" bash harness/bench/gpu_session.sh || status=1

echo "=== normcheck run on cuda: the property campaign, then the mutant zoo on its cuda plugins"
# the mutants start no later than MUTANT_BUDGET s into their campaign (the rest: Ignored)
timeout "${RUN_LIMIT:-450}" "$BUILD/bin/normcheck" run --backend cuda --scale "${RUN_SCALE:-0.5}" \
  --mutant-jobs "${MUTANT_JOBS:-4}" --mutant-budget "${MUTANT_BUDGET:-300}" \
  --report "$OUT/run-cuda.json" 2>&1 | tail -60 | tee "$OUT/run-cuda.log"
rc=$?
# 2: a seeded mutant survived; the mutation report says which
[ "$rc" -eq 0 ] || [ "$rc" -eq 2 ] || status=1
[ -d reports/out/mutants ] && cp -r reports/out/mutants "$OUT/mutants-cuda"

echo "=== fuzz corpora on cuda under memcheck"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for t in contract value; do
  NORMCHECK_FUZZ_BACKEND=cuda timeout "${FUZZ_LIMIT:-90}" "$CS" --tool memcheck --error-exitcode 1 \
    "$BUILD/bin/${t}_fuzzer_replay" corpus/${t}_fuzzer corpus/regressions 2>&1 | tail -5 | tee -a "$OUT/fuzz-cuda.log" || status=1
done
echo "gpu_campaign: exit $status"
exit $status
