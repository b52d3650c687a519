#!/bin/sh
# expect_violation.sh REGEX COMMAND...
#
# A fuzz target's replay that must find a violation: COMMAND must end non-zero (a violation
# aborts, as under libFuzzer) and print a VIOLATION report whose text matches the extended
# regex REGEX. A replay that passes, or fails some other way, fails the test.
set -u
regex=$1
shift
out=$("$@" 2>&1)
status=$?
printf '%s\n' "$out" | tail -n 20
[ "$status" -ne 0 ] || { echo "expect_violation: the replay passed; expected a violation" >&2; exit 1; }
printf '%s\n' "$out" | grep -q '==normcheck-fuzz== VIOLATION' || { echo "expect_violation: exit $status without a VIOLATION report" >&2; exit 1; }
printf '%s\n' "$out" | grep -Eq -- "$regex" || { echo "expect_violation: no line matches '$regex'" >&2; exit 1; }
echo "expect_violation: ok (exit $status)"
