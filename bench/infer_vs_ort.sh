#!/usr/bin/env bash
# bert_infer bench (the encoder's forward pass, no tape; fp32, --precision bf16 and int8) against ONNX Runtime,
# fp32 and int8 (quantize_dynamic), on the same model
# exported from transformers' BertModel (bench/ort_peer.py: its best of the plain export and the
# transformers-optimizer fused graph, at ORT_ENABLE_ALL, over 1 and 2 intra-op threads), same
# machine, same run, random ids with every position a real token, or (INPUT=sentences) the first BATCH
# lines of the bundled corpus, real sentences of mixed lengths, each side padding them to the longest
# as a user would (tokens/s counts real tokens; xgrad's fused path skips the padding, ORT pays for it).
# xgrad runs at its default thread count (XGRAD_NUM_THREADS, else every core); "recorded" is xgrad's
# fp32 forward with the fused inference path off (XGRAD_FUSED_INFERENCE=0), the path before it.
#   bench/infer_vs_ort.sh [MODELS] [BATCH] [SEQ_LEN] [STEPS] [INPUT]    e.g. bench/infer_vs_ort.sh "mini base" 8 128 20
#   bench/infer_vs_ort.sh "mini base" 32 128 10 sentences
# REPEATS=N (default 1) runs N rounds per model, each one run of every xgrad column and of the
# peer, and prints medians (the ratios: medians of the rounds' ratios, listed per round): round 1
# picks ORT's fastest setting, later rounds rerun that setting alone. On a shared, noisy machine
# one run each moves the ratio by a third; the rounds show by how much.
# The peer runs under $PEER_PYTHON; unset, a venv in build/venv-ort (Debian's python3-torch with
# PyPI's onnxruntime, onnx, transformers and ml_dtypes (onnxruntime.quantization needs it); scripts/install_deps.sh --bench makes the same one) is
# made on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
models=${1:-"mini base"}
batch=${2:-8}
seq=${3:-128}
steps=${4:-20}
input=${5:-random}
text_flags=()
case "$input" in
  random) ;;
  sentences) text_flags=(--sentences data/pretrain_corpus_small.txt --vocab data/bert-base-uncased-vocab.txt) ;;
  *) echo "infer_vs_ort: INPUT is random or sentences, not '$input'" >&2; exit 2 ;;
esac
python=${PEER_PYTHON:-}
if [[ -z "$python" ]]; then
  venv=build/venv-ort
  if ! "$venv/bin/python" -c "import onnxruntime, onnx, transformers, ml_dtypes" 2>/dev/null; then  # missing, or an install cut short
    /usr/bin/python3 -c "import torch" 2>/dev/null || {
      echo "infer_vs_ort: needs Debian's python3-torch and python3-venv (apt-get install -y python3-torch python3-venv)" >&2; exit 1; }
    /usr/bin/python3 -m venv --system-site-packages "$venv"
    "$venv/bin/pip" install --quiet "onnxruntime==1.32.0" "onnx==1.17.0" "transformers==4.45.2" "ml_dtypes==0.7.0"
  fi
  python=$venv/bin/python
fi
shape="B x T"
[[ "$input" == sentences ]] && shape="lines,max"
repeats=${REPEATS:-1}
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || { echo "infer_vs_ort: REPEATS must be a positive integer, not '$repeats'" >&2; exit 2; }
median() { python3 -c "import statistics, sys; print(f'{statistics.median(map(float, sys.argv[2:])):.{sys.argv[1]}f}')" "$@"; }
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }
printf "%-8s %-9s %9s %9s %9s %9s %9s %9s %6s %6s %6s %6s %6s  %s\n" model "$shape" recorded "x fp32" "x bf16" "x int8" \
  "ORT fp32" "ORT int8" "fp32" "bf16" "int8" "int8/f" "bf16/i" "ORT's best settings: fp32; int8"
# ratio columns: fp32, bf16 against ORT fp32; int8 against ORT int8; int8/f: int8 against ORT fp32;
# bf16/i: bf16 against ORT int8
for m in $models; do
  tps() { build/bin/bert_infer bench --model "$m" --batch "$batch" --seq-len "$seq" --steps "$steps" --precision "$1" "${text_flags[@]}" | grep "^tokens/s" | awk '{print $2}'; }
  # peer VARIANTS FLAGS...: ORT's tokens/s at its best of VARIANTS (round 1) or at FLAGS; sets peer_setting
  peer() {
    local variants=$1 out; shift
    out=$("$python" bench/ort_peer.py --model "$m" --batch "$batch" --seq-len "$seq" --steps "$steps" "${text_flags[@]}" \
      --variants "$variants" "$@" 2> build/ort_peer.log) ||
      { echo "infer_vs_ort: bench/ort_peer.py failed for $m (its stderr: build/ort_peer.log)" >&2; tail -5 build/ort_peer.log >&2; exit 1; }
    peer_setting=$(grep "^best:" <<< "$out" | cut -d' ' -f2-)
    grep "^tokens/s" <<< "$out" | awk '{print $2}'
  }
  recorded=() fp32=() bf16=() int8=() ort32=() ort8=() r_fp32=() r_bf16=() r_int8=() r_int8f=() r_bf16i=()
  flags32=() flags8=()
  for ((round = 1; round <= repeats; ++round)); do
    recorded+=("$(XGRAD_FUSED_INFERENCE=0 tps fp32)")
    fp32+=("$(tps fp32)")
    bf16+=("$(tps bf16)")
    int8+=("$(tps int8)")
    if (( round == 1 )); then  # "ort-fused threads 2" -> --variants ort-fused --threads 2
      peer "ort,ort-fused" > build/ort_peer.tps; ort32+=("$(cat build/ort_peer.tps)"); setting32=$peer_setting
      peer "ort-int8,ort-fused-int8" > build/ort_peer.tps; ort8+=("$(cat build/ort_peer.tps)"); setting8=$peer_setting
      read -r v _ t <<< "$setting32"; flags32=(--threads "$t"); variants32=$v
      read -r v _ t <<< "$setting8"; flags8=(--threads "$t"); variants8=$v
    else
      peer "$variants32" "${flags32[@]}" > build/ort_peer.tps; ort32+=("$(cat build/ort_peer.tps)")
      peer "$variants8" "${flags8[@]}" > build/ort_peer.tps; ort8+=("$(cat build/ort_peer.tps)")
    fi
    r_fp32+=("$(ratio "${fp32[-1]}" "${ort32[-1]}")")
    r_bf16+=("$(ratio "${bf16[-1]}" "${ort32[-1]}")")
    r_int8+=("$(ratio "${int8[-1]}" "${ort8[-1]}")")
    r_int8f+=("$(ratio "${int8[-1]}" "${ort32[-1]}")")
    r_bf16i+=("$(ratio "${bf16[-1]}" "${ort8[-1]}")")
  done
  printf "%-8s %-9s %9s %9s %9s %9s %9s %9s %6s %6s %6s %6s %6s  %s\n" "$m" "${batch}x${seq}" "$(median 1 "${recorded[@]}")" \
    "$(median 1 "${fp32[@]}")" "$(median 1 "${bf16[@]}")" "$(median 1 "${int8[@]}")" "$(median 1 "${ort32[@]}")" \
    "$(median 1 "${ort8[@]}")" "$(median 2 "${r_fp32[@]}")" "$(median 2 "${r_bf16[@]}")" "$(median 2 "${r_int8[@]}")" \
    "$(median 2 "${r_int8f[@]}")" "$(median 2 "${r_bf16i[@]}")" "$setting32; $setting8"
  if (( repeats > 1 )); then echo "  per round: fp32 ${r_fp32[*]}; bf16 ${r_bf16[*]}; int8 ${r_int8[*]}; int8/f ${r_int8f[*]}; bf16/i ${r_bf16i[*]}"; fi
done
