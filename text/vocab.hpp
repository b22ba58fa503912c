#pragma once
// A WordPiece vocabulary: one token per line, the line number is the id (vocab.txt).
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace xg::text {

class Vocab {
 public:
  Vocab() = default;
  explicit Vocab(const std::vector<std::string>& tokens);
  // The lookup holds views of this Vocab's own strings: a copy indexes its copies (the default
  // would view the original's, dangling once it is gone). A move keeps the deque's blocks, and so
  // the views.
  Vocab(const Vocab& other);
  Vocab& operator=(const Vocab& other);
  Vocab(Vocab&&) = default;
  Vocab& operator=(Vocab&&) = default;
  // Throws naming the file and line for a missing file, an empty vocabulary, invalid UTF-8 or
  // a duplicated token.
  static Vocab from_file(const std::string& path);
  // Writes one token per line, atomically.
  void save(const std::string& path) const;

  // -1 when absent.
  int32_t id(std::string_view token) const {
    auto it = ids_.find(token);
    return it == ids_.end() ? -1 : it->second;
  }
  const std::string& token(int32_t id) const { return tokens_.at(size_t(id)); }
  size_t size() const { return tokens_.size(); }
  // Appends a token (no-op if present); returns its id.
  int32_t add(const std::string& token);

 private:
  // Rebuilds ids_ over tokens_.
  void index();

  std::deque<std::string> tokens_;  // a deque: the map's string_views stay valid as it grows
  std::unordered_map<std::string_view, int32_t> ids_;
};

}  // namespace xg::text
