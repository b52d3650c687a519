#!/usr/bin/env bash
# expect_check.sh STATUS TEXT COMMAND...: runs COMMAND, which must exit with STATUS and print
# TEXT (a fixed string); its output is shown either way
set -u
want=$1 text=$2
shift 2
out=$("$@" 2>&1)
got=$?
printf '%s\n' "$out"
if [ "$got" -ne "$want" ]; then echo "expect_check: exit status $got, expected $want"; exit 1; fi
if ! grep -qF -- "$text" <<<"$out"; then echo "expect_check: the output does not say '$text'"; exit 1; fi
echo "expect_check: exit status $got and '$text', as expected"
