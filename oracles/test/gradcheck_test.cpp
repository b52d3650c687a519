// gradcheck: the analytic backwards of the exact oracle and of the reference agree with finite
// differences to 1e-20 at 50 digits, and each of the classic wrong formulas is caught.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "normcheck/oracles/gradcheck.hpp"
#include "test_support.hpp"

namespace nc::oracle {
namespace {

using real = gradcheck_real;

constexpr double tolerance = gradcheck_tolerance;
/// a wrong formula must miss by far more than the tolerance
constexpr double caught = gradcheck_caught;

const std::vector<gradcheck_case>& cases() {
  static const std::vector<gradcheck_case> all = gradcheck_cases(testing::seed());
  return all;
}

/// the worst disagreement of formula over the cases, printing one line per case
double worst_over_cases(const backward_formula& formula, const char* label, bool print) {
  double worst = 0;
  for (const gradcheck_case& c : cases()) {
    const gradcheck_report r = gradcheck(c, formula);
    if (print)
      std::printf("%-10s | %-32s | %-13s | dx %.3g | dgamma %.3g\n", label, r.name.c_str(),
                  r.mode == gradcheck_mode::full_jacobian ? "full Jacobian" : "projections", r.dx_disagreement,
                  r.dgamma_disagreement);
    worst = std::max(worst, r.worst());
  }
  if (!print) std::printf("%-10s | worst disagreement over %zu cases: %.3g\n", label, cases().size(), worst);
  return worst;
}

backward_formula wrong_backward(backward_mistakes wrong) { return mistaken_backward_formula(wrong); }

TEST(gradcheck, agrees_with_the_exact_backward_to_1e_20_on_every_case) {
  EXPECT_LE(worst_over_cases(exact_backward_formula(), "exact", true), tolerance);
}

TEST(gradcheck, agrees_with_the_reference_backward_to_1e_20_on_every_case) {
  EXPECT_LE(worst_over_cases(reference_backward_formula(), "reference", true), tolerance);
}

TEST(gradcheck, agrees_with_the_test_formula_written_without_mistakes) {
  EXPECT_LE(worst_over_cases(wrong_backward({}), "plain", false), tolerance);
}

TEST(gradcheck, catches_r_squared_in_place_of_r_cubed) {
  EXPECT_GT(worst_over_cases(wrong_backward({.r_squared = true}), "r^2", false), caught);
}

TEST(gradcheck, catches_the_mean_over_block_and_only_where_n_is_not_a_power_of_two) {
  const backward_formula f = wrong_backward({.mean_over_block = true});
  EXPECT_GT(worst_over_cases(f, "BLOCK", false), caught);
  for (const gradcheck_case& c : cases()) {
    const double d = gradcheck(c, f).dx_disagreement;
    const bool power_of_two = (c.n & (c.n - 1)) == 0;
    if (power_of_two) {
      EXPECT_LE(d, tolerance) << c.name << ": BLOCK = N hides the bug";
    } else {
      EXPECT_GT(d, caught) << c.name;
    }
  }
}

TEST(gradcheck, catches_dgamma_averaged_over_rows_wherever_m_exceeds_1) {
  const backward_formula f = wrong_backward({.dgamma_averaged = true});
  EXPECT_GT(worst_over_cases(f, "averaged", false), caught);
  for (const gradcheck_case& c : cases()) {
    const double d = gradcheck(c, f).dgamma_disagreement;
    if (c.m == 1) {
      EXPECT_LE(d, tolerance) << c.name;
    } else {
      EXPECT_GT(d, caught) << c.name;
    }
  }
}

TEST(gradcheck, catches_epsilon_dropped_from_r_most_where_epsilon_dominates) {
  const backward_formula f = wrong_backward({.epsilon_dropped = true});
  EXPECT_GT(worst_over_cases(f, "no epsilon", false), 0.1);
  for (const gradcheck_case& c : cases()) {
    if (c.name.starts_with("epsilon-dominated")) {
      EXPECT_GT(gradcheck(c, f).dx_disagreement, 0.1) << c.name;
    }
  }
}

TEST(gradcheck, catches_the_sign_of_the_second_term_flipped) {
  EXPECT_GT(worst_over_cases(wrong_backward({.second_term_flipped = true}), "flipped", false), caught);
}

}  // namespace
}  // namespace nc::oracle

// ---- the variants (abi.h "Variants"): L = Σ dy·y + Σ g·h along x, the residual and γ ----

namespace nc::oracle {
namespace {

double worst_variant(const variant_backward_formula& formula, variant_of_check variant, const char* label) {
  double worst = 0;
  for (const gradcheck_case& c : cases()) worst = std::max(worst, variant_gradcheck(c, variant, formula).worst());
  std::printf("%-34s | worst disagreement over %zu cases: %.3g\n", label, cases().size(), worst);
  return worst;
}

TEST(variant_gradcheck, agrees_with_the_variant_backward_of_every_variant) {
  EXPECT_LE(worst_variant(variant_backward(), {false, 0}, "rmsnorm"), tolerance);
  EXPECT_LE(worst_variant(variant_backward(), {true, 0}, "add_rmsnorm"), tolerance);
  EXPECT_LE(worst_variant(variant_backward(), {false, 1}, "gemma_rmsnorm"), tolerance);
  EXPECT_LE(worst_variant(variant_backward(), {true, 1}, "add_gemma_rmsnorm"), tolerance);
  EXPECT_LE(worst_variant(variant_backward(), {true, 0.5}, "add, offset 0.5"), tolerance);
}

TEST(variant_gradcheck, catches_the_residual_gradient_dropped) {
  EXPECT_GT(worst_variant(variant_backward({.residual_gradient_dropped = true}), {true, 0}, "no residual gradient"), caught);
}

TEST(variant_gradcheck, catches_the_offset_dropped_from_dx_and_applied_to_dgamma) {
  EXPECT_GT(worst_variant(variant_backward({.offset_dropped = true}), {false, 1}, "offset dropped"), caught);
  EXPECT_GT(worst_variant(variant_backward({.offset_in_dgamma = true}), {true, 1}, "offset in dgamma"), caught);
}

TEST(variant_gradcheck, catches_x_normalized_in_place_of_the_sum) {
  EXPECT_GT(worst_variant(variant_backward({.unsummed_h = true}), {true, 0}, "x, not x + residual"), caught);
}

}  // namespace
}  // namespace nc::oracle
