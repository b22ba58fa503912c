#!/usr/bin/env bash
# Quick start, part 2: install what is missing, build, run the whole test suite.
# First the file-parsing, untrusted-text, error-path and engine tests under AddressSanitizer +
# UBSan (a corrupt checkpoint or bad UTF-8 must give an error, never a memory fault), then each
# libFuzzer target briefly over its committed corpus, then every test under ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh

# One clang configuration builds the sanitizer tests and the fuzz targets from the same objects.
# A build-asan configured earlier with another compiler is configured afresh.
grep -qs 'CMAKE_CXX_COMPILER:.*clang' build-asan/CMakeCache.txt || rm -rf build-asan/CMakeCache.txt build-asan/CMakeFiles
# -O1 with line tables only: sanitizer reports keep file:line, and the build takes far less time than
# -O2 -g (the two builds are most of the CI's time on two cores).
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DCMAKE_CXX_COMPILER=clang++ -DXGRAD_FUZZ=ON -DXGRAD_BUILD_BENCH=OFF > /dev/null
cmake --build build-asan --target xgrad_asan_tests fuzz_targets
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 build-asan/bin/xgrad_asan_tests
fuzz/run.sh build-asan "${XGRAD_FUZZ_SECONDS:-10}"

ctest --test-dir build --output-on-failure -j "$(nproc)"
