#!/usr/bin/env bash
# Fine-tuning speed of sentence classification: bert_finetune --benchmark against Hugging Face's
# BertForSequenceClassification (bench/finetune_torch.py: the same preset, random ids without
# padding, two labels, dropout on, AdamW, same batch and length), same machine, same run;
# examples/s and the ratio ours / PyTorch's. PyTorch gets its fastest setting: each Python with
# transformers (bench/peer_pythons.sh: $HF_PYTHON, or build/venv-ort, Debian's 1.13, and
# build/venv-torch2, PyPI's 2.15) searches torch threads 1 and 2, then AdamW's implementations;
# a torch 1.x, which calls the system BLAS, does so under 1 and under 2 OpenBLAS threads with its
# fastest kernel set (bench/torch_blas.sh). The fastest run is the peer; the line under each row
# names it and every Python's best.
#   bench/finetune_vs_torch.sh [MODELS] [BATCH] [SEQ_LEN] [STEPS]      e.g. bench/finetune_vs_torch.sh "tiny mini base" 32 128 5
set -euo pipefail
cd "$(dirname "$0")/.."
models=${1:-"tiny mini base"}
batch=${2:-32}
seq=${3:-128}
steps=${4:-5}
source bench/peer_pythons.sh  # hf_peer_pythons, use_openblas_for, field, kv, greater, blas_description
hf_peer_pythons
use_openblas_for "${hf_pythons[@]}"  # OpenBLAS and its fastest kernel set for PyTorch 1.x; fastest_peer
printf "%-8s %14s %14s %7s %12s %12s\n" model "xgrad ex/s" "torch ex/s" ratio "xgrad MB" "torch MB"
for m in $models; do
  ours=$(build/bin/bert_finetune --benchmark --model "$m" --batch "$batch" --max-len "$seq" --steps "$steps")
  o_eps=$(field examples/s "$ours")
  o_mb=$(field "peak memory" "$ours")
  best=0 t="" tried="" t_py=""
  for py in "${hf_pythons[@]}"; do
    run=("$py" bench/finetune_torch.py --model "$m" --batch "$batch" --seq-len "$seq" --steps "$steps" --threads 1,2)
    if [[ "${py_blas[$py]}" == generic ]]; then out=$(fastest_peer examples/s "${run[@]}" || true); else out=$("${run[@]}" || true); fi
    eps=$(field examples/s "$out" || true)
    if [[ -z "$eps" ]]; then
      echo "finetune_vs_torch: the peer failed under $py: ${run[*]:1}" >&2
      tried+="${tried:+, }torch ${py_torch[$py]} failed"
      continue
    fi
    tried+="${tried:+, }torch ${py_torch[$py]} $eps"
    if greater "$eps" "$best"; then best=$eps; t=$out; t_py=$py; fi
  done
  [[ "$best" != 0 ]] || { echo "finetune_vs_torch: no PyTorch peer ran for $m" >&2; exit 1; }
  t_mb=$(field "peak memory" "$t")
  printf "%-8s %14s %14s %7s %12s %12s\n" "$m" "$o_eps" "$best" "$(python3 -c "print(f'{$o_eps / $best:.2f}')")" "$o_mb" "$t_mb"
  s=$(grep "^setting:" <<< "$t")
  echo "  peer: torch $(kv torch "$s") ($t_py), threads $(kv threads "$s") intra-op / $(kv interop "$s") inter-op," \
    "$(blas_description "$s" "$(field "openblas threads" "$t" || true)")," \
    "attention $(kv attention "$s"), AdamW $(kv optimizer "$s"); best examples/s per peer: $tried"
done
