// The variants' gradcheck (gradcheck.hpp): directional derivatives of L = Σ dy·y + Σ g·h at 50
// digits against a variant backward's gradient.
#include <algorithm>
#include <cmath>
#include <random>

#include "exact_mp.hpp"
#include "normcheck/oracles/gradcheck.hpp"

namespace nc::oracle {
namespace {

using real = gradcheck_real;

struct variant_case {
  std::int64_t m, n;
  std::vector<real> x, residual, gamma, dy, g;
  real epsilon, offset;
};

// the loss at (x, residual, γ): Σ dy·y + Σ g·h over every row
real loss(const variant_case& c, const std::vector<real>& x, const std::vector<real>& residual,
          const std::vector<real>& gamma) {
  real total = 0;
  const auto n = static_cast<std::size_t>(c.n);
  std::vector<real> h(n);
  for (std::int64_t i = 0; i < c.m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      const std::size_t e = static_cast<std::size_t>(i) * n + j;
      h[j] = x[e] + (residual.empty() ? real(0) : residual[e]);
    }
    const real r = mp::forward_row<real>(std::span<const real>(h), c.epsilon).r;
    for (std::size_t j = 0; j < n; ++j) {
      const std::size_t e = static_cast<std::size_t>(i) * n + j;
      total += c.dy[e] * h[j] * r * (c.offset + gamma[j]);
      if (!c.g.empty()) total += c.g[e] * h[j];
    }
  }
  return total;
}

// the step along a direction: 10^-17 of the smallest row scale 1/r
real step_of(const variant_case& c) {
  real smallest = -1;
  const auto n = static_cast<std::size_t>(c.n);
  std::vector<real> h(n);
  for (std::int64_t i = 0; i < c.m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      const std::size_t e = static_cast<std::size_t>(i) * n + j;
      h[j] = c.x[e] + (c.residual.empty() ? real(0) : c.residual[e]);
    }
    const real scale = 1 / mp::forward_row<real>(std::span<const real>(h), c.epsilon).r;
    if (smallest < 0 || scale < smallest) smallest = scale;
  }
  return real("1e-17") * (smallest > 0 ? smallest : real(1));
}

// which input a direction moves
enum class input { x, residual, gamma };

// |analytic − numeric| / shadow for the direction d of one input
double disagreement(const variant_case& c, input which, const std::vector<real>& d, const std::vector<real>& dx,
                    const std::vector<real>& dgamma, const real& h) {
  std::vector<real> xp = c.x, xm = c.x, rp = c.residual, rm = c.residual, gp = c.gamma, gm = c.gamma;
  std::vector<real>& plus = which == input::x ? xp : which == input::residual ? rp : gp;
  std::vector<real>& minus = which == input::x ? xm : which == input::residual ? rm : gm;
  for (std::size_t k = 0; k < d.size(); ++k) plus[k] += h * d[k], minus[k] -= h * d[k];
  const real numeric = (loss(c, xp, rp, gp) - loss(c, xm, rm, gm)) / (2 * h);
  // x and the residual share one gradient, dx = d_residual
  const std::vector<real>& gradient = which == input::gamma ? dgamma : dx;
  real analytic = 0, shadow = 0;
  for (std::size_t k = 0; k < d.size(); ++k) analytic += gradient[k] * d[k], shadow += abs(gradient[k] * d[k]);
  shadow = std::max(shadow, real(abs(numeric)));
  const real difference = abs(analytic - numeric);
  if (shadow == 0) return difference == 0 ? 0.0 : HUGE_VAL;
  return (difference / shadow).convert_to<double>();
}

}  // namespace

variant_backward_formula variant_backward(variant_mistakes wrong) {
  return [wrong](std::int64_t m, std::int64_t n, std::span<const real> x, std::span<const real> residual,
                 std::span<const real> gamma, std::span<const real> dy, std::span<const real> g, const real& epsilon,
                 const real& offset, std::span<real> dx, std::span<real> dgamma) {
    const auto width = static_cast<std::size_t>(n);
    std::vector<real> h(width), u_gamma(width);
    for (std::size_t j = 0; j < width; ++j) u_gamma[j] = (wrong.offset_dropped ? real(0) : offset) + gamma[j];
    std::fill(dgamma.begin(), dgamma.end(), real(0));
    for (std::int64_t i = 0; i < m; ++i) {
      const std::size_t first = static_cast<std::size_t>(i) * width;
      for (std::size_t j = 0; j < width; ++j)
        h[j] = x[first + j] + (residual.empty() || wrong.unsummed_h ? real(0) : residual[first + j]);
      const auto dyi = dy.subspan(first, width);
      const real r = mp::forward_row<real>(std::span<const real>(h), epsilon).r;
      mp::backward_row<real>(std::span<const real>(h), std::span<const real>(u_gamma), dyi, r, dx.subspan(first, width));
      for (std::size_t j = 0; j < width; ++j) {
        if (!g.empty() && !wrong.residual_gradient_dropped) dx[first + j] += g[first + j];
        dgamma[j] += dyi[j] * h[j] * r * (wrong.offset_in_dgamma ? offset + gamma[j] : real(1));
      }
    }
  };
}

gradcheck_report variant_gradcheck(const gradcheck_case& c, const variant_of_check& variant,
                                   const variant_backward_formula& formula, const gradcheck_options& options) {
  variant_case v{c.m, c.n, {}, {}, {}, {}, {}, real(c.epsilon), real(variant.weight_offset)};
  v.x.assign(c.x.begin(), c.x.end());
  v.gamma.assign(c.gamma.begin(), c.gamma.end());
  v.dy.assign(c.dy.begin(), c.dy.end());
  std::mt19937_64 random(options.seed ^ std::uint64_t(c.m * 1000003 + c.n));
  std::normal_distribution<double> normal;
  const auto size = static_cast<std::size_t>(c.m * c.n);
  if (variant.residual) {
    // a residual of the rows' own scale, and the stream's gradient of dy's
    for (std::size_t e = 0; e < size; ++e) v.residual.emplace_back(normal(random) * (std::abs(c.x[e]) + 0.25));
    for (std::size_t e = 0; e < size; ++e) v.g.emplace_back(normal(random));
  }
  std::vector<real> dx(size), dgamma(static_cast<std::size_t>(c.n));
  formula(c.m, c.n, v.x, v.residual, v.gamma, v.dy, v.g, v.epsilon, v.offset, dx, dgamma);
  const real h = step_of(v);

  gradcheck_report report;
  report.name = c.name, report.m = c.m, report.n = c.n;
  const bool small = c.m * c.n <= options.full_jacobian_limit;
  report.mode = small ? gradcheck_mode::full_jacobian : gradcheck_mode::projections;
  // the directions: unit vectors of every input element (small cases), and random ones
  const auto directions = [&](std::size_t count) {
    std::vector<std::vector<real>> out;
    if (small)
      for (std::size_t k = 0; k < count; ++k) {
        std::vector<real> d(count, real(0));
        d[k] = 1;
        out.push_back(std::move(d));
      }
    for (int p = 0; p < options.projections; ++p) {
      std::vector<real> d;
      for (std::size_t k = 0; k < count; ++k) d.emplace_back(normal(random));
      out.push_back(std::move(d));
    }
    return out;
  };
  for (const auto& d : directions(size)) {
    report.dx_disagreement = std::max(report.dx_disagreement, disagreement(v, input::x, d, dx, dgamma, h));
    if (variant.residual)
      report.dx_disagreement = std::max(report.dx_disagreement, disagreement(v, input::residual, d, dx, dgamma, h));
  }
  for (const auto& d : directions(static_cast<std::size_t>(c.n)))
    report.dgamma_disagreement = std::max(report.dgamma_disagreement, disagreement(v, input::gamma, d, dx, dgamma, h));
  return report;
}

}  // namespace nc::oracle
