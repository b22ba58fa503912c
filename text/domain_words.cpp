#include "text/domain_words.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>

namespace xg::text {

std::vector<DomainWord> frequent_split_words(const std::vector<Document>& docs, const Tokenizer& tok,
                                             const DomainWordOptions& opt) {
  if (opt.min_pieces < 2) throw std::invalid_argument(fmt::format("[domain words] min_pieces {} must be at least 2", opt.min_pieces));
  std::map<std::vector<int32_t>, size_t> counts;
  std::vector<int32_t> word;
  bool has_special = false;
  auto flush = [&] {
    if (word.size() >= opt.min_pieces && !has_special) ++counts[word];
    word.clear();
    has_special = false;
  };
  for (const Document& d : docs)
    for (const Sentence& s : d) {
      for (const int32_t id : s) {
        if (tok.starts_word(id)) flush();
        word.push_back(id);
        has_special = has_special || tok.is_special(id);
      }
      flush();  // a sentence ends a word
    }
  std::vector<DomainWord> out;
  for (auto& [pieces, n] : counts)
    if (n >= opt.min_count) out.push_back({pieces, n});
  // std::map iterates by pieces: a stable sort by count keeps that order among equal counts
  std::stable_sort(out.begin(), out.end(), [](const DomainWord& a, const DomainWord& b) { return a.count > b.count; });
  if (out.size() > opt.max_words) out.resize(opt.max_words);
  return out;
}

std::string wordpiece_word(const Tokenizer& tok, const std::vector<int32_t>& pieces) {
  std::string w;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const std::string& p = tok.id_to_token(pieces[i]);
    const bool continuation = p.rfind("##", 0) == 0;
    if ((i == 0) == continuation)
      throw std::invalid_argument(fmt::format("[domain words] piece {} '{}' of a word: a WordPiece word is one start "
                                              "piece then '##' continuations", i, p));
    w += continuation ? p.substr(2) : p;
  }
  return w;
}

}  // namespace xg::text
