#!/usr/bin/env bash
# The main job on a bundled example: parse, verify and canonicalize a
# variant written the way reference model code writes GQA, and print it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/bootstrap.sh"
example="${1:-$root/examples/repeat_kv_gqa.mlir}"
echo "== $example, canonicalized:"
"$root/build/bin/attn-opt" "$example" --attn-canonicalize
