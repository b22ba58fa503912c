#!/usr/bin/env bash
# bert_pretrain --benchmark against PyTorch training the same model the same way (AdamW, also for
# ALBERT whose recipe is LAMB; dropout 0.1 where BERT has it; MLM at masked positions only, NSP,
# same batch and length), same machine, same run. PyTorch gets its fastest setting: each peer Python
# in $PEER_PYTHONS (default: Debian's python3-torch 1.13 as /usr/bin/python3, and
# build/venv-torch2/bin/python, PyPI's PyTorch 2.x made by scripts/install_deps.sh --bench, when
# each is there) searches its best of torch threads 1 and 2, then of AdamW's implementations
# (fused where that torch has it on CPU, foreach, the single-tensor loop), then of the attention
# paths (F.scaled_dot_product_attention on 2.x, the explicit softmax) (bench/bert_pretrain_torch.py,
# bench/torch_peer.py); a torch 1.x, which calls the system BLAS, runs that search under 1 and under
# 2 OpenBLAS threads, with OpenBLAS installed and its fastest kernel set that runs on this CPU
# (bench/torch_blas.sh: a GEMM probe of the auto-detected one, SkylakeX, Zen and Haswell;
# auto-detection picks SSE3 kernels on some CPUs, and SkylakeX dies with SIGILL on others). The
# fastest of all those runs is the peer. Below each row a line names it: torch version and Python,
# intra-op / inter-op threads, BLAS (OpenBLAS kernel set and threads for 1.x), attention path and
# AdamW implementation, and each Python's best figure.
# RoBERTa and ALBERT models (roberta-SIZE, albert-SIZE) run against Hugging Face's
# RobertaForMaskedLM / AlbertForPreTraining (bench/hf_pretrain_torch.py) under $HF_PYTHON (one or
# more Pythons with transformers, searched the same way; default: build/venv-ort, Debian's 1.13
# with PyPI's transformers 4.45.2, and build/venv-torch2, PyPI's PyTorch 2.15 with transformers
# 5.25, each when it is there; scripts/install_deps.sh --bench makes both).
#   bench/bert_vs_torch.sh [MODELS] [BATCH] [SEQ_LEN] [STEPS]      e.g. bench/bert_vs_torch.sh "mini roberta-mini" 8 128 10
# BASELINE=path/to/another/bert_pretrain adds that build's numbers to the same run (before/after
# a change, on the same machine at the same time).
# PRECISION=bf16 runs bert_pretrain --precision bf16 and adds PyTorch's own mixed precision (the
# same script under torch.autocast("cpu", bfloat16), oneDNN's bf16 kernels; BERT models only):
# the ratio against PyTorch fp32 and, last, against PyTorch bf16.
# REPEATS=N (default 1) measures N rounds per model: PyTorch's fastest setting is picked as above
# first, then each round runs xgrad and that setting once (with N > 1 the picking runs are not
# rounds: the best of several runs would favour the peer; the peak memory shown is round 1's). Each
# column is the median over the rounds, each ratio the median of the rounds' ratios (every round's
# ratios are printed below its row): on a shared machine one run moves by 10-15%.
# PEER_THREADS (default 1,2): the torch thread counts the peers try.
set -euo pipefail
cd "$(dirname "$0")/.."
models=${1:-"mini base"}
batch=${2:-8}
seq=${3:-128}
steps=${4:-10}
baseline=${BASELINE:-}
precision=${PRECISION:-fp32}
repeats=${REPEATS:-1}
peer_threads=${PEER_THREADS:-1,2}
[[ "$precision" == fp32 || "$precision" == bf16 ]] || { echo "PRECISION must be fp32 or bf16, got $precision" >&2; exit 2; }
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || { echo "REPEATS must be a positive integer, got $repeats" >&2; exit 2; }
[[ "$peer_threads" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || { echo "PEER_THREADS must be a list like 1,2, got $peer_threads" >&2; exit 2; }

source bench/peer_pythons.sh  # peer_python_check, hf_peer_pythons, use_openblas_for, field, kv, greater, ...
hf_model() { [[ "$1" == roberta-* || "$1" == albert-* ]]; }  # a row against Hugging Face's model
any_model() {  # hf|bert: whether $models has a row of that kind
  local m
  for m in $models; do if hf_model "$m"; then [[ $1 == hf ]] && return 0; else [[ $1 == bert ]] && return 0; fi; done
  return 1
}
if [[ -n "${PEER_PYTHONS:-}" ]]; then
  read -ra bert_pythons <<< "$PEER_PYTHONS"
else
  bert_pythons=()
  /usr/bin/python3 -c "import torch" 2>/dev/null && bert_pythons+=(/usr/bin/python3)
  [[ -x build/venv-torch2/bin/python ]] && bert_pythons+=(build/venv-torch2/bin/python)
fi
hf_pythons=()
if any_model hf; then hf_peer_pythons; fi
if any_model bert; then
  (( ${#bert_pythons[@]} )) || { echo "bert_vs_torch: no PyTorch peer: install python3-torch (scripts/install_deps.sh --bench) or set PEER_PYTHONS" >&2; exit 1; }
  for py in "${bert_pythons[@]}"; do peer_python_check "$py" torch BERT; done
fi
all_pythons=("${bert_pythons[@]}" "${hf_pythons[@]}")
use_openblas_for "${all_pythons[@]}"  # OpenBLAS and its fastest kernel set for PyTorch 1.x
for py in "${all_pythons[@]}"; do
  if [[ -n "${py_torch[$py]:-}" ]]; then echo "PyTorch peer: $py, torch ${py_torch[$py]}, BLAS ${py_blas[$py]}"; fi
done | sort -u

median() { python3 -c "import statistics, sys; print(f'{statistics.median(map(float, sys.argv[2:])):.{sys.argv[1]}f}')" "$@"; }
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }
# One run of the peer: PYTHON, OpenBLAS threads (empty for a torch that does not use OpenBLAS), the
# script and its arguments.
peer_run() {
  local py=$1 ob=$2
  shift 2
  if [[ -n "$ob" ]]; then OPENBLAS_NUM_THREADS=$ob "$py" "$@"; else "$py" "$@"; fi
}
# One PyTorch run of round ROUND into $peer_out: the peer script and EXTRA_ARGS with this run's
# shape, at the setting picked for KEY (fp32 or autocast) in round 1, where each of $pythons
# searches its fastest setting (under 1 and 2 OpenBLAS threads for a torch over the system BLAS)
# and the fastest run is kept: its Python and OpenBLAS threads in picked_py/picked_ob[KEY], its
# "setting:" line in picked[KEY], every run's figure in tried[KEY]. With REPEATS > 1, round 1
# then reruns that setting alone, so that no round is a best of several.
declare -A picked picked_py picked_ob tried
peer_round() {  # KEY ROUND SCRIPT [ARGS...]
  local key=$1 round=$2 py ob out tps best=0 flags=() obs
  shift 2
  local run=("$@" --batch "$batch" --seq-len "$seq" --steps "$steps")
  if (( round == 1 )); then
    tried[$key]=""
    for py in "${pythons[@]}"; do
      obs=(""); [[ "${py_blas[$py]}" == generic ]] && obs=(1 2)
      for ob in "${obs[@]}"; do
        if ! out=$(peer_run "$py" "$ob" "${run[@]}" --threads "$peer_threads"); then
          echo "bert_vs_torch: the peer failed under $py: ${run[*]}" >&2
          tried[$key]+="${tried[$key]:+, }torch ${py_torch[$py]}${ob:+ (OpenBLAS threads $ob)} failed"
          continue
        fi
        tps=$(field tokens/s "$out")
        tried[$key]+="${tried[$key]:+, }torch ${py_torch[$py]}${ob:+ (OpenBLAS threads $ob)} $tps"
        if greater "$tps" "$best"; then best=$tps; peer_out=$out; picked_py[$key]=$py; picked_ob[$key]=$ob; fi
      done
    done
    [[ "$best" != 0 ]] || { echo "bert_vs_torch: no PyTorch peer ran (${run[*]})" >&2; exit 1; }
    picked[$key]=$(grep "^setting:" <<< "$peer_out")
    (( repeats == 1 )) && return
  fi
  flags=(--threads "$(kv threads "${picked[$key]}")")
  [[ -n "$(kv optimizer "${picked[$key]}")" ]] && flags+=(--optimizer "$(kv optimizer "${picked[$key]}")")
  [[ -n "$(kv attention "${picked[$key]}")" ]] && flags+=(--attention "$(kv attention "${picked[$key]}")")
  peer_out=$(peer_run "${picked_py[$key]}" "${picked_ob[$key]}" "${run[@]}" "${flags[@]}")
}
# The line under a row naming the peer KEY's winning setting and every Python's figure.
describe_peer() {  # KEY LABEL
  local key=$1 s=${picked[$1]} py=${picked_py[$1]} ob=${picked_ob[$1]}
  echo "  peer $2: torch $(kv torch "$s") ($py), threads $(kv threads "$s") intra-op / $(kv interop "$s") inter-op," \
    "$(blas_description "$s" "$ob"), attention $(kv attention "$s"), AdamW $(kv optimizer "$s"); best tokens/s per peer: ${tried[$key]}"
}

printf "%-12s %14s %14s %7s %12s %12s" model "xgrad tok/s" "torch tok/s" ratio "xgrad MB" "torch MB"
[[ -n "$baseline" ]] && printf " %14s %7s %12s" "baseline tok/s" ratio "baseline MB"
[[ "$precision" == bf16 ]] && printf " %16s %9s" "torch bf16 tok/s" "ratio bf16"
printf "\n"
for m in $models; do
  peer=(bench/bert_pretrain_torch.py --model "$m"); pythons=("${bert_pythons[@]}")
  if hf_model "$m"; then
    peer=(bench/hf_pretrain_torch.py --family "${m%%-*}" --model "${m#*-}"); pythons=("${hf_pythons[@]}")
  fi
  autocast=false
  [[ "$precision" == bf16 && "$m" != roberta-* && "$m" != albert-* ]] && autocast=true
  b_precision=(); [[ "$precision" == bf16 ]] && b_precision=(--precision bf16)  # older builds lack the flag
  ours_tps=(); torch_tps=(); base_tps=(); bf16_tps=(); ratios=(); base_ratios=(); bf16_ratios=()
  for ((round = 1; round <= repeats; ++round)); do
    ours=$(build/bin/bert_pretrain --benchmark --model "$m" --batch "$batch" --seq-len "$seq" --steps "$steps" --precision "$precision" --optimizer adamw)
    ours_tps+=("$(field tokens/s "$ours")")
    peer_round fp32 "$round" "${peer[@]}"
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
      peer_round autocast "$round" "${peer[@]}" --autocast
      bf16_tps+=("$(field tokens/s "$peer_out")")
      bf16_ratios+=("$(ratio "${ours_tps[-1]}" "${bf16_tps[-1]}")")
    fi
  done
  printf "%-12s %14s %14s %7s %12s %12s" "$m" "$(median 1 "${ours_tps[@]}")" "$(median 1 "${torch_tps[@]}")" \
    "$(median 2 "${ratios[@]}")" "$o_mb" "$t_mb"
  if [[ -n "$baseline" ]]; then printf " %14s %7s %12s" "$(median 1 "${base_tps[@]}")" "$(median 2 "${base_ratios[@]}")" "$b_mb"; fi
  if $autocast; then printf " %16s %9s" "$(median 1 "${bf16_tps[@]}")" "$(median 2 "${bf16_ratios[@]}")"; fi
  printf "\n"
  describe_peer fp32 "fp32"
  if $autocast; then describe_peer autocast "bf16 autocast"; fi
  if (( repeats > 1 )); then
    echo "  ratio per round: ${ratios[*]}"
    if [[ -n "$baseline" ]]; then echo "  baseline ratio per round: ${base_ratios[*]}"; fi
    if $autocast; then echo "  ratio to bf16 per round: ${bf16_ratios[*]}"; fi
  fi
done
