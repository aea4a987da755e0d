#!/usr/bin/env bash
# The main job on a bundled example: compile a variant to CUDA C++ and to a
# cubin (timing the frontend and NVRTC), and where a GPU is present run it on
# random inputs and check it against the double-precision reference.
#   scripts/example.sh [variant.mlir] [--shape batch=N,q=N,kv=N]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/bootstrap.sh"
example="${1:-$root/examples/gqa_paged_decode.mlir}"
shape="${2:-batch=8,kv=2048}"
attnc="$root/build/bin/attnc"
out="$root/build/example"
mkdir -p "$out"
name="$(basename "$example" .mlir)"

echo "== $example -> $out/$name.cu"
"$attnc" compile "$example" --emit=cuda -o "$out/$name.cu"
# A fresh cache directory makes the first compile cold and the second a hit.
rm -rf "$out/cache"
echo "== $example -> $out/$name.cubin (sm_90a, cold)"
"$attnc" compile "$example" --emit=cubin --time --cache-dir "$out/cache" \
  -o "$out/$name.cubin"
echo "== the same again, from the on-disk compile cache"
"$attnc" compile "$example" --emit=cubin --time --cache-dir "$out/cache" \
  -o "$out/$name.cubin" 2>&1 | grep "cache hit"
echo "== run on the GPU with --check"
status=0
"$attnc" run "$example" --shape "$shape" --check || status=$?
if [ "$status" -eq 3 ]; then
  echo "(no GPU on this machine: compiled only)"
  exit 0
fi
exit "$status"
