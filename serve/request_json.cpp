#include "serve/request_json.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "serve/http_error.hpp"
#include "util/json_input.hpp"

namespace xg::serve {

namespace {

// Follows a parse up to where it fails and says which field that was: "inputs[2]" for the third
// element of the "inputs" array. Builds nothing; it runs only to describe a failed parse.
class FieldTracker : public nlohmann::json::json_sax_t {
 public:
  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(false); }
  bool key(string_t& k) override {
    path_.back().key = k;
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    position_ = position;
    message_ = e.what();
    return false;
  }

  // Where the parse stopped: "body" at the top level, else the field's path.
  std::string field() const {
    std::string out;
    for (const Level& l : path_) {
      if (l.array) {
        out += fmt::format("[{}]", l.index);
      } else if (!l.key.empty()) {
        out += (out.empty() ? "" : ".") + l.key;
      }
    }
    return out.empty() ? "body" : out;
  }
  std::size_t position() const { return position_; }
  const std::string& message() const { return message_; }

 private:
  struct Level {
    bool array = false;
    size_t index = 0;  // of the next element of an array
    std::string key;   // of an object's current field
  };
  bool value() {
    if (!path_.empty() && path_.back().array) ++path_.back().index;
    return true;
  }
  bool open(bool array) {
    if (path_.size() >= size_t(kMaxJsonDepth)) return false;
    path_.push_back({array, 0, {}});
    return true;
  }
  bool close() {
    path_.pop_back();
    return value();
  }
  std::vector<Level> path_;
  std::size_t position_ = 0;
  std::string message_;
};

// nlohmann's messages start "[json.exception.parse_error.101] parse error at line 1, column 9: ...".
std::string without_exception_tag(const std::string& message) {
  const size_t end = message.find("] ");
  return message.rfind("[json.exception", 0) == 0 && end != std::string::npos ? message.substr(end + 2) : message;
}

std::string kind_of(const nlohmann::json& v) {
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return "null";
}

[[noreturn]] void wrong_type(const std::string& field, const std::string& expected, const nlohmann::json& got) {
  throw HttpError(400, fmt::format("{}: expected {}, got {} ({})", field, expected, kind_of(got), json_summary(got)));
}

const nlohmann::json* field_of(const nlohmann::json& body, const std::string& name) {
  const auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace

nlohmann::json parse_request(const std::string& body) {
  nlohmann::json parsed;
  try {
    parsed = parse_json_bounded(body);
  } catch (const nlohmann::json::exception&) {
    FieldTracker tracker;
    nlohmann::json::sax_parse(body, &tracker);
    if (tracker.message().empty())  // stopped at the depth bound: the path would be 64 levels long
      throw HttpError(400, fmt::format("body: not valid JSON: nested deeper than {} levels", kMaxJsonDepth));
    throw HttpError(400, fmt::format("{}: not valid JSON: {}", tracker.field(), without_exception_tag(tracker.message())));
  }
  if (!parsed.is_object()) throw HttpError(400, fmt::format("body: expected a JSON object, got {}", kind_of(parsed)));
  return parsed;
}

std::optional<std::string> string_field(const nlohmann::json& body, const std::string& name, const std::string& prefix) {
  const nlohmann::json* v = field_of(body, name);
  if (!v) return std::nullopt;
  if (!v->is_string()) wrong_type(prefix + name, "a string", *v);
  return v->get<std::string>();
}

std::optional<bool> bool_field(const nlohmann::json& body, const std::string& name) {
  const nlohmann::json* v = field_of(body, name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) wrong_type(name, "true or false", *v);
  return v->get<bool>();
}

std::optional<long long> integer_field(const nlohmann::json& body, const std::string& name, long long low, long long high) {
  const nlohmann::json* v = field_of(body, name);
  if (!v) return std::nullopt;
  const std::string expected = fmt::format("an integer from {} to {}", low, high);
  if (!v->is_number_integer()) wrong_type(name, expected, *v);
  if (v->is_number_unsigned() && v->get<unsigned long long>() > static_cast<unsigned long long>(high))
    throw HttpError(400, fmt::format("{}: expected {}, got {}", name, expected, json_summary(*v)));
  const long long n = v->get<long long>();
  if (n < low || n > high)
    throw HttpError(400, fmt::format("{}: expected {}, got {}", name, expected, json_summary(*v)));
  return n;
}

std::vector<std::string> texts_field(const nlohmann::json& body, const std::string& name, bool* batched) {
  const nlohmann::json* v = field_of(body, name);
  if (!v) throw HttpError(400, fmt::format("{}: missing; send a string or an array of strings", name));
  if (batched) *batched = v->is_array();
  if (v->is_string()) return {v->get<std::string>()};
  if (!v->is_array()) wrong_type(name, "a string or an array of strings", *v);
  if (v->empty()) throw HttpError(400, fmt::format("{}: an empty array; send at least one string", name));
  std::vector<std::string> out;
  for (size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string()) wrong_type(fmt::format("{}[{}]", name, i), "a string", (*v)[i]);
    out.push_back((*v)[i].get<std::string>());
  }
  return out;
}

std::string json_text(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string float_rows_json(const std::vector<std::vector<float>>& rows) {
  fmt::memory_buffer out;
  out.push_back('[');
  for (size_t r = 0; r < rows.size(); ++r) {
    out.append(std::string_view(r ? ",[" : "["));
    for (size_t i = 0; i < rows[r].size(); ++i) {
      if (i) out.push_back(',');
      if (std::isfinite(rows[r][i]))
        fmt::format_to(std::back_inserter(out), "{}", rows[r][i]);
      else
        out.append(std::string_view("null"));
    }
    out.push_back(']');
  }
  out.push_back(']');
  return fmt::to_string(out);
}

void refuse_unknown_fields(const nlohmann::json& body, const std::vector<std::string>& known, const std::string& prefix) {
  for (const auto& [key, value] : body.items())
    if (std::find(known.begin(), known.end(), key) == known.end())  // the name as json_summary cuts a string
      throw HttpError(400, fmt::format("{}{}: not a field of this {} (its fields: {})", prefix, json_summary(key),
                                       prefix.empty() ? "request" : "object", fmt::join(known, ", ")));
}

}  // namespace xg::serve
