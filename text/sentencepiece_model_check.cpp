#include "text/sentencepiece_model_check.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "text/protobuf_wire.hpp"
#include "text/unicode.hpp"

namespace xg::text {

namespace {

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw std::runtime_error(fmt::format("[SentencePieceTokenizer] {}: {}", where, what));
}

// A Darts-clone double-array unit (as libsentencepiece's normalizer reads it).
uint32_t offset_of(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }
uint32_t label_of(uint32_t u) { return u & ((1u << 31) | 0xFFu); }
bool has_leaf(uint32_t u) { return ((u >> 8) & 1) != 0; }
uint32_t value_of(uint32_t u) { return u & ((1u << 31) - 1); }

constexpr size_t kMaxTrieUnits = size_t(1) << 22;  // 16 MiB of trie; ALBERT's and T5's maps are ~0.2 MiB

// The blob [uint32 trie bytes][trie units][NUL-terminated replacements]: every transition any input
// can take from the root stays inside the trie, and every leaf's replacement inside the strings.
void check_charsmap(std::string_view blob, const std::string& where, const char* spec) {
  if (blob.empty()) return;  // no map: the normalizer does not use one
  const auto bad = [&](const std::string& what) { fail(where, fmt::format("the {} character map {}", spec, what)); };
  if (blob.size() < 4) bad("is shorter than its size field");
  uint32_t trie_bytes = 0;
  std::memcpy(&trie_bytes, blob.data(), 4);
  if (trie_bytes < 4 || trie_bytes % 4 != 0 || trie_bytes > blob.size() - 4)
    bad(fmt::format("gives its trie {} bytes of the {} that follow", trie_bytes, blob.size() - 4));
  const size_t n = trie_bytes / 4;
  if (n > kMaxTrieUnits) bad(fmt::format("has a trie of {} units, more than {} plausible", n, kMaxTrieUnits));
  std::vector<uint32_t> units(n);
  std::memcpy(units.data(), blob.data() + 4, trie_bytes);
  const std::string_view strings = blob.substr(4 + trie_bytes);
  std::vector<bool> seen(n, false);
  std::vector<size_t> todo;
  const auto reach = [&](size_t node, const std::string& via) {
    if (node >= n) bad(fmt::format("has a trie transition {} to unit {} of {}", via, node, n));
    if (!seen[node]) seen[node] = true, todo.push_back(node);
  };
  reach(offset_of(units[0]), "from the root");
  while (!todo.empty()) {
    const size_t node = todo.back();
    todo.pop_back();
    for (uint32_t c = 0; c < 256; ++c) {
      const size_t child = node ^ c;
      if (child >= n) bad(fmt::format("has a trie transition on byte {} to unit {} of {}", c, child, n));
      const uint32_t u = units[child];
      if (label_of(u) != c) continue;
      const size_t next = child ^ offset_of(u);
      reach(next, fmt::format("on byte {}", c));
      if (!has_leaf(u)) continue;
      const uint32_t at = value_of(units[next]);
      if (at >= strings.size() || std::memchr(strings.data() + at, 0, strings.size() - at) == nullptr)
        bad(fmt::format("has a replacement at byte {} of its {} bytes of strings, with no end inside them", at, strings.size()));
    }
  }
}

}  // namespace

void check_sentencepiece_model(std::string_view serialized, const std::string& where) {
  check_sentencepiece_charsmaps(serialized, where);
  // ModelProto: pieces = 1; SentencePiece: piece = 1. libsentencepiece's trie builder takes its
  // keys up to a NUL byte: an empty piece, or one starting with NUL, makes it throw through the
  // library, which ends the process (and no text holds a NUL to match another).
  WireFields model(serialized, where);
  std::string_view entry;
  for (int id = 0; model.next_bytes(1, entry); ++id) {
    WireFields fields(entry, where);
    std::string_view piece;
    if (!fields.next_bytes(1, piece) || piece.empty()) fail(where, fmt::format("piece {} is empty", id));
    if (piece.find('\0') != std::string_view::npos) fail(where, fmt::format("piece {} holds a NUL byte", id));
    if (const size_t at = invalid_utf8_at(piece); at != std::string_view::npos)
      fail(where, fmt::format("piece {} is not text: {}", id, invalid_utf8_message(piece, at)));
  }
}

void check_sentencepiece_charsmaps(std::string_view serialized, const std::string& where) {
  // ModelProto: normalizer_spec = 3, denormalizer_spec = 5; NormalizerSpec: precompiled_charsmap = 2.
  for (const auto& [field, spec] : {std::pair{3u, "normalizer's"}, {5u, "denormalizer's"}}) {
    WireFields model(serialized, where);
    std::string_view normalizer, charsmap;
    while (model.next_bytes(field, normalizer)) {
      WireFields fields(normalizer, where);
      while (fields.next_bytes(2, charsmap)) check_charsmap(charsmap, where, spec);
    }
  }
}

void check_sentencepiece_score(int id, std::string_view piece, float score, const std::string& where) {
  if (!std::isfinite(score)) fail(where, fmt::format("piece {} '{}' has the score {}", id, piece, score));
}

}  // namespace xg::text
