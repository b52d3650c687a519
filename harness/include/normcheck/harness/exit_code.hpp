// normcheck's exit statuses, one list for every verb (the README's "Exit codes"). 64 and 70 are
// sysexits.h's EX_USAGE and EX_SOFTWARE; 77 is what CTest's SKIP_RETURN_CODE and automake read
// as "skipped". Header-only, so the mutation runner and the benchmark can return them too.
#pragma once

#include <stdexcept>

namespace nc {

enum exit_code : int {
  exit_pass = 0,             ///< every property passed (every mutant killed, every row timed)
  exit_property_failed = 1,  ///< a property failed (a kernel call broke it, or nothing was exercised)
  exit_mutant_survived = 2,  ///< the mutation campaign: a seeded mutant survived
  exit_usage = 64,           ///< the command line or an environment variable is wrong
  exit_harness_error = 70,   ///< the harness could not do its job (a plugin that does not load, ...)
  exit_skipped = 77,         ///< nothing could run here (no device for the backend, no cuda build)
};

/// "0 pass, 1 property failure, 2 survived mutant, 64 usage error, 70 harness error, 77 skipped"
inline constexpr const char* exit_codes_text =
    "0 pass, 1 property failure, 2 survived mutant, 64 usage error, 70 harness error, 77 skipped (no device)";

/// the command line or an environment variable is wrong (exit 64); what() names the argument
/// and the rule ("" asks for the usage text alone)
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// nothing can run here: the backend asked for is not in this build (exit 77)
struct skipped_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace nc
