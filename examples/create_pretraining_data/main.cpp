// Builds static BERT pre-training shards (MLM + NSP) from a corpus in the BERT format (one
// sentence per line, a blank line between documents) and a WordPiece vocabulary.
//   create_pretraining_data --input FILE --vocab FILE --output DIR [options]
#include <fmt/format.h>

#include <cstdlib>
#include <string>

#include "text/pretraining_data.hpp"
#include "util/progress.hpp"

namespace {
[[noreturn]] void usage(int code) {
  const xg::text::PretrainingOptions d;
  fmt::print(
      "usage: create_pretraining_data --input FILE --vocab FILE --output DIR [options]\n"
      "  --max-seq-length N      tokens per instance, [CLS] and [SEP]s included ({})\n"
      "  --max-predictions N     masked tokens per instance at most ({})\n"
      "  --masked-lm-prob P      fraction of tokens masked ({})\n"
      "  --short-seq-prob P      how often a shorter sequence is aimed for ({})\n"
      "  --dupe-factor N         passes over the corpus, each with different masks ({})\n"
      "  --whole-word-mask       mask all pieces of a word together\n"
      "  --cased                 keep case and accents (default: uncased)\n"
      "  --per-shard N           instances per shard file (100000)\n"
      "  --seed S                ({})\n",
      d.max_seq_length, d.max_predictions_per_seq, d.masked_lm_prob, d.short_seq_prob, d.dupe_factor, d.seed);
  std::exit(code);
}
}  // namespace

int main(int argc, char** argv) {
  xg::text::PretrainingOptions opt;
  std::string input, vocab, output;
  size_t per_shard = 100000;
  bool cased = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") usage(0);
    if (a == "--whole-word-mask") { opt.whole_word_mask = true; continue; }
    if (a == "--cased") { cased = true; continue; }
    if (i + 1 >= argc) usage(2);
    const std::string v = argv[++i];
    try {
      if (a == "--input") input = v;
      else if (a == "--vocab") vocab = v;
      else if (a == "--output") output = v;
      else if (a == "--max-seq-length") opt.max_seq_length = std::stoul(v);
      else if (a == "--max-predictions") opt.max_predictions_per_seq = std::stoul(v);
      else if (a == "--masked-lm-prob") opt.masked_lm_prob = std::stof(v);
      else if (a == "--short-seq-prob") opt.short_seq_prob = std::stof(v);
      else if (a == "--dupe-factor") opt.dupe_factor = std::stoul(v);
      else if (a == "--per-shard") per_shard = std::stoul(v);
      else if (a == "--seed") opt.seed = std::stoull(v);
      else usage(2);
    } catch (const std::exception&) {
      fmt::print(stderr, "create_pretraining_data: bad value '{}' for {}\n", v, a);
      return 2;
    }
  }
  if (input.empty() || vocab.empty() || output.empty()) usage(2);
  try {
    opt.validate();
    xg::text::TokenizerOptions topt;
    topt.lowercase = !cased;
    const auto tok = xg::text::BertTokenizer::from_file(vocab, topt);
    xg::Progress read_progress("tokenizing", 0, "lines");
    const auto docs = xg::text::load_documents(input, tok, [&](size_t done, size_t) { read_progress.update(done); });
    read_progress.finish(fmt::format("{} documents", docs.size()));
    xg::Progress make_progress("creating instances", opt.dupe_factor * docs.size(), "docs");
    const auto instances = xg::text::create_static_instances(
        docs, opt, xg::text::MaskingVocab::from(tok), [&](size_t done, size_t) { make_progress.update(done); });
    make_progress.finish(fmt::format("{} instances", instances.size()));
    const auto paths = xg::text::write_shards(instances, output, per_shard, opt, tok.vocab().size());
    fmt::print("wrote {} instances into {} shard(s) in {}\n", instances.size(), paths.size(), output);
  } catch (const std::exception& e) {
    fmt::print(stderr, "create_pretraining_data: {}\n", e.what());
    return 1;
  }
  return 0;
}
