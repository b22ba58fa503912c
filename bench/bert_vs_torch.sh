#!/usr/bin/env bash
# bert_pretrain --benchmark against PyTorch 1.13 (Debian python3-torch) training the same model the
# same way (AdamW, MLM at masked positions only, NSP, same batch and length), same machine, same
# run. PyTorch gets its best setting: OpenBLAS's AVX-512 kernels (Debian's OpenBLAS 0.3.21 falls
# back to SSE3 on Sapphire Rapids otherwise) and the best of torch threads x OpenBLAS threads.
#   bench/bert_vs_torch.sh [MODELS] [BATCH] [SEQ_LEN] [STEPS]      e.g. bench/bert_vs_torch.sh "mini base" 8 128 10
# BASELINE=path/to/another/bert_pretrain adds that build's numbers to the same run (before/after
# a change, on the same machine at the same time).
set -euo pipefail
cd "$(dirname "$0")/.."
models=${1:-"mini base"}
batch=${2:-8}
seq=${3:-128}
steps=${4:-10}
baseline=${BASELINE:-}
printf "%-6s %14s %14s %7s %12s %12s" model "xgrad tok/s" "torch tok/s" ratio "xgrad MB" "torch MB"
[[ -n "$baseline" ]] && printf " %14s %7s %12s" "baseline tok/s" ratio "baseline MB"
printf "\n"
for m in $models; do
  ours=$(build/bin/bert_pretrain --benchmark --model "$m" --batch "$batch" --seq-len "$seq" --steps "$steps")
  o_tps=$(grep "^tokens/s" <<< "$ours" | awk '{print $2}')
  o_mb=$(grep "^peak memory" <<< "$ours" | awk '{print $4}')
  best=0; best_mb=0
  for ob in 1 2; do
    t=$(OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SkylakeX} OPENBLAS_NUM_THREADS=$ob \
        /usr/bin/python3 bench/bert_pretrain_torch.py --model "$m" --batch "$batch" --seq-len "$seq" --steps "$steps" --threads 1,2)
    tps=$(grep "^tokens/s" <<< "$t" | awk '{print $2}')
    mb=$(grep "^peak memory" <<< "$t" | awk '{print $4}')
    if python3 -c "import sys; sys.exit(0 if $tps > $best else 1)"; then best=$tps; best_mb=$mb; fi
  done
  ratio=$(python3 -c "print(f'{$o_tps / $best:.2f}')")
  printf "%-6s %14s %14s %7s %12s %12s" "$m" "$o_tps" "$best" "$ratio" "$o_mb" "$best_mb"
  if [[ -n "$baseline" ]]; then
    b=$("$baseline" --benchmark --model "$m" --batch "$batch" --seq-len "$seq" --steps "$steps")
    b_tps=$(grep "^tokens/s" <<< "$b" | awk '{print $2}')
    b_mb=$(grep "^peak memory" <<< "$b" | awk '{print $4}')
    printf " %14s %7s %12s" "$b_tps" "$(python3 -c "print(f'{$b_tps / $best:.2f}')")" "$b_mb"
  fi
  printf "\n"
done
