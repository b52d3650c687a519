// `normcheck mutants --generated`: the generated operators (mutants/generator) at every site of
// the kernel files in scope, as catalog-format mutants built by the plugin build of the seeded
// ones (the generated slot targets of mutants/CMakeLists.txt: normcheck_add_kernel_plugin on a
// copy of kernels/src) and run by the same campaign runner.
//
// Each mutant's translation unit is compiled once to an object; an object identical to the
// original's is an equivalent mutant (Ignored, never run). The rest are linked into a plugin and
// run. Results are cached under <build>/mutants/generated/cache:
//   build   key = hash(kernels/src tree, mutant, the original's object): equivalent, compile
//           error, or built (the plugin kept beside it)
//   verdict key = hash(the mutant's object, the original's object, suite key): its report entry
//   baseline key = hash(the original's object, tree, suite key): the baseline's properties
// the suite key being hash(the normcheck CLI's bytes, seed, cases, schedules, --first-kill,
// timeouts). An incremental run redoes only what a changed input invalidates.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "campaign.hpp"
#include "generator.hpp"
#include "normcheck/json.hpp"
#include "normcheck/mutation_report.hpp"

namespace nc::mutants {

/// lib/normcheck_generated.json, written at configure time.
struct generated_config {
  std::filesystem::path build_dir, cmake, kernels_dir, cache_dir;
  std::vector<std::string> files;  // in scope, relative to kernels/: src/rmsnorm_forward.cuh, ...
  struct slot {
    std::filesystem::path root, object, plugin;
    std::string target;
  };
  std::vector<slot> slots;  // one copy of kernels/src each, built side by side
};
generated_config read_generated_config(const std::filesystem::path& path);

struct generated_options {
  std::size_t limit = 0;               // 0: every mutant
  std::vector<std::string> files;      // --only-file: file names (rmsnorm_forward.cuh) or kernels/ paths
  std::vector<std::string> operators;  // --operators: operator classes
  std::vector<std::string> ids;        // --only: these mutants (their ids), nothing else built
  bool cache = true;
};

/// The selection: the filters, then with a limit the `limit` mutants of lowest hash of their id
/// (a sample that does not depend on the other mutants), in source order.
std::vector<generated_mutant> select_generated(std::vector<generated_mutant> all, const generated_options& o);

/// A mutant's verdict as the cache keeps it, and back.
json::value verdict_to_json(const reports::mutant& m);
void verdict_from_json(const json::value& v, reports::mutant& m);

/// The equivalence rule: the mutant's object is byte-identical to the original's.
bool same_object(const std::string& original, const std::string& mutated);

struct generated_figures {
  std::size_t sites_in_scope = 0, mutants_in_scope = 0;  // every mutant the generator made
  std::size_t sites = 0, mutants = 0;                    // the selection
  std::map<std::string, std::size_t> per_class;          // the selection by operator class
  std::size_t compiled = 0, build_cached = 0, verdicts_cached = 0, equivalent = 0, compile_errors = 0;
  bool baseline_cached = false;
  double build_seconds = 0;
};

class generated_campaign {
 public:
  generated_campaign(generated_config config, generated_options options, std::filesystem::path out);

  /// Generates and selects the mutants; the manifest the campaign describes them from.
  manifest select();
  /// Builds what the caches do not hold (the original first), judging equivalents and compile
  /// errors. suite_key: hash of what decides a verdict besides the plugin.
  void build(const std::string& suite_key);

  const std::filesystem::path& baseline_plugin() const { return baseline_plugin_; }
  std::filesystem::path plugin(const std::string& id) const;
  /// The verdict the build or the cache gave, if any (equivalent, compile error, cached).
  const reports::mutant* prejudged(const std::string& id) const;
  std::optional<json::value> cached_baseline() const;
  void store_baseline(const json::value& v) const;
  void store_verdict(const reports::mutant& m) const;

  const generated_figures& figures() const { return figures_; }
  const std::vector<generated_mutant>& mutants() const { return selected_; }
  const generated_options& options() const { return o_; }
  /// The Markdown summary: scope, selection, figures, survivors.
  std::string summary(const reports::campaign& c, double wall_seconds) const;

 private:
  generated_config cfg_;
  generated_options o_;
  std::filesystem::path out_;
  std::map<std::string, std::string> sources_;  // kernels/src/<name> -> text (all of src)
  std::vector<generated_mutant> selected_;
  std::map<std::string, std::string> build_key_;  // id -> build key
  std::map<std::string, std::string> object_of_;  // id -> hash of its object (a built mutant)
  std::map<std::string, reports::mutant> prejudged_;
  std::map<std::string, std::filesystem::path> plugins_;
  std::filesystem::path baseline_plugin_;
  std::string tree_hash_, object_hash_, suite_key_;
  generated_figures figures_;

  std::string verdict_key(const std::string& id) const;
  int cmake_build(const std::vector<std::string>& targets, const std::filesystem::path& log) const;
};

}  // namespace nc::mutants
