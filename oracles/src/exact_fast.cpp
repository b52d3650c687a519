// The fast path of the exact oracle: double-double arithmetic with certified rounding.
//
// Inputs are fp32/fp16/bf16, so x², x·γ, dy·γ and dy·x are exact doubles (at most 48 bits) and
// u·x an exact double-word. Sums are blocked Sum2 (double-double), r is one Newton step, and every
// result carries a rigorous bound on its distance to the exact value (double_double.hpp). A
// result is written only when that bound proves its round-to-odd into double; a row (or a
// dgamma column) with an uncertain result is recomputed by the 50-digit Boost path's own row
// function, so both paths give the same bits. Bounds and statuses come from the same code as
// the Boost path's (exact_common, kernel_model).
#include <algorithm>
#include <cmath>
#include <vector>

#include "double_double.hpp"
#include "exact_common.hpp"
#include "exact_mp.hpp"
#include "normcheck/oracles/exact.hpp"

namespace nc::oracle {
namespace {

using fallback_real = mp::bin_float<50>;

/// elements per Sum2 block: γ_128² of double is about 2^-92
constexpr std::int64_t block = 64;
/// slack on the certification bounds for their own double arithmetic
constexpr double certify_margin = 1 + 0x1p-20;

std::int64_t blocks_of(std::int64_t count) { return (count + block - 1) / block; }

/// Σ x_j² in double-double (squares are exact), its relative error, and the count of squares below fp32's normal range
struct square_sum {
  dd::number value;
  double relative_error = 0;
  std::int64_t tiny = 0;
};

square_sum sum_squares(const model::arithmetic& a, std::int64_t n, const double* x) {
  square_sum s;
  for (std::int64_t start = 0; start < n; start += block) {
    dd::block_sum b;
    const std::int64_t end = std::min(n, start + block);
    for (std::int64_t j = start; j < end; ++j) {
      const double square = x[j] * x[j];
      b.add(square);
      s.tiny += (square < a.tiny && x[j] != 0) ? 1 : 0;
    }
    s.value = dd::add(s.value, b.value());
  }
  // nonnegative terms: the error relative to Σ|terms| is relative to the sum
  s.relative_error = dd::blocked_sum_error(block, static_cast<double>(blocks_of(n)));
  return s;
}

/// r of a row in double-double with its relative error
struct fast_r {
  dd::number q;
  dd::number r;
  double relative_error = 0;
};

fast_r inverse_rms(const square_sum& ss, std::int64_t n, float epsilon) {
  fast_r f;
  // q = ss/N + ε: the mean over the N columns; q ≥ ss/N, so ss's relative error carries over
  f.q = dd::add(dd::div(ss.value, static_cast<double>(n)), static_cast<double>(epsilon));
  // r = 1/sqrt(q): half of q's relative error, plus the Newton step's own
  f.r = dd::rsqrt(f.q);
  const double q_error = ss.relative_error + 2 * dd::op_error;
  f.relative_error = (0.5 * q_error + dd::rsqrt_error) * certify_margin;
  return f;
}

/// the real-valued r of a row that came from the Boost path, as a double-word within 2^-105
dd::number to_number(const fallback_real& v) {
  const double hi = v.convert_to<double>();
  return {hi, fallback_real(v - hi).convert_to<double>()};
}

/// what the fast path made of a row
enum class row_outcome { done, special, uncertain };

/// one forward row: done; special for non-finite inputs and zero rows; uncertain when a rounding
/// could not be certified (nothing useful is written then)
row_outcome forward_row(const model::arithmetic& a, const model::output_rounding& out, std::int64_t n, const double* x,
                        const double* gamma, const model::extremes& gamma_range, float epsilon, double* y,
                        double* y_bound, double& r, double& r_bound, row_status& status) {
  // Σx²: a non-finite sum means a non-finite input (finite squares of fp32 values cannot overflow double)
  const square_sum ss = sum_squares(a, n, x);
  if (!std::isfinite(ss.value.hi)) return row_outcome::special;
  const fast_r f = inverse_rms(ss, n, epsilon);
  if (f.q.hi == 0) return row_outcome::special;
  if (!dd::round_to_odd(f.r, f.r.hi * f.relative_error, r)) return row_outcome::uncertain;
  // y_j = (x_j·γ_j)·r: x_j·γ_j is exact, one double-word product more
  const dd::number r_split = dd::split(f.r.hi);
  const double y_error = (f.relative_error + dd::op_error) * certify_margin;
  for (std::int64_t j = 0; j < n; ++j) {
    const dd::number yj = dd::mul(f.r, r_split, x[j] * gamma[j]);
    if (!dd::round_to_odd(yj, std::fabs(yj.hi) * y_error, y[j])) return row_outcome::uncertain;
  }
  const model::forward_row bound = model::bound_forward_row(a, n, ss.value.hi, ss.tiny, f.q.hi, r);
  status.reason = common::finish_forward_row(a, out, bound, n, x, gamma, gamma_range, y, y_bound, r_bound);
  return row_outcome::done;
}

/// dx of a finite backward row whose r is known as a double-word; false when uncertain
bool dx_row(const model::arithmetic& a, const model::output_rounding& out, std::int64_t n, const double* x,
            const model::extremes& x_range, const double* gamma, const double* dy, const model::forward_row& forward,
            const dd::number& r, double r_error, double* u, double* dx, double* dx_bound, row_status& status) {
  // u_j = dy_j·γ_j exactly; s = Σ u_j·x_j over exact double-word products, blocked Sum2
  dd::number s;
  for (std::int64_t start = 0; start < n; start += block) {
    dd::block_sum b;
    const std::int64_t end = std::min(n, start + block);
    for (std::int64_t j = start; j < end; ++j) {
      u[j] = dy[j] * gamma[j];
      const dd::number p = dd::two_prod_short(dd::split(u[j]), u[j], x[j]);
      b.add(p.hi);
      b.add(p.lo);
    }
    s = dd::add(s, b.value());
  }
  const common::backward_shadows shadows = common::shadows_of(a, n, x, u, forward.r_lo);
  const double count = static_cast<double>(n);
  const double s_error = shadows.s_abs * (1 + (count + 2) * 0x1p-52) *
                         dd::blocked_sum_error(2 * block, static_cast<double>(blocks_of(n))) * certify_margin;
  // c = s/N·r³: four double-word operations, and r's error three times
  const dd::number r3 = dd::mul(dd::mul(r, r), r);
  const dd::number c = dd::mul(dd::div(s, count), r3);
  const double r3_abs = std::fabs(r3.hi) * certify_margin;
  const double c_error = (std::fabs(c.hi) * (3 * r_error + 4 * dd::op_error) + s_error / count * r3_abs) * certify_margin;
  // dx_j = r·u_j − x_j·c; its error: r's and one operation's on r·|u_j|, c's and one
  // operation's on |x_j|·|c|, the subtraction's on both
  const dd::number r_split = dd::split(r.hi);
  const dd::number c_split = dd::split(c.hi);
  const double per_u = std::fabs(r.hi) * (r_error + 2 * dd::op_error) * certify_margin;
  const double per_x = (c_error + 2 * dd::op_error * std::fabs(c.hi)) * certify_margin;
  for (std::int64_t j = 0; j < n; ++j) {
    const dd::number t1 = dd::mul(r, r_split, u[j]);
    const dd::number t2 = dd::mul_short(c, c_split, x[j]);
    const double error = std::fabs(u[j]) * per_u + std::fabs(x[j]) * per_x;
    if (!dd::round_to_odd(dd::subtract_sloppy(t1, t2), error, dx[j])) return false;
  }
  const model::backward_row bound =
      model::bound_backward_row(a, n, forward, s.hi, shadows.s_abs, shadows.tiny_u_x, shadows.tiny_xr_u, c.hi);
  common::finish_backward_row(a, out, bound, n, x, x_range, u, dx, dx_bound, status);
  return true;
}

/// the exact dgamma sums: per column a Sum2 block over the current rows, the total of finished
/// blocks, and Σ|terms| for the certification
struct column_accumulators {
  std::vector<dd::block_sum> current;
  std::vector<dd::number> total;
  std::vector<double> magnitude;
  std::int64_t rows_in_block = 0;
  std::int64_t blocks = 0;

  explicit column_accumulators(std::int64_t n)
      : current(static_cast<std::size_t>(n)), total(static_cast<std::size_t>(n)), magnitude(static_cast<std::size_t>(n)) {}

  void end_row() {
    if (++rows_in_block < block) return;
    flush();
  }
  void flush() {
    for (std::size_t j = 0; j < current.size(); ++j) {
      total[j] = dd::add(total[j], current[j].value());
      current[j] = {};
    }
    rows_in_block = 0;
    ++blocks;
  }
};

}  // namespace

forward_result exact_forward(const forward_problem& p, exact_stats* stats) {
  forward_result result;
  exact_forward(p, result, stats);
  return result;
}

namespace {

// NC_ROUNDS_NORMALIZED: the kernel forms ŷ = fl(rnd(x̂')·γ) with x̂' its fp32 x·r̂ and rnd the
// rounding to y's dtype. That rounding moves x̂' by at most u·|x̂'| + η, so y' by |γ| times that
// (and by one fp32 rounding more); the final rounding into y's dtype carries it by (1 + u).
// |γ·x̂'| ≤ |y| + bound, so each in-domain bound grows by
//     (1 + u)·((u + 2^-23)·(|y| + bound) + η·|γ|)·(1 + 2^-40)
// and by nothing where y is fp32 (u = 0: x̂' is already an fp32 value).
void widen_for_rounded_normalized(const forward_problem& p, forward_result& result) {
  if (p.y_type == dtype::f32 || p.y_type == dtype::f64) return;
  const format& f = format_of(p.y_type);
  std::vector<double> gamma(static_cast<std::size_t>(p.n));
  common::load_vector(p.gamma, p.n, gamma.data());
  for (std::int64_t i = 0; i < p.m; ++i) {
    if (!result.rows[std::size_t(i)].in_domain()) continue;
    for (std::int64_t j = 0; j < p.n; ++j) {
      double& bound = result.y_bound[std::size_t(i * p.n + j)];
      const double y_abs = std::fabs(result.y[std::size_t(i * p.n + j)]);
      const double moved = (f.unit_roundoff + 0x1p-23) * (y_abs + bound) + f.half_subnormal * std::fabs(gamma[std::size_t(j)]);
      bound += (1 + f.unit_roundoff) * moved * model::bound_inflation;
    }
  }
}

void exact_forward_strict(const forward_problem& p, forward_result& result, exact_stats* stats);

}  // namespace

void exact_forward(const forward_problem& p, forward_result& result, exact_stats* stats) {
  exact_forward_strict(p, result, stats);
  if (p.rounds_normalized) widen_for_rounded_normalized(p, result);
}

namespace {

void exact_forward_strict(const forward_problem& p, forward_result& result, exact_stats* stats) {
  common::check(p);
  exact_stats local;
  exact_stats& st = stats ? *stats : local;
  st = {};
  if (p.x.type == dtype::f64 || p.gamma.type == dtype::f64) {
    // a double's square is not an exact double: only the Boost path is exact here
    st.whole_problem_recomputed = true;
    result = exact_forward_mp<50>(p);
    return;
  }
  const model::arithmetic a = common::arithmetic_of(p);
  const model::output_rounding out = model::output_rounding_of(a, p.y_type);
  const auto m = static_cast<std::size_t>(p.m);
  const auto n = static_cast<std::size_t>(p.n);
  // every entry is written below: resizing keeps the memory of an earlier call
  result.y.resize(m * n);
  result.y_bound.resize(m * n);
  result.r.resize(m);
  result.r_bound.resize(m);
  result.rows.assign(m, {});
  if (m == 0) return;
  std::vector<double> gamma(n), x(n);
  common::load_vector(p.gamma, p.n, gamma.data());
  const model::extremes gamma_range = model::extremes_of(p.n, gamma.data());
  const bool gamma_finite = gamma_range.max < model::infinity;
  for (std::size_t i = 0; i < m; ++i) {
    common::load_row(p.x, static_cast<std::int64_t>(i), p.n, x.data());
    double* y = &result.y[i * n];
    double* y_bound = &result.y_bound[i * n];
    const row_outcome outcome = gamma_finite ? forward_row(a, out, p.n, x.data(), gamma.data(), gamma_range, p.epsilon,
                                                           y, y_bound, result.r[i], result.r_bound[i], result.rows[i])
                                             : row_outcome::special;
    if (outcome == row_outcome::done) continue;
    // non-finite inputs or a zero row (IEEE values), or an uncertain rounding: the Boost path's row
    st.rows_recomputed += outcome == row_outcome::uncertain ? 1 : 0;
    mp::forward_row_result<fallback_real>(a, out, p.n, x.data(), gamma.data(), gamma_range, p.epsilon, y, y_bound,
                                          result.r[i], result.r_bound[i], result.rows[i]);
  }
}

}  // namespace

backward_result exact_backward(const backward_problem& p, exact_stats* stats) {
  backward_result result;
  exact_backward(p, result, stats);
  return result;
}

namespace {

// NC_ROUNDS_GRADIENTS: the backward rounds u = dy·γ, and each dgamma term dy·x̂ (x̂ itself
// rounded), into x's dtype, as autograd through 16-bit tensors does. With ux, η of x's dtype,
// x̂ = |x|·r and a = |dy·γ| (r in double from the exact inputs: its relative error is far below
// the 1 % margin m below):
//     dx_j      moves by r·(ux·a_j + η + x̂_j·(ux·Σa·x̂/N + η·Σx̂/N)), carried by (1 + ux)
//     dgamma_j  moves by Σ_i ((2ux + ux²)·|dy_ij|·x̂_ij + ((1 + ux)·|dy_ij| + 1)·η), by (1 + u_dgamma)
// and by nothing where x is fp32 (autograd's fp32 arithmetic is the standard order's). Where a
// rounded intermediate can overflow x's dtype (|dy·γ| for a row's dx, |dy·x̂| for a dgamma
// column) the declared arithmetic has no finite answer: that row's dx, or that column, leaves
// the domain (intermediate_overflow) instead of failing a kernel that does as it declares.
void widen_for_rounded_gradients(const backward_problem& p, backward_result& result) {
  if (p.dx_type == dtype::f32 || p.dx_type == dtype::f64) return;
  constexpr double margin = 1.01;
  const format& f = format_of(p.dx_type);
  const double ux = f.unit_roundoff, eta = f.half_subnormal;
  const double ug = p.dgamma_type == dtype::f32 || p.dgamma_type == dtype::f64 ? 0 : format_of(p.dgamma_type).unit_roundoff;
  const auto n = static_cast<std::size_t>(p.n);
  // the fp32 product before its rounding to x's dtype, made larger by its own rounding
  const double can_overflow = f.overflow_threshold / (1 + 0x1p-23);
  std::vector<double> gamma(n), x(n), dy(n), column(n, 0.0);
  std::vector<bool> column_overflows(n, false);
  common::load_vector(p.gamma, p.n, gamma.data());
  for (std::int64_t i = 0; i < p.m; ++i) {
    common::load_row(p.x, i, p.n, x.data());
    common::load_row(p.dy, i, p.n, dy.data());
    double ss = 0;
    for (std::size_t j = 0; j < n; ++j) ss += x[j] * x[j];
    const double r = 1 / std::sqrt(ss / double(p.n) + double(p.epsilon));
    double sum_ax = 0, sum_x = 0;
    bool row_overflows = false;
    for (std::size_t j = 0; j < n; ++j) {
      const double xh = std::fabs(x[j]) * r;
      sum_ax += std::fabs(dy[j] * gamma[j]) * xh, sum_x += xh;
      column[j] += (2 * ux + ux * ux) * std::fabs(dy[j]) * xh + ((1 + ux) * std::fabs(dy[j]) + 1) * eta;
      row_overflows |= std::fabs(dy[j] * gamma[j]) >= can_overflow;
      column_overflows[j] = column_overflows[j] || std::fabs(dy[j]) * (xh * (1 + ux) + eta) >= can_overflow;
    }
    row_status& row = result.rows[std::size_t(i)];
    if (!row.in_domain()) continue;
    if (row_overflows) {
      row.reason = domain_reason::intermediate_overflow;
      std::fill_n(result.dx_bound.begin() + std::ptrdiff_t(std::size_t(i) * n), n, std::nan(""));
      continue;
    }
    const double mean_ax = sum_ax / double(p.n), mean_x = sum_x / double(p.n);
    for (std::size_t j = 0; j < n; ++j) {
      const double xh = std::fabs(x[j]) * r;
      const double moved = r * (ux * std::fabs(dy[j] * gamma[j]) + eta + xh * (ux * mean_ax + eta * mean_x));
      result.dx_bound[std::size_t(i) * n + j] += (1 + ux) * moved * margin;
    }
  }
  for (std::size_t j = 0; j < n; ++j) {
    if (!result.columns[j].in_domain()) continue;
    if (column_overflows[j]) {
      result.columns[j].reason = domain_reason::intermediate_overflow;
      result.dgamma_bound[j] = std::nan("");
    } else {
      result.dgamma_bound[j] += (1 + ug) * column[j] * margin;
    }
  }
}

void exact_backward_strict(const backward_problem& p, backward_result& result, exact_stats* stats);

}  // namespace

void exact_backward(const backward_problem& p, backward_result& result, exact_stats* stats) {
  exact_backward_strict(p, result, stats);
  if (p.rounds_gradients) widen_for_rounded_gradients(p, result);
}

namespace {

void exact_backward_strict(const backward_problem& p, backward_result& result, exact_stats* stats) {
  common::check(p);
  exact_stats local;
  exact_stats& st = stats ? *stats : local;
  st = {};
  if (p.x.type == dtype::f64 || p.gamma.type == dtype::f64 || p.dy.type == dtype::f64) {
    st.whole_problem_recomputed = true;
    result = exact_backward_mp<50>(p);
    return;
  }
  const model::arithmetic a = common::arithmetic_of(p);
  const model::output_rounding out_dx = model::output_rounding_of(a, p.dx_type);
  const model::output_rounding out_dgamma = model::output_rounding_of(a, p.dgamma_type);
  const auto m = static_cast<std::size_t>(p.m);
  const auto n = static_cast<std::size_t>(p.n);
  // every entry of dx is written below: resizing keeps the memory of an earlier call
  result.dx.resize(m * n);
  result.dx_bound.resize(m * n);
  result.dgamma.assign(n, 0.0);
  result.dgamma_bound.assign(n, 0.0);
  result.rows.assign(m, {});
  result.columns.assign(n, {});
  if (m == 0) return;  // dgamma = 0 exactly: the kernel must write zeros
  std::vector<double> gamma(n), x(n), dy(n), u(n);
  common::load_vector(p.gamma, p.n, gamma.data());
  const bool gamma_finite = common::all_finite(gamma);
  common::dgamma_columns columns(p.n);
  column_accumulators sums(p.n);
  double max_r_error = 0;
  std::vector<fallback_real> xs;
  for (std::size_t i = 0; i < m; ++i) {
    common::load_row(p.x, static_cast<std::int64_t>(i), p.n, x.data());
    common::load_row(p.dy, static_cast<std::int64_t>(i), p.n, dy.data());
    double* dx = &result.dx[i * n];
    double* dx_bound = &result.dx_bound[i * n];
    // r: the fast path's, certified, or the Boost path's
    mp::row_for_columns<fallback_real> row;
    dd::number r;
    double r_error = 0;
    bool exact_xs = false;
    const square_sum ss = sum_squares(a, p.n, x.data());
    const fast_r f = std::isfinite(ss.value.hi) ? inverse_rms(ss, p.n, p.epsilon) : fast_r{};
    if (std::isfinite(ss.value.hi) && f.q.hi != 0 && dd::round_to_odd(f.r, f.r.hi * f.relative_error, row.r)) {
      row.exact_r = true;
      row.forward = model::bound_forward_row(a, p.n, ss.value.hi, ss.tiny, f.q.hi, row.r);
      r = f.r;
      r_error = f.relative_error;
    } else {
      // non-finite x, a zero row (both IEEE) or an uncertain r
      row = mp::backward_row_r<fallback_real>(a, p.n, x.data(), p.epsilon, xs);
      exact_xs = true;
      if (row.exact_r) {
        ++st.rows_recomputed;
        r = to_number(row.r_exact);
        r_error = 0x1p-104;
      }
    }
    // dx: the fast path's when every input is finite and every rounding certain
    const bool finite = row.exact_r && gamma_finite && common::all_finite(dy);
    const model::extremes x_range = model::extremes_of(p.n, x.data());
    const bool fast = finite && !exact_xs &&
                      dx_row(a, out_dx, p.n, x.data(), x_range, gamma.data(), dy.data(), row.forward, r, r_error,
                             u.data(), dx, dx_bound, result.rows[i]);
    if (!fast) {
      if (finite && !exact_xs) {
        ++st.rows_recomputed;
        row = mp::backward_row_r<fallback_real>(a, p.n, x.data(), p.epsilon, xs);
      }
      mp::dx_row_result<fallback_real>(a, out_dx, p.n, x.data(), gamma.data(), dy.data(), gamma_finite, row, xs, dx,
                                       dx_bound, result.rows[i]);
    }
    // dgamma_j += dy_ij·x_ij·r_i: a sum over rows, never a mean
    common::add_row_to_columns(a, row.forward, row.exact_r, row.r, p.n, x.data(), x_range, dy.data(), columns);
    if (row.exact_r) {
      max_r_error = std::max(max_r_error, r_error);
      const dd::number r_split = dd::split(r.hi);
      for (std::size_t j = 0; j < n; ++j) {
        if (!common::exact_term(true, dy[j])) continue;
        // t = (dy·x)·r: the exact product with r.hi and the small one with r.lo, unnormalised
        const double d = dy[j] * x[j];
        const dd::number t = dd::two_prod(r_split, r.hi, d);
        sums.current[j].add(t.hi);
        sums.current[j].lo += t.lo + d * r.lo;
        sums.magnitude[j] += std::fabs(t.hi);
      }
    }
    sums.end_row();
  }
  if (sums.rows_in_block > 0) sums.flush();
  // certify each column's rounding; recompute the uncertain ones on the Boost path
  const double rows = static_cast<double>(p.m);
  const double sum_error = dd::blocked_sum_error(2 * block, static_cast<double>(sums.blocks));
  std::vector<mp::row_for_columns<fallback_real>> exact_rows;
  std::vector<std::vector<fallback_real>> exact_xs_rows;
  for (std::size_t j = 0; j < n; ++j) {
    const double magnitude = sums.magnitude[j] * (1 + (rows + 2) * 0x1p-52);
    const double error = magnitude * (max_r_error + dd::op_error + sum_error) * certify_margin;
    if (dd::round_to_odd(sums.total[j], error, result.dgamma[j])) continue;
    ++st.columns_recomputed;
    if (exact_rows.empty()) {
      exact_rows.resize(m);
      exact_xs_rows.resize(m);
      for (std::size_t i = 0; i < m; ++i) {
        common::load_row(p.x, static_cast<std::int64_t>(i), p.n, x.data());
        exact_rows[i] = mp::backward_row_r<fallback_real>(a, p.n, x.data(), p.epsilon, exact_xs_rows[i]);
      }
    }
    // the Boost path's column: the same terms, in the same row order
    fallback_real total = 0;
    for (std::size_t i = 0; i < m; ++i) {
      const double dy_ij = p.dy.at(static_cast<std::int64_t>(i), static_cast<std::int64_t>(j));
      if (common::exact_term(exact_rows[i].exact_r, dy_ij))
        total += fallback_real(dy_ij) * exact_xs_rows[i][j] * exact_rows[i].r_exact;
    }
    result.dgamma[j] = mp::to_double_odd(total);
  }
  common::finish_dgamma(a, out_dgamma, p.m, columns, result.dgamma, result.dgamma_bound, result.columns);
}

}  // namespace

}  // namespace nc::oracle
