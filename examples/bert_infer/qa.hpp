#pragma once
// bert_infer qa: extractive question answering with a *ForQuestionAnswering checkpoint.
#include <CLI/CLI.hpp>
#include <string>

#include "examples/bert_infer/checkpoint_args.hpp"
#include "text/squad_data.hpp"
#include "text/squad_predictions.hpp"

namespace xg::infer {

struct QaArgs {
  ModelArgs checkpoint;
  std::string input;
  text::SquadFeatureOptions features{0, 0, 64};  // max_len 0: min(384, the model's positions); doc_stride 0: a third of it
  text::SquadDecodeOptions decode;
  size_t batch = 16;  // questions per forward pass (all their windows)
};

// Declares the subcommand's flags on `app`; returns it.
CLI::App* add_qa_command(CLI::App& app, QaArgs& args);
// Reads JSON Lines {"question": ..., "context": ...[, "id": ...]} from --input or stdin and prints
// one JSON line per question: the answer, its code-point span in the context and its score.
int run_qa(const QaArgs& args);

}  // namespace xg::infer
