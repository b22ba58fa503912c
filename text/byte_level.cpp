#include "text/byte_level.hpp"

#include <utf8proc.h>

#include "text/unicode.hpp"

namespace xg::text {

const std::array<char32_t, 256>& byte_to_unicode() {
  static const std::array<char32_t, 256> table = [] {
    std::array<char32_t, 256> t{};
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      t[size_t(b)] = printable ? char32_t(b) : next++;
    }
    return t;
  }();
  return table;
}

int unicode_to_byte(char32_t c) {
  static const std::array<int16_t, 324> inverse = [] {
    std::array<int16_t, 324> inv;
    inv.fill(-1);
    for (int b = 0; b < 256; ++b) inv[byte_to_unicode()[size_t(b)]] = int16_t(b);
    return inv;
  }();
  return c < inverse.size() ? inverse[c] : -1;
}

std::string to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) append_utf8(out, byte_to_unicode()[b]);
  return out;
}

std::string from_byte_level(std::string_view token) {
  std::string out;
  for (char32_t c : decode_utf8(token, InvalidUtf8::Replace)) {
    const int b = unicode_to_byte(c);
    if (b < 0) return std::string(token);
    out.push_back(char(b));
  }
  return out;
}

namespace {
enum class Kind : uint8_t { Letter, Number, Space, Other };

Kind kind_of(char32_t c) {
  static const std::array<Kind, 128> ascii = [] {
    std::array<Kind, 128> k;
    for (char32_t a = 0; a < 128; ++a)
      k[a] = (a >= 'a' && a <= 'z') || (a >= 'A' && a <= 'Z') ? Kind::Letter
             : (a >= '0' && a <= '9')                          ? Kind::Number
             : is_whitespace(a)                                 ? Kind::Space
                                                                : Kind::Other;
    return k;
  }();
  if (c < 128) return ascii[c];
  if (is_whitespace(c)) return Kind::Space;
  switch (utf8proc_category(utf8proc_int32_t(c))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO:
      return Kind::Letter;
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
      return Kind::Number;
    default:
      return Kind::Other;
  }
}

// Length of the contraction ('s 't 're 've 'm 'll 'd, lower case only) at cps[i], or 0.
size_t contraction(const std::vector<char32_t>& cps, size_t i, size_t end) {
  if (cps[i] != '\'' || i + 1 >= end) return 0;
  const char32_t a = cps[i + 1];
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (i + 2 >= end) return 0;
  const char32_t b = cps[i + 2];
  return (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l') ? 3 : 0;
}
}  // namespace

void split_gpt2(const std::vector<char32_t>& cps, size_t begin, size_t end, std::vector<std::pair<size_t, size_t>>& out) {
  auto run = [&](size_t j, Kind k) {
    while (j < end && kind_of(cps[j]) == k) ++j;
    return j;
  };
  for (size_t i = begin; i < end;) {
    size_t j;
    const Kind k = kind_of(cps[i]);
    if (const size_t n = contraction(cps, i, end)) {
      j = i + n;
    } else if (k != Kind::Space) {
      j = run(i + 1, k);
    } else if (cps[i] == ' ' && i + 1 < end && kind_of(cps[i + 1]) != Kind::Space) {
      j = run(i + 2, kind_of(cps[i + 1]));  // " ?\p{L}+" and friends: the space joins the word
    } else {
      // \s+(?!\S) leaves the last space of a run for the word after it; a lone space is \s+.
      j = run(i + 1, Kind::Space);
      if (j < end && j - i >= 2) --j;
    }
    out.emplace_back(i, j);
    i = j;
  }
}

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const unsigned char b = p[i];
    if (b < 0x80) {
      out.push_back(char(b));
      ++i;
      continue;
    }
    // Expected length and the allowed range of the second byte (Unicode Table 3-7).
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) len = 2;
    else if (b >= 0xE0 && b <= 0xEF) len = 3, lo = b == 0xE0 ? 0xA0 : 0x80, hi = b == 0xED ? 0x9F : 0xBF;
    else if (b >= 0xF0 && b <= 0xF4) len = 4, lo = b == 0xF0 ? 0x90 : 0x80, hi = b == 0xF4 ? 0x8F : 0xBF;
    size_t k = 1;  // bytes of a valid prefix
    if (len > 0) {
      if (i + 1 < n && p[i + 1] >= lo && p[i + 1] <= hi) {
        k = 2;
        while (k < len && i + k < n && p[i + k] >= 0x80 && p[i + k] <= 0xBF) ++k;
      }
    }
    if (len > 0 && k == len) out.append(s.substr(i, len));
    else out.append("\xEF\xBF\xBD");
    i += k;
  }
  return out;
}

}  // namespace xg::text
