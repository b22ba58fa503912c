#pragma once
// What a vocabulary trainer is about to learn from, found in one pass before it starts: libraries
// such as libsentencepiece end the process, or train on nothing, where the corpus gives them no
// characters to learn.
#include <cstddef>
#include <functional>
#include <string>

namespace xg::text {

struct CorpusSummary {
  size_t lines = 0;         // lines learned from
  size_t longest_line = 0;  // in bytes, without its line ending
  bool has_words = false;   // some line holds a character that is neither whitespace nor a control or format character
};

// The lines of `path` (numbered from 1) that `skip_line` does not name, checked as UTF-8: an
// invalid sequence throws std::invalid_argument naming the file, line and byte; a missing file
// throws std::runtime_error.
CorpusSummary summarize_corpus(const std::string& path, const std::function<bool(size_t line)>& skip_line = nullptr);

}  // namespace xg::text
