// A SQuAD v1.1/v2.0 JSON file: read it, cut its questions into windows with a small WordPiece
// vocabulary, and decode answers from flat logits.
#include <stdexcept>

#include "fuzz/fuzz_input.hpp"
#include "text/bert_tokenizer.hpp"
#include "text/squad_predictions.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = xg::fuzz::write_input("squad.json", data, size);
  static const xg::text::BertTokenizer tok(xg::text::Vocab({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "when", "?", "1789", "##9", "bridge"}));
  try {
    const auto questions = xg::text::read_squad(path);
    const auto features = xg::text::squad_features(questions, tok, {16, 4, 6});
    std::vector<xg::text::SpanLogits> logits;
    for (const auto& f : features) logits.push_back({std::vector<float>(f.encoding.size(), 0.5f), std::vector<float>(f.encoding.size(), 0.25f)});
    xg::text::decode_squad_answers(questions, features, logits, {5, 4, true, 0.0});
  } catch (const std::invalid_argument&) {
  } catch (const std::runtime_error&) {
  }
  return 0;
}
