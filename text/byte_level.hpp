#pragma once
// GPT-2's byte-level scheme, as Hugging Face's ByteLevel pre-tokenizer and decoder run it: every
// byte has a printable stand-in character (so a vocabulary of strings covers all bytes), text is
// first split into pre-tokens by GPT-2's pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// and decoding turns stand-ins back into bytes, invalid UTF-8 becoming U+FFFD.
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace xg::text {

// The stand-in of each byte: printable Latin-1 bytes stand for themselves, the others (controls,
// space, soft hyphen) for U+0100 + n in byte order ("Ġ" is the space, "Ċ" the newline).
const std::array<char32_t, 256>& byte_to_unicode();
// The byte a stand-in stands for; -1 for a character outside the alphabet.
int unicode_to_byte(char32_t c);
// The stand-ins of `bytes`, as UTF-8 (what vocab.json and merges.txt spell).
std::string to_byte_level(std::string_view bytes);
// The bytes a token spells: its stand-ins' bytes, or, when it has a character outside the
// alphabet (an added token such as "<mask>" has none), its own UTF-8, as Hugging Face decodes.
std::string from_byte_level(std::string_view token);

// GPT-2's pre-tokens of cps[begin, end), appended to `out` as [start, end) code-point ranges that
// cover it exactly. A hand-written scanner equivalent to the pattern above (Unicode White_Space
// for \s, general categories L* and N* from utf8proc).
void split_gpt2(const std::vector<char32_t>& cps, size_t begin, size_t end, std::vector<std::pair<size_t, size_t>>& out);

// UTF-8 with each maximal invalid subsequence replaced by U+FFFD, as Rust's
// String::from_utf8_lossy (Unicode's "substitution of maximal subparts").
std::string utf8_lossy(std::string_view bytes);

}  // namespace xg::text
