#!/usr/bin/env bash
# Runs the unit and API tests (ctest -L unit: attnc-runtime-tests and
# attnc-api-tests, which loads libattnc.so) under AddressSanitizer,
# LeakSanitizer and UndefinedBehaviorSanitizer, from build-asan (clang-22,
# -DATTNC_SANITIZE=address,undefined; built when needed). Any report fails
# the test that made it.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/instrumented-build.sh" build-asan \
  -DATTNC_SANITIZE=address,undefined attnc-runtime-tests attnc-api-tests ||
  exit 1
# allocator_may_return_null: the tests check that a failed host allocation
# (new (std::nothrow) of an absurd size) is an error value, as it is
# without ASan, which would otherwise abort on the size.
export ASAN_OPTIONS="allocator_may_return_null=1:detect_stack_use_after_return=1:strict_string_checks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
ctest --test-dir "$root/build-asan" --output-on-failure -L unit
