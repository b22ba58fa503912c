#include "training/tasks/question_answering.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "inference/qa.hpp"
#include "metrics/squad_metrics.hpp"
#include "util/atomic_file.hpp"
#include "util/strings.hpp"

namespace xg::training {

const OptionTable<QuestionAnsweringOptions>& QuestionAnsweringOptions::table() {
  using O = QuestionAnsweringOptions;
  constexpr OnResume kRestore = OnResume::Restore;
  static const OptionTable<O> t = OptionTable<O>()
      .add("--doc-stride", &O::doc_stride, "tokens shared by consecutive windows of a long context (0: a third of --max-seq-length)", kRestore)
      .add("--max-query-length", &O::max_query_length, "question tokens kept (longer questions are cut)", kRestore, at_least(1))
      .add("--n-best-size", &O::n_best_size, "start and end candidates per window when decoding answers", kRestore, at_least(1))
      .add("--max-answer-length", &O::max_answer_length, "longest answer decoded, in tokens", kRestore, at_least(1))
      .add("--null-score-diff-threshold", &O::null_score_diff_threshold,
           "squad_v2: answer \"\" when the null score exceeds the best span's by more than this", kRestore);
  return t;
}

void QuestionAnsweringKind::add_options(CLI::App& app) {
  QuestionAnsweringOptions::table().add_to(app, options_, "Question answering (--task squad, squad_v2: SQuAD v1.1/v2.0 JSON)");
}

namespace {

// The questions of a SQuAD file; v1.1 has no unanswerable ones.
std::vector<text::SquadQuestion> read_questions(const std::string& path, bool version_2) {
  std::vector<text::SquadQuestion> q = text::read_squad(path);
  if (!version_2)
    for (const auto& x : q)
      if (x.is_impossible)
        throw std::invalid_argument(fmt::format("[squad] {}: question '{}' is unanswerable, which SQuAD v1.1 has not: use --task squad_v2", path, x.id));
  return q;
}

text::SquadFeatureOptions feature_options(const FinetuneOptions& o, const QuestionAnsweringOptions& q) {
  return {o.max_len, q.doc_stride == 0 ? o.max_len / 3 : q.doc_stride, q.max_query_length};
}

text::SquadDecodeOptions decode_options(const QuestionAnsweringOptions& q, bool version_2) {
  return {q.n_best_size, q.max_answer_length, version_2, q.null_score_diff_threshold};
}

// A SQuAD file with its windows.
struct QaSet {
  std::vector<text::SquadQuestion> questions;
  std::vector<text::SquadFeature> features;
};

QaSet encode_file(const std::string& path, bool version_2, const text::Tokenizer& tok, const text::SquadFeatureOptions& fo,
                  const std::vector<size_t>* keep = nullptr) {
  QaSet s;
  s.questions = read_questions(path, version_2);
  if (keep) {
    std::vector<text::SquadQuestion> kept;
    for (size_t i : *keep) kept.push_back(s.questions[i]);
    s.questions = std::move(kept);
  }
  s.features = text::squad_features(s.questions, tok, fo);
  return s;
}

// The set's answers decoded from the model and scored by the official script of the version.
struct Answered {
  std::vector<text::SquadPrediction> predictions;
  Scores scores;
};

Answered answer_set(models::PretrainedModel& model, const QaSet& set, int64_t pad_id, size_t batch, const text::SquadDecodeOptions& d) {
  Answered a;
  a.predictions = text::decode_squad_answers(set.questions, set.features, inference::span_logits(model, set.features, pad_id, batch), d);
  std::vector<metrics::squad::GoldAnswers> gold;
  metrics::squad::Predictions predicted;
  std::map<std::string, double> null_odds;
  for (size_t i = 0; i < set.questions.size(); ++i) {
    const auto& q = set.questions[i];
    metrics::squad::GoldAnswers g{q.id, {}};
    for (const auto& ans : q.answers) g.answers.push_back(ans.text);
    gold.push_back(std::move(g));
    predicted[q.id] = a.predictions[i].text;
    null_odds[q.id] = a.predictions[i].null_odds;
  }
  Scores& s = a.scores;
  // v2.0: the answers as written (their no-answer choice already made with
  // --null-score-diff-threshold, as transformers' run_qa scores them), and the null odds for the
  // best_* threshold search alone; the script's own cut at 1.0 would score some answers as "".
  s.values = d.version_2 ? metrics::squad::evaluate_v2(gold, predicted, null_odds, std::numeric_limits<double>::infinity())
                         : metrics::squad::evaluate_v1(gold, predicted);
  s.values.emplace_back("questions", double(set.questions.size()));
  const auto value = [&](const std::string& name) {
    for (const auto& [n, v] : s.values)
      if (n == name) return v;
    return 0.0;
  };
  const char* exact = d.version_2 ? "exact" : "exact_match";
  s.main = value("f1");
  s.full_scale = 100;  // SQuAD's scores are percentages
  s.summary = fmt::format("F1 {:.2f}, exact match {:.2f}", value("f1"), value(exact));
  if (d.version_2)
    s.summary += fmt::format(" (answerable F1 {:.2f}, unanswerable {:.2f}; best F1 {:.2f} at null odds {:.3g})", value("HasAns_f1"),
                             value("NoAns_f1"), value("best_f1"), value("best_f1_thresh"));
  s.summary += fmt::format(" on {} questions", set.questions.size());
  return a;
}

// The official formats: {"id": "answer"} and, for v2.0, {"id": null odds}.
void write_predictions(const std::string& path, const QaSet& set, const std::vector<text::SquadPrediction>& p, bool version_2) {
  nlohmann::ordered_json answers = nlohmann::ordered_json::object(), odds = nlohmann::ordered_json::object();
  for (size_t i = 0; i < set.questions.size(); ++i) {
    answers[set.questions[i].id] = p[i].text;
    odds[set.questions[i].id] = p[i].null_odds;
  }
  write_text_atomically(path, answers.dump(2) + "\n");
  if (version_2) write_text_atomically(null_odds_path(path), odds.dump(2) + "\n");
}

class QuestionAnsweringTask : public FinetuneTask {
 public:
  QuestionAnsweringTask(const FinetuneOptions& o, const QuestionAnsweringOptions& q, bool version_2, const TaskContext& ctx)
      : FinetuneTask(o, ctx, version_2 ? "squad_v2" : "squad", "ForQuestionAnswering"), q_(q), version_2_(version_2) {
    load_model(nlohmann::json::object(), [](const nlohmann::json&) { return true; });  // a QA head has no labels to differ
    const text::SquadFeatureOptions fo = feature_options(o, q);
    const size_t all = read_questions(o.train, version_2).size();
    const std::vector<size_t> keep = sample_training(all);
    train_ = encode_file(o.train, version_2, *tok_, fo, &keep);
    if (!o.dev.empty()) dev_ = encode_file(o.dev, version_2, *tok_, fo);
    const text::SquadFeature* longest = nullptr;
    for (const QaSet* set : {&train_, &dev_})
      for (const auto& f : set->features)
        if (!longest || f.encoding.size() > longest->encoding.size()) longest = &f;
    if (longest) check_fits(inference::feature_sequence(*longest));
  }

  std::string describe() const override {
    return fmt::format("{} ({:.2f}M parameters), SQuAD {}; {} training questions in {} windows, {} dev questions in {} windows, "
                       "windows of {} tokens", model_->architecture(), double(model_->num_parameters()) / 1e6,
                       version_2_ ? "v2.0" : "v1.1", train_.questions.size(), train_.features.size(), dev_.questions.size(),
                       dev_.features.size(), opt_.max_len);
  }
  // run_qa trains on windows: a long context gives several examples
  size_t train_examples_per_epoch() override { return train_.features.size(); }
  size_t train_length(size_t row) const override { return train_.features[row].encoding.size(); }

  BatchLoss next_batch_loss(size_t batch_size) override {
    const std::vector<size_t> rows = next_rows(batch_size, train_.features.size());
    std::vector<models::Sequence> seqs;
    std::vector<int64_t> starts, ends;
    size_t tokens = 0;
    for (size_t r : rows) {
      const text::SquadFeature& f = train_.features[r];
      seqs.push_back(inference::feature_sequence(f));
      tokens += f.encoding.size();
      starts.push_back(f.start_position);
      ends.push_back(f.end_position);
    }
    const auto out = model_->forward_named(models::pad_sequences(seqs, tok_->pad_id()),
                                           {{"start_positions", Tensor::from_ints(starts, {rows.size()})},
                                            {"end_positions", Tensor::from_ints(ends, {rows.size()})}});
    // spans whose start and end tokens both are the most likely ones
    const std::vector<float> s = out.at("start_logits").to_vector(), e = out.at("end_logits").to_vector();
    const size_t T = s.size() / rows.size();
    double right = 0;
    for (size_t b = 0; b < rows.size(); ++b) {
      const auto argmax = [&](const std::vector<float>& v) { return int64_t(std::max_element(v.begin() + long(b * T), v.begin() + long((b + 1) * T)) - (v.begin() + long(b * T))); };
      right += argmax(s) == starts[b] && argmax(e) == ends[b];
    }
    return {out.at("loss"), {}, {{"examples", double(rows.size())}, {"span_correct", right}}, tokens};
  }

  Scalars train_metrics(const Counts& c) const override {
    if (!c.count("examples")) return {};
    return {{"span_accuracy", c.at("span_correct") / std::max(c.at("examples"), 1.0)}};
  }

 protected:
  Scores score_dev(size_t batch_size) override {
    if (dev_.questions.empty()) return {};
    return answer_set(*model_, dev_, tok_->pad_id(), batch_size, decode_options(q_, version_2_)).scores;
  }

 private:
  const QuestionAnsweringOptions q_;
  const bool version_2_;
  QaSet train_, dev_;
};

}  // namespace

std::string null_odds_path(const std::string& predictions) {
  const bool json = ends_with(predictions, ".json");
  return (json ? predictions.substr(0, predictions.size() - 5) : predictions) + "_null_odds.json";
}

std::unique_ptr<Task> QuestionAnsweringKind::make_task(const FinetuneOptions& o, const TaskContext& ctx) {
  return std::make_unique<QuestionAnsweringTask>(o, options_, version_2_, ctx);
}

nlohmann::json QuestionAnsweringKind::score_file(const std::string& checkpoint, const std::string& file, const FinetuneOptions& o,
                                                 size_t batch_size, const std::string& predictions) {
  const ScoringModel m(checkpoint, o);
  const QaSet set = encode_file(file, version_2_, *m.tok, feature_options(o, options_));
  const Answered a = answer_set(*m.model, set, m.tok->pad_id(), batch_size, decode_options(options_, version_2_));
  if (!predictions.empty()) write_predictions(predictions, set, a.predictions, version_2_);
  return a.scores.values_json();
}

}  // namespace xg::training
