#!/usr/bin/env bash
# xgrad's BERT tokenizer against Hugging Face tokenizers 0.23.2 (Node binding) on the same text,
# same machine, same run. Needs build/bin/bench_tokenizer and Node.js (npm install in tools/hf).
#   bench/tokenizer_vs_hf.sh [TEXT] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
text=${1:-tests/data/tokenizer_corpus.txt}
secs=${2:-3}
vocab=data/bert-base-uncased-vocab.txt
[[ -d tools/hf/node_modules/tokenizers ]] || (cd tools/hf && npm install --silent)
ours=$(build/bin/bench_tokenizer "$vocab" "$text" --seconds "$secs")
hf1=$(RAYON_NUM_THREADS=1 node tools/hf/bench_tokenizer.mjs "$vocab" "$text" "$secs")
hfn=$(node tools/hf/bench_tokenizer.mjs "$vocab" "$text" "$secs")
echo "$ours"
echo "HF, 1 thread:   $hf1" | tr '\n' ' '; echo
echo "HF, all threads: $hfn" | tr '\n' ' '; echo
o1=$(grep "1 thread" <<< "$ours" | awk '{print $NF}')
on=$(grep "threads:" <<< "$ours" | awk '{print $NF}')
h1=$(grep "1 line at a time" <<< "$hf1" | awk '{print $NF}')
hb1=$(grep "encodeBatch" <<< "$hf1" | awk '{print $NF}')
hbn=$(grep "encodeBatch" <<< "$hfn" | awk '{print $NF}')
python3 - "$o1" "$on" "$h1" "$hb1" "$hbn" <<'PY'
import sys
o1, on, h1, hb1, hbn = map(float, sys.argv[1:])
print(f"ratio 1 thread (xgrad / HF best of line-at-a-time and batch on 1 thread): {o1 / max(h1, hb1):.2f}")
print(f"ratio all threads (xgrad batch / HF encodeBatch): {on / hbn:.2f}")
PY
