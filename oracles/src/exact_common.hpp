// What the fast and the Boost paths of the exact oracle share: argument checks, row loading,
// the IEEE rows (non-finite inputs), and turning a row's exact values into bounds and a status.
// Both paths call the same functions here, so their bounds and statuses agree by construction.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "half_bits.hpp"
#include "kernel_model.hpp"
#include "normcheck/oracles/problem.hpp"

namespace nc::oracle::common {

inline constexpr double nan = std::numeric_limits<double>::quiet_NaN();

/// throws std::invalid_argument naming the argument and the rule broken
void check(const forward_problem& p);
void check(const backward_problem& p);

/// the arithmetic an fp32 kernel would use, fp64 when any operand is f64
model::arithmetic arithmetic_of(const forward_problem& p);
model::arithmetic arithmetic_of(const backward_problem& p);

/// count elements of typed memory starting at index first, stride apart, decoded exactly into out
inline void load_strided(const void* data, dtype type, std::int64_t first, std::int64_t stride, std::int64_t count,
                         double* out) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  switch (type) {
    case dtype::f32:
      for (std::int64_t j = 0; j < count; ++j) {
        float v;
        std::memcpy(&v, bytes + (first + j * stride) * 4, sizeof v);
        out[j] = v;
      }
      return;
    case dtype::f16:
      for (std::int64_t j = 0; j < count; ++j) {
        std::uint16_t v;
        std::memcpy(&v, bytes + (first + j * stride) * 2, sizeof v);
        out[j] = bits::f16_to_double(v);
      }
      return;
    case dtype::bf16:
      for (std::int64_t j = 0; j < count; ++j) {
        std::uint16_t v;
        std::memcpy(&v, bytes + (first + j * stride) * 2, sizeof v);
        out[j] = bits::bf16_to_double(v);
      }
      return;
    case dtype::f64:
      for (std::int64_t j = 0; j < count; ++j) std::memcpy(&out[j], bytes + (first + j * stride) * 8, sizeof(double));
      return;
  }
}

inline void load_row(const matrix_view& v, std::int64_t i, std::int64_t n, double* out) {
  load_strided(v.data, v.type, v.offset + i * v.row_stride, v.col_stride, n, out);
}

inline void load_vector(const vector_view& v, std::int64_t n, double* out) {
  load_strided(v.data, v.type, v.offset, v.stride, n, out);
}

inline bool all_finite(std::span<const double> values) {
  for (double v : values)
    if (!std::isfinite(v)) return false;
  return true;
}

/// the IEEE double evaluation of the forward for a row outside the domain because of a non-finite
/// input or an infinite r: y = x·r·γ with r = 1/sqrt(Σx²/N + ε), NaN wherever the math has no value
void ieee_forward_row(std::int64_t n, const double* x, const double* gamma, double epsilon, double* y, double& r);

/// r of such a row, as IEEE double arithmetic gives it
double ieee_r(std::int64_t n, const double* x, double epsilon);

/// dx of such a row in IEEE double arithmetic, from its r
void ieee_dx_row(std::int64_t n, const double* x, const double* gamma, const double* dy, double r, double* dx);

/// count of x_j with 0 < x_j² below the arithmetic's smallest normal
inline std::int64_t tiny_squares(const model::arithmetic& a, std::int64_t n, const double* x) {
  std::int64_t count = 0;
  for (std::int64_t j = 0; j < n; ++j) count += (x[j] != 0 && x[j] * x[j] < a.tiny) ? 1 : 0;
  return count;
}

/// a row's y bounds from its exact values (gamma_range: γ's extremes); r_bound too; returns the
/// row's status (NaN bounds outside the domain)
domain_reason finish_forward_row(const model::arithmetic& a, const model::output_rounding& out,
                                 const model::forward_row& row, std::int64_t n, const double* x, const double* gamma,
                                 const model::extremes& gamma_range, const double* y, double* y_bound,
                                 double& r_bound);

/// the shadows of a backward row: s_abs = Σ|u_j·x_j|, tiny_u_x = Σ{|x_j| : 0 < |u_j| < tiny} and
/// tiny_xr_u = Σ{|u_j| : 0 < |x_j|·r_lo < tiny} (r_lo: the row's lower bound on r̂), u_j = dy_j·γ_j
struct backward_shadows {
  double s_abs = 0;
  double tiny_u_x = 0;
  double tiny_xr_u = 0;
};
backward_shadows shadows_of(const model::arithmetic& a, std::int64_t n, const double* x, const double* u, double r_lo);

/// a row's dx bounds from its exact values (u_j = dy_j·γ_j, x_range: x's extremes); writes the
/// row's status: its domain reason and, in the domain, the order hazard with the row's r
void finish_backward_row(const model::arithmetic& a, const model::output_rounding& out, const model::backward_row& row,
                         std::int64_t n, const double* x, const model::extremes& x_range, const double* u,
                         const double* dx, double* dx_bound, row_status& status);

/// the dgamma columns' running state shared by both paths: the bound sums, and the IEEE sum of
/// contributions that are not finite (their column takes that value)
struct dgamma_columns {
  std::vector<model::column_sums> sums;
  std::vector<double> special;

  explicit dgamma_columns(std::int64_t n) : sums(static_cast<std::size_t>(n)), special(static_cast<std::size_t>(n), 0.0) {}
};

/// whether the contribution dy·x·r of one element is summed exactly: the row's r must be the
/// exact, finite r (its x finite) and dy finite; otherwise it is taken in IEEE double
inline bool exact_term(bool exact_r, double dy) { return exact_r && std::isfinite(dy); }

/// row i's part in each column's bounds and IEEE sums (the exact sums are each path's own)
void add_row_to_columns(const model::arithmetic& a, const model::forward_row& forward, bool exact_r, double r,
                        std::int64_t n, const double* x, const model::extremes& x_range, const double* dy,
                        dgamma_columns& columns);

/// the dgamma bounds and statuses from the columns' sums and the exact values; columns with a
/// special (non-finite) sum take it as their value
void finish_dgamma(const model::arithmetic& a, const model::output_rounding& out, std::int64_t m,
                   const dgamma_columns& columns, std::vector<double>& dgamma, std::vector<double>& dgamma_bound,
                   std::vector<row_status>& status);

}  // namespace nc::oracle::common
