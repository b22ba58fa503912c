#!/usr/bin/env bash
# The pipeline example programs (examples/pipelines/) on the test checkpoints: each runs, prints
# what it should, and refuses a checkpoint without its head.
#   pipeline_examples.sh BIN_DIR TEST_DATA_DIR
set -euo pipefail
bin=$1 heads=$2/heads
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# A checkpoint directory as users have them: config.json, weights and the tokenizer's vocab.txt.
checkpoint() {
  mkdir -p "$work/$1"
  cp "$heads/$1/config.json" "$heads/$1/model.safetensors" "$work/$1/"
  cp "$heads/classify_vocab.txt" "$work/$1/vocab.txt"
  echo "$work/$1"
}

out=$("$bin/pipeline_classify" "$(checkpoint seq_single)" "the cat sat on the mat" "it's fun")
[[ $(grep -c -E '^  (negative|neutral|positive) 0\.[0-9]{4}$' <<< "$out") == 4 ]] || fail "classify printed: $out"

ner=$(checkpoint token)
sed -i 's/"LABEL_0"/"O"/; s/"LABEL_1"/"B-PER"/; s/"LABEL_2"/"I-PER"/; s/"LABEL_3"/"B-LOC"/; s/"LABEL_4"/"I-LOC"/' "$ner/config.json"
sed -i '/"label2id"/,/}/d' "$ner/config.json"
out=$("$bin/pipeline_entities" "$ner" "the cat sat on the mat") || fail "entities: $out"
[[ $(head -1 <<< "$out") == "the cat sat on the mat" ]] || fail "entities printed: $out"

out=$("$bin/pipeline_answer" "$(checkpoint qa)" "cat" "the cat sat on the mat")
[[ $out =~ ^answer:\ \".*\"\ \[[0-9]+,\ [0-9]+\)\ probability\ [01]\.[0-9]{4}$ ]] || fail "answer printed: $out"

out=$("$bin/pipeline_fill_mask" "$(checkpoint mlm)" "the [MASK] sat on the mat")
[[ $(head -1 <<< "$out") == "mask at token 2:" && $(wc -l <<< "$out") == 6 ]] || fail "fill_mask printed: $out"

out=$("$bin/pipeline_embed" "$work/seq_single" "the cat sat" "a dog ran" "fun")
[[ $(head -1 <<< "$out") =~ ^3\ vectors\ of\ [0-9]+\ numbers$ && $(wc -l <<< "$out") == 4 ]] || fail "embed printed: $out"

# the wrong head: an error naming what is needed, exit 1
if err=$("$bin/pipeline_entities" "$work/seq_single" "the cat" 2>&1); then fail "entities ran on a sequence classifier"; fi
[[ $err == *"not a token classifier"* ]] || fail "entities on a classifier said: $err"
"$bin/pipeline_classify" > /dev/null 2>&1 && fail "classify without arguments succeeded"
echo "PASS"
