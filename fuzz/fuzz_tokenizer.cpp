// The BERT tokenizer on arbitrary bytes (cased and uncased, invalid UTF-8 refused or replaced),
// alone and as the second text of a pair truncated to 16 tokens; then decoding what it made.
#include <stdexcept>
#include <string_view>

#include "text/bert_tokenizer.hpp"

using namespace xg::text;

namespace {
Vocab small_vocab() {
  return Vocab({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "the", "un", "##aff", "##able", "hello", "world",
                "##s", "##ing", "!", ",", ".", "'", "t", "東", "京", "é", "e", "##e", "w", "##ö", "##rld", "x", "##x"});
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const BertTokenizer uncased(small_vocab());
  static const BertTokenizer cased_replacing(small_vocab(), [] {
    TokenizerOptions o;
    o.lowercase = false;
    o.invalid_utf8 = InvalidUtf8::Replace;
    o.max_input_chars_per_word = 8;
    return o;
  }());
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const BertTokenizer* tok : {&uncased, &cased_replacing}) {
    try {
      const Encoding one = tok->encode(text);
      tok->decode(one.ids, false);
      EncodeOptions opt;
      opt.max_length = 16;
      opt.pad_to = 16;
      const Encoding pair = tok->encode_pair("the world", text, opt);
      if (pair.size() != 16) std::abort();  // truncation and padding promise exactly max_length
      tok->decode(pair.ids, true);
    } catch (const std::invalid_argument&) {  // invalid UTF-8 under InvalidUtf8::Error
    }
  }
  return 0;
}
