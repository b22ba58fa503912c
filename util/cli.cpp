#include "util/cli.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>


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
