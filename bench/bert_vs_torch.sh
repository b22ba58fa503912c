#!/usr/bin/env bash
# bert_pretrain --benchmark against PyTorch 1.13 (Debian python3-torch) training the same model the
# same way (AdamW, MLM at masked positions only, NSP, same batch and length), same machine, same
# run. PyTorch gets its best setting: OpenBLAS as the system BLAS (Debian's torch calls whatever
# libblas.so.3 points to; with only libblas3 installed that is the reference BLAS, about 30x
# slower), the fastest OpenBLAS kernel set that runs on this CPU (a GEMM probe tries the
# auto-detected one, SkylakeX, Zen and Haswell: auto-detection picks SSE3 kernels on some CPUs,
# and SkylakeX dies with SIGILL on others) and the best of torch threads x OpenBLAS threads.
# RoBERTa and ALBERT models (roberta-SIZE, albert-SIZE) run against Hugging Face's
# RobertaForMaskedLM / AlbertForPreTraining (bench/hf_pretrain_torch.py) under $HF_PYTHON, a Python
# with transformers over the same torch.
#   bench/bert_vs_torch.sh [MODELS] [BATCH] [SEQ_LEN] [STEPS]      e.g. bench/bert_vs_torch.sh "mini roberta-mini" 8 128 10
# BASELINE=path/to/another/bert_pretrain adds that build's numbers to the same run (before/after
# a change, on the same machine at the same time).
set -euo pipefail
cd "$(dirname "$0")/.."
models=${1:-"mini base"}
batch=${2:-8}
seq=${3:-128}
steps=${4:-10}
baseline=${BASELINE:-}
hf_python=${HF_PYTHON:-/usr/bin/python3}

blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 || true)
if [[ "$blas" != *openblas* ]]; then
  echo "the system BLAS is $blas, not OpenBLAS: installing libopenblas0-pthread for a fair PyTorch" >&2
  apt-get install -y -qq libopenblas0-pthread >&2 || { echo "install libopenblas0-pthread first (root)" >&2; exit 1; }
fi
# GFLOP/s of a 1024^3 float GEMM on 2 torch threads under a kernel set; 0 when it cannot run here.
probe() {
  OPENBLAS_CORETYPE=$1 /usr/bin/python3 - 2>/dev/null <<'PY' || echo 0
import time, torch
torch.set_num_threads(2)
a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
for _ in range(3): a @ b
t = time.time()
for _ in range(10): a @ b
print(f"{2 * 1024**3 * 10 / (time.time() - t) / 1e9:.1f}")
PY
}
if [[ -z "${OPENBLAS_CORETYPE+set}" ]]; then
  best_core=""; best_gflops=$(probe "")
  for c in SkylakeX Zen Haswell; do
    g=$(probe "$c")
    if python3 -c "import sys; sys.exit(0 if $g > $best_gflops else 1)"; then best_core=$c; best_gflops=$g; fi
  done
  export OPENBLAS_CORETYPE=$best_core
  echo "PyTorch BLAS: $blas, OPENBLAS_CORETYPE='${best_core}' (${best_gflops} GFLOP/s on a 1024^3 GEMM)" >&2
fi
printf "%-12s %14s %14s %7s %12s %12s" model "xgrad tok/s" "torch tok/s" ratio "xgrad MB" "torch MB"
[[ -n "$baseline" ]] && printf " %14s %7s %12s" "baseline tok/s" ratio "baseline MB"
printf "\n"
for m in $models; do
  ours=$(build/bin/bert_pretrain --benchmark --model "$m" --batch "$batch" --seq-len "$seq" --steps "$steps")
  o_tps=$(grep "^tokens/s" <<< "$ours" | awk '{print $2}')
  o_mb=$(grep "^peak memory" <<< "$ours" | awk '{print $4}')
  best=0; best_mb=0
  peer=(/usr/bin/python3 bench/bert_pretrain_torch.py --model "$m")
  [[ "$m" == roberta-* || "$m" == albert-* ]] && peer=("$hf_python" bench/hf_pretrain_torch.py --family "${m%%-*}" --model "${m#*-}")
  for ob in 1 2; do
    t=$(OPENBLAS_NUM_THREADS=$ob "${peer[@]}" --batch "$batch" --seq-len "$seq" --steps "$steps" --threads 1,2)
    tps=$(grep "^tokens/s" <<< "$t" | awk '{print $2}')
    mb=$(grep "^peak memory" <<< "$t" | awk '{print $4}')
    if python3 -c "import sys; sys.exit(0 if $tps > $best else 1)"; then best=$tps; best_mb=$mb; fi
  done
  ratio=$(python3 -c "print(f'{$o_tps / $best:.2f}')")
  printf "%-12s %14s %14s %7s %12s %12s" "$m" "$o_tps" "$best" "$ratio" "$o_mb" "$best_mb"
  if [[ -n "$baseline" ]]; then
    b=$("$baseline" --benchmark --model "$m" --batch "$batch" --seq-len "$seq" --steps "$steps")
    b_tps=$(grep "^tokens/s" <<< "$b" | awk '{print $2}')
    b_mb=$(grep "^peak memory" <<< "$b" | awk '{print $4}')
    printf " %14s %7s %12s" "$b_tps" "$(python3 -c "print(f'{$b_tps / $best:.2f}')")" "$b_mb"
  fi
  printf "\n"
done
