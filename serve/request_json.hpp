#pragma once
// Request bodies: JSON parsed with a bound on its depth, and each field read with its type
// checked. Every refusal is an HttpError 400 that names the field ("inputs[2]") and says what
// was expected, so a client can fix its request without reading the server's code.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace xg::serve {

// The body as a JSON object. Malformed JSON, invalid UTF-8 inside a string and nesting deeper
// than 64 levels are refused, naming the field being read when it failed.
nlohmann::json parse_request(const std::string& body);

// Object `body`'s field `name`: nullopt when absent (or null), else its value of the type asked,
// or HttpError 400 naming the field, the expected type and what was sent.
// `prefix` ("inputs[2].") comes before the name in errors, for a field of a nested object.
std::optional<std::string> string_field(const nlohmann::json& body, const std::string& name, const std::string& prefix = "");
std::optional<bool> bool_field(const nlohmann::json& body, const std::string& name);
// An integer within [low, high].
std::optional<long long> integer_field(const nlohmann::json& body, const std::string& name, long long low, long long high);
// A string or an array of strings (`batched` says which was sent); absent is refused.
std::vector<std::string> texts_field(const nlohmann::json& body, const std::string& name, bool* batched);

// `value` as JSON text; invalid UTF-8 in a string (a byte-level BPE token cut inside a character)
// becomes U+FFFD rather than an exception after the work is done.
std::string json_text(const nlohmann::json& value);

// Vectors as a JSON array of arrays, each float in its shortest form that reads back as the same
// float (nlohmann would print the double it widens to, 17 digits); NaN and infinities as null.
std::string float_rows_json(const std::vector<std::vector<float>>& rows);

// Fields of `body` not in `known`, refused (named after `prefix`): a misspelt option would
// otherwise be ignored.
void refuse_unknown_fields(const nlohmann::json& body, const std::vector<std::string>& known, const std::string& prefix = "");

}  // namespace xg::serve
