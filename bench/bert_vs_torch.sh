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
# REPEATS=N (default 1) measures N rounds per model: PyTorch's fastest setting is picked as above
# first, then each round runs xgrad and that setting once (with N > 1 the picking runs are not
# rounds: the best of four runs would favour the peer; the peak memory shown is round 1's). Each
# column is the median over the rounds, each ratio the median of the rounds' ratios (every round's
# ratios are printed below its row): on a shared machine one run moves by 10-15%.
set -euo pipefail
cd "$(dirname "$0")/.."
models=${1:-"mini base"}
batch=${2:-8}
seq=${3:-128}
steps=${4:-10}
baseline=${BASELINE:-}
hf_python=${HF_PYTHON:-/usr/bin/python3}
precision=${PRECISION:-fp32}
repeats=${REPEATS:-1}
[[ "$precision" == fp32 || "$precision" == bf16 ]] || { echo "PRECISION must be fp32 or bf16, got $precision" >&2; exit 2; }
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || { echo "REPEATS must be a positive integer, got $repeats" >&2; exit 2; }

source bench/torch_blas.sh  # OpenBLAS and its fastest kernel set for PyTorch; fastest_peer
field() { grep "^$1" <<< "$2" | awk '{print $NF}'; }  # the value of a "KEY ... X" line
# The torch thread count of a peer's fastest "threads T: X tokens/s" line.
fastest_threads() { awk '/^threads /{ if ($3 + 0 > best) { best = $3 + 0; t = $2 } } END { sub(":", "", t); print t }' <<< "$1"; }
median() { python3 -c "import statistics, sys; print(f'{statistics.median(map(float, sys.argv[2:])):.{sys.argv[1]}f}')" "$@"; }
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }
# One PyTorch run of round ROUND into $peer_out: `peer` with this run's shape and EXTRA_ARGS, at the
# setting picked for KEY (fp32 or autocast) in round 1, where fastest_peer tries torch threads 1
# and 2 under OpenBLAS threads 1 and 2 and the fastest pair is kept in picked[KEY]. With
# REPEATS > 1, round 1 then reruns that pair, so that no round is a best of four.
declare -A picked
peer_round() {  # KEY ROUND [EXTRA_ARGS...]
  local key=$1 round=$2 threads ob
  shift 2
  local run=("${peer[@]}" --batch "$batch" --seq-len "$seq" --steps "$steps" "$@")
  if (( round == 1 )); then
    peer_out=$(fastest_peer tokens/s "${run[@]}" --threads 1,2)
    picked[$key]="$(fastest_threads "$peer_out") $(field "openblas threads" "$peer_out")"
    (( repeats == 1 )) && return
  fi
  read -r threads ob <<< "${picked[$key]}"
  peer_out=$(OPENBLAS_NUM_THREADS=$ob "${run[@]}" --threads "$threads")
}

printf "%-12s %14s %14s %7s %12s %12s" model "xgrad tok/s" "torch tok/s" ratio "xgrad MB" "torch MB"
[[ -n "$baseline" ]] && printf " %14s %7s %12s" "baseline tok/s" ratio "baseline MB"
[[ "$precision" == bf16 ]] && printf " %16s %9s" "torch bf16 tok/s" "ratio bf16"
printf "\n"
for m in $models; do
  peer=(/usr/bin/python3 bench/bert_pretrain_torch.py --model "$m")
  [[ "$m" == roberta-* || "$m" == albert-* ]] && peer=("$hf_python" bench/hf_pretrain_torch.py --family "${m%%-*}" --model "${m#*-}")
  autocast=false
  [[ "$precision" == bf16 && "$m" != roberta-* && "$m" != albert-* ]] && autocast=true
  b_precision=(); [[ "$precision" == bf16 ]] && b_precision=(--precision bf16)  # older builds lack the flag
  ours_tps=(); torch_tps=(); base_tps=(); bf16_tps=(); ratios=(); base_ratios=(); bf16_ratios=()
  for ((round = 1; round <= repeats; ++round)); do
    ours=$(build/bin/bert_pretrain --benchmark --model "$m" --batch "$batch" --seq-len "$seq" --steps "$steps" --precision "$precision" --optimizer adamw)
    ours_tps+=("$(field tokens/s "$ours")")
    peer_round fp32 "$round"
    torch_tps+=("$(field tokens/s "$peer_out")")
    if (( round == 1 )); then o_mb=$(field "peak memory" "$ours"); t_mb=$(field "peak memory" "$peer_out"); fi
    ratios+=("$(ratio "${ours_tps[-1]}" "${torch_tps[-1]}")")
    if [[ -n "$baseline" ]]; then
      b=$("$baseline" --benchmark --model "$m" --batch "$batch" --seq-len "$seq" --steps "$steps" --optimizer adamw "${b_precision[@]}")
      base_tps+=("$(field tokens/s "$b")")
      if (( round == 1 )); then b_mb=$(field "peak memory" "$b"); fi
      base_ratios+=("$(ratio "${base_tps[-1]}" "${torch_tps[-1]}")")
    fi
    if $autocast; then
      peer_round autocast "$round" --autocast
      bf16_tps+=("$(field tokens/s "$peer_out")")
      bf16_ratios+=("$(ratio "${ours_tps[-1]}" "${bf16_tps[-1]}")")
    fi
  done
  printf "%-12s %14s %14s %7s %12s %12s" "$m" "$(median 1 "${ours_tps[@]}")" "$(median 1 "${torch_tps[@]}")" \
    "$(median 2 "${ratios[@]}")" "$o_mb" "$t_mb"
  if [[ -n "$baseline" ]]; then printf " %14s %7s %12s" "$(median 1 "${base_tps[@]}")" "$(median 2 "${base_ratios[@]}")" "$b_mb"; fi
  if $autocast; then printf " %16s %9s" "$(median 1 "${bf16_tps[@]}")" "$(median 2 "${bf16_ratios[@]}")"; fi
  printf "\n"
  if (( repeats > 1 )); then
    echo "  ratio per round: ${ratios[*]}"
    if [[ -n "$baseline" ]]; then echo "  baseline ratio per round: ${base_ratios[*]}"; fi
    if $autocast; then echo "  ratio to bf16 per round: ${bf16_ratios[*]}"; fi
  fi
done
