// quantize: every FP8/INT8 code both ways, ties to even at every midpoint, saturation, the NaN and
// Inf rules, subnormals, a brute-force nearest search, and the admissible runs of the bound rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "normcheck/oracles/quantize.hpp"
#include "test_support.hpp"

namespace nc::oracle {
namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
const double nan = std::numeric_limits<double>::quiet_NaN();

std::string hex(unsigned code) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%02x", code);
  return text;
}

bool is_nan_code(qformat format, std::uint8_t code) { return std::isnan(decode(format, code)); }

/// the largest finite code: 0x7e, 0x7b, 0x7f
std::uint8_t max_code(qformat format) {
  switch (format) {
    case qformat::e4m3: return 0x7e;
    case qformat::e5m2: return 0x7b;
    case qformat::int8: return 0x7f;
  }
  return 0;
}

/// the code of -max: 0xfe, 0xfb, 0x81 (-127)
std::uint8_t min_code(qformat format) { return format == qformat::int8 ? 0x81 : max_code(format) | 0x80; }

/// every finite value a code of the format stands for, ascending, -0 and +0 as one
std::vector<double> finite_values(qformat format) {
  std::vector<double> values;
  for (unsigned code = 0; code < 256; ++code) {
    const double v = decode(format, static_cast<std::uint8_t>(code));
    if (std::isfinite(v)) values.push_back(v);
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());  // -0 == +0
  return values;
}

/// int8 quantization produces -127..127; the byte 0x80 (-128) decodes but is never produced
std::vector<double> producible_values(qformat format) {
  std::vector<double> values = finite_values(format);
  if (format == qformat::int8) values.erase(values.begin());  // -128
  return values;
}

/// brute force over values (producible_values(format)): the nearest (ties to the code with an even
/// low bit), saturating
double nearest_by_search(qformat format, const std::vector<double>& values, double v) {
  if (v >= values.back()) return values.back();
  if (v <= values.front()) return values.front();
  const auto hi = std::lower_bound(values.begin(), values.end(), v);
  if (*hi == v) return v;
  const double up = *hi, down = *(hi - 1);
  if (v - down < up - v) return down;
  if (up - v < v - down) return up;
  return (quantize(format, down) & 1u) == 0 ? down : up;
}

class quantize_format : public ::testing::TestWithParam<qformat> {};

TEST_P(quantize_format, every_code_decodes_and_quantizes_back) {
  const qformat format = GetParam();
  int round_trips = 0, nan_codes = 0, inf_codes = 0, unproducible = 0;
  for (unsigned c = 0; c < 256; ++c) {
    const auto code = static_cast<std::uint8_t>(c);
    const double v = decode(format, code);
    if (std::isnan(v)) {
      ++nan_codes;
      EXPECT_NE(format, qformat::int8) << hex(c);
      continue;
    }
    if (std::isinf(v)) {
      // e5m2's ±Inf: saturation gives ±max, never an Inf code
      ++inf_codes;
      EXPECT_EQ(format, qformat::e5m2) << hex(c);
      EXPECT_EQ(quantize(format, v), v > 0 ? max_code(format) : min_code(format)) << hex(c);
      continue;
    }
    if (format == qformat::int8 && code == 0x80) {
      // -128 lies past the symmetric range: it saturates to -127
      ++unproducible;
      EXPECT_EQ(v, -128.0);
      EXPECT_EQ(quantize(format, v), 0x81);
      continue;
    }
    EXPECT_EQ(quantize(format, v), code) << hex(c) << " decodes to " << v;
    ++round_trips;
  }
  // a NaN, of either sign, quantizes to a NaN code (int8: to 0)
  for (const double n : {nan, -nan}) {
    const std::uint8_t code = quantize(format, n);
    if (format == qformat::int8) EXPECT_EQ(code, 0);
    else EXPECT_TRUE(is_nan_code(format, code)) << hex(code);
  }
  switch (format) {
    case qformat::e4m3: EXPECT_EQ(round_trips, 254); EXPECT_EQ(nan_codes, 2); EXPECT_EQ(inf_codes, 0); break;
    case qformat::e5m2: EXPECT_EQ(round_trips, 248); EXPECT_EQ(nan_codes, 6); EXPECT_EQ(inf_codes, 2); break;
    case qformat::int8: EXPECT_EQ(round_trips, 255); EXPECT_EQ(nan_codes, 0); EXPECT_EQ(unproducible, 1); break;
  }
  std::printf("%s: %d codes round-trip, %d NaN codes, %d Inf codes, %d unproducible\n", name(format), round_trips,
              nan_codes, inf_codes, unproducible);
}

TEST_P(quantize_format, codes_increase_with_their_value) {
  // the positive codes in order are the positive values in order; the sign bit (fp8) mirrors them
  const qformat format = GetParam();
  const unsigned top = max_code(format);
  for (unsigned c = 1; c <= top; ++c) {
    EXPECT_LT(decode(format, static_cast<std::uint8_t>(c - 1)), decode(format, static_cast<std::uint8_t>(c))) << hex(c);
    if (format != qformat::int8) {
      EXPECT_EQ(decode(format, static_cast<std::uint8_t>(c | 0x80)), -decode(format, static_cast<std::uint8_t>(c)));
    }
  }
  EXPECT_EQ(decode(format, max_code(format)), max_finite(format));
  EXPECT_EQ(decode(format, min_code(format)), -max_finite(format));
}

TEST_P(quantize_format, midpoints_round_to_the_even_code_and_a_hair_either_side_to_the_nearer) {
  const qformat format = GetParam();
  const std::vector<double> values = producible_values(format);
  int midpoints = 0;
  for (std::size_t i = 1; i < values.size(); ++i) {
    const double lo = values[i - 1], hi = values[i];
    const double mid = (lo + hi) / 2;  // exact: both are short binary fractions
    ASSERT_TRUE(mid > lo && mid < hi);
    const std::uint8_t lo_code = quantize(format, lo), hi_code = quantize(format, hi);
    // neighbouring codes: exactly one has an even low bit (mantissa or integer)
    ASSERT_NE(lo_code & 1u, hi_code & 1u) << hex(lo_code) << " " << hex(hi_code);
    const double even = (lo_code & 1u) == 0 ? lo : hi;
    const double got = decode(format, quantize(format, mid));
    EXPECT_EQ(got, even) << name(format) << " midpoint " << mid << " of " << lo << " and " << hi;
    if (even == 0 && format != qformat::int8) {
      EXPECT_EQ(std::signbit(got), std::signbit(mid)) << mid;
    }
    // a hair either side: the next double, and a relative nudge
    EXPECT_EQ(decode(format, quantize(format, std::nextafter(mid, lo))), lo) << mid;
    EXPECT_EQ(decode(format, quantize(format, std::nextafter(mid, hi))), hi) << mid;
    const double nudge = (hi - lo) * 0x1p-20;
    EXPECT_EQ(decode(format, quantize(format, mid - nudge)), lo) << mid;
    EXPECT_EQ(decode(format, quantize(format, mid + nudge)), hi) << mid;
    ++midpoints;
  }
  std::printf("%s: %d midpoints\n", name(format), midpoints);
}

TEST_P(quantize_format, agrees_with_a_brute_force_nearest_search) {
  const qformat format = GetParam();
  std::mt19937_64 rng(testing::seed());
  std::uniform_real_distribution<double> exponent(-20, std::log2(max_finite(format)) + 2);
  std::uniform_int_distribution<int> coin(0, 1);
  const std::vector<double> values = producible_values(format);
  for (int k = 0; k < 100000; ++k) {
    const double v = std::exp2(exponent(rng)) * (coin(rng) ? 1 : -1);
    const double got = decode(format, quantize(format, v));
    EXPECT_EQ(got, nearest_by_search(format, values, v)) << name(format) << " " << v;
    if (got == 0 && format != qformat::int8) {
      EXPECT_EQ(std::signbit(got), std::signbit(v)) << v;
    }
  }
}

TEST_P(quantize_format, saturates_finite_values_and_infinities_to_max) {
  const qformat format = GetParam();
  std::vector<double> past;
  switch (format) {
    case qformat::e4m3: past = {449, 464, 465, 480, 512, 1e9}; break;
    case qformat::e5m2: past = {57345, 61440, 65536, 57344 * 1.5, 1e9}; break;
    case qformat::int8: past = {127.25, 127.5, 128, 1000, 1e6}; break;
  }
  past.push_back(std::numeric_limits<double>::max());
  past.push_back(inf);
  for (const double v : past) {
    EXPECT_EQ(quantize(format, v), max_code(format)) << name(format) << " " << v;
    EXPECT_EQ(quantize(format, -v), min_code(format)) << name(format) << " " << -v;
  }
  EXPECT_EQ(quantize(format, max_finite(format)), max_code(format));
  EXPECT_EQ(quantize(format, -max_finite(format)), min_code(format));
}

INSTANTIATE_TEST_SUITE_P(formats, quantize_format, ::testing::Values(qformat::e4m3, qformat::e5m2, qformat::int8),
                         [](const auto& param_info) { return std::string(name(param_info.param)); });

TEST(quantize, names_and_largest_finite_values) {
  EXPECT_STREQ(name(qformat::e4m3), "fp8e4m3");
  EXPECT_STREQ(name(qformat::e5m2), "fp8e5m2");
  EXPECT_STREQ(name(qformat::int8), "int8");
  EXPECT_EQ(max_finite(qformat::e4m3), 448.0);
  EXPECT_EQ(max_finite(qformat::e5m2), 57344.0);
  EXPECT_EQ(max_finite(qformat::int8), 127.0);
}

TEST(quantize, decodes_known_codes) {
  // e4m3: 1.0 = 0.0111.000, smallest subnormal 2^-9, smallest normal 2^-6, 448 = 0.1111.110
  EXPECT_EQ(decode(qformat::e4m3, 0x38), 1.0);
  EXPECT_EQ(decode(qformat::e4m3, 0x01), 0x1p-9);
  EXPECT_EQ(decode(qformat::e4m3, 0x07), 7 * 0x1p-9);
  EXPECT_EQ(decode(qformat::e4m3, 0x08), 0x1p-6);
  EXPECT_EQ(decode(qformat::e4m3, 0x7e), 448.0);
  EXPECT_EQ(decode(qformat::e4m3, 0xc4), -3.0);
  EXPECT_TRUE(std::isnan(decode(qformat::e4m3, 0x7f)));
  EXPECT_TRUE(std::isnan(decode(qformat::e4m3, 0xff)));
  EXPECT_EQ(decode(qformat::e4m3, 0x78), 256.0);  // exponent 15 is finite in e4m3 "fn"
  const double negative_zero = decode(qformat::e4m3, 0x80);
  EXPECT_TRUE(negative_zero == 0 && std::signbit(negative_zero));
  // e5m2: 1.0 = 0.01111.00, smallest subnormal 2^-16, smallest normal 2^-14, 57344 = 0.11110.11
  EXPECT_EQ(decode(qformat::e5m2, 0x3c), 1.0);
  EXPECT_EQ(decode(qformat::e5m2, 0x01), 0x1p-16);
  EXPECT_EQ(decode(qformat::e5m2, 0x03), 3 * 0x1p-16);
  EXPECT_EQ(decode(qformat::e5m2, 0x04), 0x1p-14);
  EXPECT_EQ(decode(qformat::e5m2, 0x7b), 57344.0);
  EXPECT_EQ(decode(qformat::e5m2, 0x7c), inf);
  EXPECT_EQ(decode(qformat::e5m2, 0xfc), -inf);
  for (const unsigned c : {0x7du, 0x7eu, 0x7fu, 0xfdu, 0xfeu, 0xffu}) {
    EXPECT_TRUE(is_nan_code(qformat::e5m2, static_cast<std::uint8_t>(c))) << hex(c);
  }
  // int8: two's complement
  EXPECT_EQ(decode(qformat::int8, 0x7f), 127.0);
  EXPECT_EQ(decode(qformat::int8, 0x81), -127.0);
  EXPECT_EQ(decode(qformat::int8, 0x80), -128.0);
  EXPECT_EQ(decode(qformat::int8, 0xff), -1.0);
}

TEST(quantize, nan_inf_and_zero_rules) {
  EXPECT_EQ(quantize(qformat::e4m3, nan), 0x7f);
  EXPECT_EQ(quantize(qformat::e5m2, nan), 0x7e);
  EXPECT_EQ(quantize(qformat::int8, nan), 0x00);
  EXPECT_EQ(quantize(qformat::e4m3, -nan), 0x7f);
  EXPECT_EQ(quantize(qformat::e5m2, -nan), 0x7e);
  EXPECT_EQ(quantize(qformat::int8, -nan), 0x00);
  EXPECT_EQ(quantize(qformat::e4m3, inf), 0x7e);
  EXPECT_EQ(quantize(qformat::e4m3, -inf), 0xfe);
  EXPECT_EQ(quantize(qformat::e5m2, inf), 0x7b);  // saturating: never the Inf code 0x7c
  EXPECT_EQ(quantize(qformat::e5m2, -inf), 0xfb);
  EXPECT_EQ(quantize(qformat::int8, inf), 0x7f);
  EXPECT_EQ(quantize(qformat::int8, -inf), 0x81);
  EXPECT_EQ(quantize(qformat::e4m3, 0.0), 0x00);
  EXPECT_EQ(quantize(qformat::e4m3, -0.0), 0x80);
  EXPECT_EQ(quantize(qformat::e5m2, 0.0), 0x00);
  EXPECT_EQ(quantize(qformat::e5m2, -0.0), 0x80);
  EXPECT_EQ(quantize(qformat::int8, -0.0), 0x00);
  EXPECT_EQ(quantize(qformat::int8, -0.25), 0x00);
  // negative values that round to zero keep their sign in fp8
  EXPECT_EQ(quantize(qformat::e4m3, -1e-300), 0x80);
  EXPECT_EQ(quantize(qformat::e5m2, -std::numeric_limits<double>::denorm_min()), 0x80);
}

TEST(quantize, the_last_values_below_max_and_the_saturation_boundary) {
  // e4m3: 416 (0.1111.101) and 448 (0.1111.110): the midpoint 432 goes to the even 448
  EXPECT_EQ(quantize(qformat::e4m3, std::nextafter(432.0, 0.0)), 0x7d);
  EXPECT_EQ(quantize(qformat::e4m3, 432.0), 0x7e);
  // past 448 a non-saturating conversion would round to nearest-even up to 464 (the midpoint to
  // the would-be 480, whose mantissa 111 is odd) and overflow beyond; saturation gives 448 for both
  EXPECT_EQ(quantize(qformat::e4m3, 464.0), 0x7e);
  EXPECT_EQ(quantize(qformat::e4m3, std::nextafter(464.0, inf)), 0x7e);
  EXPECT_EQ(quantize(qformat::e4m3, -std::nextafter(464.0, inf)), 0xfe);
  // e5m2: 49152 (0.11110.10) and 57344 (0.11110.11): the midpoint 53248 goes to the even 49152
  EXPECT_EQ(quantize(qformat::e5m2, 53248.0), 0x7a);
  EXPECT_EQ(quantize(qformat::e5m2, std::nextafter(53248.0, inf)), 0x7b);
  // 61440, the midpoint to 2^16, is where rounding (ties to the even 2^16) would overflow to Inf
  EXPECT_EQ(quantize(qformat::e5m2, std::nextafter(61440.0, 0.0)), 0x7b);
  EXPECT_EQ(quantize(qformat::e5m2, 61440.0), 0x7b);
  EXPECT_EQ(quantize(qformat::e5m2, -61440.0), 0xfb);
  // int8: 126.5 ties to 126; just above it 127; 127.5 would round to 128 and saturates to 127
  EXPECT_EQ(quantize(qformat::int8, 126.5), 126);
  EXPECT_EQ(quantize(qformat::int8, std::nextafter(126.5, inf)), 127);
  EXPECT_EQ(quantize(qformat::int8, 127.5), 127);
  EXPECT_EQ(quantize(qformat::int8, -127.5), 0x81);
  EXPECT_EQ(quantize(qformat::int8, -128.0), 0x81);
}

TEST(quantize, subnormals) {
  // e4m3: smallest subnormal 2^-9; half of it ties to zero (even), a hair above to 2^-9
  EXPECT_EQ(quantize(qformat::e4m3, 0x1p-9), 0x01);
  EXPECT_EQ(quantize(qformat::e4m3, 0x1p-10), 0x00);
  EXPECT_EQ(quantize(qformat::e4m3, -0x1p-10), 0x80);
  EXPECT_EQ(quantize(qformat::e4m3, std::nextafter(0x1p-10, 1.0)), 0x01);
  EXPECT_EQ(quantize(qformat::e4m3, -std::nextafter(0x1p-10, 1.0)), 0x81);
  EXPECT_EQ(quantize(qformat::e4m3, 3 * 0x1p-10), 0x02);   // 1.5 subnormals: to the even 2
  EXPECT_EQ(quantize(qformat::e4m3, 5 * 0x1p-10), 0x02);   // 2.5: to 2
  EXPECT_EQ(quantize(qformat::e4m3, 15 * 0x1p-10), 0x08);  // between the largest subnormal and 2^-6
  EXPECT_EQ(quantize(qformat::e4m3, 1e-300), 0x00);
  // e5m2: smallest subnormal 2^-16
  EXPECT_EQ(quantize(qformat::e5m2, 0x1p-16), 0x01);
  EXPECT_EQ(quantize(qformat::e5m2, 0x1p-17), 0x00);
  EXPECT_EQ(quantize(qformat::e5m2, -0x1p-17), 0x80);
  EXPECT_EQ(quantize(qformat::e5m2, std::nextafter(0x1p-17, 1.0)), 0x01);
  EXPECT_EQ(quantize(qformat::e5m2, 3 * 0x1p-17), 0x02);
  EXPECT_EQ(quantize(qformat::e5m2, 7 * 0x1p-17), 0x04);  // between 3·2^-16 and 2^-14: to the even 2^-14
  EXPECT_EQ(quantize(qformat::e5m2, std::numeric_limits<double>::denorm_min()), 0x00);
}

// ---- the bound rule -------------------------------------------------------------------------

/// how many distinct values the admitted codes stand for (-0 and +0 are one)
int admitted_values(qformat format, double v, double b) {
  std::vector<double> values;
  for (unsigned c = 0; c < 256; ++c) {
    if (admits(format, v, b, static_cast<std::uint8_t>(c))) values.push_back(decode(format, static_cast<std::uint8_t>(c)));
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return static_cast<int>(values.size());
}

TEST(admissible, a_boundary_with_no_bound_admits_one_code_and_with_a_tiny_bound_two) {
  // e4m3 1.0 (0x38) and 1.125 (0x39): the midpoint 1.0625 ties to 0x38
  const code_range exact = admissible(qformat::e4m3, 1.0625, 0);
  EXPECT_EQ(exact.low, 0x38);
  EXPECT_EQ(exact.high, 0x38);
  EXPECT_TRUE(admits(qformat::e4m3, 1.0625, 0, 0x38));
  EXPECT_FALSE(admits(qformat::e4m3, 1.0625, 0, 0x39));
  const code_range tiny = admissible(qformat::e4m3, 1.0625, 1e-9);
  EXPECT_EQ(tiny.low, 0x38);
  EXPECT_EQ(tiny.high, 0x39);
  EXPECT_TRUE(admits(qformat::e4m3, 1.0625, 1e-9, 0x38));
  EXPECT_TRUE(admits(qformat::e4m3, 1.0625, 1e-9, 0x39));
  EXPECT_FALSE(admits(qformat::e4m3, 1.0625, 1e-9, 0x37));
  EXPECT_FALSE(admits(qformat::e4m3, 1.0625, 1e-9, 0x3a));
  EXPECT_EQ(admitted_values(qformat::e4m3, 1.0625, 1e-9), 2);
}

TEST(admissible, the_ends_are_exact_where_v_plus_or_minus_b_rounds_back_to_v) {
  // 1.0625 + 2^-80 is 1.0625 in double, but the exact value lies above the tie: 0x39 is admissible
  EXPECT_EQ(admissible(qformat::e4m3, 1.0625, 0x1p-80).high, 0x39);
  // 1.1875 ties up to 0x3a (1.25); 1.1875 − 2^-80 lies below the tie: 0x39 (1.125) is admissible
  EXPECT_EQ(admissible(qformat::e4m3, 1.1875, 0).low, 0x3a);
  EXPECT_EQ(admissible(qformat::e4m3, 1.1875, 0x1p-80).low, 0x39);
  EXPECT_EQ(admissible(qformat::e4m3, 1.1875, 0x1p-80).high, 0x3a);
  // the same on the negative side, and below the smallest e5m2 subnormal's half
  EXPECT_EQ(admissible(qformat::e4m3, -1.0625, 0x1p-80).low, 0xb9);
  EXPECT_EQ(admissible(qformat::e5m2, 0x1p-17, std::numeric_limits<double>::denorm_min()).high, 0x01);
  EXPECT_EQ(admissible(qformat::e5m2, 0x1p-17, std::numeric_limits<double>::denorm_min()).low, 0x00);
  // int8: 2.5 ties to 2; the exact 2.5 + 2^-70 rounds to 3
  EXPECT_EQ(admissible(qformat::int8, 2.5, 0x1p-70).low, 2);
  EXPECT_EQ(admissible(qformat::int8, 2.5, 0x1p-70).high, 3);
  EXPECT_EQ(admissible(qformat::int8, -2.5, 0x1p-70).low, static_cast<std::uint8_t>(-3));
}

TEST(admissible, far_from_a_boundary_admits_one_code) {
  EXPECT_EQ(admitted_values(qformat::e4m3, 1.03, 1e-6), 1);
  EXPECT_TRUE(admits(qformat::e4m3, 1.03, 1e-6, 0x38));
  EXPECT_EQ(admitted_values(qformat::e5m2, -300.0, 1.0), 1);
  EXPECT_EQ(admitted_values(qformat::int8, 41.2, 0.1), 1);
  EXPECT_TRUE(admits(qformat::int8, 41.2, 0.1, 41));
  // -0 and +0 codes are alike
  EXPECT_EQ(admissible(qformat::e4m3, 1e-4, 0).low, 0x00);
  EXPECT_TRUE(admits(qformat::e4m3, 1e-4, 0, 0x80));
  EXPECT_EQ(admissible(qformat::e4m3, -1e-4, 0).low, 0x80);
  EXPECT_TRUE(admits(qformat::e4m3, -1e-4, 0, 0x00));
  EXPECT_EQ(admitted_values(qformat::e4m3, -1e-4, 1e-5), 1);
}

class admissible_format : public ::testing::TestWithParam<qformat> {};

TEST_P(admissible_format, every_midpoint_and_every_code_value) {
  const qformat format = GetParam();
  const std::vector<double> values = producible_values(format);
  int checked = 0;
  for (std::size_t i = 1; i < values.size(); ++i) {
    const double lo = values[i - 1], hi = values[i], mid = (lo + hi) / 2;
    const double tiny = (hi - lo) * 0x1p-30;
    EXPECT_EQ(admitted_values(format, mid, 0), 1) << mid;
    const code_range two = admissible(format, mid, tiny);
    EXPECT_EQ(decode(format, two.low), lo) << mid;
    EXPECT_EQ(decode(format, two.high), hi) << mid;
    EXPECT_EQ(admitted_values(format, mid, tiny), 2) << mid;
    // a code's own value, far from either boundary
    EXPECT_EQ(admitted_values(format, hi, tiny), 1) << hi;
    ++checked;
  }
  // a bound spanning everything admits every producible value, never a NaN, Inf or -128 code
  for (unsigned c = 0; c < 256; ++c) {
    const auto code = static_cast<std::uint8_t>(c);
    const double v = decode(format, code);
    const bool producible = std::find(values.begin(), values.end(), v) != values.end();
    EXPECT_EQ(admits(format, 0.0, inf, code), producible) << hex(c);
    // a NaN value admits exactly the NaN codes
    EXPECT_EQ(admits(format, nan, 1.0, code), std::isnan(v)) << hex(c);
  }
  EXPECT_EQ(admissible(format, 0.0, inf).low, min_code(format));
  EXPECT_EQ(admissible(format, 0.0, inf).high, max_code(format));
  EXPECT_THROW(admissible(format, 1.0, -1e-9), std::invalid_argument);
  EXPECT_THROW(admissible(format, 1.0, nan), std::invalid_argument);
  std::printf("%s: %d midpoints\n", name(format), checked);
}

INSTANTIATE_TEST_SUITE_P(formats, admissible_format, ::testing::Values(qformat::e4m3, qformat::e5m2, qformat::int8),
                         [](const auto& param_info) { return std::string(name(param_info.param)); });

}  // namespace
}  // namespace nc::oracle
