#!/usr/bin/env bash
# `scripts/gpu-check.sh --sanitize`: the GPU test binary under NVIDIA's
# compute-sanitizer, once per tool:
#   memcheck   out-of-bounds and misaligned device accesses, device-memory
#              leaks, failed CUDA calls
#   racecheck  shared-memory hazards between threads
#   synccheck  barriers used where not every thread reaches them
#   initcheck  device reads of global memory nothing wrote
# Every tool runs every test, the four side by side: on an H100 with a warm
# kernel cache, 123 prefill gtests took 24-42 s per tool, 45 s in all.
# ATTNC_SANITIZE_FILTER (a --gtest_filter) narrows every tool and
# ATTNC_RACECHECK_FILTER racecheck alone, the slowest. Logs go to the folder
# given.
#
# Where compute-sanitizer is missing or cannot start the tests, this says so
# and exits 3: the tests did not run under it, which must not read as a pass.
set -uo pipefail
out="${1:-gpu-logs}"
mkdir -p "$out"
tests=build/bin/attnc-gpu-tests
# Line info in the kernels: a report names the device header and line.
export ATTNC_LINEINFO=1
sanitizer="${COMPUTE_SANITIZER:-/usr/local/cuda/bin/compute-sanitizer}"

unavailable() {
  echo "compute-sanitizer UNAVAILABLE: $*" | tee "$out/compute-sanitizer.txt"
  echo "the GPU tests did NOT run under compute-sanitizer" |
    tee -a "$out/compute-sanitizer.txt"
  exit 3
}
[ -x "$sanitizer" ] || sanitizer="$(command -v compute-sanitizer || true)"
[ -n "$sanitizer" ] && [ -x "$sanitizer" ] ||
  unavailable "not at /usr/local/cuda/bin/compute-sanitizer nor on PATH" \
    "(set COMPUTE_SANITIZER)"
"$sanitizer" --version >"$out/compute-sanitizer.txt" 2>&1 ||
  unavailable "$sanitizer --version fails: $(tail -n 1 "$out/compute-sanitizer.txt")"
grep -m 1 Version "$out/compute-sanitizer.txt"
[ -x "$tests" ] || { echo "no $tests: build it first" >&2; exit 1; }

# One tool over the tests: what it reported, the gtest verdict and its
# summary. Fails on a report, a failed test, or no test run at all (a
# suite skipped without a GPU is no pass).
run_under() { # TOOL TOOL-OPTIONS [gtest arguments]
  local tool="$1" options="$2" log="$out/$1.log"
  shift 2
  local start=$SECONDS rc passed skipped
  # shellcheck disable=SC2086 # the options are words
  "$sanitizer" --tool "$tool" $options --error-exitcode 1 --print-limit 20 \
    "$tests" "$@" >"$log" 2>&1
  rc=$?
  if ! grep -q '^\[==========\] Running' "$log"; then
    tail -n 5 "$log"
    unavailable "$tool did not start the tests (exit $rc, log: $log)"
  fi
  passed="$(grep -c '^\[       OK \]' "$log")"
  skipped="$(grep -c '^\[  SKIPPED \] .* ([0-9]* ms)$' "$log")"
  grep -E '^\[  FAILED  \]|^========= [A-Z]' "$log" |
    grep -v 'SUMMARY\|COMPUTE-SANITIZER' | head -n 30
  grep -E '^\[  PASSED  \]|SUMMARY' "$log"
  echo "$tool: exit $rc, $passed tests passed, $skipped skipped," \
    "$((SECONDS - start)) s (log: $log)"
  ((passed > 0)) || echo "$tool: no test ran under it (no GPU here?)"
  [ "$rc" -eq 0 ] && [ "$passed" -gt 0 ] && [ "$skipped" -eq 0 ]
}

# gpu-check.sh put NVRTC on the library path and chose the kernel cache.
# The tools run side by side (each its own process over the same cache);
# each one's summary prints when all are done, in this order.
filter="${ATTNC_SANITIZE_FILTER:-*}"
tools=(memcheck racecheck synccheck initcheck)
declare -A options=([memcheck]="--leak-check full"
  [racecheck]="--racecheck-report hazard" [synccheck]="" [initcheck]="")
declare -A filters=([racecheck]="${ATTNC_RACECHECK_FILTER:-$filter}")
pids=()
for tool in "${tools[@]}"; do
  run_under "$tool" "${options[$tool]}" \
    --gtest_filter="${filters[$tool]:-$filter}" >"$out/$tool.summary" 2>&1 &
  pids+=($!)
done
status=0
for i in "${!tools[@]}"; do
  wait "${pids[$i]}"
  rc=$?
  echo "== compute-sanitizer ${tools[$i]}"
  cat "$out/${tools[$i]}.summary"
  # run_under exits 3 from its subshell where the tool could not start.
  ((rc == 3)) && unavailable "see $out/${tools[$i]}.summary"
  ((rc == 0)) || status=1
done
echo "compute-sanitizer: $( ((status == 0)) && echo "no errors" || echo FAILED)"
exit $status
