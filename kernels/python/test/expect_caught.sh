#!/bin/sh
# expect_caught.sh NORMCHECK KERNEL CASE_DIR [ARGS...]: `normcheck check all` on a buggy kernel
# (with ARGS, e.g. --variant NAME) must exit 1 with a counterexample shrunk at least once
# ("counterexample (after K shrinks)", K > 0), and `normcheck replay` of the case file it wrote
# must exit 1 too.
normcheck=$1 kernel=$2 case_dir=$3
shift 3
rm -rf "$case_dir"
output=$("$normcheck" check all --kernel "$kernel" --cases 100 --seed 1 --case-dir "$case_dir" "$@" 2>&1)
status=$?
printf '%s\n' "$output"
[ "$status" -eq 1 ] || { echo "expect_caught: check all exited $status, expected 1" >&2; exit 1; }
shrinks=$(printf '%s\n' "$output" | sed -n 's/^counterexample (after \([0-9]*\) shrinks).*/\1/p' | sort -n | tail -1)
[ -n "$shrinks" ] && [ "$shrinks" -gt 0 ] ||
  { echo "expect_caught: no counterexample shrunk at least once (most shrinks: '${shrinks}')" >&2; exit 1; }
# "replay:    PROGRAM replay CASE_FILE": the case file is the line's last word
case_file=$(printf '%s\n' "$output" | sed -n 's/^replay: .* replay \([^ ]*\)$/\1/p' | head -1)
[ -n "$case_file" ] || { echo "expect_caught: no case file named" >&2; exit 1; }
echo "--- replay $case_file"
"$normcheck" replay "$case_file"
status=$?
[ "$status" -eq 1 ] || { echo "expect_caught: the replay exited $status, expected 1" >&2; exit 1; }
echo "expect_caught: caught, shrunk ($shrinks shrinks at most) and replayed (exit 1)"
