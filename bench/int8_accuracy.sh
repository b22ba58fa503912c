#!/usr/bin/env bash
# What int8 inference (--precision int8: int8 weights per output channel, uint8 activations per
# row, int32 sums) costs in accuracy against fp32, on real weights and the bundled data:
#   bench/int8_accuracy.sh embed MODEL_DIR [LINES]
#       sentence embeddings (mean pooling, normalized, as all-MiniLM-L6-v2 is used) of the first
#       LINES (default: all) non-empty lines of data/pretrain_corpus_small.txt at fp32 and at int8
#       (and bf16): the lowest, 1st-percentile and mean cosine of each line's two vectors
#   bench/int8_accuracy.sh rescore RUN_DIR...
#       each finished bert_finetune run's best model scored again (a run with steps left would
#       train them first: the best/ checkpoint is checked for, not the step count) on its --dev and --test at fp32
#       and at int8 (bert_finetune --resume RUN --score-precision P), side by side
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
shift || true
case "$mode" in
  embed)
    model=${1:?"usage: bench/int8_accuracy.sh embed MODEL_DIR [LINES]"}
    lines=${2:-0}
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    # (awk, not grep | head: under pipefail head's early exit would fail the pipeline)
    awk -v n="$lines" 'NF && (n == 0 || ++kept <= n)' data/pretrain_corpus_small.txt > "$tmp/lines.txt"
    for p in fp32 int8 bf16; do
      start=$(date +%s.%N)
      build/bin/bert_infer embed --model "$model" --pooling mean --normalize --precision "$p" < "$tmp/lines.txt" > "$tmp/$p.txt"
      echo "$p: $(wc -l < "$tmp/$p.txt") vectors in $(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)") s"
    done
    for p in int8 bf16; do
      # both sides normalized: the cosine is the dot product
      paste -d'\n' "$tmp/fp32.txt" "$tmp/$p.txt" | awk -v p="$p" '
        NR % 2 == 1 { n = split($0, a, " "); next }
        { split($0, b, " "); dot = 0; for (i = 1; i <= n; i++) dot += a[i] * b[i]; print dot }' |
        sort -g | awk -v p="$p" '{ c[NR] = $1; sum += $1 }
          END { printf "%s against fp32: %d sentences, cosine lowest %.5f, 1st percentile %.5f, mean %.6f\n", p, NR, c[1], c[int(NR / 100) + 1], sum / NR }'
    done
    ;;
  rescore)
    (($# > 0)) || { echo "usage: bench/int8_accuracy.sh rescore RUN_DIR..." >&2; exit 2; }
    for run in "$@"; do
      [[ -f "$run/best/config.json" ]] || { echo "int8_accuracy: $run has no best/ checkpoint: not a finished bert_finetune run" >&2; exit 1; }
      for p in fp32 int8; do
        echo "== $run at $p"
        out=$(build/bin/bert_finetune --resume "$run" --score-precision "$p" 2>&1) ||
          { echo "$out" >&2; echo "int8_accuracy: bert_finetune --resume $run --score-precision $p failed" >&2; exit 1; }
        grep -q '^final scores' <<< "$out" || { echo "$out" >&2; echo "int8_accuracy: no final scores for $run" >&2; exit 1; }
        sed -n '/^final scores/,/^took/p' <<< "$out"
      done
    done
    ;;
  *)
    echo "usage: bench/int8_accuracy.sh embed MODEL_DIR [LINES] | rescore RUN_DIR..." >&2
    exit 2
    ;;
esac
