// The pieces of a mutation campaign that are not process plumbing: the mutant manifest the
// build writes, the suite result `normcheck check --json` writes (README.md beside this file
// defines it), and the verdict on one mutant from its runs.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "normcheck/json.hpp"
#include "normcheck/mutation_report.hpp"
#include "process.hpp"

namespace nc::mutants {

struct hunk {
  std::size_t offset = 0;  // byte offset of search in the original file
  std::string search, replace;
};

/// A catalog entry as the build applied it (lib/normcheck_mutants.json).
struct mutant_spec {
  std::string id, bug_class, summary, mirrors, expected_killer, needs_gpu;
  std::string file;     // repository path of the mutated file
  std::string catalog;  // repository path of the catalog file
  std::vector<hunk> hunks;
};

struct manifest {
  std::vector<std::string> backends;  // backends the build made mutant plugins for
  std::vector<mutant_spec> mutants;
  std::map<std::string, std::string> sources;  // repository path -> original text
};

manifest parse_manifest(const json::value& doc);
manifest read_manifest(const std::filesystem::path& path);

/// One property's entry in the suite result.
struct property_result {
  std::string name, kind;
  bool judges_values = false;  ///< a failure of it is a wrong value (its family's, property.hpp)
  long cases = 0;
  bool failed = false;
  long cases_to_failure = 0;
  double seconds_to_failure = 0;
  double seconds = -1;  // the property's whole run; -1 when the suite does not say
  bool error = false;
  std::string counterexample, message;
};

struct suite_result {
  std::string kernel, backend, machine;
  std::vector<property_result> properties;
  bool any_failed() const;
};

/// Reads the document `normcheck check --json` writes; throws std::runtime_error naming the
/// field that is missing or of the wrong type.
suite_result parse_suite(const json::value& doc);

/// One run of the suite against a kernel (one fiber schedule).
/// the exit code a sanitizer pass asks compute-sanitizer for when it finds a hazard, and the
/// test ids its kills carry in the reports ("compute-sanitizer " + the tool)
constexpr int sanitizer_exit_code = 86;
inline constexpr const char* racecheck_test = "compute-sanitizer racecheck";
inline constexpr const char* memcheck_test = "compute-sanitizer memcheck";

struct run {
  std::string schedule;  // NORMCHECK_SIMT_SCHEDULE, "" when not set
  std::string sanitizer; // the tool ("racecheck", "memcheck") when the suite ran under compute-sanitizer, else ""
  process_result process;
  std::optional<suite_result> suite;
  std::string problem;   // why there is no suite result (missing or malformed JSON)
  std::string log_tail;
  double timeout_seconds = 0;
};

/// The report entry of a mutant: what it is and where (from the manifest), and its verdict.
reports::mutant describe(const mutant_spec& spec, const manifest& m);
/// Sets the verdict of d from its runs, in the order they ran.
void judge(reports::mutant& d, const std::vector<run>& runs);

/// The suite's properties a mutant's expected killer (its catalog text) names as whole words, in
/// the order the text names them, comma-separated (sanitizer passes are no properties): under
/// --first-kill they run first, so the suite stops at the kill early (the verdict is the same in
/// any order).
std::string named_killers(const std::vector<reports::property>& properties, const std::string& expected_killer);

/// The counterexample a property names: a case file's text when it names a readable file,
/// else the text itself.
std::string counterexample_text(const std::string& counterexample);

}  // namespace nc::mutants
