#pragma once
// The parity check of tokenizer_goldens.json's single lines: ids and character offsets of each.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "text/tokenizer.hpp"

namespace xg::test {

// Checks `tok` against every {"text", "ids", "offsets"} case of `singles`; returns how many there were.
inline size_t check_single_goldens(const text::Tokenizer& tok, const nlohmann::json& singles, const std::string& label) {
  size_t n = 0;
  for (const auto& c : singles) {
    const std::string text = c.at("text");
    const text::Encoding e = tok.encode(text);
    INFO(label << " line " << n << ": " << nlohmann::json(text).dump());
    CHECK(e.ids == c.at("ids").get<std::vector<int32_t>>());
    std::vector<std::pair<size_t, size_t>> offsets;
    for (auto& o : c.at("offsets")) offsets.emplace_back(o[0].get<size_t>(), o[1].get<size_t>());
    CHECK(e.offsets == offsets);
    ++n;
  }
  return n;
}

}  // namespace xg::test
