#pragma once
// Model configs whose fields are declared once. A family lists its fields in an X-macro
//   #define MY_FIELDS(X) X(size_t, hidden_size, 768, config::positive) ...
// (type, Hugging Face name, default, check) and puts XG_CONFIG_FIELDS(MY_FIELDS) in its struct:
// that declares the members with their defaults and a for_each_field visitor, from which
// config::to_json, config::from_json and config::check_fields work for any family.
#include <string>

#include <nlohmann/json.hpp>

#include "util/json_input.hpp"

#define XG_CONFIG_DECLARE_MEMBER(type, name, default_value, check) type name = default_value;
#define XG_CONFIG_VISIT_MEMBER(type, name, default_value, check) visit(#name, self.name, check);
#define XG_CONFIG_FIELDS(LIST)                                     \
  LIST(XG_CONFIG_DECLARE_MEMBER)                                   \
  /* visit(name, field, check) for every field, in declared order */ \
  template <class Self, class Visit>                               \
  static void for_each_field(Self& self, Visit&& visit) {          \
    LIST(XG_CONFIG_VISIT_MEMBER)                                   \
  }

namespace xg::models::config {

// Field checks: called with the field's name and value, they throw std::invalid_argument naming
// both when the value is out of range.
struct Positive {  // in [1, kMaxSize]: a size
  static constexpr size_t kMaxSize = size_t(1) << 24;
  void operator()(const char* field, size_t v) const;
};
struct NonNegative {
  void operator()(const char* field, int64_t v) const;
};
struct AboveZero {
  void operator()(const char* field, float v) const;
};
struct Probability {  // in [0, 1): a dropout probability
  void operator()(const char* field, float v) const;
};
struct ActivationName {  // one nn::activation_from_name knows
  void operator()(const char* field, const std::string& v) const;
};
struct AnyValue {
  template <class T>
  void operator()(const char*, const T&) const {}
};
inline constexpr Positive positive{};
inline constexpr NonNegative non_negative{};
inline constexpr AboveZero above_zero{};
inline constexpr Probability probability{};
inline constexpr ActivationName activation_name{};
inline constexpr AnyValue any_value{};

// JSON value -> field, with the type checked (integers for size_t/int64_t, no negative size_t,
// numbers for float, strings, booleans); throws std::invalid_argument saying what was expected.
void read_value(const nlohmann::json& v, size_t& out);
void read_value(const nlohmann::json& v, int64_t& out);
void read_value(const nlohmann::json& v, float& out);
void read_value(const nlohmann::json& v, bool& out);
void read_value(const nlohmann::json& v, std::string& out);

// The JSON object in a file; errors start with "[who] path:".
nlohmann::json read_json_file(const std::string& path, const std::string& who);

// Every field under its name.
template <class C>
nlohmann::json to_json(const C& c) {
  nlohmann::json j = nlohmann::json::object();
  C::for_each_field(c, [&](const char* name, const auto& value, const auto&) { j[name] = value; });
  return j;
}

// Every field and "model_type": C::kModelType, as a config.json holds them.
template <class C>
nlohmann::json to_typed_json(const C& c) {
  nlohmann::json j = to_json(c);
  j["model_type"] = C::kModelType;
  return j;
}

// Runs every field's check; errors start with "[C::kName]".
template <class C>
void check_fields(const C& c) {
  C::for_each_field(c, [&](const char* name, const auto& value, const auto& check) {
    try {
      check(name, value);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("[") + C::kName + "] " + e.what());
    }
  });
}

// Reads the fields present in `j` (missing or null ones keep their defaults; unknown keys, such
// as transformers' bookkeeping, are ignored), then runs c.validate(). Errors name `source` (the
// file) and the field.
template <class C>
C from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) throw std::invalid_argument(std::string("[") + C::kName + "] " + source + ": not a JSON object");
  // Switches transformers honours that change what the encoder computes, and that it lacks.
  for (const char* decoder_only : {"is_decoder", "add_cross_attention"})
    if (const auto it = j.find(decoder_only); it != j.end() && *it == true)
      throw std::invalid_argument(std::string("[") + C::kName + "] " + source + ": " + decoder_only +
                                  " true is not supported (encoders only: bidirectional self-attention)");
  C c;
  C::for_each_field(c, [&](const char* name, auto& field, const auto&) {
    const auto it = j.find(name);
    if (it == j.end() || it->is_null()) return;
    try {
      read_value(*it, field);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("[") + C::kName + "] " + source + ": field " + name + " has an invalid value " +
                                  json_summary(*it) + " (" + e.what() + ")");
    }
  });
  try {
    c.validate();
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(e.what()) + " (in " + source + ")");
  }
  return c;
}

}  // namespace xg::models::config
