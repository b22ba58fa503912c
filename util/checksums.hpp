#pragma once
// A directory's files with their sizes and CRC32C in DIR/checksums.json, so that a damaged copy
// (flipped bits, a truncated file) is told from a good one before it is loaded.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace xg {

inline constexpr const char* kChecksumsFile = "checksums.json";

// A file's entry as checksums.json lists it: {"size": bytes, "crc32c": "8 hex digits"}.
nlohmann::json file_checksum(const std::string& path);

// Writes DIR/checksums.json (atomically) for every regular file under DIR but itself; `known`
// (relative name -> file_checksum entry) spares reading the files it names again.
void write_checksums(const std::string& dir, const nlohmann::json& known = nlohmann::json::object());

// Checks DIR's files against DIR/checksums.json. A directory without one passes (written before
// checksums existed); files not listed are not checked. Throws naming the file and what differs.
// Returns the listing it checked (relative name -> file_checksum entry), or nothing without one.
std::optional<nlohmann::json> verify_checksums(const std::string& dir);

// A cheap identity of a data file or directory, to tell whether two paths hold the same data: a
// file's size and CRC32C; a directory's file count, total size and the CRC32C of its listing
// (relative names and sizes, recursively; the files are not read). Null when nothing is at
// `path`. A file's CRC is computed once per process while its size and modification time stay.
nlohmann::json data_fingerprint(const std::string& path);

}  // namespace xg
