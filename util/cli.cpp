#include "util/cli.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace xg::cli::detail {

namespace {
// Strict base-10 parse of the whole text (an optional sign, then digits) into [min, max].
std::optional<std::string> canonical_integer(const std::string& text, int64_t min, uint64_t max) {
  const char* first = text.data();
  const char* last = first + text.size();
  if (first != last && *first == '+') ++first;  // from_chars takes '-' but not '+'
  if (first != last && *first == '-') {
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(first, last, v);
    if (ec != std::errc() || end != last || v < min) return std::nullopt;
    return std::to_string(v);
  }
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(first, last, v);
  if (ec != std::errc() || end != last || v > max) return std::nullopt;
  return std::to_string(v);
}
}  // namespace

std::string check_integer(std::string& text, int64_t min, uint64_t max) {
  const auto canonical = canonical_integer(text, min, max);
  if (!canonical) return fmt::format("'{}' is not a whole number from {} to {}", text, min, max);
  text = *canonical;
  return "";
}

std::string check_finite(std::string& text, double max, const char* type_name) {
  // strtod, not from_chars: it tells an overflow (inf) from an underflow (as good as zero).
  char* end = nullptr;
  const double v = text.empty() || std::isspace(static_cast<unsigned char>(text[0])) ? NAN : std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v) || std::abs(v) > max)
    return fmt::format("'{}' is not a finite number that {} can hold (|x| <= {:g})", text, type_name, max);
  text = fmt::format("{}", v);
  return "";
}

}  // namespace xg::cli::detail

namespace xg::cli {

void show_defaults(CLI::App& app) { app.option_defaults()->always_capture_default(); }

CLI::Validator positive() {
  // Runs after add_number's transform, so the text is already a canonical finite number.
  return CLI::Validator([](std::string& s) { return std::strtod(s.c_str(), nullptr) > 0 ? "" : fmt::format("{} is not above zero", s); },
                        "POSITIVE");
}

std::optional<int> parse_or_exit(CLI::App& app, int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    return fmt::format("{}: {}\nRun with --help for more information.\n", a->get_name(), e.what());
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e, out, err) == 0 ? 0 : 2;
  }
  return std::nullopt;
}

}  // namespace xg::cli
