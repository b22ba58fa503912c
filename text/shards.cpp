// Static pre-training shards: fixed-size little-endian records after a small header.
#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "text/pretraining_data.hpp"
#include "util/atomic_file.hpp"
#include "util/checksums.hpp"

namespace xg::text {

namespace {
constexpr char kMagic[8] = {'X', 'G', 'B', 'E', 'R', 'T', '0', '1'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 8 + 4 * 4 + 8;

size_t record_bytes(size_t seq, size_t preds) { return 8 + 4 * seq + 2 * preds + 4 * preds; }

template <class T>
void write_le(std::vector<uint8_t>& b, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) b.push_back(uint8_t(uint64_t(v) >> (8 * i)));
}
template <class T>
T read_le(const uint8_t* p) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= uint64_t(p[i]) << (8 * i);
  return T(v);
}
}  // namespace

ShardWriter::ShardWriter(const std::string& path, size_t seq, size_t preds, size_t vocab)
    : path_(path), tmp_(path + ".tmp"), seq_(seq), preds_(preds), vocab_(vocab) {
  // the header the reader accepts (record lengths are 16-bit)
  if (seq < 5 || seq > 65535 || preds == 0 || preds > seq || vocab == 0 || vocab > 0xffffffffULL)
    throw std::invalid_argument(fmt::format("[shard] {}: max_seq_length {} (5 to 65535), max_predictions {} (1 to it) "
                                            "and vocabulary {} (1 to 2^32 - 1) cannot make a shard", path, seq, preds, vocab));
  f_ = std::fopen(tmp_.c_str(), "wb");
  if (!f_) throw std::runtime_error(fmt::format("[shard] {}: cannot create", tmp_));
  std::vector<uint8_t> h(kMagic, kMagic + 8);
  write_le<uint32_t>(h, kVersion);
  write_le<uint32_t>(h, uint32_t(seq));
  write_le<uint32_t>(h, uint32_t(preds));
  write_le<uint32_t>(h, uint32_t(vocab));
  write_le<uint64_t>(h, 0);  // count, written by close()
  if (std::fwrite(h.data(), 1, h.size(), f_) != h.size()) {  // no destructor runs for a throwing constructor
    std::fclose(f_);
    std::remove(tmp_.c_str());
    throw std::runtime_error(fmt::format("[shard] {}: write failed", tmp_));
  }
}

namespace {
// What makes `inst` no record of a shard of (seq, preds, vocab), or "" when it is one. The writer
// refuses what the reader would, before a shard that cannot be read exists.
std::string instance_problem(const Instance& inst, size_t seq, size_t preds, size_t vocab) {
  const size_t len = inst.tokens.size(), n_pred = inst.masked_positions.size();
  if (len < 3 || len > seq || inst.a_end == 0 || inst.a_end >= len || n_pred > preds || inst.masked_labels.size() != n_pred)
    return fmt::format("{} tokens (a_end {}) and {} predictions do not fit {} tokens and {} predictions", len, inst.a_end,
                       n_pred, seq, preds);
  for (const int32_t id : inst.tokens)
    if (id < 0 || size_t(id) >= vocab) return fmt::format("token id {} is outside the vocabulary of {}", id, vocab);
  for (size_t k = 0; k < n_pred; ++k) {
    const int32_t pos = inst.masked_positions[k], label = inst.masked_labels[k];
    if (label < 0 || size_t(label) >= vocab)
      return fmt::format("prediction {}: label {} is outside the vocabulary of {}", k, label, vocab);
    if (pos < 0 || size_t(pos) >= len || (k > 0 && pos <= inst.masked_positions[k - 1]))
      return fmt::format("prediction {} at position {}: positions ascend within the {} tokens", k, pos, len);
  }
  return "";
}
}  // namespace

void ShardWriter::write(const Instance& inst) {
  if (const std::string problem = instance_problem(inst, seq_, preds_, vocab_); !problem.empty())
    throw std::invalid_argument(fmt::format("[shard] {}: {}", path_, problem));
  std::vector<uint8_t> r;
  r.reserve(record_bytes(seq_, preds_));
  write_le<uint16_t>(r, uint16_t(inst.tokens.size()));
  write_le<uint16_t>(r, uint16_t(inst.a_end));
  write_le<uint8_t>(r, inst.is_random_next);
  write_le<uint8_t>(r, 0);
  write_le<uint16_t>(r, uint16_t(inst.masked_positions.size()));
  for (size_t i = 0; i < seq_; ++i) write_le<uint32_t>(r, i < inst.tokens.size() ? uint32_t(inst.tokens[i]) : 0u);
  for (size_t i = 0; i < preds_; ++i) write_le<uint16_t>(r, i < inst.masked_positions.size() ? uint16_t(inst.masked_positions[i]) : 0);
  for (size_t i = 0; i < preds_; ++i) write_le<uint32_t>(r, i < inst.masked_labels.size() ? uint32_t(inst.masked_labels[i]) : 0u);
  if (std::fwrite(r.data(), 1, r.size(), f_) != r.size()) throw std::runtime_error(fmt::format("[shard] {}: write failed", tmp_));
  ++count_;
}

void ShardWriter::close() {
  if (!f_) return;
  std::vector<uint8_t> c;
  write_le<uint64_t>(c, count_);
  bool ok = std::fseek(f_, long(kHeaderBytes - 8), SEEK_SET) == 0 && std::fwrite(c.data(), 1, 8, f_) == 8;
  ok = std::fflush(f_) == 0 && ok;
  ok = std::fclose(f_) == 0 && ok;
  f_ = nullptr;
  if (!ok || std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    std::remove(tmp_.c_str());
    throw std::runtime_error(fmt::format("[shard] {}: could not finish the file", path_));
  }
}

ShardWriter::~ShardWriter() {
  if (f_) {  // never closed: an error happened; leave no half-written shard behind
    std::fclose(f_);
    std::remove(tmp_.c_str());
  }
}

ShardReader::ShardReader(const std::string& path) : path_(path) {
  // Owned here until the header is validated: a constructor that throws runs no destructor, and
  // each refused shard would leak its file (found by fuzz_shard).
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw std::runtime_error(fmt::format("[shard] {}: cannot open", path));
  uint8_t h[kHeaderBytes];
  if (std::fread(h, 1, kHeaderBytes, file.get()) != kHeaderBytes || std::memcmp(h, kMagic, 8) != 0)
    throw std::runtime_error(fmt::format("[shard] {}: not an xgrad pre-training shard (bad header)", path));
  if (read_le<uint32_t>(h + 8) != kVersion)
    throw std::runtime_error(fmt::format("[shard] {}: version {} (this build reads {})", path, read_le<uint32_t>(h + 8), kVersion));
  seq_ = read_le<uint32_t>(h + 12);
  preds_ = read_le<uint32_t>(h + 16);
  vocab_ = read_le<uint32_t>(h + 20);
  count_ = read_le<uint64_t>(h + 24);
  if (seq_ < 5 || seq_ > 65535 || preds_ == 0 || preds_ > seq_ || vocab_ == 0)
    throw std::runtime_error(fmt::format("[shard] {}: implausible header (max_seq_length {}, max_predictions {}, vocab {})",
                                         path, seq_, preds_, vocab_));
  record_bytes_ = record_bytes(seq_, preds_);
  const auto size = std::filesystem::file_size(path);
  // Divided, not multiplied: a forged count makes count * record_bytes wrap around to the size.
  if ((size - kHeaderBytes) % record_bytes_ != 0 || (size - kHeaderBytes) / record_bytes_ != count_)
    throw std::runtime_error(fmt::format("[shard] {}: {} bytes, but the header promises {} records of {} bytes (truncated?)",
                                         path, size, count_, record_bytes_));
  f_ = file.release();
}

ShardReader::~ShardReader() {
  if (f_) std::fclose(f_);
}

Instance ShardReader::get(size_t i) {
  if (i >= count_) throw std::out_of_range(fmt::format("[shard] {}: record {} of {}", path_, i, count_));
  std::vector<uint8_t> r(record_bytes_);
  if (std::fseek(f_, long(kHeaderBytes + i * record_bytes_), SEEK_SET) != 0 || std::fread(r.data(), 1, r.size(), f_) != r.size())
    throw std::runtime_error(fmt::format("[shard] {}: cannot read record {}", path_, i));
  const uint8_t* p = r.data();
  Instance inst;
  const size_t len = read_le<uint16_t>(p), a_end = read_le<uint16_t>(p + 2), n_pred = read_le<uint16_t>(p + 6);
  inst.a_end = a_end;
  inst.is_random_next = p[4] != 0;
  auto bad = [&](const std::string& what) {
    return std::runtime_error(fmt::format("[shard] {}: record {}: {}", path_, i, what));
  };
  if (len > seq_ || n_pred > preds_ || p[4] > 1)  // before reading that many
    throw bad(fmt::format("length {}, predictions {}, sentence label {} are inconsistent", len, n_pred, p[4]));
  p += 8;
  // ids of 2^31 and above read as negative, which the check below refuses
  for (size_t k = 0; k < len; ++k) inst.tokens.push_back(int32_t(read_le<uint32_t>(p + 4 * k)));
  p += 4 * seq_;
  for (size_t k = 0; k < n_pred; ++k) {
    inst.masked_positions.push_back(read_le<uint16_t>(p + 2 * k));
    inst.masked_labels.push_back(int32_t(read_le<uint32_t>(p + 2 * preds_ + 4 * k)));
  }
  if (const std::string problem = instance_problem(inst, seq_, preds_, vocab_); !problem.empty()) throw bad(problem);
  return inst;
}

std::vector<int32_t> probe_ids(const Tokenizer& tok, const std::string& text) {
  std::vector<int32_t> ids;
  for (const Token& t : tok.tokenize(text, "the tokenizer probe")) ids.push_back(t.id);
  return ids;
}

namespace {
// `listed`: the shard files' checksums.json entries (name -> size and CRC32C).
void write_shard_recipe(const std::string& dir, const PretrainingOptions& opt, const Tokenizer& tok,
                        const nlohmann::json& listed) {
  const nlohmann::json j = {{"pairing", pairing_name(opt.pairing)},
                            {"files", listed},
                            {"max_seq_length", opt.max_seq_length},
                            {"max_predictions_per_seq", opt.max_predictions_per_seq},
                            {"masked_lm_prob", std::stod(fmt::format("{}", opt.masked_lm_prob))},  // 0.15, not 0.15000000596
                            {"whole_word_mask", opt.whole_word_mask},
                            {"dupe_factor", opt.dupe_factor},
                            {"seed", opt.seed},
                            {"vocab_size", tok.vocab_size()},
                            {"tokenizer_class", tok.tokenizer_class()},
                            {"tokenizer_probe", {{"text", kTokenizerProbe}, {"ids", probe_ids(tok, kTokenizerProbe)}}}};
  write_text_atomically((std::filesystem::path(dir) / kShardRecipeFile).string(), j.dump(2) + "\n");
}
}  // namespace

std::optional<ShardRecipe> read_shard_recipe(const std::string& dir, const std::vector<std::string>& shard_paths,
                                             const std::optional<nlohmann::json>& listed) {
  namespace fs = std::filesystem;
  const std::string path = (fs::path(dir) / kShardRecipeFile).string();
  if (!fs::exists(path)) return std::nullopt;
  ShardRecipe r;
  try {
    std::ifstream in(path);
    const nlohmann::json j = nlohmann::json::parse(in);
    r.pairing = j.at("pairing").get<std::string>();
    parse_pairing(r.pairing);  // one this build knows
    r.probe_text = j.at("tokenizer_probe").at("text").get<std::string>();
    r.probe_ids = j.at("tokenizer_probe").at("ids").get<std::vector<int32_t>>();
    if (j.contains("masked_lm_prob")) r.masked_lm_prob = j.at("masked_lm_prob").get<float>();
    if (j.contains("whole_word_mask")) r.whole_word_mask = j.at("whole_word_mask").get<bool>();
    if (!j.contains("files")) return r;  // written by the first build that wrote shards.json
    for (const auto& [name, f] : j.at("files").items())
      r.files[name] = {f.at("size").get<uint64_t>(), f.at("crc32c").get<std::string>()};
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("[shard] {}: cannot be read ({}); remove it to train on the shards unchecked",
                                         path, e.what()));
  }
  // The files it describes must be these (the files were checked against `listed` already, so its
  // CRCs stand for theirs).
  const auto other = [&](const std::string& why) {
    return std::runtime_error(fmt::format("[shard] {} describes other shards than {} holds ({}): a shard removed, "
                                          "added, or the shards remade there by an older build? Make the shards again "
                                          "into a new folder, or remove {} to train on them unchecked",
                                          path, dir, why, kShardRecipeFile));
  };
  std::set<std::string> here;
  for (const auto& p : shard_paths) here.insert(fs::path(p).filename().string());
  for (const auto& [name, _] : r.files)
    if (!here.count(name)) throw other(fmt::format("its {} is not there", name));
  for (const auto& p : shard_paths) {
    const std::string name = fs::path(p).filename().string();
    const auto it = r.files.find(name);
    if (it == r.files.end()) throw other(fmt::format("{} is not among its files", name));
    if (it->second.first != fs::file_size(p))
      throw other(fmt::format("{}: {} bytes there, {} here", name, it->second.first, fs::file_size(p)));
    if (listed && listed->contains(name) && listed->at(name).value("crc32c", "") != it->second.second)
      throw other(fmt::format("{}: CRC32C {} there, {} in {}", name, it->second.second, listed->at(name).value("crc32c", ""),
                              kChecksumsFile));
  }
  return r;
}

std::vector<std::string> write_shards(const std::vector<Instance>& instances, const std::string& dir, size_t per_shard,
                                      const PretrainingOptions& opt, const Tokenizer& tok, const std::vector<Instance>& held_out) {
  const size_t vocab_size = tok.vocab_size();
  if (per_shard == 0) throw std::invalid_argument("[shard] instances per shard must be positive");
  std::filesystem::create_directories(dir);
  // Shards of an earlier run into this folder would be mixed into this one's.
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if ((name.rfind("shard_", 0) == 0 && e.path().extension() == ".bin") || name == kHeldOutShard || name == kShardRecipeFile)
      std::filesystem::remove(e.path());
  }
  auto write = [&](const std::string& path, const std::vector<Instance>& from, size_t begin, size_t end) {
    ShardWriter w(path, opt.max_seq_length, opt.max_predictions_per_seq, vocab_size);
    for (size_t i = begin; i < end; ++i) w.write(from[i]);
    w.close();
  };
  std::vector<std::string> paths;
  for (size_t start = 0; start < instances.size(); start += per_shard) {
    paths.push_back((std::filesystem::path(dir) / fmt::format("shard_{:05d}.bin", paths.size())).string());
    write(paths.back(), instances, start, std::min(instances.size(), start + per_shard));
  }
  std::vector<std::string> files = paths;
  if (!held_out.empty()) {
    files.push_back((std::filesystem::path(dir) / kHeldOutShard).string());
    write(files.back(), held_out, 0, held_out.size());
  }
  nlohmann::json sums = nlohmann::json::object();  // each shard read once, for both lists
  for (const auto& f : files) sums[std::filesystem::path(f).filename().string()] = file_checksum(f);
  write_shard_recipe(dir, opt, tok, sums);
  write_checksums(dir, sums);  // the shards of this run, each with its CRC32C: readers check both
  return paths;
}

}  // namespace xg::text
