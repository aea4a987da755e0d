#!/usr/bin/env bash
# Checks the installed tree as a consumer sees it: installs a built attnc
# (default build/) into a temporary prefix, moves the tree elsewhere (it must
# be relocatable), checks what is there (exactly the package: headers,
# libattnc.so, the CLI, the CMake package, attnc.pc), that every installed
# header compiles alone, that libattnc.so exports the C API and attnc.h's
# classes and nothing else (no LLVM, MLIR or libstdc++), then builds
# test/install's C and C++ consumers with find_package(attnc) and with
# pkg-config and runs them. No GPU needed. Prints one line: ok or what failed.
#
#   scripts/install-check.sh [build-dir]
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)" || exit 1
start=$SECONDS
tmp="$(mktemp -d "${TMPDIR:-/tmp}/attnc-install-check.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
log="$tmp/log"

fail() {
  echo "install-check: FAIL: $1"
  [ -s "$log" ] && tail -n 40 "$log"
  exit 1
}

cached() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
version="$(cached CMAKE_PROJECT_VERSION)"
[ -n "$version" ] || fail "no project version in $build/CMakeCache.txt"
bin="$(cached CMAKE_INSTALL_BINDIR)" lib="$(cached CMAKE_INSTALL_LIBDIR)"
include="$(cached CMAKE_INSTALL_INCLUDEDIR)"
config="$(cached CMAKE_BUILD_TYPE | tr '[:upper:]' '[:lower:]')"

cmake --install "$build" --prefix "$tmp/staged" >"$log" 2>&1 ||
  fail "cmake --install $build failed"
prefix="$tmp/moved"
mv "$tmp/staged" "$prefix"
: >"$log"

# Exactly the package: a new file here is a decision, not an accident.
expected="$(LC_ALL=C sort <<EOF
$bin/attnc
$include/attnc/Status.h
$include/attnc/attnc.h
$include/attnc/attnc_c.h
$include/attnc/attnc_variant_fields.h
$include/attnc/device/abi.h
$include/attnc/device/prelude.h
$lib/cmake/attnc/attncConfig.cmake
$lib/cmake/attnc/attncConfigVersion.cmake
$lib/cmake/attnc/attncTargets-${config:-noconfig}.cmake
$lib/cmake/attnc/attncTargets.cmake
$lib/libattnc.so
$lib/pkgconfig/attnc.pc
EOF
)"
# The prebuilt kernel library, where the build made it (cmake/KernelLibrary.cmake).
if [ -f "$build/lib/attnc-kernels.bin" ] && [ "$(cached ATTNC_KERNEL_LIBRARY)" != OFF ]; then
  expected="$(LC_ALL=C sort <<<"$expected
$lib/attnc-kernels.bin")"
fi
installed="$(cd "$prefix" && find . -type f -o -type l | sed 's|^\./||' | LC_ALL=C sort)"
[ "$installed" = "$expected" ] ||
  fail "the installed files differ from the package's:
$(diff <(echo "$expected") <(echo "$installed"))"
# The text files must not point back at the source or build tree.
if grep -rlF -e "$root" -e "$build" "$prefix/$include" "$prefix/$lib/cmake" \
  "$prefix/$lib/pkgconfig" >"$log"; then
  fail "installed files name the source or build tree"
fi

# Each header alone, with nothing but the installed include dir.
for header in $(cd "$prefix/$include" && find . -name '*.h' | sed 's|^\./||'); do
  echo "#include \"$header\"" | c++ -std=c++17 -fsyntax-only -I"$prefix/$include" \
    -x c++ - >"$log" 2>&1 || fail "$header does not compile alone as C++"
done
echo '#include "attnc/attnc_c.h"' | cc -std=c99 -fsyntax-only \
  -I"$prefix/$include" -x c - >"$log" 2>&1 ||
  fail "attnc/attnc_c.h does not compile alone as C"
# attnc.h refuses the standard libraries whose layouts libattnc.so's C++
# API does not have. Where no libc++ is installed, its headers' macro
# stands in for it.
refused() { # refused FLAG MESSAGE
  if echo '#include "attnc/attnc.h"' | c++ -std=c++17 -fsyntax-only "$1" \
    -I"$prefix/$include" -x c++ - >"$log" 2>&1; then
    fail "attnc.h compiles with $1"
  fi
  grep -qF "$2" "$log" || fail "attnc.h refuses $1 without saying: $2"
}
refused -D_GLIBCXX_DEBUG "cannot be used with _GLIBCXX_DEBUG: libattnc.so is not"
refused -D_LIBCPP_VERSION=220000 "needs libstdc++, libattnc.so's C++ library"
refused -D_GLIBCXX_USE_CXX11_ABI=0 "needs _GLIBCXX_USE_CXX11_ABI=1, as libattnc.so has"

# LLVM, MLIR and libstdc++ are linked in and must stay hidden; of attnc's
# C++ only the public classes' members cross (lib/API/libattnc.map).
nm -D --defined-only "$prefix/$lib/libattnc.so" >"$tmp/symbols" ||
  fail "nm cannot read the installed libattnc.so"
awk '{print $NF}' "$tmp/symbols" | grep -v '^attnc_' | c++filt |
  grep -Ev '^attnc::((Variant|Kernel|Plan|Status)::|toString\(attnc::ErrorCode\))' \
    >"$log"
[ -s "$log" ] && fail "libattnc.so exports more than attnc's API"
grep -q ' attnc_api_version$' "$tmp/symbols" ||
  fail "libattnc.so does not export the C API"

"$prefix/$bin/attnc" --version >"$log" 2>&1 ||
  fail "the installed attnc --version failed"
grep -q "^attnc $version " "$log" ||
  fail "the installed attnc is not version $version"

# find_package(attnc $version EXACT CONFIG).
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake "${generator[@]}" -S "$root/test/install" -B "$tmp/consumer" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  -DATTNC_EXPECT_VERSION="$version" >"$log" 2>&1 ||
  fail "find_package(attnc $version) failed"
cmake --build "$tmp/consumer" >"$log" 2>&1 ||
  fail "the consumers do not build with find_package(attnc)"
for consumer in cxx_consumer c_consumer; do
  "$tmp/consumer/$consumer" >"$log" 2>&1 ||
    fail "$consumer (find_package) failed"
done

# pkg-config, as a Makefile would.
if ! command -v pkg-config >/dev/null; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
  { $sudo apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
      --no-install-recommends pkgconf; } >"$log" 2>&1 ||
    fail "no pkg-config, and apt-get cannot install pkgconf"
fi
export PKG_CONFIG_PATH="$prefix/$lib/pkgconfig"
[ "$(pkg-config --modversion attnc 2>"$log")" = "$version" ] ||
  fail "pkg-config does not give attnc $version"
read -ra flags <<<"$(pkg-config --cflags --libs attnc)"
libdir="$(pkg-config --variable=libdir attnc)"
cc -std=c99 "$root/test/install/consumer.c" "${flags[@]}" -Wl,-rpath,"$libdir" \
  -o "$tmp/c_pc" >"$log" 2>&1 || fail "consumer.c does not build with pkg-config"
c++ -std=c++17 "$root/test/install/consumer.cpp" "${flags[@]}" \
  -Wl,-rpath,"$libdir" -o "$tmp/cxx_pc" >"$log" 2>&1 ||
  fail "consumer.cpp does not build with pkg-config"
for consumer in cxx_pc c_pc; do
  "$tmp/$consumer" >"$log" 2>&1 || fail "$consumer (pkg-config) failed"
done

echo "install-check: ok: attnc $version installed ($(echo "$installed" | wc -l)" \
  "files, relocated), C and C++ consumers built with find_package and" \
  "pkg-config and run, in $((SECONDS - start)) s"
