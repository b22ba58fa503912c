#pragma once
// Reads the entries of a zip archive whose entries are stored uncompressed, as torch.save writes
// them (PyTorch's zip checkpoints). Zip64 sizes and offsets are understood. Nothing is trusted:
// every record must lie inside the file, names are unique, sizes agree between the central
// directory and the local headers, and each entry's CRC-32 is checked when it is read. Errors
// throw std::runtime_error starting with "[zip] PATH: ".
#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace xg {

class StoredZip {
 public:
  explicit StoredZip(const std::string& path);

  const std::string& path() const { return path_; }
  // Entry names in archive order of their names (sorted).
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const { return entries_.count(name) > 0; }
  uint64_t size_of(const std::string& name) const;
  // The bytes of an entry (CRC-checked); throws when there is no such entry.
  std::vector<uint8_t> read(const std::string& name);

 private:
  struct Entry {
    uint64_t size = 0, local_header = 0;
    uint32_t crc = 0;
  };
  [[noreturn]] void fail(const std::string& what) const;
  std::vector<uint8_t> bytes_at(uint64_t offset, uint64_t n, const char* what);
  void read_central_directory();

  std::string path_;
  std::ifstream in_;
  uint64_t file_size_ = 0;
  std::map<std::string, Entry> entries_;
};

}  // namespace xg
