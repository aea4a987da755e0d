#!/usr/bin/env bash
# Fuzzes attnc under ASan and UBSan (build-fuzz, clang-22, libFuzzer), with
# five targets (test/fuzz, docs/TESTING.md):
#   attnc-fuzz           the variant's text through parse -> verify -> the
#                        pass pipeline -> CUDA text (FuzzPipeline.cpp)
#   attnc-fuzz-variants  the input as choices of a well-formed variant
#                        (VariantGenerator.h), down the same pipeline
#   attnc-fuzz-trace     the simulator's trace parser (serving/sim/Trace.cpp)
#   attnc-fuzz-serving   programs of calls on the serving C API (pools,
#                        radix caches, schedulers, steps)
#   attnc-fuzz-regions   score_mod / mask_mod text and capture types through
#                        attnc_variant_from_spec, as Python passes them
#
#   scripts/fuzz.sh [--target NAME | --variants] [MINUTES] [JOBS]
#       fuzz NAME (default attnc-fuzz; --variants is attnc-fuzz-variants)
#       MINUTES (default 10) with JOBS processes (default 1); the corpus in
#       build-fuzz/fuzz/corpus-NAME grows across runs
#   scripts/fuzz.sh --all [MINUTES]
#       each target MINUTES (default 10), one after the other
#   scripts/fuzz.sh --inputs N
#       every target in turn until N inputs have run over all of them
#       (N / 5 each), from the grown corpora; prints each target's count
#   scripts/fuzz.sh --ci [SECONDS]
#       what CI runs: replay every target's regression inputs, then fuzz
#       each target SECONDS (default 40) from the seeds alone, with a fixed
#       seed
#
# Builds build-fuzz (clang-22, -DATTNC_FUZZ=ON) when needed. A crash leaves
# its input in build-fuzz/fuzz*/crashes/ and fails, unless it happens where
# a reproducer listed in the target's regression folder's PENDING file
# does: then the run says so and goes on. docs/TESTING.md says how to
# minimize a new one into the target's folder: test/fuzz/regressions (text,
# for attnc-fuzz and attnc-fuzz-variants) or test/fuzz/regressions-NAME.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
all_targets=(attnc-fuzz attnc-fuzz-variants attnc-fuzz-trace attnc-fuzz-serving
  attnc-fuzz-regions)
mode=one targets=(attnc-fuzz) inputs=0 ci=0
case "${1:-}" in
  --ci) mode=ci ci=1 seconds="${2:-40}" jobs=1 targets=("${all_targets[@]}") ;;
  --variants) targets=(attnc-fuzz-variants) && shift ;;
  --target)
    targets=("${2:?--target needs a name}") && shift 2
    [[ " ${all_targets[*]} " == *" ${targets[0]} "* ]] ||
      { echo "fuzz.sh: no target ${targets[0]} (${all_targets[*]})" >&2; exit 2; }
    ;;
  --all) mode=all targets=("${all_targets[@]}") && shift ;;
  --inputs)
    mode=inputs inputs="${2:?--inputs needs a count}" jobs=1 seconds=0
    targets=("${all_targets[@]}")
    ;;
esac
if [ "$mode" = one ] || [ "$mode" = all ]; then
  seconds=$(((${1:-10}) * 60)) jobs="${2:-1}"
  [ "$mode" = all ] && jobs=1
fi

"$root/scripts/instrumented-build.sh" build-fuzz -DATTNC_FUZZ=ON \
  "${all_targets[@]}" attnc-fuzz-generator-check || exit 1
bin="$root/build-fuzz/bin"
# CI's runs keep apart from the long runs' corpus and logs.
work="$root/build-fuzz/fuzz$( ((ci)) && echo -ci)"
((ci)) && rm -rf "$work/crashes" # CI reports its own run's crashes only
mkdir -p "$work/crashes"

# Each target's corpus, seeds, regression folder and dictionary.
corpus_of() { [ "$1" = attnc-fuzz ] && echo "$work/corpus" ||
  echo "$work/corpus-${1#attnc-fuzz-}"; }
regressions_of() {
  case "$1" in
    attnc-fuzz | attnc-fuzz-variants) echo "$root/test/fuzz/regressions" ;;
    *) echo "$root/test/fuzz/regressions-${1#attnc-fuzz-}" ;;
  esac
}
seeds_of() {
  case "$1" in
    attnc-fuzz) echo "$work/seeds" ;;
    attnc-fuzz-variants) echo "$work/no-seeds" ;; # the generator needs none
    *) echo "$work/seeds-${1#attnc-fuzz-}" ;;
  esac
}
dict_of() {
  case "$1" in
    # Region text is the text target's syntax; the generator's and the
    # serving program's inputs are choices, not text.
    attnc-fuzz | attnc-fuzz-regions) echo "$root/test/fuzz/attn.dict" ;;
    attnc-fuzz-trace) echo "$root/test/fuzz/trace.dict" ;;
  esac
}
# The regression inputs that no longer crash seed their target.
copy_fixed() { # DIR OUT
  local f
  for f in "$1"/*; do
    [ -f "$f" ] || continue
    case "$(basename "$f")" in PENDING | README*) continue ;; esac
    [ -f "$1/PENDING" ] && grep -q "^$(basename "$f")" "$1/PENDING" && continue
    cp "$f" "$2/regression-$(basename "$f")"
  done
}

"$root/test/fuzz/make-seeds.sh" "$root" "$work/seeds" || exit 1
# Generated variants parse, so text mutations start past the parser.
"$bin/attnc-fuzz-generator-check" 200 "$work/seeds" || exit 1
mkdir -p "$work/no-seeds"
# Traces: the bundled ones whole and line by line.
rm -rf "$work/seeds-trace" && mkdir -p "$work/seeds-trace"
for f in "$root"/examples/*.jsonl; do
  cp "$f" "$work/seeds-trace/"
  split -l 1 -d -a 3 "$f" "$work/seeds-trace/$(basename "$f" .jsonl)-line-"
done
copy_fixed "$root/test/fuzz/regressions-trace" "$work/seeds-trace"
rm -rf "$work/seeds-serving" && mkdir -p "$work/seeds-serving"
copy_fixed "$root/test/fuzz/regressions-serving" "$work/seeds-serving"
# Regions: every score_mod and mask_mod of the examples, the lit inputs, the
# generated variants and the Python tests.
python3 "$root/test/fuzz/make-region-seeds.py" "$work/seeds-regions" \
  "$root/examples" "$root/test" "$work/seeds" "$root/python/tests" || exit 1
copy_fixed "$root/test/fuzz/regressions-regions" "$work/seeds-regions"

# Stack traces for UBSan's reports too (ASan prints them anyway).
export UBSAN_OPTIONS="print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
options=(-max_len=8192 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1)

# Where each PENDING reproducer crashes: a crash there is known and waits
# for its fix, so the run notes it and goes on; any other crash fails.
known="$work/known-crashes.txt"
: >"$known"
for target in "${targets[@]}"; do
  dir="$(regressions_of "$target")"
  [ "$target" = attnc-fuzz-variants ] && continue # attnc-fuzz's inputs
  for name in $(grep -oE '^[^ #]+' "$dir/PENDING" 2>/dev/null); do
    "$bin/$target" "$dir/$name" >"$work/pending.log" 2>&1
    signature="$("$root/test/fuzz/crash-signature.sh" "$work/pending.log")"
    [ -n "$signature" ] && echo "$signature	$name" >>"$known"
  done
done

status=0 runs=0
declare -A ran # inputs run per target
fuzz() { # TARGET
  local target="$1" log="$work/$1.log" corpus seeds dict
  corpus="$(corpus_of "$target")" seeds="$(seeds_of "$target")"
  dict="$(dict_of "$target")"
  local deadline=$((SECONDS + seconds)) attempt=0 more=() signature
  local wanted=$(((inputs + ${#targets[@]} - 1) / ${#targets[@]}))
  ran[$target]=0
  if ((inputs)); then
    echo "-- $target for $wanted inputs; log in $log"
  else
    echo "-- $target for ${seconds}s with $jobs job(s); log in $log"
  fi
  mkdir -p "$corpus"
  ((jobs > 1)) && more+=(-jobs="$jobs" -workers="$jobs")
  [ -n "$dict" ] && more+=(-dict="$dict")
  # Again after each known crash, from the grown corpus, until the time (or
  # the count) is up.
  while ((attempt < 100)); do
    if ((inputs)); then
      ((ran[$target] < wanted)) || return
    else
      ((SECONDS < deadline)) || return
    fi
    attempt=$((attempt + 1))
    # In CI a fixed seed per attempt: the same commit explores the same
    # inputs, so a red run is the commit's doing and a rerun reproduces it.
    local seed=() limit
    ((ci)) && seed=(-seed="$attempt")
    if ((inputs)); then
      limit=(-runs=$((wanted - ran[$target])))
    else
      limit=(-max_total_time=$((deadline - SECONDS)))
    fi
    (cd "$work" && rm -f fuzz-*.log &&
      nice -n 19 "$bin/$target" "${options[@]}" "${more[@]}" "${seed[@]}" \
        "${limit[@]}" -artifact_prefix="$work/crashes/$target-" \
        "$corpus" "$seeds" >"$log" 2>&1)
    local found=0 count
    for each in "$log" "$work"/fuzz-*.log; do
      [ -e "$each" ] || continue
      # The last coverage line, then libFuzzer's final statistics.
      grep -E '^#[0-9]+' "$each" | tail -n 1
      grep -E '^(Done|stat::)' "$each"
      # A log may hold several jobs' statistics: add them all. A crashed
      # run prints none: its last coverage line counts.
      count=$(grep -oE '^stat::number_of_executed_units: *[0-9]+' "$each" |
        awk -F: '{ total += $NF } END { print total + 0 }')
      ((count)) || count=$(grep -oE '^#[0-9]+' "$each" | tail -n 1 | tr -d '#')
      runs=$((runs + ${count:-0}))
      ran[$target]=$((ran[$target] + ${count:-0}))
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
      grep -nE '==ERROR|runtime error|invariant broken|#[0-9]+ 0x|SUMMARY|Test unit written' \
        "$each" | head -n 40
      echo "reproduce: $bin/$target <the file named above>"
      status=1
      return
    done
    ((found)) || ((inputs)) || return
  done
}

if ((ci)); then
  for target in "${targets[@]}"; do
    [ "$target" = attnc-fuzz-variants ] && continue # attnc-fuzz replays its
    dir="$(regressions_of "$target")"
    echo "-- regression inputs (${dir#"$root"/})"
    "$root/test/fuzz/replay-regressions.sh" --strict "$bin/$target" "$dir" \
      >"$work/regressions-$target.log" 2>&1 || status=1
    grep -v '^ok ' "$work/regressions-$target.log"
  done
  # Fresh corpora: CI's verdict must not depend on an earlier run's.
  for target in "${targets[@]}"; do rm -rf "$(corpus_of "$target")"; done
fi
for target in "${targets[@]}"; do
  fuzz "$target"
  # A new crash ends a run of one target; the others still run in CI and
  # the long modes, so that one report shows every target's state.
done
if ((${#targets[@]} > 1)); then
  echo "-- inputs run per target:"
  for target in "${targets[@]}"; do
    printf '   %-22s %12d\n' "$target" "${ran[$target]:-0}"
  done
fi
echo "fuzz: $( ((status == 0)) && echo "no new crash" || echo FAILED)," \
  "$runs inputs run, $(find "$work/crashes" -type f | wc -l) crash inputs" \
  "in $work/crashes"
exit $status
