#include "util/checksums.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "util/atomic_file.hpp"
#include "util/crc32c.hpp"
#include "util/json_input.hpp"

namespace fs = std::filesystem;

namespace xg {

namespace {
constexpr int kFormat = 1;

struct FileSum {
  uint64_t size = 0;
  uint32_t crc = 0;
};

FileSum sum_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("[checksums] {}: cannot open", path.string()));
  std::vector<char> buffer(1 << 20);
  FileSum s;
  while (in) {
    in.read(buffer.data(), std::streamsize(buffer.size()));
    const auto n = size_t(in.gcount());
    s.crc = crc32c_extend(s.crc, buffer.data(), n);
    s.size += n;
  }
  if (in.bad()) throw std::runtime_error(fmt::format("[checksums] {}: read failed", path.string()));
  return s;
}
}  // namespace

nlohmann::json file_checksum(const std::string& path) {
  const FileSum s = sum_file(path);
  return {{"size", s.size}, {"crc32c", fmt::format("{:08x}", s.crc)}};
}

void write_checksums(const std::string& dir, const nlohmann::json& known) {
  nlohmann::json files = nlohmann::json::object();
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string name = fs::relative(e.path(), dir).generic_string();
    if (!e.is_regular_file() || name == kChecksumsFile) continue;
    files[name] = known.contains(name) ? known.at(name) : file_checksum(e.path().string());
  }
  const nlohmann::json j = {{"format", kFormat}, {"files", files}};
  write_text_atomically((fs::path(dir) / kChecksumsFile).string(), j.dump(1) + "\n");
}

std::optional<nlohmann::json> verify_checksums(const std::string& dir) {
  const fs::path list = fs::path(dir) / kChecksumsFile;
  if (!fs::exists(list)) return std::nullopt;
  nlohmann::json files;
  try {
    std::ifstream in(list);
    files = parse_json_bounded(in).at("files");  // bounded nesting: a forged file cannot exhaust the stack
    if (!files.is_object()) throw std::runtime_error("\"files\" is not an object");
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("[checksums] {}: unreadable ({})", list.string(), e.what()));
  }
  for (const auto& [name, want] : files.items()) {
    // names of the directory's own files: nothing absolute, no way out of it
    const fs::path relative = fs::path(name).lexically_normal();
    if (name.empty() || relative.is_absolute() || *relative.begin() == "..")
      throw std::runtime_error(fmt::format("[checksums] {}: lists '{}', not a file of the checkpoint's directory", list.string(), name));
    const fs::path path = fs::path(dir) / name;
    if (!fs::is_regular_file(path))
      throw std::runtime_error(fmt::format("[checksums] {}: missing (listed in {})", path.string(), list.string()));
    const FileSum got = sum_file(path);
    std::string want_crc;
    uint64_t want_size = 0;
    try {
      want_crc = want.at("crc32c").get<std::string>();
      want_size = want.at("size").get<uint64_t>();
    } catch (const std::exception&) {
      throw std::runtime_error(fmt::format("[checksums] {}: the entry for {} is malformed", list.string(), name));
    }
    if (got.size != want_size)
      throw std::runtime_error(fmt::format("[checksums] {}: {} bytes, {} lists {} (truncated, or edited by hand? remove {} to skip the check)",
                                           path.string(), got.size, list.string(), want_size, kChecksumsFile));
    if (fmt::format("{:08x}", got.crc) != want_crc)
      throw std::runtime_error(fmt::format("[checksums] {}: CRC32C {:08x}, {} lists {}: the file is damaged (or edited by hand? remove "
                                           "{} to skip the check)",
                                           path.string(), got.crc, list.string(), want_crc, kChecksumsFile));
  }
  return files;
}

nlohmann::json data_fingerprint(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return nullptr;
  // A pipe (--corpus <(zcat x.gz)) or device has no size to read and cannot be read twice: no
  // fingerprint, as for data that is gone (a resumed run then needs the same path).
  if (!fs::is_directory(status) && !fs::is_regular_file(status)) return nullptr;
  if (fs::is_directory(status)) {
    std::vector<std::pair<std::string, uintmax_t>> files;
    for (const auto& e : fs::recursive_directory_iterator(path))
      if (e.is_regular_file()) files.emplace_back(fs::relative(e.path(), path).generic_string(), e.file_size());
    std::sort(files.begin(), files.end());  // the iteration order is the file system's
    std::string listing;
    uintmax_t bytes = 0;
    for (const auto& [name, size] : files) {
      listing += fmt::format("{}\t{}\n", name, size);
      bytes += size;
    }
    return {{"files", files.size()}, {"bytes", bytes}, {"listing_crc32c", fmt::format("{:08x}", crc32c(listing.data(), listing.size()))}};
  }
  // Checkpoints record the options (and so this) each time they are written: a large corpus is
  // read once, not at every save.
  using Key = std::tuple<std::string, uintmax_t, fs::file_time_type>;
  static std::mutex mutex;
  static std::map<Key, nlohmann::json> known;
  const Key key{fs::absolute(path).lexically_normal().string(), fs::file_size(path), fs::last_write_time(path)};
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = known.find(key); it != known.end()) return it->second;
  }
  const FileSum s = sum_file(path);
  const nlohmann::json j = {{"bytes", s.size}, {"crc32c", fmt::format("{:08x}", s.crc)}};
  std::lock_guard<std::mutex> lock(mutex);
  known[key] = j;
  return j;
}

}  // namespace xg
