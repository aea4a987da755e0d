#!/usr/bin/env bash
# Times attn-plan's tuning knobs on the GPU, all in one run so the times
# compare: prefill warps per CTA on P1's shape, decode pipeline stages on
# D1's. Prints one line per setting.
set -uo pipefail
cd "$(dirname "$0")/.."
export XDG_CACHE_HOME="${XDG_CACHE_HOME:-/tmp/attnc-cache}"
[ -d /usr/local/cuda/lib64 ] && export LD_LIBRARY_PATH=/usr/local/cuda/lib64
time_of() { build/bin/attnc run "$@" --iterations 20 | sed -n 's/.*time: //p'; }
for warps in 4 8; do  # 8 is the planner's choice
  echo "P1 prefill-warps=$warps: $(time_of benchmarks/variants/prefill_gqa_causal.mlir \
    --shape batch=2,q=8192,kv=8192,fixed --prefill-warps $warps)"
done
for stages in 2 3 4; do  # 3 is the planner's choice
  echo "D1 decode-stages=$stages: $(time_of benchmarks/variants/decode_gqa.mlir \
    --shape batch=64,kv=4096,fixed --decode-stages $stages)"
done
