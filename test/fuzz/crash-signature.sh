#!/usr/bin/env bash
# Prints where a sanitizer or libFuzzer report in LOG points, so that a
# crash can be matched with a known one: UBSan's `file:line:col`; else the
# first frame in attnc's own sources as `function file:line:col`; else (a
# crash inside Debian's uninstrumented LLVM/MLIR, whose frames the unwinder
# may not get past) the first five functions of the stack. Frames of the
# sanitizers, libFuzzer and libc are skipped. Prints nothing when the log
# holds no report.
#   usage: crash-signature.sh LOG
set -uo pipefail
log="$1"
where="$(grep -m1 -oE '[^ ]+\.(cpp|h|inc):[0-9]+:[0-9]+: runtime error' "$log" |
  sed 's/: runtime error$//')"
if [ -n "$where" ]; then
  echo "${where##*/}"
  exit 0
fi
frames="$(grep -E '^ +#[0-9]+ 0x[0-9a-f]+ in ' "$log" |
  grep -vE 'fuzzer::|__sanitizer|__asan|__ubsan| in (__|abort|raise|gsignal|_start|main )|/libc')"
where="$(echo "$frames" | grep -v ' /usr/' | grep -v ' (/' |
  grep -m1 -E '/(lib|runtime|tools|test|include)/' |
  sed -E 's/^.* in (.+) [^ ]*\/([^/ ]+)$/\1 \2/')"
if [ -n "$where" ]; then
  echo "$where"
  exit 0
fi
echo "$frames" | head -n 5 | sed -E 's/^ +#[0-9]+ 0x[0-9a-f]+ in ([^(]+).*/\1/' |
  paste -sd '<' -
