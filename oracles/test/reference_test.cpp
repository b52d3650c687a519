// The document's reference and its worked numbers, printed digits and all.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "normcheck/oracles/reference.hpp"
#include "test_support.hpp"

namespace nc::oracle {
namespace {

using testing::matrix_of;
using testing::vector_of;

/// the document prints six decimals: a value matches when it rounds to them
void expect_printed(double value, double printed, int decimals) {
  EXPECT_NEAR(value, printed, 0.5 * std::pow(10.0, -decimals)) << "printed " << printed;
}

class reference_in : public ::testing::TestWithParam<dtype> {};

TEST_P(reference_in, reproduces_the_documents_forward_on_3_4) {
  const dtype type = GetParam();
  const auto x = matrix_of(1, 2, type, {3, 4});
  const auto ones = vector_of(type, {1, 1});
  const reference_forward_result r = reference_forward({1, 2, 1e-6f, x.view, ones.view, type});
  // mean(x²) = 12.5, r ≈ 0.282843
  expect_printed(r.r[0], 0.282843, 6);
  expect_printed(r.y[0], 0.848528, type == dtype::f32 || type == dtype::f64 ? 6 : 2);
  expect_printed(r.y[1], 1.131371, type == dtype::f32 || type == dtype::f64 ? 6 : 2);
}

INSTANTIATE_TEST_SUITE_P(dtypes, reference_in, ::testing::Values(dtype::f32, dtype::f64, dtype::f16, dtype::bf16),
                         [](const auto& param_info) { return std::string(name_of(param_info.param)); });

TEST(reference, scales_the_document_row_by_gamma_2_and_half) {
  const auto x = matrix_of(1, 2, dtype::f32, {3, 4});
  const auto gamma = vector_of(dtype::f32, {2, 0.5});
  const reference_forward_result r = reference_forward({1, 2, 1e-6f, x.view, gamma.view, dtype::f32});
  expect_printed(r.y[0], 1.697056, 6);
  expect_printed(r.y[1], 0.565685, 6);
}

TEST(reference, gives_the_documents_dx_for_dy_1_2) {
  for (dtype type : {dtype::f32, dtype::f64}) {
    const auto x = matrix_of(1, 2, type, {3, 4});
    const auto dy = matrix_of(1, 2, type, {1, 2});
    const auto ones = vector_of(type, {1, 1});
    // u = [1, 2], mean(u·x) = 5.5
    const reference_backward_result g = reference_backward({1, 2, x.view, ones.view, dy.view, 1e-6f, type, type});
    expect_printed(g.dx[0], -0.090510, 6);
    expect_printed(g.dx[1], 0.067882, 6);
  }
}

TEST(reference, sums_dgamma_over_rows_4_6_never_averages_2_3) {
  // x = ones and ε = 0 make r = 1, so the per-row contributions dy·x·r are dy itself
  const auto x = matrix_of(2, 2, dtype::f32, {1, 1, 1, 1});
  const auto dy = matrix_of(2, 2, dtype::f32, {1, 2, 3, 4});
  const auto ones = vector_of(dtype::f32, {1, 1});
  const reference_backward_result g =
      reference_backward({2, 2, x.view, ones.view, dy.view, 0.0f, dtype::f32, dtype::f32});
  EXPECT_EQ(g.dgamma[0], 4);
  EXPECT_EQ(g.dgamma[1], 6);
}

TEST(reference, normalises_257_ones_to_0_9999995) {
  const std::vector<double> ones(257, 1.0);
  const auto x = matrix_of(1, 257, dtype::f32, ones);
  const auto gamma = vector_of(dtype::f32, ones);
  const reference_forward_result r = reference_forward({1, 257, 1e-6f, x.view, gamma.view, dtype::f32});
  for (double y : r.y) expect_printed(y, 0.9999995, 7);
}

TEST(reference, shows_the_divide_by_block_numbers_of_the_document) {
  // the document's exercise: a mean over BLOCK = 512 instead of N = 257
  const double wrong_mean = 257.0 / 512.0;
  EXPECT_EQ(wrong_mean, 0.501953125);
  expect_printed(std::sqrt(wrong_mean + 1e-6), 0.708487, 6);
  expect_printed(1 / std::sqrt(wrong_mean + 1e-6), 1.411458, 6);
  // with N = BLOCK = 256 the bug is invisible; [1, 1, 1] in a block of 4: 3 either way, mean 1 against 0.75
  EXPECT_EQ(256.0 / 256.0, 1.0);
  EXPECT_EQ(3.0 / 3.0, 1.0);
  EXPECT_EQ(3.0 / 4.0, 0.75);
}

TEST(reference, computes_the_manual_backward_in_the_argument_dtype) {
  // fp16: x² = 90000 overflows fp16's 65504, so r = rsqrt(Inf) = 0 and dx = 0, where the exact
  // dx of [300, 400] is the document's dx / 100 ≈ [−9.05e-4, 6.79e-4]
  const auto x = matrix_of(1, 2, dtype::f16, {300, 400});
  const auto dy = matrix_of(1, 2, dtype::f16, {1, 2});
  const auto ones = vector_of(dtype::f16, {1, 1});
  const reference_backward_result g =
      reference_backward({1, 2, x.view, ones.view, dy.view, 1e-6f, dtype::f16, dtype::f16});
  EXPECT_EQ(g.dx[0], 0);
  EXPECT_EQ(g.dx[1], 0);
  // the same values in fp32 give the document's numbers scaled by 1/100
  const auto x32 = matrix_of(1, 2, dtype::f32, {300, 400});
  const auto dy32 = matrix_of(1, 2, dtype::f32, {1, 2});
  const auto ones32 = vector_of(dtype::f32, {1, 1});
  const reference_backward_result g32 =
      reference_backward({1, 2, x32.view, ones32.view, dy32.view, 1e-6f, dtype::f32, dtype::f32});
  expect_printed(g32.dx[0] * 100, -0.090510, 6);
  // the forward upcasts to fp32 and stays finite
  const reference_forward_result y = reference_forward({1, 2, 1e-6f, x.view, ones.view, dtype::f16});
  EXPECT_NEAR(y.y[0], 0.848528, 1e-3);
}

TEST(reference, casts_the_output_back_to_its_dtype) {
  const auto x = matrix_of(1, 2, dtype::bf16, {3, 4});
  const auto ones = vector_of(dtype::bf16, {1, 1});
  const reference_forward_result r = reference_forward({1, 2, 1e-6f, x.view, ones.view, dtype::bf16});
  for (double y : r.y) EXPECT_EQ(y, round_to(dtype::bf16, y));
}

}  // namespace
}  // namespace nc::oracle
