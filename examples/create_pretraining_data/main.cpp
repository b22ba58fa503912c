// Builds static BERT pre-training shards (MLM + NSP) from a corpus in the BERT format (one
// sentence per line, a blank line between documents) and a tokenizer (a WordPiece vocabulary or a
// Hugging Face tokenizer directory).
//   create_pretraining_data --input FILE --vocab FILE|DIR --output DIR [options]
#include <fmt/format.h>

#include <cstdlib>
#include <string>

#include "text/load_tokenizer.hpp"
#include "text/pretraining_data.hpp"
#include "util/flags.hpp"
#include "util/progress.hpp"

int main(int argc, char** argv) {
  xg::text::PretrainingOptions opt;
  std::string input, vocab, output;
  size_t per_shard = 100000;
  bool cased = false;
  xg::Flags flags("create_pretraining_data --input FILE --vocab FILE --output DIR",
                  "Builds static BERT pre-training shards (MLM + NSP) from a corpus in the BERT format.");
  flags.value("--input", input, "corpus: a sentence per line, a blank line between documents", false);
  flags.value("--vocab", vocab, "WordPiece vocab.txt, or a tokenizer directory (tokenizer_config.json decides casing)", false);
  flags.value("--output", output, "directory for shard_NNNNN.bin files", false);
  flags.value("--max-seq-length", opt.max_seq_length, "tokens per instance, [CLS] and [SEP]s included");
  flags.value("--max-predictions", opt.max_predictions_per_seq, "masked tokens per instance at most");
  flags.value("--masked-lm-prob", opt.masked_lm_prob, "fraction of tokens masked");
  flags.value("--short-seq-prob", opt.short_seq_prob, "how often a shorter sequence is aimed for");
  flags.value("--dupe-factor", opt.dupe_factor, "passes over the corpus, each with different masks");
  flags.toggle("--whole-word-mask", opt.whole_word_mask, "mask all pieces of a word together");
  flags.toggle("--cased", cased, "keep case and accents (default: uncased)");
  flags.value("--per-shard", per_shard, "instances per shard file");
  flags.value("--seed", opt.seed, "seed for pairing and masking");
  if (auto code = flags.parse_or_exit(argc, argv)) return *code;
  if (input.empty() || vocab.empty() || output.empty()) {
    fmt::print(stderr, "create_pretraining_data: --input, --vocab and --output are required\n");
    return 2;
  }
  try {
    opt.validate();
    xg::text::TokenizerOptions topt;
    topt.lowercase = !cased;
    const auto tok = xg::text::open_tokenizer(vocab, topt);
    xg::Progress read_progress("tokenizing", 0, "lines");
    const auto docs = xg::text::load_documents(input, *tok, [&](size_t done, size_t) { read_progress.update(done); });
    read_progress.finish(fmt::format("{} documents", docs.size()));
    xg::Progress make_progress("creating instances", opt.dupe_factor * docs.size(), "docs");
    const auto instances = xg::text::create_static_instances(
        docs, opt, xg::text::MaskingVocab::from(*tok), [&](size_t done, size_t) { make_progress.update(done); });
    make_progress.finish(fmt::format("{} instances", instances.size()));
    const auto paths = xg::text::write_shards(instances, output, per_shard, opt, tok->vocab_size());
    fmt::print("wrote {} instances into {} shard(s) in {}\n", instances.size(), paths.size(), output);
  } catch (const std::exception& e) {
    fmt::print(stderr, "create_pretraining_data: {}\n", e.what());
    return 1;
  }
  return 0;
}
