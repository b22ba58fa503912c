#include "util/options.hpp"

#include <CLI/CLI.hpp>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "util/checksums.hpp"

namespace xg::option_detail {

namespace {
[[noreturn]] void bad(const std::string& flag, const std::string& text, const std::string& why) {
  // Without a flag the caller (CLI11) names it.
  throw std::invalid_argument(flag.empty() ? fmt::format("'{}': {}", text, why) : fmt::format("{} '{}': {}", flag, text, why));
}

// The whole of `text` as a decimal integer (no octal or hex surprises, no silent wrap-around).
template <class Wide>
Wide parse_integer(const std::string& text, const std::string& flag) {
  Wide v{};
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec == std::errc::result_out_of_range) bad(flag, text, "out of range");
  if (ec != std::errc() || ptr != end) bad(flag, text, "not a whole number");
  return v;
}
}  // namespace

template <class T>
T parse(const std::string& text, const std::string& flag) {
  if constexpr (std::is_same_v<T, std::string>) {
    return text;
  } else if constexpr (std::is_floating_point_v<T>) {
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])) || end != text.c_str() + text.size())
      bad(flag, text, "not a number");
    if (!std::isfinite(v) || errno == ERANGE || std::fabs(v) > double(std::numeric_limits<T>::max()))
      bad(flag, text, "not a finite number in range");
    return T(v);
  } else if constexpr (std::is_unsigned_v<T>) {
    if (!text.empty() && (text[0] == '-' || text[0] == '+')) bad(flag, text, "must be a whole number >= 0 without a sign");
    const auto v = parse_integer<unsigned long long>(text, flag);
    if (v > std::numeric_limits<T>::max()) bad(flag, text, "out of range");
    return T(v);
  } else {
    const auto v = parse_integer<long long>(text, flag);
    if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) bad(flag, text, "out of range");
    return T(v);
  }
}

template std::string parse<std::string>(const std::string&, const std::string&);
template float parse<float>(const std::string&, const std::string&);
template double parse<double>(const std::string&, const std::string&);
template int parse<int>(const std::string&, const std::string&);
template long parse<long>(const std::string&, const std::string&);
template long long parse<long long>(const std::string&, const std::string&);
template unsigned parse<unsigned>(const std::string&, const std::string&);
template unsigned long parse<unsigned long>(const std::string&, const std::string&);
template unsigned long long parse<unsigned long long>(const std::string&, const std::string&);

void check_choice(const std::string& value, const Choices& choices, const std::string& flag) {
  if (std::find(choices.names.begin(), choices.names.end(), value) == choices.names.end())
    bad(flag, value, fmt::format("not one of {}", fmt::join(choices.names, ", ")));
}

void check_range(double value, const Range& range, const std::string& flag, const std::string& shown) {
  if (!std::isfinite(value)) bad(flag, shown, "not a finite number");
  if (value < range.min || value > range.max) {
    const std::string allowed = std::isinf(range.max) ? fmt::format("must be >= {}", range.min)
                                : std::isinf(range.min) ? fmt::format("must be <= {}", range.max)
                                                        : fmt::format("must be in [{}, {}]", range.min, range.max);
    bad(flag, shown, allowed);
  }
}

std::string json_key(const std::string& flag) {
  const std::string first = flag.substr(0, flag.find(','));  // "--tokenizer,--vocab": the first name
  std::string k = first.substr(first.find_first_not_of('-'));
  for (char& c : k)
    if (c == '-') c = '_';
  return k;
}

std::string saved_key(const nlohmann::json& saved, const std::string& flag, const std::vector<std::string>& aliases) {
  if (saved.contains(json_key(flag))) return json_key(flag);
  for (const auto& a : aliases)
    if (saved.contains(json_key(a))) return json_key(a);
  return "";
}

bool same_place(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::equivalent(a, b, ec) && !ec) return true;
  const auto normal = [](const std::string& p) {
    const fs::path n = fs::absolute(p).lexically_normal();
    return n.has_filename() ? n : n.parent_path();  // "runs/ner/" as "runs/ner"
  };
  return normal(a) == normal(b);
}

std::string restore_data_path(const std::string& flag, const std::string& current, bool given, const std::string& saved,
                              const nlohmann::json& fingerprint, const std::string& where, bool check_in_place) {
  if (!given || same_place(current, saved)) {
    if (std::filesystem::exists(saved)) {
      // the same file may hold other data now (a corpus edited). A folder's fingerprint also counts
      // files training never reads (notes, editor backups, another run's output), so a folder is
      // not checked in place; shards are checked against their own checksums.json when read.
      if (check_in_place && !fingerprint.is_null() && std::filesystem::is_regular_file(saved)) {
        const nlohmann::json now = data_fingerprint(saved);
        if (now != fingerprint)
          throw std::invalid_argument(fmt::format(
              "[resume] {} {} ({}) has changed since the checkpoint was written: its fingerprint {} differs from the saved "
              "{}; a resumed run reads the data it started with (its position in the training data means nothing in "
              "other data): put the file back as it was or pass {} with a copy of it, or start a new run",
              flag, saved, where, now.dump(), fingerprint.dump(), flag));
      }
      return saved;
    }
    // The flag at its default may name the data's new place (the bundled corpus of a re-cloned
    // checkout): take it when it holds the same data.
    if (!given && !current.empty() && !fingerprint.is_null() && data_fingerprint(current) == fingerprint) return current;
    if (!std::filesystem::exists(saved))
      throw std::invalid_argument(fmt::format(
          "[resume] {} {} ({}) no longer exists: pass {} with the data's new place{}", flag, saved, where, flag,
          fingerprint.is_null() ? " (this checkpoint has no fingerprint of its data to check a new place against: a "
                                  "relative path is resolved from the working directory, so resume from the one the run "
                                  "started in)"
                                : " (the same data: its fingerprint is checked)"));
    return saved;
  }
  if (fingerprint.is_null())
    throw std::invalid_argument(fmt::format(
        "[resume] {} {} differs from the checkpoint's {} ({}), saved without a fingerprint of its data to tell whether "
        "they are the same: leave the flag out, or start a new run", flag, current, saved, where));
  const nlohmann::json now = data_fingerprint(current);
  if (now.is_null())
    throw std::invalid_argument(fmt::format("[resume] {} {}: no such file or directory (the checkpoint's data was {})", flag,
                                            current, saved));
  if (now != fingerprint)
    throw std::invalid_argument(fmt::format(
        "[resume] {} {} is not the data the checkpoint was trained on ({}, {}): its fingerprint {} differs from the saved "
        "{}; a resumed run goes on from its position in that data, which means nothing in other data: pass {} with a copy "
        "of it, or start a new run", flag, current, saved, where, now.dump(), fingerprint.dump(), flag));
  return current;
}

void add_to_app(CLI::App& app, const CommandLineOption& c, const std::string& group) {
  CLI::Option* opt = nullptr;
  if (c.is_switch) {
    // CLI11 sums the occurrences of a flag: above zero is on
    opt = app.add_flag_function(c.flag, [set = c.set_switch](std::int64_t count) { set(count > 0); }, c.help);
  } else {
    auto set = [set = c.set](const std::string& text) {
      try {
        set(text);
      } catch (const std::invalid_argument& err) {
        throw CLI::ValidationError(err.what());
      }
    };
    opt = app.add_option_function<std::string>(c.flag, set, c.help);
    opt->type_name(c.type_name);
    if (c.default_shown) opt->default_str(*c.default_shown);
    if (c.validate) opt->check(CLI::Validator([validate = c.validate](std::string& text) { return validate(text); }, ""));
  }
  opt->group(group);
}

}  // namespace xg::option_detail
