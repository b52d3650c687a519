// The verdicts of one case: every output a property judges (against the exact oracle, its
// quantization, bit for bit or within a bound) adds to one accumulator, which records the
// case's numbers in its observation and fails the case with the first mismatching elements.
// Every property's check uses it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "normcheck/harness/execute.hpp"
#include "normcheck/harness/failure.hpp"
#include "normcheck/harness/judge.hpp"
#include "normcheck/harness/property.hpp"
#include "normcheck/oracles/compare.hpp"
#include "normcheck/oracles/quantized.hpp"

namespace nc::harness {

class verdicts {
 public:
  /// table_binding: the document's fixed table fails the case too (else it only reports)
  explicit verdicts(bool table_binding = false) : table_binding_(table_binding) {}

  /// rows × cols kernel bits against the oracle (the comparator of oracles/compare.hpp)
  void oracle_matrix(const char* output, nc_dtype type, const std::vector<std::uint32_t>& got, std::int64_t rows,
                     std::int64_t cols, const std::vector<double>& exact, const std::vector<double>& bound,
                     const std::vector<oracle::row_status>& status) {
    const auto bytes = typed(type, got);
    add(output, oracle::compare(oracle::matrix_view{bytes.data(), oracle_type(type), 0, cols, 1}, rows, cols, exact,
                                bound, status),
        false);
  }

  /// a vector output (r per row, dgamma per column)
  void oracle_vector(const char* output, nc_dtype type, const std::vector<std::uint32_t>& got,
                     const std::vector<double>& exact, const std::vector<double>& bound,
                     const std::vector<oracle::row_status>& status, bool by_column) {
    const auto bytes = typed(type, got);
    add(output,
        oracle::compare(oracle::vector_view{bytes.data(), oracle_type(type), 0, 1}, std::int64_t(got.size()), exact,
                        bound, status),
        by_column);
  }

  /// a quantized output: its codes (as y) and its dynamic scales against the exact quantization
  void quantized(const oracle::quantized_verdict& q) {
    add("y", q.codes, false);
    add("scale", q.scales, false);
  }

  /// element e of got must have the bits of element e of expected (row-major, cols a row)
  void same_bits(const char* output, nc_dtype type, const std::vector<std::uint32_t>& got,
                 const std::vector<std::uint32_t>& expected, std::int64_t cols) {
    for (std::size_t e = 0; e < got.size(); ++e)
      if (got[e] != expected[e])
        fail_element({output, std::int64_t(e) / cols, std::int64_t(e) % cols, value_of(type, expected[e]),
                      value_of(type, got[e]), 0});
  }

  /// element e of got must be the bits of value e of expected rounded to type (row-major, cols a
  /// row); a NaN value matches any NaN
  void exact_values(const char* output, nc_dtype type, const std::vector<std::uint32_t>& got,
                    const std::vector<double>& expected, std::int64_t cols) {
    for (std::size_t e = 0; e < got.size(); ++e) {
      const double want = expected[e], have = value_of(type, got[e]);
      if (std::isnan(want) ? !std::isnan(have) : got[e] != bits_of(type, want))
        fail_element({output, std::int64_t(e) / cols, std::int64_t(e) % cols, want, have, 0});
    }
  }

  /// |got - expected| <= bound; NaN matches only NaN and an Inf only the same Inf (a NaN
  /// bound never holds)
  void within(const char* output, std::int64_t row, std::int64_t col, double got, double expected, double bound) {
    if (std::isnan(got) || std::isnan(expected) || std::isinf(got) || std::isinf(expected)) {
      const bool same = (std::isnan(got) && std::isnan(expected)) || got == expected;
      if (!same) fail_element({output, row, col, expected, got, bound});
      return;
    }
    const double error = std::fabs(got - expected);
    if (bound > 0 && std::isfinite(bound)) max_units_ = std::max(max_units_, error / bound);
    if (!(error <= bound)) fail_element({output, row, col, expected, got, bound});
  }

  /// a failure that is not about an element
  void fail(const std::string& why) {
    if (!other_.empty()) other_ += "; ";
    other_ += why;
  }

  /// records the case's numbers and throws property_failure if anything failed
  void finish(observation& o, const std::string& claim) const {
    o.max_error_in_bounds = std::max(o.max_error_in_bounds, max_units_);
    o.fixed_table_misses += table_misses_;
    std::ostringstream summary;
    summary << claim << ": ";
    bool failed = false;
    if (failures_ > 0) {
      summary << failures_ << " element(s) of " << failed_outputs_ << " wrong";
      failed = true;
    }
    if (table_binding_ && binding_misses_ > 0) {
      summary << (failed ? ", " : "") << binding_misses_ << " element(s) outside the document's fixed atol/rtol";
      failed = true;
    }
    if (!other_.empty()) {
      summary << (failed ? "; " : "") << other_;
      failed = true;
    }
    if (failed) throw property_failure(summary.str(), first_);
  }

 private:
  void add(const char* output, const oracle::comparison& cmp, bool by_column) {
    max_units_ = std::max(max_units_, cmp.max_bound_units);
    table_misses_ += cmp.table_failures;
    // the table binds where every correct kernel meets it (its bound fits inside the tolerance)
    binding_misses_ += cmp.achievable_table_failures;
    failures_ += cmp.bound_failures;
    if (cmp.bound_failures > 0) name_output(output);
    for (const oracle::mismatch& m : cmp.mismatches) {
      if (m.bound_failed || (table_binding_ && m.table_failed && m.table_achievable))
        keep({output, by_column ? 0 : m.row, by_column ? m.row : m.col, m.oracle, m.got, m.bound});
      // an element of a row where some evaluation order overflows: say so once, with the element
      if (!m.note.empty() && other_.find(m.note) == std::string::npos) {
        std::ostringstream element;
        element << output << "[" << m.row << "," << m.col << "] = " << m.got << " (exact " << m.oracle << "): " << m.note;
        fail(element.str());
      }
    }
  }

  void fail_element(mismatch m) {
    ++failures_;
    name_output(m.output);
    keep(std::move(m));
  }

  void name_output(const std::string& output) {
    if (failed_outputs_.find(output) == std::string::npos)
      failed_outputs_ += (failed_outputs_.empty() ? "" : ", ") + output;
  }

  void keep(mismatch m) {
    if (first_.size() < kept_mismatches) first_.push_back(std::move(m));
  }

  bool table_binding_;
  std::int64_t failures_ = 0, table_misses_ = 0, binding_misses_ = 0;
  double max_units_ = 0;
  std::string failed_outputs_, other_;
  std::vector<mismatch> first_;
};

/// a forward call's outputs against the exact oracle: y (a quantized output's codes and scales),
/// residual_out bit for bit where the operation adds a residual, r where the kernel writes one;
/// the oracle's result, for the caller's tags
inline oracle::variant_forward_result judge_forward(verdicts& v, const norm_case& c, const capabilities& caps,
                                                    const outputs& out) {
  oracle::variant_forward_result variant = exact_variant_forward_of(c, caps);
  const auto& exact = variant.plain;
  if (quantizes(c.op)) v.quantized(judge_quantized_of(c, caps, out.y, out.scale));
  else v.oracle_matrix("y", c.x_dtype, out.y, c.m, c.n, exact.y, exact.y_bound, exact.rows);
  // residual_out is h rounded to x's dtype: bit-exact (a NaN h matches any NaN)
  if (adds_residual(c.op)) v.exact_values("residual_out", c.x_dtype, out.residual_out, variant.residual_out, c.n);
  if (caps.writes_r()) v.oracle_vector("r", NC_F32, out.r, exact.r, exact.r_bound, exact.rows, false);
  return variant;
}

/// a backward call's dx and dgamma against the exact oracle; the oracle's result
inline oracle::backward_result judge_backward(verdicts& v, const norm_case& c, const capabilities& caps,
                                              const outputs& out) {
  oracle::backward_result exact = exact_backward_of(c, c.dy, caps);
  v.oracle_matrix("dx", c.x_dtype, out.dx, c.m, c.n, exact.dx, exact.dx_bound, exact.rows);
  v.oracle_vector("dgamma", c.gamma_dtype, out.dgamma, exact.dgamma, exact.dgamma_bound, exact.columns, true);
  return exact;
}

}  // namespace nc::harness
