#pragma once
// What the bert_infer subcommands that run a checkpoint share: the --model and tokenizer flags,
// and opening both (checked, in eval mode) before any output.
#include <CLI/CLI.hpp>

#include <istream>
#include <memory>
#include <optional>
#include <string>

#include "inference/pipeline.hpp"
#include "models/core/checkpoint.hpp"
#include "text/tokenizer.hpp"

namespace xg::infer {

// --model DIR and where the tokenizer comes from: --vocab [--cased] when given, else DIR's files.
struct ModelArgs {
  std::string model, vocab;
  bool cased = false;
  std::string precision = "fp32";  // of the model's linear layers: fp32, bf16 or int8
  std::optional<std::string> text;  // --text: the one input, instead of stdin's lines
};

// Adds subcommand `name` to `app` with --model DIR (required unless `model_optional`),
// --tokenizer/--vocab and --cased, --precision where the model is required, and --text (one input
// written as a line of stdin would be); returns it.
CLI::App* add_model_command(CLI::App& app, const std::string& name, const std::string& description, ModelArgs& a,
                            bool model_optional = false);

// --vocab FILE [--cased] when given, else the tokenizer files of --model DIR.
std::unique_ptr<text::Tokenizer> tokenizer_for(const ModelArgs& a, const std::string& command);

// `given`, or the model directory it stands for when it is a run's output directory (its best
// model or newest checkpoint, said in a note on stderr).
std::string model_directory(const std::string& given);

// The checkpoint in `dir` (its checksums verified, loader notes on stderr), in eval mode.
models::LoadedModel load_model(const std::string& dir);

// --model's checkpoint with its tokenizer (tokenizer_for) as a pipeline at --precision, checked
// (ids within its vocabulary, RoBERTa's padding id) and its Linear weights packed once.
// A command that needs a kind of head names it (`head_suffix` "ForTokenClassification", `head_name`
// "a *ForTokenClassification model"): another architecture is refused, naming it.
inference::Pipeline open_checkpoint(const ModelArgs& a, const std::string& command, const std::string& head_suffix = "",
                                    const std::string& head_name = "");

// A subcommand's inputs: the --text when given, else stdin's lines.
class Inputs {
 public:
  explicit Inputs(const ModelArgs& a);
  // The next input into `line`; false after the last.
  bool next(std::string& line);
  // How errors name input `n` (1-based): "stdin line 3", or "--text".
  std::string where(size_t n) const;

 private:
  std::optional<std::string> text_;
  bool text_read_ = false;
};

// The next line of `in` (named `source` in errors) into `line`, a trailing '\r' dropped so a CRLF
// file reads as its LF twin (byte-level BPE would make the CR a token). False at the end of the
// input; throws when reading fails before it (a directory, an I/O error), which would otherwise
// look like an empty input.
bool next_line(std::istream& in, std::string& line, const std::string& source);

}  // namespace xg::infer
