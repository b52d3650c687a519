#!/usr/bin/env bash
# corpus/broken/prove.sh [BUILD]: shows that contract_fuzzer finds a real contract bug.
#
# Builds the catalog's contract-workspace-bytes-dropped mutant (mutants/catalog: the shipped
# kernel source with the workspace-size rule removed from the contract checker), fuzzes it from an EMPTY corpus until the
# first crash, minimizes that crash, replays the minimized input (which prints the violation and
# writes its case file), shows that the shipped plugin rejects the same input, and saves the
# whole output in reports/fuzz/broken-plugin-proof.txt. BUILD is the fuzz preset's build folder.
# The UBSan reports the shipped source already has are suppressed (ubsan.supp) so that the
# proof is about the injected bug.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/fuzz}
mutant=contract-workspace-bytes-dropped
cmake --build "$build" --target "mutant_${mutant}_simt" normcheck_simt contract_fuzzer contract_fuzzer_replay >&2
out=reports/fuzz/broken-plugin-proof.txt
work=$build/broken-proof
rm -rf "$work"
mkdir -p "$work/corpus" reports/fuzz
broken=$build/lib/libnormcheck_mutant_${mutant}_simt.so
# UB the shipped source already has (ubsan.supp says which) would be found first: skip it
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=corpus/broken/ubsan.supp

{
  echo "# contract_fuzzer against a deliberately broken plugin ($(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo ?))"
  echo "# kernel plugin: $broken, the catalog's mutant $mutant (mutants/catalog/$mutant.mutant):"
  echo "#   the shipped kernels with the 'a.workspace_bytes < workspace_needed' rule deleted from kernels/api/contract.cpp"
  echo
  echo "## 1. fuzzing from an empty corpus until the first crash"
  start=$(date +%s)
  NORMCHECK_KERNEL=$broken "$build/bin/contract_fuzzer" -seed=1 -max_total_time=900 -timeout=10 \
    -dict=corpus/fuzzers/contract_fuzzer.dict -artifact_prefix="$work/" -print_final_stats=1 "$work/corpus" 2>&1 |
    grep -v -E 'NEW_FUNC|^#[0-9]+\s+(NEW|REDUCE)' || true
  echo "(found after $(( $(date +%s) - start )) s)"
  crash=$(ls "$work"/crash-* 2>/dev/null | head -n 1 || true)
  [ -n "$crash" ] || { echo "NO CRASH FOUND"; exit 1; }
  echo
  echo "## 2. minimizing $crash ($(stat -c %s "$crash") bytes)"
  NORMCHECK_KERNEL=$broken "$build/bin/contract_fuzzer" -minimize_crash=1 -runs=20000 -max_total_time=120 \
    -timeout=10 -exact_artifact_path="$work/minimized" "$crash" 2>&1 | grep -E '^CRASH_MIN|VIOLATION|^  ' | tail -n 12 || true
  echo "minimized: $(stat -c %s "$work/minimized") bytes: $(od -An -tx1 -v "$work/minimized" | tr -d ' \n')"
  echo
  echo "## 3. replaying the minimized input on the broken plugin (no libFuzzer)"
  NORMCHECK_KERNEL=$broken NORMCHECK_FUZZ_CASE_OUT=$work/minimized.case \
    "$build/bin/contract_fuzzer_replay" "$work/minimized" 2>&1 | grep -v '^    #' || true
  echo
  echo "## 4. its case file"
  cat "$work/minimized.case"
  echo
  echo "## 5. the same input on the shipped simt plugin: rejected cleanly"
  "$build/bin/contract_fuzzer_replay" --stats "$work/minimized" 2>&1
} 2>&1 | tee "$out"
echo "saved: $out" >&2
