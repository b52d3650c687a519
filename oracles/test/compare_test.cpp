// The comparator: special values, the domain, both verdicts, and the bound's power to flag a
// result a few ulps beyond it while accepting the correctly rounded one.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "normcheck/oracles/compare.hpp"
#include "normcheck/oracles/exact.hpp"
#include "test_support.hpp"

namespace nc::oracle {
namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double nan = std::numeric_limits<double>::quiet_NaN();
const tolerance f32_table = fixed_tolerance(dtype::f32);

TEST(judge, matches_nan_only_with_nan) {
  EXPECT_TRUE(judge(nan, nan, 1e-7, f32_table).bound_ok);
  EXPECT_TRUE(judge(nan, nan, 1e-7, f32_table).table_ok);
  EXPECT_FALSE(judge(nan, 1.0, 1e-7, f32_table).bound_ok);
  EXPECT_FALSE(judge(nan, 1.0, 1e-7, f32_table).table_ok);
  EXPECT_FALSE(judge(1.0, nan, 1e-7, f32_table).bound_ok);
  EXPECT_FALSE(judge(inf, nan, 1e-7, f32_table).bound_ok);
}

TEST(judge, matches_an_infinity_only_with_the_same_infinity) {
  EXPECT_TRUE(judge(inf, inf, 0, f32_table).bound_ok);
  EXPECT_TRUE(judge(-inf, -inf, 0, f32_table).table_ok);
  EXPECT_FALSE(judge(-inf, inf, 1, f32_table).bound_ok);
  EXPECT_FALSE(judge(3.4e38, inf, 1e38, f32_table).bound_ok);
  EXPECT_FALSE(judge(inf, 3.4e38, 1e38, f32_table).table_ok);
  EXPECT_EQ(judge(inf, 3.4e38, 1e38, f32_table).bound_units, inf);
}

TEST(judge, counts_minus_zero_and_plus_zero_as_equal_even_with_a_zero_bound) {
  const element_verdict v = judge(-0.0, 0.0, 0.0, f32_table);
  EXPECT_TRUE(v.bound_ok);
  EXPECT_TRUE(v.table_ok);
  EXPECT_EQ(v.error, 0);
  EXPECT_EQ(v.bound_units, 0);
}

TEST(judge, admits_only_the_exact_answer_under_a_zero_bound) {
  EXPECT_TRUE(judge(2.0, 2.0, 0.0, f32_table).bound_ok);
  EXPECT_FALSE(judge(std::nextafter(2.0, 3.0), 2.0, 0.0, f32_table).bound_ok);
}

TEST(judge, never_passes_a_missing_bound) {
  EXPECT_FALSE(judge(2.0, 2.0 + 1e-9, nan, f32_table).bound_ok);
}

TEST(judge, measures_subnormals_in_absolute_terms) {
  // two fp32 subnormals one quantum (2^-149) apart, against a half-quantum bound and against a full one
  const double a = 0x1p-149 * 5, b = 0x1p-149 * 6;
  EXPECT_FALSE(judge(a, b, 0x1p-150, f32_table).bound_ok);
  EXPECT_TRUE(judge(a, b, 0x1p-149, f32_table).bound_ok);
  EXPECT_DOUBLE_EQ(judge(a, b, 0x1p-150, f32_table).bound_units, 2.0);
  // and the table's atol swallows them
  EXPECT_TRUE(judge(a, b, 0x1p-150, f32_table).table_ok);
}

TEST(judge, applies_the_documents_fixed_table) {
  // |got − ref| ≤ atol + rtol·|ref|: 1e-5 + 1e-4 at ref = 1 for fp32
  EXPECT_TRUE(judge(1.000109, 1.0, 1, f32_table).table_ok);
  EXPECT_FALSE(judge(1.000111, 1.0, 1, f32_table).table_ok);
  // fp16: 3e-3 + 3e-3; bf16: 1.6e-2 + 1.6e-2
  EXPECT_TRUE(judge(1.0059, 1.0, 1, fixed_tolerance(dtype::f16)).table_ok);
  EXPECT_FALSE(judge(1.0061, 1.0, 1, fixed_tolerance(dtype::f16)).table_ok);
  EXPECT_TRUE(judge(1.0319, 1.0, 1, fixed_tolerance(dtype::bf16)).table_ok);
  EXPECT_FALSE(judge(1.0321, 1.0, 1, fixed_tolerance(dtype::bf16)).table_ok);
}

TEST(tolerance_table, gives_every_entry_its_reason) {
  for (dtype t : {dtype::f32, dtype::f16, dtype::bf16, dtype::f64}) EXPECT_FALSE(fixed_tolerance(t).reason.empty());
  EXPECT_EQ(fixed_tolerance(dtype::f32).atol, 1e-5);
  EXPECT_EQ(fixed_tolerance(dtype::f32).rtol, 1e-4);
  EXPECT_EQ(fixed_tolerance(dtype::f16).atol, 3e-3);
  EXPECT_EQ(fixed_tolerance(dtype::bf16).rtol, 1.6e-2);
}

TEST(compare, skips_and_counts_rows_out_of_the_domain_and_reports_the_first_mismatches) {
  // 3×2 output with a column stride of 2; row 1 out of the domain; row 2 holds NaN in the wrong place
  testing::owned_matrix got(3, 2, dtype::f32, 3, 2, 1);
  const std::vector<double> values = {1, 2, 99, 99, nan, 4};
  for (std::int64_t k = 0; k < 6; ++k) got.set(k / 2, k % 2, values[static_cast<std::size_t>(k)]);
  const std::vector<double> oracle = {1, 2, 3, 4, 3, nan};
  const std::vector<double> bound(6, 1e-6);
  const std::vector<row_status> rows = {{}, {domain_reason::non_finite_input}, {}};
  const comparison c = compare(got.view, 3, 2, oracle, bound, rows, {.max_mismatches = 1});
  EXPECT_EQ(c.compared, 4);
  EXPECT_EQ(c.skipped, 2);
  EXPECT_EQ(c.bound_failures, 2);
  EXPECT_EQ(c.table_failures, 2);
  ASSERT_EQ(c.mismatches.size(), 1u);
  EXPECT_EQ(c.mismatches[0].row, 2);
  EXPECT_EQ(c.mismatches[0].col, 0);
  EXPECT_FALSE(c.passed());
}

TEST(compare, matches_nan_in_the_same_positions) {
  testing::owned_vector got(3, dtype::f16, 1, 3);
  got.set(0, nan);
  got.set(1, 1.0);
  got.set(2, -inf);
  const std::vector<double> oracle = {nan, 1.0, -inf};
  const std::vector<double> bound = {1, 1e-3, 1};
  const comparison c = compare(got.view, 3, oracle, bound, {});
  EXPECT_TRUE(c.passed());
  EXPECT_EQ(c.compared, 3);
  EXPECT_EQ(c.max_bound_units, 0);
}

TEST(compare, reports_p99_and_max_error_in_bound_units) {
  testing::owned_vector got(200, dtype::f32);
  std::vector<double> oracle(200, 1.0), bound(200, 1e-3);
  // 197 exact, two at half the bound, one at twice: the 198th smallest is 0.5
  for (std::int64_t k = 0; k < 200; ++k) got.set(k, 1.0 + (k < 197 ? 0.0 : (k < 199 ? 0.5e-3 : 2e-3)));
  const comparison c = compare(got.view, 200, oracle, bound, {});
  EXPECT_EQ(c.bound_failures, 1);
  EXPECT_NEAR(c.max_bound_units, 2.0, 1e-3);
  EXPECT_NEAR(c.p99_bound_units, 0.5, 1e-3);
  EXPECT_NEAR(c.max_abs_error, 2e-3, 1e-6);
}

/// the first value of type beyond v + bound, then ulps more steps away
double beyond(dtype type, double v, double bound, int ulps) {
  double w = round_to(type, v + bound);
  while (w <= v + bound) w += ulp(type, w);
  for (int k = 0; k < ulps; ++k) w += ulp(type, w);
  return w;
}

/// every element of one output: the correctly rounded value passes, a few ulps past the bound fails
void check_power(const std::string& what, dtype type, const std::vector<double>& oracle,
                 const std::vector<double>& bound, const std::vector<bool>& in_domain) {
  testing::owned_vector rounded(static_cast<std::int64_t>(oracle.size()), type);
  testing::owned_vector perturbed(static_cast<std::int64_t>(oracle.size()), type);
  std::vector<row_status> status(oracle.size());
  std::int64_t judged = 0;
  for (std::size_t k = 0; k < oracle.size(); ++k) {
    if (!in_domain[k]) status[k].reason = domain_reason::row_out_of_domain;
    // round_to of the round-to-odd value is the correctly rounded exact result
    rounded.set(static_cast<std::int64_t>(k), round_to(type, oracle[k]));
    perturbed.set(static_cast<std::int64_t>(k), beyond(type, oracle[k], bound[k], 2));
    judged += in_domain[k] ? 1 : 0;
  }
  const auto n = static_cast<std::int64_t>(oracle.size());
  const comparison good = compare(rounded.view, n, oracle, bound, status);
  EXPECT_EQ(good.bound_failures, 0) << what << ": the correctly rounded result must pass";
  const comparison bad = compare(perturbed.view, n, oracle, bound, status);
  EXPECT_EQ(bad.bound_failures, judged) << what << ": every element 2 ulps beyond its bound must be flagged";
}

TEST(compare, accepts_correctly_rounded_results_and_flags_two_ulps_beyond_the_bound) {
  std::mt19937_64 rng(testing::seed());
  for (int k = 0; k < 40; ++k) {
    const testing::random_case c = testing::make_random_case(rng, 1 << 11);
    SCOPED_TRACE(c.name);
    const forward_result f = exact_forward(c.forward());
    const backward_result b = exact_backward(c.backward());
    const auto width = static_cast<std::size_t>(c.n);
    std::vector<bool> rows, rows_wide, columns;
    for (const row_status& s : f.rows) {
      rows.push_back(s.in_domain());
      rows_wide.insert(rows_wide.end(), width, s.in_domain());
    }
    check_power("y", c.type, f.y, f.y_bound, rows_wide);
    check_power("r", dtype::f32, f.r, f.r_bound, rows);
    std::vector<bool> dx_rows;
    for (const row_status& s : b.rows) dx_rows.insert(dx_rows.end(), width, s.in_domain());
    check_power("dx", c.type, b.dx, b.dx_bound, dx_rows);
    for (const row_status& s : b.columns) columns.push_back(s.in_domain());
    check_power("dgamma", c.gamma_type, b.dgamma, b.dgamma_bound, columns);
  }
}

}  // namespace
}  // namespace nc::oracle
