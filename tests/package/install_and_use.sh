#!/usr/bin/env bash
# Installs the build into a temporary prefix, builds tests/package/consumer against it out of the
# tree (find_package(xgrad), target xgrad::xgrad, nothing else), and runs it.
#   install_and_use.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
cmake -S "$src/tests/package/consumer" -B "$work/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log" || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
"$work/build/consumer" "$src/tests/data/heads/seq_single" "$src/tests/data/heads/classify_vocab.txt"
