#include "models/core/head_config.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>
#include <stdexcept>

#include "models/core/config_fields.hpp"
#include "util/json_input.hpp"

namespace xg::models {

HeadConfig HeadConfig::with_num_labels(size_t n) {
  config::positive("num_labels", n);  // before making n names: a corrupt count would exhaust memory
  std::vector<std::string> labels;
  for (size_t i = 0; i < n; ++i) labels.push_back(fmt::format("LABEL_{}", i));
  return with_labels(std::move(labels));
}

HeadConfig HeadConfig::with_labels(std::vector<std::string> labels) {
  HeadConfig c;
  c.id2label = std::move(labels);
  c.validate();
  return c;
}

int64_t HeadConfig::label_id(const std::string& label) const {
  for (size_t i = 0; i < id2label.size(); ++i)
    if (id2label[i] == label) return int64_t(i);
  throw std::invalid_argument(fmt::format("[{}] unknown label '{}' (known: {})", kName, label, fmt::join(id2label, ", ")));
}

void HeadConfig::validate() const {
  if (id2label.empty()) throw std::invalid_argument(fmt::format("[{}] num_labels must be positive, got 0", kName));
  std::set<std::string> seen;
  for (size_t i = 0; i < id2label.size(); ++i) {
    if (id2label[i].empty()) throw std::invalid_argument(fmt::format("[{}] id2label: label {} is empty", kName, i));
    if (!seen.insert(id2label[i]).second)
      throw std::invalid_argument(fmt::format("[{}] id2label: label '{}' appears twice", kName, id2label[i]));
  }
  static const std::set<std::string> kProblems = {"", "regression", "single_label_classification", "multi_label_classification"};
  if (!kProblems.count(problem_type))
    throw std::invalid_argument(fmt::format("[{}] problem_type '{}' is not regression, single_label_classification or "
                                            "multi_label_classification", kName, problem_type));
  if (classifier_dropout) config::probability("classifier_dropout", *classifier_dropout);
}

void HeadConfig::add_to_json(nlohmann::json& j) const {
  nlohmann::json id2 = nlohmann::json::object(), to_id = nlohmann::json::object();
  for (size_t i = 0; i < id2label.size(); ++i) {
    id2[std::to_string(i)] = id2label[i];
    to_id[id2label[i]] = i;
  }
  j["id2label"] = id2;
  j["label2id"] = to_id;
  j["problem_type"] = problem_type.empty() ? nlohmann::json(nullptr) : nlohmann::json(problem_type);
  j["classifier_dropout"] = classifier_dropout ? nlohmann::json(*classifier_dropout) : nlohmann::json(nullptr);
}

namespace {
[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw std::invalid_argument(fmt::format("[{}] {}: {}", HeadConfig::kName, source, what));
}

// Labels by id from {"0": "neg", "1": "pos"}: every id from 0 to n-1 exactly once.
std::vector<std::string> read_id2label(const nlohmann::json& m, const std::string& source) {
  if (!m.is_object()) fail(source, fmt::format("id2label must be an object, got {}", json_summary(m)));
  std::vector<std::string> labels(m.size());
  std::vector<bool> seen(m.size(), false);
  for (const auto& [key, value] : m.items()) {
    size_t used = 0;
    long id = -1;
    try {
      id = std::stol(key, &used);
    } catch (const std::exception&) {
    }
    if (used != key.size() || id < 0 || size_t(id) >= labels.size() || seen[size_t(id)])
      fail(source, fmt::format("id2label key '{}' is not one of the ids 0 to {}, each once", key, labels.size() - 1));
    if (!value.is_string()) fail(source, fmt::format("id2label[\"{}\"] must be a string, got {}", key, json_summary(value)));
    labels[size_t(id)] = value.get<std::string>();
    seen[size_t(id)] = true;
  }
  return labels;
}

std::vector<std::string> read_label2id(const nlohmann::json& m, const std::string& source) {
  if (!m.is_object()) fail(source, fmt::format("label2id must be an object, got {}", json_summary(m)));
  std::vector<std::string> labels(m.size());
  std::vector<bool> seen(m.size(), false);
  for (const auto& [label, id] : m.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || size_t(id.get<int64_t>()) >= labels.size() || seen[id.get<size_t>()])
      fail(source, fmt::format("label2id[\"{}\"] = {} is not one of the ids 0 to {}, each once", label, json_summary(id),
                               labels.size() - 1));
    labels[id.get<size_t>()] = label;
    seen[id.get<size_t>()] = true;
  }
  return labels;
}
}  // namespace

HeadConfig HeadConfig::from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) fail(source, "not a JSON object");
  HeadConfig c;
  auto present = [&](const char* key) { return j.contains(key) && !j[key].is_null(); };
  try {
    if (present("id2label")) {
      c.id2label = read_id2label(j["id2label"], source);
    } else if (present("label2id")) {
      c.id2label = read_label2id(j["label2id"], source);
    } else if (present("num_labels")) {
      size_t n = 0;
      config::read_value(j["num_labels"], n);
      c.id2label = with_num_labels(n).id2label;
    }
    if (present("problem_type")) config::read_value(j["problem_type"], c.problem_type);
    if (present("classifier_dropout")) {
      float p = 0;
      config::read_value(j["classifier_dropout"], p);
      c.classifier_dropout = p;
    }
    c.validate();
  } catch (const std::invalid_argument& e) {
    std::string what = e.what();
    if (what.rfind(std::string("[") + kName + "] " + source, 0) == 0) throw;  // already names the file
    const std::string prefix = std::string("[") + kName + "] ";
    if (what.rfind(prefix, 0) == 0) what = what.substr(prefix.size());
    fail(source, what);
  }
  return c;
}

}  // namespace xg::models
