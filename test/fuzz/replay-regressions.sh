#!/usr/bin/env bash
# Feeds every reproducer in a regressions folder to the fuzz target's entry,
# each in its own process so that one crash names its input and the rest
# still run. An error exit of the compiler is fine; a crash fails the test.
# Every file of the folder is an input (each target has its own folder and
# its own kind of input: .mlir text, a .jsonl trace, a serving program's
# bytes) but PENDING and README files.
#
# A reproducer listed in the folder's PENDING file (name, then why) is a
# known crash not fixed yet: it is run and reported. With --strict (the
# instrumented build, scripts/fuzz.sh --ci) it fails the test once it stops
# crashing, so that the line is deleted with the fix; a release build may
# well survive undefined behaviour or a wrong cast that the instrumented
# build stops at, so there it only says so.
#   usage: replay-regressions.sh [--strict] REPLAY-BINARY REGRESSIONS-DIR
set -uo pipefail
strict=0
[ "$1" = --strict ] && strict=1 && shift
replay="$1" dir="$2"
pending=()
[ -f "$dir/PENDING" ] && mapfile -t pending < <(grep -oE '^[^ #]+' "$dir/PENDING")
is_pending() {
  local name
  for name in "${pending[@]}"; do [ "$name" = "$1" ] && return 0; done
  return 1
}
passed=0 failed=0 known=0 fixed=0
for input in "$dir"/*; do
  [ -f "$input" ] || continue
  name="$(basename "$input")"
  case "$name" in PENDING | README*) continue ;; esac
  log="$("$replay" "$input" 2>&1)"
  rc=$?
  if is_pending "$name"; then
    if [ $rc -eq 0 ] && ((strict)); then
      echo "FIXED   $name: no longer crashes; delete its line in $dir/PENDING"
      fixed=$((fixed + 1))
    elif [ $rc -eq 0 ]; then
      echo "PENDING $name (no crash in this build; the instrumented one decides)"
      known=$((known + 1))
    else
      echo "PENDING $name (exit $rc, a known crash)"
      known=$((known + 1))
    fi
  elif [ $rc -eq 0 ]; then
    echo "ok      $name"
    passed=$((passed + 1))
  else
    echo "CRASH   $name (exit $rc)"
    echo "$log" | tail -n 30 | sed 's/^/    /'
    failed=$((failed + 1))
  fi
done
total=$((passed + failed + known + fixed))
echo "fuzz regressions: $total inputs, $passed ok, $failed crashed," \
  "$known pending, $fixed fixed but still listed as pending"
# No reproducers at all means the folder moved: that must not pass.
[ $total -gt 0 ] && [ $failed -eq 0 ] && [ $fixed -eq 0 ]
