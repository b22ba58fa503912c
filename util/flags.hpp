#pragma once
// Command-line flags for the example programs: "--name value" and "--switch", each with a help
// line that shows its default. Bad flags or values throw std::invalid_argument naming them.
// Only bert_pretrain uses it still; the other programs parse with CLI11 through util/cli.
#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <type_traits>

namespace xg {

class Flags {
 public:
  Flags(std::string program, std::string summary) : program_(std::move(program)), summary_(std::move(summary)) {}

  // A flag taking a value, parsed into `field`; the field's current value is the default shown.
  template <class T>
  void value(const std::string& name, T& field, const std::string& help, bool show_default = true) {
    const std::string shown = show_default ? fmt::format(" ({})", field) : "";
    flags_[name] = {help + shown, [&field, name](const std::string& v) { parse(v, field, name); }, nullptr};
  }
  // A switch: present means `field = true`.
  void toggle(const std::string& name, bool& field, const std::string& help) {
    flags_[name] = {help, nullptr, [&field] { field = true; }};
  }
  // Parses argv[first..]. Returns false when --help was printed (the caller exits 0).
  bool parse(int argc, char** argv, int first = 1) const;
  // parse() for main(): the exit code when main should return now (0 after --help, 2 after
  // printing "<program>: <error>"), nothing when the program should run.
  std::optional<int> parse_or_exit(int argc, char** argv) const;
  void print_help() const;

 private:
  struct Flag {
    std::string help;
    std::function<void(const std::string&)> set;
    std::function<void()> on;
  };
  template <class T>
  static void parse(const std::string& v, T& field, const std::string& name) {
    size_t used = 0;
    try {
      if constexpr (std::is_same_v<T, std::string>) {
        field = v;
        used = v.size();
      } else if constexpr (std::is_floating_point_v<T>) {
        field = T(std::stod(v, &used));
      } else if constexpr (std::is_signed_v<T>) {
        field = T(std::stoll(v, &used));
      } else {
        if (!v.empty() && v[0] == '-') throw std::invalid_argument("negative");
        field = T(std::stoull(v, &used));
      }
    } catch (const std::exception&) {
      used = std::string::npos;
    }
    if (used != v.size()) throw std::invalid_argument(fmt::format("bad value '{}' for {}", v, name));
  }
  std::string program_, summary_;
  std::map<std::string, Flag> flags_;
};

}  // namespace xg
