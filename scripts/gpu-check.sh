#!/usr/bin/env bash
# Runs every GPU test on the GPU machine, from the binaries built here
# (build/bin, build/lib/libattnc.so): the gtests, every example through
# `attnc run --check`, the Python package's tests (all of them: the GPU
# cases and those needing torch) and its example. With --bench, then the
# peer benchmarks. With --sanitize, instead,
# the gtests under compute-sanitizer's memcheck, racecheck, synccheck and
# initcheck (scripts/gpu-sanitize.sh). Logs go to $OUT (or ./gpu-logs).
set -uo pipefail
mode="${1:-}"
case "$mode" in
  "" | --bench | --sanitize) ;;
  *) echo "usage: $0 [--bench | --sanitize]" >&2; exit 2 ;;
esac
out="${OUT:-gpu-logs}"
mkdir -p "$out"
# NVRTC ships with the CUDA toolkit; PyTorch's wheels carry one too.
for dir in /usr/local/cuda/lib64 \
  "$(python3 -c 'import nvidia.cu13, os; print(os.path.dirname(nvidia.cu13.__file__) + "/lib")' 2>/dev/null)"; do
  [ -d "$dir" ] && export LD_LIBRARY_PATH="$dir:${LD_LIBRARY_PATH:-}"
done
export XDG_CACHE_HOME="${XDG_CACHE_HOME:-/tmp/attnc-cache}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/device.txt"
if [ "$mode" = --sanitize ]; then
  exec "$(dirname "${BASH_SOURCE[0]}")/gpu-sanitize.sh" "$out"
fi
status=0
# The gtests spend most of their time in NVRTC and the CPU reference, not on
# the GPU: gtest's own sharding runs them as parallel processes (the kernel
# cache takes concurrent writers). ATTNC_GPU_TEST_SHARDS=1 runs them as one.
shards="${ATTNC_GPU_TEST_SHARDS:-$(($(nproc) / 2 < 8 ? $(nproc) / 2 : 8))}"
((shards >= 1)) || shards=1
pids=()
for ((i = 0; i < shards; ++i)); do
  GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i build/bin/attnc-gpu-tests \
    >"$out/gpu-tests.shard$i.log" 2>&1 &
  pids+=($!)
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { status=1; echo "gtest shard $i FAILED"; }
done
cat "$out"/gpu-tests.shard*.log >"$out/gpu-tests.log"
grep -hE '^\[  (FAILED|SKIPPED) +\] [^ ]+\.' "$out/gpu-tests.log"
echo "gtests in $shards shards: $(grep -c '^\[       OK \]' "$out/gpu-tests.log") OK," \
  "$(grep -cE '^\[  FAILED  \] [^ ]+ \(' "$out/gpu-tests.log") FAILED," \
  "$(grep -cE '^\[  SKIPPED \] [^ ]+ \(' "$out/gpu-tests.log") SKIPPED"
grep -h '^\[  PASSED  \]' "$out"/gpu-tests.shard*.log
# The serving unit tests hold device-pool cases (the host tier's pinned
# pages and copies) that skip without a GPU: run them here too, all of
# them, as they take seconds.
if [ -x build/bin/attnc-runtime-tests ]; then
  build/bin/attnc-runtime-tests >"$out/runtime-tests.log" 2>&1 ||
    { status=1; echo "runtime tests FAILED"; }
  grep -hE '^\[  (FAILED|SKIPPED) +\] [^ ]+\.|^\[  PASSED  \]' \
    "$out/runtime-tests.log"
fi
# Each example checks itself against the CPU reference; they run side by side.
example_log() { echo "$out/example.$(basename "$1").log"; }
examples=(examples/*.mlir)
example_pids=()
for f in "${examples[@]}"; do
  build/bin/attnc run "$f" --shape batch=4,q=256,kv=1024 --check \
    >"$(example_log "$f")" 2>&1 &
  example_pids+=($!)
done
for i in "${!example_pids[@]}"; do
  wait "${example_pids[$i]}" || { status=1; echo "FAILED: ${examples[$i]}"; }
done
for f in "${examples[@]}"; do cat "$(example_log "$f")"; done |
  tee "$out/examples.log"
grep -q FAIL "$out/examples.log" && status=1
# The GPU machine reaches no registry: pytest may come with the build.
python3 -c "import pytest" 2>/dev/null ||
  export PYTHONPATH="$PWD/build/pytest-vendor${PYTHONPATH:+:$PYTHONPATH}"
# Every Python test, not only those marked gpu: the CPU cases that need
# torch and transformers (the reference engine against generate(), torch
# tensors over step buffers) skip in CI, which has neither.
python3 -m pytest -rs python/tests 2>&1 | tee "$out/pytest-gpu.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
PYTHONPATH=python python3 examples/python_attention.py 2>&1 |
  tee "$out/python-example.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
if [ "$mode" = --bench ]; then
  PYTHONPATH=python python3 benchmarks/bench.py --out "$out/bench" 2>&1 |
    tee "$out/bench.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
exit $status
