// Campaigns: running properties on a kernel through RapidCheck (its generators, its shrinking,
// its reproduce strings), counting the distribution of the cases, and turning a failure into a
// one-line reproduction and a case file. The gtest suite and the CLI both call run_property.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "normcheck/harness/property.hpp"
#include "normcheck/kernel.hpp"

namespace nc::harness {

/// where a running property stands, for progress displays
struct progress {
  const property* p;
  std::int64_t cases_done;
  std::int64_t cases_planned;
  std::int64_t shrinks;  ///< shrink steps accepted so far (after a failure)
  double seconds;
};

/// NORMCHECK_SHRINK_SECONDS (default 30); throws std::invalid_argument for a value that is not
/// a number >= 0
double shrink_seconds_from_environment();

struct campaign_options {
  std::uint64_t seed = 0;
  double scale = 1.0;        ///< multiplies every property's case count (NORMCHECK_CASE_SCALE)
  std::int64_t cases = 0;    ///< when > 0, every property runs this many cases instead
  std::string case_dir;      ///< where a failing case is written
  std::string machine;       ///< the machine line a failing case file records (worker.hpp machine_line)
  /// when set, every case has this ε (--epsilon: a kernel with ε built in); it must be one the
  /// kernel declares (check with domain_of)
  std::optional<float> epsilon;
  /// when set, every case's operation is of this variant (--variant NAME, normcheck/variant.hpp):
  /// the kernel must declare one (check with domain_of); properties of the plain operator only
  /// are then not exercised
  std::string variant;
  /// seconds of shrinking after a property's first failure (NORMCHECK_SHRINK_SECONDS; 0: no
  /// limit); then the smallest failing case found so far is the counterexample
  double shrink_seconds = 30;
  std::function<void(const progress&)> on_progress;  ///< called after every case and shrink step
  /// called with every case right before it is checked (the isolated worker records the case in
  /// flight with it, for a crash or a hang inside the call)
  std::function<void(const norm_case&)> on_case;
};

/// one class of a distribution dimension
struct class_share {
  std::string dimension, cls;
  std::int64_t count = 0;
  double share = 0;
  double min_share = 0;  ///< 0: not an intended class
  /// reached_within_chance: under the minimum, by less than the binomial test can tell from chance
  enum class verdict { reported, reached, below, too_few_cases, reached_within_chance } judged = verdict::reported;
};

struct property_result {
  std::string name;
  property_family family = property_family::differential;  ///< the property's (property.hpp)
  std::int64_t cases = 0;        ///< cases that passed
  std::int64_t planned = 0;
  double seconds = 0;
  double max_error_in_bounds = 0;
  std::int64_t fixed_table_misses = 0;  ///< elements outside the fixed table where it only reports
  std::vector<class_share> distribution;

  bool failed = false;            ///< a case broke the property
  bool distribution_short = false;///< an intended class fell below its minimum share
  std::string failure;            ///< the failing case's message (summary and first mismatches)
  std::string counterexample;     ///< the shrunk case as RapidCheck shows it
  std::string reproduce;          ///< RC_PARAMS="…" that replays the shrunk case
  std::string case_file;          ///< the case file written for it
  std::string case_file_error;    ///< why the case file could not be written (empty: it was, or none was due)
  std::string unsaved_case;       ///< then the case file's text, so the counterexample is not lost
  std::int64_t shrinks = 0;
  std::string skipped;            ///< why the property did not run on this kernel (empty: it ran)

  /// a property that ran no case is never a pass (a skipped one is neither pass nor failure)
  bool passed() const { return !failed && !distribution_short && (cases > 0 || !skipped.empty()); }
};

/// the capabilities a campaign draws inside: the kernel's, with ε pinned by options.epsilon;
/// throws std::invalid_argument when the kernel does not take that ε
capabilities domain_of(const kernel& k, const campaign_options& options);

/// why a property does not run on a kernel (it needs device memory, or something the domain
/// cannot serve: property::needs); empty when it runs
std::string skip_reason(const property& p, const kernel& k, const campaign_options& options);

/// the variants a kernel declares (normcheck/variant.hpp), in the vocabulary's order
std::vector<std::string> declared_variants(const kernel& k);

/// ctest's property suite as the CMake script ctest includes (add_test and its properties):
/// property_BACKEND.NAME for every property of the registry on each backend (the device-only
/// ones on a device's backend only; labels `property`, `variant` for the variants' families,
/// `gpu` off simt), and variant_BACKEND.VARIANT.NAME for each variant the shipped kernel
/// declares through the differential properties that draw it. binary: the property test program
std::string ctest_script(const std::string& binary, const std::vector<std::string>& backends, const kernel& shipped);

/// runs one property on a kernel, drawing inside domain_of(k, options); a property the
/// domain cannot serve (property::needs) is skipped with the reason
property_result run_property(const property& p, const kernel& k, const campaign_options& options);

/// P(X <= count) for X ~ Binomial(cases, share): a class whose count this improbable under its
/// minimum share (below 1e-4) is judged below it; when even a count of 0 is not that
/// improbable, the class is "too few cases to judge"
double binomial_lower_tail(std::int64_t count, std::int64_t cases, double share);
constexpr double share_test_level = 1e-4;

/// cases a property runs under these options
std::int64_t planned_cases(const property& p, const campaign_options& options);

/// NORMCHECK_CASE_SCALE (default 1.0); throws std::invalid_argument for a value that is not a
/// positive number
double case_scale_from_environment();
/// NORMCHECK_EPSILON if set (--epsilon wins); throws std::invalid_argument for a value that is
/// not a finite number >= 0
std::optional<float> epsilon_from_environment();
/// NORMCHECK_VARIANT, or "" when unset (std::invalid_argument for a name that is no variant)
std::string variant_from_environment();
/// NORMCHECK_SEED if set, else a fresh random seed
std::uint64_t seed_from_environment();

/// the distribution as a table: dimension, class, cases, share, minimum, verdict
std::string format_distribution(const property_result& r);

/// the kernel a backend name selects: "simt", "cuda", or "auto" (cuda when its plugin loads
/// and a device is present, else simt); why_not says why cuda was not taken under auto
kernel select_backend(const std::string& backend, std::string* why_not = nullptr);

}  // namespace nc::harness
