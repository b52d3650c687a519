#!/bin/sh
# run_on_gpu.sh [BUILD_DIR]: the Python kernels that need torch and triton, on the GPU machine.
# Run from the repository root over a build made on the development machine (any preset: the
# bridge, libnormcheck_python.so, is in every build; default build/cuda):
#
#     kernels/python/run_on_gpu.sh build/cuda
#
# It runs `check all` on the document's Triton kernel (seed_triton.py), the document's exercise
# on its divide-by-BLOCK variant (the N = 257 replay must fail, N = 256 pass, check all fail),
# and the peer campaign: `check all` on each torch peer of torch_peers.py (eager, compiled,
# composite; each `_with_r`, so the backward is tested too), every dtype pair the peer declares,
# and `check all --variant V` on torch_quantized.py for each quantized variant it declares (QUANTIZED
# the list, CASES_QUANTIZED the cases a property, default 100).
# Each run's output goes to OUT (default reports/out/python-gpu), with its JSON report; the
# last lines say, per run, the exit code expected and got. NORMCHECK_PYTHON picks the
# interpreter (default python3), CASES the cases a property (200), PEERS the peers to run
# (default "eager compiled composite composite_declared"), PEER_EXPECT "peer=code ..." the exit codes expected of
# them (default 0 each), PEER_CASES "peer=cases ..." a peer's own case count (torch.compile
# compiles again for each new shape, dtype and stride pattern), ONLY "seed", "peers" or "quantized" one part, RUN_LIMIT the seconds a run may take
# (900; exit 124 past it), JOBS the runs at once (default 1; each run is its own process with its
# own Python workers, so runs side by side share only the device and the host's memory). With
# JOBS > 1 the far-row property (an 8.6 GB x through the bridge's socket, tens of GB of host
# memory a run) is left out of the side-by-side peer runs and run afterwards, one peer at a time,
# for the peers in FAR_PEERS (default: every peer run; "none" for none).
#
# ONLY=speed (not in the default run) times `check all --cases SPEED_CASES` (100) on the seed
# Triton kernel and on torch eager (torch_peers.py:eager_with_r), ROUNDS times each (2), with the
# zygote (the module imported once a campaign) and without it (NORMCHECK_PYTHON_ZYGOTE=0: each
# property's worker imports torch again; SPEED_ZYGOTE="1" leaves that out): a line per run with
# its wall time and cases/s, then each first round's per-property seconds (issue 31's goal: <= 60
# s and >= 50 cases/s with the zygote). SPEED_ARGS: more arguments for each run (e.g. --skip NAME).
set -u
build=${1:-build/cuda}
normcheck=$build/bin/normcheck
out=${OUT:-reports/out/python-gpu}
cases=${CASES:-200}
examples=kernels/python/examples
seed_cases=kernels/examples/seed_design/cases
# the far-row property moves an 8.6 GB operand through the bridge's socket both ways: more
# than the default 60 s a case
export NORMCHECK_CALL_TIMEOUT=${NORMCHECK_CALL_TIMEOUT:-600}
mkdir -p "$out"
[ -x "$normcheck" ] || { echo "run_on_gpu.sh: no $normcheck (build first, or name the build folder)" >&2; exit 64; }
jobs=${JOBS:-1}
far_rows=rows_past_element_2_to_the_31_match_the_exact_oracle skip_far=""
# ONLY names one part (seed, peers, quantized, speed); unset: the first three
part() { [ -z "${ONLY:-}" ] && [ "$1" != speed ] || [ "${ONLY:-}" = "$1" ]; }
[ "$jobs" -gt 1 ] && part peers && skip_far=1
status_dir=$out/.status started=0
rm -rf "$status_dir" && mkdir -p "$status_dir"
# run NAME EXPECTED COMMAND...: in the background while fewer than JOBS runs are going; its
# verdict line goes to $status_dir/NAME, its output to $out/NAME.log
run() {
  name=$1 expected=$2
  shift 2
  echo "=== $name: $*"
  # a run is going until its verdict line is written
  while [ $(( started - $(ls "$status_dir" | wc -l) )) -ge "$jobs" ]; do sleep 1; done
  started=$(( started + 1 ))
  (
    start=$(date +%s)
    timeout -k 5 "${RUN_LIMIT:-900}" "$@" >"$out/$name.log" 2>&1
    got=$?
    seconds=$(( $(date +%s) - start ))
    verdict=ok
    [ "$got" -eq "$expected" ] || verdict=UNEXPECTED
    printf '%-34s expected %s got %s  %4s s  %s\n' "$name" "$expected" "$got" "$seconds" "$verdict" >"$status_dir/$name"
    [ "$jobs" -gt 1 ] || tail -25 "$out/$name.log"
  ) &
  [ "$jobs" -gt 1 ] || wait
}
# the exit code PEER_EXPECT gives a peer (0 if it names none)
peer_expected() {
  code=0
  for e in ${PEER_EXPECT:-}; do
    [ "${e%%=*}" = "$1" ] && code=${e#*=}
  done
  echo "$code"
}
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.cuda.is_available())"
if part speed; then
  # speed KERNEL NAME: check all, timed, with and without the zygote
  speed() {
    for zygote in ${SPEED_ZYGOTE:-1 0}; do
      for round in $(seq "${ROUNDS:-2}"); do
        log=$out/speed_$2_zygote$zygote.$round.log
        start=$(date +%s%N)
        NORMCHECK_PYTHON_ZYGOTE=$zygote timeout -k 5 "${RUN_LIMIT:-900}" "$normcheck" check all --kernel "$1" \
            --cases "${SPEED_CASES:-100}" --seed 5 --jobs 1 --case-dir "$out/cases_speed" ${SPEED_ARGS:-} >"$log" 2>&1
        got=$?
        wall_ms=$(( ($(date +%s%N) - start) / 1000000 ))
        printf '%-12s zygote %s round %s: exit %s, wall %d.%01d s, %s\n' "$2" "$zygote" "$round" "$got" \
            $((wall_ms / 1000)) $((wall_ms % 1000 / 100)) \
            "$(grep -o '[0-9]* cases in [0-9.]* s: [0-9.]* cases/s' "$log" | tail -1)" | tee -a "$out/speed.txt"
      done
    done
  }
  rm -f "$out/speed.txt"
  speed $examples/seed_triton.py seed_triton
  speed "$examples/torch_peers.py:eager_with_r" torch_eager
  for log in "$out"/speed_*.1.log; do
    echo "=== $log: seconds a property"
    sed -n '/^property  /,/^(max err/p' "$log" | grep -v -e '^(max err' -e 'skipped' | cut -c1-110
  done
  echo "=== speed (logs in $out)"
  cat "$out/speed.txt"
  exit 0
fi
if part seed; then
  run seed_triton_check_all 0 "$normcheck" check all --kernel $examples/seed_triton.py --cases "$cases" --case-dir "$out/cases" \
      --json "$out/seed_triton.json"
  run seed_triton_replay_257 0 "$normcheck" replay $seed_cases/ones-257.case --kernel $examples/seed_triton.py
  run seed_triton_block_replay_257 1 "$normcheck" replay $seed_cases/ones-257.case --kernel $examples/seed_triton_block.py
  run seed_triton_block_replay_256 0 "$normcheck" replay $seed_cases/ones-256.case --kernel $examples/seed_triton_block.py
  run seed_triton_block_check_all 1 env NORMCHECK_SHRINK_SECONDS=10 "$normcheck" check all --kernel $examples/seed_triton_block.py \
      --cases 100 --case-dir "$out/cases_block"
fi
if part peers; then
  for peer in ${PEERS:-eager compiled composite composite_declared}; do
    expected=$(peer_expected "$peer") peer_cases=$cases
    for e in ${PEER_CASES:-}; do
      [ "${e%%=*}" = "$peer" ] && peer_cases=${e#*=}
    done
    run "peer_$peer" "$expected" "$normcheck" check all --kernel "$examples/torch_peers.py:${peer}_with_r" --cases "$peer_cases" \
        ${skip_far:+--skip "$far_rows"} --case-dir "$out/cases_$peer" --json "$out/peer_$peer.json"
  done
fi
if part quantized; then
  # quantized outputs (abi.h "Quantized output"): torch's float8 casts after a clamp, codes returned as
  # float8 / int8 tensors, the static scale a 0-d device tensor
  for variant in ${QUANTIZED:-rmsnorm_fp8_static rmsnorm_int8_static rmsnorm_fp8_per_token rmsnorm_fp8_per_group \
                 rmsnorm_int8_per_token add_rmsnorm_fp8_static add_rmsnorm_fp8_per_token}; do
    run "quantized_$variant" 0 "$normcheck" check all --kernel $examples/torch_quantized.py --variant "$variant" \
        --cases "${CASES_QUANTIZED:-100}" --case-dir "$out/cases_quantized" --json "$out/quantized_$variant.json"
  done
fi
wait
if [ -n "$skip_far" ]; then
  # the far-row property alone, one peer at a time
  jobs=1
  for peer in ${FAR_PEERS:-${PEERS:-eager compiled composite composite_declared}}; do
    [ "$peer" = none ] && break
    run "peer_${peer}_far_rows" "$(peer_expected "$peer")" "$normcheck" check all --kernel "$examples/torch_peers.py:${peer}_with_r" \
        --property "$far_rows" --case-dir "$out/cases_${peer}_far_rows" --json "$out/peer_${peer}_far_rows.json"
  done
  wait
  jobs=${JOBS:-1}
fi
if [ "$jobs" -gt 1 ]; then
  for f in "$status_dir"/*; do
    name=$(basename "$f")
    echo "=== $name"
    tail -25 "$out/$name.log"
  done
fi
echo
echo "=== summary (logs in $out)"
cat "$status_dir"/*
! grep -q UNEXPECTED "$status_dir"/*
