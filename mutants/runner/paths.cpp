#include "paths.hpp"

#include <cstdlib>

namespace nc::mutants {

namespace fs = std::filesystem;

namespace {
fs::path from_env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? fs::path(v) : fs::path();
}
}  // namespace

fs::path program_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : exe.parent_path();
}

fs::path default_plugin_dir() {
  const fs::path env = from_env("NORMCHECK_PLUGIN_DIR");
  return env.empty() ? (program_dir() / ".." / "lib").lexically_normal() : env;
}

fs::path shipped_plugin(const fs::path& dir, const std::string& backend) {
  return dir / ("libnormcheck_" + backend + ".so");
}

fs::path mutant_plugin(const fs::path& dir, const std::string& id, const std::string& backend) {
  return dir / ("libnormcheck_mutant_" + id + "_" + backend + ".so");
}

fs::path default_cli() {
  const fs::path env = from_env("NORMCHECK_CLI");
  if (!env.empty()) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && exe.filename() == "normcheck") return exe;
  return program_dir() / "normcheck";
}

fs::path default_elements_js() {
  const fs::path env = from_env("NORMCHECK_ELEMENTS_JS");
  if (!env.empty()) return env;
  return (program_dir() / ".." / "npm" / "node_modules" / "mutation-testing-elements" / "dist" /
          "mutation-test-elements.js")
      .lexically_normal();
}

}  // namespace nc::mutants
