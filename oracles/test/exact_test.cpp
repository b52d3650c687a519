// The exact oracle: worked numbers, the fast path against the Boost paths, domain rules.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "fp32_kernel.hpp"
#include "normcheck/oracles/compare.hpp"
#include "normcheck/oracles/exact.hpp"
#include "test_support.hpp"

namespace nc::oracle {
namespace {

using testing::matrix_of;
using testing::vector_of;

void expect_printed(double value, double printed, int decimals) {
  EXPECT_NEAR(value, printed, 0.5 * std::pow(10.0, -decimals)) << "printed " << printed;
}

/// the same double, bit for bit; an exact zero's sign is not specified (the comparator treats ±0 alike)
bool same_bits(double a, double b) {
  if (std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b) || (a == 0 && b == 0)) return true;
  // a result that is exactly a double comes back with the residue of the precision that
  // computed it, an odd neighbour of that double on either side (round to odd of a value a
  // hair off it): two double ulps apart at most, 2^27 times finer than fp32's resolution
  const double ulp = std::nextafter(std::fabs(a), INFINITY) - std::fabs(a);
  return std::isfinite(a) && std::fabs(a - b) <= 2 * ulp;
}

/// bounds agree when both are missing (NaN) or within 1e-12 relative: they come from doubles
/// of the same exact values, rounded by different paths
bool same_bound(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::fabs(a - b) <= 1e-12 * std::max(std::fabs(a), std::fabs(b));
}

void expect_same(const forward_result& fast, const forward_result& slow, const std::string& name) {
  ASSERT_EQ(fast.y.size(), slow.y.size());
  for (std::size_t i = 0; i < fast.rows.size(); ++i) {
    EXPECT_EQ(fast.rows[i].reason, slow.rows[i].reason) << name << " row " << i;
    EXPECT_TRUE(same_bits(fast.r[i], slow.r[i])) << name << " r of row " << i << ": " << fast.r[i] << " vs " << slow.r[i];
    EXPECT_TRUE(same_bound(fast.r_bound[i], slow.r_bound[i])) << name << " r bound of row " << i;
  }
  for (std::size_t k = 0; k < fast.y.size(); ++k) {
    EXPECT_TRUE(same_bits(fast.y[k], slow.y[k])) << name << " y[" << k << "]: " << fast.y[k] << " vs " << slow.y[k];
    EXPECT_TRUE(same_bound(fast.y_bound[k], slow.y_bound[k])) << name << " y bound [" << k << "]";
  }
}

// `cancellation` > 0 also accepts a dx within that fraction of its bound: where dx cancels
// exactly to 0, a p-digit computation keeps a residue of about 10^-p of the terms, so
// different precisions agree only far below the bound, not in every bit
void expect_same(const backward_result& fast, const backward_result& slow, const std::string& name,
                 double cancellation = 0) {
  ASSERT_EQ(fast.dx.size(), slow.dx.size());
  for (std::size_t i = 0; i < fast.rows.size(); ++i) EXPECT_EQ(fast.rows[i].reason, slow.rows[i].reason) << name << " row " << i;
  for (std::size_t k = 0; k < fast.dx.size(); ++k) {
    const std::size_t n = fast.dx.size() / fast.rows.size();
    const bool agree = same_bits(fast.dx[k], slow.dx[k]) ||
                       std::fabs(fast.dx[k] - slow.dx[k]) <= cancellation * slow.dx_bound[k] ||
                       (cancellation > 0 && !slow.rows[k / n].in_domain());  // no claim on such a row
    EXPECT_TRUE(agree) << name << " dx[" << k << "]: " << fast.dx[k] << " vs " << slow.dx[k];
    EXPECT_TRUE(same_bound(fast.dx_bound[k], slow.dx_bound[k])) << name << " dx bound [" << k << "]";
  }
  for (std::size_t j = 0; j < fast.dgamma.size(); ++j) {
    EXPECT_EQ(fast.columns[j].reason, slow.columns[j].reason) << name << " column " << j;
    EXPECT_TRUE(same_bits(fast.dgamma[j], slow.dgamma[j]))
        << name << " dgamma[" << j << "]: " << fast.dgamma[j] << " vs " << slow.dgamma[j];
    EXPECT_TRUE(same_bound(fast.dgamma_bound[j], slow.dgamma_bound[j])) << name << " dgamma bound [" << j << "]";
  }
}

TEST(exact, reproduces_the_documents_worked_numbers_on_every_path) {
  const auto x = matrix_of(1, 2, dtype::f32, {3, 4});
  const auto ones = vector_of(dtype::f32, {1, 1});
  const auto scaled = vector_of(dtype::f32, {2, 0.5});
  const auto dy = matrix_of(1, 2, dtype::f32, {1, 2});
  const forward_problem plain{1, 2, 1e-6f, x.view, ones.view, dtype::f32};
  const forward_problem weighted{1, 2, 1e-6f, x.view, scaled.view, dtype::f32};
  const backward_problem backward{1, 2, x.view, ones.view, dy.view, 1e-6f, dtype::f32, dtype::f32};
  for (const forward_result& f : {exact_forward(plain), exact_forward_mp(plain), exact_forward_mpfr(plain)}) {
    expect_printed(f.r[0], 0.282843, 6);
    expect_printed(f.y[0], 0.848528, 6);
    expect_printed(f.y[1], 1.131371, 6);
  }
  for (const forward_result& f : {exact_forward(weighted), exact_forward_mp(weighted)}) {
    expect_printed(f.y[0], 1.697056, 6);
    expect_printed(f.y[1], 0.565685, 6);
  }
  for (const backward_result& b : {exact_backward(backward), exact_backward_mp(backward), exact_backward_mpfr(backward)}) {
    expect_printed(b.dx[0], -0.090510, 6);
    expect_printed(b.dx[1], 0.067882, 6);
  }
}

TEST(exact, normalises_257_ones_to_0_9999995) {
  const std::vector<double> ones(257, 1.0);
  const auto x = matrix_of(1, 257, dtype::f32, ones);
  const auto gamma = vector_of(dtype::f32, ones);
  const forward_result f = exact_forward({1, 257, 1e-6f, x.view, gamma.view, dtype::f32});
  for (double y : f.y) expect_printed(y, 0.9999995, 7);
  // and the exact value lies within the bound of its fp32 rounding
  EXPECT_LE(std::fabs(round_to(dtype::f32, f.y[0]) - f.y[0]), f.y_bound[0]);
}

TEST(exact, sums_per_row_contributions_1_2_3_4_into_dgamma_4_6) {
  const auto x = matrix_of(2, 2, dtype::f32, {1, 1, 1, 1});
  const auto dy = matrix_of(2, 2, dtype::f32, {1, 2, 3, 4});
  const auto ones = vector_of(dtype::f32, {1, 1});
  const backward_problem p{2, 2, x.view, ones.view, dy.view, 0.0f, dtype::f32, dtype::f32};
  for (const backward_result& b : {exact_backward(p), exact_backward_mp(p)}) {
    EXPECT_EQ(b.dgamma[0], 4);
    EXPECT_EQ(b.dgamma[1], 6);
  }
}

TEST(exact, fast_path_gives_the_boost_paths_bits_on_random_cases) {
  std::mt19937_64 rng(testing::seed());
  exact_stats stats_total;
  for (int k = 0; k < 48; ++k) {
    const testing::random_case c = testing::make_random_case(rng, 1 << 13);
    SCOPED_TRACE(c.name);
    exact_stats f_stats, b_stats;
    expect_same(exact_forward(c.forward(), &f_stats), exact_forward_mp(c.forward()), c.name);
    expect_same(exact_backward(c.backward(), &b_stats), exact_backward_mp(c.backward()), c.name);
    if (f_stats.rows_recomputed + b_stats.rows_recomputed + b_stats.columns_recomputed > 0)
      std::printf("fallbacks in %s: forward %lld rows, backward %lld rows and %lld columns\n", c.name.c_str(),
                  static_cast<long long>(f_stats.rows_recomputed), static_cast<long long>(b_stats.rows_recomputed),
                  static_cast<long long>(b_stats.columns_recomputed));
    stats_total.rows_recomputed += f_stats.rows_recomputed + b_stats.rows_recomputed;
    stats_total.columns_recomputed += b_stats.columns_recomputed;
    if (HasFailure()) break;
  }
  std::printf("fast path fallbacks over the random cases: %lld rows, %lld dgamma columns\n",
              static_cast<long long>(stats_total.rows_recomputed), static_cast<long long>(stats_total.columns_recomputed));
}

TEST(exact, mpfr_and_cpp_bin_float_give_the_same_bits) {
  std::mt19937_64 rng(testing::seed() + 1);
  for (int k = 0; k < 8; ++k) {
    const testing::random_case c = testing::make_random_case(rng, 1 << 11);
    SCOPED_TRACE(c.name);
    expect_same(exact_forward_mpfr(c.forward()), exact_forward_mp(c.forward()), c.name);
    expect_same(exact_backward_mpfr(c.backward()), exact_backward_mp(c.backward()), c.name);
  }
}

TEST(exact, thirty_fifty_and_a_hundred_digits_give_the_same_bits) {
  std::mt19937_64 rng(testing::seed() + 2);
  for (int k = 0; k < 6; ++k) {
    const testing::random_case c = testing::make_random_case(rng, 1 << 11);
    SCOPED_TRACE(c.name);
    expect_same(exact_forward_mp<30>(c.forward()), exact_forward_mp<100>(c.forward()), c.name);
    expect_same(exact_backward_mp<30>(c.backward()), exact_backward_mp<100>(c.backward()), c.name, 1e-20);
  }
}

TEST(exact, rarely_needs_the_boost_path_on_normal_rows) {
  std::mt19937_64 rng(testing::seed() + 3);
  std::normal_distribution<double> normal;
  const std::int64_t m = 64, n = 1024;
  testing::owned_matrix x(m, n, dtype::bf16), dy(m, n, dtype::bf16);
  testing::owned_vector gamma(n, dtype::f32);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      x.set(i, j, normal(rng));
      dy.set(i, j, normal(rng));
    }
  for (std::int64_t j = 0; j < n; ++j) gamma.set(j, 1 + 0.1 * normal(rng));
  exact_stats f, b;
  exact_forward({m, n, 1e-6f, x.view, gamma.view, dtype::bf16}, &f);
  exact_backward({m, n, x.view, gamma.view, dy.view, 1e-6f, dtype::bf16, dtype::f32}, &b);
  EXPECT_EQ(f.rows_recomputed, 0);
  EXPECT_EQ(b.rows_recomputed, 0);
  EXPECT_EQ(b.columns_recomputed, 0);
}

TEST(exact, falls_back_to_the_boost_path_when_a_result_is_exactly_a_double) {
  // ones with ε = 0: r = 1 exactly, so y = γ exactly and no error interval can certify it
  const std::vector<double> ones(33, 1.0);
  const auto x = matrix_of(1, 33, dtype::f32, ones);
  const auto gamma = vector_of(dtype::f32, ones);
  exact_stats stats;
  const forward_result f = exact_forward({1, 33, 0.0f, x.view, gamma.view, dtype::f32}, &stats);
  EXPECT_EQ(stats.rows_recomputed, 1);
  EXPECT_EQ(f.r[0], 1);
  EXPECT_EQ(f.y[0], 1);
  EXPECT_TRUE(f.rows[0].in_domain());
}

TEST(exact, flags_rows_with_nan_or_inf_and_leaves_the_other_rows_alone) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto x = matrix_of(3, 2, dtype::f32, {3, 4, nan, 1, inf, 1});
  const auto clean = matrix_of(1, 2, dtype::f32, {3, 4});
  const auto dy = matrix_of(3, 2, dtype::f32, {1, 2, 1, 1, 1, 1});
  const auto dy_clean = matrix_of(1, 2, dtype::f32, {1, 2});
  const auto ones = vector_of(dtype::f32, {1, 1});
  for (bool fast : {true, false}) {
    const forward_problem p{3, 2, 1e-6f, x.view, ones.view, dtype::f32};
    const forward_result f = fast ? exact_forward(p) : exact_forward_mp(p);
    const forward_result g = exact_forward({1, 2, 1e-6f, clean.view, ones.view, dtype::f32});
    EXPECT_TRUE(f.rows[0].in_domain());
    EXPECT_EQ(f.rows[1].reason, domain_reason::non_finite_input);
    EXPECT_EQ(f.rows[2].reason, domain_reason::non_finite_input);
    EXPECT_EQ(f.y[0], g.y[0]);
    EXPECT_EQ(f.y[1], g.y[1]);
    // the IEEE values: NaN propagates; a row holding Inf has r = 0, so its finite entries give 0
    EXPECT_TRUE(std::isnan(f.y[2]) && std::isnan(f.y[3]));
    EXPECT_TRUE(std::isnan(f.y[4]));
    EXPECT_EQ(f.y[5], 0);
    EXPECT_TRUE(std::isnan(f.y_bound[2]));
    const backward_problem bp{3, 2, x.view, ones.view, dy.view, 1e-6f, dtype::f32, dtype::f32};
    const backward_result b = fast ? exact_backward(bp) : exact_backward_mp(bp);
    EXPECT_TRUE(b.rows[0].in_domain());
    EXPECT_EQ(b.rows[1].reason, domain_reason::non_finite_input);
    // NaN in a row makes its r NaN, so every dgamma entry is NaN and out of the domain
    EXPECT_TRUE(std::isnan(b.dgamma[0]) && std::isnan(b.dgamma[1]));
    EXPECT_EQ(b.columns[0].reason, domain_reason::non_finite_input);
  }
}

TEST(exact, keeps_dgamma_in_the_domain_when_only_dy_holds_a_nan_elsewhere) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto x = matrix_of(2, 2, dtype::f32, {3, 4, 1, 2});
  const auto dy = matrix_of(2, 2, dtype::f32, {1, 2, nan, 1});
  const auto ones = vector_of(dtype::f32, {1, 1});
  const backward_problem p{2, 2, x.view, ones.view, dy.view, 1e-6f, dtype::f32, dtype::f32};
  for (const backward_result& b : {exact_backward(p), exact_backward_mp(p)}) {
    EXPECT_EQ(b.rows[1].reason, domain_reason::non_finite_input);
    EXPECT_TRUE(std::isnan(b.dgamma[0]));
    EXPECT_EQ(b.columns[0].reason, domain_reason::non_finite_input);
    // column 1's contributions are finite and the rows' r have bounds
    EXPECT_TRUE(b.columns[1].in_domain());
    EXPECT_TRUE(std::isfinite(b.dgamma_bound[1]));
  }
}

TEST(exact, leaves_dgamma_unbounded_where_a_row_holding_inf_has_dy_times_x_past_fp32) {
  // row 0 holds Inf, so r = 0 and its finite dy·x·r are 0 in double; a kernel that forms dy·x
  // first gets Inf·0 = NaN where dy·x overflows fp32 (column 1, 2^140), 0 where it does not
  // (column 2) (value_fuzzer-2026-12-02-6b4bddc7)
  const double inf = std::numeric_limits<double>::infinity();
  const auto x = matrix_of(2, 3, dtype::bf16, {inf, 0x1p70, 1, 1, 2, 3});
  const auto dy = matrix_of(2, 3, dtype::bf16, {1, 0x1p70, 1, 1, 1, 1});
  const auto ones = vector_of(dtype::bf16, {1, 1, 1});
  const forward_problem f{2, 3, 1e-6f, x.view, ones.view, dtype::bf16};
  const backward_problem p{2, 3, x.view, ones.view, dy.view, 1e-6f, dtype::bf16, dtype::bf16};
  const testing::kernel_output kernel = testing::run_kernel(f, p, {});
  ASSERT_TRUE(std::isnan(kernel.dgamma[1]));
  for (const backward_result& b : {exact_backward(p), exact_backward_mp(p)}) {
    EXPECT_EQ(b.columns[0].reason, domain_reason::non_finite_input);
    EXPECT_EQ(b.columns[1].reason, domain_reason::non_finite_input);
    EXPECT_TRUE(std::isnan(b.dgamma_bound[1]));
    // column 2: row 0 adds an exact 0 in any association, row 1 its bounded 3·r_1
    ASSERT_TRUE(b.columns[2].in_domain());
    EXPECT_LE(std::fabs(kernel.dgamma[2] - b.dgamma[2]), b.dgamma_bound[2]);
  }
}

TEST(exact, takes_a_row_out_where_a_declared_fp16_intermediate_overflows) {
  // a kernel declaring NC_ROUNDS_GRADIENTS rounds u = dy·γ to fp16: 16384·(−4) = −65536 is past
  // fp16's largest finite value, so its dx row is Inf/NaN although the exact dx (−32768) is an
  // fp16 value. The declared arithmetic has no answer there: the row leaves the domain, the
  // strict problem keeps it (a kernel declaring nothing must get it right), dgamma stays bounded
  const auto x = matrix_of(2, 4, dtype::f16, {0, 0, 0, 4, 1, 2, 3, 4});
  const auto gamma = vector_of(dtype::f16, {0, -4, 0, 1});
  const auto dy = matrix_of(2, 4, dtype::f16, {0, 16384, 0, 0, 1, 1, 1, 1});
  backward_problem p{2, 4, x.view, gamma.view, dy.view, 1e-6f, dtype::f16, dtype::f16};
  const backward_result strict = exact_backward(p);
  ASSERT_TRUE(strict.rows[0].in_domain());
  p.rounds_gradients = true;
  const backward_result declared = exact_backward(p);
  EXPECT_EQ(declared.rows[0].reason, domain_reason::intermediate_overflow);
  EXPECT_TRUE(std::isnan(declared.dx_bound[1]));
  ASSERT_TRUE(declared.rows[1].in_domain());
  for (std::size_t j = 0; j < 4; ++j) {
    EXPECT_GT(declared.dx_bound[4 + j], strict.dx_bound[4 + j]) << "dx[1][" << j << "]: the declared rounding widens";
    ASSERT_TRUE(declared.columns[j].in_domain());
    EXPECT_GE(declared.dgamma_bound[j], strict.dgamma_bound[j]);
  }
}

TEST(exact, bounds_dx_of_a_kernel_that_forms_x_times_r_first) {
  // bf16 values near 2e12 next to fp32 subnormals, ε = 1000: x·r̂ of the subnormal x is far below
  // fp32's smallest subnormal and rounds to 0, which (x·r̂)·(s/N·r̂²) carries as η·s/N·r̂², not
  // as the x·ĉ product's η (value_fuzzer-2026-12-02-39093a51)
  auto row_of_bits = [](std::vector<std::uint64_t> bits) {
    std::vector<double> values;
    for (std::uint64_t b : bits) values.push_back(decode(dtype::bf16, b));
    return values;
  };
  const auto x = matrix_of(1, 8, dtype::bf16, row_of_bits({0x5400, 0x0052, 0x5254, 0x5400, 0x0052, 0x5254, 0x5400, 0x0052}));
  const auto dy = matrix_of(1, 8, dtype::bf16, row_of_bits({0x0052, 0x5254, 0x5400, 0x0052, 0x5254, 0x5400, 0x0052, 0x5254}));
  const auto gamma = vector_of(dtype::bf16, row_of_bits({0x5400, 0x0052, 0x5254, 0x5400, 0x0052, 0x5254, 0x5400, 0x0052}));
  const forward_problem f{1, 8, 1000.0f, x.view, gamma.view, dtype::bf16};
  const backward_problem p{1, 8, x.view, gamma.view, dy.view, 1000.0f, dtype::bf16, dtype::bf16};
  for (const backward_result& b : {exact_backward(p), exact_backward_mp(p)}) {
    ASSERT_TRUE(b.rows[0].in_domain());
    for (testing::summation sum :
         {testing::summation::sequential, testing::summation::sequential_fma, testing::summation::pairwise})
      for (testing::dx_order order : {testing::dx_order::x_times_c, testing::dx_order::shipped, testing::dx_order::abi,
                                      testing::dx_order::reference, testing::dx_order::torch, testing::dx_order::liger}) {
        testing::kernel_flavour k;
        k.sum = sum;
        k.order = order;
        const testing::kernel_output kernel = testing::run_kernel(f, p, k);
        for (std::size_t j = 0; j < 8; ++j)
          EXPECT_LE(std::fabs(kernel.dx[j] - b.dx[j]), b.dx_bound[j])
              << "dx[" << j << "] with " << testing::name_of(sum) << " sum, dx " << testing::name_of(order);
      }
    // the bound stays tight: within a few bf16 subnormal steps (2^-133) of the exact dx
    for (std::size_t j = 0; j < 8; ++j) EXPECT_LE(b.dx_bound[j], 8 * 0x1p-133 + 0x1p-6 * std::fabs(b.dx[j]));
  }
}

TEST(exact, keeps_a_row_whose_r_cubed_overflows_and_names_the_orders_that_fail_there) {
  // a zero row next to ε = 1e-30: r = 1e15, so r³ = 1e45 overflows fp32, but the shipped order
  // ((x·r)·(s/N·r·r)) and PyTorch's are finite and exact here (dx = r·u). The row stays in the
  // domain with a hazard for the orders that form r³ (abi.h read left to right, the document's)
  const auto x = matrix_of(1, 3, dtype::f32, {0, 0, 0});
  const auto dy = matrix_of(1, 3, dtype::f32, {1, -2, 0.5});
  const auto ones = vector_of(dtype::f32, {1, 1, 1});
  const backward_problem p{1, 3, x.view, ones.view, dy.view, 1e-30f, dtype::f32, dtype::f32};
  for (const backward_result& b : {exact_backward(p), exact_backward_mp(p)}) {
    ASSERT_TRUE(b.rows[0].in_domain()) << describe(b.rows[0].reason);
    EXPECT_EQ(b.rows[0].hazard, order_hazard::r_cubed_overflow);
    const std::string why = describe(b.rows[0].hazard, b.rows[0].r);
    EXPECT_NE(why.find("r^3 overflows fp32 (r = 1e+15)"), std::string::npos) << why;
    // and the comparator carries the sentence to a failing element: the NaN of 0·Inf
    std::vector<float> got = {NAN, NAN, NAN};
    const comparison c = compare(matrix_view{got.data(), dtype::f32, 0, 3, 1}, 1, 3, b.dx, b.dx_bound, b.rows);
    ASSERT_FALSE(c.mismatches.empty());
    EXPECT_EQ(c.mismatches[0].note, why);
  }
  // with a subnormal ε (r = 1e20) r²/N overflows too: Liger's order forms it
  const backward_problem q{1, 3, x.view, ones.view, dy.view, 1e-40f, dtype::f32, dtype::f32};
  const backward_result b = exact_backward(q);
  ASSERT_TRUE(b.rows[0].in_domain()) << describe(b.rows[0].reason);
  EXPECT_EQ(b.rows[0].hazard, order_hazard::r_squared_overflow);
}

TEST(exact, flags_a_zero_row_without_epsilon_and_zeroes_it_with_one) {
  const auto x = matrix_of(1, 3, dtype::f16, {0, 0, 0});
  const auto ones = vector_of(dtype::f16, {1, 1, 1});
  const forward_result without = exact_forward({1, 3, 0.0f, x.view, ones.view, dtype::f16});
  EXPECT_EQ(without.rows[0].reason, domain_reason::zero_row_without_epsilon);
  EXPECT_TRUE(std::isinf(without.r[0]));
  EXPECT_TRUE(std::isnan(without.y[0]));
  const forward_result with = exact_forward({1, 3, 1e-6f, x.view, ones.view, dtype::f16});
  EXPECT_TRUE(with.rows[0].in_domain());
  EXPECT_EQ(with.y[0], 0);
  EXPECT_EQ(with.y_bound[0], 0);
}

TEST(exact, flags_rows_whose_fp32_sum_of_squares_could_overflow) {
  const auto x = matrix_of(2, 2, dtype::f32, {1e20, 3e19, 3, 4});
  const auto ones = vector_of(dtype::f32, {1, 1});
  const forward_result f = exact_forward({2, 2, 1e-6f, x.view, ones.view, dtype::f32});
  EXPECT_EQ(f.rows[0].reason, domain_reason::intermediate_overflow);
  EXPECT_TRUE(f.rows[1].in_domain());
  // the exact values are still given: y = x/rms stays ≤ sqrt(N)
  EXPECT_NEAR(f.y[0], 1e20 / std::sqrt((1e40 + 9e38) / 2), 1e-6);
}

TEST(exact, flags_rows_whose_result_could_round_to_inf_in_fp16) {
  const auto x = matrix_of(1, 2, dtype::f16, {3, 4});
  const auto gamma = vector_of(dtype::f32, {1e5, 1});
  const forward_result f = exact_forward({1, 2, 1e-6f, x.view, gamma.view, dtype::f16});
  EXPECT_EQ(f.rows[0].reason, domain_reason::output_overflow);
}

TEST(exact, bounds_tiny_rows_by_their_underflow_until_it_swamps_them) {
  const auto ones = vector_of(dtype::f32, std::vector<double>(16, 1.0));
  // ε = 0 and x² below fp32's normal range: every square may lose up to 2^-150
  auto row_at = [&](double scale) {
    std::vector<double> values(16);
    for (int j = 0; j < 16; ++j) values[static_cast<std::size_t>(j)] = scale * (1 + j / 16.0);
    const auto x = matrix_of(1, 16, dtype::f32, values);
    return exact_forward({1, 16, 0.0f, x.view, ones.view, dtype::f32});
  };
  // squares near 2^-120: normal, the ordinary bound
  const forward_result normal = row_at(0x1p-60);
  EXPECT_TRUE(normal.rows[0].in_domain());
  EXPECT_LT(normal.y_bound[0] / normal.y[0], 1e-4);
  // squares near 2^-132: subnormal, the bound grows by the η terms but stays meaningful
  const forward_result subnormal = row_at(0x1p-66);
  EXPECT_TRUE(subnormal.rows[0].in_domain());
  EXPECT_GT(subnormal.y_bound[0], normal.y_bound[0]);
  // squares near 2^-140: underflow alone could move r by more than 2^-10
  const forward_result swamped = row_at(0x1p-70);
  EXPECT_EQ(swamped.rows[0].reason, domain_reason::intermediate_underflow);
  // subnormal inputs whose squares vanish entirely in fp32
  const forward_result vanished = row_at(0x1p-130);
  EXPECT_FALSE(vanished.rows[0].in_domain());
}

TEST(exact, keeps_subnormal_inputs_in_the_domain_when_epsilon_holds_r) {
  // fp16 subnormals with ε = 1e-6: r ≈ 1000, y tiny but every step well inside fp32
  const auto x = matrix_of(1, 3, dtype::f16, {0x1p-20, -0x1p-22, 0x1p-24});
  const auto ones = vector_of(dtype::f16, {1, 1, 1});
  const forward_result f = exact_forward({1, 3, 1e-6f, x.view, ones.view, dtype::f16});
  EXPECT_TRUE(f.rows[0].in_domain());
  // the output's own subnormal resolution dominates its bound
  EXPECT_GE(f.y_bound[2], format_of(dtype::f16).half_subnormal);
}

TEST(exact, gives_a_zero_dgamma_with_a_zero_bound_for_no_rows) {
  const auto ones = vector_of(dtype::bf16, {1, 1, 1});
  const backward_problem p{0, 3, {}, ones.view, {}, 1e-6f, dtype::bf16, dtype::bf16};
  for (const backward_result& b : {exact_backward(p), exact_backward_mp(p)}) {
    ASSERT_EQ(b.dgamma.size(), 3u);
    for (std::size_t j = 0; j < 3; ++j) {
      EXPECT_EQ(b.dgamma[j], 0);
      EXPECT_EQ(b.dgamma_bound[j], 0);
      EXPECT_TRUE(b.columns[j].in_domain());
    }
  }
}

TEST(exact, takes_the_boost_path_for_f64_operands) {
  const auto x = matrix_of(1, 2, dtype::f64, {3, 4});
  const auto ones = vector_of(dtype::f64, {1, 1});
  exact_stats stats;
  const forward_result f = exact_forward({1, 2, 1e-6f, x.view, ones.view, dtype::f64}, &stats);
  EXPECT_TRUE(stats.whole_problem_recomputed);
  expect_printed(f.y[0], 0.848528, 6);
}

TEST(exact, rejects_invalid_problems_naming_the_argument) {
  const auto x = matrix_of(1, 2, dtype::f32, {3, 4});
  const auto ones = vector_of(dtype::f32, {1, 1});
  EXPECT_THROW(exact_forward({1, 0, 1e-6f, x.view, ones.view, dtype::f32}), std::invalid_argument);
  EXPECT_THROW(exact_forward({1, 2, -1.0f, x.view, ones.view, dtype::f32}), std::invalid_argument);
  EXPECT_THROW(exact_forward({1, 2, std::numeric_limits<float>::infinity(), x.view, ones.view, dtype::f32}),
               std::invalid_argument);
  try {
    exact_forward({-1, 2, 1e-6f, x.view, ones.view, dtype::f32});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("m = -1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nc::oracle
