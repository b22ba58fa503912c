#include "text/bpe_model.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <queue>
#include <stdexcept>
#include <unordered_map>

#include "text/byte_level.hpp"
#include "text/unicode.hpp"
#include "util/atomic_file.hpp"
#include "util/json_input.hpp"
#include "util/lines.hpp"

namespace xg::text {

// (left id, right id) -> (rank, merged id).
struct MergeTable {
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> map;
  static uint64_t key(int32_t a, int32_t b) { return uint64_t(uint32_t(a)) << 32 | uint32_t(b); }
  const std::pair<int32_t, int32_t>* find(int32_t a, int32_t b) const {
    auto it = map.find(key(a, b));
    return it == map.end() ? nullptr : &it->second;
  }
};

// Sharded so batch encoding on many threads rarely waits; bounded like Hugging Face's (which
// stops inserting when full), so memory stays flat on endless text.
struct BpeModel::Cache {
  static constexpr size_t kShards = 64, kPerShard = 2048, kMaxWordBytes = 64;
  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string, std::vector<std::pair<int32_t, uint32_t>>> words;
  };
  std::array<Shard, kShards> shards;
};

BpeModel::BpeModel(Vocab vocab, std::vector<Merge> merges, const std::string& where)
    : vocab_(std::move(vocab)), merges_(std::move(merges)), table_(std::make_unique<MergeTable>()),
      cache_(std::make_unique<Cache>()) {
  std::string s;
  for (int b = 0; b < 256; ++b) {
    s.clear();
    append_utf8(s, byte_to_unicode()[size_t(b)]);
    byte_id_[size_t(b)] = vocab_.id(s);
    // Every byte must have a token, or text holding that byte could not be encoded (byte-level
    // vocabularies, GPT-2's and trained ones, start from all 256).
    if (byte_id_[size_t(b)] < 0)
      throw std::runtime_error(fmt::format("[BpeModel] {}: the vocabulary lacks '{}', the stand-in for byte 0x{:02X} (a byte-level "
                                           "vocabulary holds all 256)", where, s, b));
  }
  table_->map.reserve(merges_.size());
  for (size_t rank = 0; rank < merges_.size(); ++rank) {
    const auto& [a, b] = merges_[rank];
    const int32_t ia = vocab_.id(a), ib = vocab_.id(b), im = vocab_.id(a + b);
    for (const auto& [part, id] : {std::pair{a, ia}, {b, ib}, {a + b, im}})
      if (id < 0)
        throw std::runtime_error(fmt::format("[BpeModel] {}: merge {} '{} {}': '{}' is not in the vocabulary", where, rank + 1, a, b, part));
    table_->map[MergeTable::key(ia, ib)] = {int32_t(rank), im};  // a repeated merge keeps its last rank, as HF
  }
}

BpeModel::BpeModel(BpeModel&&) noexcept = default;
BpeModel& BpeModel::operator=(BpeModel&&) noexcept = default;
BpeModel::~BpeModel() = default;

BpeModel BpeModel::from_files(const std::string& vocab_json, const std::string& merges_txt) {
  std::ifstream vin(vocab_json, std::ios::binary);
  if (!vin) throw std::runtime_error(fmt::format("[BpeModel] {}: cannot open", vocab_json));
  nlohmann::json j;
  try {
    j = parse_json_bounded(vin);  // untrusted: nesting depth bounded
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("[BpeModel] {}: not valid JSON: {}", vocab_json, e.what()));
  }
  if (!j.is_object() || j.empty())
    throw std::runtime_error(fmt::format("[BpeModel] {}: expected a non-empty object of token: id, got {}", vocab_json, j.type_name()));
  std::vector<std::string> by_id(j.size());
  std::vector<bool> seen(j.size(), false);
  for (const auto& [token, id] : j.items()) {
    if (!id.is_number_unsigned() || id.get<uint64_t>() >= j.size())
      throw std::runtime_error(fmt::format("[BpeModel] {}: token '{}' has id {}; ids must be 0..{}", vocab_json, token,
                                           json_summary(id), j.size() - 1));
    const size_t i = id.get<size_t>();
    if (seen[i])
      throw std::runtime_error(fmt::format("[BpeModel] {}: id {} is given to both '{}' and '{}'", vocab_json, i, by_id[i], token));
    seen[i] = true;
    by_id[i] = token;
  }
  std::ifstream min(merges_txt, std::ios::binary);
  if (!min) throw std::runtime_error(fmt::format("[BpeModel] {}: cannot open", merges_txt));
  std::vector<Merge> merges;
  std::string line;
  for (size_t n = 1; getline_lf(min, line); ++n) {
    if (n == 1 && line.rfind("#version", 0) == 0) continue;
    if (line.empty() && min.peek() == std::char_traits<char>::eof()) break;  // a final blank line
    const size_t sp = line.find(' ');
    if (sp == std::string::npos || sp == 0 || sp + 1 == line.size() || line.find(' ', sp + 1) != std::string::npos)
      throw std::runtime_error(fmt::format("[BpeModel] {}:{}: expected two tokens separated by one space, got '{}'", merges_txt, n, line));
    merges.emplace_back(line.substr(0, sp), line.substr(sp + 1));
  }
  return BpeModel(Vocab(by_id), std::move(merges), merges_txt);
}

void BpeModel::save(const std::string& dir) const {
  std::filesystem::create_directories(dir);
  std::string v = "{";
  for (size_t id = 0; id < vocab_.size(); ++id)
    v += fmt::format("{}{}:{}", id ? "," : "", nlohmann::json(vocab_.token(int32_t(id))).dump(), id);
  v += "}";
  std::string m = "#version: 0.2\n";
  for (const auto& [a, b] : merges_) m += a + " " + b + "\n";
  write_text_atomically((std::filesystem::path(dir) / "vocab.json").string(), v);
  write_text_atomically((std::filesystem::path(dir) / "merges.txt").string(), m);
}

void BpeModel::merge(std::string_view bytes, std::vector<std::pair<int32_t, uint32_t>>& out) const {
  struct Symbol {
    int32_t id, prev, next;
    uint32_t len;
  };
  std::vector<Symbol> sym;
  sym.reserve(bytes.size());
  for (unsigned char b : bytes) {
    const int32_t i = int32_t(sym.size());
    sym.push_back({byte_id_[b], i - 1, i + 1, 1});
  }
  if (sym.empty()) return;
  sym.back().next = -1;
  struct Candidate {
    int32_t rank, pos, merged;
    bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }  // min-heap
  };
  std::priority_queue<Candidate> queue;
  for (size_t i = 0; i + 1 < sym.size(); ++i)
    if (auto m = table_->find(sym[i].id, sym[i + 1].id)) queue.push({m->first, int32_t(i), m->second});
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& s = sym[size_t(top.pos)];
    if (s.len == 0 || s.next < 0) continue;
    const int32_t right = s.next;
    const auto* m = table_->find(s.id, sym[size_t(right)].id);
    if (!m || m->second != top.merged) continue;  // a stale entry: one side merged already
    s.id = top.merged;
    s.len += sym[size_t(right)].len;
    s.next = sym[size_t(right)].next;
    sym[size_t(right)].len = 0;
    if (s.next >= 0) sym[size_t(s.next)].prev = top.pos;
    if (s.prev >= 0)
      if (auto p = table_->find(sym[size_t(s.prev)].id, s.id)) queue.push({p->first, s.prev, p->second});
    if (s.next >= 0)
      if (auto n = table_->find(s.id, sym[size_t(s.next)].id)) queue.push({n->first, top.pos, n->second});
  }
  for (const Symbol& s : sym)
    if (s.len) out.emplace_back(s.id, s.len);
}

void BpeModel::encode_word(std::string_view bytes, std::vector<std::pair<int32_t, uint32_t>>& out) const {
  if (bytes.size() == 1) {
    out.emplace_back(byte_id_[static_cast<unsigned char>(bytes[0])], 1);
    return;
  }
  if (bytes.size() > Cache::kMaxWordBytes) return merge(bytes, out);
  Cache::Shard& shard = cache_->shards[std::hash<std::string_view>()(bytes) % Cache::kShards];
  {
    std::lock_guard<std::mutex> lock(shard.mu);
    auto it = shard.words.find(std::string(bytes));
    if (it != shard.words.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t first = out.size();
  merge(bytes, out);
  std::lock_guard<std::mutex> lock(shard.mu);
  if (shard.words.size() < Cache::kPerShard) shard.words.emplace(std::string(bytes), std::vector<std::pair<int32_t, uint32_t>>(out.begin() + long(first), out.end()));
}

}  // namespace xg::text
