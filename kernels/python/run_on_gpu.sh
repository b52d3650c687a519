#!/bin/sh
# run_on_gpu.sh [BUILD_DIR]: the Python kernels that need torch and triton, on the GPU machine.
# Run from the repository root over a build made on the development machine (any preset: the
# bridge, libnormcheck_python.so, is in every build; default build/cuda):
#
#     kernels/python/run_on_gpu.sh build/cuda
#
# It runs `check all` on the document's Triton kernel (seed_triton.py), the document's exercise
# on its divide-by-BLOCK variant (the N = 257 replay must fail, N = 256 pass, check all fail),
# and `check all` on torch.nn.functional.rms_norm (torch_rms_norm.py: forward only, and
# :with_r for the autograd backward). Each run's output goes to OUT (default
# reports/out/python-gpu); the last lines say, per run, the exit code expected and got.
# NORMCHECK_PYTHON picks the interpreter (default python3), CASES the cases a property (200).
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
summary=""
failed=0
# run NAME EXPECTED COMMAND...
run() {
  name=$1 expected=$2
  shift 2
  echo "=== $name: $*"
  start=$(date +%s)
  "$@" >"$out/$name.log" 2>&1
  got=$?
  seconds=$(( $(date +%s) - start ))
  tail -25 "$out/$name.log"
  verdict=ok
  [ "$got" -eq "$expected" ] || { verdict=UNEXPECTED; failed=1; }
  summary="$summary$(printf '%-34s expected %s got %s  %4s s  %s' "$name" "$expected" "$got" "$seconds" "$verdict")
"
}
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.cuda.is_available())"
run seed_triton_check_all 0 "$normcheck" check all --kernel $examples/seed_triton.py --cases "$cases" --case-dir "$out/cases"
run seed_triton_replay_257 0 "$normcheck" replay $seed_cases/ones-257.case --kernel $examples/seed_triton.py
run seed_triton_block_replay_257 1 "$normcheck" replay $seed_cases/ones-257.case --kernel $examples/seed_triton_block.py
run seed_triton_block_replay_256 0 "$normcheck" replay $seed_cases/ones-256.case --kernel $examples/seed_triton_block.py
run seed_triton_block_check_all 1 env NORMCHECK_SHRINK_SECONDS=10 "$normcheck" check all --kernel $examples/seed_triton_block.py \
    --cases 100 --case-dir "$out/cases_block"
run torch_rms_norm_check_all 0 "$normcheck" check all --kernel $examples/torch_rms_norm.py --cases "$cases" --case-dir "$out/cases_torch"
run torch_rms_norm_with_r_check_all 0 "$normcheck" check all --kernel $examples/torch_rms_norm.py:with_r --cases "$cases" \
    --case-dir "$out/cases_torch_with_r"
echo
echo "=== summary (logs in $out)"
printf '%s' "$summary"
exit $failed
