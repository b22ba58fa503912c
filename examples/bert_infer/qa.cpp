#include "examples/bert_infer/qa.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "util/cli.hpp"
#include "util/json_input.hpp"

namespace xg::infer {

namespace {

text::SquadQuestion question_of(const std::string& line, size_t n, const std::string& source) {
  auto fail = [&](const std::string& what) { throw std::invalid_argument(fmt::format("[qa] {} line {}: {}", source, n, what)); };
  nlohmann::json j;
  try {
    j = parse_json_bounded(line);
  } catch (const nlohmann::json::exception& e) {
    fail(fmt::format("not valid JSON ({})", e.what()));
  }
  if (!j.is_object()) fail(fmt::format("expected a JSON object {{\"question\": ..., \"context\": ...}}, got {}", json_summary(j)));
  text::SquadQuestion q;
  for (const char* key : {"question", "context"}) {
    if (!j.contains(key) || !j[key].is_string()) fail(fmt::format("'{}' must be a string, got {}", key, j.contains(key) ? json_summary(j[key]) : "nothing"));
    if (j[key].get<std::string>().find_first_not_of(" \t\r\n") == std::string::npos) fail(fmt::format("'{}' is empty", key));
  }
  q.question = j["question"].get<std::string>();
  q.context = std::make_shared<const std::string>(j["context"].get<std::string>());
  q.id = j.contains("id") ? (j["id"].is_string() ? j["id"].get<std::string>() : j["id"].dump()) : fmt::format("line {}", n);
  return q;
}

void answer(const std::vector<text::SquadQuestion>& questions, const inference::Pipeline& p, const QaArgs& a) {
  if (questions.empty()) return;
  const auto predictions = p.answer(questions, a.decode, a.features);
  for (size_t i = 0; i < questions.size(); ++i) {
    const auto& pred = predictions[i];
    nlohmann::json out = {{"id", questions[i].id}, {"answer", pred.text}, {"start", pred.start}, {"end", pred.end},
                          {"score", pred.score}, {"probability", pred.probability}};
    if (a.decode.version_2) out["null_odds"] = pred.null_odds;
    fmt::print("{}\n", out.dump());
  }
  std::fflush(stdout);
}

}  // namespace

CLI::App* add_qa_command(CLI::App& app, QaArgs& a) {
  auto* cmd = add_model_command(app, "qa", "Answers each JSON line {\"question\": ..., \"context\": ...} with a span of its context",
                                a.checkpoint);
  cmd->get_option("--model")->description("a *ForQuestionAnswering checkpoint directory (bert_finetune --task squad)");
  cmd->add_option("--input", a.input, "JSON Lines file (default: stdin)")->type_name("FILE");
  cli::add_number(*cmd, "--max-seq-length,--max-len", a.features.max_len, "tokens per window (0: 384), at most what the model's positions hold");
  cli::add_number(*cmd, "--doc-stride", a.features.doc_stride, "tokens shared by consecutive windows of a long context (0: a third of --max-seq-length)");
  cli::add_number(*cmd, "--max-query-length", a.features.max_query_length, "question tokens kept")->check(cli::positive());
  cli::add_number(*cmd, "--n-best-size", a.decode.n_best_size, "start and end candidates per window")->check(cli::positive());
  cli::add_number(*cmd, "--max-answer-length", a.decode.max_answer_length, "longest answer, in tokens")->check(cli::positive());
  cmd->add_flag("--version-2", a.decode.version_2, "questions may have no answer (SQuAD v2.0): answer \"\" when the null score wins");
  cli::add_number(*cmd, "--null-score-diff-threshold", a.decode.null_score_diff_threshold,
                  "with --version-2: answer \"\" when null score - best span score exceeds this");
  cli::add_number(*cmd, "--batch-size,--batch", a.batch, "questions per forward pass")->check(cli::positive());
  cmd->footer("Prints one JSON line per question: {\"id\", \"answer\", \"start\", \"end\" (code points of the context, as Python\n"
              "indexes it), \"score\" (start + end logit), \"probability\" (over the n-best answers)[, \"null_odds\"]}.");
  return cmd;
}

int run_qa(const QaArgs& a) {
  inference::Pipeline p = open_checkpoint(a.checkpoint, "qa", "ForQuestionAnswering", "a question-answering model");
  p.set_batch(a.batch);  // windows per forward pass
  std::ifstream file;
  if (!a.input.empty()) {
    file.open(a.input, std::ios::binary);
    if (!file) throw std::runtime_error(fmt::format("[qa] {}: cannot open", a.input));
  }
  const std::optional<std::string>& text = a.checkpoint.text;
  if (text && !a.input.empty()) throw std::invalid_argument("qa: --text and --input both name the questions: give one");
  std::istringstream given(text.value_or(""));
  std::istream& in = text ? given : a.input.empty() ? std::cin : file;
  const std::string source = text ? "--text" : a.input.empty() ? "stdin" : a.input;
  std::vector<text::SquadQuestion> questions;
  std::string line;
  for (size_t n = 1; next_line(in, line, source); ++n) {
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    questions.push_back(question_of(line, n, source));
    if (questions.size() == a.batch) {
      answer(questions, p, a);
      questions.clear();
    }
  }
  answer(questions, p, a);
  return 0;
}

}  // namespace xg::infer
