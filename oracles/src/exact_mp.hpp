// The Boost.Multiprecision path of the exact oracle: upcast every input (exactly) into a Real of
// Digits decimal digits, compute the document's formulas, round to odd into double. Real is
// number<cpp_bin_float<Digits>> or number<mpfr_float_backend<Digits>>; nothing else changes.
// The fast path falls back on these row functions, so both paths give the same bits.
#pragma once

#include <boost/multiprecision/cpp_bin_float.hpp>
#include <boost/multiprecision/mpfr.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <vector>

#include "exact_common.hpp"
#include "normcheck/oracles/exact.hpp"

namespace nc::oracle::mp {

template <int Digits>
using bin_float = boost::multiprecision::number<boost::multiprecision::cpp_bin_float<Digits>,
                                                boost::multiprecision::et_off>;
template <int Digits>
using mpfr_float = boost::multiprecision::number<boost::multiprecision::mpfr_float_backend<Digits>,
                                                 boost::multiprecision::et_off>;

/// v rounded to odd into double: truncate to 53 bits, then set the last bit if anything was cut.
/// Rounding to odd at 53 bits and later to nearest at ≤ 51 bits equals rounding to nearest at
/// once (Boldo and Melquiond), so round_to(dtype, value) is never double-rounded.
template <class Real>
double to_double_odd(const Real& v) {
  using std::abs;
  if (boost::multiprecision::isnan(v)) return std::numeric_limits<double>::quiet_NaN();
  const bool negative = boost::multiprecision::signbit(v) != 0;
  if (boost::multiprecision::isinf(v)) return negative ? -HUGE_VAL : HUGE_VAL;
  if (v == 0) return negative ? -0.0 : 0.0;
  const Real magnitude = abs(v);
  int exponent = 0;
  frexp(magnitude, &exponent);  // magnitude = m·2^exponent, m in [1/2, 1)
  if (exponent > 1024) return negative ? -std::numeric_limits<double>::max() : std::numeric_limits<double>::max();
  // the quantum of double at this binade, coarser in double's subnormal range
  const int quantum = std::max(exponent - 53, -1074);
  const Real scaled = ldexp(magnitude, -quantum);  // below 2^53
  const Real whole = trunc(scaled);
  double d = whole.template convert_to<double>();  // an integer below 2^53: exact
  if (scaled != whole && std::fmod(d, 2.0) == 0) d += 1;
  const double out = std::ldexp(d, quantum);
  return negative ? -out : out;
}

/// a row's sum of squares, q = ss/N + ε and r = 1/sqrt(q), in Real
template <class Real>
struct forward_values {
  Real ss, q, r;
};

template <class Real>
forward_values<Real> forward_row(std::span<const Real> x, const Real& epsilon) {
  forward_values<Real> v;
  // ss = Σ x_j²
  v.ss = 0;
  for (const Real& xj : x) v.ss += xj * xj;
  // q = mean(x²) + ε: a mean over the row's N columns, never over a padded block
  v.q = v.ss / static_cast<double>(x.size()) + epsilon;
  // r = 1/sqrt(q); +Inf for a zero row with ε = 0
  v.r = v.q == 0 ? Real(std::numeric_limits<double>::infinity()) : Real(1 / sqrt(v.q));
  return v;
}

/// s = Σ u_j·x_j and c = s/N·r³ of a backward row, u_j = dy_j·γ_j
template <class Real>
struct backward_values {
  Real s, c;
};

/// the row's dx_j = r·u_j − x_j·c
template <class Real>
backward_values<Real> backward_row(std::span<const Real> x, std::span<const Real> gamma, std::span<const Real> dy,
                                   const Real& r, std::span<Real> dx) {
  backward_values<Real> v;
  // s = Σ u_j·x_j with u_j = dy_j·γ_j
  v.s = 0;
  for (std::size_t j = 0; j < x.size(); ++j) v.s += dy[j] * gamma[j] * x[j];
  // c = mean(u·x)·r³: the derivative of r = q^(−1/2) is −x_j·r³/N
  v.c = v.s / static_cast<double>(x.size()) * r * r * r;
  // dx_j = r·u_j − x_j·c: the direct path, minus the path through the shared r
  for (std::size_t j = 0; j < x.size(); ++j) dx[j] = r * (dy[j] * gamma[j]) - x[j] * v.c;
  return v;
}

/// the upcast of a row of doubles (exact: a Real holds every double)
template <class Real>
void upcast(std::int64_t n, const double* from, std::vector<Real>& to) {
  to.resize(static_cast<std::size_t>(n));
  for (std::int64_t j = 0; j < n; ++j) to[static_cast<std::size_t>(j)] = from[j];
}

/// the forward of one row with values, bounds and status: what exact_forward_mp writes and the
/// fast path's fallback
template <class Real>
void forward_row_result(const model::arithmetic& a, const model::output_rounding& out, std::int64_t n,
                        const double* x, const double* gamma, const model::extremes& gamma_range, float epsilon,
                        double* y, double* y_bound, double& r, double& r_bound, row_status& status) {
  const bool gamma_finite = gamma_range.max < model::infinity;
  const std::span<const double> row(x, static_cast<std::size_t>(n));
  if (!gamma_finite || !common::all_finite(row)) {
    common::ieee_forward_row(n, x, gamma, epsilon, y, r);
    std::fill(y_bound, y_bound + n, common::nan);
    r_bound = common::nan;
    status.reason = domain_reason::non_finite_input;
    return;
  }
  // upcast, compute r
  std::vector<Real> xs;
  upcast(n, x, xs);
  const forward_values<Real> v = forward_row<Real>(xs, Real(epsilon));
  if (v.q == 0) {
    common::ieee_forward_row(n, x, gamma, epsilon, y, r);
    std::fill(y_bound, y_bound + n, common::nan);
    r_bound = common::nan;
    status.reason = domain_reason::zero_row_without_epsilon;
    return;
  }
  // y_j = x_j·γ_j·r, then round to odd into double
  for (std::int64_t j = 0; j < n; ++j) y[j] = to_double_odd(Real(xs[static_cast<std::size_t>(j)] * Real(gamma[j]) * v.r));
  r = to_double_odd(v.r);
  // bounds from the exact values
  const model::forward_row bound = model::bound_forward_row(a, n, v.ss.template convert_to<double>(),
                                                            common::tiny_squares(a, n, x),
                                                            v.q.template convert_to<double>(), r);
  status.reason = common::finish_forward_row(a, out, bound, n, x, gamma, gamma_range, y, y_bound, r_bound);
}

template <class Real>
forward_result forward(const forward_problem& p) {
  common::check(p);
  const model::arithmetic a = common::arithmetic_of(p);
  const model::output_rounding out = model::output_rounding_of(a, p.y_type);
  const auto m = static_cast<std::size_t>(p.m);
  const auto n = static_cast<std::size_t>(p.n);
  forward_result result;
  result.y.resize(m * n);
  result.y_bound.resize(m * n);
  result.r.resize(m);
  result.r_bound.resize(m);
  result.rows.resize(m);
  if (m == 0) return result;
  std::vector<double> gamma(n);
  common::load_vector(p.gamma, p.n, gamma.data());
  const model::extremes gamma_range = model::extremes_of(p.n, gamma.data());
  std::vector<double> x(n);
  for (std::size_t i = 0; i < m; ++i) {
    common::load_row(p.x, static_cast<std::int64_t>(i), p.n, x.data());
    forward_row_result<Real>(a, out, p.n, x.data(), gamma.data(), gamma_range, p.epsilon, &result.y[i * n],
                             &result.y_bound[i * n], result.r[i], result.r_bound[i], result.rows[i]);
  }
  return result;
}

/// what a backward row leaves for its row's dgamma contributions
template <class Real>
struct row_for_columns {
  model::forward_row forward;  ///< the kernel model's r bound for the row
  bool exact_r = false;        ///< r is the exact, finite r and x is finite
  double r = 0;                ///< r rounded to odd (exact_r) or as IEEE arithmetic gives it
  Real r_exact;                ///< the Real r (exact_r)
};

/// r of a backward row in Real and double, with the kernel model's bound on the kernel's r̂
template <class Real>
row_for_columns<Real> backward_row_r(const model::arithmetic& a, std::int64_t n, const double* x, float epsilon,
                                     std::vector<Real>& xs) {
  row_for_columns<Real> row;
  if (!common::all_finite(std::span<const double>(x, static_cast<std::size_t>(n)))) {
    row.r = common::ieee_r(n, x, epsilon);
    row.forward.reason = domain_reason::non_finite_input;
    return row;
  }
  upcast(n, x, xs);
  const forward_values<Real> v = forward_row<Real>(xs, Real(epsilon));
  if (v.q == 0) {
    row.r = std::numeric_limits<double>::infinity();
    row.forward.reason = domain_reason::zero_row_without_epsilon;
    return row;
  }
  row.exact_r = true;
  row.r_exact = v.r;
  row.r = to_double_odd(v.r);
  row.forward = model::bound_forward_row(a, n, v.ss.template convert_to<double>(), common::tiny_squares(a, n, x),
                                         v.q.template convert_to<double>(), row.r);
  return row;
}

/// the dx of one backward row with bounds and status, given its r: what exact_backward_mp writes
/// and the fast path's fallback
template <class Real>
void dx_row_result(const model::arithmetic& a, const model::output_rounding& out, std::int64_t n, const double* x,
                   const double* gamma, const double* dy, bool gamma_finite, const row_for_columns<Real>& row,
                   const std::vector<Real>& xs, double* dx, double* dx_bound, row_status& status) {
  if (!row.exact_r || !gamma_finite || !common::all_finite(std::span<const double>(dy, static_cast<std::size_t>(n)))) {
    common::ieee_dx_row(n, x, gamma, dy, row.r, dx);
    std::fill(dx_bound, dx_bound + n, common::nan);
    status.reason = row.forward.reason != domain_reason::none ? row.forward.reason : domain_reason::non_finite_input;
    return;
  }
  // upcast, compute s, c and dx, round to odd
  std::vector<Real> gs, dys, dxs(static_cast<std::size_t>(n));
  upcast(n, gamma, gs);
  upcast(n, dy, dys);
  const backward_values<Real> v = backward_row<Real>(xs, gs, dys, row.r_exact, dxs);
  for (std::int64_t j = 0; j < n; ++j) dx[j] = to_double_odd(dxs[static_cast<std::size_t>(j)]);
  // bounds from the exact values and the row's shadows
  std::vector<double> u(static_cast<std::size_t>(n));
  for (std::int64_t j = 0; j < n; ++j) u[static_cast<std::size_t>(j)] = dy[j] * gamma[j];
  const common::backward_shadows shadows = common::shadows_of(a, n, x, u.data(), row.forward.r_lo);
  const model::backward_row bound =
      model::bound_backward_row(a, n, row.forward, v.s.template convert_to<double>(), shadows.s_abs,
                                shadows.tiny_u_x, shadows.tiny_xr_u, v.c.template convert_to<double>());
  common::finish_backward_row(a, out, bound, n, x, model::extremes_of(n, x), u.data(), dx, dx_bound, status);
}

template <class Real>
backward_result backward(const backward_problem& p) {
  common::check(p);
  const model::arithmetic a = common::arithmetic_of(p);
  const model::output_rounding out_dx = model::output_rounding_of(a, p.dx_type);
  const model::output_rounding out_dgamma = model::output_rounding_of(a, p.dgamma_type);
  const auto m = static_cast<std::size_t>(p.m);
  const auto n = static_cast<std::size_t>(p.n);
  backward_result result;
  result.dx.resize(m * n);
  result.dx_bound.resize(m * n);
  result.dgamma.assign(n, 0.0);
  result.dgamma_bound.assign(n, 0.0);
  result.rows.resize(m);
  result.columns.resize(n);
  if (m == 0) return result;  // dgamma = 0 exactly: the kernel must write zeros
  std::vector<double> gamma(n), x(n), dy(n);
  common::load_vector(p.gamma, p.n, gamma.data());
  const bool gamma_finite = common::all_finite(gamma);
  common::dgamma_columns columns(p.n);
  std::vector<Real> sums(n, Real(0));
  std::vector<Real> xs;
  for (std::size_t i = 0; i < m; ++i) {
    common::load_row(p.x, static_cast<std::int64_t>(i), p.n, x.data());
    common::load_row(p.dy, static_cast<std::int64_t>(i), p.n, dy.data());
    const row_for_columns<Real> row = backward_row_r<Real>(a, p.n, x.data(), p.epsilon, xs);
    dx_row_result<Real>(a, out_dx, p.n, x.data(), gamma.data(), dy.data(), gamma_finite, row, xs, &result.dx[i * n],
                        &result.dx_bound[i * n], result.rows[i]);
    // dgamma_j += dy_ij·x_ij·r_i: a sum over rows, never a mean
    common::add_row_to_columns(a, row.forward, row.exact_r, row.r, p.n, x.data(), model::extremes_of(p.n, x.data()),
                               dy.data(), columns);
    for (std::size_t j = 0; j < n; ++j)
      if (common::exact_term(row.exact_r, dy[j])) sums[j] += Real(dy[j]) * xs[j] * row.r_exact;
  }
  for (std::size_t j = 0; j < n; ++j) result.dgamma[j] = to_double_odd(sums[j]);
  common::finish_dgamma(a, out_dgamma, p.m, columns, result.dgamma, result.dgamma_bound, result.columns);
  return result;
}

}  // namespace nc::oracle::mp
