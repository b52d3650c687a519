#!/bin/sh
# expect_isolated.sh NORMCHECK KERNEL CASE_DIR: `normcheck check all` on a kernel whose backward
# kills its interpreter (misbehaving.py:exits_in_backward, os._exit(3)) must exit 1 with the
# properties that call the backward failing on the worker's death, its exit status named (the
# zygote reports it), and the forward's property passing: a crash costs only the worker of the
# property that made it, never the zygote the next property's worker is forked from.
normcheck=$1 kernel=$2 case_dir=$3
rm -rf "$case_dir"
output=$(NORMCHECK_SHRINK_SECONDS=1 "$normcheck" check all --kernel "$kernel" --cases 20 --seed 1 \
         --skip a_batch_taller_than_the_grid_gives_its_pieces_bits,the_dispatch_boundaries_match_the_exact_oracle \
         --case-dir "$case_dir" 2>&1)
status=$?
printf '%s\n' "$output"
fail() { echo "expect_isolated: $*" >&2; exit 1; }
[ "$status" -eq 1 ] || fail "check all exited $status, expected 1"
printf '%s\n' "$output" | grep -q '^y_and_r_match_the_exact_oracle .* pass$' || fail "the forward's property did not pass"
printf '%s\n' "$output" | grep -q '^dx_matches_the_exact_oracle .* FAIL' || fail "the backward's property did not fail"
printf '%s\n' "$output" | grep -q 'died during the backward: it exited with status 3' ||
  fail "the worker's death and exit status were not named"
echo "expect_isolated: the backward's crash failed its properties only"
