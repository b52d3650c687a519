// The comparator: both verdicts per element, and a summary.
#include "normcheck/oracles/compare.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nc::oracle {
namespace {

constexpr double infinity = std::numeric_limits<double>::infinity();

/// collects the verdicts of one output
class summary {
 public:
  summary(const tolerance& tol, const compare_options& options) : tol_(tol), options_(options) {}

  void skip() { ++result_.skipped; }

  void add(std::int64_t row, std::int64_t col, double got, double oracle, double bound, const row_status* status = nullptr) {
    const element_verdict v = judge(got, oracle, bound, tol_);
    ++result_.compared;
    units_.push_back(static_cast<float>(v.bound_units));
    result_.max_bound_units = std::max(result_.max_bound_units, v.bound_units);
    if (std::isfinite(v.error)) result_.max_abs_error = std::max(result_.max_abs_error, v.error);
    result_.table_failures += v.table_ok ? 0 : 1;
    result_.achievable_table_failures += v.table_ok || !v.table_achievable ? 0 : 1;
    result_.bound_failures += v.bound_ok ? 0 : 1;
    if ((!v.table_ok || !v.bound_ok) && result_.mismatches.size() < options_.max_mismatches)
      result_.mismatches.push_back({row, col, oracle, got, v.error, bound, !v.table_ok, v.table_achievable, !v.bound_ok,
                                    status && !v.bound_ok ? describe(status->hazard, status->r) : std::string()});
  }

  comparison finish() {
    if (!units_.empty()) {
      // the 99th percentile: the smallest value at or above 99% of the elements
      const auto k = static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(units_.size()))) - 1;
      std::nth_element(units_.begin(), units_.begin() + static_cast<std::ptrdiff_t>(k), units_.end());
      result_.p99_bound_units = units_[k];
    }
    return result_;
  }

 private:
  tolerance tol_;
  compare_options options_;
  comparison result_;
  std::vector<float> units_;
};

}  // namespace

tolerance fixed_tolerance(dtype type) {
  switch (type) {
    case dtype::f32: return {1e-5, 1e-4, "the document's fp32 row, fixed in advance"};
    case dtype::f16: return {3e-3, 3e-3, "the document's fp16 row, fixed in advance"};
    case dtype::bf16:
      return {1.6e-2, 1.6e-2,
              "normcheck's addition: bf16 keeps 8 significant bits (u = 2^-8), so about four of its roundings"};
    case dtype::f64: return {1e-12, 1e-12, "double outputs come only from oracles: their cross-oracle agreement"};
  }
  return {0, 0, "?"};
}

element_verdict judge(double got, double oracle, double bound, const tolerance& tol) {
  element_verdict v;
  // NaN matches only NaN; ±Inf only the same Inf
  if (std::isnan(oracle) || std::isnan(got) || std::isinf(oracle) || std::isinf(got)) {
    const bool match = (std::isnan(oracle) && std::isnan(got)) || (!std::isnan(oracle) && oracle == got);
    v.table_ok = v.bound_ok = match;
    v.error = match ? 0 : infinity;
    v.bound_units = match ? 0 : infinity;
    return v;
  }
  // finite: −0 and +0 differ by exactly 0
  v.error = std::fabs(got - oracle);
  const double tolerance = tol.atol + tol.rtol * std::fabs(oracle);
  v.table_ok = v.error <= tolerance;
  v.table_achievable = bound <= tolerance;
  if (bound > 0) {
    v.bound_units = v.error / bound;
  } else {
    // a zero bound (an exact result) admits only an exact answer; a missing (NaN) bound none
    v.bound_units = v.error == 0 && bound == 0 ? 0 : infinity;
  }
  v.bound_ok = v.bound_units <= 1;
  return v;
}

comparison compare(const matrix_view& got, std::int64_t m, std::int64_t n, std::span<const double> oracle,
                   std::span<const double> bound, std::span<const row_status> rows, const compare_options& options) {
  summary s(fixed_tolerance(got.type), options);
  for (std::int64_t i = 0; i < m; ++i) {
    const bool in_domain = rows.empty() || rows[static_cast<std::size_t>(i)].in_domain();
    for (std::int64_t j = 0; j < n; ++j) {
      if (!in_domain) {
        s.skip();
        continue;
      }
      const auto k = static_cast<std::size_t>(i * n + j);
      s.add(i, j, got.at(i, j), oracle[k], bound[k], rows.empty() ? nullptr : &rows[static_cast<std::size_t>(i)]);
    }
  }
  return s.finish();
}

comparison compare(const vector_view& got, std::int64_t count, std::span<const double> oracle,
                   std::span<const double> bound, std::span<const row_status> status, const compare_options& options) {
  summary s(fixed_tolerance(got.type), options);
  for (std::int64_t k = 0; k < count; ++k) {
    const auto index = static_cast<std::size_t>(k);
    if (!status.empty() && !status[index].in_domain()) {
      s.skip();
      continue;
    }
    s.add(k, 0, got.at(k), oracle[index], bound[index]);
  }
  return s.finish();
}

}  // namespace nc::oracle
