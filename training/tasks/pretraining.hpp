#pragma once
// Pre-training as a Task, for every registered family with pre-training heads: MLM plus the
// family's sentence task, each family's recipe by default:
//   BERT     MLM + next-sentence prediction on sentence pairs (BertForPreTraining);
//   RoBERTa  MLM only on FULL-SENTENCES packed sequences, Adam beta2 0.98, eps 1e-6 (RobertaForMaskedLM);
//   ALBERT   MLM + sentence-order prediction on sentence pairs (AlbertForPreTraining);
//   ELECTRA  replaced-token detection: a generator's MLM + the discriminator (ElectraForPreTraining).
// --pairing picks another (BERT or ALBERT with MLM only on packed sequences: *ForMaskedLM).
// Data from raw text (instances made on the fly, a fresh mask every time: dynamic masking) or
// static shards. 2% of the documents, at least two, spread through the corpus (of shards, those
// in their held_out.bin) are held out: MLM accuracy, perplexity and the sentence task's accuracy.
// Domain-adaptive pre-training (--init-from): the model and tokenizer of a checkpoint of any family,
// trained on with a new corpus, a fresh optimizer and schedule; optionally with the corpus's
// frequent split words added to a WordPiece vocabulary (--extend-vocab).
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "training/task.hpp"
#include "training/trainer.hpp"
#include "util/options.hpp"

namespace xg::training {

struct PretrainOptions : ResumableOptions {
  std::string corpus = "data/pretrain_corpus_small.txt";  // text (BERT format) or a directory of shards
  std::string tokenizer;   // "": the family's default (BERT: data/bert-base-uncased-vocab.txt; others: a trained one)
  size_t train_vocab = 0;  // > 0: train a vocabulary of this size from the corpus (the family's kind)
  bool cased = false;
  bool allow_tokenizer_mismatch = false;  // a tokenizer of another family's kind is refused unless set
  std::string model;  // [family-]preset ("tiny", "roberta-base", "albert-large") or a config.json; "": kDefaultModel
                      // for a new run, the checkpoint's with --init-from
  std::string pairing = "auto";  // auto (the family's recipe), nsp, sop, full-sentences, doc-sentences
  size_t seq_len = 128;
  size_t max_predictions = 0;  // 0: ceil(masked_lm_prob * seq_len)
  float masked_lm_prob = 0.15f;
  bool whole_word_mask = false;
  size_t max_ngram = 0;  // mask spans of up to N whole words; 0: the family's recipe (ALBERT 3, else 1)
  size_t eval_instances = 256;  // held out for evaluation
  // Documents held out at least (2% when that is more): two, so that a held-out NSP negative can
  // take its second sentence from another document.
  size_t eval_min_documents = 2;
  // Where the held-out documents are: "spread" evenly through the corpus, so that a corpus in some
  // order (by source, by date) is held out from all of it, or the corpus's "end".
  std::string eval_documents_at = "spread";
  bool checkpoint_activations = false;  // recompute each encoder layer in the backward pass
  std::string init_from;   // a checkpoint directory whose weights and tokenizer start the run
  size_t extend_vocab = 0;       // with init_from: add this many frequent split words of the corpus as tokens
  size_t extend_min_count = 10;  // occurrences a word needs to be added
  size_t extend_min_pieces = 2;  // pieces the tokenizer must split a word into to be added

  // --model, or kDefaultModel when it is not given.
  std::string model_or_default() const { return model.empty() ? kDefaultModel : model; }

  static const OptionTable<PretrainOptions>& table();
  // The vocabulary size a family trains when it has no default tokenizer and none is given.
  static constexpr size_t kDefaultTrainedVocab = 8000;
  static constexpr const char* kDefaultModel = "tiny";
};

// Which of a text corpus's `documents` `o` holds out for evaluation, ascending: none without
// --eval-instances; else 2% of them but at least --eval-min-documents and never all, where
// --eval-documents-at says. (Checkpoints written before these two options held out the last 2%,
// at least one, and resume so.)
std::vector<size_t> held_out_documents(size_t documents, const PretrainOptions& o);

// The optimizer a family's pre-training recipe names (LAMB for ALBERT) and its settings.
OptimizerDefaults pretraining_optimizer_defaults(const std::string& model_type);
// The head model --model and --pairing train (BertForPreTraining, RobertaForMaskedLM, ...).
std::string pretraining_architecture(const PretrainOptions& o);

// Builds the task: on resume (ctx.checkpoint) the model and tokenizer come from the checkpoint.
std::unique_ptr<Task> make_pretraining_task(const PretrainOptions& options, const TaskContext& ctx);

// The sequence length the shards in directory `corpus` were made at (their first shard's); 0 for a
// text corpus or a directory without shards. bert_pretrain trains at it unless --max-seq-length is
// given: create_pretraining_data defaults to BERT's 128, bert_pretrain's quick start to 64.
size_t shard_sequence_length(const std::string& corpus);

// Pre-trains per `trainer` and `task` (restored from the checkpoint on --resume).
RunResult run_pretraining(TrainerOptions trainer, PretrainOptions task);

// The model and held-out data a run of `task` would start with (--init-from's checkpoint, extended
// when --extend-vocab asks), evaluated once (batches of trainer.batch; trainer.seed picks the masks,
// as in training): the "before" of domain adaptation, measured by the same code as the "after".
struct HeldOutEvaluation {
  std::string data;     // the model and data, in one line
  Evaluation result;    // MLM accuracy, perplexity (and the sentence task's accuracy)
};
HeldOutEvaluation evaluate_pretraining(const TrainerOptions& trainer, PretrainOptions task);

}  // namespace xg::training
