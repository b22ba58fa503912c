#pragma once
// Crash-safe file replacement: write a temporary file beside the target, flush it to disk,
// rename it over the target. Readers see the old file or the new one, never half of one.
#include <cstdio>
#include <functional>
#include <string>

namespace xg {

// `write` fills the open file and returns false on failure. Throws std::runtime_error naming
// `path` when anything fails; the temporary file is removed and the old file left untouched.
void write_file_atomically(const std::string& path, const std::function<bool(std::FILE*)>& write);
void write_text_atomically(const std::string& path, const std::string& text);

}  // namespace xg
