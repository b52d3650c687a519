#!/usr/bin/env bash
# corpus/nightly.sh: the nightly fuzz campaign (corpus/README.md).
#
# For each fuzz target: fuzz for a budget with libFuzzer's -fork (a crash does not end the
# night: -ignore_crashes), merge every input that found new coverage into corpus/<target>/
# (-merge=1), minimize each crash (-minimize_crash=1) into corpus/regressions/pending/<target>/
# with its case file, replay the corpus on the cuda backend when a GPU is present, and write a
# dated report: reports/fuzz/nightly-<date>.json and .md (execs/s, cov/ft, corpus growth,
# crashes with their reproduction command).
#
#   corpus/nightly.sh [--budget SECONDS] [--jobs N] [--targets "contract_fuzzer value_fuzzer"]
#                     [--build DIR] [--no-build] [--plugin PATH] [--cuda auto|yes|no]
#                     [--cuda-build DIR] [--report-dir DIR]
#
#   --budget   fuzzing seconds per target (default 600)
#   --jobs     libFuzzer -fork jobs, i.e. cores (default: all)
#   --build    the fuzz preset's build folder (default build/fuzz); --no-build uses it as it is
#   --plugin   fuzz this kernel plugin instead of the shipped simt one (NORMCHECK_KERNEL)
#   --cuda     replay the corpora on the cuda backend: auto (when nvidia-smi sees a GPU), yes, no
#   --cuda-build  the cuda preset's build folder (default build/cuda)
#   --cuda-only   no fuzzing: replay the corpora on the cuda backend and write the report
# Exit status: 0, or 1 when the night found a crash or the cuda replay failed.
set -euo pipefail
cd "$(dirname "$0")/.."

budget=600
jobs=$(nproc)
targets="contract_fuzzer value_fuzzer"
build=build/fuzz
do_build=1
plugin=""
cuda=auto
cuda_build=build/cuda
report_dir=reports/fuzz
fuzz=1
while [ $# -gt 0 ]; do
  case "$1" in
    --budget) budget=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --targets) targets=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --no-build) do_build=0; shift ;;
    --plugin) plugin=$2; shift 2 ;;
    --cuda) cuda=$2; shift 2 ;;
    --cuda-build) cuda_build=$2; shift 2 ;;
    --report-dir) report_dir=$2; shift 2 ;;
    --cuda-only) fuzz=0; cuda=yes; shift ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "nightly.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

log() { echo "[nightly $(date -u +%H:%M:%S)] $*" >&2; }
# runs a command that may die of a signal without bash announcing it ("Aborted")
quiet() { "$@" & wait $!; }

# one input replayed outside libFuzzer, whose -timeout and -rss_limit_mb then no longer hold: the
# same limits here (AddressSanitizer's hard RSS limit, a wall-clock limit), so that an input that
# grows without bound or never ends is stopped and named instead of holding up the night
replay_limit_s=60
replay() {
  local status=0
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}hard_rss_limit_mb=4096" \
    quiet timeout -k 5 "$replay_limit_s" "$build/bin/${t}_replay" "$@" || status=$?
  if [ "$status" = 124 ] || [ "$status" = 137 ]; then
    echo "TIMEOUT: ${t}_replay ran past ${replay_limit_s} s" >&2
  fi
  return "$status"
}

# ---- build --------------------------------------------------------------------------------
if [ "$do_build" = 1 ] && [ "$fuzz" = 1 ]; then
  log "building the fuzz targets in $build"
  if [ ! -f "$build/CMakeCache.txt" ]; then cmake --preset fuzz -B "$build" >&2; fi
  cmake --build "$build" --target normcheck_simt $(for t in $targets; do echo "$t ${t}_replay"; done) >&2
fi
for t in $targets; do
  [ "$fuzz" = 1 ] || break
  # the replay program tells a night's crashes apart and writes their case files
  for program in "$t" "${t}_replay"; do
    [ -x "$build/bin/$program" ] || {
      echo "nightly.sh: $build/bin/$program is missing (build the fuzz preset's targets $t ${t}_replay, or run without --no-build)" >&2
      exit 2
    }
  done
done
root=$PWD
abs() { case "$1" in /*) echo "$1" ;; *) echo "$root/$1" ;; esac; }
if [ -n "$plugin" ]; then export NORMCHECK_KERNEL=$(abs "$plugin"); fi
# UBSan findings are crashes, as OSS-Fuzz makes them
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

date_stamp=$(date -u +%Y-%m-%d)
report=$report_dir/nightly-$date_stamp
[ -e "$report.json" ] && report=$report_dir/nightly-$date_stamp-$(date -u +%H%M%S)
work=$build/nightly/$(basename "$report")
mkdir -p "$report_dir" "$work"
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)

files_in() { find "$1" -type f ! -name '.*' 2>/dev/null | wc -l | tr -d ' '; }
bytes_in() { find "$1" -type f ! -name '.*' -printf '%s\n' 2>/dev/null | awk '{s += $1} END {print s + 0}'; }
json_string() { printf '"%s"' "$(printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | tr -d '\n\r\t')"; }
# a status line of fork mode: "#N: cov: C ft: F corp: K exec/s E oom/timeout/crash: a/b/c time: Ts ..."
field() { sed -n "s/.* $1 \([0-9]*\).*/\1/p" <<<"$2"; }
# failures that differ only in numbers and addresses are one failure
# (a mismatch is named by its output, a sanitizer report by its place and kind)
signature_key() {
  sed -E -e 's/^(disagrees with the exact oracle: [a-z]+).*/\1/' -e 's/^(.*:[0-9]+):[0-9]+: runtime error: ([a-z -]*).*/\1 \2/' \
         -e 's/0x[0-9a-fA-F]*/0xH/g' -e 's/[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?/N/g' <<<"$1"
}

summary_json=()
summary_md=()
crash_md=()
found=0

for t in $targets; do
  [ "$fuzz" = 1 ] || break
  corpus=corpus/$t
  regressions=corpus/regressions/$t
  pending=corpus/regressions/pending/$t
  tw=$work/$t
  mkdir -p "$tw/new" "$tw/artifacts" "$tw/minimized" "$corpus" "$regressions"
  files_before=$(files_in "$corpus")
  bytes_before=$(bytes_in "$corpus")

  # -- fuzz: new inputs land in $tw/new, the committed corpus and the regressions seed it.
  # -entropic=0 as in <target>.options: the entropic schedule's bookkeeping of rare features
  # (InputCorpus::UpdateFeatureFrequency) took a quarter of contract_fuzzer's time, growing with
  # the features of the plugin's many kernel instantiations
  log "$t: fuzzing for ${budget}s on $jobs job(s) (corpus: $files_before files)"
  fuzz_log=$tw/fuzz.log
  # the fork mode's status lines count time from the start, which includes its first pass over
  # every seed (whose executions it does not count): the moment it starts to fuzz is stamped
  started_fuzzing=$tw/started-fuzzing
  launched=$(date +%s)
  set +e
  (cd "$tw" && exec "$(abs "$build")/bin/$t" -fork="$jobs" -max_total_time="$budget" \
      -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -entropic=0 \
      -timeout=10 -rss_limit_mb=4096 -max_len=$([ "$t" = value_fuzzer ] && echo 40000 || echo 4096) \
      -dict="$root/corpus/fuzzers/$t.dict" -artifact_prefix=artifacts/ -print_final_stats=1 \
      new "$root/$corpus" "$root/$regressions") 2>&1 |
    awk -v stamp="$started_fuzzing" '{ print; fflush() } /starting to fuzz/ && !seen { system("date +%s > " stamp); seen = 1 }' >"$fuzz_log"
  fuzz_status=${PIPESTATUS[0]}
  set -e
  status_lines=$(grep -E '^#[0-9]+: cov: ' "$fuzz_log" || true)
  first=$(head -n 1 <<<"$status_lines")
  last=$(tail -n 1 <<<"$status_lines")
  execs=$(sed -n 's/^#\([0-9]*\):.*/\1/p' <<<"$last")
  seconds=$(sed -n 's/.* time: \([0-9]*\)s.*/\1/p' <<<"$last")
  execs=${execs:-0}; seconds=${seconds:-0}
  execs_per_s=$([ "$seconds" -gt 0 ] && echo $((execs / seconds)) || echo 0)
  per_core=$([ "$jobs" -gt 0 ] && echo $((execs_per_s / jobs)) || echo 0)
  seed_pass=$(( $(cat "$started_fuzzing" 2>/dev/null || echo "$launched") - launched ))
  fuzzing_seconds=$(( seconds > seed_pass ? seconds - seed_pass : 0 ))
  fuzzing_per_core=$([ "$fuzzing_seconds" -gt 0 ] && [ "$jobs" -gt 0 ] && echo $((execs / fuzzing_seconds / jobs)) || echo 0)
  cov_start=$(field cov: "$first"); ft_start=$(field ft: "$first")
  cov_end=$(field cov: "$last"); ft_end=$(field ft: "$last")
  log "$t: $execs execs in ${seconds}s ($execs_per_s/s; ${seed_pass}s of them the first pass over the seeds, then $fuzzing_per_core/s a core), cov ${cov_start:-?} -> ${cov_end:-?}, ft ${ft_start:-?} -> ${ft_end:-?} (libFuzzer exit $fuzz_status)"

  # -- merge what found new coverage into the committed corpus
  merge_log=$tw/merge.log
  "$build/bin/$t" -merge=1 -merge_control_file="$tw/merge.control" -timeout=10 -rss_limit_mb=4096 \
    "$corpus" "$tw/new" >"$merge_log" 2>&1 || log "$t: merge exited $? (see $merge_log)"
  new_inputs=$(sed -n 's/^MERGE-OUTER: \([0-9]*\) new files.*/\1/p' "$merge_log" | tail -n 1)
  new_features=$(sed -n 's/^MERGE-OUTER: [0-9]* new files with \([0-9]*\) new features.*/\1/p' "$merge_log" | tail -n 1)
  files_after=$(files_in "$corpus")
  bytes_after=$(bytes_in "$corpus")
  log "$t: merged ${new_inputs:-0} new input(s) (${new_features:-0} new features): $files_before -> $files_after files"

  # -- minimize each crash, one regression per distinct failure
  crashes_json=()
  seen=""
  for artifact in "$tw"/artifacts/crash-* "$tw"/artifacts/leak-* "$tw"/artifacts/timeout-* "$tw"/artifacts/oom-*; do
    [ -f "$artifact" ] || continue
    kind=$(basename "$artifact" | cut -d- -f1)
    # what failed, in one line: the violation, or the sanitizer's summary
    signature_of() {
      local sig
      sig=$(grep -m 1 -A 1 'VIOLATION in' "$1" | tail -n 1 | sed 's/^ *//' || true)
      [ -n "$sig" ] || sig=$(grep -m 1 -E '^SUMMARY: |runtime error:|ERROR: (Address|Leak)Sanitizer|AddressSanitizer: hard rss limit|^TIMEOUT: ' "$1" |
                        sed -E 's/^==[0-9]+==//' || true)
      [ -n "$sig" ] || sig="$kind (not reproduced by ${t}_replay)"
      echo "${sig//$root\//}"  # no machine paths in committed files
    }
    # one regression per distinct failure: judge the raw artifact before minimizing it
    raw_log=$tw/minimized/$(basename "$artifact").raw.log
    replay "$artifact" >"$raw_log" 2>&1 || true
    key=$(signature_key "$(signature_of "$raw_log")")
    if grep -qxF -- "$key" <<<"$seen"; then continue; fi
    seen=$seen$'\n'$key
    if [ ${#crashes_json[@]} -ge 10 ]; then log "$t: 10 distinct failures kept; the rest stay in $tw/artifacts"; break; fi
    min=$tw/minimized/$(basename "$artifact")
    "$build/bin/$t" -minimize_crash=1 -max_total_time=120 -runs=20000 -timeout=10 \
      -exact_artifact_path="$min" "$artifact" >"$min.log" 2>&1 || true
    [ -s "$min" ] || cp "$artifact" "$min"
    replay_log=$min.replay.log
    NORMCHECK_FUZZ_CASE_OUT=$min.case replay "$min" >"$replay_log" 2>&1 || true
    signature=$(signature_of "$replay_log")
    # -minimize_crash keeps any crash, so it can slide into another failure: then the raw input is kept
    note="minimized from $(basename "$artifact")"
    if [ "$(signature_key "$signature")" != "$key" ]; then
      note="not minimized: minimizing $(basename "$artifact") turned it into another failure"
      cp "$artifact" "$min"
      NORMCHECK_FUZZ_CASE_OUT=$min.case replay "$min" >"$replay_log" 2>&1 || true
      signature=$(signature_of "$replay_log")
    fi
    found=1
    name=$t-$date_stamp-$(sha1sum "$min" | cut -c1-8)
    mkdir -p "$pending"
    cp "$min" "$pending/$name"
    { [ -f "$min.case" ] && cat "$min.case"
      echo "# found by corpus/nightly.sh on $date_stamp ($kind), $note"
      echo "# signature: $signature"
      echo "# reproduce: $build/bin/${t}_replay $pending/$name"; } >"$pending/$name.case"
    reproduce="${plugin:+NORMCHECK_KERNEL=$plugin }$build/bin/${t}_replay $pending/$name"
    log "$t: $kind -> $pending/$name: $signature"
    crashes_json+=("{\"kind\": $(json_string "$kind"), \"file\": $(json_string "$pending/$name"), \"bytes\": $(stat -c %s "$min"), \"signature\": $(json_string "$signature"), \"reproduce\": $(json_string "$reproduce")}")
    crash_md+=("| $t | $kind | \`$pending/$name\` ($(stat -c %s "$min") bytes) | $(sed 's/|/\\|/g' <<<"$signature") | \`$reproduce\` |")
  done

  summary_json+=("{\"target\": $(json_string "$t"), \"budget_s\": $budget, \"jobs\": $jobs, \"seconds\": $seconds, \"execs\": $execs, \"execs_per_s\": $execs_per_s, \"execs_per_s_per_core\": $per_core, \"seed_pass_s\": $seed_pass, \"execs_per_s_per_core_fuzzing\": $fuzzing_per_core, \"cov_start\": ${cov_start:-null}, \"cov_end\": ${cov_end:-null}, \"ft_start\": ${ft_start:-null}, \"ft_end\": ${ft_end:-null}, \"corpus_files_before\": $files_before, \"corpus_files_after\": $files_after, \"corpus_bytes_before\": $bytes_before, \"corpus_bytes_after\": $bytes_after, \"new_inputs\": ${new_inputs:-0}, \"new_features\": ${new_features:-0}, \"crashes\": [$(IFS=,; echo "${crashes_json[*]:-}")], \"libfuzzer_exit\": $fuzz_status}")
  summary_md+=("| $t | ${seconds}s × $jobs | $execs | $execs_per_s ($per_core/core) | ${seed_pass}s, then $fuzzing_per_core/core | ${cov_start:-?} → ${cov_end:-?} | ${ft_start:-?} → ${ft_end:-?} | $files_before → $files_after | ${new_inputs:-0} | ${#crashes_json[@]} |")
done

# ---- the corpora on the cuda backend --------------------------------------------------------
gpu_json="null"
gpu_md="not run (no GPU)"
if [ "$cuda" = yes ] || { [ "$cuda" = auto ] && command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; }; then
  if [ "$do_build" = 1 ]; then
    log "building the replay binaries and the cuda plugin in $cuda_build"
    command -v nvcc >/dev/null || export PATH="$PATH:/usr/local/cuda/bin"
    [ -f "$cuda_build/CMakeCache.txt" ] || cmake --preset cuda -B "$cuda_build" >&2
    cmake --build "$cuda_build" --target normcheck_cuda $(for t in $targets; do echo "${t}_replay"; done) >&2
  fi
  gpu_entries=()
  gpu_rows=()
  for t in $targets; do
    gpu_log=$work/$t/cuda-replay.log
    set +e
    NORMCHECK_BACKEND=cuda "$cuda_build/bin/${t}_replay" corpus/$t corpus/regressions/$t >"$gpu_log" 2>&1
    rc=$?
    set -e
    line=$(grep -m 1 '^replayed ' "$gpu_log" || tail -n 1 "$gpu_log")
    [ $rc = 0 ] || found=1
    log "$t on cuda: exit $rc: $line"
    gpu_entries+=("{\"target\": $(json_string "$t"), \"exit\": $rc, \"result\": $(json_string "$line")}")
    gpu_rows+=("$t: exit $rc, $line")
  done
  gpu_json="[$(IFS=,; echo "${gpu_entries[*]}")]"
  gpu_md=$(printf -- '- %s\n' "${gpu_rows[@]}")
fi

# ---- the report -----------------------------------------------------------------------------
finished=$(date -u +%Y-%m-%dT%H:%M:%SZ)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
kernel_under_test=${plugin:-"$build/lib/libnormcheck_simt.so (shipped simt)"}
{
  echo "{"
  echo "  \"kind\": \"normcheck nightly fuzz campaign\","
  echo "  \"started\": \"$started\", \"finished\": \"$finished\", \"commit\": \"$commit\","
  echo "  \"kernel\": $(json_string "$kernel_under_test"), \"host_cores\": $(nproc),"
  echo "  \"targets\": ["
  for i in "${!summary_json[@]}"; do echo "    ${summary_json[$i]}$([ "$i" -lt $((${#summary_json[@]} - 1)) ] && echo ,)"; done
  echo "  ],"
  echo "  \"cuda_replay\": $gpu_json"
  echo "}"
} >"$report.json"
{
  echo "# normcheck nightly fuzz campaign, $date_stamp"
  echo
  echo "Commit \`$commit\`, kernel \`$kernel_under_test\`, $started to $finished, $(nproc) host cores."
  echo "Written by \`corpus/nightly.sh --budget $budget --jobs $jobs\`; the JSON beside this file holds the same figures."
  echo
  echo "| target | fuzzed | execs | execs/s | first seed pass, then execs/s | cov | ft | corpus files | new inputs | crashes |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${summary_md[@]}"
  echo
  echo "cov and ft are libFuzzer's coverage counters (edges, features) at the start and the end of the"
  echo "run; new inputs are those \`-merge=1\` added to \`corpus/<target>/\`. execs/s counts the whole run, which"
  echo "begins with libFuzzer's pass over every seed (executions it does not count); the column after it"
  echo "gives that pass's seconds and the executions a core made per second once fuzzing started."
  echo
  echo "## Crashes"
  echo
  if [ ${#crash_md[@]} -eq 0 ]; then
    echo "None."
  else
    echo "| target | kind | minimized input (case file beside it) | failure | reproduce |"
    echo "|---|---|---|---|---|"
    printf '%s\n' "${crash_md[@]}"
  fi
  echo
  echo "## The corpora on the cuda backend"
  echo
  echo "$gpu_md"
} >"$report.md"
log "report: $report.json, $report.md"
exit $found
