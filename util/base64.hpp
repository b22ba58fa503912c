#pragma once
// Standard base64 (RFC 4648, with '=' padding), as tokenizer.json stores a SentencePiece
// normalizer's precompiled character map.
#include <string>
#include <string_view>

namespace xg {

std::string base64_encode(std::string_view bytes);
// Throws std::invalid_argument naming `where` and the offset of a character outside the alphabet
// or a length or padding that is not base64's.
std::string base64_decode(std::string_view text, const std::string& where);

}  // namespace xg
