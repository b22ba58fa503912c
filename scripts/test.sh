#!/usr/bin/env bash
# Quick start, part 2: install what is missing, build, run the whole test suite under ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
