#pragma once
// Weights split over several files by an index, as transformers' save_pretrained writes a model
// past its max_shard_size: model.safetensors.index.json (or pytorch_model.bin.index.json) maps each
// tensor name to the shard file beside it that holds it,
//   {"metadata": {...}, "weight_map": {"bert.embeddings.word_embeddings.weight": "model-00001-of-00002.safetensors", ...}}
#include <functional>
#include <string>

#include "nn/module.hpp"

namespace xg::nn {

// Every tensor the index lists, each read from its shard by `read_file` (each shard read once).
// Throws naming the index file and the value: not JSON, no weight_map object, a shard name that is
// not a plain file name beside the index, a missing shard, a listed tensor its shard lacks, or a
// shard holding a tensor the index gives to another file.
StateDict read_sharded_tensors(const std::string& index_path, const std::function<StateDict(const std::string&)>& read_file);

}  // namespace xg::nn
