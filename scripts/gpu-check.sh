#!/usr/bin/env bash
# Runs every GPU test on the GPU machine, from the binaries built here
# (build/bin, build/lib/libattnc.so): the gtests, every example through
# `attnc run --check`, the Python package's tests (pytest -m gpu) and its
# example. With --bench, then the peer benchmarks. With --sanitize, instead,
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
build/bin/attnc-gpu-tests 2>&1 | tee "$out/gpu-tests.log" || status=1
for f in examples/*.mlir; do
  build/bin/attnc run "$f" --shape batch=4,q=256,kv=1024 --check 2>&1
done | tee "$out/examples.log"
grep -q FAIL "$out/examples.log" && status=1
# The GPU machine reaches no registry: pytest may come with the build.
python3 -c "import pytest" 2>/dev/null ||
  export PYTHONPATH="$PWD/build/pytest-vendor${PYTHONPATH:+:$PYTHONPATH}"
python3 -m pytest -rs -m gpu python/tests 2>&1 | tee "$out/pytest-gpu.log"
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
