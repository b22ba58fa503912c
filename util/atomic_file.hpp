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

// A directory replaced whole: `fill(tmp)` writes the new contents into a temporary directory beside
// `dir`, which then takes `dir`'s name (the old one moved aside and removed), so a crash leaves the
// old directory or the new one. On failure the temporary one is removed and the error, prefixed
// with `what` and `dir`, rethrown as std::runtime_error.
void write_directory_atomically(const std::string& dir, const std::string& what,
                                const std::function<void(const std::string& tmp)>& fill);

}  // namespace xg
