#!/usr/bin/env bash
# Fine-tuning speed of sentence classification: bert_finetune --benchmark against Hugging Face's
# BertForSequenceClassification on PyTorch 1.13 (bench/finetune_torch.py: the same preset, random
# ids without padding, two labels, dropout on, AdamW, same batch and length), same machine, same
# run; examples/s and the ratio ours / PyTorch's. PyTorch gets its fastest setting
# (bench/torch_blas.sh: OpenBLAS, its best kernel set; the best of 1 or 2 torch threads x 1 or 2
# OpenBLAS threads; the setting that won is printed under each row). HF_PYTHON: a Python with
# transformers over Debian's torch, by default build/venv-ort/bin/python (PyPI's transformers
# 4.45.2 over Debian's python3-torch, made by bench/infer_vs_ort.sh on first use and by
# scripts/install_deps.sh --bench).
#   bench/finetune_vs_torch.sh [MODELS] [BATCH] [SEQ_LEN] [STEPS]      e.g. bench/finetune_vs_torch.sh "tiny mini base" 32 128 5
set -euo pipefail
cd "$(dirname "$0")/.."
models=${1:-"tiny mini base"}
batch=${2:-32}
seq=${3:-128}
steps=${4:-5}
hf_python=${HF_PYTHON:-}
if [[ -z "$hf_python" ]]; then
  [[ -x build/venv-ort/bin/python ]] || { echo "finetune_vs_torch: the peer needs a Python with transformers: set HF_PYTHON, or make" \
    "build/venv-ort (bench/infer_vs_ort.sh does on first use, as does scripts/install_deps.sh --bench)" >&2; exit 1; }
  hf_python=build/venv-ort/bin/python
fi
check=$("$hf_python" -c "import torch, transformers" 2>&1) ||
  { echo "finetune_vs_torch: $hf_python cannot run the peer (import torch, transformers): ${check##*$'\n'}" >&2; exit 1; }
torch_blas_python=$hf_python

source bench/torch_blas.sh  # OpenBLAS and its fastest kernel set for PyTorch; fastest_peer
printf "%-8s %14s %14s %7s %12s %12s\n" model "xgrad ex/s" "torch ex/s" ratio "xgrad MB" "torch MB"
for m in $models; do
  ours=$(build/bin/bert_finetune --benchmark --model "$m" --batch "$batch" --max-len "$seq" --steps "$steps")
  o_eps=$(grep "^examples/s" <<< "$ours" | awk '{print $2}')
  o_mb=$(grep "^peak memory" <<< "$ours" | awk '{print $4}')
  t=$(fastest_peer examples/s "$hf_python" bench/finetune_torch.py --model "$m" --batch "$batch" --seq-len "$seq" --steps "$steps" --threads 1,2)
  t_eps=$(grep "^examples/s" <<< "$t" | awk '{print $2}')
  t_mb=$(grep "^peak memory" <<< "$t" | awk '{print $4}')
  printf "%-8s %14s %14s %7s %12s %12s\n" "$m" "$o_eps" "$t_eps" "$(python3 -c "print(f'{$o_eps / $t_eps:.2f}')")" "$o_mb" "$t_mb"
  setting=$(grep "^setting:" <<< "$t" | tr ' ' '\n')
  echo "  peer: torch $(sed -n 's/^torch=//p' <<< "$setting"), threads $(sed -n 's/^threads=//p' <<< "$setting") intra-op /" \
    "$(sed -n 's/^interop=//p' <<< "$setting") inter-op, OpenBLAS kernels $openblas_kernels, OpenBLAS threads $(grep "^openblas threads" <<< "$t" | awk '{print $NF}')"
done
