#include "text/vocab.hpp"

#include <fmt/format.h>

#include <fstream>
#include <stdexcept>

#include "text/unicode.hpp"
#include "util/atomic_file.hpp"
#include "util/lines.hpp"

namespace xg::text {

Vocab::Vocab(const std::vector<std::string>& tokens) {
  for (const auto& t : tokens)
    if (id(t) >= 0) throw std::invalid_argument(fmt::format("[Vocab] token '{}' appears twice", t));
    else add(t);
}

Vocab::Vocab(const Vocab& other) : tokens_(other.tokens_) { index(); }

Vocab& Vocab::operator=(const Vocab& other) {
  if (this != &other) {
    tokens_ = other.tokens_;
    index();
  }
  return *this;
}

void Vocab::index() {
  ids_.clear();
  ids_.reserve(tokens_.size());
  for (size_t i = 0; i < tokens_.size(); ++i) ids_.emplace(std::string_view(tokens_[i]), int32_t(i));
}

int32_t Vocab::add(const std::string& token) {
  const int32_t existing = id(token);
  if (existing >= 0) return existing;
  tokens_.push_back(token);
  const int32_t new_id = int32_t(tokens_.size() - 1);
  ids_.emplace(std::string_view(tokens_.back()), new_id);
  return new_id;
}

Vocab Vocab::from_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("[Vocab] {}: cannot open", path));
  Vocab v;
  std::string line;
  for (size_t n = 1; getline_lf(in, line); ++n) {
    if (n == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0)
      throw std::runtime_error(fmt::format("[Vocab] {}: starts with a byte-order mark (U+FEFF), which would become part of the "
                                           "first token: save the file as UTF-8 without one", path));
    if (line.find('\r') != std::string::npos)
      throw std::runtime_error(fmt::format("[Vocab] {}:{}: a carriage return inside the line (old Mac line endings?): one token "
                                           "per line, ended by \\n or \\r\\n", path, n));
    decode_utf8(line, InvalidUtf8::Error, fmt::format("{}:{}", path, n));
    if (v.id(line) >= 0)
      throw std::runtime_error(fmt::format("[Vocab] {}:{}: token '{}' already on line {}", path, n, line, v.id(line) + 1));
    v.add(line);
  }
  if (v.size() == 0) throw std::runtime_error(fmt::format("[Vocab] {}: no tokens", path));
  return v;
}

void Vocab::save(const std::string& path) const {
  std::string text;
  for (const auto& t : tokens_) text += t + '\n';
  write_text_atomically(path, text);
}

}  // namespace xg::text
