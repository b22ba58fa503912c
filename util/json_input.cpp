#include "util/json_input.hpp"

#include <fmt/format.h>

namespace xg {

namespace {
// Called by the parser at every event with the number of enclosing arrays and objects.
bool refuse_deep_nesting(int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
  const bool opens = event == nlohmann::json::parse_event_t::object_start || event == nlohmann::json::parse_event_t::array_start;
  if (opens && depth >= kMaxJsonDepth)
    throw nlohmann::json::parse_error::create(
        101, 0, fmt::format("arrays and objects are nested deeper than {} levels", kMaxJsonDepth), nullptr);
  return true;
}
}  // namespace

nlohmann::json parse_json_bounded(std::istream& in) { return nlohmann::json::parse(in, refuse_deep_nesting); }

nlohmann::json parse_json_bounded(const std::string& text) { return nlohmann::json::parse(text, refuse_deep_nesting); }

std::string json_summary(const nlohmann::json& value) {
  constexpr size_t kMaxChars = 40;
  switch (value.type()) {
    case nlohmann::json::value_t::array:
      return fmt::format("an array of {} values", value.size());
    case nlohmann::json::value_t::object:
      return fmt::format("an object of {} keys", value.size());
    case nlohmann::json::value_t::string: {
      const auto& s = value.get_ref<const std::string&>();
      if (s.size() <= kMaxChars) return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      // Cut on a character boundary: UTF-8 continuation bytes are 10xxxxxx.
      size_t cut = kMaxChars;
      while (cut > 0 && (uint8_t(s[cut]) & 0xC0) == 0x80) --cut;
      return nlohmann::json(s.substr(0, cut)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "...";
    }
    default:  // numbers, booleans, null, binary: dump() does not recurse into them
      return value.dump();
  }
}

}  // namespace xg
