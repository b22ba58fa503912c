#!/usr/bin/env bash
# Data-parallel training over MPI, with 2 ranks on this machine:
#   data_parallel.sh BIN_DIR SOURCE_DIR MPIEXEC GROUP
# GROUP: pretrain   2 ranks x batch 4 = 1 rank x batch 8 (10 steps, 2 micro-batches, clipping), MLM+NSP;
#                   a parameter only one rank reaches is stepped alike on both (dp_check unused)
#        families   the same for RoBERTa (MLM) and ALBERT (MLM+SOP with LAMB)
#        finetune   the same for sequence classification (bert_finetune); --epochs evaluates once per epoch
#        resume     2 ranks stopped at step 5 and resumed = 2 ranks straight through
#        faults     a rank's weights nudged: the checksum stops the run (before step 1 too); a rank killed:
#                   the job ends; a rank stopped (SIGSTOP): the watchdog ends the job naming it; SIGUSR1 to mpirun: every rank stops at one step, saved; a NaN on one rank:
#                   both stop at one step; different settings (--batch, --stop-at): refused, naming the option;
#                   a setup error on rank 0 (--out taken, --resume without a checkpoint, --tensorboard), on
#                   every rank (empty corpus, warm-up too long), or on rank 1 while rank 0 builds its task
#                   (its own error, a vocabulary, another --model config from text or shards): every rank
#                   ends with one of them; --eval-only under mpirun: refused on every rank
set -u
BIN=$1
SRC=$2
MPIEXEC=$3
GROUP=$4
W=$(mktemp -d "${TMPDIR:-/tmp}/xgrad_dp_${GROUP}.XXXXXX")
trap 'rm -rf "$W"' EXIT
failures=0
fail() {
  echo "FAIL [$GROUP] $*"
  failures=$((failures + 1))
}
# Two ranks, one thread each, whatever the machine's core count; root in containers.
MPI=("$MPIEXEC" --allow-run-as-root --oversubscribe --bind-to none -np 2)
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none

# No dropout: the ranks' dropout masks differ from one rank's (their examples are the same).
printf '{"model_type": "bert", "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32,
 "max_position_embeddings": 32, "type_vocab_size": 2, "hidden_dropout_prob": 0, "attention_probs_dropout_prob": 0}\n' > "$W/config.json"
VOCAB=$SRC/tests/data/pretrain_v1/checkpoint-000003/vocab.txt
TRAINING=(--corpus "$SRC/tests/data/pretrain_sample.txt" --seq-len 32 --eval-every 0 --eval-instances 8 --log-every 1
          --threads 1 --grad-accum 2 --clip 0.05 --lr 3e-3 --warmup 2)
UNTIMED=("${TRAINING[@]}" --vocab "$VOCAB" --model "$W/config.json")
PRETRAIN=("${UNTIMED[@]}" --steps 10)

# run LOG COMMAND...: runs it, failing with its log when it fails
run() {
  local log=$1
  shift
  "$@" > "$log" 2>&1 || fail "exit status $?: $*"$'\n'"$(tail -20 "$log")"
}
# same_weights A B: the final checkpoints' weights agree within 1e-5
same_weights() {
  local out
  out=$("$BIN/dp_check" compare "$1/model.safetensors" "$2/model.safetensors" 1e-5) || fail "$1 vs $2: $out"
  echo "$1 vs $2: $out"
}
# expect_failure TEXT COMMAND...: a non-zero exit status and TEXT in the output
expect_failure() {
  local text=$1
  shift
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  [[ $rc -ne 0 ]] || fail "exit status 0, expected a failure: $*"
  [[ $out == *"$text"* ]] || fail "message lacks '$text': $*"$'\n'"$out"
}

case $GROUP in
pretrain)
  run "$W/two.log" "${MPI[@]}" "$BIN/bert_pretrain" "${PRETRAIN[@]}" --batch 4 --out "$W/two"
  run "$W/one.log" "$BIN/bert_pretrain" "${PRETRAIN[@]}" --batch 8 --out "$W/one"
  same_weights "$W/two/checkpoint-000010" "$W/one/checkpoint-000010"
  grep -q "data-parallel over 2 ranks" "$W/two.log" || fail "the 2-rank run does not say it is data-parallel"
  # a parameter one rank reaches and the other does not: both step it alike
  run "$W/unused.log" timeout 60 "${MPI[@]}" "$BIN/dp_check" unused
  grep -q "unused parameters: ok over 2 ranks" "$W/unused.log" || fail "dp_check unused: $(cat "$W/unused.log")"
  # the logged losses are the global batch's: each step's within 1e-5 of the single rank's
  losses() { grep -o '"loss":[0-9.]*' "$1" | cut -d: -f2; }
  paste <(losses "$W/two/metrics.jsonl") <(losses "$W/one/metrics.jsonl") |
    awk 'NF != 2 || ($1 - $2) > 1e-5 || ($2 - $1) > 1e-5 { bad = 1 } END { exit bad || NR != 10 }' ||
    fail "logged losses differ:"$'\n'"$(paste <(losses "$W/two/metrics.jsonl") <(losses "$W/one/metrics.jsonl"))"
  ;;
families)
  # RoBERTa (MLM alone, byte-level BPE), ALBERT (MLM + SOP, LAMB, n-gram masks, SentencePiece) and ELECTRA,
  # each with a small vocabulary trained from the corpus (under mpirun by rank 0 alone, the others
  # opening its files: the same vocabulary, so the same weights)
  printf '{"model_type": "albert", "hidden_size": 16, "embedding_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2,
 "intermediate_size": 32, "max_position_embeddings": 32, "hidden_dropout_prob": 0, "attention_probs_dropout_prob": 0,
 "classifier_dropout_prob": 0}\n' > "$W/albert.json"
  printf '{"model_type": "roberta", "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32,
 "max_position_embeddings": 40, "type_vocab_size": 1, "hidden_dropout_prob": 0, "attention_probs_dropout_prob": 0}\n' > "$W/roberta.json"
  # ELECTRA (replaced-token detection): the generator's draws are a function of each sequence's
  # place in the stream, so two ranks of 4 draw what one rank of 8 does
  printf '{"model_type": "electra", "hidden_size": 16, "embedding_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2,
 "intermediate_size": 32, "max_position_embeddings": 32, "hidden_dropout_prob": 0, "attention_probs_dropout_prob": 0,
 "generator": {"hidden_size": 8, "num_attention_heads": 1, "intermediate_size": 16, "num_hidden_layers": 1}}\n' > "$W/electra.json"
  for family in albert roberta electra; do
    FAMILY=("${TRAINING[@]}" --steps 10 --model "$W/$family.json")
    run "$W/$family-one.log" "$BIN/bert_pretrain" "${FAMILY[@]}" --train-vocab 300 --batch 8 --out "$W/$family-one"
    run "$W/$family-two.log" "${MPI[@]}" "$BIN/bert_pretrain" "${FAMILY[@]}" --train-vocab 300 --batch 4 \
      --out "$W/$family-two"
    same_weights "$W/$family-two/checkpoint-000010" "$W/$family-one/checkpoint-000010"
  done
  ;;
finetune)
  # 24 examples of two labels: an epoch is 3 global batches of 8
  { printf 'label\ttext\n'
    for i in $(seq 1 12); do printf '1\tgood fine great day %d\n0\tbad awful poor day %d\n' "$i" "$i"; done; } > "$W/train.tsv"
  FT=(--train "$W/train.tsv" --dev "$W/train.tsv" --vocab "$VOCAB" --model "$W/config.json" --max-len 16 --threads 1
      --epochs 0 --steps 10 --grad-accum 2 --clip 0.05 --lr 3e-3 --eval-every 10)
  run "$W/two.log" "${MPI[@]}" "$BIN/bert_finetune" "${FT[@]}" --batch 4 --out "$W/two"
  run "$W/one.log" "$BIN/bert_finetune" "${FT[@]}" --batch 8 --out "$W/one"
  same_weights "$W/two/checkpoint-000010" "$W/one/checkpoint-000010"
  # --epochs with the default --eval-every: once per epoch of global batches, as one rank does
  # (an epoch is 2 steps of 2 x 8 examples: evaluations at steps 2, 4 and the last, 5)
  EPOCHS=(--train "$W/train.tsv" --dev "$W/train.tsv" --vocab "$VOCAB" --model "$W/config.json" --max-len 16 --threads 1
          --epochs 3 --grad-accum 2 --lr 3e-3)
  run "$W/two_epochs.log" "${MPI[@]}" "$BIN/bert_finetune" "${EPOCHS[@]}" --batch 4 --out "$W/two_epochs"
  run "$W/one_epochs.log" "$BIN/bert_finetune" "${EPOCHS[@]}" --batch 8 --out "$W/one_epochs"
  eval_steps() { grep '"eval_' "$1" | grep -o '"step":[0-9]*' | cut -d: -f2 | tr '\n' ' '; }
  [[ "$(eval_steps "$W/two_epochs/metrics.jsonl")" == "2 4 5 " && "$(eval_steps "$W/one_epochs/metrics.jsonl")" == "2 4 5 " ]] ||
    fail "evaluated at steps '$(eval_steps "$W/two_epochs/metrics.jsonl")' (2 ranks) and '$(eval_steps "$W/one_epochs/metrics.jsonl")' (1 rank), expected '2 4 5 '"
  ;;
resume)
  run "$W/straight.log" "${MPI[@]}" "$BIN/bert_pretrain" "${PRETRAIN[@]}" --batch 4 --out "$W/straight"
  run "$W/first.log" "${MPI[@]}" "$BIN/bert_pretrain" "${PRETRAIN[@]}" --batch 4 --out "$W/split" --stop-at 5
  # the ranks may spell the checkpoint's path differently: rank 0 resolves it for all
  run "$W/second.log" "$MPIEXEC" --allow-run-as-root --oversubscribe --bind-to none -np 1 "$BIN/bert_pretrain" --resume "$W/split" \
    --threads 1 : -np 1 "$BIN/bert_pretrain" --resume-from-checkpoint "$W/split/" --threads 1
  same_weights "$W/straight/checkpoint-000010" "$W/split/checkpoint-000010"
  cmp -s "$W/straight/checkpoint-000010/optimizer.safetensors" "$W/split/checkpoint-000010/optimizer.safetensors" ||
    fail "the resumed run's optimizer state differs from the straight run's"
  grep -q '"world_size": 2' "$W/split/checkpoint-000010/training_state.json" || fail "training_state.json lacks world_size 2"
  # another world size continues from the next unread example, and says so
  run "$W/third.log" "$BIN/bert_pretrain" --resume "$W/split/checkpoint-000005" --out "$W/one_rank" --threads 1
  grep -q "written by 2 rank(s), this run has 1" "$W/third.log" || fail "no note on the changed world size"
  ;;
faults)
  expect_failure "the weights of rank 1 differ from rank 0's (first: " \
    timeout 60 "${MPI[@]}" "$BIN/dp_check" pretrain "${PRETRAIN[@]}" --batch 4 --out "$W/perturbed" --check-every 3 \
    --fault perturb --fault-rank 1 --fault-at 3
  start=$(date +%s)
  expect_failure "exited on signal 9" \
    timeout 60 "${MPI[@]}" "$BIN/dp_check" pretrain "${PRETRAIN[@]}" --batch 4 --out "$W/killed" --fault kill --fault-rank 1 --fault-at 5
  (($(date +%s) - start < 30)) || fail "the job took $(($(date +%s) - start)) s to end after a rank died"
  # a rank stopped (alive, silent): the watchdog ends the job past --collective-timeout, naming it,
  # and the last checkpoint resumes
  start=$(date +%s)
  expect_failure "rank(s) 1 did not answer within 10 s" \
    timeout 120 "${MPI[@]}" "$BIN/dp_check" pretrain "${PRETRAIN[@]}" --batch 4 --out "$W/stopped_rank" --save-every 2 \
    --collective-timeout 3 --fault stop --fault-rank 1 --fault-at 7
  (($(date +%s) - start < 60)) || fail "the job took $(($(date +%s) - start)) s to end after a rank stopped"
  run "$W/after_stop.log" "$BIN/bert_pretrain" --resume "$W/stopped_rank" --out "$W/after_stop" --threads 1
  # SIGUSR1 to mpirun reaches every rank: they stop at the same step, and rank 0 saves it (mpirun
  # passes SIGTERM on too, but kills the ranks a second later: they may still be saving)
  "${MPI[@]}" "$BIN/bert_pretrain" "${UNTIMED[@]}" --steps 100000 --batch 4 --out "$W/stopped" > "$W/stopped.log" 2>&1 &
  launcher=$!
  for _ in $(seq 600); do [[ -s "$W/stopped/metrics.jsonl" ]] && break; sleep 0.1; done
  kill -USR1 $launcher
  wait $launcher
  # (mpirun may stop forwarding the ranks' output once signalled: the checkpoint is the evidence)
  ls "$W"/stopped/checkpoint-*/training_state.json > /dev/null 2>&1 ||
    fail "no checkpoint saved at SIGUSR1:"$'\n'"$(tail -5 "$W/stopped.log")"
  expect_failure "--per-device-train-batch-size is 4 on rank 0 and 8 on rank 1" \
    timeout 60 "$MPIEXEC" --allow-run-as-root --oversubscribe --bind-to none -np 1 "$BIN/bert_pretrain" "${PRETRAIN[@]}" --batch 4 \
    --out "$W/mismatch" : -np 1 "$BIN/bert_pretrain" "${PRETRAIN[@]}" --batch 8 --out "$W/mismatch"
  # run control too: a rank stopping at step 2 would leave the other waiting in step 3's all-reduce
  expect_failure "--stop-at is 2 on rank 0 and -1 on rank 1" \
    timeout 60 "$MPIEXEC" --allow-run-as-root --oversubscribe --bind-to none -np 1 "$BIN/bert_pretrain" "${PRETRAIN[@]}" --batch 4 \
    --stop-at 2 --out "$W/mismatch" : -np 1 "$BIN/bert_pretrain" "${PRETRAIN[@]}" --batch 4 --out "$W/mismatch"
  # a NaN on one rank reaches every rank's summed loss: all stop together at that step, none aborts
  out=$(timeout 60 "${MPI[@]}" "$BIN/dp_check" pretrain "${PRETRAIN[@]}" --batch 4 --out "$W/nan" --check-every 0 \
    --fault nan --fault-rank 1 --fault-at 2 2>&1) && fail "a NaN loss did not stop the run"
  [[ $out == *"step 1: the loss is"*"stopped before updating"* ]] || fail "no non-finite stop at step 1 (two micro-batches a step):"$'\n'"$out"
  [[ $out != *"ending every rank"* ]] || fail "a non-finite stop aborted rank by rank:"$'\n'"$out"
  # an error met while setting up, by rank 0 alone (its --out holds another run, its --resume names
  # no checkpoint, its --tensorboard cannot be made), by every rank (an empty corpus, a warm-up as
  # long as the run), or by rank 1 alone while rank 0 builds its task (with a vocabulary, whose own
  # agreement rank 1 meets in the task's; or a task that cannot split its batches, an error rank 0
  # meets): every rank ends with it, none through MPI_Abort, none waiting (a timeout)
  mkdir -p "$W/taken" && touch "$W/taken/notes.txt" && : > "$W/empty.txt"
  setup_error() {  # PROGRAM EXPECTED ARGS...
    local program=$1 expected=$2 out
    shift 2
    out=$(timeout 30 "${MPI[@]}" "$BIN/$program" "$@" 2>&1)
    local rc=$?
    setup_output=$out
    ((rc != 0)) || { fail "$program $* did not fail"; return; }
    (($(grep -c "^$program: .*$expected" <<< "$out") == 2)) ||
      fail "not both ranks ended with '$expected' ($program $*):"$'\n'"$out"
    [[ $out != *"ending every rank"* ]] || fail "a setup error ended the ranks through MPI_Abort ($program $*):"$'\n'"$out"
  }
  setup_error bert_pretrain "holds files no training run wrote" "${PRETRAIN[@]}" --batch 4 --out "$W/taken"
  setup_error bert_pretrain "no checkpoint with" "${PRETRAIN[@]}" --batch 4 --resume "$W/taken"
  setup_error bert_pretrain "notes.txt: cannot create the directory" "${PRETRAIN[@]}" --batch 4 --out "$W/tb" \
    --tensorboard "$W/taken/notes.txt"
  setup_error bert_pretrain "no text (empty corpus)" --corpus "$W/empty.txt" --vocab "$VOCAB" --model "$W/config.json" \
    --steps 10 --batch 4 --out "$W/empty"
  setup_error bert_pretrain "needs total_steps (10) > warmup_steps (20)" --corpus "$SRC/tests/data/pretrain_sample.txt" \
    --vocab "$VOCAB" --model "$W/config.json" --seq-len 32 --steps 10 --warmup 20 --batch 4 --out "$W/long_warmup"
  setup_error dp_check "rank 1: rank 1's task failed to build" pretrain "${TRAINING[@]}" --model "$W/config.json" \
    --train-vocab 300 --steps 10 --batch 4 --out "$W/setup_vocab" --fault setup --fault-rank 1
  [[ $setup_output == *"training vocabulary"* ]] || fail "rank 0 trained no vocabulary (nothing nested):"$'\n'"$setup_output"
  setup_error dp_check "cannot split its batches" pretrain "${PRETRAIN[@]}" --batch 4 --out "$W/unsplittable" \
    --fault unsplittable --fault-rank 1
  # a node whose copy of the --model config names another model_type: without a tokenizer, rank 0's
  # (BERT: the bundled vocabulary, found from the source tree) is opened where rank 1's (RoBERTa)
  # would be trained; both still meet in the vocabulary's collectives, and both end with rank 1's error
  printf '{"model_type": "roberta", "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32,
 "max_position_embeddings": 40, "type_vocab_size": 1}\n' > "$W/roberta.json"
  pushd "$SRC" > /dev/null
  other_config="rank 1: \[vocabulary\] model_type 'roberta' needs a trained vocabulary here, and rank 0 trained none"
  setup_error dp_check "$other_config" \
    pretrain "${TRAINING[@]}" --model "$W/config.json" --steps 10 --batch 4 --out "$W/other_model" \
    --fault model --fault-rank 1 --fault-model "$W/roberta.json"
  # ... and with shards as --corpus: rank 1's error still names the config, not the shards
  "$BIN/create_pretraining_data" --input "$SRC/tests/data/pretrain_sample.txt" --vocab data/bert-base-uncased-vocab.txt \
    --output "$W/shards" --max-seq-length 32 --dupe-factor 1 > "$W/shards.log" 2>&1 || fail "create_pretraining_data: $(cat "$W/shards.log")"
  setup_error dp_check "$other_config" \
    pretrain --corpus "$W/shards" --model "$W/config.json" --seq-len 32 --steps 10 --batch 4 --out "$W/other_model_shards" \
    --fault model --fault-rank 1 --fault-model "$W/roberta.json"
  popd > /dev/null
  # --eval-only evaluates in one process: refused under mpirun, on every rank
  setup_error bert_pretrain "--eval-only runs in one process" "${PRETRAIN[@]}" --batch 4 --eval-only --init-from "$W/taken"
  # ... and one on rank 1 alone, whatever it threw: both ranks name rank 1
  for what in error other nested; do
    out=$(timeout 60 "${MPI[@]}" "$BIN/dp_check" fail "$what" 2>&1)
    (($(grep -c "^rank [01] stopped: rank 1: " <<< "$out") == 2)) || fail "fail_together on rank 1 ($what):"$'\n'"$out"
  done
  # weights that differ before the first step (a node's own copy of --model differs): refused at once
  expect_failure "the ranks start from different weights" \
    timeout 60 "${MPI[@]}" "$BIN/dp_check" pretrain "${PRETRAIN[@]}" --batch 4 --out "$W/start_perturbed" --check-every 0 \
    --fault perturb --fault-rank 1 --fault-at 0
  ;;
*)
  echo "unknown group $GROUP"
  exit 2
  ;;
esac
if ((failures > 0)); then
  echo "$failures failure(s) in $GROUP"
  exit 1
fi
echo "data_parallel $GROUP: all passed"
