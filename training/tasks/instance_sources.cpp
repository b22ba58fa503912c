#include "training/tasks/instance_sources.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "util/checksums.hpp"

namespace fs = std::filesystem;

namespace xg::training {

ShardSource::ShardSource(const std::string& dir, size_t held_out, std::vector<text::Instance>& eval) {
  std::vector<std::string> paths;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".bin" && e.path().filename() != text::kHeldOutShard) paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  if (paths.empty()) throw std::runtime_error(fmt::format("[pretraining] {}: no shard_*.bin files", dir));
  const fs::path held_out_shard = fs::path(dir) / text::kHeldOutShard;
  held_out_documents_ = fs::is_regular_file(held_out_shard);
  if (held_out_documents_) paths.push_back(held_out_shard.string());  // checked with the others, read last
  const auto listed = verify_checksums(dir);  // a flipped token id or label would train silently
  if (listed)  // shards of an earlier run into the same folder are not listed
    for (const auto& p : paths)
      if (!listed->contains(fs::path(p).filename().string()))
        throw std::runtime_error(fmt::format("[pretraining] {}: not among the shards listed in {} (left from an earlier run?)", p,
                                             (fs::path(dir) / kChecksumsFile).string()));
  for (const auto& p : paths) {
    readers_.push_back(std::make_unique<text::ShardReader>(p));
    const auto& first = *readers_.front();
    const auto& r = *readers_.back();
    if (r.max_seq_length() != first.max_seq_length() || r.max_predictions() != first.max_predictions() ||
        r.vocab_size() != first.vocab_size())
      throw std::runtime_error(fmt::format(
          "[pretraining] {}: max_seq_length {}, max_predictions {}, vocabulary {}; {} has {}, {}, {}: shards of different runs", p,
          r.max_seq_length(), r.max_predictions(), r.vocab_size(), paths.front(), first.max_seq_length(), first.max_predictions(),
          first.vocab_size()));
  }
  recipe_ = text::read_shard_recipe(dir, paths, listed);  // after the files' own checks, which name what is wrong with one
  const size_t training_shards = readers_.size() - held_out_documents_;
  for (size_t r = 0; r < training_shards; ++r)
    for (size_t i = 0; i < readers_[r]->size(); ++i) index_.emplace_back(r, i);
  if (index_.empty()) throw std::runtime_error(fmt::format("[pretraining] {}: the shards hold no training instances", dir));
  if (held_out_documents_) {
    text::ShardReader& eval_shard = *readers_.back();
    if (eval_shard.size() == 0) throw std::runtime_error(fmt::format("[pretraining] {}: holds no instances", held_out_shard.string()));
    for (size_t i = 0; i < std::min(held_out, eval_shard.size()); ++i) eval.push_back(eval_shard.get(i));
    return;
  }
  if (index_.size() <= held_out)
    throw std::runtime_error(fmt::format("[pretraining] the shards hold {} instances, not more than the {} held out for evaluation",
                                         index_.size(), held_out));
  for (size_t k = index_.size() - held_out; k < index_.size(); ++k) eval.push_back(read(k));
  index_.resize(index_.size() - held_out);
}

std::vector<text::Instance> next_instances(InstanceSource& src, DataPosition& pos, size_t n) {
  std::vector<text::Instance> out;
  while (out.size() < n) {
    if (pos.index >= src.epoch_size(pos.epoch)) {
      ++pos.epoch;
      pos.index = 0;
      if (src.epoch_size(pos.epoch) == 0) throw std::runtime_error("[pretraining] the training data yields no instances");
      continue;
    }
    out.push_back(src.get(pos.epoch, pos.index++));
  }
  return out;
}

}  // namespace xg::training
