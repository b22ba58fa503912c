// spiece.model (ALBERT's tokenizer): load it through libsentencepiece and the checks the library
// does not make (the normalizer's trie, pieces, scores), then tokenize, pair and decode a fixed
// text that walks the normalizer over ASCII, compatibility forms, accents and CJK.
#include <stdexcept>

#include "fuzz/fuzz_input.hpp"
#include "text/sentencepiece_tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = xg::fuzz::write_input("spiece.model", data, size);
  try {
    const xg::text::SentencePieceTokenizer tok(path);
    const auto enc = tok.encode_pair("Hello, wörld! ＡＢＣ ① ﬁne Å 東京\t\u00a0[MASK] unaffable", "isn't it?");
    tok.decode(enc.ids, false);
  } catch (const std::invalid_argument&) {
  } catch (const std::runtime_error&) {
  }
  return 0;
}
