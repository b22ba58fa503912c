// Builds static pre-training shards from a corpus in the BERT format (one sentence per line, a
// blank line between documents) and a tokenizer (any of bert_pretrain's --tokenizer): BERT's
// sentence pairs for NSP by default, ALBERT's for SOP, or RoBERTa's packed full sentences (--pairing).
//   create_pretraining_data --train-file FILE --tokenizer FILE|DIR --output-dir DIR [options]
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "models/core/family_tokenizer.hpp"
#include "text/pretraining_data.hpp"
#include "util/cli.hpp"
#include "util/progress.hpp"

namespace {
void require_writable_directory(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw std::runtime_error(fmt::format("--output-dir {}: cannot create the directory{}", dir, ec ? ": " + ec.message() : ""));
  const std::string probe = (std::filesystem::path(dir) / ".write-test").string();
  if (!std::ofstream(probe)) throw std::runtime_error(fmt::format("--output-dir {}: not writable", dir));
  std::filesystem::remove(probe);
}
}  // namespace

int main(int argc, char** argv) {
  xg::text::PretrainingOptions opt;
  std::string input, vocab, output, pairing = "nsp";
  size_t per_shard = 100000;
  size_t eval_min_documents = 2;
  std::string eval_documents_at = "spread";
  bool cased = false;
  CLI::App app{"Builds static pre-training shards (MLM + NSP, SOP or packed full sentences) from a corpus in the BERT format.",
               "create_pretraining_data"};
  xg::cli::show_defaults(app);
  app.add_option("--train-file,--input,--corpus", input, "corpus: a sentence per line, a blank line between documents")->required()->type_name("FILE");
  app.add_option("--tokenizer,--vocab", vocab,
                 "WordPiece vocab.txt, byte-level BPE vocab.json, SentencePiece .model, or a tokenizer directory "
                 "(tokenizer_config.json decides casing)")
      ->required()
      ->type_name("FILE|DIR");
  app.add_option("--pairing", pairing, "nsp (BERT), sop (ALBERT), full-sentences (RoBERTa) or doc-sentences");
  app.add_option("--output-dir,--output,--out", output, "directory for shard_NNNNN.bin files (and held_out.bin)")->required()->type_name("DIR");
  xg::cli::add_number(app, "--max-seq-length,--seq-len", opt.max_seq_length, "tokens per instance, [CLS] and [SEP]s included");
  xg::cli::add_number(app, "--max-predictions", opt.max_predictions_per_seq, "masked tokens per instance at most");
  xg::cli::add_number(app, "--mlm-probability,--masked-lm-prob", opt.masked_lm_prob, "fraction of tokens masked");
  xg::cli::add_number(app, "--short-seq-prob", opt.short_seq_prob, "how often a shorter sequence is aimed for");
  xg::cli::add_number(app, "--dupe-factor", opt.dupe_factor, "passes over the corpus, each with different masks");
  app.add_flag("--whole-word-mask", opt.whole_word_mask, "mask all pieces of a word together");
  app.add_flag("--cased", cased, "keep case and accents (default: uncased)");
  xg::cli::add_number(app, "--per-shard", per_shard, "instances per shard file")->check(xg::cli::positive());
  xg::cli::add_number(app, "--seed", opt.seed, "seed for pairing and masking");
  xg::cli::add_number(app, "--eval-min-documents", eval_min_documents,
                      "documents held out into held_out.bin at least (2% of them when that is more; 0: none), which "
                      "bert_pretrain evaluates on");
  app.add_option("--eval-documents-at", eval_documents_at, "where the held-out documents are: spread evenly through the "
                                                           "corpus, or at its end")
      ->check(CLI::IsMember({"spread", "end"}));
  if (auto code = xg::cli::parse_or_exit(app, argc, argv)) return *code;
  try {
    opt.pairing = xg::text::parse_pairing(pairing);
    opt.validate();
    require_writable_directory(output);  // found now, not after the whole corpus is processed
    xg::text::TokenizerOptions topt;
    topt.lowercase = !cased;
    const auto tok = xg::models::open_tokenizer(vocab, topt);
    xg::Progress read_progress("tokenizing", 0, "lines");
    auto docs = xg::text::load_documents(input, *tok, [&](size_t done, size_t) { read_progress.update(done); });
    read_progress.finish(fmt::format("{} documents", docs.size()));
    const xg::text::MaskingVocab masking = xg::text::MaskingVocab::from(*tok);
    // held out as bert_pretrain holds out documents of a text corpus
    const auto held = xg::text::held_out_documents(docs.size(), eval_min_documents, eval_documents_at == "end");
    const auto held_out = xg::text::take_held_out_instances(docs, held, opt, masking);
    if (!held.empty() && held_out.empty())  // no held_out.bin would read as shards that hold nothing out
      throw std::runtime_error(fmt::format("the {} held-out document(s) of {} make no instance: hold more out "
                                           "(--eval-min-documents) or none (--eval-min-documents 0)", held.size(), input));
    xg::Progress make_progress("creating instances", opt.dupe_factor * docs.size(), "docs");
    const auto instances = xg::text::create_static_instances(
        docs, opt, masking, [&](size_t done, size_t) { make_progress.update(done); });
    make_progress.finish(fmt::format("{} instances", instances.size()));
    const auto paths = xg::text::write_shards(instances, output, per_shard, opt, *tok, held_out);
    fmt::print("wrote {} instances into {} shard(s) in {}", instances.size(), paths.size(), output);
    if (!held_out.empty()) fmt::print(", and {} held-out instances into {}", held_out.size(), xg::text::kHeldOutShard);
    fmt::print("\n");
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}\n", xg::cli::error_line("create_pretraining_data", e.what()));
    return 1;
  }
  return 0;
}
