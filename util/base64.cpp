#include "util/base64.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace xg {

namespace {
constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int value_of(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  return c == '+' ? 62 : c == '/' ? 63 : -1;
}
}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t v = 0;
    for (size_t k = 0; k < 3; ++k) v = (v << 8) | (k < n ? uint8_t(bytes[i + k]) : 0);
    for (size_t k = 0; k < 4; ++k) out.push_back(k <= n ? kAlphabet[(v >> (18 - 6 * k)) & 63] : '=');
  }
  return out;
}

std::string base64_decode(std::string_view text, const std::string& where) {
  if (text.size() % 4 != 0)
    throw std::invalid_argument(fmt::format("{}: base64 of {} characters, not a multiple of 4", where, text.size()));
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    uint32_t v = 0;
    size_t padding = 0;
    for (size_t k = 0; k < 4; ++k) {
      const char c = text[i + k];
      const bool last_block = i + 4 == text.size();
      if (c == '=' && last_block && k >= 2 && (k == 3 || text[i + 3] == '=')) {
        ++padding;
        v <<= 6;
        continue;
      }
      const int d = value_of(c);
      if (d < 0 || padding > 0)
        throw std::invalid_argument(fmt::format("{}: not base64 at character {} ('{}')", where, i + k, c));
      v = (v << 6) | uint32_t(d);
    }
    for (size_t k = 0; k < 3 - padding; ++k) out.push_back(char((v >> (16 - 8 * k)) & 0xFF));
  }
  return out;
}

}  // namespace xg
