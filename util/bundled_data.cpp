#include "util/bundled_data.hpp"

#include <filesystem>
#include <system_error>

namespace fs = std::filesystem;

namespace xg {

std::string bundled_data_path(const std::string& relative) {
  std::error_code ec;
  if (relative.empty() || fs::path(relative).is_absolute() || fs::exists(relative, ec)) return relative;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return relative;
  const fs::path dir = exe.parent_path();
  for (const fs::path& candidate : {dir / ".." / ".." / relative, dir / ".." / "share" / "xgrad" / relative})
    if (fs::exists(candidate, ec)) return fs::weakly_canonical(candidate, ec).string();
  return relative;
}

}  // namespace xg
