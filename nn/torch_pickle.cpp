#include "nn/torch_pickle.hpp"

#include <fmt/format.h>

#include <fmt/ranges.h>

#include <cstring>
#include <fstream>
#include <stdexcept>

#include "nn/restricted_unpickler.hpp"
#include "util/stored_zip.hpp"

namespace xg::nn::torch_pickle {

namespace {

using pickle::Object;
constexpr size_t kMaxDims = 16;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(fmt::format("[torch_pickle] {}: {}", path, what));
}

// Says what the file is when it is not a zip: the legacy format starts with a pickle (0x80).
void check_is_zip(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open file");
  char magic[2] = {0, 0};
  in.read(magic, 2);
  if (magic[0] == 'P' && magic[1] == 'K') return;
  if (uint8_t(magic[0]) == 0x80)
    fail(path, "the legacy (PyTorch < 1.6) torch.save format is not supported: re-save it with a newer PyTorch or as safetensors");
  fail(path, "not a PyTorch checkpoint (no zip archive)");
}

// The archive's one "<prefix>/data.pkl" (torch 1.x names the prefix after the file, 2.x "archive").
std::string archive_prefix(const StoredZip& zip) {
  std::string prefix;
  for (const auto& name : zip.names()) {
    const size_t slash = name.find('/');
    if (slash == std::string::npos || name.compare(slash, std::string::npos, "/data.pkl") != 0) continue;
    if (!prefix.empty()) fail(zip.path(), "more than one data.pkl in the archive");
    prefix = name.substr(0, slash);
  }
  if (prefix.empty()) fail(zip.path(), "no <prefix>/data.pkl in the archive (not a torch.save checkpoint)");
  return prefix;
}

// Whether `bytes` are exactly the storage's element count of its dtype: compared by division, as
// a forged count (2^62 floats) would wrap the product around to the entry's size.
bool holds_exactly(uint64_t bytes, const Object& storage) {
  const uint64_t esize = safetensors::dtype_size(storage.dtype);
  return storage.i >= 0 && bytes % esize == 0 && bytes / esize == uint64_t(storage.i);
}

// One tensor's elements, gathered from its storage through its offset and strides.
safetensors::Entry gather(const std::string& path, const std::string& name, const Object& t, const Object& storage,
                          const std::vector<uint8_t>& data) {
  safetensors::Entry e;
  e.dtype = storage.dtype;
  const size_t esize = safetensors::dtype_size(e.dtype);
  if (t.sizes.size() > kMaxDims) fail(path, fmt::format("tensor '{}' has {} dimensions", name, t.sizes.size()));
  // Both checks keep every product below the storage's size (itself bounded by the file's): no overflow.
  const uint64_t capacity = uint64_t(storage.i);
  uint64_t numel = 1, last = uint64_t(t.i);  // `last`: the highest element index the tensor reads
  bool past_end = last >= capacity;
  for (size_t d = 0; d < t.sizes.size(); ++d) {
    const uint64_t size = uint64_t(t.sizes[d]), stride = uint64_t(t.strides[d]);
    e.shape.push_back(size_t(size));
    if (size == 0) numel = 0;
    if (numel > 0 && size > capacity / numel) numel = capacity + 1;  // more than the storage holds
    else numel *= size;
    if (size > 0 && !past_end) {
      if (stride > 0 && size - 1 > (capacity - 1 - last) / stride) past_end = true;
      else last += (size - 1) * stride;
    }
  }
  if (numel > capacity)
    fail(path, fmt::format("tensor '{}' of shape {} has more elements than its storage '{}' of {} (broadcast views are not "
                           "supported)", name, shape_str(e.shape), storage.s, capacity));
  if (numel > 0 && past_end)
    fail(path, fmt::format("tensor '{}' (offset {}, shape {}, strides {}) reads past its storage '{}' of {} elements", name, t.i,
                           shape_str(e.shape), fmt::join(t.strides, "x"), storage.s, capacity));
  e.bytes.resize(size_t(numel) * esize);
  // Row-major strides (what state dicts almost always hold): one copy.
  bool row_major = true;
  for (size_t d = t.sizes.size(), expected = 1; d-- > 0; expected *= size_t(t.sizes[d]))
    row_major = row_major && (t.sizes[d] == 1 || uint64_t(t.strides[d]) == expected);
  if (row_major) {
    if (numel > 0) std::memcpy(e.bytes.data(), data.data() + uint64_t(t.i) * esize, e.bytes.size());
    return e;
  }
  std::vector<uint64_t> index(t.sizes.size(), 0);
  for (uint64_t n = 0; n < numel; ++n) {
    uint64_t at = uint64_t(t.i);
    for (size_t d = 0; d < index.size(); ++d) at += index[d] * uint64_t(t.strides[d]);
    std::memcpy(e.bytes.data() + n * esize, data.data() + at * esize, esize);
    for (size_t d = index.size(); d-- > 0;) {  // next index, last dimension fastest
      if (++index[d] < uint64_t(t.sizes[d])) break;
      index[d] = 0;
    }
  }
  return e;
}

}  // namespace

std::map<std::string, safetensors::Entry> read(const std::string& path) {
  check_is_zip(path);
  StoredZip zip(path);
  const std::string prefix = archive_prefix(zip);
  if (zip.contains(prefix + "/byteorder")) {
    const std::vector<uint8_t> order = zip.read(prefix + "/byteorder");
    if (std::string(order.begin(), order.end()) != "little")
      fail(path, fmt::format("byte order '{}' (only little-endian checkpoints are read)", std::string(order.begin(), order.end())));
  }
  if (zip.size_of(prefix + "/data.pkl") > kMaxPickleBytes)
    fail(path, fmt::format("data.pkl is {} bytes (more than {})", zip.size_of(prefix + "/data.pkl"), kMaxPickleBytes));
  const pickle::Unpickled u = pickle::unpickle(zip.read(prefix + "/data.pkl"), path);
  const Object& root = u.objects[u.root];
  if (root.kind != Object::Kind::Dict) fail(path, "the pickle is not a state dict (a dict of tensors)");

  std::map<std::string, std::vector<uint8_t>> storages;  // by key, each read once
  std::map<std::string, safetensors::Entry> out;
  for (size_t k = 0; k < root.items.size(); k += 2) {
    const Object& key = u.objects[root.items[k]];
    const Object& value = u.objects[root.items[k + 1]];
    if (key.kind != Object::Kind::String) fail(path, "a state dict key is not a string");
    if (value.kind != Object::Kind::Tensor) fail(path, fmt::format("'{}' is not a tensor", key.s));
    if (out.count(key.s)) fail(path, fmt::format("'{}' appears twice", key.s));
    const Object& storage = u.objects[value.items.at(0)];
    auto it = storages.find(storage.s);
    if (it == storages.end()) {
      const std::string entry = prefix + "/data/" + storage.s;
      if (!zip.contains(entry)) fail(path, fmt::format("tensor '{}': its storage '{}' is not in the archive", key.s, entry));
      if (!holds_exactly(zip.size_of(entry), storage))
        fail(path, fmt::format("storage '{}' holds {} bytes, not {} elements of {} ({} bytes each)", entry, zip.size_of(entry),
                               storage.i, safetensors::dtype_name(storage.dtype), safetensors::dtype_size(storage.dtype)));
      it = storages.emplace(storage.s, zip.read(entry)).first;
    } else if (!holds_exactly(it->second.size(), storage)) {
      fail(path, fmt::format("storage '{}' is used with two different sizes or types", storage.s));
    }
    out.emplace(key.s, gather(path, key.s, value, storage, it->second));
  }
  return out;
}

StateDict read_float_tensors(const std::string& path) {
  StateDict out;
  for (const auto& [name, e] : read(path))
    if (e.dtype == safetensors::DType::F32 || e.dtype == safetensors::DType::F16 || e.dtype == safetensors::DType::BF16)
      out[name] = safetensors::to_float(e, name);
  return out;
}

}  // namespace xg::nn::torch_pickle
