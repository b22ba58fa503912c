// vocab.txt: read it, then build a tokenizer on it and tokenize a fixed text with it.
#include <stdexcept>

#include "fuzz/fuzz_input.hpp"
#include "text/bert_tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = xg::fuzz::write_input("vocab.txt", data, size);
  try {
    xg::text::BertTokenizer tok(xg::text::Vocab::from_file(path));
    const auto enc = tok.encode_pair("Hello, wörld! 東京 unaffable", "isn't it?");
    tok.decode(enc.ids, false);
  } catch (const std::invalid_argument&) {
  } catch (const std::runtime_error&) {
  }
  return 0;
}
