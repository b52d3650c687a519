#!/bin/sh
# expect_exit.sh CODE [--shows TEXT] COMMAND [ARGS...]: runs the command and succeeds only if it
# exits with CODE and, with --shows, its output contains TEXT. Exit code 77 (no device for the
# backend) passes through, so ctest reports a GPU test skipped on a machine without one.
expected=$1
shift
shows=""
if [ "$1" = "--shows" ]; then
  shows=$2
  shift 2
fi
output=$("$@" 2>&1)
status=$?
printf '%s\n' "$output"
if [ "$status" -eq 77 ] && [ "$expected" -ne 77 ]; then
  exit 77
fi
if [ "$status" -ne "$expected" ]; then
  echo "expected exit code $expected, got $status" >&2
  exit 1
fi
if [ -n "$shows" ]; then
  case $output in
    *"$shows"*) ;;
    *) echo "expected the output to show '$shows'" >&2; exit 1 ;;
  esac
fi
