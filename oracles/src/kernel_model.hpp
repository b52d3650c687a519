// The error model of a correct RMSNorm kernel that accumulates in fp32: per-row and per-element
// upper bounds on |kernel result − exact result|, shared by the fast and the Boost paths.
//
// The kernel model (what the shipped kernels and any correct peer do):
//   forward   ss = Σ x_j² in any order (fma or mul+add); mean = ss/N or ss·(1/N); q = mean + ε;
//             r = rsqrt(q) within 2 ulp; y_j = x_j·r·γ_j in any association, rounded to y's dtype.
//   backward  r as the forward wrote it; u_j = dy_j·γ_j; s = Σ u_j·x_j in any order;
//             c = s/N · r·r·r in any association; dx_j = r·u_j − x_j·c, rounded to dx's dtype;
//             dgamma_j = Σ_i dy_ij·x_ij·r_i over rows in any order, rounded to dgamma's dtype.
//             x_j·c may be evaluated in any of the standard orders (kernels/examples/ has a
//             reference plugin for each, and abi.h lists them):
//               shipped   (x_j·r)·(s/N·r·r): r³ is never formed
//               abi       ((x_j·(r·r·r))·s)/N: abi.h's formula read left to right
//               reference (x_j·r³)·(s/N): the document's (SEED.md)
//               torch     r·(u_j − x̂_j·mean(u·x̂)) with x̂ = x·r rounded: PyTorch's and Apex's
//                         fused order (its Σ u·x̂ takes one rounding more than Σ u·x)
//               liger     r·u_j + r·((((−1/N)·r)·r)·s)·x_j): Liger-Kernel's (fp32 casting)
//             Each order's subnormal intermediates (x_j·r³, x̂_j·mean, r²/N, ...) add their η
//             times the factors still to come. An order whose intermediate overflows where the
//             shipped order's do not (r³ for r > 7e12, r²/N for r > 1.8e19·√N) is not admitted there: the row keeps its
//             bound and carries an order_hazard, so the failure names the defect of the order.
// Error terms follow Higham's model with underflow: fl(a∘b) = (a∘b)(1+δ) + η' with |δ| ≤ u,
// |η'| ≤ η = 2^-150, and η' = 0 for additions and whenever |a∘b| ≥ 2^-126. A sum of n terms in
// any tree has at most n−1 roundings on any path, so Σ of computed products carries γ_n.
// Every bound is split into its rounding part and its underflow part: the underflow part alone
// decides the intermediate_underflow domain rule.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "normcheck/oracles/dtype.hpp"
#include "normcheck/oracles/problem.hpp"

namespace nc::oracle::model {

/// the bound's own double arithmetic rounds a few dozen times (2^-53 each): inflate by 2^-40
inline constexpr double bound_inflation = 1 + 0x1p-40;
/// the oracle's value is the exact result rounded to odd in double: less than one ulp, ≤ 2^-52 relative
inline constexpr double oracle_rounding = 0x1p-52;
/// a row whose fp32 underflow alone could move a result by more than 2^-10 of the row's scale
/// could hide a 0.1% bug: it is outside the differential domain
inline constexpr double underflow_limit = 0x1p-10;
/// and underflow up to this many output half-subnormals is resolution, not a defect of the bound
inline constexpr double underflow_resolution_units = 16;

inline constexpr double infinity = std::numeric_limits<double>::infinity();

/// the kernel's arithmetic: fp32, or fp64 when an operand is f64 (the cross-oracle case)
struct arithmetic {
  double u;            ///< unit roundoff
  double eta;          ///< half the smallest subnormal
  double tiny;         ///< the smallest normal
  double big;          ///< the largest finite value
  double rsqrt_error;  ///< rsqrt within 2 ulp of the exact result: 2·2^(1−p) ≤ 4u relative
  double exact_count;  ///< the largest N with float(N) exact
};

inline arithmetic arithmetic_of(dtype widest) {
  const format& f = format_of(widest == dtype::f64 ? dtype::f64 : dtype::f32);
  return {f.unit_roundoff, f.half_subnormal, f.min_normal, f.max_finite, 4 * f.unit_roundoff,
          std::ldexp(1.0, f.precision)};
}

/// the final rounding of the kernel's result into the output dtype
struct output_rounding {
  double u;           ///< 0 when the output is at least as wide as the arithmetic (no rounding happens)
  double eta;
  double overflow;    ///< a result this large could round to ±Inf
  double resolution;  ///< the absolute error scale of the output near zero
};

inline output_rounding output_rounding_of(const arithmetic& a, dtype out) {
  const format& f = format_of(out);
  if (f.unit_roundoff >= a.u * 2) return {f.unit_roundoff, f.half_subnormal, f.overflow_threshold, f.half_subnormal};
  return {0, 0, std::min(f.overflow_threshold, a.big), a.eta};
}

/// γ_k = k·u/(1 − k·u); infinite once k·u reaches 1/2, where the bound says nothing
inline double gamma_of(const arithmetic& a, double k) {
  const double ku = k * a.u;
  return ku < 0.5 ? ku / (1 - ku) : infinity;
}

/// roundings of mean = ss/N or ss·(1/N): two, and a third when float(N) itself rounds
inline double mean_roundings(const arithmetic& a, std::int64_t n) {
  return static_cast<double>(n) <= a.exact_count ? 2 : 3;
}

/// a bound on |(1 − ρ)^(−1/2) − 1|, the growth of 1/sqrt under a relative perturbation ≤ ρ < 1/2
inline double inverse_sqrt_growth(double rho) { return std::expm1(-0.5 * std::log1p(-rho)); }

/// the row's underflow is out of bounds when it exceeds 2^-10 of the row's scale and the output's resolution
inline bool underflow_swamps(double underflow, double scale, const output_rounding& out) {
  return underflow > std::max(underflow_limit * scale, underflow_resolution_units * out.resolution);
}

/// the bounds every element of a forward row shares
struct forward_row {
  domain_reason reason = domain_reason::none;
  double r = 0;                ///< the exact r
  double rho_r = 0;            ///< |r̂ − r| ≤ rho_r·r for the kernel's r̂
  double rho_r_underflow = 0;  ///< the share of rho_r caused by underflow
  double r_lo = 0;             ///< r·(1 − rho_r)
  double r_up = 0;             ///< r·(1 + rho_r)
  double product_relative = 0; ///< (1 + rho_r)(1 + γ_2) − 1: a product x·r̂·γ in two roundings
};

/// the forward row: ss = Σx² exactly, tiny_squares = #{j : 0 < x_j² < 2^-126}, q = ss/N + ε and r = q^(−1/2) exactly
inline forward_row bound_forward_row(const arithmetic& a, std::int64_t n, double ss, std::int64_t tiny_squares,
                                     double q, double r) {
  forward_row row;
  row.r = r;
  if (q == 0) {
    row.reason = domain_reason::zero_row_without_epsilon;
    return row;
  }
  const double count = static_cast<double>(n);
  const double g_n = gamma_of(a, count);
  const double g_m = gamma_of(a, mean_roundings(a, n));
  if (g_n == infinity) {
    row.reason = domain_reason::accumulation_too_long;
    return row;
  }
  // ss: γ_n on the sum of squares; each square or fma below 2^-126 adds η (at most 2 per tiny term)
  const double ss_rounding = g_n * ss;
  const double ss_underflow = 2 * static_cast<double>(tiny_squares) * a.eta * (1 + g_n);
  // nonnegative terms: every partial sum is at most the computed total
  if (ss + ss_rounding + ss_underflow > a.big) {
    row.reason = domain_reason::intermediate_overflow;
    return row;
  }
  // mean: k_m roundings, and η when the quotient could be subnormal
  const double mean = ss / count;
  const double mean_lo = std::max(0.0, ss - ss_rounding - ss_underflow) / count * (1 - g_m);
  const double mean_eta = (ss > 0 && mean_lo < a.tiny) ? a.eta : 0;
  const double mean_rounding = ss_rounding / count * (1 + g_m) + g_m * mean;
  const double mean_underflow = ss_underflow / count * (1 + g_m) + mean_eta;
  // q = mean + ε: one rounding, no cancellation (both are ≥ 0), no underflow error for an addition
  const double q_rounding = (1 + a.u) * mean_rounding + a.u * q;
  const double q_underflow = (1 + a.u) * mean_underflow;
  if (q + q_rounding + q_underflow > a.big) {
    row.reason = domain_reason::intermediate_overflow;
    return row;
  }
  const double rho_q = (q_rounding + q_underflow) / q;
  const double rho_q_underflow = q_underflow / q;
  // r = rsqrt(q̂): |(q(1+ε))^(−1/2)/q^(−1/2) − 1| ≤ (1 − ρ_q)^(−1/2) − 1, then rsqrt's own 2 ulp
  if (!(rho_q < 0.5)) {
    row.reason = rho_q_underflow * 2 > rho_q ? domain_reason::intermediate_underflow
                                              : domain_reason::accumulation_too_long;
    return row;
  }
  const double growth = inverse_sqrt_growth(rho_q);
  row.rho_r = (a.rsqrt_error + growth + a.rsqrt_error * growth) * bound_inflation;
  // the growth's slope is below 1.5 for ρ < 1/2, so underflow moves r by at most 1.5·ρ_q,underflow
  row.rho_r_underflow = 1.5 * rho_q_underflow;
  row.r_lo = r * (1 - row.rho_r);
  row.r_up = r * (1 + row.rho_r);
  if (row.r_up > a.big) {
    row.reason = domain_reason::intermediate_overflow;
    return row;
  }
  if (row.rho_r_underflow > underflow_limit) {
    row.reason = domain_reason::intermediate_underflow;
    return row;
  }
  const double g_2 = gamma_of(a, 2);
  row.product_relative = (1 + row.rho_r) * (1 + g_2) - 1;
  return row;
}

/// |r_kernel − r_oracle| for a row in the domain: the kernel's r̂ plus the oracle's rounding to double
inline double bound_r(const forward_row& row) {
  return (row.rho_r * row.r + oracle_rounding * row.r) * bound_inflation;
}

/// one element's bound, its underflow share, the scale it is judged against, and a domain verdict
struct element_bound {
  double bound = 0;
  double underflow = 0;
  double scale = 0;
  domain_reason reason = domain_reason::none;
};

/// the error of a product of three fp32 values a·b·r̂ computed in two roundings in any association,
/// r̂ within [r_lo, r_up]; product_abs = |a·b·r| exactly
struct triple_product {
  double eta_first = 0;  ///< the first product's underflow, times the factor it is multiplied by next
  double eta_final = 0;  ///< the second product's underflow
  bool overflows = false;
};

inline triple_product bound_triple_product(const arithmetic& a, const forward_row& row, double a_abs, double b_abs,
                                           double product_abs) {
  triple_product p;
  const double ab = a_abs * b_abs;
  // any pairwise product or the whole could exceed FLT_MAX in some association
  p.overflows = ab > a.big || a_abs * row.r_up * (1 + a.u) > a.big || b_abs * row.r_up * (1 + a.u) > a.big ||
                product_abs * (1 + row.product_relative) > a.big;
  // a first product that could be subnormal leaves η, scaled by the third factor
  double third = 0;
  if (ab < a.tiny) third = std::max(third, row.r_up);
  if (a_abs * row.r_lo < a.tiny) third = std::max(third, b_abs);
  if (b_abs * row.r_lo < a.tiny) third = std::max(third, a_abs);
  p.eta_first = a.eta * third * (1 + a.u);
  if (product_abs * (1 - row.rho_r) * (1 - 2 * a.u) < a.tiny) p.eta_final = a.eta;
  return p;
}

/// the nonzero magnitudes of a row's operand: the smallest and the largest (+Inf when a value
/// is not finite, so that no fast branch takes the row)
struct extremes {
  double min = infinity;
  double max = 0;
};

inline extremes extremes_of(std::int64_t n, const double* v) {
  // four independent chains: one min/max chain would wait on every comparison
  double lo0 = infinity, lo1 = infinity, lo2 = infinity, lo3 = infinity;
  double hi0 = 0, hi1 = 0, hi2 = 0, hi3 = 0;
  bool non_finite = false;
  auto take = [&non_finite](double value, double& lo, double& hi) {
    const double m = std::fabs(value);
    hi = m > hi ? m : hi;
    lo = (m < lo && m != 0) ? m : lo;
    non_finite |= !(m <= std::numeric_limits<double>::max());
  };
  std::int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    take(v[j], lo0, hi0);
    take(v[j + 1], lo1, hi1);
    take(v[j + 2], lo2, hi2);
    take(v[j + 3], lo3, hi3);
  }
  for (; j < n; ++j) take(v[j], lo0, hi0);
  extremes e;
  e.min = std::min(std::min(lo0, lo1), std::min(lo2, lo3));
  e.max = non_finite ? infinity : std::max(std::max(hi0, hi1), std::max(hi2, hi3));
  return e;
}

/// whether every triple product a_j·b_j·r̂ of a row stays inside fp32's normal range in every
/// association: then bound_triple_product has no η terms and no overflow for any element
inline bool products_stay_normal(const arithmetic& a, const forward_row& row, const extremes& x, const extremes& y) {
  return x.min * y.min >= a.tiny && x.min * row.r_lo >= a.tiny && y.min * row.r_lo >= a.tiny &&
         x.min * y.min * row.r_lo * (1 - 2 * a.u) >= a.tiny && x.max * y.max <= a.big &&
         x.max * row.r_up * (1 + a.u) <= a.big && y.max * row.r_up * (1 + a.u) <= a.big &&
         x.max * y.max * row.r_up * (1 + row.product_relative) <= a.big;
}

/// bound_y for a row whose products stay normal, as slope·|y| + offset (0 for an exact zero)
struct linear_bound {
  double slope = 0;
  double offset = 0;
};

inline linear_bound linear_y(const output_rounding& out, const forward_row& row) {
  return {((1 + out.u) * row.product_relative + out.u + oracle_rounding) * bound_inflation, out.eta * bound_inflation};
}

/// the bound of y_j = x_j·r·γ_j with y_abs = |x_j·γ_j·r| exactly
inline element_bound bound_y(const arithmetic& a, const output_rounding& out, const forward_row& row, double x,
                             double gamma, double y_abs) {
  element_bound e;
  e.scale = y_abs;
  // a zero factor makes every product exactly ±0
  if (x == 0 || gamma == 0) return e;
  const triple_product p = bound_triple_product(a, row, std::fabs(x), std::fabs(gamma), y_abs);
  if (p.overflows) {
    e.reason = domain_reason::intermediate_overflow;
    return e;
  }
  // the kernel's fp32 y': the r̂ error and two roundings, then the underflow terms
  const double kernel = y_abs * row.product_relative + p.eta_first + p.eta_final;
  // rounding y' into y's dtype (nothing when y is fp32), then the oracle's rounding to double
  const double rounded = (1 + out.u) * kernel + out.u * y_abs + out.eta;
  e.bound = (rounded + oracle_rounding * y_abs) * bound_inflation;
  e.underflow = p.eta_first * (1 + out.u);
  if (y_abs + e.bound >= out.overflow) e.reason = domain_reason::output_overflow;
  return e;
}

/// the bounds every element of a backward row shares
struct backward_row {
  domain_reason reason = domain_reason::none;
  forward_row forward;
  double c_abs = 0;            ///< |c| = |s|/N·r³ exactly
  double c_error = 0;          ///< |ĉ − c| ≤ c_error
  double c_underflow = 0;      ///< the share of c_error caused by underflow
  double c_lo = 0;             ///< a lower bound on |ĉ|
  double c_shadow = 0;         ///< Σ|u_j·x_j|/N·r³: the |·|-shadow of c
  double first_relative = 0;   ///< (1 + ρ_r)(1 + u)² − 1: r̂·û in fp32
  double c_over_r_up = 0;      ///< an upper bound on |ĉ/r̂| = |ŝ/N·r̂·r̂| (0 when s is exactly 0)
  double c_over_r_lo = 0;      ///< a lower bound on |ĉ/r̂|: x̂_j·mean (torch) and c'·x_j (liger)
  double ms_up = 0;            ///< an upper bound on |ŝ/N|: what x_j·r³ is multiplied by (abi, reference)
  double ms_lo = 0;            ///< a lower bound on |ŝ/N|
  double s_up = 0;             ///< an upper bound on |ŝ|: what (x_j·r³) is multiplied by before /N (abi)
  order_hazard hazard = order_hazard::none;  ///< r³ overflows: the abi and reference orders fail here
};

/// the backward row from the exact s = Σ u_j·x_j, its shadow s_abs = Σ|u_j·x_j| (a double sum is
/// fine: it is inflated here), tiny_u_x = Σ{|x_j| : 0 < |u_j| < 2^-126},
/// tiny_xr_u = Σ{|u_j| : 0 < |x_j|·r_lo < 2^-126} (x̂_j that could be subnormal, the torch order)
/// and the exact c = s/N·r³
inline backward_row bound_backward_row(const arithmetic& a, std::int64_t n, const forward_row& forward, double s,
                                       double s_abs, double tiny_u_x, double tiny_xr_u, double c) {
  backward_row row;
  row.forward = forward;
  row.reason = forward.reason;
  if (forward.reason != domain_reason::none) return row;
  const double count = static_cast<double>(n);
  s_abs *= 1 + (count + 2) * 0x1p-52;
  const double r = forward.r;
  const double r_lo = forward.r_lo;
  const double r_up = forward.r_up;
  // s: γ_{n+2} on Σ|u_j·x_j| (û, the product, n−1 additions, and x̂ = x·r rounded in the torch
  // order's Σ u·x̂); underflow of û carried by |x_j|, and of each product or fma (η each, n of them)
  const double g_s = gamma_of(a, count + 2);
  if (g_s == infinity) {
    row.reason = domain_reason::accumulation_too_long;
    return row;
  }
  const double s_rounding = g_s * s_abs;
  const double s_underflow = (a.eta * tiny_u_x + count * a.eta) * (1 + gamma_of(a, count));
  const double s_error = s_rounding + s_underflow;
  if (s_abs * (1 + g_s) + s_underflow > a.big) {
    row.reason = domain_reason::intermediate_overflow;
    return row;
  }
  row.c_abs = std::fabs(c);
  row.c_shadow = s_abs / count * r * r * r;
  // r̂³ is formed by the abi and reference orders, r̂²/N by the liger order, even where s = 0
  // (then 0·Inf = NaN); where s ≠ 0 a row with r̂² past FLT_MAX leaves the domain below
  if (r_up * r_up / count * (1 + a.u) * (1 + a.u) > a.big) row.hazard = order_hazard::r_squared_overflow;
  else if (r_up * r_up * r_up * (1 + a.u) * (1 + a.u) > a.big) row.hazard = order_hazard::r_cubed_overflow;
  if (s_abs == 0) {
    // every u_j·x_j is exactly zero: so are s and c
    row.first_relative = (1 + forward.rho_r) * (1 + a.u) * (1 + a.u) - 1;
    return row;
  }
  // ms = s/N in k_m roundings; η when it could be subnormal
  const double g_m = gamma_of(a, mean_roundings(a, n));
  const double s_abs_value = std::fabs(s);
  const double ms_up = (s_abs_value + s_error) / count * (1 + g_m) + a.eta;
  const double ms_lo = std::max(0.0, s_abs_value - s_error) / count * (1 - g_m);
  const double ms_eta = ms_lo < a.tiny ? a.eta : 0;
  // c = ms·r̂·r̂·r̂ in any association: three products, plus one spare rounding for a kernel
  // that forms the pieces in a different order
  const double g_c = gamma_of(a, mean_roundings(a, n) + 4);
  const double r_up3 = r_up * r_up * r_up;
  // the shipped order forms ms·r̂ and ms·r̂² (and r̂² in the liger and reference orders): past
  // FLT_MAX no admitted order is finite. r̂³ and ms·r̂³ are formed only by the abi and reference
  // orders: their overflow leaves the row in the domain, with a hazard naming those orders
  if (r_up * r_up > a.big || ms_up * r_up > a.big || ms_up * r_up * r_up > a.big) {
    row.reason = domain_reason::intermediate_overflow;
    return row;
  }
  // an intermediate of the chain that could be subnormal leaves η times the factors still to come
  double chain = 0;
  if (r_lo * r_lo < a.tiny) chain += ms_up * r_up;
  if (ms_lo * r_lo < a.tiny) chain += r_up * r_up;
  if (r_lo * r_lo * r_lo < a.tiny) chain += ms_up;
  if (ms_lo * r_lo * r_lo < a.tiny) chain += r_up;
  if (ms_lo * r_lo * r_lo * r_lo < a.tiny) chain += 1;
  // the liger order's coefficient ((−1/N)·r̂)·r̂ could be subnormal where r̂² is not: its η
  // is multiplied by ŝ, x_j and r̂ (and r̂ once more for (−1/N)·r̂)
  const double s_up = (s_abs_value + s_error) * (1 + a.u);
  if (r_lo * r_lo / count * (1 - g_m) < a.tiny) chain += s_up * r_up;
  if (r_lo / count * (1 - g_m) < a.tiny) chain += s_up * r_up * r_up;
  const double chain_underflow = (a.eta * chain + ms_eta * r_up3) * (1 + g_c);
  // the torch order's Σ u·x̂: each x̂_k = x_k·r̂ that could be subnormal leaves η·|u_k|, each
  // product η, each subnormal û_k η·|x̂_k|; the mean m = ŝ'/N (η when it could be subnormal) then
  // reaches dx_j as x̂_j·m·r̂: in units of the coefficient of x_j, times r̂²
  const double torch_s_underflow =
      a.eta * (count + (1 + a.u) * tiny_xr_u + r_up * (1 + a.u) * tiny_u_x) * (1 + gamma_of(a, count));
  const double torch_m_eta = ms_lo * r_lo * (1 - g_c) < a.tiny ? a.eta : 0;
  const double torch_underflow = (torch_s_underflow / count * (1 + g_m) + torch_m_eta) * r_up * r_up * (1 + g_c);
  const double delta_c = (1 + forward.rho_r) * (1 + forward.rho_r) * (1 + forward.rho_r) * (1 + g_c) - 1;
  const double r3 = r * r * r;
  row.c_error = (row.c_abs * delta_c + s_error / count * r3 * (1 + delta_c) + chain_underflow + torch_underflow) *
                bound_inflation;
  row.c_underflow = s_underflow / count * r3 * (1 + delta_c) + chain_underflow + torch_underflow;
  row.c_lo = std::max(0.0, row.c_abs - row.c_error);
  row.first_relative = (1 + forward.rho_r) * (1 + a.u) * (1 + a.u) - 1;
  row.c_over_r_up = ms_up * r_up * r_up * (1 + g_c);
  row.c_over_r_lo = ms_lo * r_lo * r_lo * (1 - g_c);
  row.ms_up = ms_up;
  row.ms_lo = ms_lo;
  row.s_up = s_up;
  return row;
}

/// x_j·c formed as (x_j·r̂)·(ŝ/N·r̂·r̂): x_j·r̂ could be subnormal, and its underflow is then
/// multiplied by ĉ/r̂, which may be large (values near 2^41 next to subnormals, ε = 1000). The
/// product rounds to the nearest float and 0 is one, so that error is at most η and at most |x_j·r̂|
inline double x_times_r_underflow(const arithmetic& a, const backward_row& row, double x_abs) {
  if (!(x_abs > 0 && x_abs * row.forward.r_lo < a.tiny)) return 0;
  return std::min(a.eta, x_abs * row.forward.r_up) * row.c_over_r_up;
}

/// the abi and reference orders form x_j·r̂³ first: a subnormal one leaves at most η (and at
/// most itself), multiplied by ŝ/N; abi's (x_j·r̂³)·ŝ, divided by N only after, adds η/N
inline double x_times_r3_underflow(const arithmetic& a, const backward_row& row, double x_abs) {
  const double r_lo = row.forward.r_lo, r_up = row.forward.r_up;
  if (!(x_abs > 0 && row.ms_up > 0)) return 0;
  const double x_r3_lo = x_abs * r_lo * r_lo * r_lo * (1 - 3 * a.u);
  double error = 0;
  if (x_r3_lo < a.tiny) error += std::min(a.eta, x_abs * r_up * r_up * r_up * (1 + 3 * a.u)) * row.ms_up * (1 + 2 * a.u);
  if (x_r3_lo * row.ms_lo < a.tiny) error += a.eta;
  return error;
}

/// the torch order's x̂_j·m and the liger order's c'·x_j are both x_j·ĉ/r̂, multiplied by r̂
/// after: a subnormal one leaves at most η (and at most itself) times r̂
inline double x_times_c_over_r_underflow(const arithmetic& a, const backward_row& row, double x_abs) {
  if (!(x_abs > 0 && row.c_over_r_up > 0 && x_abs * row.c_over_r_lo < a.tiny)) return 0;
  return std::min(a.eta, x_abs * row.c_over_r_up) * row.forward.r_up * (1 + a.u);
}

/// the hazard of an element's row for the abi and reference orders: r³ (the row's own), x·r³
/// or (x·r³)·s past FLT_MAX; none where those orders stay finite
inline order_hazard hazard_of(const arithmetic& a, const backward_row& row, double x_max) {
  if (row.hazard != order_hazard::none || row.reason != domain_reason::none) return row.hazard;
  const double x_r3 = x_max * row.forward.r_up * row.forward.r_up * row.forward.r_up * (1 + 3 * a.u);
  if (x_r3 > a.big) return order_hazard::x_r_cubed_overflow;
  if (x_r3 * row.s_up * (1 + a.u) > a.big) return order_hazard::x_r_cubed_s_overflow;
  return order_hazard::none;
}

/// the bound of dx_j = r·u_j − x_j·c with u_j = dy_j·γ_j and dx_abs = |dx_j| exactly
inline element_bound bound_dx(const arithmetic& a, const output_rounding& out, const backward_row& row, double x,
                              double u, double dx_abs) {
  element_bound e;
  const double r = row.forward.r;
  const double u_abs = std::fabs(u);
  const double x_abs = std::fabs(x);
  e.scale = r * u_abs + x_abs * (row.c_abs + row.c_shadow);
  // term 1, r̂·û: the r̂ error and two roundings; û's underflow scaled by r̂; the product's underflow
  const double t1 = r * u_abs;
  const double u_eta = (u_abs > 0 && u_abs < a.tiny) ? a.eta : 0;
  const double t1_eta = (u_abs > 0 && row.forward.r_lo * u_abs * (1 - 2 * a.u) < a.tiny) ? a.eta : 0;
  const double e1 = t1 * row.first_relative + row.forward.r_up * (1 + a.u) * u_eta + t1_eta;
  // term 2, x·ĉ: ĉ's error carried by |x|, one rounding, the product's underflow; formed as
  // (x·r̂)·(ĉ/r̂) instead, the same roundings (ĉ's spare one) and x·r̂'s underflow
  const double t2 = x_abs * row.c_abs;
  const double t2_eta = (x_abs > 0 && x_abs * row.c_lo * (1 - a.u) < a.tiny) ? a.eta : 0;
  const double xr_eta = x_times_r_underflow(a, row, x_abs);
  // the other orders' subnormal intermediates: x·r̂³ (abi, reference), x·ĉ/r̂ (torch, liger)
  const double order_eta = x_times_r3_underflow(a, row, x_abs) + x_times_c_over_r_underflow(a, row, x_abs);
  const double e2 = x_abs * row.c_error * (1 + a.u) + a.u * t2 + t2_eta + xr_eta + order_eta;
  if (u_abs * (1 + a.u) > a.big || u_abs * x_abs * (1 + a.u) * (1 + a.u) > a.big ||
      row.forward.r_up * u_abs * (1 + a.u) * (1 + a.u) > a.big || x_abs * (row.c_abs + row.c_error) * (1 + a.u) > a.big ||
      x_abs * row.forward.r_up * (1 + a.u) > a.big) {
    e.reason = domain_reason::intermediate_overflow;
    return e;
  }
  // the subtraction (or an fma in its place): one rounding, exact when subnormal. The torch
  // order ends with a product, r̂·(u − x̂·m): one subnormal ulp more where dx could be subnormal
  const double before = (e1 + e2) * (1 + a.u) + a.u * dx_abs;
  const double kernel = before + (dx_abs < a.tiny + before ? 2 * a.eta : 0);
  if (dx_abs + kernel > a.big) {
    e.reason = domain_reason::intermediate_overflow;
    return e;
  }
  const double rounded = (1 + out.u) * kernel + out.u * dx_abs + out.eta;
  e.bound = (rounded + oracle_rounding * dx_abs) * bound_inflation;
  e.underflow = (row.forward.r_up * (1 + a.u) * u_eta + x_abs * (1 + a.u) * row.c_underflow + xr_eta + order_eta) *
                (1 + a.u) * (1 + out.u);
  if (dx_abs + e.bound >= out.overflow) e.reason = domain_reason::output_overflow;
  return e;
}

/// bound_dx of a row without amplified underflow (no u_j below 2^-126, no x_j·r̂ that could be
/// subnormal), as a linear form:
/// per_u·|u| + per_x·|x| + per_dx·|dx| + offset, plus the products' own η where they could be
/// subnormal at all (u_eta for u ≠ 0, x_eta for x ≠ 0)
struct linear_dx {
  double per_u = 0, per_x = 0, per_dx = 0, offset = 0, u_eta = 0, x_eta = 0;
  double subnormal_limit = 0;  ///< a dx below this (plus its bound) could be a subnormal product (torch)
  double subnormal_eta = 0;    ///< and then carries this

  double bound(double u_abs, double x_abs, double dx_abs) const {
    const double b =
        u_abs * per_u + x_abs * per_x + dx_abs * per_dx + offset + (u_abs > 0 ? u_eta : 0) + (x_abs > 0 ? x_eta : 0);
    return dx_abs < subnormal_limit + b ? b + subnormal_eta : b;
  }
};

/// whether the row has no amplified underflow and no overflow before the subtraction, judged on
/// its operands' extremes; fills the linear form of bound_dx when it does
inline bool dx_stays_normal(const arithmetic& a, const output_rounding& out, const backward_row& row,
                            const extremes& x, const extremes& u, linear_dx& line) {
  const double r_up = row.forward.r_up;
  // x·r̂³ of the abi and reference orders that could be subnormal: per element (its error is
  // at most the product itself, which a constant would overstate for the row's large x)
  if (u.min < a.tiny || x_times_r_underflow(a, row, x.min) > 0 || x_times_r3_underflow(a, row, x.min) > 0) return false;
  if (u.max * (1 + a.u) > a.big || u.max * x.max * (1 + a.u) * (1 + a.u) > a.big ||
      r_up * u.max * (1 + a.u) * (1 + a.u) > a.big || x.max * (row.c_abs + row.c_error) * (1 + a.u) > a.big ||
      x.max * r_up * (1 + a.u) > a.big)
    return false;
  // e1 = r·|u|·first_relative (+ η), e2 = |x|·(c_error·(1+u) + u·|c|) (+ η),
  // kernel = (e1 + e2)(1+u) + u·|dx|, then the output's rounding and the oracle's
  const double carry = (1 + a.u) * (1 + out.u) * bound_inflation;
  line.per_u = row.forward.r * row.first_relative * carry;
  line.per_x = (row.c_error * (1 + a.u) + a.u * row.c_abs) * carry;
  line.per_dx = (a.u * (1 + out.u) + out.u + oracle_rounding) * bound_inflation;
  line.offset = out.eta * bound_inflation;
  line.u_eta = row.forward.r_lo * u.min * (1 - 2 * a.u) < a.tiny ? a.eta * carry : 0;
  // x·ĉ/r̂ (torch, liger) that could be subnormal for the row's smallest x: at most η·r̂ anywhere
  const bool x_c_over_r_tiny = x.min * row.c_over_r_lo < a.tiny && row.c_over_r_up > 0;
  line.x_eta = (x.min * row.c_lo * (1 - a.u) < a.tiny ? a.eta : 0) + (x_c_over_r_tiny ? a.eta * r_up * (1 + a.u) : 0);
  line.x_eta *= carry;
  line.subnormal_limit = a.tiny;
  line.subnormal_eta = 2 * a.eta * (1 + out.u) * bound_inflation;
  return true;
}

/// the running sums of one dgamma column over its rows
struct column_sums {
  double t_abs = 0;       ///< Σ_i |dy·x·r_i|
  double t_abs_rho = 0;   ///< Σ_i |dy·x·r_i|·ρ_{r,i}
  double eta = 0;         ///< Σ_i underflow of the products
  double underflow = 0;   ///< Σ_i the first products' underflow (the amplified share)
  domain_reason reason = domain_reason::none;
};

/// adds row i's contribution t = dy·x·r_i (t_abs = |t| exactly) to a column's sums
inline void add_contribution(const arithmetic& a, const forward_row& row, double dy, double x, double t_abs,
                             column_sums& sums) {
  if (dy == 0 || x == 0) return;
  const triple_product p = bound_triple_product(a, row, std::fabs(dy), std::fabs(x), t_abs);
  if (p.overflows && sums.reason == domain_reason::none) sums.reason = domain_reason::intermediate_overflow;
  sums.t_abs += t_abs;
  sums.t_abs_rho += t_abs * row.rho_r;
  sums.eta += p.eta_first + p.eta_final;
  sums.underflow += p.eta_first;
}

/// add_contribution for a row whose products stay normal: no η and no overflow to track
inline void add_contribution_normal(const forward_row& row, double t_abs, column_sums& sums) {
  sums.t_abs += t_abs;
  sums.t_abs_rho += t_abs * row.rho_r;
}

/// the bound of dgamma_j = Σ_i t_i over m rows, g_abs = |dgamma_j| exactly
inline element_bound bound_dgamma(const arithmetic& a, const output_rounding& out, std::int64_t m,
                                  const column_sums& sums, double g_abs) {
  element_bound e;
  e.reason = sums.reason;
  if (e.reason != domain_reason::none) return e;
  const double rows = static_cast<double>(m);
  const double sum_growth = 1 + (rows + 2) * 0x1p-52;
  const double t_abs = sums.t_abs * sum_growth;
  e.scale = t_abs;
  const double g_2 = gamma_of(a, 2);
  const double g_sum = gamma_of(a, std::max(0.0, rows - 1));
  if (g_sum == infinity) {
    e.reason = domain_reason::accumulation_too_long;
    return e;
  }
  // each contribution: r̂_i's error and two roundings, plus its underflow terms
  const double terms = ((1 + g_2) * sums.t_abs_rho * sum_growth + g_2 * t_abs + sums.eta * sum_growth);
  // the sum over rows in any order (γ_{M−1}); an fma accumulation adds η per row
  const double kernel = (1 + g_sum) * terms + g_sum * t_abs + rows * a.eta;
  if (t_abs + terms + kernel > a.big) {
    e.reason = domain_reason::intermediate_overflow;
    return e;
  }
  const double rounded = (1 + out.u) * kernel + out.u * g_abs + out.eta;
  e.bound = (rounded + oracle_rounding * g_abs) * bound_inflation;
  e.underflow = sums.underflow * sum_growth * (1 + g_sum) * (1 + out.u);
  if (g_abs + e.bound >= out.overflow) e.reason = domain_reason::output_overflow;
  if (e.reason == domain_reason::none && underflow_swamps(e.underflow, e.scale, out))
    e.reason = domain_reason::intermediate_underflow;
  return e;
}

}  // namespace nc::oracle::model
