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
scripts/asan_build.sh xgrad_asan_tests fuzz_targets
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 build-asan/bin/xgrad_asan_tests
fuzz/run.sh build-asan "${XGRAD_FUZZ_SECONDS:-10}"

# The data-parallel tests are registered only in a build that found MPI and its launcher
# (install_deps.sh installs both): a build that lost them would pass without those tests.
listing=$(ctest --test-dir build -N)  # whole, then searched: grep -q closing the pipe early kills ctest (pipefail)
if [[ $listing != *data_parallel_* ]]; then
  echo "test.sh: build/ has no data-parallel tests: its configuration found no MPI library (libopenmpi-dev) or no" \
       "mpiexec (openmpi-bin), or has -DXGRAD_MPI=OFF; scripts/install_deps.sh installs both, then rebuild" >&2
  exit 1
fi
ctest --test-dir build --output-on-failure -j "$(nproc)"
