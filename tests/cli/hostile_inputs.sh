#!/usr/bin/env bash
# The command-line programs against a careless user, hostile files and an unlucky machine:
# every case asserts the exit status, that the message names what is wrong, that no
# signal killed the program, and that existing checkpoints are byte-identical afterwards.
#   hostile_inputs.sh BIN_DIR SOURCE_DIR GROUP
# GROUP: flags | files | checkpoints | signals | kill_during_save | shards | infer | disk_full | finetune
# (one ctest entry each, so they run in parallel and each stays a few seconds).
set -u
BIN=$1
SRC=$2
GROUP=$3
W=$(mktemp -d "${TMPDIR:-/tmp}/xgrad_cli_${GROUP}.XXXXXX")
trap 'rm -rf "$W"' EXIT
failures=0
cases=0

CORPUS=$SRC/tests/data/pretrain_sample.txt
VOCAB=$SRC/tests/data/pretrain_v1/checkpoint-000003/vocab.txt  # 400 tokens: a fast tiny model
CONFIG=$SRC/tests/data/pretrain_v1/model_config.json           # 1 layer, hidden 16
# small: sets SMALL to a fast run's flags; corpus=, vocab=, model=, seq=, batch= before it change one.
small() {
  SMALL=(--corpus "${corpus:-$CORPUS}" --vocab "${vocab:-$VOCAB}" --model "${model:-$CONFIG}" --seq-len "${seq:-32}"
         --batch "${batch:-4}" --eval-every 0 --eval-instances 8 --log-every 1 --threads 1)
}
small
STDIN_FILE=/dev/null

fail() {
  echo "FAIL [$GROUP] $*"
  failures=$((failures + 1))
}

# expect STATUS TEXT COMMAND...: the exact exit status, TEXT in stdout+stderr, no death by a signal
# unless STATUS is 128+signal (a stop this suite asked for).
expect() {
  local want=$1 text=$2
  shift 2
  cases=$((cases + 1))
  local out rc
  out=$("$@" < "$STDIN_FILE" 2>&1)
  rc=$?
  if [[ $rc -ne $want ]]; then
    fail "exit status $rc, expected $want: $*"$'\n'"$out"
  elif [[ $rc -gt 128 && $want -le 128 ]]; then
    fail "killed by signal $((rc - 128)): $*"
  elif [[ -n $text && $out != *"$text"* ]]; then
    fail "message lacks '$text': $*"$'\n'"$out"
  fi
}

# A run's files with their hashes, to check a failed command changed nothing.
snapshot() { (cd "$1" && find . -type f ! -name metrics.jsonl -print0 | sort -z | xargs -0 sha256sum); }
expect_unchanged() {
  cases=$((cases + 1))
  [[ "$(snapshot "$1")" == "$2" ]] || fail "$1 changed: $3"
}

# A finished run of 4 steps with checkpoints 2 and 4 (the newest two kept).
make_run() {
  "$BIN/bert_pretrain" "${SMALL[@]}" --steps 4 --save-every 2 --out "$1" > "$W/make_run.log" 2>&1 ||
    { cat "$W/make_run.log"; fail "could not make a run in $1"; exit 1; }
}

# Waits (up to 20 s) until the run writing $1 has logged a step.
wait_for_step() {
  for _ in $(seq 200); do
    [[ -s $1/metrics.jsonl ]] && return 0
    sleep 0.1
  done
  return 1
}

case $GROUP in
flags)
  P=$BIN/bert_pretrain
  expect 2 "--bogus" "$P" --bogus
  expect 2 "--max-steps" "$P" --steps abc
  expect 2 "--clip" "$P" --clip nan
  expect 2 "--weight-decay" "$P" --weight-decay inf
  expect 2 "--learning-rate" "$P" --lr -1
  expect 2 "--threads" "$P" --threads 4294967297
  expect 2 "--max-steps" "$P" --benchmark --steps -1
  # sizes no machine holds are refused with the estimate and the flags, before allocating (not std::bad_alloc)
  expect 1 "activations for --per-device-train-batch-size 100000000 x --max-seq-length 64" "$P" --benchmark --model base --batch 100000000
  expect 1 "activations for --per-device-train-batch-size 100000000 x --max-seq-length 128" \
    "$BIN/bert_finetune" --benchmark --model base --batch 100000000
  expect 2 "--per-device-train-batch-size" "$P" --batch 0
  expect 2 "--max-seq-length" "$P" --seq-len 99999999999999999999
  expect 2 "'maybe': not one of stop, skip" "$P" "${SMALL[@]}" --on-nonfinite maybe --out "$W/o1"
  expect 2 "'foo': not one of linear, cosine" "$P" "${SMALL[@]}" --schedule foo --out "$W/o1"
  expect 2 "'xyz': not one of auto, nsp" "$P" "${SMALL[@]}" --pairing xyz --out "$W/o1"
  [[ -e $W/o1 ]] && fail "a refused start left $W/o1 behind"
  expect 2 "'fp16': not one of fp32, bf16" "$P" "${SMALL[@]}" --precision fp16 --out "$W/o5"
  [[ -e $W/o5 ]] && fail "a refused start left $W/o5 behind"
  expect 0 "precision bf16" "$P" --benchmark --model tiny --batch 2 --seq-len 16 --steps 1 --precision bf16
  expect 1 "XGRAD_FLASH_ATTENTION='maybe': expected 0 or 1" env XGRAD_FLASH_ATTENTION=maybe \
    "$P" --benchmark --model tiny --batch 2 --seq-len 16 --steps 1
  expect 0 "tokens/s" env XGRAD_FLASH_ATTENTION=off "$P" --benchmark --model tiny --batch 2 --seq-len 16 --steps 1
  # the benchmark steps the optimizer training would: the recipe's (LAMB for ALBERT) or --optimizer
  expect 0 "optimizer: lamb" "$P" --benchmark --model albert-tiny --batch 2 --seq-len 16 --steps 1
  expect 0 "optimizer: adamw" "$P" --benchmark --model albert-tiny --batch 2 --seq-len 16 --steps 1 --optimizer adamw
  expect 0 "optimizer: adamw" "$P" --benchmark --model tiny --batch 2 --seq-len 16 --steps 1
  expect 2 "'sgd': not one of auto, adamw, lamb" "$P" --benchmark --model tiny --batch 2 --seq-len 16 --steps 1 --optimizer sgd
  expect 1 "XGRAD_FUSED_INFERENCE='bogus'" env XGRAD_FUSED_INFERENCE=bogus \
    "$BIN/bert_infer" bench --model tiny --batch 1 --seq-len 8 --steps 1
  model=$W/missing.json small
  expect 1 "--model $W/missing.json: no such config file" "$P" "${SMALL[@]}" --out "$W/o2"
  [[ -e $W/o2 ]] && fail "a failed start left $W/o2 behind"
  model=tiny batch=100000 small
  expect 1 "more than twice this machine's" "$P" "${SMALL[@]}" --out "$W/o3"
  # attention's memory is linear in T, so the longest sequences are refused for the batch they make
  model=tiny seq=65535 batch=4096 small
  expect 1 "--per-device-train-batch-size 4096 x --max-seq-length 65535" "$P" "${SMALL[@]}" --out "$W/o4"
  [[ -e $W/o4 ]] && fail "a failed start left $W/o4 behind"
  C=$BIN/create_pretraining_data
  expect 2 "--per-shard" "$C" --input "$CORPUS" --vocab "$VOCAB" --output "$W/s" --per-shard 0
  expect 2 "--train-file" "$C" --vocab "$VOCAB" --output "$W/s"
  expect 2 "--dupe-factor" "$C" --input "$CORPUS" --vocab "$VOCAB" --output "$W/s" --dupe-factor -1
  expect 2 "--mlm-probability" "$C" --input "$CORPUS" --vocab "$VOCAB" --output "$W/s" --masked-lm-prob x
  ;;

files)  # corpora, vocabularies and configs, broken in the ways files break
  P=$BIN/bert_pretrain
  : > "$W/empty.txt"
  corpus=$W/empty.txt small
  expect 1 "empty corpus" "$P" "${SMALL[@]}" --out "$W/o"
  printf 'fine\n\x00\x01\xff\xfe binary\n' > "$W/binary.txt"
  corpus=$W/binary.txt small
  expect 1 "$W/binary.txt:2" "$P" "${SMALL[@]}" --out "$W/o"
  printf 'ok line\nbroken \xc3\x28 here\n' > "$W/bad_utf8.txt"
  corpus=$W/bad_utf8.txt small
  expect 1 "$W/bad_utf8.txt:2: invalid UTF-8" "$P" "${SMALL[@]}" --out "$W/o"
  corpus=$W/nothing.txt small
  expect 1 "$W/nothing.txt" "$P" "${SMALL[@]}" --out "$W/o"
  : > "$W/empty_vocab.txt"
  vocab=$W/empty_vocab.txt small
  expect 1 "$W/empty_vocab.txt" "$P" "${SMALL[@]}" --out "$W/o"
  printf '[PAD]\n[UNK]\n' > "$W/no_specials.txt"
  vocab=$W/no_specials.txt small
  expect 1 "[CLS]" "$P" "${SMALL[@]}" --out "$W/o"
  mkdir -p "$W/vocab_dir"
  vocab=$W/vocab_dir small
  expect 1 "$W/vocab_dir" "$P" "${SMALL[@]}" --out "$W/o"
  printf '{"hidden_size": 16, ' > "$W/broken.json"
  model=$W/broken.json small
  expect 1 "$W/broken.json" "$P" "${SMALL[@]}" --out "$W/o"
  printf '{"hidden_size": "big"}' > "$W/typed.json"
  model=$W/typed.json small
  expect 1 "hidden_size" "$P" "${SMALL[@]}" --out "$W/o"
  printf '{"hidden_size": 1000000000, "num_attention_heads": 1, "intermediate_size": 4, "num_hidden_layers": 1}' > "$W/huge.json"
  model=$W/huge.json small
  expect 1 "hidden_size 1000000000, intermediate_size 4" "$P" "${SMALL[@]}" --out "$W/o"
  # a trained vocabulary of nothing: control characters or whitespace only (libsentencepiece would
  # end the process), for each kind of trainer; a binary corpus; too few pieces
  printf '\x01\x02\x03\n\x04\x05\n' > "$W/controls.txt"
  printf '   \n\t\t\n\n' > "$W/blank.txt"
  for m in albert-tiny roberta-tiny tiny; do
    for c in controls blank; do
      expect 1 "$W/$c.txt: the corpus has no words" "$P" --model "$m" --corpus "$W/$c.txt" --train-vocab 300 --steps 2 --out "$W/o"
    done
  done
  expect 1 "$W/binary.txt:2: invalid UTF-8" "$P" --model albert-tiny --corpus "$W/binary.txt" --train-vocab 300 --steps 2 --out "$W/o"
  expect 1 "a vocabulary of 1 pieces: it needs more than its 5 special ones" \
    "$P" --model albert-tiny --corpus "$CORPUS" --train-vocab 1 --steps 2 --out "$W/o"
  small
  [[ -e $W/o ]] && fail "failed starts left $W/o behind"
  # one 150,000-word line (no newlines): linear, no longer ~30 s an instance
  for i in $(seq 3000); do printf 'the whale and the sea were old friends of the ship and its men . %.0s' 1 2 3; done > "$W/one_line.txt"
  printf '\n\nthe end .\n' >> "$W/one_line.txt"
  expect 0 "instances" timeout 60 "$BIN/create_pretraining_data" --input "$W/one_line.txt" --vocab "$VOCAB" --output "$W/shards_long" --max-seq-length 32 --max-predictions 5 --dupe-factor 1
  ;;

checkpoints)  # runs in the way of other runs, damaged checkpoints: nothing existing changes
  P=$BIN/bert_pretrain
  R=$W/run
  make_run "$R"
  before=$(snapshot "$R")
  expect 1 "--output-dir $R is not empty (checkpoint-000002, checkpoint-000004" "$P" "${SMALL[@]}" --steps 4 --out "$R"
  expect_unchanged "$R" "$before" "a new run into it"
  # --overwrite replaces only what a run provably wrote: a folder of the user's corpus and vocabulary
  # is refused whole, and an input inside an earlier run's files is not moved away from the run
  mkdir -p "$W/mine" && cp "$CORPUS" "$W/mine/corpus.txt" && cp "$VOCAB" "$W/mine/vocab.txt"
  mine=$(snapshot "$W/mine")
  expect 1 "--output-dir $W/mine holds files no training run wrote (corpus.txt, vocab.txt)" \
    "$P" "${SMALL[@]:2}" --corpus "$W/mine/corpus.txt" --train-vocab 500 --steps 2 --out "$W/mine" --overwrite
  expect_unchanged "$W/mine" "$mine" "--overwrite into a folder of the user's files"
  [[ -z $(ls -A "$W/mine" | grep -v -e corpus.txt -e vocab.txt) ]] || fail "files left in $W/mine: $(ls -A "$W/mine")"
  expect 1 "--overwrite would set aside checkpoint-000004, which this run reads" \
    "$P" "${SMALL[@]}" --init-from "$R/checkpoint-000004" --steps 2 --out "$R" --overwrite
  expect_unchanged "$R" "$before" "--overwrite of the run --init-from reads"
  expect 1 "--learning-rate 0.5 differs from the checkpoint's" "$P" --resume "$R" --lr 0.5
  expect 1 "--max-seq-length 64 differs" "$P" --resume "$R" --seq-len 64
  expect 1 "--max-seq-length 128 differs from the checkpoint's 32" "$P" --resume "$R" --seq-len 128  # the default, given
  expect 0 "already at step 4 of 4" "$P" --resume "$R"
  expect_unchanged "$R" "$before" "resumes refused or with nothing to do"
  expect 1 "another run is writing into it" flock "$R" "$P" --resume "$R" --steps 4
  expect_unchanged "$R" "$before" "a second run while one holds the lock"
  expect 1 "no checkpoint with training_state.json" "$P" --resume "$W/nothing"
  # damaged copies: a clear error naming the file, the original untouched
  cp -r "$R" "$W/damaged"
  printf '{"format": 2, "step": "many"' > "$W/damaged/checkpoint-000004/training_state.json"
  expect 1 "training_state.json: 28 bytes" "$P" --resume "$W/damaged/checkpoint-000004"
  rm "$W/damaged/checkpoint-000004/checksums.json"  # as if edited by hand: the reader names the file
  expect 1 "$W/damaged/checkpoint-000004/training_state.json: " "$P" --resume "$W/damaged/checkpoint-000004"
  rm -rf "$W/damaged" && cp -r "$R" "$W/damaged"
  truncate -s 100 "$W/damaged/checkpoint-000004/model.safetensors"
  expect 1 "model.safetensors: 100 bytes" "$P" --resume "$W/damaged"
  rm "$W/damaged/checkpoint-000004/checksums.json"
  expect 1 "model.safetensors" "$P" --resume "$W/damaged"
  rm -rf "$W/damaged" && cp -r "$R" "$W/damaged"
  head -c 8 /dev/zero > "$W/damaged/checkpoint-000004/optimizer.safetensors"
  expect 1 "optimizer" "$P" --resume "$W/damaged"
  rm -rf "$W/damaged" && cp -r "$R" "$W/damaged"
  printf '\x01' | dd of="$W/damaged/checkpoint-000004/model.safetensors" bs=1 seek=5000 conv=notrunc status=none
  expect 1 "model.safetensors: CRC32C" "$P" --resume "$W/damaged"
  expect 1 "the file is damaged" "$BIN/bert_infer" fill-mask --model "$W/damaged/checkpoint-000004" --text "a [MASK]"
  expect_unchanged "$R" "$before" "damaged copies"
  # --out that cannot be made or written: found before training
  expect 1 "--output-dir /proc/xgrad_out: cannot create" "$P" "${SMALL[@]}" --out /proc/xgrad_out
  expect 1 "--output-dir /proc: not writable" "$P" "${SMALL[@]}" --out /proc
  # --overwrite replaces the earlier run's checkpoints
  expect 0 "done: step 2" "$P" "${SMALL[@]}" --steps 2 --out "$W/again" --overwrite
  cp -r "$W/again" "$W/again2"
  expect 0 "done: step 2" "$P" "${SMALL[@]}" --steps 2 --out "$W/again2" --overwrite
  # a run that diverges stops before the update, naming the step
  expect 1 "step 2: the loss is" "$P" "${SMALL[@]}" --lr 1e30 --clip 0 --steps 4 --out "$W/nan"
  expect 0 "update skipped" "$P" "${SMALL[@]}" --lr 1e30 --clip 0 --steps 4 --out "$W/nan_skip" --on-nonfinite skip
  # a corpus given relative to the first run's directory, resumed from another, then moved: the
  # same data in its new place resumes; other data is refused (its data position means nothing)
  mkdir -p "$W/data" && cp "$CORPUS" "$W/data/corpus.txt"
  corpus=corpus.txt small
  (cd "$W/data" && "$P" "${SMALL[@]}" --steps 4 --stop-at 2 --out "$W/moved" > "$W/moved.log" 2>&1) ||
    { cat "$W/moved.log"; fail "the first run, in $W/data"; }
  small
  first=$(cd "$W/data" && pwd -P)/corpus.txt  # the saved path: absolute, from the run's working directory
  expect 0 "stopped at step 3" "$P" --resume "$W/moved" --stop-at 3
  mv "$W/data/corpus.txt" "$W/corpus_moved.txt"
  before=$(snapshot "$W/moved")
  expect 1 "--train-file $first (" "$P" --resume "$W/moved"
  { cat "$CORPUS"; echo "one more line ."; } > "$W/corpus_other.txt"
  expect 1 "is not the data the checkpoint was trained on ($first" "$P" --resume "$W/moved" --corpus "$W/corpus_other.txt"
  expect_unchanged "$W/moved" "$before" "resumes with a missing or another corpus"
  expect 0 "done: step 4" "$P" --resume "$W/moved" --corpus "$W/corpus_moved.txt"
  ;;

signals)  # SIGINT and SIGTERM save and stop with 130 and 143; --resume without --out continues in place
  P=$BIN/bert_pretrain
  for sig in INT TERM; do
    R=$W/run_$sig
    "$P" "${SMALL[@]}" --steps 100000 --save-every 0 --out "$R" > "$W/$sig.log" 2>&1 &
    pid=$!
    wait_for_step "$R" || fail "SIG$sig: the run never logged a step"
    kill -s "$sig" "$pid"
    wait "$pid"
    rc=$?
    cases=$((cases + 1))
    [[ $sig == INT ]] && want=130 || want=143
    [[ $rc -eq $want ]] || fail "SIG$sig: exit status $rc, expected $want"$'\n'"$(cat "$W/$sig.log")"
    grep -q "stopped at step" "$W/$sig.log" || fail "SIG$sig: no 'stopped at step' line"
    ls "$R" | grep -q '^checkpoint-[0-9]*$' || fail "SIG$sig: no checkpoint saved"
  done
  step=$(ls "$W/run_TERM" | grep '^checkpoint-[0-9]*$' | sed 's/checkpoint-0*//')
  expect 0 "stopped at step $((step + 1))" "$P" --resume "$W/run_TERM" --stop-at $((step + 1))
  cases=$((cases + 1))
  [[ -d $W/run_TERM/checkpoint-$(printf %06d $((step + 1))) ]] || fail "--resume without --out did not write into the resumed run"
  ;;

kill_during_save)  # kill -9 at random moments of a run saving every step: the newest checkpoint always resumes
  P=$BIN/bert_pretrain
  R=$W/run
  "$P" "${SMALL[@]}" --steps 100000 --save-every 1 --keep 2 --stop-at 1 --out "$R" > /dev/null 2>&1 || fail "first run"
  for i in 1 2 3 4 5; do
    "$P" --resume "$R" --save-every 1 --keep 2 > /dev/null 2>&1 &
    pid=$!
    sleep "0.$((RANDOM % 6 + 4))"
    kill -9 "$pid" 2> /dev/null
    wait "$pid" 2> /dev/null
    for c in "$R"/checkpoint-*; do
      [[ $(basename "$c") == *.* ]] && continue  # a leftover of the killed save: removed by the next start
      cases=$((cases + 1))
      for f in config.json model.safetensors optimizer.safetensors optimizer.json training_state.json vocab.txt checksums.json; do
        [[ -s $c/$f ]] || fail "kill $i: $c lacks $f"
      done
    done
  done
  # the newest checkpoint resumes and takes a step; at or below its step, --stop-at trains nothing
  newest=$(ls "$R" | grep '^checkpoint-[0-9]*$' | sed 's/checkpoint-0*//' | sort -n | tail -1)
  expect 0 "stopped at step $((newest + 1))" "$P" --resume "$R" --save-every 1 --keep 2 --stop-at $((newest + 1))
  expect 0 "nothing to do" "$P" --resume "$R" --save-every 1 --keep 2 --stop-at $((newest + 1))
  cases=$((cases + 1))
  [[ -z $(ls "$R" | grep '^checkpoint-.*\.') ]] || fail "leftovers of killed saves were not removed: $(ls "$R")"
  ;;

shards)
  C=$BIN/create_pretraining_data
  P=$BIN/bert_pretrain
  S=$W/shards
  expect 0 "wrote" "$C" --input "$CORPUS" --vocab "$VOCAB" --output "$S" --max-seq-length 32 --max-predictions 5 --dupe-factor 1 --per-shard 500
  corpus=$S small
  expect 0 "done: step 2" "$P" "${SMALL[@]}" --steps 2 --out "$W/from_shards"
  # without --max-seq-length, a run on shards trains at the length they were made at (not bert_pretrain's 64)
  expect 0 "training at --max-seq-length 32, the length the shards in $S were made at" \
    "$P" --train-file "$S" --tokenizer "$VOCAB" --model "$CONFIG" --per-device-train-batch-size 4 --eval-steps 0 \
    --eval-instances 8 --threads 1 --max-steps 1 --bf16 --output-dir "$W/shard_length"
  cases=$((cases + 1))
  grep -q '"max_seq_length": 32' "$W/shard_length/checkpoint-000001/training_state.json" &&
    grep -q '"precision": "bf16"' "$W/shard_length/checkpoint-000001/training_state.json" ||
    fail "the shard-length run saved another length or precision: $(cat "$W/shard_length/checkpoint-000001/training_state.json")"
  corpus=$S seq=16 small
  expect 1 "--max-predictions 20 must be in [1, --max-seq-length 16]" "$P" "${SMALL[@]}" --max-predictions 20 --steps 2 --out "$W/o"
  expect 1 "sequences up to 32 tokens; --max-seq-length is 16" "$P" "${SMALL[@]}" --max-predictions 5 --steps 2 --out "$W/o"
  cp -r "$S" "$W/cut" && truncate -s 1000 "$W/cut/shard_00000.bin"
  corpus=$W/cut small
  expect 1 "shard_00000.bin: 1000 bytes" "$P" "${SMALL[@]}" --steps 2 --out "$W/o"
  rm "$W/cut/checksums.json"  # the reader's own checks, as for shards made before checksums
  expect 1 "truncated" "$P" "${SMALL[@]}" --steps 2 --out "$W/o"
  cp -r "$S" "$W/junk" && printf 'not a shard at all, but long enough for a header' > "$W/junk/shard_00001.bin"
  rm "$W/junk/checksums.json"
  corpus=$W/junk small
  expect 1 "not an xgrad pre-training shard" "$P" "${SMALL[@]}" --steps 2 --out "$W/o"
  mkdir -p "$W/no_shards"
  corpus=$W/no_shards small
  expect 1 "$W/no_shards" "$P" "${SMALL[@]}" --steps 2 --out "$W/o"
  : > "$W/a_file"
  expect 1 "--output-dir $W/a_file/sub: cannot create" "$C" --input "$W/never_read.txt" --vocab "$VOCAB" --output "$W/a_file/sub"
  expect 1 "--output-dir /proc/shards: cannot create" "$C" --input "$CORPUS" --vocab "$VOCAB" --output /proc/shards
  # checksums: a flipped bit of a token id, a stale shard, shards of another run mixed in
  cp -r "$S" "$W/flipped"
  printf '\x01' | dd of="$W/flipped/shard_00000.bin" bs=1 seek=60 conv=notrunc status=none
  corpus=$W/flipped small
  expect 1 "shard_00000.bin: CRC32C" "$P" "${SMALL[@]}" --steps 2 --out "$W/o"
  cp -r "$S" "$W/stale" && cp "$S/shard_00000.bin" "$W/stale/shard_00009.bin"
  corpus=$W/stale small
  expect 1 "shard_00009.bin: not among the shards listed" "$P" "${SMALL[@]}" --steps 2 --out "$W/o"
  expect 0 "wrote" "$C" --input "$CORPUS" --vocab "$VOCAB" --output "$W/s64" --max-seq-length 64 --max-predictions 5 --dupe-factor 1
  cp -r "$S" "$W/mixed" && cp "$W/s64/shard_00000.bin" "$W/mixed/shard_00009.bin" && rm "$W/mixed/checksums.json"
  corpus=$W/mixed seq=64 small
  expect 1 "shard_00009.bin: max_seq_length 64" "$P" "${SMALL[@]}" --steps 2 --out "$W/o"
  # a second run into the same folder replaces the first run's shards (here 5 shards, then 1)
  expect 0 "into 1 shard(s)" "$C" --input "$CORPUS" --vocab "$VOCAB" --output "$S" --max-seq-length 32 --max-predictions 5 --dupe-factor 1
  cases=$((cases + 1))
  [[ $(ls "$S" | grep -c '^shard_') -eq 1 ]] || fail "stale shards left: $(ls "$S")"
  corpus=$S small
  expect 0 "done: step 2" "$P" "${SMALL[@]}" --steps 2 --out "$W/from_new_shards"
  corpus=$S vocab=$SRC/data/bert-base-uncased-vocab.txt small
  expect 1 "made with a vocabulary of 400 tokens; the tokenizer has 30522" "$P" "${SMALL[@]}" --steps 2 --out "$W/o"
  # shards.json: shards of another pairing or tokenizer are refused (they trained silently: an NSP
  # head on MLM-only shards reported 100% NSP accuracy); shards made before it train, with a note
  expect 0 "wrote" "$C" --input "$CORPUS" --vocab "$VOCAB" --output "$W/sdoc" --pairing doc-sentences --max-seq-length 32 --max-predictions 5 --dupe-factor 1
  corpus=$W/sdoc small
  expect 1 "made with --pairing doc-sentences (shards.json); this run trains --pairing nsp" "$P" "${SMALL[@]}" --steps 2 --out "$W/o"
  expect 0 "done: step 2" "$P" "${SMALL[@]}" --pairing doc-sentences --steps 2 --out "$W/from_doc_shards"
  expect 0 "done: step 2" "$P" "${SMALL[@]}" --pairing full-sentences --steps 2 --out "$W/from_doc_shards_full"  # MLM alone either way
  # masks are fixed in shards: a masking flag that differs from shards.json's is refused, --max-ngram noted
  corpus=$S small
  expect 1 "the shards in $S were masked at 0.15 when they were made" "$P" "${SMALL[@]}" --masked-lm-prob 0.3 --steps 2 --out "$W/o"
  expect 1 "make them again with create_pretraining_data --whole-word-mask" "$P" "${SMALL[@]}" --whole-word-mask --steps 2 --out "$W/o"
  expect 0 "note: --max-ngram cannot change the masks" "$P" "${SMALL[@]}" --masked-lm-prob 0.15 --max-ngram 2 --steps 2 --out "$W/ngram"
  corpus=$S model=albert-tiny small  # ALBERT has no NSP head: only new shards can help
  expect 1 "--model albert-tiny (model_type albert) uses AlbertTokenizer, but the tokenizer given is a BertTokenizer" \
    "$P" "${SMALL[@]}" --steps 2 --out "$W/o"
  expect 1 "this run trains --pairing sop: make shards with create_pretraining_data --pairing sop" "$P" "${SMALL[@]}" --steps 2 \
    --allow-tokenizer-mismatch --out "$W/o"
  corpus=$S small
  expect 1 "made with another tokenizer" "$P" "${SMALL[@]}" --cased --steps 2 --out "$W/o"
  cp -r "$S" "$W/before_recipe" && rm "$W/before_recipe/shards.json" "$W/before_recipe/checksums.json"
  corpus=$W/before_recipe small
  expect 0 "has no shards.json" "$P" "${SMALL[@]}" --steps 2 --out "$W/from_old_shards"
  ;;

infer)
  I=$BIN/bert_infer
  R=$W/run
  make_run "$R"
  M=$R/checkpoint-000004
  before=$(snapshot "$R")
  expect 2 "--bogus" "$I" fill-mask --model "$M" --text "a [MASK]" --bogus
  expect 2 "--top-k" "$I" fill-mask --model "$M" --text "a [MASK]" --top-k abc
  expect 2 "--top-k" "$I" fill-mask --model "$M" --text "a [MASK]" --top-k -1
  expect 0 "[MASK] at token" "$I" fill-mask --model "$M" --text "the [MASK] sat" --top-k 2
  expect 1 "--model $W/missing: no such directory" "$I" fill-mask --model "$W/missing" --text "a [MASK]"
  expect 1 "the text has no [MASK]" "$I" fill-mask --model "$M" --text "no mask"
  expect 1 "config.json vocab_size is 400, but the tokenizer has 30522 tokens" \
    "$I" fill-mask --model "$M" --vocab "$SRC/data/bert-base-uncased-vocab.txt" --text "a [MASK]"
  printf 'fine\nbroken \xc3\x28 here\n' > "$W/bad_stdin.txt"
  STDIN_FILE=$W/bad_stdin.txt
  expect 1 "stdin line 2" "$I" tokenize --model "$M"
  expect 1 "stdin line 2" "$I" embed --model "$M"
  expect 1 "stdin line 2" "$I" classify --model "$SRC/tests/data/heads/seq_single" --vocab "$SRC/tests/data/heads/classify_vocab.txt"
  STDIN_FILE=/dev/null
  expect 1 "not a sequence classifier" "$I" classify --model "$M"
  expect 2 "--top-k" "$I" classify --model "$M" --top-k 0
  expect 1 "a directory" "$I" dump --model "$M" --inputs "$W/none.safetensors" --out "$W"
  expect 1 "$W/none.safetensors" "$I" dump --model "$M" --inputs "$W/none.safetensors" --out "$W/o.safetensors"
  mkdir -p "$W/vocab_dir"
  expect 1 "$W/vocab_dir" "$I" tokenize --vocab "$W/vocab_dir"
  cp -r "$M" "$W/broken" && printf '{"model_type": "bert", ' > "$W/broken/config.json"
  expect 1 "config.json" "$I" fill-mask --model "$W/broken" --text "a [MASK]"
  # a pytorch_model.bin that would run a command under torch.load: refused, naming the global
  cp -r "$M" "$W/pickled" && rm -f "$W/pickled/model.safetensors" "$W/pickled/checksums.json"
  cp "$SRC/tests/data/torch_pickle/global_os_system.bin" "$W/pickled/pytorch_model.bin"
  expect 1 "pytorch_model.bin: global 'posix.system' is not allowed" "$I" fill-mask --model "$W/pickled" --text "a [MASK]"
  printf 'one line\nand another\n' > "$W/two_lines.txt"
  STDIN_FILE=$W/two_lines.txt
  expect 0 "" "$I" embed --model "$M" --pooling mean --normalize
  # RoBERTa's positions start at pad_token_id + 1: a line longer than the table is cut to 40 - 2 tokens
  printf '{"model_type": "roberta", "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32,
 "max_position_embeddings": 40, "type_vocab_size": 1}\n' > "$W/roberta.json"
  STDIN_FILE=/dev/null
  expect 0 "done: step 1" "$BIN/bert_pretrain" --corpus "$CORPUS" --model "$W/roberta.json" --train-vocab 300 --seq-len 32 \
    --batch 4 --eval-every 0 --threads 1 --steps 1 --out "$W/roberta"
  seq 1 200 | tr '\n' ' ' > "$W/long_line.txt"
  STDIN_FILE=$W/long_line.txt
  expect 0 "" "$I" embed --model "$W/roberta/checkpoint-000001"
  # CRLF input reads as LF (byte-level BPE would make the CR a token)
  cases=$((cases + 1))
  lf=$(printf 'the cat sat\n' | "$I" tokenize --model "$W/roberta/checkpoint-000001" 2>&1)
  crlf=$(printf 'the cat sat\r\n' | "$I" tokenize --model "$W/roberta/checkpoint-000001" 2>&1)
  [[ -n $lf && $lf == "$crlf" ]] || fail "CRLF tokenizes as '$crlf', LF as '$lf'"
  cases=$((cases + 1))
  lf=$(printf 'the cat sat\n' | "$I" embed --model "$W/roberta/checkpoint-000001" 2>&1)
  crlf=$(printf 'the cat sat\r\n' | "$I" embed --model "$W/roberta/checkpoint-000001" 2>&1)
  [[ -n $lf && $lf == "$crlf" ]] || fail "CRLF embeds differently from LF"
  # input that cannot be read is an error, not an empty input
  STDIN_FILE=$W/vocab_dir
  expect 1 "stdin: reading failed" "$I" embed --model "$M"
  STDIN_FILE=/dev/null
  expect 1 "$W/vocab_dir: reading failed" "$I" qa --model "$SRC/tests/data/heads/qa" --vocab "$SRC/tests/data/heads/classify_vocab.txt" --input "$W/vocab_dir"
  expect 2 "--max-query-length" "$I" qa --model "$SRC/tests/data/heads/qa" --vocab "$SRC/tests/data/heads/classify_vocab.txt" --max-query-length 0
  expect 1 "--cased applies to a vocab.txt" "$I" tokenize --vocab "$M" --cased
  expect 2 "--threads" "$I" bench --model tiny --steps 1 --threads 100000
  # a WordPiece vocabulary on a RoBERTa model: its [PAD] is not the model's pad_token_id 1
  expect 1 "config.json pad_token_id is 1, but the tokenizer pads with id 0 ([PAD])" \
    "$I" embed --model "$W/roberta/checkpoint-000001" --vocab "$SRC/tests/data/heads/classify_vocab.txt"
  STDIN_FILE=/dev/null
  expect 0 "tokens/s: " "$I" bench --model "$M" --batch 2 --seq-len 8 --steps 1 --threads 1
  expect 0 "tokens/s: " "$I" bench --model tiny --batch 1 --seq-len 4 --steps 1
  expect 0 "read at each first token" "$I" bench --model albert-tiny --batch 2 --seq-len 8 --steps 1 --first-token
  expect 0 "last_hidden_state vs fp32: max abs diff" "$I" bench --model "$M" --batch 2 --seq-len 8 --steps 1 --threads 1 --precision bf16
  expect 2 "--precision" "$I" bench --model "$M" --steps 1 --precision fp16
  expect 1 "sequence length 600 exceeds max_position_embeddings" "$I" bench --model "$M" --seq-len 600 --steps 1
  expect 1 "unknown preset 'huge'" "$I" bench --model huge --steps 1
  expect 2 "--batch-size" "$I" bench --model "$M" --batch 0
  expect 1 "inference needs about" "$I" bench --model base --batch-size 100000000 --steps 1
  expect 2 "--threads" "$I" bench --model "$M" --threads -2
  # real text: the checkpoint's own tokenizer, or --vocab with a preset; too few lines, a missing file
  expect 0 "2 lines of $W/two_lines.txt" "$I" bench --model "$M" --batch 2 --seq-len 8 --steps 1 --sentences "$W/two_lines.txt"
  expect 1 "fewer than --batch-size 3" "$I" bench --model "$M" --batch 3 --steps 1 --sentences "$W/two_lines.txt"
  expect 1 "cannot read --sentences $W/none.txt" "$I" bench --model "$M" --steps 1 --sentences "$W/none.txt"
  expect 1 "--sentences needs --tokenizer" "$I" bench --model tiny --steps 1 --sentences "$W/two_lines.txt"
  # --precision on a command that runs a model
  STDIN_FILE=$W/two_lines.txt
  expect 0 "" "$I" embed --model "$M" --precision bf16
  STDIN_FILE=/dev/null
  expect 2 "--precision" "$I" embed --model "$M" --precision fp16
  expect 2 "--precision" "$I" tokenize --model "$M" --precision bf16
  expect_unchanged "$R" "$before" "bert_infer reads only"
  ;;

disk_full)  # a 400 KB tmpfs (two checkpoints of 160 KB): the third save fails cleanly, the checkpoints already there stay whole
  mkdir -p "$W/small"
  if ! mount -t tmpfs -o size=400k tmpfs "$W/small" 2> /dev/null; then
    echo "SKIP [$GROUP] cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): disk-full case not run"
    exit 0
  fi
  trap 'umount "$W/small"; rm -rf "$W"' EXIT
  P=$BIN/bert_pretrain
  expect 0 "stopped at step 1" "$P" "${SMALL[@]}" --steps 40 --stop-at 1 --out "$W/small/run"
  before=$(snapshot "$W/small/run/checkpoint-000001")
  expect 1 "disk full" "$P" --resume "$W/small/run" --save-every 1 --keep 100
  expect_unchanged "$W/small/run/checkpoint-000001" "$before" "a save that ran out of space"
  for c in "$W"/small/run/checkpoint-*; do
    [[ -e $c ]] || continue
    [[ $(basename "$c") == *.* ]] && fail "a failed save left $c"
    [[ -s $c/training_state.json && -s $c/model.safetensors ]] || fail "$c is incomplete"
  done
  ;;

finetune)
  F=$BIN/bert_finetune
  printf 'label\ttext\n1\tgood\n0\tbad\n' > "$W/train.tsv"
  # ft: sets FT to a fast run's flags; train=, dev=, model=, batch= before it change one.
  ft() { FT=(--train "${train:-$W/train.tsv}" --dev "${dev-$W/train.tsv}" --vocab "$VOCAB" --model "${model:-$CONFIG}"
             --max-len 16 --batch "${batch:-2}" --threads 1 --out "$W/ft$((cases + 1))"); }
  expect 2 "--bogus" "$F" --bogus
  expect 2 "--max-seq-length" "$F" --max-len 2
  expect 2 "--warmup-ratio" "$F" --warmup-ratio 2
  expect 1 "--train-file is required" "$F"
  ft; expect 1 "--sampling applies to --multi-task runs only" "$F" "${FT[@]}" --sampling round_robin
  expect 1 "--multi-task takes no --train-file" "$F" --multi-task "$W/none.json" --train "$W/train.tsv"
  train=$W/none.tsv ft && expect 1 "$W/none.tsv: cannot open" "$F" "${FT[@]}"
  dev="" ft && expect 1 "--validation-file is required" "$F" "${FT[@]}"
  batch=2000000000 ft && expect 1 "activations for --per-device-train-batch-size 2000000000 x --max-seq-length 16" "$F" "${FT[@]}"
  printf 'label\ttext\n1\tfine\n2\tnew label\n' > "$W/dev.tsv"
  dev=$W/dev.tsv ft && expect 1 "$W/dev.tsv:3: unknown label '2'" "$F" "${FT[@]}"
  printf 'label\ttext\n1\tfine\textra\n' > "$W/wide.tsv"
  dev=$W/wide.tsv ft && expect 1 "$W/wide.tsv:2: 3 fields where the header has 2" "$F" "${FT[@]}"
  printf 'text,label\n"never closed,1\n' > "$W/open.csv"
  dev=$W/open.csv ft && expect 1 "$W/open.csv:2: a quoted field is never closed" "$F" "${FT[@]}"
  model=$W/nothing/config.json ft && expect 1 "no such config file" "$F" "${FT[@]}"
  mkdir -p "$W/empty_model"
  model=$W/empty_model ft && expect 1 "config.json" "$F" "${FT[@]}"
  printf 'label\ttext\npos\tfine\n' > "$W/words.tsv"
  train=$W/words.tsv ft && expect 1 "$W/words.tsv:2: the label 'pos' is not a number" "$F" "${FT[@]}" --regression
  # a good run of one step: its report holds the dev scores
  ft && expect 0 "final scores" "$F" "${FT[@]}" --epochs 1 --report "$W/report.json"
  cases=$((cases + 1))
  grep -q '"accuracy"' "$W/report.json" || fail "no accuracy in $W/report.json"
  # a preset says it trains from random weights; --vocab with a checkpoint that has its own tokenizer is refused
  ft && expect 0 "from random weights: --model $CONFIG is a preset" "$F" "${FT[@]}" --steps 1
  best=$(ls -d "$W"/ft*/best | head -1)
  printf 'label\ttext\n1\tgood\n1\tfine\n' > "$W/one_label.tsv"
  train=$W/one_label.tsv ft && expect 1 "every example has the label '1': a classifier needs two or more labels" "$F" "${FT[@]}"
  printf 'John O\nsmiled O\n\nMary O\n' > "$W/all_o.conll"
  train=$W/all_o.conll dev=$W/all_o.conll ft && expect 1 "no entities in its 2 sentences (every tag is O)" "$F" "${FT[@]}" --task ner
  model=roberta-tiny ft && expect 1 "--model roberta-tiny (model_type roberta) uses RobertaTokenizer, but the tokenizer given is a BertTokenizer" \
    "$F" "${FT[@]}" --steps 1
  model=$best ft && expect 1 "--tokenizer applies to a preset, or to a checkpoint without tokenizer files; $best has its own" \
    "$F" "${FT[@]}" --steps 1
  # an output that is an input (however spelled, or linked), or that cannot be written, is refused
  # before any training, and the input is left as it was
  cp "$W/train.tsv" "$W/dev_copy.tsv" && ln -sf dev_copy.tsv "$W/dev_link.tsv"
  before=$(sha256sum < "$W/dev_copy.tsv")
  dev=$W/dev_copy.tsv ft && expect 1 "--predictions $W/dev_copy.tsv is the file --validation-file $W/dev_copy.tsv reads" \
    "$F" "${FT[@]}" --epochs 1 --predictions "$W/dev_copy.tsv"
  dev=$W/dev_copy.tsv ft && expect 1 "is the file --validation-file $W/dev_copy.tsv reads" \
    "$F" "${FT[@]}" --epochs 1 --report "$W/../$(basename "$W")/dev_link.tsv"
  cases=$((cases + 1))
  [[ $(sha256sum < "$W/dev_copy.tsv") == "$before" ]] || fail "--predictions/--report replaced the dev set"
  ft && expect 1 "--report $W/no_such_dir/r.json: the folder $W/no_such_dir does not exist" \
    "$F" "${FT[@]}" --epochs 1 --report "$W/no_such_dir/r.json"
  ft && expect 1 "--predictions $W: a directory" "$F" "${FT[@]}" --epochs 1 --predictions "$W"
  ft && expect 1 "--test-file $W/none.tsv: no such file" "$F" "${FT[@]}" --epochs 1 --test "$W/none.tsv"
  # predictions into the run's own --output-dir, which the run creates
  run_dir=$W/ft$((cases + 1))
  ft && expect 0 "final scores" "$F" "${FT[@]}" --epochs 1 --predictions "$run_dir/dev.tsv"
  cases=$((cases + 1))
  [[ -s $run_dir/dev.tsv ]] || fail "no predictions in $run_dir/dev.tsv"
  # padding-free layers: texts of different lengths, so the batch has padding to drop
  printf 'label\ttext\n1\tgood and fine and well\n0\tbad\n' > "$W/ragged.tsv"
  train=$W/ragged.tsv dev=$W/ragged.tsv ft && expect 0 "final scores" "$F" "${FT[@]}" --epochs 1 --padding-free
  # ... and question answering, whose span logits leave the padding out
  printf '{"data": [{"title": "t", "paragraphs": [{"context": "The ferry leaves at seven.", "qas": [{"id": "1", "question": "When?", "answers": [{"text": "seven", "answer_start": 20}]}, {"id": "2", "question": "What leaves?", "answers": [{"text": "The ferry", "answer_start": 0}]}]}]}]}' > "$W/squad.json"
  train=$W/squad.json dev=$W/squad.json ft && expect 0 "final scores" "$F" "${FT[@]}" --task squad --padding-free --epochs 1
  # stopped and resumed with none of its flags: the checkpoint's settings (--batch 2), not fine-tuning's defaults
  R=$W/ft$((cases + 1))
  ft && expect 0 "stopped at step 1" "$F" "${FT[@]}" --epochs 2 --stop-at 1
  expect 0 "final scores" "$F" --resume "$R" --threads 1
  # learning curves: a bad list of sizes is a bad command line; a small curve writes its rows and summary
  ft && expect 2 "--learning-curve 'abc'" "$F" "${FT[@]}" --learning-curve abc
  ft && expect 2 "--learning-curve '1,1'" "$F" "${FT[@]}" --learning-curve 1,1
  R=$W/ft$((cases + 1))
  ft && expect 0 "learning curve (dev" "$F" "${FT[@]}" --learning-curve 1,all --curve-seeds 2 --min-steps 2 --epochs 1
  cases=$((cases + 1))
  [[ $(wc -l < "$R/learning_curve.csv") -eq 5 && $(wc -l < "$R/learning_curve_summary.csv") -eq 3 ]] ||
    fail "learning curve files in $R: $(cat "$R"/learning_curve*.csv 2>&1)"
  # moved data: a resumed run takes the same files from their new place, and refuses others
  mkdir -p "$W/ftdata" && cp "$W/train.tsv" "$W/ftdata/train.tsv" && cp "$W/train.tsv" "$W/ftdata/dev.tsv"
  train=$W/ftdata/train.tsv dev=$W/ftdata/dev.tsv ft
  expect 0 "stopped at step 1" "$F" "${FT[@]:0:${#FT[@]}-2}" --steps 3 --stop-at 1 --out "$W/ftmove"
  first=$(realpath -s "$W/ftdata/train.tsv")  # as saved: absolute and normalised
  mv "$W/ftdata" "$W/ftdata2"
  expect 1 "--train-file $first (" "$F" --resume "$W/ftmove"
  printf 'label\ttext\n0\tgood\n1\tbad\n' > "$W/swapped.tsv"  # the same size, other labels
  expect 1 "is not the data the checkpoint was trained on ($first" \
    "$F" --resume "$W/ftmove" --train "$W/swapped.tsv" --dev "$W/ftdata2/dev.tsv"
  expect 0 "final scores" "$F" --resume "$W/ftmove" --train "$W/ftdata2/train.tsv" --dev "$W/ftdata2/dev.tsv"
  ;;

*)
  echo "unknown group $GROUP"
  exit 2
  ;;
esac

echo "[$GROUP] $cases cases, $failures failed"
[[ $failures -eq 0 ]]
