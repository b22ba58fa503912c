// Request bodies: refusals name the field being read, for malformed JSON too.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "serve/http_error.hpp"
#include "serve/request_json.hpp"

using namespace xg;
using Catch::Matchers::Contains;

namespace {
std::string refusal(const std::string& body) {
  try {
    serve::parse_request(body);
  } catch (const serve::HttpError& e) {
    CHECK(e.status == 400);
    return e.what();
  }
  return "accepted";
}
}  // namespace

TEST_CASE("parse_request names where malformed JSON goes wrong", "[serve][errors]") {
  CHECK(refusal("{\"inputs\": \"a\"}") == "accepted");
  CHECK_THAT(refusal(""), Contains("body: not valid JSON"));
  CHECK_THAT(refusal("{\"a\": {\"b\": [1, 2, \"\xc3\"]}}"), Contains("a.b[2]: not valid JSON") && Contains("UTF-8"));
  CHECK_THAT(refusal("{\"a\": [[1], [2, }"), Contains("a[1][1]: not valid JSON"));
  CHECK_THAT(refusal("{\"a\": \"\\ud800\"}"), Contains("a: not valid JSON") && Contains("surrogate"));
  CHECK_THAT(refusal("{\"a\": 1} x"), Contains("not valid JSON"));
  CHECK_THAT(refusal(std::string(100000, '[')), Contains("body: not valid JSON: nested deeper than 64 levels"));
  CHECK_THAT(refusal("{\"a\": " + std::string(100, '[')), Contains("body: not valid JSON: nested deeper than 64 levels"));
  CHECK_THAT(refusal("\"text\""), Contains("body: expected a JSON object, got a string"));
}

TEST_CASE("request fields are read with their types and ranges checked", "[serve][errors]") {
  const auto body = serve::parse_request(R"({"s": "x", "b": true, "n": 7, "big": 18446744073709551615, "neg": -3, "f": 1.5,
                                             "list": ["a", "b"], "mixed": ["a", 1], "empty": [], "nothing": null})");
  CHECK(serve::string_field(body, "s") == "x");
  CHECK(!serve::string_field(body, "absent"));
  CHECK(!serve::string_field(body, "nothing"));  // null is absent
  CHECK(serve::bool_field(body, "b") == true);
  CHECK(serve::integer_field(body, "n", 1, 10) == 7);
  CHECK_THROWS_WITH(serve::integer_field(body, "n", 1, 5), "n: expected an integer from 1 to 5, got 7");
  CHECK_THROWS_WITH(serve::integer_field(body, "big", 1, 5), "big: expected an integer from 1 to 5, got 18446744073709551615");
  CHECK_THROWS_WITH(serve::integer_field(body, "neg", 0, 5), "neg: expected an integer from 0 to 5, got -3");
  CHECK_THROWS_WITH(serve::integer_field(body, "f", 0, 5), "f: expected an integer from 0 to 5, got a number (1.5)");
  CHECK_THROWS_WITH(serve::bool_field(body, "s"), "s: expected true or false, got a string (\"x\")");
  bool batched = false;
  CHECK(serve::texts_field(body, "list", &batched) == std::vector<std::string>{"a", "b"});
  CHECK(batched);
  CHECK(serve::texts_field(body, "s", &batched) == std::vector<std::string>{"x"});
  CHECK(!batched);
  CHECK_THROWS_WITH(serve::texts_field(body, "mixed", nullptr), "mixed[1]: expected a string, got a number (1)");
  CHECK_THROWS_WITH(serve::texts_field(body, "empty", nullptr), Contains("empty: an empty array"));
  CHECK_THROWS_WITH(serve::texts_field(body, "absent", nullptr), Contains("absent: missing"));
  CHECK_THROWS_WITH(serve::refuse_unknown_fields(body, {"s"}), Contains("not a field of this request (its fields: s)"));
}

TEST_CASE("float_rows_json writes each float in its shortest form that reads back as the same float", "[serve]") {
  const std::vector<std::vector<float>> rows{{0.1f, -2.5e-8f, 3.4028235e38f, 1.f, 0.f}, {}, {NAN, INFINITY}};
  CHECK(serve::float_rows_json(rows) == "[[0.1,-2.5e-08,3.4028235e+38,1,0],[],[null,null]]");
  std::vector<std::vector<float>> random(1, std::vector<float>(100000));
  uint32_t state = 12345;
  for (float& v : random[0]) {
    do {
      state = state * 1664525u + 1013904223u;
      std::memcpy(&v, &state, sizeof v);
    } while (!std::isfinite(v));
  }
  const auto back = nlohmann::json::parse(serve::float_rows_json(random));
  size_t differ = 0;
  for (size_t i = 0; i < random[0].size(); ++i) differ += back[0][i].get<float>() != random[0][i];
  CHECK(differ == 0);
}
