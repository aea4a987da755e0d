#!/usr/bin/env bash
# Usage: compile-to-cubin.sh ATTNC (DIR | FILE.mlir)...
# Every variant (each DIR's *.mlir, and each FILE) that the GPU pipeline
# supports compiles through NVRTC to an sm_90a cubin, and ptxas reports no
# spills. Without NVRTC the test is skipped (exit 77), saying why.
set -u
attnc="$1"; shift
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
files=()
for arg in "$@"; do
  if [ -d "$arg" ]; then files+=("$arg"/*.mlir); else files+=("$arg"); fi
done
failed=0; compiled=0
for f in "${files[@]}"; do
  log=$("$attnc" compile "$f" --arch sm_90a --emit=cubin --cache-dir "$cache" -o /dev/null 2>&1)
  status=$?
  if echo "$log" | grep -q "NVRTC is needed"; then
    echo "SKIPPED: no NVRTC on this machine"; exit 77
  fi
  if echo "$log" | grep -q "cannot be compiled for the GPU yet"; then
    echo "unsupported (named): $f"; continue
  fi
  if [ $status -ne 0 ]; then echo "FAILED: $f"; echo "$log"; failed=1; continue; fi
  spills=$(echo "$log" | grep -E "bytes spill" | grep -v " 0 bytes spill stores, 0 bytes spill loads")
  if [ -n "$spills" ]; then echo "SPILLS: $f"; echo "$spills"; failed=1; continue; fi
  compiled=$((compiled + 1)); echo "ok, no spills: $f"
done
echo "$compiled variants compiled to sm_90a cubins"
exit $failed
