// A plain fp32-accumulating RMSNorm kernel on the host, in several correct flavours, for
// measuring the exact oracle's bounds: every flavour must stay within them, and how far inside
// is the bound's slack. Compiled with -ffp-contract=off so that fma appears only where chosen.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "normcheck/oracles/dtype.hpp"
#include "normcheck/oracles/problem.hpp"

namespace nc::oracle::testing {

/// how the flavour sums a row (or dgamma's column)
enum class summation { sequential, sequential_fma, pairwise };
/// how it takes rsqrt: 1/sqrtf, or the float at the edge of "within 2 ulp" below or above
enum class rsqrt_flavour { one_over_sqrtf, two_ulp_low, two_ulp_high };

/// the order of dx's second term (kernel_model.hpp and abi.h list them; kernels/examples/ has
/// a plugin of each)
enum class dx_order {
  x_times_c,  ///< x·ĉ with ĉ = s/N·r·r·r
  shipped,    ///< (x·r)·(s/N·r·r), as the shipped kernels form it
  abi,        ///< ((x·(r·r·r))·s)/N: abi.h's formula left to right
  reference,  ///< (x·r³)·(s/N): the document's reference
  torch,      ///< r·(u − x̂·mean(u·x̂)), x̂ = x·r; dgamma's terms dy·x̂
  liger,      ///< r·u + r·(((−1/N·r)·r·s)·x)
};

inline const char* name_of(dx_order o) {
  switch (o) {
    case dx_order::x_times_c: return "x*c";
    case dx_order::shipped: return "(x*r)*(c/r)";
    case dx_order::abi: return "x*(r*r*r)*s/N";
    case dx_order::reference: return "(x*r3)*mean";
    case dx_order::torch: return "r*(u-xhat*mean)";
    case dx_order::liger: return "r*u+r*(k*x)";
  }
  return "?";
}

struct kernel_flavour {
  summation sum = summation::sequential;
  rsqrt_flavour rsqrt = rsqrt_flavour::one_over_sqrtf;
  bool mean_by_reciprocal = false;  ///< ss·(1/N) instead of ss/N
  bool gamma_first = false;         ///< x·(r·γ) instead of (x·r)·γ
  dx_order order = dx_order::x_times_c;
};

inline const char* name_of(summation s) {
  switch (s) {
    case summation::sequential: return "sequential";
    case summation::sequential_fma: return "sequential fma";
    case summation::pairwise: return "pairwise";
  }
  return "?";
}

/// Σ terms in fp32: left to right, by fma of products, or by pairwise halving
inline float sum_of(const std::vector<float>& a, const std::vector<float>& b, summation how, std::size_t first,
                    std::size_t count) {
  if (how == summation::pairwise) {
    if (count == 1) return a[first] * b[first];
    const std::size_t half = count / 2;
    return sum_of(a, b, how, first, half) + sum_of(a, b, how, first + half, count - half);
  }
  float total = 0;
  for (std::size_t k = first; k < first + count; ++k)
    total = how == summation::sequential_fma ? std::fmaf(a[k], b[k], total) : total + a[k] * b[k];
  return total;
}

/// rsqrt of an fp32 q in the chosen flavour; the two edge flavours stay within 2 ulp of the exact value
inline float rsqrt_of(float q, rsqrt_flavour how) {
  if (how == rsqrt_flavour::one_over_sqrtf) return 1.0f / std::sqrt(q);
  const double exact = 1 / std::sqrt(static_cast<double>(q));
  const double two_ulp = 2 * ulp(dtype::f32, exact);
  const double target = how == rsqrt_flavour::two_ulp_high ? exact + two_ulp : exact - two_ulp;
  float r = static_cast<float>(target);
  // round toward the exact value so that the edge stays inside
  if (how == rsqrt_flavour::two_ulp_high && r > target) r = std::nextafter(r, 0.0f);
  if (how == rsqrt_flavour::two_ulp_low && r < target) r = std::nextafter(r, HUGE_VALF);
  return r;
}

/// the kernel's outputs, as values of their dtypes
struct kernel_output {
  std::vector<double> y, r, dx, dgamma;
};

inline std::vector<float> row_of(const matrix_view& v, std::int64_t i, std::int64_t n) {
  std::vector<float> out(static_cast<std::size_t>(n));
  for (std::int64_t j = 0; j < n; ++j) out[static_cast<std::size_t>(j)] = static_cast<float>(v.at(i, j));
  return out;
}

/// forward and backward of the kernel on a problem pair that share x, γ and ε
inline kernel_output run_kernel(const forward_problem& f, const backward_problem& b, const kernel_flavour& k) {
  const std::int64_t m = f.m, n = f.n;
  const auto width = static_cast<std::size_t>(n);
  kernel_output out;
  std::vector<float> gamma(width);
  for (std::int64_t j = 0; j < n; ++j) gamma[static_cast<std::size_t>(j)] = static_cast<float>(f.gamma.at(j));
  std::vector<std::vector<float>> contributions(static_cast<std::size_t>(m), std::vector<float>(width));
  const float count = static_cast<float>(n);
  for (std::int64_t i = 0; i < m; ++i) {
    // upcast to fp32 on load
    const std::vector<float> x = row_of(f.x, i, n);
    const std::vector<float> dy = row_of(b.dy, i, n);
    // r = rsqrt(Σx²/N + ε)
    const float ss = sum_of(x, x, k.sum, 0, width);
    const float mean = k.mean_by_reciprocal ? ss * (1.0f / count) : ss / count;
    const float r = rsqrt_of(mean + f.epsilon, k.rsqrt);
    out.r.push_back(r);
    // y = x·r·γ, rounded to y's dtype
    for (std::size_t j = 0; j < width; ++j) {
      const float y = k.gamma_first ? x[j] * (r * gamma[j]) : (x[j] * r) * gamma[j];
      out.y.push_back(round_to(f.y_type, y));
    }
    // dx = r·u − x·c with u = dy·γ, c = (Σu·x)/N·r³, or c/r = (Σu·x)/N·r² times x·r
    std::vector<float> u(width);
    for (std::size_t j = 0; j < width; ++j) u[j] = dy[j] * gamma[j];
    const float s = sum_of(u, x, k.sum, 0, width);
    const float mean_ux = k.mean_by_reciprocal ? s * (1.0f / count) : s / count;
    const float c_over_r = mean_ux * r * r;
    const float c = c_over_r * r;
    const float r3 = r * r * r;
    std::vector<float> x_hat(width);
    for (std::size_t j = 0; j < width; ++j) x_hat[j] = x[j] * r;
    const float s_hat = sum_of(u, x_hat, k.sum, 0, width);
    const float mean_hat = k.mean_by_reciprocal ? s_hat * (1.0f / count) : s_hat / count;
    const float liger_k = -(1.0f / count) * r * r * s;
    for (std::size_t j = 0; j < width; ++j) {
      float dx = 0;
      switch (k.order) {
        case dx_order::x_times_c: dx = r * u[j] - x[j] * c; break;
        case dx_order::shipped: dx = r * u[j] - (x[j] * r) * c_over_r; break;
        // with the example plugins' guard: where r³ overflows these orders are not correct
        case dx_order::abi: {
          const float term = x[j] * r3 * s / count;
          dx = r * u[j] - (std::isfinite(term) ? term : (x[j] * r) * c_over_r);
          break;
        }
        case dx_order::reference: {
          const float term = x[j] * r3 * mean_ux;
          dx = r * u[j] - (std::isfinite(term) ? term : (x[j] * r) * c_over_r);
          break;
        }
        case dx_order::torch: dx = r * (u[j] - x_hat[j] * mean_hat); break;
        case dx_order::liger: dx = r * u[j] + r * ((std::isfinite(liger_k) ? liger_k : -c_over_r) * x[j]); break;
      }
      out.dx.push_back(round_to(b.dx_type, dx));
    }
    // dgamma's per-row contributions dy·x·r (dy·x̂ in the torch order)
    for (std::size_t j = 0; j < width; ++j)
      contributions[static_cast<std::size_t>(i)][j] = k.order == dx_order::torch ? dy[j] * x_hat[j] : (dy[j] * x[j]) * r;
  }
  // dgamma_j = Σ_i contributions, in the flavour's order, rounded to dgamma's dtype
  for (std::size_t j = 0; j < width; ++j) {
    std::vector<float> column(static_cast<std::size_t>(m)), ones(static_cast<std::size_t>(m), 1.0f);
    for (std::size_t i = 0; i < static_cast<std::size_t>(m); ++i) column[i] = contributions[i][j];
    const float total = m == 0 ? 0.0f : sum_of(column, ones, k.sum, 0, static_cast<std::size_t>(m));
    out.dgamma.push_back(round_to(b.dgamma_type, total));
  }
  return out;
}

}  // namespace nc::oracle::testing
