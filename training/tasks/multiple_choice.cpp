#include "training/tasks/multiple_choice.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "metrics/eval_metrics.hpp"
#include "text/classification_data.hpp"

namespace xg::training {

const OptionTable<MultipleChoiceOptions>& MultipleChoiceOptions::table() {
  using O = MultipleChoiceOptions;
  constexpr OnResume kRestore = OnResume::Restore;
  static const OptionTable<O> t = OptionTable<O>()
      .add("--context-column", &O::context_column, "multiple choice: the context every choice is paired with (a column, "
                                                   "or columns joined with '+')", kRestore)
      .add("--choice-columns", &O::choice_columns, "multiple choice: one column (or '+'-joined columns) per choice, "
                                                   "comma-separated (default: SWAG's)", kRestore)
      .add("--choice-label-column", &O::choice_label_column, "multiple choice: the column holding the right choice's "
                                                             "index (0-based)", kRestore);
  return t;
}

namespace {

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> parts;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, ',');) parts.push_back(part);
  return parts;
}

// Examples of `path` (rows: a sample, empty: all) as C sequences each, and the right choice.
struct ChoiceSet {
  std::vector<std::vector<models::Sequence>> choices;  // [example][choice]
  std::vector<int64_t> labels;
  size_t size() const { return labels.size(); }
};

ChoiceSet read_choices(const std::string& path, const MultipleChoiceOptions& c, size_t max_len, const text::Tokenizer& tok,
                       const std::vector<size_t>& rows = {}) {
  const auto specs = split_commas(c.choice_columns);
  if (specs.size() < 2)
    throw std::invalid_argument(fmt::format("[multiple_choice] --choice-columns '{}': name at least two choices", c.choice_columns));
  // The reader once per choice: the context as text, the choice as text_b, the same label column.
  std::vector<std::vector<text::TextExample>> per_choice;
  for (const auto& spec : specs) {
    text::TextColumns columns;
    columns.label = c.choice_label_column;
    columns.text = c.context_column;
    columns.text_b = spec;
    per_choice.push_back(text::read_text_examples(path, columns));
  }
  ChoiceSet set;
  const size_t n = per_choice[0].size();
  text::EncodeOptions eo;
  eo.max_length = max_len;
  for (size_t i = 0; i < n; ++i) {
    if (!rows.empty() && !std::binary_search(rows.begin(), rows.end(), i)) continue;
    const auto& e = per_choice[0][i];
    char* end = nullptr;
    const long label = std::strtol(e.label.c_str(), &end, 10);
    if (e.label.empty() || *end != '\0' || label < 0 || size_t(label) >= specs.size())
      throw std::invalid_argument(fmt::format("[multiple_choice] {}:{}: label '{}' is not a choice index 0..{}", path, e.line,
                                              e.label, specs.size() - 1));
    std::vector<models::Sequence> seqs;
    for (const auto& choice : per_choice) {
      const text::Encoding enc = tok.encode_pair(choice[i].text_a, choice[i].text_b, eo);
      seqs.push_back({std::vector<int64_t>(enc.ids.begin(), enc.ids.end()), std::vector<int64_t>(enc.type_ids.begin(), enc.type_ids.end())});
    }
    set.choices.push_back(std::move(seqs));
    set.labels.push_back(label);
  }
  return set;
}

// Rows of the set as (B, C, T) inputs: B * C sequences padded together, then reshaped.
models::ModelInputs choice_inputs(const ChoiceSet& set, const std::vector<size_t>& rows, int64_t pad_id, size_t* tokens) {
  std::vector<models::Sequence> flat;
  for (size_t r : rows)
    for (const auto& s : set.choices[r]) {
      flat.push_back(s);
      if (tokens) *tokens += s.ids.size();
    }
  models::ModelInputs in = models::pad_sequences(flat, pad_id);
  const long b = long(rows.size()), c = long(set.choices[rows[0]].size()), t = long(in.seq_len());
  for (Tensor* field : {&in.input_ids, &in.token_type_ids, &in.position_ids, &in.attention_mask})
    if (field->defined()) *field = reshape(*field, {b, c, t});
  return in;
}

Tensor label_tensor(const ChoiceSet& set, const std::vector<size_t>& rows) {
  std::vector<int64_t> ids;
  for (size_t r : rows) ids.push_back(set.labels[r]);
  return Tensor::from_ints(ids, {rows.size()});
}

// The (N, C) logits of every example, in batches.
std::vector<float> choice_logits(models::PretrainedModel& model, const ChoiceSet& set, int64_t pad_id, size_t batch_size) {
  std::vector<float> out;
  for (size_t start = 0; start < set.size(); start += batch_size) {
    std::vector<size_t> rows;
    for (size_t r = start; r < std::min(set.size(), start + batch_size); ++r) rows.push_back(r);
    const auto logits = model.forward_named(choice_inputs(set, rows, pad_id, nullptr)).at("logits").to_vector();
    out.insert(out.end(), logits.begin(), logits.end());
  }
  return out;
}

std::vector<int64_t> argmax_rows(const std::vector<float>& logits, size_t width) {
  std::vector<int64_t> best;
  for (size_t i = 0; i + width <= logits.size(); i += width)
    best.push_back(int64_t(std::max_element(logits.begin() + long(i), logits.begin() + long(i + width)) - logits.begin() - long(i)));
  return best;
}

Scores choice_scores(const ChoiceSet& set, const std::vector<int64_t>& predicted) {
  Scores s;
  const double acc = metrics::accuracy(set.labels, predicted);
  s.values = {{"accuracy", acc}, {"examples", double(set.size())}};
  s.main = acc;
  s.summary = fmt::format("accuracy {:.2f}% on {} examples", 100 * acc, set.size());
  return s;
}

class MultipleChoiceTask : public FinetuneTask {
 public:
  MultipleChoiceTask(const FinetuneOptions& o, const MultipleChoiceOptions& c, const TaskContext& ctx)
      : FinetuneTask(o, ctx, "multiple_choice", "ForMultipleChoice") {
    load_model(nlohmann::json::object(), [](const nlohmann::json&) { return true; });  // a choice head has no labels to fit
    const size_t all = read_choices(o.train, c, o.max_len, *tok_).size();
    train_ = read_choices(o.train, c, o.max_len, *tok_, sample_training(all));
    if (!o.dev.empty()) dev_ = read_choices(o.dev, c, o.max_len, *tok_);
    check_longest_fits();
  }

  std::string describe() const override {
    return fmt::format("{} ({:.2f}M parameters); {} training examples of {} choices, {} dev examples, up to {} tokens",
                       model_->architecture(), double(model_->num_parameters()) / 1e6, train_.size(),
                       train_.size() ? train_.choices[0].size() : 0, dev_.size(), opt_.max_len);
  }
  size_t train_examples_per_epoch() override { return train_.size(); }
  size_t train_length(size_t row) const override {
    size_t longest = 0;
    for (const auto& choice : train_.choices[row]) longest = std::max(longest, choice.ids.size());
    return longest;
  }
  bool splits_batches() const override { return true; }  // the loss is one mean over the examples

  BatchLoss next_batch_loss(size_t batch_size) override {
    const std::vector<size_t> rows = next_rows(batch_size, train_.size());
    size_t tokens = 0;
    const Tensor labels = label_tensor(train_, rows);
    const auto out = model_->forward_named(choice_inputs(train_, rows, tok_->pad_id(), &tokens), {{"labels", labels}});
    const auto predicted = argmax_rows(out.at("logits").to_vector(), train_.choices[rows[0]].size());
    double correct = 0;
    for (size_t i = 0; i < rows.size(); ++i) correct += predicted[i] == train_.labels[rows[i]];
    return {out.at("loss"), {}, {{"examples", double(rows.size())}, {"correct", correct}}, tokens};
  }

  Scalars train_metrics(const Counts& c) const override {
    if (!c.count("examples")) return {};
    return {{"accuracy", c.at("correct") / std::max(c.at("examples"), 1.0)}};
  }

 protected:
  Scores score_dev(size_t batch_size) override {
    if (dev_.size() == 0) return {};
    return choice_scores(dev_, argmax_rows(choice_logits(*model_, dev_, tok_->pad_id(), batch_size), dev_.choices[0].size()));
  }

 private:
  // A model with fewer positions than the longest choice fails here, naming both, not mid-run.
  void check_longest_fits() {
    const ChoiceSet* in = nullptr;
    size_t row = 0, longest = 0;
    for (const ChoiceSet* set : {&train_, &dev_})
      for (size_t r = 0; r < set->size(); ++r)
        for (const auto& seq : set->choices[r])
          if (seq.ids.size() > longest) longest = seq.ids.size(), in = set, row = r;
    if (in) check_fits(choice_inputs(*in, {row}, tok_->pad_id(), nullptr));
  }

  ChoiceSet train_, dev_;
};

}  // namespace

std::unique_ptr<Task> MultipleChoiceKind::make_task(const FinetuneOptions& o, const TaskContext& ctx) {
  return std::make_unique<MultipleChoiceTask>(o, options_, ctx);
}

nlohmann::json MultipleChoiceKind::score_file(const std::string& checkpoint, const std::string& file, const FinetuneOptions& o,
                                              size_t batch_size, const std::string& predictions) {
  const ScoringModel m(checkpoint, o);
  const ChoiceSet set = read_choices(file, options_, o.max_len, *m.tok);
  const auto predicted = argmax_rows(choice_logits(*m.model, set, m.tok->pad_id(), batch_size), set.choices.at(0).size());
  if (!predictions.empty()) {
    std::vector<std::pair<std::string, std::string>> rows;
    for (size_t i = 0; i < predicted.size(); ++i) rows.emplace_back(std::to_string(i), std::to_string(predicted[i]));
    write_index_predictions(predictions, rows);
  }
  return choice_scores(set, predicted).values_json();
}

}  // namespace xg::training
