#!/bin/sh
# expect_imports.sh once|many LOG COMMAND [ARGS...]: runs the command (a campaign on
# counts_imports.py) with NORMCHECK_TEST_IMPORT_LOG=LOG; it must exit 0, and the kernel's module
# must have been imported once (the zygote's import, shared by every property's worker), or more
# than once ("many": NORMCHECK_PYTHON_ZYGOTE=0, a worker spawned per process, which shows the log
# counts every import).
expected=$1 log=$2
shift 2
rm -f "$log"
NORMCHECK_TEST_IMPORT_LOG=$log "$@"
status=$?
[ "$status" -eq 0 ] || { echo "expect_imports: the campaign exited $status, expected 0" >&2; exit 1; }
imports=$(cat "$log" 2>/dev/null | wc -l)
echo "expect_imports: the module was imported $imports time(s)"
case $expected in
  once) [ "$imports" -eq 1 ] || { echo "expect_imports: expected one import" >&2; exit 1; } ;;
  many) [ "$imports" -gt 1 ] || { echo "expect_imports: expected more than one import" >&2; exit 1; } ;;
  *) echo "expect_imports: 'once' or 'many', not '$expected'" >&2; exit 64 ;;
esac
