#!/bin/sh
# expect_exit_code.sh CODE COMMAND [ARGS...]: runs the command and succeeds only if it exits
# with CODE (a test of a tool's exit code, where ctest's WILL_FAIL would accept any failure).
expected=$1
shift
"$@"
status=$?
if [ "$status" -ne "$expected" ]; then
  echo "expected exit code $expected, got $status" >&2
  exit 1
fi
