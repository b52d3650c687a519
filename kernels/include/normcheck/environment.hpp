// Every environment variable normcheck reads, one per concept, in one table: the CLI's help
// and the README print it, and every front end (the CLI, the gtest suites, the fuzz targets,
// the plugins) reads a variable through environment_value, so an old name still works, as a
// deprecated alias with a note, wherever a script or a document still uses it.
// Header-only: a plugin, a fuzz target or a test reads it without linking.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

namespace nc {

/// one variable: its name, what it sets, its default, and the older names it replaces
struct environment_variable {
  std::string_view name;
  std::string_view sets;
  std::string_view fallback;  ///< what holds when it is unset
  std::string_view aliases[2] = {};  ///< deprecated names, read when the name is unset
};

inline constexpr environment_variable environment_variables[] = {
    {"NORMCHECK_KERNEL", "the kernel under test: a plugin's path, FILE.py[:FUNCTION] or python:MODULE:FUNCTION",
     "the shipped plugin of the backend", {"NORMCHECK_TEST_PLUGIN", "NORMCHECK_FUZZ_PLUGIN"}},
    {"NORMCHECK_BACKEND", "the shipped plugin's backend when no kernel is named: auto, cuda or simt",
     "auto for the CLI, simt for the test suites and the fuzz targets",
     {"NORMCHECK_TEST_BACKEND", "NORMCHECK_FUZZ_BACKEND"}},
    {"NORMCHECK_SEED", "the seed of every random run (an integer in [0, 2^64 - 1])", "a fresh random seed"},
    {"NORMCHECK_CASE_SCALE", "multiplies every property's case count (a number in (0, 1000])", "1"},
    {"NORMCHECK_SHRINK_SECONDS", "bounds the shrinking of a failure, in seconds (0: no bound)", "30"},
    {"NORMCHECK_CASE_DIR", "the folder failing cases are written to (--case-dir wins)", "reports/cases"},
    {"NORMCHECK_EPSILON", "every case's epsilon, as --epsilon sets it (a kernel with one built in; the fuzz targets too)",
     "the properties' own mix"},
    {"NORMCHECK_VARIANT", "every case's variant, as --variant NAME sets it (normcheck variants lists them)",
     "every operation the kernel declares"},
    {"NORMCHECK_CALL_TIMEOUT", "seconds one plugin call may take in the worker before it is a hang", "60"},
    {"NORMCHECK_ISOLATION", "off: kernel calls run in the harness process (for a debugger)", "on"},
    {"NORMCHECK_PLUGIN_DIR", "the folder of the shipped plugins", "../lib beside the program"},
    {"NORMCHECK_CUDA_PDL", "0: cuda launches strictly one after another (no programmatic dependent launch)", "1"},
    {"NORMCHECK_CUDA_SYNC", "1: synchronize after every cuda launch, so a fault names its kernel", "0"},
    {"NORMCHECK_SANITIZER", "the compute-sanitizer tool the campaign runs under (check --sanitizer sets it; memcheck "
     "enables the page-guard property on a device)", "none"},
    {"NORMCHECK_SIMT_THREADS", "OS threads the simt backend spreads blocks over", "the hardware's"},
    {"NORMCHECK_SIMT_SCHEDULE", "the simt backend's fiber schedule seed (0: in order)", "0"},
    {"NORMCHECK_FUZZ_CASE_OUT", "a fuzz target's replay writes the case file of a failing input here", "none"},
    {"NORMCHECK_PYTHON", "the Python interpreter of the Python kernel bridge", "python3 on PATH"},
};

/// a variable's value (nothing when it and its aliases are unset or empty); a deprecated alias
/// that is set says so on stderr, once per process
inline std::optional<std::string> environment_value(std::string_view name) {
  const auto read = [](std::string_view n) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(n).c_str());
    return v != nullptr && *v != '\0' ? std::optional<std::string>(v) : std::nullopt;
  };
  if (auto v = read(name)) return v;
  for (const environment_variable& e : environment_variables) {
    if (e.name != name) continue;
    for (std::string_view alias : e.aliases) {
      if (alias.empty()) continue;
      if (auto v = read(alias)) {
        static bool noted = false;
        if (!noted)
          std::fprintf(stderr, "normcheck: %.*s is a deprecated name of %.*s\n", int(alias.size()), alias.data(),
                       int(name.size()), name.data());
        noted = true;
        return v;
      }
    }
  }
  return std::nullopt;
}

/// the table as text, one variable a line (the CLI's help)
inline std::string describe_environment() {
  std::string out;
  for (const environment_variable& e : environment_variables) {
    out += "  " + std::string(e.name) + ": " + std::string(e.sets) + " (default: " + std::string(e.fallback);
    const char* separator = "; deprecated aliases ";
    for (std::string_view alias : e.aliases)
      if (!alias.empty()) out += separator + std::string(alias), separator = ", ";
    out += ")\n";
  }
  return out;
}

}  // namespace nc
