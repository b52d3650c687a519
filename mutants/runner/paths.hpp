// Where the runner finds what the build made, relative to the running program (bin/):
// plugins and the mutant manifest in ../lib, the mutation-testing-elements bundle in ../npm.
#pragma once

#include <filesystem>
#include <string>

namespace nc::mutants {

/// The folder of the running executable.
std::filesystem::path program_dir();

/// The plugin folder: NORMCHECK_PLUGIN_DIR, else <program dir>/../lib.
std::filesystem::path default_plugin_dir();

/// libnormcheck_<backend>.so, libnormcheck_mutant_<id>_<backend>.so in a plugin folder.
std::filesystem::path shipped_plugin(const std::filesystem::path& dir, const std::string& backend);
std::filesystem::path mutant_plugin(const std::filesystem::path& dir, const std::string& id, const std::string& backend);

/// The `normcheck` CLI: NORMCHECK_CLI, else this program if it is normcheck, else
/// <program dir>/normcheck.
std::filesystem::path default_cli();

/// mutation-testing-elements' browser bundle: NORMCHECK_ELEMENTS_JS, else
/// <program dir>/../npm/node_modules/mutation-testing-elements/dist/mutation-test-elements.js
std::filesystem::path default_elements_js();

}  // namespace nc::mutants
