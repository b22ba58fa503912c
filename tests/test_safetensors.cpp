// safetensors: dtypes, atomic writes, and corrupt or hostile files, each a clear error naming
// the file (run under AddressSanitizer in CI too).
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "nn/safetensors.hpp"
#include "nn/sharded_checkpoint.hpp"
#include "tests/temp_path.hpp"

using namespace xg;
using namespace xg::nn;
using Catch::Matchers::Contains;

namespace {
std::string tmp_path(const std::string& name) {
  return temp_path("xgrad_st_" + name);
}

// A file from a raw header string and data bytes.
std::string write_raw(const std::string& name, const std::string& header, const std::string& data,
                      int64_t header_len_override = -1) {
  const std::string path = tmp_path(name);
  std::ofstream out(path, std::ios::binary);
  const uint64_t len = header_len_override >= 0 ? uint64_t(header_len_override) : header.size();
  for (int i = 0; i < 8; ++i) out.put(char(uint8_t(len >> (8 * i))));
  out << header << data;
  return path;
}

std::string bytes(size_t n) { return std::string(n, '\x01'); }
}  // namespace

TEST_CASE("safetensors reads F32, F16, BF16, I64 and I32", "[safetensors]") {
  // 1.0, -2.0, 65504 (max half), 2^-24 (smallest subnormal half), inf
  const uint16_t f16[] = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x7c00};
  const uint16_t bf16[] = {0x3f80, 0xc000};  // 1.0, -2.0
  const int32_t i32[] = {-7, 40000};
  const int64_t i64[] = {1LL << 40, -3};
  std::string data(reinterpret_cast<const char*>(f16), 10);
  data += std::string(reinterpret_cast<const char*>(bf16), 4);
  data += std::string(reinterpret_cast<const char*>(i32), 8);
  data += std::string(reinterpret_cast<const char*>(i64), 16);
  const std::string header =
      R"({"h":{"dtype":"F16","shape":[5],"data_offsets":[0,10]},"b":{"dtype":"BF16","shape":[2],"data_offsets":[10,14]},)"
      R"("i":{"dtype":"I32","shape":[2],"data_offsets":[14,22]},"l":{"dtype":"I64","shape":[1,2],"data_offsets":[22,38]},)"
      R"("__metadata__":{"format":"pt"}})";
  const auto f = safetensors::read(write_raw("dtypes", header, data));
  CHECK(f.metadata.at("format") == "pt");
  const auto h = safetensors::to_float(f.tensors.at("h"), "h").to_vector();
  CHECK(h[0] == 1.f);
  CHECK(h[1] == -2.f);
  CHECK(h[2] == 65504.f);
  CHECK(h[3] == std::ldexp(1.f, -24));
  CHECK(std::isinf(h[4]));
  CHECK(safetensors::to_float(f.tensors.at("b"), "b").to_vector() == std::vector<float>{1.f, -2.f});
  CHECK(safetensors::to_int64(f.tensors.at("i"), "i") == std::vector<int64_t>{-7, 40000});
  CHECK(safetensors::to_int64(f.tensors.at("l"), "l") == std::vector<int64_t>{1LL << 40, -3});
  CHECK(f.tensors.at("l").shape == Shape{1, 2});
  CHECK_THROWS_WITH(safetensors::to_float(f.tensors.at("i"), "i"), Contains("'i'") && Contains("I32"));
}

TEST_CASE("safetensors reads tensors with no elements", "[safetensors]") {
  // found by fuzz_safetensors_file: memcpy from an empty buffer's null pointer (UBSan)
  const auto f = safetensors::read(write_raw(
      "empty", R"({"e":{"dtype":"F32","shape":[0,4],"data_offsets":[0,0]},"i":{"dtype":"I64","shape":[0],"data_offsets":[0,0]}})", ""));
  const Tensor e = safetensors::to_float(f.tensors.at("e"), "e");
  CHECK(e.shape() == Shape{0, 4});
  CHECK(e.numel() == 0);
  CHECK(safetensors::to_int64(f.tensors.at("i"), "i").empty());
}

TEST_CASE("safetensors write is atomic and round-trips floats and ints", "[safetensors]") {
  const std::string path = tmp_path("write.safetensors");
  StateDict sd = {{"a", Tensor::arange(6).reshape({2, 3})}, {"b", Tensor::scalar(-1.5f)}};
  safetensors::write(path, sd, {{"ids", {{2}, {5, -9}}}}, {{"k", "v"}});
  for (auto& e : std::filesystem::directory_iterator(test_temp_dir()))
    CHECK(e.path().string().find("write.safetensors.tmp") == std::string::npos);
  const auto f = safetensors::read(path);
  CHECK(safetensors::to_float(f.tensors.at("a"), "a").to_vector() == sd["a"].to_vector());
  CHECK(f.tensors.at("b").shape.empty());
  CHECK(safetensors::to_int64(f.tensors.at("ids"), "ids") == std::vector<int64_t>{5, -9});
  CHECK(f.metadata.at("k") == "v");
  // a write into a folder that does not exist fails cleanly and leaves nothing behind
  CHECK_THROWS_WITH(safetensors::write("/nonexistent_dir_xgrad/x.safetensors", sd), Contains("/nonexistent_dir_xgrad/x.safetensors"));
}

TEST_CASE("corrupt and hostile safetensors files give clear errors", "[safetensors][errors]") {
  const std::string good = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  CHECK_NOTHROW(safetensors::read(write_raw("ok", good, bytes(8))));

  // truncated data
  CHECK_THROWS_WITH(safetensors::read(write_raw("trunc", good, bytes(5))), Contains("outside") && Contains("'w'"));
  // header length beyond the file, and beyond the limit
  CHECK_THROWS_WITH(safetensors::read(write_raw("hlen", good, bytes(8), 5000)), Contains("past the end"));
  CHECK_THROWS_WITH(safetensors::read(write_raw("hhuge", good, bytes(8), int64_t(1) << 40)), Contains("limit"));
  // file shorter than the length field
  {
    const std::string p = tmp_path("tiny");
    std::ofstream(p, std::ios::binary) << "abc";
    CHECK_THROWS_WITH(safetensors::read(p), Contains("too short") && Contains(p));
  }
  CHECK_THROWS_WITH(safetensors::read(tmp_path("does_not_exist")), Contains("cannot open"));
  // offsets out of range, reversed, overlapping, with holes, trailing bytes
  CHECK_THROWS_WITH(
      safetensors::read(write_raw("oor", R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", bytes(8))),
      Contains("outside"));
  CHECK_THROWS_WITH(
      safetensors::read(write_raw("rev", R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", bytes(8))),
      Contains("outside"));
  CHECK_THROWS_WITH(safetensors::read(write_raw(
                        "overlap",
                        R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                        bytes(12))),
                    Contains("overlap"));
  CHECK_THROWS_WITH(
      safetensors::read(write_raw("hole", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", bytes(8))),
      Contains("unused bytes"));
  CHECK_THROWS_WITH(safetensors::read(write_raw("trailing", good, bytes(12))), Contains("after the last tensor"));
  // wrong dtype string, shape/size mismatch, bad shapes
  CHECK_THROWS_WITH(
      safetensors::read(write_raw("dtype", R"({"w":{"dtype":"F128","shape":[2],"data_offsets":[0,8]}})", bytes(8))),
      Contains("unsupported dtype") && Contains("F128"));
  CHECK_THROWS_WITH(
      safetensors::read(write_raw("size", R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", bytes(8))),
      Contains("has 8 bytes but shape [3]"));
  CHECK_THROWS_WITH(
      safetensors::read(write_raw("negshape", R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", bytes(8))),
      Contains("non-negative integer"));
  CHECK_THROWS_WITH(safetensors::read(write_raw(
                        "overflow", R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", bytes(8))),
                    Contains("overflows"));
  // 2^61 int64s are 2^64 bytes: the byte count wraps to the empty span's 0
  CHECK_THROWS_WITH(safetensors::read(write_raw("wraps", R"({"x":{"dtype":"I64","shape":[2305843009213693952],"data_offsets":[0,0]}})", "")),
                    Contains("has 0 bytes but shape [2305843009213693952]"));
  // an empty tensor at the offset where another starts: valid (transformers reads it), whatever the names' order
  CHECK_NOTHROW(safetensors::read(write_raw(
      "empty_first", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"z":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}})",
      bytes(8))));
  CHECK_THROWS_WITH(
      safetensors::read(write_raw("missing", R"({"w":{"dtype":"F32","shape":[2]}})", bytes(8))),
      Contains("data_offsets"));
  // not JSON, or not an object
  CHECK_THROWS_WITH(safetensors::read(write_raw("nojson", "{\"w\": [1, 2", bytes(8))), Contains("not valid JSON"));
  CHECK_THROWS_WITH(safetensors::read(write_raw("array", "[1, 2]", "")), Contains("not a JSON object"));
  CHECK_THROWS_WITH(safetensors::read(write_raw("meta", R"({"__metadata__":{"a":1}})", "")), Contains("__metadata__"));
}

TEST_CASE("sharded checkpoints: an index's shards read as one state dict; bad indexes refused naming it", "[safetensors][errors]") {
  namespace fs = std::filesystem;
  const fs::path dir = temp_path("xgrad_sharded");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const Tensor a = Tensor::from_vector({1, 2, 3}, {3}), b = Tensor::from_vector({4, 5}, {1, 2}), c = Tensor::from_vector({6}, {1});
  safetensors::write((dir / "model-00001-of-00002.safetensors").string(), {{"a", a}, {"b", b}});
  safetensors::write((dir / "model-00002-of-00002.safetensors").string(), {{"c", c}});
  const std::string index = (dir / "model.safetensors.index.json").string();
  auto write_index = [&](const std::string& json) { std::ofstream(index) << json; };
  const auto read = [&] { return read_sharded_tensors(index, safetensors::read_float_tensors); };
  write_index(R"({"metadata": {"total_size": 24}, "weight_map": {"a": "model-00001-of-00002.safetensors",
                 "b": "model-00001-of-00002.safetensors", "c": "model-00002-of-00002.safetensors"}})");
  const StateDict all = read();
  REQUIRE(all.size() == 3);
  CHECK(all.at("a").to_vector() == a.to_vector());
  CHECK(all.at("b").shape() == Shape{1, 2});
  CHECK(all.at("c").to_vector() == c.to_vector());

  write_index("{\"weight_map\": ");
  CHECK_THROWS_WITH(read(), Contains(index) && Contains("not valid JSON"));
  write_index(R"({"weight_map": []})");
  CHECK_THROWS_WITH(read(), Contains("expected an object with a \"weight_map\" object"));
  write_index(R"({"weight_map": {}})");
  CHECK_THROWS_WITH(read(), Contains("weight_map lists no tensors"));
  write_index(R"({"weight_map": {"a": 3}})");
  CHECK_THROWS_WITH(read(), Contains("weight_map[\"a\"] is 3, not a file name"));
  write_index(R"({"weight_map": {"a": "../model-00001-of-00002.safetensors"}})");
  CHECK_THROWS_WITH(read(), Contains("not a file name beside the index"));
  write_index(R"({"weight_map": {"a": "/etc/passwd"}})");
  CHECK_THROWS_WITH(read(), Contains("not a file name beside the index"));
  write_index(R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00001-of-00002.safetensors", "c": "gone.safetensors"}})");
  CHECK_THROWS_WITH(read(), Contains("gone.safetensors is missing"));
  write_index(R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00001-of-00002.safetensors",
                 "c": "model-00002-of-00002.safetensors", "d": "model-00002-of-00002.safetensors"}})");
  CHECK_THROWS_WITH(read(), Contains("'d' is not in its shard"));
  write_index(R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "c": "model-00002-of-00002.safetensors"}})");
  CHECK_THROWS_WITH(read(), Contains("holds 'b', which the index gives to no file"));
  fs::remove_all(dir);
}
