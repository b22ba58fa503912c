#pragma once
// JSON from files users hand us (config.json, training_state.json, safetensors headers,
// tokenizer files). nlohmann::json parses iteratively, but copying, comparing and dump() recurse,
// so a value nested 100,000 deep overflows the stack: parse with a bound on the depth, and
// describe values in error messages without dumping them.
#include <istream>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace xg {

// Deeper than any file this project reads (tokenizer_config.json nests 3 levels) and far from
// the stack's limit.
constexpr int kMaxJsonDepth = 64;

// nlohmann::json::parse, refusing arrays and objects nested deeper than kMaxJsonDepth with a
// nlohmann::json::parse_error (so callers' handlers for malformed JSON also report this).
nlohmann::json parse_json_bounded(std::istream& in);
nlohmann::json parse_json_bounded(const std::string& text);

// A value for an error message, never longer than a line: numbers, booleans and null as JSON,
// strings quoted and cut after 40 characters, arrays and objects by their size ("an array of 3
// values"). Unlike dump(), it never recurses.
std::string json_summary(const nlohmann::json& value);

// The integer `value` holds, as T. get<T>() would convert 1e300 or -1 with undefined behaviour
// or wrap-around; this throws std::invalid_argument naming `what` and the value instead.
template <class T>
T json_integer(const nlohmann::json& value, const std::string& what) {
  static_assert(std::is_integral_v<T>);
  using Limits = std::numeric_limits<T>;
  bool fits = false;
  if (value.is_number_unsigned()) {
    fits = value.get<uint64_t>() <= uint64_t(Limits::max());
  } else if (value.is_number_integer()) {
    const int64_t v = value.get<int64_t>();
    fits = std::is_signed_v<T> ? v >= int64_t(Limits::min()) && v <= int64_t(Limits::max())
                               : v >= 0 && uint64_t(v) <= uint64_t(Limits::max());
  }
  if (!fits)
    throw std::invalid_argument(what + " must be an integer in [" + std::to_string(Limits::min()) + ", " +
                                std::to_string(Limits::max()) + "], got " + json_summary(value));
  return value.is_number_unsigned() ? T(value.get<uint64_t>()) : T(value.get<int64_t>());
}

}  // namespace xg
