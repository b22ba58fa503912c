// Byte-level BPE files: the input up to its first NUL byte is vocab.json, the rest merges.txt.
// Load them, then encode and decode fixed text (special tokens, bytes that are not UTF-8) and
// every id the vocabulary holds.
#include <algorithm>
#include <stdexcept>

#include "fuzz/fuzz_input.hpp"
#include "text/roberta_tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const uint8_t* split = std::find(data, data + size, uint8_t(0));
  const size_t vocab_size = size_t(split - data);
  const std::string vocab = xg::fuzz::write_input("vocab.json", data, vocab_size);
  const std::string merges = xg::fuzz::write_input("merges.txt", split + (split < data + size), size - vocab_size - (split < data + size));
  try {
    const auto tok = xg::text::RobertaTokenizer::from_files(vocab, merges);
    const auto enc = tok.encode_pair("Hello, w\xc3\xb6rld! <mask> 東京  \t\xff\xfe isn't", "it's 2024?");
    tok.decode(enc.ids, false);
    std::vector<int32_t> all;
    for (int32_t id = 0; id < int32_t(std::min<size_t>(tok.vocab_size(), 512)); ++id) all.push_back(id);
    tok.decode(all, false);
  } catch (const std::invalid_argument&) {
  } catch (const std::runtime_error&) {
  } catch (const std::out_of_range&) {
  }
  return 0;
}
