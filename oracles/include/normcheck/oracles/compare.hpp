// Comparing a kernel's output with the exact oracle: both verdicts of DESIGN.md per element.
//
//   1. the document's fixed table: |got − ref| ≤ atol + rtol·|ref|, published in advance;
//   2. the error in units of the oracle's per-element bound: |got − ref| / bound ≤ 1.
//
// Special values: NaN matches only NaN (in the same position); ±Inf matches only the same Inf;
// −0 and +0 match, since they are equal numbers and no bound can tell them apart. Subnormals
// are ordinary numbers: decoding is exact and the bounds carry absolute (η) terms for them.
// Elements whose row (or column) is out of the domain are skipped and counted.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "normcheck/oracles/problem.hpp"

namespace nc::oracle {

/// one row of the fixed tolerance table
struct tolerance {
  double atol;
  double rtol;
  std::string_view reason;
};

/// the fixed table, keyed by the output's dtype
tolerance fixed_tolerance(dtype type);

/// the verdicts on one element
struct element_verdict {
  bool table_ok = true;
  bool bound_ok = true;
  /// the bound fits inside the table's tolerance, so every correct kernel meets the table here;
  /// where it does not (a sum that cancels, r's own 2 ulp), a correct kernel may miss the table
  bool table_achievable = true;
  double error = 0;        ///< |got − oracle|; +Inf when special values do not match
  double bound_units = 0;  ///< error / bound; 0 for matching specials, +Inf when the bound is 0 or missing and the error is not 0
};

/// judges one element against the oracle's value and bound under tol
element_verdict judge(double got, double oracle, double bound, const tolerance& tol);

/// one failing element
struct mismatch {
  std::int64_t row = 0;
  std::int64_t col = 0;  ///< 0 for vector outputs
  double oracle = 0;
  double got = 0;
  double error = 0;
  double bound = 0;
  bool table_failed = false;
  bool table_achievable = true;  ///< element_verdict::table_achievable
  bool bound_failed = false;
  /// why a correct-looking result can still be a kernel defect: the row's order_hazard
  /// sentence (describe), empty when the row has none
  std::string note;
};

/// the summary of one output's comparison
struct comparison {
  std::int64_t compared = 0;        ///< elements judged
  std::int64_t skipped = 0;         ///< elements out of the domain, not judged
  std::int64_t table_failures = 0;  ///< verdict 1 failures
  std::int64_t achievable_table_failures = 0;  ///< those where the table was achievable: a defect when the table binds
  std::int64_t bound_failures = 0;  ///< verdict 2 failures
  double max_bound_units = 0;
  double p99_bound_units = 0;
  double max_abs_error = 0;         ///< over finite errors
  std::vector<mismatch> mismatches; ///< the first few failing elements, in memory order

  bool passed() const { return table_failures == 0 && bound_failures == 0; }
};

struct compare_options {
  std::size_t max_mismatches = 16;
};

/// an M×N output (y or dx) as caller memory, against row-major oracle values and bounds; rows
/// out of the domain are skipped
comparison compare(const matrix_view& got, std::int64_t m, std::int64_t n, std::span<const double> oracle,
                   std::span<const double> bound, std::span<const row_status> rows, const compare_options& options = {});

/// a vector output (r: one entry per row; dgamma: one per column), status per entry
comparison compare(const vector_view& got, std::int64_t count, std::span<const double> oracle,
                   std::span<const double> bound, std::span<const row_status> status,
                   const compare_options& options = {});

}  // namespace nc::oracle
