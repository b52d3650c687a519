#!/bin/sh
# usage_errors.sh NORMCHECK: every malformed `normcheck train` line exits 64 and names its argument
set -u
normcheck=$1
fail=0
check() {
  want=$1
  shift
  out=$("$normcheck" train "$@" 2>&1)
  status=$?
  if [ "$status" -ne 64 ]; then
    echo "normcheck train $*: exit $status, expected 64"; fail=1
  elif ! printf '%s' "$out" | grep -qF -- "$want"; then
    echo "normcheck train $*: the message does not name '$want':"; echo "$out"; fail=1
  else
    echo "ok: normcheck train $* -> 64, names '$want'"
  fi
}
check "--dtype 'fp8'" --dtype fp8
check "--steps '0'" --steps 0
check "--hidden 'x'" --hidden x
check "--batch '-3'" --batch -3
check "--seed '-1'" --seed -1
check "exclude each other" --kernel a.so --backend simt
check "--backend 'gpu'" --backend gpu
check "unknown option '--bogus'" --bogus 1
check "needs a value" --steps
check "at most 2^24" --batch 65536 --hidden 65536
exit "$fail"
