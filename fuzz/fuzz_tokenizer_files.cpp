// tokenizer_config.json of a Hugging Face tokenizer directory (beside a fixed vocab.txt), as
// load_tokenizer reads it: tokenizer_class, special tokens, added_tokens_decoder, options.
#include <stdexcept>

#include "fuzz/fuzz_input.hpp"
#include "text/load_tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool vocab_written = [] {
    static const char kVocab[] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\nworld\n##s\n!\n";
    xg::fuzz::write_input("vocab.txt", reinterpret_cast<const uint8_t*>(kVocab), sizeof kVocab - 1);
    return true;
  }();
  (void)vocab_written;
  xg::fuzz::write_input("tokenizer_config.json", data, size);
  try {
    const auto tok = xg::text::load_tokenizer(xg::fuzz::scratch_dir());
    tok->decode(tok->encode_pair("the worlds!", "[MASK] world").ids, false);
  } catch (const std::invalid_argument&) {
  } catch (const std::runtime_error&) {
  }
  return 0;
}
