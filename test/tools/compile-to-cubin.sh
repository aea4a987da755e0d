#!/usr/bin/env bash
# Usage: compile-to-cubin.sh ATTNC (DIR | FILE.mlir)...
# Every variant (each DIR's *.mlir, and each FILE) that the GPU pipeline
# supports compiles through NVRTC to an sm_90a cubin, ptxas reports no
# spills, and no wgmma pipeline loss (its C75xx notes: wgmma serialized, or
# warpgroup.arrive/wait injected). Where nvdisasm is found
# (ATTNC_EXTRA_TOOL_DIRS, PATH or the toolkit), the SASS of each sm_90a schedule (warp_specialized, latent)
# must hold HGMMA and wait on the grids before it (ACQBULK), and a plan
# with two query tiles per consumer (q_buffers = 2) must stage its output
# (STSM, and its rows stored as STG.E.128).
# Without NVRTC the test is skipped (exit 77), saying why.
set -u
attnc="$1"; shift
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
nvdisasm=""
IFS=: read -ra extra <<<"${ATTNC_EXTRA_TOOL_DIRS:-}"
for dir in "${extra[@]}" $(dirname "$(command -v nvdisasm 2>/dev/null || echo .)") \
  /usr/local/cuda/bin; do
  if [ -n "$dir" ] && [ -x "$dir/nvdisasm" ]; then nvdisasm="$dir/nvdisasm"; break; fi
done
[ -n "$nvdisasm" ] || echo "no nvdisasm: the SASS is not read (spills still are)"
files=()
for arg in "$@"; do
  if [ -d "$arg" ]; then files+=("$arg"/*.mlir); else files+=("$arg"); fi
done
failed=0; compiled=0; read=0
for f in "${files[@]}"; do
  log=$("$attnc" compile "$f" --arch sm_90a --emit=cubin --cache-dir "$cache" -o "$cache/kernel.cubin" 2>&1)
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
  serialized=$(echo "$log" | grep -E "\(C75[0-9][0-9]\)")
  if [ -n "$serialized" ]; then echo "WGMMA PIPELINE: $f"; echo "$serialized"; failed=1; continue; fi
  compiled=$((compiled + 1))
  if [ -n "$nvdisasm" ]; then
    plans=$("$attnc" compile "$f" --arch sm_90a --emit=gpu -o - 2>/dev/null | grep -o "plan = <[a-z_]*,[^>]*>")
    sass=$("$nvdisasm" "$cache/kernel.cubin" 2>&1)
    # Instructions whose opcode starts with $1 (after the address and
    # any predicate).
    opcodes() { echo "$sass" | grep -cE "\*/ +(@!?U?P[0-9T] +)?$1"; }
    why=""
    # The sm_90a schedules' kernels are launched to overlap the launch
    # before them, so they must wait on the grids before them
    # (griddepcontrol.wait, ACQBULK).
    if echo "$plans" | grep -qE "<(warp_specialized|latent),"; then
      [ "$(opcodes HGMMA)" -gt 0 ] || why="an sm_90a schedule without HGMMA"
      [ "$(opcodes ACQBULK)" -gt 0 ] ||
        why="${why:+$why; }an sm_90a kernel that does not wait on the grids before it (ACQBULK)"
    fi
    if echo "$plans" | grep -q "q_buffers = 2"; then
      [ "$(opcodes STSM)" -gt 0 ] && [ "$(opcodes 'STG\.E\.128')" -gt 0 ] ||
        why="${why:+$why; }q_buffers = 2 without a staged epilogue (STSM, STG.E.128)"
    fi
    if [ -n "$why" ]; then echo "SASS: $f: $why"; failed=1; continue; fi
    read=$((read + 1))
  fi
  echo "ok, no spills: $f"
done
echo "$compiled variants compiled to sm_90a cubins, $read of them read as SASS"
exit $failed
