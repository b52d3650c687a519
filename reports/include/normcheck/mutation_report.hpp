// The mutation campaign's report: what the runner measured, written three ways.
//   stryker()   mutation-testing-report-schema JSON (schemaVersion 2), what Stryker's viewers read
//   markdown()  the kill table and the two scores
//   html()      one self-contained page on the mutation-testing-elements web component
// Score = (killed + timeout) / (killed + timeout + survived). The strict score counts only
// mutants that a property judging values killed with a wrong value: not kills by a fault, a
// crash, a contract or an isolation property.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "normcheck/json.hpp"

namespace nc::reports {

/// Stryker's statuses; a mutant run is one of these.
enum class status { killed, survived, timeout, runtime_error, compile_error, no_coverage, ignored };

/// Stryker's spelling: "Killed", "Survived", "Timeout", "RuntimeError", ...
const char* status_name(status s);

/// 1-based line and column in the original source; a location's end is exclusive.
struct position {
  int line = 1, column = 1;
};
struct location {
  position start, end;
};

/// A property of the suite: its name (the test id) and kind (its family: differential,
/// metamorphic, contract, isolation, dispatch, variant, quantized, launch).
struct property {
  std::string name, kind;
};

/// One property's failure against one mutant.
struct kill {
  std::string property, kind;
  bool error = false;  // the property failed on a fault or exception, not on a compared value
  long cases = 0;      // cases the property ran up to its failure
  double seconds = 0;  // seconds the property ran up to its failure
  std::string counterexample;  // the shrunk case (file text, or the path when unreadable)
  std::string message;
  bool judges_values = false;  // the property judges values (not a contract or isolation one)
  /// A kill by a wrong value from a property that judges values.
  bool strict() const { return !error && judges_values; }
};

struct mutant {
  std::string id, bug_class, summary, mirrors, expected_killer;
  std::string file;       // repository path of the mutated source, e.g. kernels/src/reduce.cuh
  location where;         // the changed text in the original source
  std::string replacement;
  std::string needs_gpu;  // why the simt backend cannot expose it; empty if it can

  status result = status::survived;
  std::string reason;       // why this status: the first counterexample, the error, the timeout
  std::vector<kill> kills;  // every property that killed it, in suite order
  std::vector<std::string> covered_by;   // the properties that ran against it
  std::optional<long> cases_to_kill;     // suite cases run until the first kill
  std::optional<double> seconds_to_kill; // suite seconds until the first kill
  double seconds = 0;                    // wall time spent on this mutant

  bool strict_kill() const;
};

struct campaign {
  std::string backend;             // simt | cuda
  std::string kernel;              // the shipped plugin the baseline ran
  std::string machine;             // the machine it ran on (the baseline suite's machine line)
  std::string seed;
  long cases = 0;                  // --cases given to every run (0: the suite's default)
  std::vector<std::string> schedules;  // simt fiber schedules each mutant ran under
  bool first_kill = false;         // each mutant's suite stopped at its first killing property
  double baseline_seconds = 0;
  std::string started;             // ISO 8601 UTC
  std::vector<property> properties;
  std::vector<mutant> mutants;
  std::map<std::string, std::string> sources;  // repository path -> original text
};

struct score {
  int killed = 0, survived = 0, timeout = 0, runtime_error = 0, compile_error = 0, no_coverage = 0,
      ignored = 0, strict_killed = 0;
  int denominator() const { return killed + timeout + survived; }
  /// in percent; nullopt when no mutant counts
  std::optional<double> value() const;
  std::optional<double> strict_value() const;
};

score compute_score(const campaign& c);

json::value stryker(const campaign& c);
std::string markdown(const campaign& c);
/// elements_js: the text of mutation-testing-elements' dist/mutation-test-elements.js
std::string html(const campaign& c, const std::string& elements_js);

/// The location of the text that differs between search and replace, for a search text that
/// starts at byte offset in source; replacement receives the differing part of replace.
location changed_region(const std::string& source, std::size_t offset, const std::string& search,
                        const std::string& replace, std::string& replacement);

/// Writes mutation-report.json, mutation-report.md and, when elements_js names a readable file,
/// mutation-report.html into dir. Returns the paths written.
std::vector<std::filesystem::path> write_reports(const campaign& c, const std::filesystem::path& dir,
                                                 const std::filesystem::path& elements_js);

}  // namespace nc::reports
