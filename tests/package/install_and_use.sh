#!/usr/bin/env bash
# Installs the build into a temporary prefix, builds tests/package/consumer against it out of the
# tree (find_package(xgrad), target xgrad::xgrad, nothing else), and runs it; then runs the build's
# and the installed bert_finetune from another working directory on the bundled default vocabulary.
#   install_and_use.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
cmake -S "$src/tests/package/consumer" -B "$work/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log" || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
"$work/build/consumer" "$src/tests/data/heads/seq_single" "$src/tests/data/heads/classify_vocab.txt"

# The programs install too, and find their bundled data from any working directory: the default
# vocabulary of a preset, in the build tree and in the installation alike.
printf 'label\ttext\n1\tgood\n0\tbad\n1\tfine\n0\tawful\n' > "$work/train.tsv"
for finetune in "$build/bin/bert_finetune" "$work/prefix/bin/bert_finetune"; do
  (cd "$work" && "$finetune" --train train.tsv --dev train.tsv --steps 1 --threads 1 --output-dir "run$RANDOM" > "$work/ft.log" 2>&1) ||
    { echo "FAIL: $finetune from another working directory:"; cat "$work/ft.log"; exit 1; }
  grep -q "final scores" "$work/ft.log" || { echo "FAIL: $finetune printed no scores"; cat "$work/ft.log"; exit 1; }
done
"$work/prefix/bin/bert_infer" --version | grep -q "^bert_infer (xgrad " || { echo "FAIL: installed bert_infer --version"; exit 1; }
echo "PASS: installed package built against, used from C++, its programs run from another directory"
