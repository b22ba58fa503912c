#include "util/flags.hpp"

#include <stdexcept>

namespace xg {

void Flags::print_help() const {
  fmt::print("usage: {} [flags]\n{}\n\n", program_, summary_);
  for (const auto& [name, f] : flags_) fmt::print("  {:<20} {}\n", name, f.help);
}

std::optional<int> Flags::parse_or_exit(int argc, char** argv) const {
  try {
    if (!parse(argc, argv)) return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: {}\n", program_.substr(0, program_.find(' ')), e.what());
    return 2;
  }
  return std::nullopt;
}

bool Flags::parse(int argc, char** argv, int first) const {
  for (int i = first; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      print_help();
      return false;
    }
    auto it = flags_.find(a);
    if (it == flags_.end()) throw std::invalid_argument(fmt::format("unknown flag '{}' (see --help)", a));
    if (it->second.on) {
      it->second.on();
      continue;
    }
    if (i + 1 >= argc) throw std::invalid_argument(fmt::format("{} needs a value", a));
    it->second.set(argv[++i]);
  }
  return true;
}

}  // namespace xg
