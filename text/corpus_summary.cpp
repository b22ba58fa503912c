#include "text/corpus_summary.hpp"

#include <fmt/format.h>

#include <fstream>
#include <stdexcept>

#include "text/unicode.hpp"
#include "util/lines.hpp"

namespace xg::text {

CorpusSummary summarize_corpus(const std::string& path, const std::function<bool(size_t)>& skip_line) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("[corpus] {}: cannot open", path));
  CorpusSummary s;
  size_t number = 0;
  for (std::string line; getline_lf(in, line);) {
    ++number;
    if (skip_line && skip_line(number)) continue;
    ++s.lines;
    s.longest_line = std::max(s.longest_line, line.size());
    if (const size_t at = invalid_utf8_at(line); at != std::string::npos)
      throw std::invalid_argument(fmt::format("[corpus] {}:{}: {}", path, number, invalid_utf8_message(line, at)));
    if (s.has_words) continue;
    for (char32_t c : decode_utf8(line))
      if (!is_whitespace(c) && !is_control(c)) {
        s.has_words = true;
        break;
      }
  }
  return s;
}

}  // namespace xg::text
