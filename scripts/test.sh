#!/usr/bin/env bash
# Builds attnc and runs every test: the lit suite, then the remaining ctest
# tests (unit tests, generated-docs checks, the fuzz regression inputs; GPU
# tests skip without a GPU), then the installed tree's check
# (scripts/install-check.sh: C and C++ consumers built against it with
# find_package and pkg-config) and the Python wheel's
# (scripts/wheel-check.sh), then the Python package's tests; then, in
# their own instrumented builds (docs/TESTING.md), a bounded fuzz run under
# ASan and UBSan, and the unit and API tests under ASan and UBSan.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Each section's wall time, printed at the end: CI must stay well under its
# 90 minutes, and this says where they go.
times="" last=$SECONDS
lap() { times+="$1 $((SECONDS - last)) s, " && last=$SECONDS; }
"$root/scripts/bootstrap.sh" || exit 1
# The Hopper SASS check (ctest hopper-blocks-sass) reads cubins with
# nvdisasm; where the toolkit has none, NVIDIA's PyPI wheel brings it into
# build/cuda-tools (where the check looks). Without it the check skips.
tools="$root/build/cuda-tools"
if ! command -v nvdisasm >/dev/null && [ ! -x /usr/local/cuda/bin/nvdisasm ] &&
  [ ! -x "$tools/nvidia/cu13/bin/nvdisasm" ]; then
  python3 -m pip install --quiet --target "$tools" "nvidia-cuda-nvdisasm>=13,<14" ||
    echo "attnc: no nvdisasm; the Hopper SASS check will be skipped"
fi
lap build

status=0
echo "== lit"
/usr/lib/llvm-22/bin/lit -sv "$root/build/test" || status=1
lap lit
echo "== ctest"
ctest --test-dir "$root/build" --output-on-failure -LE lit || status=1
lap ctest
echo "== install (cmake --install into a temporary prefix; consumers built against it)"
"$root/scripts/install-check.sh" "$root/build" || status=1
lap install
echo "== wheel (built outside the checkout, imported from where it unpacks)"
"$root/scripts/wheel-check.sh" || status=1
lap wheel
echo "== pytest (python/tests; GPU cases skip with their reason)"
python="$(command -v python3)"
if ! "$python" -c "import pytest" 2>/dev/null; then
  "$python" -m pip install --quiet pytest 2>/dev/null || {
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
      --no-install-recommends python3-pytest >/dev/null
    python=/usr/bin/python3
  }
fi
(cd "$root/python" && "$python" -m pytest -rs tests) || status=1
lap pytest
echo "== fuzz (build-fuzz: regression inputs, then 40 s of each fuzz target)"
"$root/scripts/fuzz.sh" --ci 40 || status=1
lap "fuzz (build included)"
echo "== sanitizers (build-asan: ctest -L unit under ASan and UBSan)"
"$root/scripts/sanitize.sh" || status=1
lap "sanitizers (build included)"
echo "== times: ${times}total ${SECONDS} s"
exit $status
