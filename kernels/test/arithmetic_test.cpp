// The shipped kernels' element arithmetic, compiled for the host as the simt backend runs it,
// against the exact oracle and the division: the int8 code (a rounding conversion and a
// clamp), the quotient a divide-by-scale operation takes (two fused multiply-adds from the
// reciprocal; under a row's own dynamic scale without a test of its window) and a dynamic
// scale's amax / max.
#include "src/rmsnorm_quantize.cuh"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "normcheck/oracles/quantize.hpp"

namespace {

using nc::code_format;
using nc::oracle::qformat;

template <code_format F>
std::uint8_t kernel_code(float v) {
  return static_cast<std::uint8_t>(nc::quantize_pair<F>(v, 0.0f));
}

// floats of every kind: the int8 code's edges (+-127 and the halves around it, every half
// between), +-0, +-Inf, NaN, subnormals, and random bits
std::vector<float> code_inputs() {
  std::vector<float> out = {0.0f, -0.0f, std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min(),
                            126.5f, 127.0f, 127.49998f, 127.5f, 128.0f, -126.5f, -127.5f, -128.5f, 1e30f, -1e30f};
  for (int k = -260; k <= 260; ++k) {
    const float half = float(k) / 2.0f;
    out.insert(out.end(), {half, std::nextafter(half, 1e9f), std::nextafter(half, -1e9f)});
  }
  std::mt19937 bits(7);
  for (int i = 0; i < (1 << 20); ++i) out.push_back(std::bit_cast<float>(std::uint32_t(bits())));
  std::uniform_real_distribution<float> near(-300.0f, 300.0f);
  for (int i = 0; i < (1 << 20); ++i) out.push_back(near(bits));
  return out;
}

TEST(int8_code, is_the_oracles_saturating_round_to_nearest_even) {
  int failures = 0;
  for (const float v : code_inputs()) {
    const std::uint8_t want = nc::oracle::quantize(qformat::int8, double(v)), got = kernel_code<code_format::int8>(v);
    if (want != got && ++failures <= 10)
      ADD_FAILURE() << "v = " << v << " (" << std::hexfloat << v << "): code " << int(got) << ", the oracle's " << int(want);
  }
  EXPECT_EQ(failures, 0);
}

// scales over the window divides_fast admits and at its edges
std::vector<float> scales(std::mt19937_64& bits) {
  std::vector<float> out = {0x1p-60f, 0x1p60f, std::nextafter(0x1p-60f, 1.0f), std::nextafter(0x1p60f, 0.0f),
                            1.0f, 0.00703f, 1.0f / (448.0f * 512.0f), 1e-10f / 448.0f, 3.0f / 127.0f};
  for (int i = 0; i < 4000; ++i)
    out.push_back(std::bit_cast<float>(std::uint32_t((127 - 60 + bits() % 121) << 23 | (bits() & 0x7fffff))));
  return out;
}

TEST(quotient, gives_the_divisions_bits_inside_its_window_and_its_code_outside) {
  std::mt19937_64 bits(11);
  long compared = 0, failures = 0;
  auto check = [&](float v, float s) {
    const float want = v / s, got = nc::quotient(v, s, 1.0f / s);
    ++compared;
    const float q0 = std::fabs(v * (1.0f / s));
    const bool window = q0 >= 0x1p-40f && q0 < 0x1p64f;
    const bool same = window ? std::bit_cast<std::uint32_t>(want) == std::bit_cast<std::uint32_t>(got)
                             : kernel_code<code_format::e4m3>(want) == kernel_code<code_format::e4m3>(got) &&
                                   kernel_code<code_format::e5m2>(want) == kernel_code<code_format::e5m2>(got) &&
                                   kernel_code<code_format::int8>(want) == kernel_code<code_format::int8>(got);
    if (!same && ++failures <= 10)
      ADD_FAILURE() << std::hexfloat << "v = " << v << ", scale = " << s << ": " << got << ", the division " << want;
  };
  for (const float s : scales(bits)) {
    // random values of every magnitude, and values whose quotient sits next to a rounding tie
    for (int i = 0; i < 1000; ++i) {
      const std::uint32_t b = std::uint32_t(bits());
      if ((b >> 23 & 0xff) != 0xff) check(std::bit_cast<float>(b), s);
      const float q = std::bit_cast<float>(std::uint32_t((127 - 45 + bits() % 112) << 23 | (bits() & 0x7fffff)));
      const std::uint32_t near = std::bit_cast<std::uint32_t>(q * s);
      for (std::uint32_t d = 0; d < 5; ++d) check(std::bit_cast<float>(near - 2 + d), s);
    }
    for (const float v : {0.0f, -0.0f, 448.0f * s, -127.0f * s, std::numeric_limits<float>::denorm_min()}) check(v, s);
  }
  EXPECT_GT(compared, 20'000'000);
  EXPECT_EQ(failures, 0);
}

// a value of a row or group under that row's own dynamic scale (|v| <= amax): every magnitude
// from amax down to the subnormals, both signs and zeros, and values next to a rounding tie
template <code_format F>
void expect_bounded_quotients_divide(std::mt19937_64& bits, long& compared, long& failures) {
  const float max = nc::code_max<F>;
  for (int i = 0; i < 1000; ++i) {
    // amax over the magnitudes whose scale lies inside divides_fast's window, and its edges
    const float amax = i == 0   ? 0x1p-60f * max
                       : i == 1 ? 0x1p60f * max
                                : std::bit_cast<float>(std::uint32_t((127 - 50 + bits() % 101) << 23 | (bits() & 0x7fffff)));
    // every third amax under a floor above amax / max (the scale is the floor; the quotients smaller)
    const float s = nc::dynamic_scale<F>(amax, i % 3 == 2 ? amax / max * 4.0f : 0.0f);
    if (!nc::divides_fast(s)) continue;
    const float inverse = 1.0f / s;
    auto check = [&](float v) {
      if (!(std::fabs(v) <= amax)) return;
      const float want = v / s, got = nc::bounded_quotient(v, s, inverse);
      ++compared;
      const bool same = std::fabs(want) >= 0x1p-39f
                            ? std::bit_cast<std::uint32_t>(want) == std::bit_cast<std::uint32_t>(got)
                            : kernel_code<code_format::e4m3>(want) == kernel_code<code_format::e4m3>(got) &&
                                  kernel_code<code_format::e5m2>(want) == kernel_code<code_format::e5m2>(got) &&
                                  kernel_code<code_format::int8>(want) == kernel_code<code_format::int8>(got);
      if (!same && ++failures <= 10)
        ADD_FAILURE() << std::hexfloat << "v = " << v << ", amax = " << amax << ", scale = " << s << ": " << got
                      << ", the division " << want;
    };
    for (const float v : {amax, -amax, 0.0f, -0.0f, std::numeric_limits<float>::denorm_min(),
                          -std::numeric_limits<float>::denorm_min(), std::nextafter(amax, 0.0f)})
      check(v);
    for (int j = 0; j < 1000; ++j) {
      // |v| = amax * 2^-e * (1 + m): every exponent down to the subnormals
      const float v = std::ldexp(amax, -int(bits() % 200)) * (1.0f - float(bits() % 1024) / 2048.0f);
      check(bits() & 1 ? v : -v);
      // a quotient next to a tie of the code grid: k/2 (int8), k/16 (fp8's small codes)
      const float q = float(int(bits() % 512) - 256) / (bits() & 1 ? 2.0f : 16.0f);
      const std::uint32_t near = std::bit_cast<std::uint32_t>(q * s);
      for (std::uint32_t d = 0; d < 5; ++d) check(std::bit_cast<float>(near - 2 + d));
    }
  }
}

TEST(bounded_quotient, gives_the_divisions_bits_under_a_rows_own_dynamic_scale) {
  std::mt19937_64 bits(17);
  long compared = 0, failures = 0;
  expect_bounded_quotients_divide<code_format::e4m3>(bits, compared, failures);
  expect_bounded_quotients_divide<code_format::e5m2>(bits, compared, failures);
  expect_bounded_quotients_divide<code_format::int8>(bits, compared, failures);
  EXPECT_GT(compared, 10'000'000);
  EXPECT_EQ(failures, 0);
  // the zeros keep their sign (a code of its own in both fp8 formats)
  EXPECT_EQ(std::bit_cast<std::uint32_t>(nc::bounded_quotient(-0.0f, 3.0f, 1.0f / 3.0f)), 0x80000000u);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(nc::bounded_quotient(0.0f, 3.0f, 1.0f / 3.0f)), 0u);
}

template <code_format F>
void expect_dynamic_scales_divide(float max) {
  std::mt19937_64 bits(13);
  std::vector<float> amax = {0.0f, std::numeric_limits<float>::denorm_min(), 0x1p-40f * max, 0x1p64f * max,
                             std::numeric_limits<float>::max(), std::numeric_limits<float>::infinity(), 1.0f, max};
  for (int i = 0; i < (1 << 22); ++i) {
    const std::uint32_t b = std::uint32_t(bits()) & 0x7fffffffu;
    if ((b >> 23) != 0xff) amax.push_back(std::bit_cast<float>(b));
  }
  int failures = 0;
  for (const float a : amax) {
    const float want = a / max, got = nc::dynamic_scale<F>(a, 0.0f);
    if (std::bit_cast<std::uint32_t>(want) != std::bit_cast<std::uint32_t>(got) && ++failures <= 10)
      ADD_FAILURE() << std::hexfloat << "amax = " << a << ": scale " << got << ", the division " << want;
  }
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(nc::dynamic_scale<F>(0.0f, 0x1p-20f), 0x1p-20f) << "the floor";
}

TEST(dynamic_scale, is_amax_divided_by_the_formats_max_under_its_floor) {
  expect_dynamic_scales_divide<code_format::e4m3>(448.0f);
  expect_dynamic_scales_divide<code_format::e5m2>(57344.0f);
  expect_dynamic_scales_divide<code_format::int8>(127.0f);
}

}  // namespace
