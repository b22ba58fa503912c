#include "util/cli.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include <unistd.h>

#include "util/version.hpp"

namespace xg::cli {

void show_defaults(CLI::App& app) { app.option_defaults()->always_capture_default(); }

CLI::Validator positive() {
  // Runs after add_number's transform, so the text is already a canonical finite number.
  return CLI::Validator([](std::string& s) { return std::strtod(s.c_str(), nullptr) > 0 ? "" : fmt::format("{} is not above zero", s); },
                        "POSITIVE");
}

std::optional<int> parse_or_exit(CLI::App& app, int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  const CLI::App* program = &app;  // the name is argv[0]'s when the App was given none
  app.set_version_flag("--version", std::function<std::string()>([program] {
    return fmt::format("{} (xgrad {})", std::filesystem::path(program->get_name()).filename().string(), XGRAD_VERSION);
  }));
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

namespace {
void collect_files(const CLI::App& app, const std::vector<std::string>& outputs, std::vector<FlagPath>& found) {
  for (const CLI::Option* o : app.get_options()) {
    const std::string flag = o->get_name();
    if (o->count() == 0 || std::find(outputs.begin(), outputs.end(), flag) != outputs.end()) continue;
    std::error_code ec;
    for (const std::string& value : o->results())
      if (std::filesystem::is_regular_file(value, ec)) found.push_back({flag, value});
  }
  for (const CLI::App* sub : app.get_subcommands({})) collect_files(*sub, outputs, found);
}
}  // namespace

std::vector<FlagPath> given_files(const CLI::App& app, const std::vector<std::string>& outputs) {
  std::vector<FlagPath> found;
  collect_files(app, outputs, found);
  return found;
}

void check_output_file(const FlagPath& output, const std::vector<FlagPath>& inputs) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path path(output.path);
  if (fs::is_directory(path, ec))
    throw std::invalid_argument(fmt::format("{} {}: a directory; name the file to write", output.flag, output.path));
  const fs::path folder = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  if (!fs::is_directory(folder, ec))
    throw std::invalid_argument(fmt::format("{} {}: the folder {} does not exist", output.flag, output.path, folder.string()));
  if (::access(folder.c_str(), W_OK) != 0)
    throw std::invalid_argument(fmt::format("{} {}: the folder {} is not writable", output.flag, output.path, folder.string()));
  if (!fs::exists(path, ec)) return;  // a new file replaces nothing
  for (const FlagPath& in : inputs)
    if (fs::equivalent(path, in.path, ec) && !ec)
      throw std::invalid_argument(fmt::format("{} {} is the file {} {} reads: writing it would replace that input; choose another "
                                              "file", output.flag, output.path, in.flag, in.path));
}

}  // namespace xg::cli
