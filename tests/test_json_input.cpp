// JSON that users hand us, nested deeper than any real file: every reader refuses it with a
// message naming the file instead of overflowing the stack while dumping or copying it. Values
// in error messages are summarised, never dumped. Run under ASan in CI too.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "models/core/config_fields.hpp"
#include "models/core/registry.hpp"
#include "nn/safetensors.hpp"
#include "temp_path.hpp"
#include "text/load_tokenizer.hpp"
#include "training/checkpoints.hpp"
#include "util/json_input.hpp"

using namespace xg;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
// `depth` arrays, one inside the other, around `inner`: [[[...1...]]].
std::string nested(size_t depth, const std::string& inner = "1") {
  return std::string(depth, '[') + inner + std::string(depth, ']');
}
constexpr size_t kHostileDepth = 100000;  // a 200 KB file: the probe's SIGSEGV

void write_file(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// A fresh directory of this test process.
std::string fresh_dir(const std::string& name) {
  const std::string dir = temp_path(name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}
}  // namespace

TEST_CASE("parse_json_bounded accepts kMaxJsonDepth levels and refuses one more", "[json]") {
  CHECK(parse_json_bounded(nested(kMaxJsonDepth)).is_array());
  CHECK_THROWS_AS(parse_json_bounded(nested(kMaxJsonDepth + 1)), nlohmann::json::parse_error);
  CHECK_THROWS_WITH(parse_json_bounded(nested(kHostileDepth)), Contains("nested deeper than 64 levels"));
  std::string deep_objects;
  for (size_t i = 0; i < kHostileDepth; ++i) deep_objects += "{\"k\":";
  std::istringstream in(deep_objects + "1" + std::string(kHostileDepth, '}'));
  CHECK_THROWS_WITH(parse_json_bounded(in), Contains("nested deeper"));
}

TEST_CASE("json_summary describes a value in one short line without recursing", "[json]") {
  CHECK(json_summary(nlohmann::json::parse(nested(kMaxJsonDepth))) == "an array of 1 values");
  CHECK(json_summary(nlohmann::json::parse(R"({"a": {"b": 1}, "c": 2})")) == "an object of 2 keys");
  CHECK(json_summary(12.5) == "12.5");
  CHECK(json_summary(nullptr) == "null");
  CHECK(json_summary("short") == "\"short\"");
  CHECK(json_summary(std::string(1000, 'x')) == "\"" + std::string(40, 'x') + "\"...");
  // a cut never splits a UTF-8 character
  CHECK(json_summary(std::string(39, 'x') + "\xc3\xa9tail") == "\"" + std::string(39, 'x') + "\"...");
}

TEST_CASE("a safetensors header nested 100,000 deep is refused naming the file", "[json][safetensors]") {
  const std::string path = temp_path("xgrad_deep.safetensors");
  const std::string header = "{\"w\": " + nested(kHostileDepth) + "}";
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[size_t(i)] = char(uint64_t(header.size()) >> (8 * i));
  write_file(path, file + header);
  CHECK_THROWS_WITH(nn::safetensors::read(path), Contains("[safetensors] " + path) && Contains("nested deeper than 64"));
  // a nested value where a string or number belongs is described, not dumped
  const std::string dtype_header = R"({"w": {"dtype": )" + nested(50) + R"(, "shape": [1], "data_offsets": [0, 4]}})";
  file.assign(8, '\0');
  for (int i = 0; i < 8; ++i) file[size_t(i)] = char(uint64_t(dtype_header.size()) >> (8 * i));
  write_file(path, file + dtype_header + "abcd");
  CHECK_THROWS_WITH(nn::safetensors::read(path), Contains("unsupported dtype an array of 1 values"));
  fs::remove(path);
}

TEST_CASE("a config.json nested 100,000 deep is refused naming the file", "[json][registry]") {
  const std::string dir = fresh_dir("xgrad_deep_config");
  const std::string path = dir + "/config.json";
  write_file(path, "{\"model_type\": \"bert\", \"hidden_size\": " + nested(kHostileDepth) + "}");
  CHECK_THROWS_WITH(models::config::read_json_file(path, "load_pretrained"),
                    Contains("[load_pretrained] " + path) && Contains("nested deeper than 64"));
  // and a nested field value within the bound is summarised in the message
  const auto j = nlohmann::json::parse("{\"model_type\": \"bert\", \"hidden_size\": " + nested(60) + "}");
  CHECK_THROWS_WITH(models::build_model(j, path), Contains("field hidden_size has an invalid value an array of 1 values"));
  const auto arch = nlohmann::json::parse("{\"model_type\": \"bert\", \"architectures\": " + nested(60) + "}");
  CHECK_THROWS_WITH(models::build_model(arch, path), Contains("\"architectures\" must be a list of names, got an array of 1 values"));
  fs::remove_all(dir);
}

TEST_CASE("a training_state.json nested 100,000 deep is refused naming the file", "[json][trainer]") {
  const std::string dir = fresh_dir("xgrad_deep_state");
  write_file(dir + "/training_state.json", "{\"format\": 2, \"options\": " + nested(kHostileDepth) + "}");
  CHECK_THROWS_WITH(training::TrainingState::read(dir), Contains(dir + "/training_state.json") && Contains("nested deeper"));
  fs::remove_all(dir);
}

TEST_CASE("tokenizer files nested 100,000 deep are refused naming the file", "[json][tokenizer]") {
  const std::string dir = fresh_dir("xgrad_deep_tokenizer");
  write_file(dir + "/vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n");
  write_file(dir + "/tokenizer_config.json", "{\"tokenizer_class\": " + nested(kHostileDepth) + "}");
  CHECK_THROWS_WITH(text::load_tokenizer(dir), Contains("tokenizer_config.json") && Contains("nested deeper"));
  // a wrong-typed field is summarised
  write_file(dir + "/tokenizer_config.json", "{\"tokenizer_class\": " + nested(60) + "}");
  CHECK_THROWS_WITH(text::load_tokenizer(dir), Contains("field 'tokenizer_class' must be a string, got an array of 1 values"));
  // config.json read for its model_type, when tokenizer_config.json names no class
  fs::remove(dir + "/tokenizer_config.json");
  write_file(dir + "/config.json", nested(kHostileDepth));
  CHECK_THROWS_WITH(text::load_tokenizer(dir), Contains("config.json") && Contains("nested deeper"));
  fs::remove_all(dir);
}

TEST_CASE("training_state.json: short generator state and out-of-range integers are refused naming the field", "[json][trainer]") {
  const std::string dir = fresh_dir("xgrad_bad_state");
  const nlohmann::json good = {
      {"format", 2}, {"task", "mlm_nsp"}, {"step", 3},
      {"rng", {{"s", {1u, 2u, 3u, 4u}}, {"has_spare", false}, {"spare", 0.0}}},
      {"schedule", {{"kind", "linear"}, {"base_lr", 0.005}, {"warmup_steps", 1}, {"total_steps", 6}, {"end_lr", 0.0}, {"power", 1.0}}},
      {"options", nlohmann::json::object()}, {"data", {{"epoch", 0}, {"index", 24}}}};
  auto read_with = [&](const nlohmann::json& j) {
    write_file(dir + "/training_state.json", j.dump());
    return training::TrainingState::read(dir);
  };
  CHECK(read_with(good).step == 3);
  auto bad = good;
  bad["rng"]["s"] = {1u};  // was read past the array's end
  CHECK_THROWS_WITH(read_with(bad), Contains("rng.s must be 4 integers, got an array of 1 values"));
  bad = good;
  bad["step"] = 1e300;  // was converted to int64 with undefined behaviour
  CHECK_THROWS_WITH(read_with(bad), Contains("step must be an integer") && Contains("got 1e+300"));
  bad = good;
  bad["schedule"]["total_steps"] = -1e300;
  CHECK_THROWS_WITH(read_with(bad), Contains("total_steps must be an integer"));
  bad = good;
  bad["format"] = 2.5;
  CHECK_THROWS_WITH(read_with(bad), Contains("format must be an integer"));
  bad = good;
  bad["rng"]["s"][2] = -1;
  CHECK_THROWS_WITH(read_with(bad), Contains("rng.s must be an integer in [0, 18446744073709551615], got -1"));
  fs::remove_all(dir);
}

TEST_CASE("json_integer refuses floats, out-of-range and negative values for unsigned types", "[json]") {
  CHECK(json_integer<int64_t>(nlohmann::json(-5), "n") == -5);
  CHECK(json_integer<uint64_t>(nlohmann::json(18446744073709551615ull), "n") == 18446744073709551615ull);
  CHECK(json_integer<uint8_t>(nlohmann::json(255), "n") == 255);
  CHECK_THROWS_WITH(json_integer<uint8_t>(nlohmann::json(256), "n"), Contains("n must be an integer in [0, 255], got 256"));
  CHECK_THROWS_WITH(json_integer<int32_t>(nlohmann::json(3.0), "n"), Contains("got 3.0"));
  CHECK_THROWS_AS(json_integer<int64_t>(nlohmann::json(18446744073709551615ull), "n"), std::invalid_argument);
  CHECK_THROWS_AS(json_integer<uint32_t>(nlohmann::json(-1), "n"), std::invalid_argument);
  CHECK_THROWS_WITH(json_integer<int>(nlohmann::json("7"), "n"), Contains("got \"7\""));
}
