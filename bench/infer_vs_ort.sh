#!/usr/bin/env bash
# bert_infer bench (the encoder's forward pass, no tape; fp32 and --precision bf16) against ONNX Runtime on the same model
# exported from transformers' BertModel (bench/ort_peer.py: its best of the plain export and the
# transformers-optimizer fused graph, at ORT_ENABLE_ALL, over 1 and 2 intra-op threads), same
# machine, same run, random ids with every position a real token, or (INPUT=sentences) the first BATCH
# lines of the bundled corpus, real sentences of mixed lengths, each side padding them to the longest
# as a user would (tokens/s counts real tokens; xgrad's fused path skips the padding, ORT pays for it).
# xgrad runs at its default thread count (XGRAD_NUM_THREADS, else every core); "recorded" is xgrad's
# fp32 forward with the fused inference path off (XGRAD_FUSED_INFERENCE=0), the path before it.
#   bench/infer_vs_ort.sh [MODELS] [BATCH] [SEQ_LEN] [STEPS] [INPUT]    e.g. bench/infer_vs_ort.sh "mini base" 8 128 20
#   bench/infer_vs_ort.sh "mini base" 32 128 10 sentences
# The peer runs under $PEER_PYTHON; unset, a venv in build/venv-ort (Debian's python3-torch with
# PyPI's onnxruntime and transformers) is made on first use.
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
  if [[ ! -x "$venv/bin/python" ]]; then
    /usr/bin/python3 -c "import torch, onnx" 2>/dev/null || {
      echo "infer_vs_ort: needs Debian's python3-torch and python3-onnx (apt-get install -y python3-torch python3-onnx python3-venv)" >&2; exit 1; }
    /usr/bin/python3 -m venv --system-site-packages "$venv"
    "$venv/bin/pip" install --quiet "onnxruntime==1.32.0" "onnx==1.17.0" "transformers==4.45.2"
  fi
  python=$venv/bin/python
fi
shape="B x T"
[[ "$input" == sentences ]] && shape="lines,max"
printf "%-8s %-9s %10s %10s %10s %10s %7s %7s  %s\n" model "$shape" recorded "xgrad fp32" "xgrad bf16" "ORT fp32" "fp32 x" "bf16 x" "ORT's best setting (tokens/s)"
for m in $models; do
  tps() { build/bin/bert_infer bench --model "$m" --batch "$batch" --seq-len "$seq" --steps "$steps" --precision "$1" "${text_flags[@]}" | grep "^tokens/s" | awk '{print $2}'; }
  o_rec=$(XGRAD_FUSED_INFERENCE=0 tps fp32)
  o_tps=$(tps fp32)
  o_bf16=$(tps bf16)
  peer=$("$python" bench/ort_peer.py --model "$m" --batch "$batch" --seq-len "$seq" --steps "$steps" "${text_flags[@]}" 2> build/ort_peer.log) ||
    { echo "infer_vs_ort: bench/ort_peer.py failed for $m (its stderr: build/ort_peer.log)" >&2; tail -5 build/ort_peer.log >&2; exit 1; }
  p_tps=$(grep "^tokens/s" <<< "$peer" | awk '{print $2}')
  setting=$(grep "^best:" <<< "$peer" | cut -d' ' -f2-)
  ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }
  printf "%-8s %-9s %10s %10s %10s %10s %7s %7s  %s\n" "$m" "${batch}x${seq}" "$o_rec" "$o_tps" "$o_bf16" "$p_tps" "$(ratio "$o_tps" "$p_tps")" \
    "$(ratio "$o_bf16" "$p_tps")" "$setting"
done
