#!/usr/bin/env bash
# Counts the CPU instructions a cold compile executes (valgrind's cachegrind
# without its cache model): a compile's cost that stays put while the
# machine's load and clock move. `attnc compile --time` moved up to 1.8x
# between runs of one binary on the GPU machines and 1.5x on the build
# machine, more than most changes to the device code move it. The count
# repeats within 0.001 %, and it splits between NVVM and ptxas as the
# time does (docs/perf-log/2026-11-27-8-seventeenth-session.md).
#
#   benchmarks/compile_work.sh [ATTNC] [variant.mlir ...]
#
# ATTNC defaults to build/bin/attnc, the variants to the prefill ones of
# benchmarks/variants. Each compile runs about 40x slower than natively
# (40 s for P1's kernel), two at a time. Needs valgrind (Debian's package).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
command -v valgrind >/dev/null || {
  echo "compile_work.sh: needs valgrind (apt-get install valgrind)" >&2
  exit 2
}
attnc=build/bin/attnc
if [ $# -gt 0 ] && [[ "$1" != *.mlir ]]; then
  attnc="$1"
  shift
fi
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(benchmarks/variants/prefill_*.mlir)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}

count() { # VARIANT: one line, the instructions in billions
  local refs
  refs="$(valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
    "$attnc" compile "$1" --emit=cubin --no-cache -o /dev/null 2>&1 |
    sed -n 's/.*I *refs: *\([0-9,]*\).*/\1/p' | tr -d ,)"
  if [ -z "$refs" ]; then
    echo "$(basename "$1" .mlir): no count (did it compile?)"
    return 1
  fi
  echo "$(basename "$1" .mlir): $(awk -v r="$refs" 'BEGIN { printf "%.3f", r / 1e9 }') G instructions"
}
status=0
for ((i = 0; i < ${#variants[@]}; i += 2)); do
  count "${variants[$i]}" &
  first=$!
  if ((i + 1 < ${#variants[@]})); then
    count "${variants[$((i + 1))]}" || status=1
  fi
  wait $first || status=1
done
exit $status
