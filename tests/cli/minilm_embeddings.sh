#!/usr/bin/env bash
# all-MiniLM-L6-v2's sentence embeddings from bert_infer against the reference's golden: 8 lines
# of data/sentiment_uci.tsv, every one of the 384 dimensions within 1e-5 (golden:
# tools/gen_minilm_golden.py, transformers + sentence-transformers' mean pooling and Normalize).
# The 90 MB weights are not in the repository: set XGRAD_MINILM_DIR to the directory
# tools/get_minilm.sh wrote; without it the test says SKIP (ctest reports it skipped).
#   minilm_embeddings.sh BIN_DIR SOURCE_DIR
set -euo pipefail
BIN=$1
SRC=$2
MODEL=${XGRAD_MINILM_DIR:-}
if [[ -z "$MODEL" || ! -f "$MODEL/config.json" ]]; then
  echo "SKIP [minilm] XGRAD_MINILM_DIR is not set to the directory tools/get_minilm.sh wrote"
  exit 0
fi
GOLDEN=$SRC/tests/data/minilm
out=$("$BIN/bert_infer" embed --model "$MODEL" --pooling mean --normalize < "$GOLDEN/sentences.txt")
# Line by line, number by number: the count of vectors and of dimensions, the largest difference.
paste -d'\n' <(echo "$out") "$GOLDEN/embeddings.txt" | awk -v lines="$(wc -l < "$GOLDEN/sentences.txt")" '
  NR % 2 == 1 { n = split($0, got, " "); next }
  {
    m = split($0, want, " ")
    if (n != m || m != 384) { printf "FAIL [minilm] line %d: %d dimensions, the golden has %d\n", NR / 2, n, m; bad = 1 }
    for (i = 1; i <= m; i++) { d = got[i] - want[i]; if (d < 0) d = -d; if (d > worst) worst = d }
    rows++
  }
  END {
    if (rows != lines) { printf "FAIL [minilm] %d vectors for %d sentences\n", rows, lines; exit 1 }
    printf "minilm: %d sentences x 384 dimensions, largest difference from the reference %.3g\n", rows, worst
    if (bad || worst > 1e-5) { print "FAIL [minilm] beyond 1e-5"; exit 1 }
  }'
