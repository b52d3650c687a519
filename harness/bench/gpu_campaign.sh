#!/usr/bin/env bash
# The whole GPU verification in one call, ON the GPU machine from the repo root, given a
# build/cuda folder built on the development machine: gpu_session.sh (GPU tests, the four
# compute-sanitizer tools, the benchmark and its torch peer), then the property campaign's
# throughput on cuda, the mutants that have cuda plugins in the build, and the fuzz corpora
# replayed on cuda under compute-sanitizer memcheck. Logs under $OUT.
set -u
set -o pipefail
OUT=$(realpath -m "${OUT:-gpu-session}")
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build/cuda}
mkdir -p "$OUT"
status=0
CTEST_ARGS="-j8 -E mutation" OUT="$OUT" BUILD="$BUILD" bash harness/bench/gpu_session.sh || status=1

echo "=== normcheck run on cuda"
timeout 150 "$BUILD/bin/normcheck" run --backend cuda --scale "${RUN_SCALE:-0.5}" --report "$OUT/run-cuda.json" \
  2>&1 | tail -40 | tee "$OUT/run-cuda.log" || status=1

echo "=== mutants on cuda (those built)"
for so in "$BUILD"/lib/libnormcheck_mutant_*_cuda.so; do
  [ -e "$so" ] || continue
  id=$(basename "$so" .so); id=${id#libnormcheck_mutant_}; id=${id%_cuda}
  timeout 60 "$BUILD/bin/normcheck" mutants --backend cuda --only "$id" --cases "${MUTANT_CASES:-200}" \
    --out "$OUT/mutants-$id" 2>&1 | tail -4 | tee -a "$OUT/mutants-cuda.log"
done

echo "=== fuzz corpora on cuda under memcheck"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for t in contract value; do
  NORMCHECK_FUZZ_BACKEND=cuda timeout 90 "$CS" --tool memcheck --error-exitcode 1 \
    "$BUILD/bin/${t}_fuzzer_replay" corpus/${t}_fuzzer corpus/regressions 2>&1 | tail -5 | tee -a "$OUT/fuzz-cuda.log" || status=1
done
echo "gpu_campaign: exit $status"
exit $status
