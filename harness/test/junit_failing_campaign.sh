#!/bin/sh
# junit_failing_campaign.sh NORMCHECK KERNEL DIR: a failing campaign (the padded-mean kernel)
# writes its JUnit report, exits 1, and the report reads back (junit_readback.py)
set -u
normcheck=$1 kernel=$2 dir=$3
here=$(dirname "$0")
mkdir -p "$dir"
"$normcheck" check forward --kernel "$kernel" --cases 100 --seed 1 --case-dir "$dir/cases" --junit "$dir/junit.xml"
status=$?
if [ "$status" -ne 1 ]; then echo "expected exit code 1, got $status" >&2; exit 1; fi
python3 "$here/junit_readback.py" "$dir/junit.xml" y_and_r_match_the_exact_oracle
