// The parts of the exact oracle both paths share.
#include "exact_common.hpp"

#include <algorithm>
#include <string>

namespace nc::oracle::common {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

void check_shape(std::int64_t m, std::int64_t n, float epsilon) {
  require(m >= 0, "m = " + std::to_string(m) + ": the number of rows must be >= 0");
  require(n >= 1, "n = " + std::to_string(n) + ": the number of columns must be >= 1");
  require(std::isfinite(epsilon) && epsilon >= 0,
          "epsilon = " + std::to_string(epsilon) + ": epsilon must be finite and >= 0");
}

}  // namespace

void check(const forward_problem& p) {
  check_shape(p.m, p.n, p.epsilon);
  if (p.m == 0) return;
  require(p.x.data != nullptr, "x.data is null: x must point at the M x N input");
  require(p.gamma.data != nullptr, "gamma.data is null: gamma must point at the N weights");
}

void check(const backward_problem& p) {
  check_shape(p.m, p.n, p.epsilon);
  if (p.m == 0) return;
  require(p.x.data != nullptr, "x.data is null: x must point at the M x N input");
  require(p.gamma.data != nullptr, "gamma.data is null: gamma must point at the N weights");
  require(p.dy.data != nullptr, "dy.data is null: dy must point at the M x N upstream gradient");
}

namespace {
// a flush-to-zero kernel's result below the smallest normal is 0: its underflow error per
// operation is the smallest normal, where gradual underflow's is half the smallest subnormal
model::arithmetic flushing(model::arithmetic a, bool flushes) {
  if (flushes) a.eta = a.tiny;
  return a;
}
}  // namespace

model::arithmetic arithmetic_of(const forward_problem& p) {
  const bool wide = p.x.type == dtype::f64 || p.gamma.type == dtype::f64;
  return flushing(model::arithmetic_of(wide ? dtype::f64 : dtype::f32), p.flushes_subnormals && !wide);
}

model::arithmetic arithmetic_of(const backward_problem& p) {
  const bool wide = p.x.type == dtype::f64 || p.gamma.type == dtype::f64 || p.dy.type == dtype::f64;
  return flushing(model::arithmetic_of(wide ? dtype::f64 : dtype::f32), p.flushes_subnormals && !wide);
}

double ieee_r(std::int64_t n, const double* x, double epsilon) {
  double ss = 0;
  for (std::int64_t j = 0; j < n; ++j) ss += x[j] * x[j];
  return 1 / std::sqrt(ss / static_cast<double>(n) + epsilon);
}

void ieee_forward_row(std::int64_t n, const double* x, const double* gamma, double epsilon, double* y, double& r) {
  r = ieee_r(n, x, epsilon);
  for (std::int64_t j = 0; j < n; ++j) y[j] = x[j] * r * gamma[j];
}

void ieee_dx_row(std::int64_t n, const double* x, const double* gamma, const double* dy, double r, double* dx) {
  double s = 0;
  for (std::int64_t j = 0; j < n; ++j) s += dy[j] * gamma[j] * x[j];
  const double c = s / static_cast<double>(n) * r * r * r;
  for (std::int64_t j = 0; j < n; ++j) dx[j] = r * (dy[j] * gamma[j]) - x[j] * c;
}

domain_reason finish_forward_row(const model::arithmetic& a, const model::output_rounding& out,
                                 const model::forward_row& row, std::int64_t n, const double* x, const double* gamma,
                                 const model::extremes& gamma_range, const double* y, double* y_bound,
                                 double& r_bound) {
  domain_reason reason = row.reason;
  if (reason == domain_reason::none && model::products_stay_normal(a, row, model::extremes_of(n, x), gamma_range)) {
    // the common row: no η terms and no overflow anywhere, the bound is linear in |y|
    const model::linear_bound line = model::linear_y(out, row);
    double top = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      const double y_abs = std::fabs(y[j]);
      y_bound[j] = y_abs == 0 ? 0 : y_abs * line.slope + line.offset;
      top = std::max(top, y_abs + y_bound[j]);
    }
    if (top >= out.overflow) reason = domain_reason::output_overflow;
  } else if (reason == domain_reason::none) {
    double underflow = 0;
    double scale = 0;
    for (std::int64_t j = 0; j < n && reason == domain_reason::none; ++j) {
      const model::element_bound e = model::bound_y(a, out, row, x[j], gamma[j], std::fabs(y[j]));
      y_bound[j] = e.bound;
      underflow = std::max(underflow, e.underflow);
      scale = std::max(scale, e.scale);
      reason = e.reason;
    }
    if (reason == domain_reason::none && model::underflow_swamps(underflow, scale, out))
      reason = domain_reason::intermediate_underflow;
  }
  if (reason != domain_reason::none) {
    std::fill(y_bound, y_bound + n, nan);
    r_bound = nan;
    return reason;
  }
  r_bound = model::bound_r(row);
  return reason;
}

backward_shadows shadows_of(const model::arithmetic& a, std::int64_t n, const double* x, const double* u, double r_lo) {
  backward_shadows s;
  for (std::int64_t j = 0; j < n; ++j) {
    const double u_abs = std::fabs(u[j]), x_abs = std::fabs(x[j]);
    s.s_abs += u_abs * x_abs;
    if (u_abs > 0 && u_abs < a.tiny) s.tiny_u_x += x_abs;
    if (x_abs > 0 && x_abs * r_lo < a.tiny) s.tiny_xr_u += u_abs;
  }
  return s;
}

void finish_backward_row(const model::arithmetic& a, const model::output_rounding& out, const model::backward_row& row,
                         std::int64_t n, const double* x, const model::extremes& x_range, const double* u,
                         const double* dx, double* dx_bound, row_status& status) {
  domain_reason reason = row.reason;
  double underflow = 0;
  double scale = 0;
  const model::extremes u_range = model::extremes_of(n, u);
  model::linear_dx line;
  if (reason == domain_reason::none && model::dx_stays_normal(a, out, row, x_range, u_range, line)) {
    // the common row: underflow only through c, overflow judged on the row's largest dx + bound
    double top = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      const double dx_abs = std::fabs(dx[j]);
      dx_bound[j] = line.bound(std::fabs(u[j]), std::fabs(x[j]), dx_abs);
      top = std::max(top, dx_abs + dx_bound[j]);
    }
    underflow = (x_range.max * (1 + a.u) * row.c_underflow + line.x_eta) * (1 + a.u) * (1 + out.u);
    scale = row.forward.r * u_range.max + x_range.max * (row.c_abs + row.c_shadow);
    if (top > a.big) reason = domain_reason::intermediate_overflow;
    else if (top >= out.overflow) reason = domain_reason::output_overflow;
  } else if (reason == domain_reason::none) {
    for (std::int64_t j = 0; j < n && reason == domain_reason::none; ++j) {
      const model::element_bound e = model::bound_dx(a, out, row, x[j], u[j], std::fabs(dx[j]));
      dx_bound[j] = e.bound;
      underflow = std::max(underflow, e.underflow);
      scale = std::max(scale, e.scale);
      reason = e.reason;
    }
  }
  if (reason == domain_reason::none && model::underflow_swamps(underflow, scale, out))
    reason = domain_reason::intermediate_underflow;
  if (reason != domain_reason::none) std::fill(dx_bound, dx_bound + n, nan);
  status.reason = reason;
  status.hazard = reason == domain_reason::none ? model::hazard_of(a, row, x_range.max) : order_hazard::none;
  status.r = row.forward.r;
}

void add_row_to_columns(const model::arithmetic& a, const model::forward_row& forward, bool exact_r, double r,
                        std::int64_t n, const double* x, const model::extremes& x_range, const double* dy,
                        dgamma_columns& columns) {
  if (exact_r && forward.reason == domain_reason::none &&
      model::products_stay_normal(a, forward, model::extremes_of(n, dy), x_range)) {
    // the common row: finite, in the domain, no η terms and no overflow in any product
    for (std::int64_t j = 0; j < n; ++j)
      model::add_contribution_normal(forward, std::fabs(dy[j] * x[j]) * r, columns.sums[static_cast<std::size_t>(j)]);
    return;
  }
  for (std::int64_t j = 0; j < n; ++j) {
    model::column_sums& sums = columns.sums[static_cast<std::size_t>(j)];
    if (!exact_term(exact_r, dy[j])) {
      // a non-finite input or r: the IEEE product. When finite it is exactly 0: r = 0 (a row
      // holding ±Inf, whose r̂ is 0 too) with dy and x finite. That 0 changes nothing unless dy·x
      // could overflow the kernel's arithmetic: formed first, it gives Inf·0 = NaN, so the
      // column has no bound
      const double t = dy[j] * x[j] * r;
      if (!std::isfinite(t)) columns.special[static_cast<std::size_t>(j)] += t;
      if ((!std::isfinite(t) || std::fabs(dy[j] * x[j]) > a.big) && sums.reason == domain_reason::none)
        sums.reason = domain_reason::non_finite_input;
      continue;
    }
    const double t_abs = std::fabs(dy[j] * x[j]) * r;
    if (forward.reason != domain_reason::none) {
      // no bound on this row's r̂, which a correct kernel may even hold as Inf (r of a row whose
      // fp32 sum of squares underflows with ε = 0): then dy = 0 still contributes 0 * Inf = NaN,
      // so every contribution, zero or not, leaves its column without a bound
      if (sums.reason == domain_reason::none) sums.reason = domain_reason::row_out_of_domain;
      continue;
    }
    model::add_contribution(a, forward, dy[j], x[j], t_abs, sums);
  }
}

void finish_dgamma(const model::arithmetic& a, const model::output_rounding& out, std::int64_t m,
                   const dgamma_columns& columns, std::vector<double>& dgamma, std::vector<double>& dgamma_bound,
                   std::vector<row_status>& status) {
  for (std::size_t j = 0; j < dgamma.size(); ++j) {
    if (!std::isfinite(columns.special[j])) {
      dgamma[j] = columns.special[j];
      dgamma_bound[j] = nan;
      status[j].reason = domain_reason::non_finite_input;
      continue;
    }
    const model::element_bound e = model::bound_dgamma(a, out, m, columns.sums[j], std::fabs(dgamma[j]));
    status[j].reason = e.reason;
    dgamma_bound[j] = e.reason == domain_reason::none ? e.bound : nan;
  }
}

}  // namespace nc::oracle::common
