#pragma once
// Pre-training instances in a fixed order, addressed by (epoch, index): made on the fly from
// documents (dynamic masking, a new draw each epoch) or read from static shards in order.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "text/pretraining_data.hpp"

namespace xg::training {

class InstanceSource {
 public:
  virtual ~InstanceSource() = default;
  virtual size_t epoch_size(uint64_t epoch) = 0;
  virtual text::Instance get(uint64_t epoch, size_t index) = 0;
};

class DynamicSource : public InstanceSource {
 public:
  DynamicSource(std::vector<text::Document> docs, const text::PretrainingOptions& o, text::MaskingVocab v)
      : ds_(std::move(docs), o, std::move(v)) {}
  size_t epoch_size(uint64_t e) override { return ds_.epoch_size(e); }
  text::Instance get(uint64_t e, size_t i) override { return ds_.get(e, i); }

 private:
  text::DynamicDataset ds_;
};

class ShardSource : public InstanceSource {
 public:
  // Reads the shard_*.bin files of `dir` in name order. Up to `held_out` records of its held_out.bin
  // go to `eval`; shards made without one give their last `held_out` records instead.
  ShardSource(const std::string& dir, size_t held_out, std::vector<text::Instance>& eval);
  // Whether `eval` came from held_out.bin (documents no training record draws on), not from the
  // last records (whose documents, and with a dupe factor above one whose text, training also sees).
  bool held_out_documents() const { return held_out_documents_; }
  size_t epoch_size(uint64_t) override { return index_.size(); }
  text::Instance get(uint64_t, size_t i) override { return read(i); }
  size_t max_seq_length() const { return readers_.front()->max_seq_length(); }
  size_t vocab_size() const { return readers_.front()->vocab_size(); }
  // How the shards were made (DIR/shards.json), or nothing for shards made before it was written.
  const std::optional<text::ShardRecipe>& recipe() const { return recipe_; }

 private:
  text::Instance read(size_t k) { return readers_[index_[k].first]->get(index_[k].second); }
  std::vector<std::unique_ptr<text::ShardReader>> readers_;
  std::vector<std::pair<size_t, size_t>> index_;  // (shard, record)
  bool held_out_documents_ = false;
  std::optional<text::ShardRecipe> recipe_;
};

// Where the next instance comes from; saved with checkpoints.
struct DataPosition {
  uint64_t epoch = 0;
  size_t index = 0;
};

// The next `n` instances from `pos` on, moving to the next epoch at the end of one.
std::vector<text::Instance> next_instances(InstanceSource& src, DataPosition& pos, size_t n);

}  // namespace xg::training
