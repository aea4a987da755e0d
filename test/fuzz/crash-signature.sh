#!/usr/bin/env bash
# Prints where a sanitizer or libFuzzer report in LOG points in attnc's own
# sources, as `function file:line:col` (or `file:line:col` for UBSan's
# runtime errors), so that a crash can be matched with a known one: the
# first frame of the first report outside the system's headers, libFuzzer
# and libc. Prints nothing when the log holds no report.
#   usage: crash-signature.sh LOG
set -uo pipefail
log="$1"
where="$(grep -m1 -oE '[^ ]+\.(cpp|h|inc):[0-9]+:[0-9]+: runtime error' "$log" |
  sed 's/: runtime error$//')"
if [ -n "$where" ]; then
  echo "${where##*/}"
  exit 0
fi
grep -E '^ +#[0-9]+ 0x[0-9a-f]+ in ' "$log" |
  grep -vE ' /usr/| \(/|fuzzer::| in (__|abort|raise|gsignal)' |
  grep -m1 -E '/(lib|runtime|tools|test|include)/' |
  sed -E 's/^.* in (.+) [^ ]*\/([^/ ]+)$/\1 \2/'
