#!/usr/bin/env bash
# The transfer experiment of docs/finetuning.md ("Does pre-training pay?"): fine-tuning from
# random weights, from our own bert_pretrain checkpoint (and that checkpoint after task-adaptive pre-training on the task's
# unlabelled training texts), from an ELECTRA checkpoint of the same pre-training budget, and from
# all-MiniLM-L6-v2, as learning curves (100, 500, all labels; 3 seeds) on data/sentiment_uci.tsv and
# data/sms_spam.tsv. About 4.5 hours on 2 cores, most of it the 6-layer MiniLM runs.
#   scripts/transfer_experiment.sh [OUT]          OUT defaults to runs/transfer
# OWN=DIR names our checkpoint (default: OUT/pretrain/checkpoint-018000, made first by the default
# bert_pretrain recipe run for 18000 steps, ~27 minutes: tiny, 8000-token vocabulary trained on the
# bundled corpus); MINILM=DIR the MiniLM checkpoint (default: fetched by tools/get_minilm.sh).
# ELECTRA=DIR names the ELECTRA checkpoint (default: OUT/pretrain-electra/checkpoint-016000, made
# first by bert_pretrain --model electra-tiny --steps 16000: the same discriminator size, about 21
# minutes on 2 cores where the BERT run takes 14 to 27). ONLY="sentiment" (or "sms") runs one data set; STARTS picks the curves
# (default all: "tiny-scratch tiny-own tiny-own-tapt tiny-electra minilm minilm-scratch"), and only
# the checkpoints those need are made; MINILM_SCRATCH_SEEDS (default 1, sizes 100 and all) sets the
# seeds of the costly 6-layer from-scratch curve.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/transfer}
bin=build/bin
mkdir -p "$out/data"
starts=" ${STARTS:-tiny-scratch tiny-own tiny-own-tapt tiny-electra minilm minilm-scratch} "
wants() { [[ $starts == *" $1 "* ]]; }
# A pre-training run into DIR unless CHECKPOINT exists; an interrupted one goes on where it stopped.
pretrain() {  # checkpoint dir flags...
  local checkpoint=$1 dir=$2
  shift 2
  [[ -d "$checkpoint" ]] && return
  if [[ -d "$dir" ]]; then "$bin/bert_pretrain" --resume "$dir"; else "$bin/bert_pretrain" "$@" --out "$dir"; fi
}
own=${OWN:-$out/pretrain/checkpoint-018000}
if wants tiny-scratch || wants tiny-own || wants tiny-own-tapt; then pretrain "$own" "$out/pretrain" --steps 18000; fi
electra=${ELECTRA:-$out/pretrain-electra/checkpoint-016000}
if wants tiny-electra; then pretrain "$electra" "$out/pretrain-electra" --model electra-tiny --steps 16000; fi
minilm=${MINILM:-${XDG_CACHE_HOME:-$HOME/.cache}/xgrad/all-MiniLM-L6-v2}
if wants minilm || wants minilm-scratch; then [[ -f "$minilm/model.safetensors" ]] || tools/get_minilm.sh "$minilm"; fi

# Splits by line number, as docs/finetuning.md's worked example: every 10th line dev, every 10th from the
# 5th test, the rest (80%) training; and each training set's texts as a pre-training corpus (10
# sentences a document) for task-adaptive pre-training.
split() {  # name file label-column text-column
  tail -n +2 "$2" | awk -F'\t' -v l="$3" -v t="$4" -v o="$out/data/$1" '
    BEGIN { print "label\ttext" > (o "_train.tsv"); print "label\ttext" > (o "_dev.tsv"); print "label\ttext" > (o "_test.tsv") }
    { f = NR % 10 == 0 ? "_dev.tsv" : NR % 10 == 5 ? "_test.tsv" : "_train.tsv"; print $l "\t" $t > (o f) }'
  tail -n +2 "$out/data/$1_train.tsv" | cut -f2 | awk '{ print } NR % 10 == 0 { print "" }' > "$out/data/$1_corpus.txt"
}
split sentiment data/sentiment_uci.tsv 2 3
split sms data/sms_spam.tsv 1 2

# The same fine-tuning recipe for every start: batch 32, 2 epochs but at least 150 steps, dev
# evaluated 10 times, the best kept; lr 1e-3 for the tiny model (the best of 1e-4..3e-3 on all
# sentiment labels, from scratch and from our checkpoint alike), 5e-5 for MiniLM (BERT's range) and
# 1e-4 for the 6-layer model from scratch.
curve() {  # data start lr sizes seeds model-flags...
  local data=$1 start=$2 lr=$3 sizes=$4 seeds=$5
  shift 5
  wants "$start" || return 0
  [[ -f "$out/$data-$start/learning_curve_summary.csv" ]] && return
  "$bin/bert_finetune" "$@" --train "$out/data/${data}_train.tsv" --dev "$out/data/${data}_dev.tsv" --lr "$lr" \
    --learning-curve "$sizes" --curve-seeds "$seeds" --max-len 64 --batch 32 --epochs 2 --min-steps 150 \
    --out "$out/$data-$start" --overwrite --report "$out/$data-$start.json"
}
for data in ${ONLY:-sentiment sms}; do
  curve "$data" tiny-scratch 1e-3 100,500,all 3 --model tiny --vocab "$own/vocab.txt"
  curve "$data" tiny-own 1e-3 100,500,all 3 --model "$own"
  curve "$data" tiny-electra 1e-3 100,500,all 3 --model "$electra"
  # task-adaptive pre-training (Gururangan et al. 2020): 1000 MLM steps on the training texts
  if wants tiny-own-tapt && [[ ! -d "$out/tapt-$data/checkpoint-001000" ]]; then
    "$bin/bert_pretrain" --init-from "$own" --corpus "$out/data/${data}_corpus.txt" --steps 1000 --lr 5e-4 --out "$out/tapt-$data" --overwrite
  fi
  curve "$data" tiny-own-tapt 1e-3 100,500,all 3 --model "$out/tapt-$data/checkpoint-001000"
  curve "$data" minilm 5e-5 100,500,all 3 --model "$minilm"
  curve "$data" minilm-scratch 1e-4 100,all "${MINILM_SCRATCH_SEEDS:-1}" --model "$minilm/config.json" --vocab data/bert-base-uncased-vocab.txt
  for metric in accuracy f1 mcc; do
    echo "$data, dev $metric:"
    tables=()
    for start in tiny-scratch tiny-own tiny-own-tapt tiny-electra minilm-scratch minilm; do
      [[ -f "$out/$data-$start/learning_curve_summary.csv" ]] && tables+=("$out/$data-$start")
    done
    tools/transfer_table.py --metric "$metric" "${tables[@]}"
  done
done
