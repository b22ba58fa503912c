#!/usr/bin/env bash
# Configures (Release, tuned for this CPU) and builds everything into build/; binaries in build/bin/.
# Extra arguments go to cmake, e.g. scripts/build.sh -DXGRAD_NATIVE=OFF for portable code.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" > /dev/null
cmake --build build
