#!/bin/sh
# expect_verdict.sh NORMCHECK PLUGIN CASE_DIR REGEX
#
# The isolation test of one misbehaving plugin: `normcheck check forward` on it must exit 1
# (never 0, never a signal), print a failure matching the extended regex REGEX, write a case
# file, and go on after the first failing property (the summary lists more than one); then
# `normcheck replay` of that case file must exit 1 with a FAIL line.
set -u
normcheck=$1 plugin=$2 case_dir=$3 regex=$4
fail() {
  echo "expect_verdict: $*" >&2
  exit 1
}
rm -rf "$case_dir"
out=$("$normcheck" check forward --kernel "$plugin" --cases 20 --seed 1 --case-dir "$case_dir" 2>/dev/null)
status=$?
printf '%s\n' "$out"
# a device plugin on a machine without its device: ctest reports the test skipped
[ "$status" -eq 77 ] && exit 77
[ "$status" -eq 1 ] || fail "check: exit status $status, expected 1"
printf '%s\n' "$out" | grep -Eq -- "$regex" || fail "check: no line matches '$regex'"
case_file=$(ls "$case_dir"/*.case 2>/dev/null | head -n 1)
[ -n "$case_file" ] || fail "check: no case file in $case_dir"
# summary rows: a property name, its case count, ... its verdict
rows=$(printf '%s\n' "$out" | grep -cE '^[a-z0-9_]+ +[0-9]+ +.*  (pass|FAIL|skipped)')
[ "$rows" -ge 2 ] || fail "check: the summary lists $rows properties: the campaign did not go on"

replay=$("$normcheck" replay "$case_file" --kernel "$plugin" 2>&1)
status=$?
printf '%s\n' "$replay"
[ "$status" -eq 1 ] || fail "replay: exit status $status, expected 1"
printf '%s\n' "$replay" | grep -q '^FAIL' || fail "replay: no FAIL line"
echo "expect_verdict: ok"
