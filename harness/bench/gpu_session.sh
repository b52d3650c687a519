#!/usr/bin/env bash
# One GPU session for normcheck, run ON the GPU machine from the repo root, given a
# build/cuda folder built on the development machine:
#   1 ctest         ctest --test-dir build/cuda -L gpu --output-on-failure
#   2 memcheck, racecheck, initcheck, synccheck
#                   compute-sanitizer on kernel_test (NORMCHECK_TEST_BACKEND=cuda), small cases
#   3 bench         build/cuda/bin/normcheck bench --out $OUT/bench
#   4 torch_peer    harness/bench/torch_peer.py (if torch imports and sees a GPU)
#   5 merge         normcheck.json + torch.json -> $OUT/bench/compare.md
# Every step runs, whatever the others did; each logs to $OUT/<step>.log and gets a time
# limit: ctest 150 s, each sanitizer 45 s, bench 60 s, torch peer 60 s, merge 15 s, under
# 8 minutes in all. Seen on the H200 (2026-12-02): ctest 26 s, each sanitizer 1-2 s (30
# small tests), bench 19 s, torch peer 22 s: 78 s in all. The summary goes last, to stdout and $OUT/summary.md; the exit status is 1 if
# any step failed or timed out, else 0.
#
# Environment (all optional): OUT (default gpu-session), BUILD (default build/cuda),
# NORMCHECK (the CLI, default $BUILD/bin/normcheck), COMMIT (default: git rev-parse),
# CTEST_ARGS (more ctest options, e.g. -j8 -E mutation), SANITIZER_FILTER (the gtest filter of step 2), BENCH_ARGS (more `normcheck bench` options),
# a step's limit in seconds: CTEST_LIMIT, MEMCHECK_LIMIT, RACECHECK_LIMIT, INITCHECK_LIMIT,
# SYNCCHECK_LIMIT, BENCH_LIMIT, TORCH_PEER_LIMIT, MERGE_LIMIT.
set -u
set -o pipefail

OUT=$(realpath -m "${OUT:-gpu-session}")
cd "$(dirname "$0")/../.." || exit 1  # the repo root: BUILD and the peer's path are relative to it
BUILD=${BUILD:-build/cuda}
NORMCHECK=${NORMCHECK:-$BUILD/bin/normcheck}
KERNEL_TEST=$BUILD/bin/kernel_test
SANITIZER_FILTER=${SANITIZER_FILTER:-'worked_numbers.*:contract.*:paths.*:determinism.*:kernels/sizes.every_dtype_pair_matches_the_exact_oracle/n257_m17*:kernels/sizes.*n1000_m17_layout0'}
BENCH_ARGS=${BENCH_ARGS:-}
COMMIT=${COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || true)}
mkdir -p "$OUT/bench"

names=() codes=() secs=() notes=()

# step NAME LIMIT_S COMMAND...: runs COMMAND under a time limit, output to the screen and
# $OUT/NAME.log; records the exit status (124: timed out)
step() {
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS rc note=""
  echo
  echo "=== $name (limit ${limit}s): $*"
  timeout -k 10 "$limit" "$@" 2>&1 | tee "$OUT/$name.log"
  rc=$?
  [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && note="timed out after ${limit}s"
  echo "=== $name: exit $rc ${note:+($note)} in $((SECONDS - t0))s"
  names+=("$name") codes+=("$rc") secs+=("$((SECONDS - t0))") notes+=("$note")
}

# skip NAME WHY: records a step that could not run (not a failure)
skip() {
  echo
  echo "=== $1: skipped: $2" | tee "$OUT/$1.log"
  names+=("$1") codes+=("skip") secs+=(0) notes+=("$2")
}

# fail NAME WHY: records a step whose precondition is missing (a failure)
fail() {
  echo
  echo "=== $1: failed: $2" | tee "$OUT/$1.log"
  names+=("$1") codes+=(1) secs+=(0) notes+=("$2")
}

{
  echo "gpu_session: $(date -u +%Y-%m-%dT%H:%M:%SZ) in $(pwd), build $BUILD, commit ${COMMIT:-unknown}"
  command -v nvidia-smi >/dev/null &&
    nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total,temperature.gpu,clocks.sm,clocks.max.sm,power.draw --format=csv
} 2>&1 | tee "$OUT/environment.log"

# ---- 1: the gpu-labelled tests
if [ -d "$BUILD" ]; then
  step ctest "${CTEST_LIMIT:-150}" ctest --test-dir "$BUILD" -L gpu ${CTEST_ARGS:-} --output-on-failure --no-tests=error --timeout 140
  # a gpu test exits 77 (ctest: Skipped) only without a device: here that is a failure
  skipped=$(grep -c '(Skipped)' "$OUT/ctest.log")
  if [ "$skipped" -gt 0 ] && [ "${codes[-1]}" -eq 0 ]; then
    codes[-1]=1 notes[-1]="$skipped gpu test(s) skipped: no device seen"
  fi
else
  fail ctest "no build folder '$BUILD' (build it with cmake --preset cuda on the development machine)"
fi

# ---- 2: compute-sanitizer on small cases
CS=$(command -v compute-sanitizer || true)
[ -z "$CS" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ] && CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck racecheck initcheck synccheck; do
  if [ -z "$CS" ]; then
    fail "$tool" "compute-sanitizer not found (PATH, /usr/local/cuda/bin)"
  elif [ ! -x "$KERNEL_TEST" ]; then
    fail "$tool" "no $KERNEL_TEST"
  else
    limit_var=${tool^^}_LIMIT
    step "$tool" "${!limit_var:-45}" env NORMCHECK_TEST_BACKEND=cuda "$CS" --tool "$tool" --error-exitcode 1 \
      --print-limit 20 "$KERNEL_TEST" --gtest_filter="$SANITIZER_FILTER" --gtest_color=no
  fi
done

# ---- 3: the benchmark
commit_args=()
[ -n "$COMMIT" ] && commit_args=(--commit "$COMMIT")
if [ -x "$NORMCHECK" ]; then
  # shellcheck disable=SC2086  # BENCH_ARGS is a list of options
  step bench "${BENCH_LIMIT:-60}" "$NORMCHECK" bench --out "$OUT/bench" "${commit_args[@]}" $BENCH_ARGS
else
  fail bench "no $NORMCHECK"
fi

# ---- 4, 5: the torch peer and the side-by-side table
PEER=harness/bench/torch_peer.py
if python3 -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" >/dev/null 2>&1; then
  # the peer times the shapes and dtypes the bench was given
  peer_args=()
  for opt in --shapes --dtypes --warmup --samples --calls --l2-mb; do
    # shellcheck disable=SC2086  # split BENCH_ARGS into words
    val=$(printf '%s\n' $BENCH_ARGS | grep -A1 -x -- "$opt" | tail -n +2 | head -1)
    [ -n "$val" ] && peer_args+=("$opt" "$val")
  done
  step torch_peer "${TORCH_PEER_LIMIT:-60}" python3 -B "$PEER" --out "$OUT/bench" "${commit_args[@]}" "${peer_args[@]}"
  if [ -f "$OUT/bench/normcheck.json" ] && [ -f "$OUT/bench/torch.json" ]; then
    step merge "${MERGE_LIMIT:-15}" python3 -B "$PEER" --merge "$OUT/bench/normcheck.json" "$OUT/bench/torch.json" \
      --out "$OUT/bench"
  else
    fail merge "normcheck.json or torch.json missing under $OUT/bench"
  fi
else
  skip torch_peer "python3 cannot import torch or torch sees no GPU"
  skip merge "no torch report"
fi

# ---- summary: the tables, then one line a step
for table in "$OUT/bench/compare.md" "$OUT/bench/normcheck.md"; do
  if [ -f "$table" ]; then
    echo
    cat "$table"
    break
  fi
done
status=0
{
  echo
  echo "## gpu_session summary ($(date -u +%Y-%m-%dT%H:%M:%SZ), ${SECONDS}s)"
  echo
  echo "| step | exit | seconds | note |"
  echo "|---|---|---|---|"
  for i in "${!names[@]}"; do
    echo "| ${names[$i]} | ${codes[$i]} | ${secs[$i]} | ${notes[$i]} |"
  done
} | tee "$OUT/summary.md"
for c in "${codes[@]}"; do
  [ "$c" = skip ] || [ "$c" -eq 0 ] || status=1
done
echo
echo "gpu_session: $([ $status -eq 0 ] && echo "every step passed" || echo "FAILED: see the steps above") (logs in $OUT)"
exit $status
