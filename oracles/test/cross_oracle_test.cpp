// Cross-oracle consistency: the document's double reference and the exact oracle agree to 1e-12
// relative on well-conditioned inputs; a disagreement names the case and its condition number.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "normcheck/oracles/exact.hpp"
#include "normcheck/oracles/reference.hpp"
#include "test_support.hpp"

namespace nc::oracle {
namespace {

constexpr double agreement = 1e-12;
/// elements whose |·|-shadow exceeds their value by more than this are ill-conditioned
constexpr double well_conditioned = 1e3;

/// one output's comparison: relative disagreement per element, judged by its condition number
/// κ = shadow/|value|; well-conditioned elements must agree to 1e-12, the rest to 1e-12·κ
void expect_agreement(const std::string& name, const std::vector<double>& reference,
                      const std::vector<double>& exact, const std::vector<double>& shadow, double& worst) {
  for (std::size_t k = 0; k < exact.size(); ++k) {
    const double scale = std::fabs(exact[k]);
    const double relative = scale > 0 ? std::fabs(reference[k] - exact[k]) / scale
                                      : std::fabs(reference[k] - exact[k]) / std::max(shadow[k], 1e-300);
    const double condition = scale > 0 ? shadow[k] / scale : HUGE_VAL;
    worst = std::max(worst, condition <= well_conditioned ? relative : relative / condition);
    if (condition <= well_conditioned)
      EXPECT_LE(relative, agreement) << name << " element " << k << ": reference " << reference[k] << ", exact "
                                     << exact[k] << ", condition number " << condition;
    else
      EXPECT_LE(relative, agreement * condition) << name << " element " << k << " (ill-conditioned, condition number "
                                                 << condition << ")";
  }
}

TEST(cross_oracle, reference_in_double_and_exact_agree_to_1e_12) {
  std::mt19937_64 rng(testing::seed());
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform(-1, 1);
  double worst_y = 0, worst_dx = 0, worst_dgamma = 0;
  int cases = 0;
  for (std::int64_t n : {1, 2, 3, 31, 257, 1000, 4096}) {
    for (std::int64_t m : {1, 17}) {
      if (m * n > 20000) continue;
      for (double scale : {1.0, 1e-4, 1e3}) {
        // f64 values of any precision; ε = 1e-6 dominates the 1e-4 rows
        testing::owned_matrix x(m, n, dtype::f64), dy(m, n, dtype::f64);
        testing::owned_vector gamma(n, dtype::f64);
        for (std::int64_t i = 0; i < m; ++i)
          for (std::int64_t j = 0; j < n; ++j) {
            x.set(i, j, scale * normal(rng));
            dy.set(i, j, normal(rng));
          }
        for (std::int64_t j = 0; j < n; ++j) gamma.set(j, 1 + 0.5 * uniform(rng));
        const std::string name = std::to_string(m) + "x" + std::to_string(n) + " at scale " + std::to_string(scale);
        const forward_problem f{m, n, 1e-6f, x.view, gamma.view, dtype::f64};
        const backward_problem b{m, n, x.view, gamma.view, dy.view, 1e-6f, dtype::f64, dtype::f64};
        const reference_forward_result rf = reference_forward(f);
        const reference_backward_result rb = reference_backward(b);
        const forward_result ef = exact_forward(f);
        const backward_result eb = exact_backward(b);
        // shadows: y has none beyond itself; dx's terms r·|u| + |x·c|; dgamma's Σ|dy·x·r|
        std::vector<double> y_shadow(ef.y.size()), dx_shadow(eb.dx.size()), dgamma_shadow(eb.dgamma.size(), 0.0);
        for (std::size_t k = 0; k < ef.y.size(); ++k) y_shadow[k] = std::fabs(ef.y[k]);
        for (std::int64_t i = 0; i < m; ++i) {
          double s_abs = 0;
          for (std::int64_t j = 0; j < n; ++j) s_abs += std::fabs(dy.at(i, j) * gamma.at(j) * x.at(i, j));
          const double r = ef.r[static_cast<std::size_t>(i)];
          for (std::int64_t j = 0; j < n; ++j) {
            const auto k = static_cast<std::size_t>(i * n + j);
            dx_shadow[k] = r * std::fabs(dy.at(i, j) * gamma.at(j)) + std::fabs(x.at(i, j)) * s_abs / n * r * r * r;
            dgamma_shadow[static_cast<std::size_t>(j)] += std::fabs(dy.at(i, j) * x.at(i, j)) * r;
          }
        }
        expect_agreement(name + " y", rf.y, ef.y, y_shadow, worst_y);
        expect_agreement(name + " dx", rb.dx, eb.dx, dx_shadow, worst_dx);
        expect_agreement(name + " dgamma", rb.dgamma, eb.dgamma, dgamma_shadow, worst_dgamma);
        ++cases;
      }
    }
  }
  std::printf("%d cases: worst relative disagreement (divided by the condition number where above %.0e): "
              "y %.3g, dx %.3g, dgamma %.3g\n",
              cases, well_conditioned, worst_y, worst_dx, worst_dgamma);
}

}  // namespace
}  // namespace nc::oracle
