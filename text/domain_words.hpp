#pragma once
// Frequent words of a corpus that a tokenizer splits into several pieces: the candidates for
// vocabulary extension in domain-adaptive pre-training (a new corpus's "electrocardiogram" is
// cheaper to learn as one token than as "electro ##card ##io ##gram").
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "text/pretraining_data.hpp"
#include "text/tokenizer.hpp"

namespace xg::text {

struct DomainWordOptions {
  size_t max_words = 0;   // how many words to return at most
  size_t min_count = 2;   // occurrences a word needs
  size_t min_pieces = 2;  // pieces a word must be split into (at least 2)
};

struct DomainWord {
  std::vector<int32_t> pieces;  // the tokenizer's pieces of the word, in order
  size_t count = 0;             // occurrences in the documents
};

// The `max_words` most frequent words of `docs` (tokenised by `tok`) of at least `min_pieces`
// pieces and `min_count` occurrences, most frequent first (ties: by pieces, for a stable order).
// A word is a word-start piece and the continuation pieces after it (Tokenizer::starts_word);
// words holding a special token ([UNK]) are skipped.
std::vector<DomainWord> frequent_split_words(const std::vector<Document>& docs, const Tokenizer& tok,
                                             const DomainWordOptions& opt);

// The text of a WordPiece word from its pieces: "electro" "##card" "##io" -> "electrocardio".
std::string wordpiece_word(const Tokenizer& tok, const std::vector<int32_t>& pieces);

}  // namespace xg::text
