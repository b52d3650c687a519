// dtype: exact decoding of every fp16/bf16 pattern, round-to-nearest-even against brute force,
// the formats' facts, ulp, strided loads and stores.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "normcheck/oracles/dtype.hpp"
#include "test_support.hpp"

namespace nc::oracle {
namespace {

class half_format : public ::testing::TestWithParam<dtype> {};

TEST_P(half_format, decodes_and_re_encodes_every_bit_pattern) {
  const dtype type = GetParam();
  for (std::uint64_t bits = 0; bits < 0x10000; ++bits) {
    const double v = decode(type, bits);
    if (std::isnan(v)) continue;
    EXPECT_EQ(encode(type, v), bits) << std::hex << bits;
    EXPECT_EQ(round_to(type, v), v) << std::hex << bits;
  }
}

TEST_P(half_format, rounds_to_nearest_even_like_a_brute_force_search) {
  const dtype type = GetParam();
  // every finite value of the format, ascending
  std::vector<double> values;
  for (std::uint64_t bits = 0; bits < 0x10000; ++bits) {
    const double v = decode(type, bits);
    if (std::isfinite(v)) values.push_back(v);
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  const format& f = format_of(type);
  std::mt19937_64 rng(testing::seed());
  std::uniform_real_distribution<double> exponent(f.min_exponent - f.precision - 2, f.max_exponent + 1.5);
  std::uniform_int_distribution<int> coin(0, 1);
  for (int k = 0; k < 200000; ++k) {
    // random magnitudes across the range, and exact midpoints half the time
    double v = std::exp2(exponent(rng)) * (coin(rng) ? 1 : -1);
    const auto above = std::lower_bound(values.begin(), values.end(), v);
    if (coin(rng) && above != values.begin() && above != values.end()) v = (*above + *(above - 1)) / 2;
    const double got = round_to(type, v);
    const double magnitude = std::fabs(v);
    double expected;
    if (magnitude >= f.overflow_threshold) {
      expected = std::copysign(HUGE_VAL, v);
    } else {
      const auto hi = std::lower_bound(values.begin(), values.end(), v);
      const double up = hi == values.end() ? HUGE_VAL : *hi;
      const double down = hi == values.begin() ? -HUGE_VAL : *(hi - 1);
      if (up == v) expected = v;
      else if (v - down < up - v) expected = down;
      else if (up - v < v - down) expected = up;
      else expected = (encode(type, down) & 1) == 0 ? down : up;  // a tie: the even significand
    }
    ASSERT_EQ(got, expected) << "rounding " << v;
  }
}

INSTANTIATE_TEST_SUITE_P(formats, half_format, ::testing::Values(dtype::f16, dtype::bf16),
                         [](const auto& param_info) { return std::string(name_of(param_info.param)); });

TEST(dtype, reports_the_facts_of_each_format) {
  EXPECT_EQ(format_of(dtype::f16).max_finite, 65504);
  EXPECT_EQ(format_of(dtype::f16).overflow_threshold, 65520);
  EXPECT_EQ(format_of(dtype::f16).half_subnormal, 0x1p-25);
  EXPECT_EQ(format_of(dtype::bf16).max_finite, 0x1.fep127);
  EXPECT_EQ(format_of(dtype::bf16).half_subnormal, 0x1p-134);
  EXPECT_EQ(format_of(dtype::f32).max_finite, std::numeric_limits<float>::max());
  EXPECT_EQ(format_of(dtype::f32).half_subnormal, 0x1p-150);
  EXPECT_EQ(format_of(dtype::f32).unit_roundoff, 0x1p-24);
  EXPECT_EQ(format_of(dtype::f64).max_finite, std::numeric_limits<double>::max());
  EXPECT_EQ(round_to(dtype::f16, 65519.99), 65504);
  EXPECT_TRUE(std::isinf(round_to(dtype::f16, 65520)));
  EXPECT_EQ(round_to(dtype::f16, -0x1p-26), 0);
  EXPECT_TRUE(std::signbit(round_to(dtype::f16, -0x1p-26)));
}

TEST(dtype, measures_ulp_at_the_binade_and_in_the_subnormal_range) {
  EXPECT_EQ(ulp(dtype::f32, 1.0), 0x1p-23);
  EXPECT_EQ(ulp(dtype::f32, 1.5), 0x1p-23);
  EXPECT_EQ(ulp(dtype::f16, 1.0), 0x1p-10);
  EXPECT_EQ(ulp(dtype::f16, 0.0), 0x1p-24);
  EXPECT_EQ(ulp(dtype::f16, 0x1p-20), 0x1p-24);
  EXPECT_EQ(ulp(dtype::bf16, -3.0), 0x1p-6);
  EXPECT_TRUE(std::isnan(ulp(dtype::f32, HUGE_VAL)));
}

TEST(dtype, decodes_quiet_nans_and_encodes_nan_as_a_quiet_nan) {
  EXPECT_TRUE(std::isnan(decode(dtype::f16, 0x7e00)));
  EXPECT_TRUE(std::isnan(decode(dtype::bf16, 0xffc1)));
  EXPECT_TRUE(std::isnan(decode(dtype::f16, encode(dtype::f16, NAN))));
  EXPECT_TRUE(std::isnan(decode(dtype::bf16, encode(dtype::bf16, NAN))));
}

TEST(dtype, loads_and_stores_strided_elements_of_every_dtype) {
  for (dtype type : {dtype::f32, dtype::f16, dtype::bf16, dtype::f64}) {
    testing::owned_matrix a(3, 4, type, 5, 3, 2);
    for (std::int64_t i = 0; i < 3; ++i)
      for (std::int64_t j = 0; j < 4; ++j) a.set(i, j, static_cast<double>(i * 4 + j) - 5.5);
    for (std::int64_t i = 0; i < 3; ++i)
      for (std::int64_t j = 0; j < 4; ++j) EXPECT_EQ(a.at(i, j), static_cast<double>(i * 4 + j) - 5.5);
  }
}

}  // namespace
}  // namespace nc::oracle
