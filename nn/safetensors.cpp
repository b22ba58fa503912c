#include "nn/safetensors.hpp"

#include "util/atomic_file.hpp"
#include "util/json_input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace xg::nn::safetensors {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(fmt::format("[safetensors] {}: {}", path, what));
}

bool parse_dtype(const std::string& s, DType& d) {
  static const std::pair<const char*, DType> known[] = {
      {"F32", DType::F32}, {"F16", DType::F16}, {"BF16", DType::BF16}, {"I64", DType::I64}, {"I32", DType::I32}};
  for (auto& [n, v] : known)
    if (s == n) {
      d = v;
      return true;
    }
  return false;
}

uint64_t as_u64(const nlohmann::json& j, const std::string& path, const std::string& what) {
  if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<int64_t>() >= 0))
    fail(path, fmt::format("{} must be a non-negative integer, got {}", what, json_summary(j)));
  return j.get<uint64_t>();
}

}  // namespace

const char* dtype_name(DType d) {
  switch (d) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::I64: return "I64";
    case DType::I32: return "I32";
  }
  return "?";
}

size_t dtype_size(DType d) {
  switch (d) {
    case DType::F32: case DType::I32: return 4;
    case DType::F16: case DType::BF16: return 2;
    case DType::I64: return 8;
  }
  return 0;
}

File read(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail(path, "cannot open file");
  const uint64_t file_size = uint64_t(in.tellg());
  in.seekg(0);
  if (file_size < 8) fail(path, fmt::format("file is {} bytes, too short for the 8-byte header length", file_size));
  unsigned char len_bytes[8];
  in.read(reinterpret_cast<char*>(len_bytes), 8);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = header_len << 8 | len_bytes[i];
  if (header_len > kMaxHeaderBytes)
    fail(path, fmt::format("header length {} exceeds the {} byte limit", header_len, kMaxHeaderBytes));
  if (header_len > file_size - 8)
    fail(path, fmt::format("header length {} runs past the end of the {} byte file", header_len, file_size));
  std::string header(header_len, '\0');
  in.read(header.data(), std::streamsize(header_len));
  if (!in) fail(path, "could not read the header");
  nlohmann::json j;
  try {
    j = parse_json_bounded(header);
  } catch (const nlohmann::json::exception& e) {
    fail(path, fmt::format("header is not valid JSON ({})", e.what()));
  }
  if (!j.is_object()) fail(path, "header is not a JSON object");
  const uint64_t data_size = file_size - 8 - header_len;

  File f;
  struct Span {
    uint64_t begin, end;
    std::string name;
  };
  std::vector<Span> spans;
  for (auto& [name, v] : j.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) fail(path, "__metadata__ is not an object");
      for (auto& [k, s] : v.items()) {
        if (!s.is_string()) fail(path, fmt::format("__metadata__ value of '{}' is not a string", k));
        f.metadata[k] = s.get<std::string>();
      }
      continue;
    }
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
      fail(path, fmt::format("tensor '{}' needs dtype, shape and data_offsets", name));
    Entry e;
    if (!v["dtype"].is_string() || !parse_dtype(v["dtype"].get<std::string>(), e.dtype))
      fail(path, fmt::format("tensor '{}' has unsupported dtype {} (supported: F32, F16, BF16, I64, I32)",
                             name, json_summary(v["dtype"])));
    if (!v["shape"].is_array()) fail(path, fmt::format("tensor '{}' shape is not an array", name));
    uint64_t numel = 1;
    for (auto& d : v["shape"]) {
      const uint64_t dim = as_u64(d, path, fmt::format("tensor '{}' shape entry", name));
      if (dim != 0 && numel > (uint64_t(1) << 62) / dim) fail(path, fmt::format("tensor '{}' shape overflows", name));
      numel *= dim;
      e.shape.push_back(size_t(dim));
    }
    const auto& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2)
      fail(path, fmt::format("tensor '{}' data_offsets must be [begin, end]", name));
    const uint64_t b = as_u64(off[0], path, "data_offsets"), en = as_u64(off[1], path, "data_offsets");
    if (b > en || en > data_size)
      fail(path, fmt::format("tensor '{}' data_offsets [{}, {}] are outside the {} data bytes", name, b, en, data_size));
    // by division: numel * 8 can pass 2^64 and wrap around to the span's size
    if ((en - b) % dtype_size(e.dtype) != 0 || (en - b) / dtype_size(e.dtype) != numel)
      fail(path, fmt::format("tensor '{}' has {} bytes but shape {} of {} needs {} elements of {} bytes", name, en - b,
                             shape_str(e.shape), dtype_name(e.dtype), numel, dtype_size(e.dtype)));
    spans.push_back({b, en, name});
    f.tensors.emplace(name, std::move(e));
  }
  // The data must be exactly the tensors, back to back: no overlaps, no holes.
  // by (begin, end): an empty tensor at the offset where another starts comes first, not as an overlap
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return std::tie(a.begin, a.end) < std::tie(b.begin, b.end); });
  uint64_t at = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    if (spans[i].begin < at)
      fail(path, fmt::format("tensor '{}' data_offsets [{}, {}] overlap tensor '{}'", spans[i].name,
                             spans[i].begin, spans[i].end, spans[i - 1].name));
    if (spans[i].begin > at)
      fail(path, fmt::format("{} unused bytes before tensor '{}'", spans[i].begin - at, spans[i].name));
    at = spans[i].end;
  }
  if (at != data_size) fail(path, fmt::format("{} bytes after the last tensor", data_size - at));
  for (const auto& s : spans) {
    Entry& e = f.tensors.at(s.name);
    e.bytes.resize(s.end - s.begin);
    in.seekg(std::streamoff(8 + header_len + s.begin));
    in.read(reinterpret_cast<char*>(e.bytes.data()), std::streamsize(e.bytes.size()));
    if (!in) fail(path, fmt::format("could not read tensor '{}'", s.name));
  }
  return f;
}

Tensor to_float(const Entry& e, const std::string& name) {
  Tensor t = Tensor::empty(e.shape);
  const size_t n = t.numel();
  float* out = t.data();
  switch (e.dtype) {
    case DType::F32:
      if (n > 0) std::memcpy(out, e.bytes.data(), n * 4);  // an empty tensor's buffers may be null
      break;
    case DType::F16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, e.bytes.data() + 2 * i, 2);
        out[i] = f16_to_float(h);
      }
      break;
    case DType::BF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, e.bytes.data() + 2 * i, 2);
        const uint32_t bits = uint32_t(h) << 16;
        std::memcpy(out + i, &bits, 4);
      }
      break;
    default:
      throw std::runtime_error(fmt::format("[safetensors] tensor '{}' is {}, not a float type", name, dtype_name(e.dtype)));
  }
  return t;
}

std::vector<int64_t> to_int64(const Entry& e, const std::string& name) {
  const size_t n = shape_numel(e.shape);
  std::vector<int64_t> out(n);
  if (e.dtype == DType::I64) {
    if (n > 0) std::memcpy(out.data(), e.bytes.data(), n * 8);
  } else if (e.dtype == DType::I32) {
    for (size_t i = 0; i < n; ++i) {
      int32_t v;
      std::memcpy(&v, e.bytes.data() + 4 * i, 4);
      out[i] = v;
    }
  } else {
    throw std::runtime_error(fmt::format("[safetensors] tensor '{}' is {}, not an integer type", name, dtype_name(e.dtype)));
  }
  return out;
}

void write(const std::string& path, const StateDict& tensors,
           const std::map<std::string, std::pair<Shape, std::vector<int64_t>>>& int_tensors,
           const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t at = 0;
  std::vector<Tensor> packed;  // each tensor's data, row-major
  NoGradGuard no_grad;
  for (const auto& [name, t] : tensors) {
    if (int_tensors.count(name)) throw std::invalid_argument(fmt::format("[safetensors] {}: '{}' given twice", path, name));
    if (!t.defined()) throw std::invalid_argument(fmt::format("[safetensors] {}: tensor '{}' is undefined", path, name));
    if (t.dtype() != Dtype::Float32 && t.dtype() != Dtype::Int64)
      throw std::invalid_argument(fmt::format("[safetensors] {}: tensor '{}' is {}; float32 and int64 tensors are written",
                                              path, name, xg::dtype_name(t.dtype())));
    const bool ints = t.dtype() == Dtype::Int64;
    const uint64_t bytes = t.numel() * (ints ? 8 : 4);
    header[name] = {{"dtype", ints ? "I64" : "F32"}, {"shape", t.shape()}, {"data_offsets", {at, at + bytes}}};
    at += bytes;
    packed.push_back(t.contiguous());
  }
  for (const auto& [name, st] : int_tensors) {
    if (shape_numel(st.first) != st.second.size())
      throw std::invalid_argument(fmt::format("[safetensors] '{}': {} values for shape {}", name,
                                              st.second.size(), shape_str(st.first)));
    const uint64_t bytes = st.second.size() * 8;
    header[name] = {{"dtype", "I64"}, {"shape", st.first}, {"data_offsets", {at, at + bytes}}};
    at += bytes;
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // keep the data 8-byte aligned, as Hugging Face does

  write_file_atomically(path, [&](std::FILE* f) {
    bool ok = true;
    auto put = [&](const void* p, size_t n) { ok = ok && (n == 0 || std::fwrite(p, 1, n, f) == n); };
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = uint8_t(uint64_t(h.size()) >> (8 * i));
    put(len, 8);
    put(h.data(), h.size());
    for (const Tensor& t : packed) put(t.raw_data(), t.numel() * xg::dtype_size(t.dtype()));
    for (const auto& [_, st] : int_tensors) put(st.second.data(), st.second.size() * 8);
    return ok;
  });
}

void write(const std::string& path, const StateDict& tensors, const std::map<std::string, std::string>& metadata) {
  write(path, tensors, {}, metadata);
}

bool is_float(DType d) { return d == DType::F32 || d == DType::F16 || d == DType::BF16; }

StateDict read_float_tensors(const std::string& path) {
  StateDict out;
  for (const auto& [name, e] : read(path).tensors)
    if (is_float(e.dtype)) out[name] = to_float(e, name);
  return out;
}

StateDict read_tensors(const std::string& path) {
  StateDict out;
  for (const auto& [name, e] : read(path).tensors)
    out[name] = is_float(e.dtype) ? to_float(e, name) : Tensor::from_ints(to_int64(e, name), e.shape);
  return out;
}

void save(const Module& m, const std::string& path) { write(path, m.state_dict(), {{"format", "pt"}}); }

LoadReport load(Module& m, const std::string& path, bool strict) {
  const StateDict file = read_tensors(path), own = m.state_dict();
  for (const auto& [name, t] : file) {  // a float saved as an integer (or the reverse) is not cast silently
    const auto it = own.find(name);
    if (it != own.end() && it->second.dtype() != t.dtype())
      throw std::runtime_error(fmt::format("[safetensors] {}: '{}' is {} in the file and {} in the module", path, name,
                                           t.dtype() == Dtype::Int64 ? "an integer" : "a float",
                                           xg::dtype_name(it->second.dtype())));
  }
  try {
    return m.load_state_dict(file, strict);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(fmt::format("{} (loading {})", e.what(), path));
  }
}

std::optional<size_t> first_nonfinite(const Tensor& t) {
  const Tensor c = t.contiguous();
  const float* v = c.data();
  for (size_t i = 0; i < c.numel(); ++i)
    if (!std::isfinite(v[i])) return i;
  return std::nullopt;
}

}  // namespace xg::nn::safetensors
