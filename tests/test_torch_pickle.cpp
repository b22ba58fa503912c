// PyTorch zip checkpoints through the restricted unpickler: files torch.save wrote (F32, F16,
// BF16, int64, shared storages, offsets, non-contiguous strides, parameters, protocols 2 and 4,
// zip64), load_pretrained on a directory with only pytorch_model.bin, and hostile files, each a
// clear error naming the file (run under AddressSanitizer in CI too). Files: tools/gen_torch_pickle_goldens.py.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "autograd/dtype.hpp"
#include "models/core/checkpoint.hpp"
#include "nn/torch_pickle.hpp"
#include "tests/temp_path.hpp"

using namespace xg;
using namespace xg::nn;
using Catch::Matchers::Contains;

namespace {
const std::string kDir = std::string(XGRAD_TEST_DATA_DIR) + "/torch_pickle/";

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
std::string write_bytes(const std::string& name, const std::string& bytes) {
  const std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}
}  // namespace

TEST_CASE("torch_pickle reads what torch.save wrote, views and strides made contiguous", "[torch_pickle]") {
  const safetensors::File expected = safetensors::read(kDir + "expected.safetensors");
  for (const char* file : {"tensors.bin", "tensors_protocol4.bin"}) {
    INFO(file);
    const auto got = torch_pickle::read(kDir + file);
    REQUIRE(got.size() == expected.tensors.size());
    for (const auto& [name, want] : expected.tensors) {
      INFO(name);
      REQUIRE(got.count(name));
      const safetensors::Entry& e = got.at(name);
      CHECK(e.shape == want.shape);
      if (want.dtype == safetensors::DType::I64) {
        CHECK(safetensors::to_int64(e, name) == safetensors::to_int64(want, name));
        continue;
      }
      const Tensor a = safetensors::to_float(e, name), b = safetensors::to_float(want, name);
      for (size_t i = 0; i < a.numel(); ++i) CHECK(a.data()[i] == b.data()[i]);  // exact: same values, same rounding
    }
    CHECK(got.at("f16").dtype == safetensors::DType::F16);  // kept as stored; to_float converts
    CHECK(got.at("bf16_transposed").dtype == safetensors::DType::BF16);
  }
  // Hand-made archives: a view (offset 2, strides 1x2) of 0..11, and the same with zip64 records.
  for (const char* file : {"fake_ok.bin", "zip64.bin"}) {
    const Tensor t = torch_pickle::read_float_tensors(kDir + file).at("t");
    CHECK(t.shape() == Shape{2, 3});
    CHECK(std::vector<float>(t.data(), t.data() + 6) == std::vector<float>{2, 4, 6, 3, 5, 7});
  }
}

TEST_CASE("load_pretrained reads a directory with only pytorch_model.bin", "[torch_pickle][checkpoint]") {
  const std::string dir = std::string(XGRAD_TEST_DATA_DIR) + "/bert_a_bin";
  REQUIRE_FALSE(std::filesystem::exists(dir + "/model.safetensors"));
  const models::LoadedModel from_bin = models::load_pretrained(dir);
  const models::LoadedModel from_safetensors = models::load_pretrained(std::string(XGRAD_TEST_DATA_DIR) + "/bert_a");
  CHECK(from_bin.notes.empty());
  const StateDict got = from_bin.model->state_dict(), want = from_safetensors.model->state_dict();
  REQUIRE(got.size() == want.size());
  for (const auto& [name, w] : want) {
    INFO(name);
    const Tensor& g = got.at(name);
    REQUIRE(g.shape() == w.shape());
    const bool half = name.find(".layer.1.") != std::string::npos;  // the generator stored layer 1 as F16
    for (size_t i = 0; i < w.numel(); ++i)
      CHECK(g.data()[i] == (half ? f16_to_float(float_to_f16(w.data()[i])) : w.data()[i]));
  }
}

TEST_CASE("torch_pickle refuses hostile files with a clear error", "[torch_pickle]") {
  const std::pair<const char*, const char*> cases[] = {
      {"global_os_system.bin", "global 'posix.system' is not allowed"},
      {"global_builtins_eval.bin", "global '__builtin__.eval' is not allowed"},
      {"opcode_inst.bin", "opcode 0x69 ('i') is not allowed"},
      {"truncated.bin", "no end-of-central-directory record"},
      {"truncated_pickle.bin", "runs past the end of the pickle (truncated?)"},
      {"offset_past_storage.bin", "reads past its storage '0' of 12 elements"},
      {"stride_past_storage.bin", "reads past its storage"},
      {"absurd_size.bin", "more elements than its storage"},
      {"storage_size_mismatch.bin", "holds 48 bytes, not 1000 elements of F32 (4 bytes each)"},
      {"storage_count_wraps.bin", "holds 0 bytes, not 4611686018427387904 elements of F32"},
      {"missing_storage.bin", "storage 'missing_storage/data/7' is not in the archive"},
      {"negative_size.bin", "a tensor's size holds something else than sizes"},
      {"not_a_dict.bin", "is not a state dict"},
      {"deep_nesting.bin", "is not a state dict"},
      {"compressed.bin", "is compressed (method 8)"},
      {"bad_crc.bin", "CRC-32"},
      {"legacy.bin", "legacy (PyTorch < 1.6)"},
  };
  for (const auto& [file, message] : cases) {
    INFO(file);
    CHECK_THROWS_WITH(torch_pickle::read(kDir + file), Contains(kDir + file) && Contains(message));
  }
  CHECK_THROWS_WITH(torch_pickle::read(kDir + "no_such.bin"), Contains("cannot open file"));
}

TEST_CASE("torch_pickle: every truncation and every flipped byte of a file is an error or a clean read", "[torch_pickle]") {
  const std::string good = file_bytes(kDir + "fake_ok.bin");
  REQUIRE(good.size() > 100);
  for (size_t n = 0; n < good.size(); ++n) {
    INFO(n);
    CHECK_THROWS_AS(torch_pickle::read(write_bytes("xgrad_tp_cut.bin", good.substr(0, n))), std::runtime_error);
  }
  const auto expected = torch_pickle::read(kDir + "fake_ok.bin");
  REQUIRE(!expected.empty());
  size_t clean_reads = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    INFO("byte " << i);
    std::string bad = good;
    bad[i] = char(bad[i] ^ 0x5a);
    const std::string path = write_bytes("xgrad_tp_flip.bin", bad);
    std::map<std::string, xg::nn::safetensors::Entry> got;
    try {
      got = torch_pickle::read(path);
    } catch (const std::runtime_error&) {
      continue;
    }
    // a flip in a field nobody checks (a timestamp) reads fine, and must read the same tensors
    ++clean_reads;
    REQUIRE(got.size() == expected.size());
    for (const auto& [name, e] : expected) {
      INFO(name);
      REQUIRE(got.count(name) == 1);
      CHECK(got.at(name).dtype == e.dtype);
      CHECK(got.at(name).shape == e.shape);
      CHECK(got.at(name).bytes == e.bytes);
    }
  }
  // most flips are errors (172 of this file's 556 bytes read clean: zip header fields, names and
  // padding nobody needs); a reader that checked nothing would read every flip "clean"
  CHECK(clean_reads < good.size() / 2);
  std::filesystem::remove(temp_path("xgrad_tp_cut.bin"));
  std::filesystem::remove(temp_path("xgrad_tp_flip.bin"));
}
