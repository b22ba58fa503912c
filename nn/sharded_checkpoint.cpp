#include "nn/sharded_checkpoint.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>

#include "util/json_input.hpp"

namespace fs = std::filesystem;

namespace xg::nn {

StateDict read_sharded_tensors(const std::string& index_path, const std::function<StateDict(const std::string&)>& read_file) {
  auto fail = [&](const std::string& what) { return std::runtime_error(fmt::format("[checkpoint] {}: {}", index_path, what)); };
  std::ifstream in(index_path, std::ios::binary);
  if (!in) throw fail("cannot open");
  nlohmann::json index;
  try {
    index = parse_json_bounded(in);
  } catch (const nlohmann::json::exception& e) {
    throw fail(fmt::format("not valid JSON ({})", e.what()));
  }
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    throw fail(fmt::format("expected an object with a \"weight_map\" object, got {}", json_summary(index)));
  std::map<std::string, std::set<std::string>> tensors_of;  // shard -> the tensors the index puts there
  for (const auto& [tensor, file] : index["weight_map"].items()) {
    if (!file.is_string()) throw fail(fmt::format("weight_map[\"{}\"] is {}, not a file name", tensor, json_summary(file)));
    const std::string name = file.get<std::string>();
    // only files beside the index: a shard elsewhere (a path, "..") would read outside the checkpoint
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos || name.find('\\') != std::string::npos)
      throw fail(fmt::format("weight_map[\"{}\"] is \"{}\", not a file name beside the index", tensor, name));
    tensors_of[name].insert(tensor);
  }
  if (tensors_of.empty()) throw fail("weight_map lists no tensors");
  const fs::path dir = fs::path(index_path).parent_path();
  StateDict out;
  for (const auto& [shard, names] : tensors_of) {
    const std::string path = (dir / shard).string();
    if (!fs::is_regular_file(path)) throw fail(fmt::format("shard {} is missing", path));
    StateDict tensors = read_file(path);
    for (auto& [name, t] : tensors) {
      if (!names.count(name))
        throw fail(fmt::format("shard {} holds '{}', which the index gives to {}", path, name,
                               index["weight_map"].contains(name) ? index["weight_map"][name].dump() : "no file"));
      out[name] = std::move(t);
    }
    for (const auto& name : names)
      if (!out.count(name)) throw fail(fmt::format("'{}' is not in its shard {}", name, path));
  }
  return out;
}

}  // namespace xg::nn
