#pragma once
// UTF-8 decoding and the Unicode character classes BERT's tokenizer needs, on top of utf8proc
// (categories, canonical decomposition, case mapping).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace xg::text {

enum class InvalidUtf8 { Error, Replace };

// Decodes UTF-8 into code points. Invalid sequences throw std::invalid_argument naming `where`
// and the byte offset, or become U+FFFD with InvalidUtf8::Replace.
std::vector<char32_t> decode_utf8(std::string_view s, InvalidUtf8 policy = InvalidUtf8::Error,
                                  const std::string& where = "input");
// The byte offset of the first invalid UTF-8 sequence in s, or std::string_view::npos.
size_t invalid_utf8_at(std::string_view s);
// "invalid UTF-8 at byte AT (0xXX)", XX being s[at]: one wording for every reader's error.
std::string invalid_utf8_message(std::string_view s, size_t at);
void append_utf8(std::string& out, char32_t c);
std::string encode_utf8(const std::u32string_view& cps);

// Unicode White_Space (what Rust's char::is_whitespace, and so Hugging Face, uses).
bool is_whitespace(char32_t c);
// Python's str.isspace (what str.split() and str.strip() take away): White_Space plus the
// separators U+001C..U+001F.
inline bool is_python_space(char32_t c) { return is_whitespace(c) || (c >= 0x1C && c <= 0x1F); }
// General category C* (Cc, Cf, Cs, Co, Cn), except \t \n \r which BERT counts as whitespace.
bool is_control(char32_t c);
// ASCII punctuation and symbols (!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~) or any Unicode P* category.
bool is_punctuation(char32_t c);
// The CJK Unified Ideographs blocks BERT splits into single characters.
bool is_cjk(char32_t c);
bool is_mark_nonspacing(char32_t c);  // Mn
// Canonical decomposition (NFD) of one code point, appended to out.
void decompose(char32_t c, std::u32string& out);
// Canonical combining class (0 for starters).
int combining_class(char32_t c);
// Lower-case mapping as Rust's char::to_lowercase: one code point, except U+0130 -> "i\u0307".
void to_lower(char32_t c, std::u32string& out);

}  // namespace xg::text
