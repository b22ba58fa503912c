#include "util/stored_zip.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "util/crc32c.hpp"

namespace xg {

namespace {

constexpr uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50, kEndOfDirectory = 0x06054b50,
                   kZip64End = 0x06064b50, kZip64Locator = 0x07064b50;
constexpr size_t kEndOfDirectoryBytes = 22, kZip64LocatorBytes = 20, kZip64EndBytes = 56, kCentralBytes = 46,
                 kLocalBytes = 30;
constexpr uint64_t kMaxEntries = 1u << 20;  // far more than any checkpoint has tensors

// Little-endian fields of a record already known to hold `at + n` bytes.
uint64_t le(const std::vector<uint8_t>& b, size_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = v << 8 | b[at + size_t(i)];
  return v;
}

}  // namespace

StoredZip::StoredZip(const std::string& path) : path_(path), in_(path, std::ios::binary | std::ios::ate) {
  if (!in_) fail("cannot open file");
  file_size_ = uint64_t(in_.tellg());
  read_central_directory();
}

void StoredZip::fail(const std::string& what) const {
  throw std::runtime_error(fmt::format("[zip] {}: {}", path_, what));
}

std::vector<uint8_t> StoredZip::bytes_at(uint64_t offset, uint64_t n, const char* what) {
  if (offset > file_size_ || n > file_size_ - offset)
    fail(fmt::format("{} ({} bytes at offset {}) runs past the end of the {} byte file", what, n, offset, file_size_));
  std::vector<uint8_t> b(n);
  in_.clear();
  in_.seekg(std::streamoff(offset));
  if (n > 0) in_.read(reinterpret_cast<char*>(b.data()), std::streamsize(n));
  if (!in_) fail(fmt::format("could not read {} at offset {}", what, offset));
  return b;
}

void StoredZip::read_central_directory() {
  // The end-of-directory record is the last 22 bytes plus a comment of up to 64 KiB: search back.
  if (file_size_ < kEndOfDirectoryBytes) fail(fmt::format("{} bytes is too short for a zip archive", file_size_));
  const uint64_t tail_size = std::min<uint64_t>(file_size_, kEndOfDirectoryBytes + 0xFFFF);
  const std::vector<uint8_t> tail = bytes_at(file_size_ - tail_size, tail_size, "end of the archive");
  size_t end = tail_size - kEndOfDirectoryBytes + 1;
  do {
    --end;
  } while (end > 0 && le(tail, end, 4) != kEndOfDirectory);
  if (le(tail, end, 4) != kEndOfDirectory) fail("no end-of-central-directory record (not a zip archive, or truncated)");
  const uint64_t end_offset = file_size_ - tail_size + end;
  uint64_t count = le(tail, end + 10, 2), dir_size = le(tail, end + 12, 4), dir_offset = le(tail, end + 16, 4);
  if (end_offset >= kZip64LocatorBytes) {
    const std::vector<uint8_t> loc = bytes_at(end_offset - kZip64LocatorBytes, kZip64LocatorBytes, "zip64 locator");
    if (le(loc, 0, 4) == kZip64Locator) {
      const std::vector<uint8_t> z = bytes_at(le(loc, 8, 8), kZip64EndBytes, "zip64 end-of-directory record");
      if (le(z, 0, 4) != kZip64End) fail("the zip64 locator points at no zip64 end-of-directory record");
      count = le(z, 32, 8), dir_size = le(z, 40, 8), dir_offset = le(z, 48, 8);
    }
  }
  if (count > kMaxEntries) fail(fmt::format("{} entries (more than {})", count, kMaxEntries));
  if (dir_offset > end_offset || dir_size > end_offset - dir_offset)
    fail(fmt::format("central directory ({} bytes at {}) is not before its end record at {}", dir_size, dir_offset, end_offset));
  const std::vector<uint8_t> dir = bytes_at(dir_offset, dir_size, "central directory");
  size_t at = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if (dir.size() - at < kCentralBytes || le(dir, at, 4) != kCentralHeader)
      fail(fmt::format("central directory entry {} of {} is missing or damaged", i, count));
    const uint64_t flags = le(dir, at + 8, 2), method = le(dir, at + 10, 2);
    const size_t name_len = le(dir, at + 28, 2), extra_len = le(dir, at + 30, 2), comment_len = le(dir, at + 32, 2);
    if (dir.size() - at - kCentralBytes < name_len + extra_len + comment_len)
      fail(fmt::format("central directory entry {} runs past the directory", i));
    const std::string name(reinterpret_cast<const char*>(dir.data()) + at + kCentralBytes, name_len);
    Entry e;
    e.crc = uint32_t(le(dir, at + 16, 4));
    uint64_t packed = le(dir, at + 20, 4);
    e.size = le(dir, at + 24, 4);
    e.local_header = le(dir, at + 42, 4);
    // Zip64 extra field: the 64-bit values of exactly the fields that hold 0xFFFFFFFF, in this order.
    size_t x = at + kCentralBytes + name_len;
    const size_t extra_end = x + extra_len;
    while (extra_end - x >= 4) {
      const uint64_t id = le(dir, x, 2), len = le(dir, x + 2, 2);
      if (len > extra_end - x - 4) fail(fmt::format("entry '{}': extra field runs past its record", name));
      if (id == 0x0001) {
        size_t f = x + 4;
        for (uint64_t* field : {&e.size, &packed, &e.local_header}) {
          if (*field != 0xFFFFFFFF) continue;
          if (f + 8 > x + 4 + len) fail(fmt::format("entry '{}': zip64 extra field is too short", name));
          *field = le(dir, f, 8);
          f += 8;
        }
      }
      x += 4 + len;
    }
    if (flags & 1) fail(fmt::format("entry '{}' is encrypted", name));
    if (method != 0 || packed != e.size)
      fail(fmt::format("entry '{}' is compressed (method {}); torch.save stores entries uncompressed", name, method));
    if (!entries_.emplace(name, e).second) fail(fmt::format("entry '{}' appears twice", name));
    at += kCentralBytes + name_len + extra_len + comment_len;
  }
}

std::vector<std::string> StoredZip::names() const {
  std::vector<std::string> out;
  for (const auto& [name, _] : entries_) out.push_back(name);
  return out;
}

uint64_t StoredZip::size_of(const std::string& name) const {
  const auto it = entries_.find(name);
  if (it == entries_.end()) fail(fmt::format("no entry '{}'", name));
  return it->second.size;
}

std::vector<uint8_t> StoredZip::read(const std::string& name) {
  const auto it = entries_.find(name);
  if (it == entries_.end()) fail(fmt::format("no entry '{}'", name));
  const Entry& e = it->second;
  const std::vector<uint8_t> local = bytes_at(e.local_header, kLocalBytes, "local header");
  if (le(local, 0, 4) != kLocalHeader) fail(fmt::format("entry '{}': no local header at offset {}", name, e.local_header));
  if (le(local, 8, 2) != 0) fail(fmt::format("entry '{}': local header says compressed", name));
  const uint64_t name_len = le(local, 26, 2), extra_len = le(local, 28, 2);
  const std::vector<uint8_t> local_name = bytes_at(e.local_header + kLocalBytes, name_len, "local entry name");
  if (std::string(local_name.begin(), local_name.end()) != name)
    fail(fmt::format("entry '{}': its local header names another entry", name));
  std::vector<uint8_t> data = bytes_at(e.local_header + kLocalBytes + name_len + extra_len, e.size, "entry data");
  const uint32_t crc = crc32_ieee(data.data(), data.size());
  if (crc != e.crc) fail(fmt::format("entry '{}': CRC-32 {:08x}, the directory says {:08x} (corrupt file)", name, crc, e.crc));
  return data;
}

}  // namespace xg
