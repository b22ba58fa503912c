#!/usr/bin/env bash
# xgrad's tokenizers against Hugging Face tokenizers (PyPI, Python binding) on the same text, same
# machine, same run: BERT's WordPiece by default, RoBERTa's byte-level BPE with
# VOCAB=data/gpt2-vocab.json (merges from data/gpt2-merges.txt). Needs build/bin/bench_tokenizer;
# makes a venv with tokenizers in build/venv-tokenizers the first time (or set HF_PYTHON to a
# Python that has tokenizers, e.g. one with tokenizers==0.20.3 from PyPI).
#   [VOCAB=...] bench/tokenizer_vs_hf.sh [TEXT] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
text=${1:-tests/data/tokenizer_corpus.txt}
secs=${2:-3}
vocab=${VOCAB:-data/bert-base-uncased-vocab.txt}
py=${HF_PYTHON:-build/venv-tokenizers/bin/python}
if [[ -z "${HF_PYTHON:-}" && ! -x "$py" ]]; then
  python3 -m venv build/venv-tokenizers
  build/venv-tokenizers/bin/pip install --quiet tokenizers==0.23.2
fi
ours=$(build/bin/bench_tokenizer "$vocab" "$text" --seconds "$secs")
hf1=$(RAYON_NUM_THREADS=1 "$py" tools/bench_tokenizer_hf.py "$vocab" "$text" "$secs")
hfn=$("$py" tools/bench_tokenizer_hf.py "$vocab" "$text" "$secs")
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
