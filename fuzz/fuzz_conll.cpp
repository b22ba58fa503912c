// A CoNLL NER file: read it, convert its tags to IOB2 and back, align each sentence with a small
// tokenizer in overlapping windows, and score its tags against themselves as seqeval would.
#include <stdexcept>

#include "fuzz/fuzz_input.hpp"
#include "metrics/entity_metrics.hpp"
#include "text/bert_tokenizer.hpp"
#include "text/conll_data.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace xg::text;
  static const BertTokenizer tok(Vocab({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "eu", "##s", "g", "##er"}));
  const std::string path = xg::fuzz::write_input("input.conll", data, size);
  try {
    const ConllData d = read_conll(path);
    std::vector<std::vector<std::string>> tags;
    for (size_t s = 0; s < d.sentences.size(); ++s) {
      tags.push_back(to_iob2(d.sentences[s].tags, d.scheme));
      from_iob2(tags.back(), TagScheme::BIOES);
      const auto& words = d.sentences[s].words;
      std::string joined;
      for (const auto& w : words) joined += (joined.empty() ? "" : " ") + w;
      WordAlignOptions align;
      align.max_len = 6;
      align.stride = 2;
      const auto windows = align_words(tok, tok.tokenize(joined), joined_word_spans(words), std::vector<int64_t>(words.size(), 0),
                                       {}, s, align);
      std::vector<size_t> ids(windows.size());
      for (size_t i = 0; i < ids.size(); ++i) ids[i] = i;
      word_sources(windows, ids, words.size());
    }
    xg::metrics::entity_report(tags, tags);
  } catch (const std::invalid_argument&) {
  } catch (const std::runtime_error&) {
  }
  return 0;
}
