#include "models/core/config_fields.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <stdexcept>

#include "nn/layers.hpp"

namespace xg::models::config {

void Positive::operator()(const char* field, size_t v) const {
  if (v == 0) throw std::invalid_argument(fmt::format("{} must be positive, got 0", field));
  // Far above any real model's size (the largest vocabularies hold ~250K tokens), and low enough
  // that no product of two sizes wraps; memory runs out first, with an error naming the shape.
  if (v > kMaxSize) throw std::invalid_argument(fmt::format("{} is {}: more than {} (a corrupt config?)", field, v, kMaxSize));
}

void NonNegative::operator()(const char* field, int64_t v) const {
  if (v < 0) throw std::invalid_argument(fmt::format("{} must not be negative, got {}", field, v));
}

void AboveZero::operator()(const char* field, float v) const {
  if (!(v > 0.f)) throw std::invalid_argument(fmt::format("{} {} must be > 0", field, v));
}

void Probability::operator()(const char* field, float v) const {
  if (!(v >= 0.f && v < 1.f)) throw std::invalid_argument(fmt::format("{} {} is not in [0, 1)", field, v));
}

void ActivationName::operator()(const char* field, const std::string& v) const {
  try {
    nn::activation_from_name(v);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("{}: {}", field, e.what()));
  }
}

void read_value(const nlohmann::json& v, size_t& out) {
  // JSON integers only: 12.0 or "12" would hide a typo, and a negative size must not wrap.
  if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0))
    throw std::invalid_argument("expected a non-negative integer");
  out = v.get<size_t>();
}

void read_value(const nlohmann::json& v, int64_t& out) {
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)))
    throw std::invalid_argument("expected an integer");
  out = v.get<int64_t>();
}

void read_value(const nlohmann::json& v, float& out) {
  if (!v.is_number()) throw std::invalid_argument("expected a number");
  // 1e39 would become inf as a float and pass a "> 0" check
  if (!std::isfinite(v.get<float>())) throw std::invalid_argument("expected a number within float's range");
  out = v.get<float>();
}

void read_value(const nlohmann::json& v, bool& out) {
  if (!v.is_boolean()) throw std::invalid_argument("expected true or false");
  out = v.get<bool>();
}

void read_value(const nlohmann::json& v, std::string& out) {
  if (!v.is_string()) throw std::invalid_argument("expected a string");
  out = v.get<std::string>();
}

nlohmann::json read_json_file(const std::string& path, const std::string& who) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("[{}] {}: cannot open", who, path));
  try {
    return parse_json_bounded(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(fmt::format("[{}] {}: not valid JSON ({})", who, path, e.what()));
  }
}

}  // namespace xg::models::config
