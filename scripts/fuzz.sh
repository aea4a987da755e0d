#!/usr/bin/env bash
# Fuzzes the compiler's front half (parse -> verify -> the pass pipeline ->
# CUDA text, test/fuzz/FuzzPipeline.cpp) under ASan and UBSan, with two
# targets: attnc-fuzz mutates variant text; attnc-fuzz-variants reads its
# input as choices and writes a well-formed variant (VariantGenerator.h).
#
#   scripts/fuzz.sh [--variants] [MINUTES] [JOBS]
#       fuzz attnc-fuzz (or attnc-fuzz-variants) MINUTES (default 10) with
#       JOBS processes (default 1); the corpus in build-fuzz/fuzz/corpus*
#       grows across runs
#   scripts/fuzz.sh --ci [SECONDS]
#       what CI runs: replay the regression inputs, then fuzz each target
#       SECONDS (default 40) from the seeds alone, with a fixed seed
#
# Builds build-fuzz (clang-22, -DATTNC_FUZZ=ON) when needed. A crash leaves
# its input in build-fuzz/fuzz*/crashes/ and fails, unless it happens where
# a reproducer listed in test/fuzz/regressions/PENDING does: then the run
# says so and goes on. docs/TESTING.md says how to minimize a new one into
# test/fuzz/regressions.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ci=0 target=attnc-fuzz
case "${1:-}" in
  --ci) ci=1 seconds="${2:-40}" jobs=1 ;;
  --variants) target=attnc-fuzz-variants && shift ;;
esac
if ((!ci)); then
  seconds=$(((${1:-10}) * 60)) jobs="${2:-1}"
fi

"$root/scripts/instrumented-build.sh" build-fuzz -DATTNC_FUZZ=ON attnc-fuzz \
  attnc-fuzz-variants attnc-fuzz-generator-check || exit 1
bin="$root/build-fuzz/bin"
# CI's runs keep apart from the long runs' corpus and logs.
work="$root/build-fuzz/fuzz$( ((ci)) && echo -ci)"
((ci)) && rm -rf "$work/crashes" # CI reports its own run's crashes only
mkdir -p "$work/crashes"
"$root/test/fuzz/make-seeds.sh" "$root" "$work/seeds" || exit 1
# Generated variants parse, so text mutations start past the parser.
"$bin/attnc-fuzz-generator-check" 200 "$work/seeds" || exit 1
mkdir -p "$work/no-seeds" # the generator needs none

# Stack traces for UBSan's reports too (ASan prints them anyway).
export UBSAN_OPTIONS="print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
options=(-max_len=8192 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1)

# Where each PENDING reproducer crashes: a crash there is known and waits
# for its fix, so the run notes it and goes on; any other crash fails.
known="$work/known-crashes.txt"
: >"$known"
for name in $(grep -o '^[^ #]*\.mlir' "$root/test/fuzz/regressions/PENDING" \
  2>/dev/null); do
  "$bin/attnc-fuzz" "$root/test/fuzz/regressions/$name" >"$work/pending.log" 2>&1
  signature="$("$root/test/fuzz/crash-signature.sh" "$work/pending.log")"
  [ -n "$signature" ] && echo "$signature	$name" >>"$known"
done

status=0 runs=0
fuzz() { # TARGET CORPUS SEEDS
  local target="$1" corpus="$2" seeds="$3" log="$work/$1.log"
  local deadline=$((SECONDS + seconds)) attempt=0 more=() signature
  echo "-- $target for ${seconds}s with $jobs job(s); log in $log"
  mkdir -p "$corpus"
  ((jobs > 1)) && more+=(-jobs="$jobs" -workers="$jobs")
  # The generator's input is choices, not text: no dictionary.
  [ "$target" = attnc-fuzz ] && more+=(-dict="$root/test/fuzz/attn.dict")
  # Again after each known crash, from the grown corpus, until the time is up.
  while ((SECONDS < deadline && attempt < 100)); do
    attempt=$((attempt + 1))
    # In CI a fixed seed per attempt: the same commit explores the same
    # inputs, so a red run is the commit's doing and a rerun reproduces it.
    local seed=()
    ((ci)) && seed=(-seed="$attempt")
    (cd "$work" && rm -f fuzz-*.log &&
      nice -n 19 "$bin/$target" "${options[@]}" "${more[@]}" "${seed[@]}" \
        -max_total_time=$((deadline - SECONDS)) \
        -artifact_prefix="$work/crashes/$target-" "$corpus" "$seeds" \
        >"$log" 2>&1)
    local found=0
    for each in "$log" "$work"/fuzz-*.log; do
      [ -e "$each" ] || continue
      # The last coverage line, then libFuzzer's final statistics.
      grep -E '^#[0-9]+' "$each" | tail -n 1
      grep -E '^(Done|stat::)' "$each"
      # A log may hold several jobs' statistics: add them all.
      runs=$((runs + $(grep -oE '^stat::number_of_executed_units: *[0-9]+' \
        "$each" | awk -F: '{ total += $NF } END { print total + 0 }')))
      grep -qE '==ERROR|runtime error|deadly signal|Test unit written' \
        "$each" || continue
      found=1
      signature="$("$root/test/fuzz/crash-signature.sh" "$each")"
      if [ -n "$signature" ] && grep -q "^$signature	" "$known"; then
        echo "-- known crash at $signature ($(grep "^$signature	" "$known" |
          cut -f2), PENDING): going on"
        continue
      fi
      echo "-- NEW crash at ${signature:-an unknown place} ($each):"
      grep -nE '==ERROR|runtime error|#[0-9]+ 0x|SUMMARY|Test unit written' \
        "$each" | head -n 40
      echo "reproduce: $bin/$target <the file named above>"
      status=1
      return
    done
    ((found)) || return
  done
}

if ((ci)); then
  echo "-- regression inputs (test/fuzz/regressions)"
  "$root/test/fuzz/replay-regressions.sh" --strict "$bin/attnc-fuzz" \
    "$root/test/fuzz/regressions" >"$work/regressions.log" 2>&1 || status=1
  grep -v '^ok ' "$work/regressions.log"
  # Fresh corpora: CI's verdict must not depend on an earlier run's.
  rm -rf "$work/corpus" "$work/corpus-variants"
  fuzz attnc-fuzz "$work/corpus" "$work/seeds"
  fuzz attnc-fuzz-variants "$work/corpus-variants" "$work/no-seeds"
elif [ "$target" = attnc-fuzz ]; then
  fuzz attnc-fuzz "$work/corpus" "$work/seeds"
else
  fuzz attnc-fuzz-variants "$work/corpus-variants" "$work/no-seeds"
fi
echo "fuzz: $( ((status == 0)) && echo "no new crash" || echo FAILED)," \
  "$runs inputs run, $(find "$work/crashes" -type f | wc -l) crash inputs" \
  "in $work/crashes"
exit $status
