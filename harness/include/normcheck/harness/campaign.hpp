// Campaigns: running properties on a kernel through RapidCheck (its generators, its shrinking,
// its reproduce strings), counting the distribution of the cases, and turning a failure into a
// one-line reproduction and a case file. The gtest suite and the CLI both call run_property.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
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
  /// seconds of shrinking after a property's first failure (NORMCHECK_SHRINK_SECONDS; 0: no
  /// limit); then the smallest failing case found so far is the counterexample
  double shrink_seconds = 30;
  std::function<void(const progress&)> on_progress;  ///< called after every case and shrink step
};

/// one class of a distribution dimension
struct class_share {
  std::string dimension, cls;
  std::int64_t count = 0;
  double share = 0;
  double min_share = 0;  ///< 0: not an intended class
  enum class verdict { reported, reached, below, too_few_cases } judged = verdict::reported;
};

struct property_result {
  std::string name;
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
  std::int64_t shrinks = 0;
  std::string skipped;            ///< why the property did not run on this kernel (empty: it ran)

  bool passed() const { return !failed && !distribution_short; }
};

/// runs one property on a kernel
property_result run_property(const property& p, const kernel& k, const campaign_options& options);

/// cases a property runs under these options
std::int64_t planned_cases(const property& p, const campaign_options& options);

/// NORMCHECK_CASE_SCALE (default 1.0); throws std::invalid_argument for a value that is not a
/// positive number
double case_scale_from_environment();
/// NORMCHECK_SEED if set, else a fresh random seed
std::uint64_t seed_from_environment();

/// the distribution as a table: dimension, class, cases, share, minimum, verdict
std::string format_distribution(const property_result& r);

/// the kernel a backend name selects: "simt", "cuda", or "auto" (cuda when its plugin loads
/// and a device is present, else simt); why_not says why cuda was not taken under auto
kernel select_backend(const std::string& backend, std::string* why_not = nullptr);

}  // namespace nc::harness
