#include "training/tasks/ner.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "models/core/head_config.hpp"
#include "training/tasks/ner_data.hpp"

namespace xg::training {

const OptionTable<NerOptions>& NerOptions::table() {
  using O = NerOptions;
  constexpr OnResume kRestore = OnResume::Restore;
  static const OptionTable<O> t = OptionTable<O>()
      .add("--tag-column", &O::tag_column, "the tag's column, 1-based (0: the last one; the word is column 1)", kRestore)
      .add("--tag-scheme", &O::tag_scheme, "the files' tag scheme: auto (detected), iob1, iob2 or bioes; training uses "
                                           "IOB2, predictions are written back in the file's scheme", kRestore)
      .add("--label-all-tokens", &O::label_all_tokens, "train on every sub-token of a word (B-X's later pieces as I-X), "
                                                       "not only the first", kRestore)
      .add("--window-stride", &O::stride, "sub-tokens shared by consecutive windows of a sentence longer than --max-seq-length (0: a "
                                               "quarter of the window)", kRestore);
  return t;
}

text::ConllOptions NerOptions::conll() const {
  text::ConllOptions c;
  c.tag_column = tag_column;
  c.scheme = text::parse_tag_scheme(tag_scheme);
  return c;
}

text::WordAlignOptions NerOptions::align(size_t max_len) const {
  text::WordAlignOptions a;
  a.max_len = max_len;
  a.stride = stride;
  a.label_all_tokens = label_all_tokens;
  return a;
}

namespace {

models::HeadConfig head_of(const models::PretrainedModel& m) { return models::HeadConfig::from_json(m.config_json(), m.architecture()); }

inference::LogitsFn logits_of(models::PretrainedModel& model) {
  return [&model](const models::ModelInputs& in) { return model.forward_named(in).at("logits"); };
}

Scores score_predictions(const NerSet& set, const NerPredictions& p) {
  Scores s;
  const auto& r = p.report;
  double right = 0;
  for (size_t i = 0; i < set.iob2_tags.size(); ++i)
    for (size_t w = 0; w < set.iob2_tags[i].size(); ++w) right += set.iob2_tags[i][w] == p.tags[i][w];
  s.values = {{"f1", r.micro.f1},
              {"precision", r.micro.precision},
              {"recall", r.micro.recall},
              {"accuracy", set.words() ? right / double(set.words()) : 0.0},
              {"entities", double(r.micro.support)},
              {"sentences", double(set.sentences.size())}};
  std::string types;
  for (const auto& [type, t] : r.types) {
    s.values.emplace_back("f1_" + type, t.f1);
    types += fmt::format(", {} {:.4f}", type, t.f1);
  }
  s.main = r.micro.f1;
  s.summary = fmt::format("entity F1 {:.4f} (precision {:.4f}, recall {:.4f}{}) on {} sentences, {} entities", r.micro.f1,
                          r.micro.precision, r.micro.recall, types, set.sentences.size(), r.micro.support);
  return s;
}

class NerTask : public FinetuneTask {
 public:
  NerTask(const FinetuneOptions& o, const NerOptions& n, const TaskContext& ctx)
      : FinetuneTask(o, ctx, "ner", "ForTokenClassification"), n_(n) {
    load_model(new_head_json(), [&](const nlohmann::json& config) {
      // A token classifier keeps its labels unless they are transformers' placeholders (LABEL_0, ...).
      const models::HeadConfig saved = models::HeadConfig::from_json(config, o.model);
      return saved.id2label != models::HeadConfig::with_num_labels(saved.num_labels()).id2label;
    });
    head_ = head_of(*model_);
    const text::WordAlignOptions align = n.align(o.max_len);
    train_ = encode_conll(o.train, n.conll(), *tok_, head_.id2label, align);
    for (size_t s : sample_training(train_.sentences.size()))
      train_rows_.insert(train_rows_.end(), train_.windows_of[s].begin(), train_.windows_of[s].end());
    if (!o.dev.empty()) dev_ = encode_conll(o.dev, n.conll(), *tok_, {}, align);  // dev tags are scored, not trained
    const text::TokenWindow* longest = nullptr;
    for (const NerSet* set : {&train_, &dev_})
      for (const auto& w : set->windows)
        if (!longest || w.ids.size() > longest->ids.size()) longest = &w;
    if (longest) check_fits({std::vector<int64_t>(longest->ids.begin(), longest->ids.end()), {}});
  }

  std::string describe() const override {
    return fmt::format("{} ({:.2f}M parameters), {} labels; {} training windows of {} sentences ({}), {} dev sentences, "
                       "windows of up to {} tokens",
                       model_->architecture(), double(model_->num_parameters()) / 1e6, head_.num_labels(), train_rows_.size(),
                       train_.sentences.size(), text::tag_scheme_name(train_.scheme), dev_.sentences.size(), opt_.max_len);
  }
  size_t train_examples_per_epoch() override { return train_rows_.size(); }
  size_t train_length(size_t row) const override { return train_.windows[train_rows_[row]].ids.size(); }

  BatchLoss next_batch_loss(size_t batch_size) override {
    std::vector<size_t> rows = next_rows(batch_size, train_rows_.size());
    for (size_t& r : rows) r = train_rows_[r];
    const NerBatch b = make_ner_batch(train_.windows, rows, tok_->pad_id());
    const auto out = model_->forward_named(b.inputs, {{"labels", b.labels}});
    // token accuracy over the labelled positions, for the progress line
    const auto logits = out.at("logits").to_vector();
    const auto labels = b.labels.to_ints();
    const size_t C = head_.num_labels();
    double labelled = 0, correct = 0;
    for (size_t i = 0; i < labels.size(); ++i) {
      if (labels[i] == text::kIgnoreLabel) continue;
      const float* row = logits.data() + i * C;
      labelled += 1;
      correct += int64_t(std::max_element(row, row + C) - row) == labels[i];
    }
    return BatchLoss{out.at("loss"), {}, {{"labelled", labelled}, {"correct", correct}}, b.tokens};
  }

  Scalars train_metrics(const Counts& c) const override {
    if (!c.count("labelled")) return {};
    return {{"token_accuracy", c.at("correct") / std::max(c.at("labelled"), 1.0)}};
  }

 protected:
  Scores score_dev(size_t batch_size) override {
    if (dev_.sentences.empty()) return {};
    return score_predictions(dev_, predict_set(dev_, head_.id2label, tok_->pad_id(), batch_size, logits_of(*model_)));
  }

 private:
  // The training file's tags in IOB2 as the labels.
  nlohmann::json new_head_json() const {
    const text::ConllData data = text::read_conll(opt_.train, n_.conll());
    std::vector<std::vector<std::string>> tags;
    for (const auto& s : data.sentences) tags.push_back(text::to_iob2(s.tags, data.scheme));
    const std::vector<std::string> labels = text::ner_label_list(tags);
    if (labels.size() < 2)  // a tagger of one tag learns nothing and scores no entities
      throw std::invalid_argument(fmt::format("[ner] --train-file {}: no entities in its {} sentences (every tag is {}): a tagger "
                                              "needs tagged entities to learn from", opt_.train, data.sentences.size(),
                                              labels.empty() ? "missing" : labels.front()));
    nlohmann::json j = nlohmann::json::object();
    models::HeadConfig::with_labels(labels).add_to_json(j);
    return j;
  }

  const NerOptions n_;
  models::HeadConfig head_;
  NerSet train_, dev_;
  std::vector<size_t> train_rows_;  // the windows trained on (of the sampled sentences)
};

}  // namespace

std::unique_ptr<Task> NerKind::make_task(const FinetuneOptions& o, const TaskContext& ctx) {
  return std::make_unique<NerTask>(o, options_, ctx);
}

nlohmann::json NerKind::score_file(const std::string& checkpoint, const std::string& file, const FinetuneOptions& o,
                                   size_t batch_size, const std::string& predictions) {
  const ScoringModel m(checkpoint, o);
  const models::HeadConfig head = head_of(*m.model);
  const NerSet set = encode_conll(file, options_.conll(), *m.tok, {}, options_.align(o.max_len));
  const NerPredictions p = predict_set(set, head.id2label, m.tok->pad_id(), batch_size, logits_of(*m.model));
  if (!predictions.empty()) write_conll_predictions(predictions, set, p.tags);
  return score_predictions(set, p).values_json();
}

}  // namespace xg::training
