#!/usr/bin/env bash
# Times two attnc builds against each other on the GPU, in one run so the
# times compare: each workload runs A, B, B, A (twice by default), each
# build with a kernel cache of its own, and one line per workload gives
# the four times per round and B's mean over A's.
#
#   benchmarks/ab.sh OLD/attnc NEW/attnc [variant.mlir:shape ...]
#
# Without workloads it takes the prefill rows of docs/PERFORMANCE.md (P1,
# P2, P3, P7a, P7b, P8). Carry both binaries to the GPU machine; a
# workload's host-side input fill costs seconds per run at these shapes.
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 OLD-attnc NEW-attnc [variant:shape ...]" >&2; exit 2; }
old="$(realpath "$1")" new="$(realpath "$2")"
shift 2
cd "$(dirname "$0")/.." || exit 1
rounds="${AB_ROUNDS:-2}"
[ -d /usr/local/cuda/lib64 ] && export LD_LIBRARY_PATH=/usr/local/cuda/lib64
variants=benchmarks/variants
workloads=("$@")
[ ${#workloads[@]} -gt 0 ] || workloads=(
  "$variants/prefill_gqa_causal.mlir:batch=2,q=8192,kv=8192,fixed"
  "$variants/prefill_mha.mlir:batch=2,q=4096,kv=4096,fixed"
  "$variants/prefill_gqa_window.mlir:batch=2,q=8192,kv=8192,fixed"
  "$variants/prefill_mha_d64_causal.mlir:batch=2,q=8192,kv=8192,fixed"
  "$variants/prefill_mha_d256_causal.mlir:batch=2,q=8192,kv=8192,fixed"
  "$variants/prefill_gqa_causal.mlir:batch=16,q=512,kv=512,fixed")
time_of() { # BUILD CACHE VARIANT SHAPE
  XDG_CACHE_HOME="$2" "$1" run "$3" --shape "$4" --iterations 40 |
    sed -n 's/.*time: \([0-9.]*\) ms.*/\1/p'
}
for workload in "${workloads[@]}"; do
  variant="${workload%%:*}" shape="${workload#*:}"
  line="$(basename "$variant" .mlir) $shape:" a=() b=()
  for ((r = 0; r < rounds; ++r)); do
    for which in a b b a; do
      if [ "$which" = a ]; then
        t="$(time_of "$old" /tmp/attnc-ab-a "$variant" "$shape")"
        a+=("$t")
      else
        t="$(time_of "$new" /tmp/attnc-ab-b "$variant" "$shape")"
        b+=("$t")
      fi
      line="$line $which=${t:-failed}"
    done
  done
  ratio="$(printf '%s\n' "${a[@]}" "${b[@]}" | awk -v n="${#a[@]}" '
    NR <= n { sa += $1 } NR > n { sb += $1 }
    END { if (sa > 0) printf "%.3f", (sb / n) / (sa / n) }')"
  echo "$line  B/A ${ratio:-?}"
done
