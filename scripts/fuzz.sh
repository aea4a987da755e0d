#!/usr/bin/env bash
# Fuzzes the compiler's front half (test/fuzz/FuzzPipeline.cpp: parse ->
# verify -> the pass pipeline -> CUDA text) under ASan and UBSan.
#
#   scripts/fuzz.sh [MINUTES] [JOBS]   fuzz MINUTES (default 10) with JOBS
#                                      processes (default 1); the corpus in
#                                      build-fuzz/fuzz/corpus grows across runs
#   scripts/fuzz.sh --ci [SECONDS]     what CI runs: replay the regression
#                                      inputs, then fuzz SECONDS (default 60)
#                                      from the seeds alone
#
# Builds build-fuzz (clang-22, -DATTNC_FUZZ=ON) when needed. Seeds are the
# examples and the lit inputs (test/fuzz/make-seeds.sh). A crash leaves its
# input in build-fuzz/fuzz/crashes/ and fails; minimize it with
#   build-fuzz/bin/attnc-fuzz -minimize_crash=1 -runs=20000 CRASH-FILE
# and add it to test/fuzz/regressions (docs/TESTING.md).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ci=0
if [ "${1:-}" = "--ci" ]; then
  ci=1 seconds="${2:-60}" jobs=1
else
  seconds=$(((${1:-10}) * 60)) jobs="${2:-1}"
fi

"$root/scripts/instrumented-build.sh" build-fuzz -DATTNC_FUZZ=ON attnc-fuzz ||
  exit 1
fuzzer="$root/build-fuzz/bin/attnc-fuzz"
# CI's runs keep apart from the long runs' corpus and logs.
work="$root/build-fuzz/fuzz$( ((ci)) && echo -ci)"
((ci)) && rm -rf "$work/crashes" # CI reports its own run's crashes only
mkdir -p "$work/crashes" "$work/corpus"
"$root/test/fuzz/make-seeds.sh" "$root" "$work/seeds" || exit 1

seed=()
if ((ci)); then
  # A fixed seed: the same commit explores the same inputs, so a red run is
  # the commit's doing and reruns reproduce it.
  seed=(-seed=1)
  echo "-- regression inputs (test/fuzz/regressions)"
  "$root/test/fuzz/replay-regressions.sh" "$fuzzer" \
    "$root/test/fuzz/regressions" >"$work/regressions.log" 2>&1
  replayed=$?
  grep -v '^ok ' "$work/regressions.log"
  ((replayed == 0)) || exit 1
  # A fresh corpus: CI's verdict must not depend on an earlier run's.
  corpus="$(mktemp -d)"
  trap 'rm -rf "$corpus"' EXIT
else
  corpus="$work/corpus"
fi

# Stack traces for UBSan's reports too (ASan prints them anyway).
export UBSAN_OPTIONS="print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
echo "-- fuzzing for ${seconds}s with $jobs job(s); log in $work/fuzz*.log"
options=(-dict="$root/test/fuzz/attn.dict" -max_len=8192 -timeout=10
  -rss_limit_mb=2048 -max_total_time="$seconds" -print_final_stats=1
  -artifact_prefix="$work/crashes/" "${seed[@]}")
cd "$work" || exit 1
rm -f fuzz-*.log
if ((jobs > 1)); then
  # libFuzzer's own fork mode: each job logs to fuzz-N.log here.
  nice -n 19 "$fuzzer" "${options[@]}" -jobs="$jobs" -workers="$jobs" \
    "$corpus" "$work/seeds" >"$work/fuzz.log" 2>&1
else
  nice -n 19 "$fuzzer" "${options[@]}" "$corpus" "$work/seeds" \
    >"$work/fuzz.log" 2>&1
fi
status=$?
for log in "$work"/fuzz.log "$work"/fuzz-*.log; do
  [ -e "$log" ] || continue
  # The last coverage line, then libFuzzer's final statistics.
  grep -E '^#[0-9]+' "$log" | tail -n 1
  grep -E '^(Done|stat::)' "$log"
  if grep -qE '^==[0-9]+==ERROR|^SUMMARY|deadly signal|Test unit written' "$log"; then
    echo "-- crash report ($log):"
    grep -nE '==ERROR|runtime error|#[0-9]+ 0x|SUMMARY|Test unit written' \
      "$log" | head -n 40
    echo "reproduce: $fuzzer $work/crashes/<the file named above>"
    status=1
  fi
done
echo "fuzz: $( ((status == 0)) && echo "no crash" || echo "FAILED (exit $status)")," \
  "inputs in $work/crashes: $(find "$work/crashes" -type f | wc -l)"
exit $status
