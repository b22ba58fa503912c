#!/usr/bin/env bash
# Configures build-asan (clang, ASan + UBSan, libFuzzer coverage) and builds the given targets.
# scripts/test.sh and fuzz/run_long.sh share it, so both use (and reuse) the same objects.
#   scripts/asan_build.sh TARGET...
set -euo pipefail
cd "$(dirname "$0")/.."
# A build-asan configured earlier with another compiler is configured afresh.
grep -qs 'CMAKE_CXX_COMPILER:.*clang' build-asan/CMakeCache.txt || rm -rf build-asan/CMakeCache.txt build-asan/CMakeFiles
# -O1 with line tables only: sanitizer reports keep file:line, and the build takes far less time than
# -O2 -g (the two builds are most of the test command's time on two cores).
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DCMAKE_CXX_COMPILER=clang++ -DXGRAD_FUZZ=ON -DXGRAD_BUILD_BENCH=OFF > /dev/null
cmake --build build-asan --target "$@"
