#pragma once
// Command lines of the example programs, on CLI11: numeric options that refuse what CLI11 alone
// would narrow silently, defaults shown in --help, and one parse-or-exit for main().
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "util/options.hpp"

namespace xg::cli {

// Options added to `app` afterwards (and to subcommands created afterwards) show their current
// value as the default in --help.
void show_defaults(CLI::App& app);

// `name` parsed into the number `field`. CLI11 2.1 converts integers with strtoull in base 0, so
// "-1" would become SIZE_MAX, "010" octal 8 and an overflow the largest value, and it takes "nan"
// for a float; here the text must be a decimal integer within T's range, or a finite number that
// T can hold, else the parse fails naming the flag and the value.
template <class T>
CLI::Option* add_number(CLI::App& app, const std::string& name, T& field, const std::string& help) {
  static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>, "add_number takes integers and floats");
  // The same strict parse as every declared option (util/options.hpp); the text is then
  // rewritten in canonical form for CLI11's own conversion.
  CLI::Validator check([](std::string& s) {
    try {
      s = fmt::format("{}", option_detail::parse<T>(s, ""));
      return std::string();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
  }, "");
  // transform(), not check(): it runs first and may rewrite the text CLI11 then converts.
  return app.add_option(name, field, help)->transform(check);
}

// For add_number options that must be above zero (sizes, counts, rates): `->check(positive())`.
// (CLI11's PositiveNumber names the range as 0 to DBL_MAX written out in full.)
CLI::Validator positive();

// Parses the command line, with --version ("<program> (xgrad X.Y.Z)"). Returns the exit code
// when main should return now: 0 after --help or --version,
// 2 after "<program>: <error>" (unknown flag, bad or missing value) on `err`; nothing when the
// program should run. --help shows each option by its first (canonical) name, its aliases parse but
// are not listed, and the groups come in the order of util/options.hpp's k*Group.
std::optional<int> parse_or_exit(CLI::App& app, int argc, const char* const* argv,
                                 std::ostream& out = std::cout, std::ostream& err = std::cerr);

// "<program>: <message>" for an error a program stops on: `what` without the library's
// "[component] " tag at its start and at the start of each part after ": " (one per part: the tag
// names the code that threw, which helps a C++ caller, not a user of the program), e.g.
// "[vocabulary] x.txt: cannot open" -> "bert_pretrain: x.txt: cannot open".
std::string error_line(const std::string& program, const std::string& what);

// A path a flag names.
struct FlagPath {
  std::string flag, path;
};

// The existing files the flags given on `app`'s command line name (its subcommands' too), but for
// `outputs`: what a run may read.
std::vector<FlagPath> given_files(const CLI::App& app, const std::vector<std::string>& outputs);

// An output file written when the work is done (a report, predictions), checked before the work
// starts: throws std::invalid_argument naming the flag and path when it is a directory, its folder
// is missing or not writable, or it is the same file as one of `inputs` (compared as resolved
// files: symbolic and hard links, "..", relative and absolute spellings), which writing it would
// replace. A folder that is `run_dir` (the run's --output-dir, which the run creates) may be missing.
void check_output_file(const FlagPath& output, const std::vector<FlagPath>& inputs, const std::string& run_dir = "");

}  // namespace xg::cli
