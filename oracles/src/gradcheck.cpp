// Central finite differences of the exact forward at 50 digits against an analytic backward.
#include "normcheck/oracles/gradcheck.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "exact_mp.hpp"
#include "reference_formula.hpp"

namespace nc::oracle {
namespace {

using real = gradcheck_real;

/// the step, in units of a row's scale 1/r
const real relative_step = real("1e-17");

struct real_case {
  std::int64_t m, n;
  std::vector<real> x, gamma, dy;
  real epsilon;
};

real_case upcast(const gradcheck_case& c) {
  real_case r{c.m, c.n, {}, {}, {}, real(c.epsilon)};
  r.x.assign(c.x.begin(), c.x.end());
  r.gamma.assign(c.gamma.begin(), c.gamma.end());
  r.dy.assign(c.dy.begin(), c.dy.end());
  return r;
}

std::span<const real> row_of(const std::vector<real>& v, std::int64_t n, std::int64_t i) {
  return {v.data() + i * n, static_cast<std::size_t>(n)};
}

/// y of one row by the exact forward: y_j = x_j·r·γ_j
void forward_row(std::span<const real> x, std::span<const real> gamma, const real& epsilon, std::span<real> y) {
  const real r = mp::forward_row<real>(x, epsilon).r;
  for (std::size_t j = 0; j < x.size(); ++j) y[j] = x[j] * r * gamma[j];
}

/// the step for row i: h = 10^-17 / r
real step_of(const real_case& c, std::int64_t i) {
  return relative_step / mp::forward_row<real>(row_of(c.x, c.n, i), c.epsilon).r;
}

/// ∂y_i/∂x_i·u_i of one row by central differences
std::vector<real> row_directional(const real_case& c, std::int64_t i, std::span<const real> u) {
  const std::size_t n = static_cast<std::size_t>(c.n);
  const real h = step_of(c, i);
  std::vector<real> plus(n), minus(n), xp(n), xm(n), out(n);
  const std::span<const real> x = row_of(c.x, c.n, i);
  for (std::size_t j = 0; j < n; ++j) {
    xp[j] = x[j] + h * u[j];
    xm[j] = x[j] - h * u[j];
  }
  forward_row(xp, c.gamma, c.epsilon, plus);
  forward_row(xm, c.gamma, c.epsilon, minus);
  for (std::size_t j = 0; j < n; ++j) out[j] = (plus[j] - minus[j]) / (2 * h);
  return out;
}

/// ∂y/∂γ·w over all rows by central differences (y is linear in γ: only rounding remains)
std::vector<real> gamma_directional(const real_case& c, std::span<const real> w) {
  const std::size_t n = static_cast<std::size_t>(c.n);
  const real h = relative_step;
  std::vector<real> gp(n), gm(n), plus(n), minus(n), out(static_cast<std::size_t>(c.m) * n);
  for (std::size_t k = 0; k < n; ++k) {
    gp[k] = c.gamma[k] + h * w[k];
    gm[k] = c.gamma[k] - h * w[k];
  }
  for (std::int64_t i = 0; i < c.m; ++i) {
    forward_row(row_of(c.x, c.n, i), gp, c.epsilon, plus);
    forward_row(row_of(c.x, c.n, i), gm, c.epsilon, minus);
    for (std::size_t j = 0; j < n; ++j) out[static_cast<std::size_t>(i) * n + j] = (plus[j] - minus[j]) / (2 * h);
  }
  return out;
}

double to_double(const real& v) { return v.convert_to<double>(); }

/// max |a − f| / max |f| over two matrices of the same size
double normwise(const std::vector<real>& analytic, const std::vector<real>& numeric) {
  real worst = 0, scale = 0;
  for (std::size_t k = 0; k < analytic.size(); ++k) {
    worst = std::max(worst, real(abs(analytic[k] - numeric[k])));
    scale = std::max(scale, real(abs(numeric[k])));
  }
  if (scale == 0) return worst == 0 ? 0.0 : HUGE_VAL;
  return to_double(worst / scale);
}

/// |a − f| / shadow, shadow = Σ|terms| of f's inner product
double projected(const real& analytic, const real& numeric, const real& shadow) {
  const real difference = abs(analytic - numeric);
  if (shadow == 0) return difference == 0 ? 0.0 : HUGE_VAL;
  return to_double(difference / shadow);
}

gradcheck_report full_jacobian(const real_case& c, const backward_formula& formula, gradcheck_report report) {
  const std::int64_t size = c.m * c.n;
  const std::size_t n = static_cast<std::size_t>(c.n);
  // analytic: row (i, j) of each Jacobian is the backward of the unit cotangent e_ij
  std::vector<real> ax(static_cast<std::size_t>(size * size)), ag(static_cast<std::size_t>(size) * n);
  std::vector<real> dy(static_cast<std::size_t>(size)), dx(static_cast<std::size_t>(size)), dgamma(n);
  for (std::int64_t out = 0; out < size; ++out) {
    std::fill(dy.begin(), dy.end(), real(0));
    dy[static_cast<std::size_t>(out)] = 1;
    formula(c.m, c.n, c.x, c.gamma, dy, c.epsilon, dx, dgamma);
    std::copy(dx.begin(), dx.end(), ax.begin() + out * size);
    std::copy(dgamma.begin(), dgamma.end(), ag.begin() + out * c.n);
  }
  // numeric: column (i, k) of ∂y/∂x from perturbing x_ik (rows are independent: only row i moves)
  std::vector<real> fx(ax.size(), real(0)), fg(ag.size(), real(0)), unit(n);
  for (std::int64_t i = 0; i < c.m; ++i) {
    for (std::size_t k = 0; k < n; ++k) {
      std::fill(unit.begin(), unit.end(), real(0));
      unit[k] = 1;
      const std::vector<real> column = row_directional(c, i, unit);
      for (std::size_t j = 0; j < n; ++j)
        fx[static_cast<std::size_t>((i * c.n + static_cast<std::int64_t>(j)) * size + i * c.n) + k] = column[j];
    }
  }
  // numeric: column k of ∂y/∂γ from perturbing γ_k
  for (std::size_t k = 0; k < n; ++k) {
    std::fill(unit.begin(), unit.end(), real(0));
    unit[k] = 1;
    const std::vector<real> column = gamma_directional(c, unit);
    for (std::int64_t out = 0; out < size; ++out) fg[static_cast<std::size_t>(out) * n + k] = column[static_cast<std::size_t>(out)];
  }
  report.mode = gradcheck_mode::full_jacobian;
  report.dx_disagreement = normwise(ax, fx);
  report.dgamma_disagreement = normwise(ag, fg);
  return report;
}

gradcheck_report projections(const real_case& c, const backward_formula& formula, const gradcheck_options& options,
                             gradcheck_report report) {
  const std::size_t size = static_cast<std::size_t>(c.m * c.n);
  const std::size_t n = static_cast<std::size_t>(c.n);
  std::mt19937_64 rng(options.seed);
  std::normal_distribution<double> normal;
  report.mode = gradcheck_mode::projections;
  for (int p = 0; p < options.projections; ++p) {
    // v: the case's dy first, then random; u and w random
    std::vector<real> v(size), u(size), w(n), dx(size), dgamma(n);
    for (std::size_t k = 0; k < size; ++k) v[k] = p == 0 && !c.dy.empty() ? c.dy[k] : real(normal(rng));
    for (auto& e : u) e = normal(rng);
    for (auto& e : w) e = normal(rng);
    formula(c.m, c.n, c.x, c.gamma, v, c.epsilon, dx, dgamma);
    // analytic vᵀ·J·u = ⟨dx, u⟩ and vᵀ·J_γ·w = ⟨dgamma, w⟩
    real a_x = 0, a_g = 0;
    for (std::size_t k = 0; k < size; ++k) a_x += dx[k] * u[k];
    for (std::size_t k = 0; k < n; ++k) a_g += dgamma[k] * w[k];
    // numeric ⟨v, J·u⟩ row by row, and ⟨v, J_γ·w⟩
    real f_x = 0, s_x = 0, f_g = 0, s_g = 0;
    for (std::int64_t i = 0; i < c.m; ++i) {
      const std::vector<real> ju = row_directional(c, i, row_of(u, c.n, i));
      for (std::size_t j = 0; j < n; ++j) {
        const real term = v[static_cast<std::size_t>(i) * n + j] * ju[j];
        f_x += term;
        s_x += abs(term);
      }
    }
    const std::vector<real> jw = gamma_directional(c, w);
    for (std::size_t k = 0; k < size; ++k) {
      const real term = v[k] * jw[k];
      f_g += term;
      s_g += abs(term);
    }
    report.dx_disagreement = std::max(report.dx_disagreement, projected(a_x, f_x, s_x));
    report.dgamma_disagreement = std::max(report.dgamma_disagreement, projected(a_g, f_g, s_g));
  }
  return report;
}

}  // namespace

backward_formula exact_backward_formula() {
  return [](std::int64_t m, std::int64_t n, std::span<const real> x, std::span<const real> gamma,
            std::span<const real> dy, const real& epsilon, std::span<real> dx, std::span<real> dgamma) {
    std::fill(dgamma.begin(), dgamma.end(), real(0));
    const auto width = static_cast<std::size_t>(n);
    for (std::int64_t i = 0; i < m; ++i) {
      const auto xi = x.subspan(static_cast<std::size_t>(i) * width, width);
      const auto dyi = dy.subspan(static_cast<std::size_t>(i) * width, width);
      const real r = mp::forward_row<real>(xi, epsilon).r;
      mp::backward_row<real>(xi, gamma, dyi, r, dx.subspan(static_cast<std::size_t>(i) * width, width));
      for (std::size_t j = 0; j < width; ++j) dgamma[j] += dyi[j] * xi[j] * r;
    }
  };
}

backward_formula reference_backward_formula() {
  return [](std::int64_t m, std::int64_t n, std::span<const real> x, std::span<const real> gamma,
            std::span<const real> dy, const real& epsilon, std::span<real> dx, std::span<real> dgamma) {
    reference_formula::backward<real, real>(m, n, x.data(), gamma.data(), dy.data(), epsilon,
                                            [](const real& v) { return v; }, dx.data(), dgamma.data());
  };
}

gradcheck_report gradcheck(const gradcheck_case& c, const backward_formula& formula, const gradcheck_options& options) {
  const real_case rc = upcast(c);
  gradcheck_report report;
  report.name = c.name;
  report.m = c.m;
  report.n = c.n;
  if (c.m * c.n <= options.full_jacobian_limit) return full_jacobian(rc, formula, report);
  return projections(rc, formula, options, report);
}

std::vector<gradcheck_case> gradcheck_cases(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  // a case with normal(0, scale) x, γ and dy; ε as given
  auto random_case = [&](std::string name, std::int64_t m, std::int64_t n, double x_scale, double epsilon) {
    gradcheck_case c{std::move(name), m, n, epsilon, {}, {}, {}};
    for (std::int64_t k = 0; k < m * n; ++k) c.x.push_back(x_scale * normal(rng));
    for (std::int64_t k = 0; k < n; ++k) c.gamma.push_back(1 + 0.5 * normal(rng));
    for (std::int64_t k = 0; k < m * n; ++k) c.dy.push_back(normal(rng));
    return c;
  };
  std::vector<gradcheck_case> cases;
  cases.push_back({"document [3, 4], dy [1, 2]", 1, 2, 1e-6, {3, 4}, {1, 1}, {1, 2}});
  for (std::int64_t n : {1, 2, 3, 7, 16})
    for (std::int64_t m : {1, 3})
      cases.push_back(random_case("normal " + std::to_string(m) + "x" + std::to_string(n), m, n, 1, 1e-6));
  // mean(x²) ≈ 1e-8 against ε = 1e-6: ε dominates r
  for (std::int64_t n : {1, 3, 16}) cases.push_back(random_case("epsilon-dominated 2x" + std::to_string(n), 2, n, 1e-4, 1e-6));
  cases.push_back(random_case("epsilon 0, 2x5", 2, 5, 1, 0));
  cases.push_back(random_case("large epsilon 1x4", 1, 4, 1, 0.5));
  // rows mixing both regimes, and the long rows of the projection mode
  gradcheck_case mixed = random_case("mixed rows 4x8", 4, 8, 1, 1e-6);
  for (std::size_t k = 8; k < 16; ++k) mixed.x[k] *= 1e-4;
  cases.push_back(mixed);
  cases.push_back(random_case("normal 1x257", 1, 257, 1, 1e-6));
  cases.push_back(random_case("normal 17x257", 17, 257, 1, 1e-6));
  cases.push_back(random_case("epsilon-dominated 3x257", 3, 257, 1e-4, 1e-6));
  cases.push_back(random_case("normal 2x1000", 2, 1000, 1, 1e-6));
  return cases;
}

// the negative controls: the document's plain-loop backward, each mistake switchable
backward_formula mistaken_backward_formula(backward_mistakes wrong) {
  return [wrong](std::int64_t m, std::int64_t n, std::span<const real> x, std::span<const real> gamma,
                 std::span<const real> dy, const real& epsilon, std::span<real> dx, std::span<real> dgamma) {
    std::int64_t block = 1;
    while (block < n) block *= 2;
    std::fill(dgamma.begin(), dgamma.end(), real(0));
    for (std::int64_t i = 0; i < m; ++i) {
      real ss = 0, ux = 0;
      for (std::int64_t j = 0; j < n; ++j) {
        ss += x[i * n + j] * x[i * n + j];
        ux += dy[i * n + j] * gamma[j] * x[i * n + j];
      }
      const real r = 1 / sqrt(ss / n + (wrong.epsilon_dropped ? real(0) : epsilon));
      const real mean_ux = ux / (wrong.mean_over_block ? block : n);
      const real r_power = wrong.r_squared ? r * r : r * r * r;
      for (std::int64_t j = 0; j < n; ++j) {
        const real u = dy[i * n + j] * gamma[j];
        const real second = x[i * n + j] * r_power * mean_ux;
        dx[i * n + j] = wrong.second_term_flipped ? r * u + second : r * u - second;
        dgamma[j] += dy[i * n + j] * x[i * n + j] * r;
      }
    }
    if (wrong.dgamma_averaged)
      for (auto& g : dgamma) g /= m;
  };
}

}  // namespace nc::oracle
