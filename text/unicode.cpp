#include "text/unicode.hpp"

#include <fmt/format.h>
#include <utf8proc.h>

#include <stdexcept>

namespace xg::text {

std::vector<char32_t> decode_utf8(std::string_view s, InvalidUtf8 policy, const std::string& where) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  size_t i = 0;
  while (i < s.size()) {
    if (p[i] < 0x80) {  // ASCII fast path
      out.push_back(p[i++]);
      continue;
    }
    utf8proc_int32_t cp;
    const utf8proc_ssize_t n = utf8proc_iterate(p + i, utf8proc_ssize_t(s.size() - i), &cp);
    if (n < 0) {
      if (policy == InvalidUtf8::Error)
        throw std::invalid_argument(fmt::format("[tokenizer] {}: {}", where, invalid_utf8_message(s, i)));
      out.push_back(0xFFFD);
      ++i;  // resynchronise on the next byte
      continue;
    }
    out.push_back(char32_t(cp));
    i += size_t(n);
  }
  return out;
}

std::string invalid_utf8_message(std::string_view s, size_t at) {
  return fmt::format("invalid UTF-8 at byte {} (0x{:02x})", at, unsigned(static_cast<unsigned char>(s.at(at))));
}

size_t invalid_utf8_at(std::string_view s) {
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  for (size_t i = 0; i < s.size();) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    utf8proc_int32_t cp;
    const utf8proc_ssize_t n = utf8proc_iterate(p + i, utf8proc_ssize_t(s.size() - i), &cp);
    if (n < 0) return i;
    i += size_t(n);
  }
  return std::string_view::npos;
}

void append_utf8(std::string& out, char32_t c) {
  utf8proc_uint8_t buf[4];
  const auto n = utf8proc_encode_char(utf8proc_int32_t(c), buf);
  out.append(reinterpret_cast<const char*>(buf), size_t(n));
}

std::string encode_utf8(const std::u32string_view& cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t c : cps) append_utf8(out, c);
  return out;
}

bool is_whitespace(char32_t c) {
  switch (c) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0:
    case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

static utf8proc_category_t category(char32_t c) { return utf8proc_category(utf8proc_int32_t(c)); }

bool is_control(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  if (c < 0x80) return c < 0x20 || c == 0x7F;
  switch (category(c)) {
    case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO: case UTF8PROC_CATEGORY_CN:
      return true;
    default:
      return false;
  }
}

bool is_punctuation(char32_t c) {
  if (c < 0x80) return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
  switch (category(c)) {
    case UTF8PROC_CATEGORY_PC: case UTF8PROC_CATEGORY_PD: case UTF8PROC_CATEGORY_PS: case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI: case UTF8PROC_CATEGORY_PF: case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

bool is_cjk(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool is_mark_nonspacing(char32_t c) { return c >= 0x300 && category(c) == UTF8PROC_CATEGORY_MN; }

void decompose(char32_t c, std::u32string& out) {
  if (c < 0xC0) {
    out.push_back(c);
    return;
  }
  utf8proc_int32_t buf[8];
  const utf8proc_ssize_t n =
      utf8proc_decompose_char(utf8proc_int32_t(c), buf, 8, utf8proc_option_t(UTF8PROC_DECOMPOSE), nullptr);
  if (n <= 0 || n > 8) {
    out.push_back(c);
    return;
  }
  for (utf8proc_ssize_t i = 0; i < n; ++i) out.push_back(char32_t(buf[i]));
}

int combining_class(char32_t c) {
  if (c < 0x300) return 0;
  return utf8proc_get_property(utf8proc_int32_t(c))->combining_class;
}

void to_lower(char32_t c, std::u32string& out) {
  if (c < 0x80) {
    out.push_back(c >= 'A' && c <= 'Z' ? c + 32 : c);
  } else if (c == 0x130) {  // the one unconditional multi-character lower-case mapping
    out.push_back('i');
    out.push_back(0x307);
  } else {
    out.push_back(char32_t(utf8proc_tolower(utf8proc_int32_t(c))));
  }
}

}  // namespace xg::text
