#include "util/cli.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include <unistd.h>

#include "util/version.hpp"

namespace xg::cli {

void show_defaults(CLI::App& app) { app.option_defaults()->always_capture_default(); }

CLI::Validator positive() {
  // Runs after add_number's transform, so the text is already a canonical finite number.
  return CLI::Validator([](std::string& s) { return std::strtod(s.c_str(), nullptr) > 0 ? "" : fmt::format("{} is not above zero", s); },
                        "POSITIVE");
}

namespace {

// Edits (insert, delete, substitute, swap two neighbours) turning a into b.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// " (did you mean X?)" for the candidate nearest `word`, when one is near enough to be a slip; X is
// `shown_as` of that candidate when given (an alias's canonical name), else the candidate.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates,
                         const std::vector<std::string>& shown_as = {}) {
  size_t best = candidates.size();
  size_t best_distance = std::max<size_t>(2, word.size() / 4) + 1;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const std::string& c = candidates[i];
    const size_t d = (c.rfind(word, 0) == 0 || word.rfind(c, 0) == 0) ? 1 : edit_distance(word, c);  // a prefix: a slip too
    if (d < best_distance) best_distance = d, best = i;
  }
  if (best == candidates.size()) return "";
  return fmt::format(" (did you mean {}?)", shown_as.empty() ? candidates[best] : shown_as[best]);
}

// The long flags ("--max-steps", "--steps") of `app`'s own options; with `canonical`, each one's
// option's first name (what --help shows, and what a "did you mean" suggests).
std::vector<std::string> long_flags(const CLI::App& app, std::vector<std::string>* canonical = nullptr) {
  std::vector<std::string> flags;
  for (const CLI::Option* o : app.get_options())
    for (const std::string& n : o->get_lnames()) {
      flags.push_back("--" + n);
      if (canonical) canonical->push_back("--" + o->get_lnames().front());
    }
  return flags;
}

// The command line checked before CLI11 parses it: each --flag must be one of the program's (or of
// the subcommand named), a --snake_case spelling of one is taken as it (transformers' command lines
// paste in), and a misspelt flag or subcommand is named with the nearest real one. Returns the
// arguments to parse, or the error to print.
struct Checked {
  std::vector<std::string> args;
  std::string error;
};
Checked check_arguments(const CLI::App& app, int argc, const char* const* argv) {
  Checked c;
  const CLI::App* scope = &app;
  bool value_next = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {  // the rest is positional
      for (; i < argc; ++i) c.args.push_back(argv[i]);
      break;
    }
    if (value_next || a.rfind("--", 0) != 0) {
      if (!value_next && scope == &app && !app.get_subcommands({}).empty() && a.rfind('-', 0) != 0) {
        std::vector<std::string> names;
        for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
        if (std::find(names.begin(), names.end(), a) == names.end()) {
          c.error = fmt::format("unknown command '{}'{}; the commands are {}", a, did_you_mean(a, names), fmt::join(names, ", "));
          return c;
        }
        scope = app.get_subcommand(a);
      }
      value_next = false;
      c.args.push_back(a);
      continue;
    }
    const size_t eq = a.find('=');
    std::string flag = a.substr(0, eq);
    const std::string rest = eq == std::string::npos ? "" : a.substr(eq);
    auto known = [&](const std::string& f) {
      for (const CLI::App* s : {scope, static_cast<const CLI::App*>(&app)}) {
        const auto flags = long_flags(*s);
        if (std::find(flags.begin(), flags.end(), f) != flags.end()) return s;
      }
      return static_cast<const CLI::App*>(nullptr);
    };
    const CLI::App* owner = known(flag);
    if (!owner && flag.find('_') != std::string::npos) {
      std::string dashed = flag;
      std::replace(dashed.begin() + 2, dashed.end(), '_', '-');
      if ((owner = known(dashed))) flag = dashed;
    }
    if (!owner) {
      std::vector<std::string> canonical;
      std::vector<std::string> flags = long_flags(*scope, &canonical);
      if (scope != &app)
        for (const std::string& f : long_flags(app, &canonical)) flags.push_back(f);
      c.error = fmt::format("unknown flag {}{}", flag, did_you_mean(flag, flags, canonical));
      return c;
    }
    const CLI::Option* o = owner->get_option_no_throw(flag);
    value_next = eq == std::string::npos && o && o->get_expected_min() > 0;
    c.args.push_back(flag + rest);
  }
  return c;
}

// --help with one name per option (its first: the canonical one) and the groups in the order of
// the k*Group constants.
class Formatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override {
    if (is_positional || opt->get_lnames().empty()) return CLI::Formatter::make_option_name(opt, is_positional);
    std::string name;
    for (const std::string& s : opt->get_snames()) name += "-" + s + ",";
    return name + "--" + opt->get_lnames().front();
  }

  std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override {
    if (mode == CLI::AppFormatMode::Sub) return make_expanded(app);
    std::string out = make_description(app) + make_usage(app, name) + make_positionals(app);
    for (const std::string& group : ordered_groups(*app)) {
      std::vector<const CLI::Option*> options = app->get_options([&](const CLI::Option* o) {
        return o->get_group() == group && o->nonpositional();
      });
      if (!group.empty() && !options.empty()) out += make_group(group, false, options) + "\n";
    }
    return out + make_subcommands(app, mode) + "\n" + make_footer(app);
  }

 private:
  // The app's groups (in the order their first options were added), the k*Group ones moved to
  // the front and the back.
  static std::vector<std::string> ordered_groups(const CLI::App& app) {
    const std::vector<std::string> first = {"Options", kModelAndDataGroup, kTrainingGroup, kOutputGroup};
    const std::vector<std::string> last = {kPerformanceGroup, kDistributedGroup, kAdvancedGroup};
    auto rank = [&](const std::string& g) {
      if (auto f = std::find(first.begin(), first.end(), g); f != first.end()) return int(f - first.begin());
      if (auto l = std::find(last.begin(), last.end(), g); l != last.end()) return 1000 + int(l - last.begin());
      return 500;
    };
    std::vector<std::string> groups = app.get_groups();
    std::stable_sort(groups.begin(), groups.end(), [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
    return groups;
  }
};

void use_formatter(CLI::App& app, const std::shared_ptr<Formatter>& formatter) {
  formatter->column_width(app.get_formatter()->get_column_width());
  app.formatter(formatter);
  for (CLI::App* sub : app.get_subcommands({})) use_formatter(*sub, std::make_shared<Formatter>(*formatter));
}

}  // namespace

namespace {
// Whether `tag` (the text between '[' and ']') names a component: letters, digits, '_', ':' and
// spaces, with a lowercase letter, so never a special token such as "[MASK]" or a list "[1, 2]".
bool is_component_tag(const std::string& tag) {
  return !tag.empty() &&
         std::all_of(tag.begin(), tag.end(), [](unsigned char c) { return std::isalnum(c) || c == '_' || c == ' ' || c == ':'; }) &&
         std::any_of(tag.begin(), tag.end(), [](unsigned char c) { return std::islower(c); });
}
}  // namespace

std::string error_line(const std::string& program, const std::string& what) {
  // "[tag] " at the start of the message or of a part after ": " (a wrapped error)
  // one tag per part: what follows it may be the user's own text ("[draft] notes.txt")
  std::string message;
  for (size_t i = 0; i < what.size();) {
    const bool part_start = i == 0 || (i >= 2 && what.compare(i - 2, 2, ": ") == 0);
    if (part_start && what[i] == '[') {
      const size_t close = what.find("] ", i);
      if (close != std::string::npos && is_component_tag(what.substr(i + 1, close - i - 1))) {
        i = close + 2;
        if (i < what.size()) message += what[i++];  // the part's first character, never a tag
        continue;
      }
    }
    message += what[i++];
  }
  return fmt::format("{}: {}", program, message);
}

std::optional<int> parse_or_exit(CLI::App& app, int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  const CLI::App* program = &app;  // the name is argv[0]'s when the App was given none
  app.set_version_flag("--version", std::function<std::string()>([program] {
    return fmt::format("{} (xgrad {})", std::filesystem::path(program->get_name()).filename().string(), XGRAD_VERSION);
  }));
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    return fmt::format("{}: {}\nRun with --help for more information.\n", a->get_name(), e.what());
  });
  use_formatter(app, std::make_shared<Formatter>());
  const Checked checked = check_arguments(app, argc, argv);
  if (!checked.error.empty()) {
    const std::string name = std::filesystem::path(app.get_name().empty() ? argv[0] : app.get_name()).filename().string();
    err << fmt::format("{}: {}\nRun with --help for more information.\n", name, checked.error);
    return 2;
  }
  std::vector<const char*> args{argv[0]};
  for (const std::string& a : checked.args) args.push_back(a.c_str());
  try {
    app.parse(int(args.size()), args.data());
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

void check_output_file(const FlagPath& output, const std::vector<FlagPath>& inputs, const std::string& run_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path path(output.path);
  if (fs::is_directory(path, ec))
    throw std::invalid_argument(fmt::format("{} {}: a directory; name the file to write", output.flag, output.path));
  const fs::path folder = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  if (!run_dir.empty() && !fs::exists(folder, ec) && option_detail::same_place(folder.string(), run_dir)) return;  // the run creates it
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
