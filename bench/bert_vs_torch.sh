#!/usr/bin/env bash
# bert_pretrain --benchmark against PyTorch 1.13 (Debian python3-torch) training the same model the
# same way (AdamW, also for ALBERT whose recipe is LAMB; MLM at masked positions only, NSP, same
# batch and length), same machine, same run. PyTorch gets its best setting: OpenBLAS as the system
# BLAS (Debian's torch calls whatever libblas.so.3 points to; with only libblas3 installed that is
# the reference BLAS, about 30x slower), the fastest OpenBLAS kernel set that runs on this CPU (a
# GEMM probe tries the auto-detected one, SkylakeX, Zen and Haswell: auto-detection picks SSE3
# kernels on some CPUs, and SkylakeX dies with SIGILL on others) and the best of torch threads x
# OpenBLAS threads.
# RoBERTa and ALBERT models (roberta-SIZE, albert-SIZE) run against Hugging Face's
# RobertaForMaskedLM / AlbertForPreTraining (bench/hf_pretrain_torch.py) under $HF_PYTHON, a Python
# with transformers over the same torch.
#   bench/bert_vs_torch.sh [MODELS] [BATCH] [SEQ_LEN] [STEPS]      e.g. bench/bert_vs_torch.sh "mini roberta-mini" 8 128 10
# BASELINE=path/to/another/bert_pretrain adds that build's numbers to the same run (before/after
# a change, on the same machine at the same time).
# PRECISION=bf16 runs bert_pretrain --precision bf16 and adds PyTorch's own mixed precision (the
# same script under torch.autocast("cpu", bfloat16), oneDNN's bf16 kernels; BERT models only):
# the ratio against PyTorch fp32 and, last, against PyTorch bf16.
set -euo pipefail
cd "$(dirname "$0")/.."
models=${1:-"mini base"}
batch=${2:-8}
seq=${3:-128}
steps=${4:-10}
baseline=${BASELINE:-}
hf_python=${HF_PYTHON:-/usr/bin/python3}
precision=${PRECISION:-fp32}
[[ "$precision" == fp32 || "$precision" == bf16 ]] || { echo "PRECISION must be fp32 or bf16, got $precision" >&2; exit 2; }

source bench/torch_blas.sh  # OpenBLAS and its fastest kernel set for PyTorch; fastest_peer
printf "%-12s %14s %14s %7s %12s %12s" model "xgrad tok/s" "torch tok/s" ratio "xgrad MB" "torch MB"
[[ -n "$baseline" ]] && printf " %14s %7s %12s" "baseline tok/s" ratio "baseline MB"
[[ "$precision" == bf16 ]] && printf " %16s %9s" "torch bf16 tok/s" "ratio bf16"
printf "\n"
for m in $models; do
  ours=$(build/bin/bert_pretrain --benchmark --model "$m" --batch "$batch" --seq-len "$seq" --steps "$steps" --precision "$precision" --optimizer adamw)
  o_tps=$(grep "^tokens/s" <<< "$ours" | awk '{print $2}')
  o_mb=$(grep "^peak memory" <<< "$ours" | awk '{print $4}')
  peer=(/usr/bin/python3 bench/bert_pretrain_torch.py --model "$m")
  [[ "$m" == roberta-* || "$m" == albert-* ]] && peer=("$hf_python" bench/hf_pretrain_torch.py --family "${m%%-*}" --model "${m#*-}")
  t=$(fastest_peer tokens/s "${peer[@]}" --batch "$batch" --seq-len "$seq" --steps "$steps" --threads 1,2)
  best=$(grep "^tokens/s" <<< "$t" | awk '{print $2}')
  best_mb=$(grep "^peak memory" <<< "$t" | awk '{print $4}')
  ratio=$(python3 -c "print(f'{$o_tps / $best:.2f}')")
  printf "%-12s %14s %14s %7s %12s %12s" "$m" "$o_tps" "$best" "$ratio" "$o_mb" "$best_mb"
  if [[ -n "$baseline" ]]; then
    b_precision=(); [[ "$precision" == bf16 ]] && b_precision=(--precision bf16)  # older builds lack the flag
    b=$("$baseline" --benchmark --model "$m" --batch "$batch" --seq-len "$seq" --steps "$steps" --optimizer adamw "${b_precision[@]}")
    b_tps=$(grep "^tokens/s" <<< "$b" | awk '{print $2}')
    b_mb=$(grep "^peak memory" <<< "$b" | awk '{print $4}')
    printf " %14s %7s %12s" "$b_tps" "$(python3 -c "print(f'{$b_tps / $best:.2f}')")" "$b_mb"
  fi
  if [[ "$precision" == bf16 && "$m" != roberta-* && "$m" != albert-* ]]; then
    t=$(fastest_peer tokens/s "${peer[@]}" --batch "$batch" --seq-len "$seq" --steps "$steps" --threads 1,2 --autocast)
    best_bf16=$(grep "^tokens/s" <<< "$t" | awk '{print $2}')
    printf " %16s %9s" "$best_bf16" "$(python3 -c "print(f'{$o_tps / $best_bf16:.2f}')")"
  fi
  printf "\n"
done
