#pragma once
// The tokenizer a pre-training run uses, of its family's kind: a checkpoint's on resume, a file or
// directory the user names, the family's bundled default, or one trained on the corpus (the kind
// its registry entry names: WordPiece, byte-level BPE or SentencePiece unigram).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "text/tokenizer.hpp"

namespace xg::training {

struct VocabularyRequest {
  std::string model_type;  // its family (models::FamilyTokenizer says which kind it trains)
  std::string path;        // a tokenizer file or directory; "": the family's default
  size_t train_size = 0;   // > 0: train this many tokens from `corpus` (written into `out`)
  std::string corpus, out;
  bool cased = false;
  bool quiet = false;
  // The documents of `corpus` (text::text_document_lines' runs of non-blank lines) that a trained
  // vocabulary must not learn from, given how many there are: the run's held-out ones. Unset: none.
  std::function<std::vector<size_t>(size_t documents)> held_out;
};

// The family's default tokenizer file, or "" when it has none (a vocabulary is then trained).
std::string default_tokenizer_path(const std::string& model_type);

// Opens or trains the tokenizer `r` asks for; throws naming the family when it has no trainer.
std::unique_ptr<text::Tokenizer> make_vocabulary(const VocabularyRequest& r);

// Refuses, unless `allow`, a tokenizer of another class than `model_type`'s family uses (a RoBERTa
// model on a WordPiece vocabulary): such a pair trains, but is neither model's checkpoint format;
// names the model (`model`, as given), both classes and the way out.
void check_tokenizer_family(const text::Tokenizer& tok, const std::string& model_type, const std::string& model, bool allow);

}  // namespace xg::training
