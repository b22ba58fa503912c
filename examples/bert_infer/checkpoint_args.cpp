#include "examples/bert_infer/checkpoint_args.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "autograd/precision.hpp"
#include "models/core/family_tokenizer.hpp"
#include "util/checksums.hpp"
#include "util/lines.hpp"
#include "util/strings.hpp"

namespace xg::infer {

namespace {
// Said before anything tries a file inside it (which would blame a missing vocab.txt).
void require_model_directory(const std::string& dir) {
  if (!std::filesystem::is_directory(dir))
    throw std::invalid_argument(fmt::format("--model {}: {}", dir, std::filesystem::exists(dir) ? "not a directory" : "no such directory"));
}

}  // namespace

CLI::App* add_model_command(CLI::App& app, const std::string& name, const std::string& description, ModelArgs& a,
                            bool model_optional) {
  CLI::App* cmd = app.add_subcommand(name, description);
  auto* model = cmd->add_option("--model", a.model, "checkpoint directory (its tokenizer files are used)")->type_name("DIR");
  if (!model_optional) model->required();
  cmd->add_option("--tokenizer,--vocab", a.vocab,
                  "WordPiece vocab.txt, byte-level BPE vocab.json (merges.txt beside it), SentencePiece .model or a "
                  "Hugging Face tokenizer directory, instead of the model's")
      ->type_name("FILE|DIR");
  cmd->add_flag("--cased", a.cased, "with --tokenizer: keep case and accents");
  cmd->add_option_function<std::string>("--text", [&a](const std::string& text) { a.text = text; },
                                        "run this one input, written as a line of stdin would be, instead of reading stdin");
  if (!model_optional)
    cmd->add_option("--precision", a.precision,
                    "matmul precision: bf16 rounds the linear layers' inputs and weights to bf16 and sums in fp32 "
                    "(faster where the CPU has AVX512-BF16; outputs differ from fp32 by about 1e-2); int8 quantizes "
                    "the linear layers' weights per output channel and their inputs per row (dynamic quantization, "
                    "int32 sums; fastest where the CPU has AVX512-VNNI)")
        ->check(CLI::IsMember({"fp32", "bf16", "int8"}));
  return cmd;
}

std::unique_ptr<text::Tokenizer> tokenizer_for(const ModelArgs& a, const std::string& command) {
  if (!a.vocab.empty()) {
    if (a.cased && std::filesystem::is_directory(a.vocab))
      throw std::invalid_argument(fmt::format("{}: --cased applies to a vocab.txt or .model file; the tokenizer "
                                              "directory {} sets its own casing (tokenizer_config.json)", command, a.vocab));
    text::TokenizerOptions o;
    o.lowercase = !a.cased;
    return models::open_tokenizer(a.vocab, o);
  }
  if (a.cased)
    throw std::invalid_argument(fmt::format("{}: --cased applies to --tokenizer; without it the model directory's "
                                            "tokenizer_config.json (do_lower_case) decides", command));
  require_model_directory(a.model);
  return models::load_tokenizer(a.model);
}

std::string model_directory(const std::string& given) {
  std::string note;
  const std::string dir = models::model_directory_in(given, &note);
  if (!note.empty()) fmt::print(stderr, "note: --model {}\n", note);
  return dir;
}

models::LoadedModel load_model(const std::string& dir) {
  require_model_directory(dir);
  verify_checksums(dir);  // a checkpoint written by bert_pretrain lists its files' CRC32C
  auto loaded = models::load_pretrained(dir);
  for (const auto& n : loaded.notes) fmt::print(stderr, "note: {}\n", n);
  return loaded;  // in eval mode
}

inference::Pipeline open_checkpoint(const ModelArgs& a, const std::string& command, const std::string& head_suffix,
                                    const std::string& head_name) {
  inference::PipelineOptions options;
  options.precision = matmul_precision_from_name(a.precision);
  ModelArgs resolved = a;
  resolved.model = model_directory(a.model);
  auto tokenizer = tokenizer_for(resolved, command);
  inference::Pipeline p(load_model(resolved.model), std::move(tokenizer), options, "--model " + resolved.model);
  const std::string architecture = p.model().architecture();
  if (!head_suffix.empty() && !ends_with(architecture, head_suffix))
    throw std::invalid_argument(fmt::format("{}: --model {} is a {}, not {}", command, a.model, architecture, head_name));
  return p;
}

Inputs::Inputs(const ModelArgs& a) : text_(a.text) {}

bool Inputs::next(std::string& line) {
  if (!text_) return next_line(std::cin, line, "stdin");
  if (text_read_) return false;
  text_read_ = true;
  line = *text_;
  return true;
}

std::string Inputs::where(size_t n) const { return text_ ? std::string("--text") : fmt::format("stdin line {}", n); }

bool next_line(std::istream& in, std::string& line, const std::string& source) {
  if (getline_lf(in, line)) {
    return true;
  }
  // std::cin reads through stdio, which reports a failed read as the end: ask stdio too
  if (!in.eof() || (&in == &std::cin && std::ferror(stdin)))
    throw std::runtime_error(fmt::format("{}: reading failed (a directory, or an I/O error)", source));
  return false;
}

}  // namespace xg::infer
