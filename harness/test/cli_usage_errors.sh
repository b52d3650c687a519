#!/bin/sh
# cli_usage_errors.sh NORMCHECK: every out-of-range number, on the command line or in the
# environment, is a usage error (exit 64) whose message names the value and the range it must lie in;
# so is a --skip that names no property or leaves none, and a --variant that is none or is not declared.
normcheck=$1
failed=0
expect_64() {  # expect_64 TEXT-IN-THE-MESSAGE [VAR=VALUE] ARGS...
  text=$1
  shift
  out=$(env "$@" 2>&1 >/dev/null)
  status=$?
  if [ "$status" -ne 64 ] || ! printf '%s' "$out" | grep -qF -- "$text"; then
    echo "FAIL: $* exited $status, wanted 64 with '$text'; it said: $(printf '%s' "$out" | head -1)" >&2
    failed=1
  else
    echo "ok: $* -> 64: $(printf '%s' "$out" | head -1)"
  fi
}
expect_64 "'99999999999999999999999999': must be an integer in [0, 2^64 - 1]" "$normcheck" check all --seed 99999999999999999999999999
expect_64 "'-1': must be an integer in [0, 2^64 - 1]" "$normcheck" check all --seed -1
expect_64 "'9223372036854775808': must be an integer in [1, 2147483647]" "$normcheck" check all --cases 9223372036854775808
expect_64 "'0': must be an integer in [1, 2147483647]" "$normcheck" check all --cases 0
expect_64 "'1e300': must be a number in (0, 1000]" NORMCHECK_CASE_SCALE=1e300 "$normcheck" check forward
expect_64 "'1e9': must be a number in (0, 1000]" NORMCHECK_CASE_SCALE=1e9 "$normcheck" check forward
expect_64 "'-1': must be an integer in [0, 2^64 - 1]" NORMCHECK_SEED=-1 "$normcheck" check forward
expect_64 "'2000': must be a number in (0, 1000]" "$normcheck" run --scale 2000
expect_64 "'gpu' (or NORMCHECK_BACKEND): must be auto, cuda or simt" "$normcheck" check all --backend gpu
expect_64 "'x': must be an integer in [0, 2^64 - 1]" "$normcheck" gradcheck --seed x
expect_64 "--skip 'no_such_property': no property has that name" "$normcheck" check all --skip y_and_r_match_the_exact_oracle,no_such_property
expect_64 "or --skip names it" "$normcheck" check forward --property y_and_r_match_the_exact_oracle --skip y_and_r_match_the_exact_oracle
expect_64 "--first 'no_such_property': no property of the selection has that name" "$normcheck" check all --first dx_matches_the_exact_oracle,no_such_property
expect_64 "--first 'dx_matches_the_exact_oracle': no property of the selection" "$normcheck" check forward --first dx_matches_the_exact_oracle
# a variant that is none, or that the kernel does not declare (the shipped kernels: no offset_rmsnorm)
expect_64 "--variant 'qk_norm': must be all or a variant" "$normcheck" check all --variant qk_norm
expect_64 "NORMCHECK_VARIANT = 'qk_norm': not a variant" NORMCHECK_VARIANT=qk_norm "$normcheck" check forward
expect_64 "--variant offset_rmsnorm: the kernel does not declare it" "$normcheck" check forward --backend simt --variant offset_rmsnorm
exit $failed
