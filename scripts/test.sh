#!/usr/bin/env bash
# Quick start, part 2: install what is missing, build, run the whole test suite.
# First the file-parsing, untrusted-text, error-path and engine tests under AddressSanitizer +
# UBSan (a corrupt checkpoint or bad UTF-8 must give an error, never a memory fault), then every
# test under ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh

cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DXGRAD_SANITIZE=ON \
  -DXGRAD_BUILD_BENCH=OFF > /dev/null
cmake --build build-asan --target xgrad_asan_tests
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 build-asan/bin/xgrad_asan_tests

ctest --test-dir build --output-on-failure -j "$(nproc)"
