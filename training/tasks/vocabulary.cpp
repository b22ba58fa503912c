#include "training/tasks/vocabulary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <iterator>
#include <numeric>
#include <stdexcept>

#include "models/core/family_tokenizer.hpp"
#include "util/bundled_data.hpp"
#include "models/core/registry.hpp"
#include "text/bpe_trainer.hpp"
#include "text/corpus_summary.hpp"
#include "text/pretraining_data.hpp"
#include "text/roberta_tokenizer.hpp"
#include "text/sentencepiece_tokenizer.hpp"
#include "text/wordpiece_trainer.hpp"
#include "training/distributed.hpp"
#include "training/rank_checks.hpp"
#include "util/progress.hpp"

namespace fs = std::filesystem;

namespace xg::training {

namespace {

using SkipLine = std::function<bool(size_t line)>;

// The lines of r.corpus's held-out documents (r.held_out), as a test on line numbers from 1; null
// when none are held out.
SkipLine held_out_lines(const VocabularyRequest& r) {
  if (!r.held_out || !fs::is_regular_file(r.corpus)) return nullptr;  // a missing corpus: the trainer names it
  const std::vector<text::LineRange> documents = text::text_document_lines(r.corpus);
  std::vector<text::LineRange> held;
  for (const size_t d : r.held_out(documents.size())) held.push_back(documents.at(d));
  if (held.empty()) return nullptr;
  if (!r.quiet)
    fmt::print("the vocabulary leaves out the {} held-out documents of {} ({} lines)\n", held.size(), documents.size(),
               std::accumulate(held.begin(), held.end(), size_t(0), [](size_t n, const text::LineRange& l) { return n + l.end - l.first; }));
  return [held](size_t line) {  // held is ascending: the last range starting at or before `line`
    const auto after = std::upper_bound(held.begin(), held.end(), line, [](size_t n, const text::LineRange& l) { return n < l.first; });
    return after != held.begin() && line < std::prev(after)->end;
  };
}

std::string train_wordpiece_file(const VocabularyRequest& r, const SkipLine& skip) {
  text::WordPieceTrainerOptions to;
  to.vocab_size = r.train_size;
  to.normalization.lowercase = !r.cased;
  to.skip_line = skip;
  Progress p("training vocabulary", 0, "merges");
  const text::Vocab v = text::train_wordpiece({r.corpus}, to, [&](size_t done, size_t) {
    if (!r.quiet) p.update(done);
  });
  if (!r.quiet) p.finish(fmt::format("{} tokens", v.size()));
  const std::string path = (fs::path(r.out) / "vocab.txt").string();
  v.save(path);
  return path;
}

// RoBERTa's special tokens come first (<s> 0, <pad> 1, </s> 2, <unk> 3, <mask> 4) as in
// roberta-base's vocabulary: positions start after <pad>'s id.
std::string train_bpe_files(const VocabularyRequest& r, const SkipLine& skip) {
  text::BpeTrainerOptions to;
  to.vocab_size = r.train_size;
  to.special_tokens = {"<s>", "<pad>", "</s>", "<unk>", "<mask>"};
  text::BpeTrainer trainer(to);
  trainer.feed_file(r.corpus, skip);
  Progress p("training vocabulary", r.train_size, "tokens");
  const text::BpeModel model = trainer.train([&](size_t done, size_t) {
    if (!r.quiet) p.update(done);
  });
  if (!r.quiet) p.finish(fmt::format("{} tokens", model.vocab().size()));
  model.save(r.out);
  return (fs::path(r.out) / "vocab.json").string();
}

std::string train_spiece_file(const VocabularyRequest& r, const SkipLine& skip) {
  if (!r.quiet) fmt::print("training a SentencePiece vocabulary of {} tokens...\n", r.train_size);
  const std::string path = (fs::path(r.out) / "spiece.model").string();
  text::train_sentencepiece(r.corpus, r.train_size, path, 0, /*case_fold=*/!r.cased, skip);
  return path;
}

using Trainer = std::string (*)(const VocabularyRequest&, const SkipLine&);

// The trainer of a family's kind of vocabulary (models::FamilyTokenizer).
Trainer trainer_of(const std::string& model_type) {
  switch (models::family_entry(model_type).tokenizer.vocabulary) {
    case models::VocabularyKind::WordPiece: return train_wordpiece_file;
    case models::VocabularyKind::ByteLevelBpe: return train_bpe_files;
    case models::VocabularyKind::SentencePiece: return train_spiece_file;
  }
  throw std::logic_error("[vocabulary] unhandled VocabularyKind");
}

}  // namespace

void check_tokenizer_family(const text::Tokenizer& tok, const std::string& model_type, const std::string& model, bool allow) {
  const std::string wanted = models::family_entry(model_type).tokenizer.tokenizer_class;
  if (allow || wanted.empty() || tok.tokenizer_class() == wanted) return;
  throw std::invalid_argument(fmt::format("--model {} (model_type {}) uses {}, but the tokenizer given is a {}: give a {} "
                                          "(or leave the tokenizer out for the family's own), or pass "
                                          "--allow-tokenizer-mismatch to train the pair anyway",
                                          model, model_type, wanted, tok.tokenizer_class(), wanted));
}

std::string default_tokenizer_path(const std::string& model_type) {
  return bundled_data_path(models::family_entry(model_type).tokenizer.default_vocabulary);
}

std::unique_ptr<text::Tokenizer> make_vocabulary(const VocabularyRequest& r) {
  std::string path = r.path;
  const Trainer train = r.train_size > 0 ? trainer_of(r.model_type) : nullptr;
  // Under mpirun one rank trains and writes OUT's files (ranks writing them at once would race;
  // the ranks share OUT), and the others open them: the path, or the error, goes to every rank.
  // Every rank joins these two collectives, a vocabulary trained or not: whether a rank needs one
  // trained follows the model_type of its own copy of --model's config, and ranks whose copies
  // differed would not meet in them (the job would hang).
  Communicator& comm = Communicator::world();
  std::string trained;
  fail_together(comm, [&] {
    if (comm.rank() != 0 || !train) return;
    // checked by the rank that trains: checked by the others too, a rank whose --model config
    // differed from rank 0's would blame the corpus where the config is the cause
    if (fs::is_directory(r.corpus)) throw std::invalid_argument(fmt::format(
          "[vocabulary] {} is a shard directory: pass the tokenizer the shards were made with (--tokenizer); a "
          "vocabulary (--train-vocab, or the default for {} without --tokenizer) is trained from a text corpus", r.corpus, r.model_type));
    if (fs::exists(r.corpus) && !fs::is_regular_file(r.corpus)) throw std::invalid_argument(fmt::format(
          "[vocabulary] {} is not a regular file (a pipe?): a vocabulary (--train-vocab, or the default for {} without "
          "--tokenizer) is trained from the corpus, which training then reads again; write it to a file, or pass --tokenizer",
          r.corpus, r.model_type));
    const SkipLine skip = held_out_lines(r);
    // every trainer: refused before it learns from nothing (or from bytes that are no text)
    if (fs::is_regular_file(r.corpus) && !text::summarize_corpus(r.corpus, skip).has_words)
      throw std::invalid_argument(fmt::format("[vocabulary] {}: the corpus has no words (only whitespace or control characters{}): "
                                              "nothing to train a vocabulary on", r.corpus, skip ? ", in the lines not held out" : ""));
    trained = train(r, skip);
  });
  comm.broadcast(trained);
  if (train) {
    if (trained.empty())
      throw std::invalid_argument(fmt::format(
          "[vocabulary] model_type '{}' needs a trained vocabulary here, and rank 0 trained none: rank 0's copy of the "
          "--model config names another model_type (every node must hold the same config)", r.model_type));
    path = trained;
  }
  if (path.empty())
    throw std::invalid_argument(fmt::format("[vocabulary] model_type '{}' has no bundled tokenizer: pass --tokenizer or --train-vocab", r.model_type));
  text::TokenizerOptions topt;
  topt.lowercase = !r.cased;
  return models::open_tokenizer(path, topt);
}

}  // namespace xg::training
