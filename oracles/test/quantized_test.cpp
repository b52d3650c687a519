// quantized: the judge of a quantized output (codes and scales) against a hand-built exact forward
// and a kernel model written from abi.h's definition of the variant: a correct model passes for
// every format, scale source and way of applying the scale; seeded defects (no saturation clamp,
// NaN codes, a reciprocal rounded the wrong way, a group's scale from the row, a scale from x,
// the wrong format, a code one off, the zero scale's codes) fail; exact ties admit both neighbours
// only where there is a bound; rows out of the domain are not judged.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "normcheck/oracles/quantize.hpp"
#include "normcheck/oracles/quantized.hpp"
#include "test_support.hpp"

namespace nc::oracle {
namespace {

constexpr std::int64_t M = 3, N = 256;
const double nan = std::numeric_limits<double>::quiet_NaN();
constexpr double inf = std::numeric_limits<double>::infinity();
constexpr float row2_amax = 3.0f;  // the amax of every group of row 2 (and of the row)
constexpr double test_floor = 0x1p-20;

std::string hex(unsigned code) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%02x", code);
  return text;
}

/// y's bound in the hand-built cases: 2^-22 |y|, two to four fp32 ulps of y
double few_ulps(double y) { return std::fabs(y) * 0x1p-22; }

/// a forward_result of the given values and bounds, every row in the domain
forward_result from_values(std::int64_t m, std::vector<double> y, std::vector<double> bound) {
  forward_result r;
  r.y = std::move(y);
  r.y_bound = std::move(bound);
  r.r.assign(std::size_t(m), 1.0);
  r.r_bound.assign(std::size_t(m), 0.0);
  r.rows.assign(std::size_t(m), row_status{});
  return r;
}

/// the non-negative values codes of the format stand for, ascending
std::vector<double> nonnegative_values(qformat format) {
  std::vector<double> values;
  for (unsigned c = 0; c < 256; ++c) {
    const double v = decode(format, static_cast<std::uint8_t>(c));
    if (std::isfinite(v) && v >= 0) values.push_back(v);
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

/// the fp32 scale of an fp32 amax: amax / max, a float division (the static scale of these cases too)
float scale_of(qformat format, float amax) { return amax / static_cast<float>(max_finite(format)); }

/// M = 3 rows of N = 256, every one in the domain, y's bound a few fp32 ulps:
///   row 0  2·normal, with exact zeros at columns 7, 57, 107, ...
///   row 1  columns 0..63: 1e-7·normal (a group under the floor); the rest ±2^[-24, 6] (wide)
///   row 2  column 0 of each 64-group ±3 (the amax of every group), the others ±(a midpoint of two
///          neighbouring codes)·s·(1 + k·2^-24), k in -3..3, or ±(a code's value)·s, where s is the
///          scale of the amax 3: y/s on or near the format's rounding boundaries
forward_result make_case(qformat format) {
  std::mt19937_64 rng(testing::seed());
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::uniform_int_distribution<int> nudge(-3, 3), coin(0, 1);
  const std::vector<double> values = nonnegative_values(format);
  std::uniform_int_distribution<std::size_t> pick(1, values.size() - 2);  // below the largest value
  const double s = scale_of(format, row2_amax);
  std::vector<double> y(std::size_t(M * N)), bound(y.size());
  for (std::int64_t j = 0; j < N; ++j) {
    y[std::size_t(j)] = j % 50 == 7 ? 0.0 : 2 * normal(rng);
    y[std::size_t(N + j)] = j < 64 ? 1e-7 * normal(rng) : (coin(rng) ? -1 : 1) * std::exp2(15 * uniform(rng) - 9);
    const double sign = coin(rng) ? -1 : 1;
    double v;
    if (j % 64 == 0) {
      v = (j / 64) % 2 ? -row2_amax : row2_amax;
    } else if (j % 5 == 0) {
      v = sign * values[pick(rng)] * s;  // a code's value, exactly
    } else {
      const std::size_t k = pick(rng);
      const double mid = (values[k - 1] + values[k]) / 2;
      v = sign * mid * s * (1 + nudge(rng) * 0x1p-24);
    }
    y[std::size_t(2 * N + j)] = v;
  }
  for (std::size_t k = 0; k < y.size(); ++k) bound[k] = few_ulps(y[k]);
  return from_values(M, std::move(y), std::move(bound));
}

// ---- the kernel model ----------------------------------------------------------------------

/// how a model deviates from fl(y): where in y's bound its v lies (a correct kernel), and the
/// defects it can be seeded with
struct model_options {
  double push = 0;                               ///< v = fl(y + push·b), |push| <= 0.7: still within b of y
  bool reciprocal_toward_zero = false;           ///< 1/s rounded toward zero: within an ulp, as abi.h allows
  int reciprocal_ulps_down = 0;                  ///< fl(1/s) stepped this many ulps toward zero
  bool wraps = false;                            ///< no saturation clamp (see wrapped_code)
  bool row_amax_for_groups = false;              ///< a per-group scale from the whole row's amax
  const std::vector<double>* amax_of = nullptr;  ///< a dynamic scale from these values' amax (x) instead of v's
  bool other_format = false;                     ///< codes produced with code_format instead of the operation's
  qformat code_format = qformat::e4m3;
};

struct kernel_output {
  std::vector<std::uint8_t> codes;  ///< row-major M×N
  std::vector<double> scales;       ///< row-major M × scales_a_row (dynamic scales only)
};

/// a conversion without the saturation clamp: e4m3 past 448 gives its NaN, e5m2 past 57344 its Inf,
/// int8 the two's complement of the rounded integer, wrapped
std::uint8_t wrapped_code(qformat format, float p) {
  if (!(std::fabs(p) > max_finite(format))) return quantize(format, p);
  switch (format) {
    case qformat::e4m3: return p > 0 ? 0x7f : 0xff;
    case qformat::e5m2: return p > 0 ? 0x7c : 0xfc;
    case qformat::int8: return static_cast<std::uint8_t>(std::lrint(p));
  }
  return 0;
}

/// abi.h's quantized output, in fp32: v = fl(y) (or fl(y + push·b)), a dynamic
/// s = max(amax |v| / max, floor) (a float division), code = Q(fl(v · fl(1/s))) or Q(fl(v / s))
kernel_output run_kernel(const quantization& q, const forward_result& exact, std::int64_t m, std::int64_t n,
                         const model_options& d = {}) {
  const std::int64_t per_row = scales_a_row(q, n), width = n / per_row;
  const float max = static_cast<float>(max_finite(q.format));
  std::vector<float> v(std::size_t(m * n));
  for (std::size_t k = 0; k < v.size(); ++k)
    v[k] = static_cast<float>(d.push == 0 ? exact.y[k] : exact.y[k] + d.push * exact.y_bound[k]);
  kernel_output out;
  out.codes.resize(std::size_t(m * n));
  if (q.scale != scale_source::given) out.scales.resize(std::size_t(m * per_row));
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t g = 0; g < per_row; ++g) {
      const std::int64_t first = i * n + g * width;
      float s = static_cast<float>(q.given_scale);
      if (q.scale != scale_source::given) {
        const std::int64_t from = d.row_amax_for_groups ? i * n : first;
        const std::int64_t to = d.row_amax_for_groups ? i * n + n : first + width;
        float amax = 0;
        for (std::int64_t k = from; k < to; ++k) {
          const float value = d.amax_of ? static_cast<float>((*d.amax_of)[std::size_t(k)]) : v[std::size_t(k)];
          amax = std::max(amax, std::fabs(value));
        }
        s = std::max(amax / max, static_cast<float>(q.floor));
        out.scales[std::size_t(i * per_row + g)] = s;
      }
      float r = 1.0f / s;
      if (d.reciprocal_toward_zero && static_cast<double>(r) * s > 1) r = std::nextafter(r, 0.0f);  // exact product
      for (int t = 0; t < d.reciprocal_ulps_down; ++t) r = std::nextafter(r, 0.0f);
      for (std::int64_t k = first; k < first + width; ++k) {
        const float p = q.divide ? v[std::size_t(k)] / s : v[std::size_t(k)] * r;
        std::uint8_t code;
        if (d.wraps) code = wrapped_code(q.format, p);
        else code = quantize(d.other_format ? d.code_format : q.format, static_cast<double>(p));
        out.codes[std::size_t(k)] = code;
      }
    }
  }
  return out;
}

quantized_verdict judge(const quantization& q, const forward_result& exact, std::int64_t m, std::int64_t n,
                        const kernel_output& out) {
  return judge_quantized(q, exact, m, n, out.codes, out.scales);
}

/// the first mismatch, for a failure message
std::string first_mismatch(const comparison& c) {
  if (c.mismatches.empty()) return "no mismatch kept";
  const mismatch& f = c.mismatches.front();
  char text[320];
  std::snprintf(text, sizeof text, "row %lld col %lld: oracle %.17g got %.17g bound %.3g; %s",
                static_cast<long long>(f.row), static_cast<long long>(f.col), f.oracle, f.got, f.bound, f.note.c_str());
  return text;
}

quantization make_quantization(qformat format, scale_source scale, std::int64_t group, bool divide) {
  quantization q;
  q.format = format;
  q.scale = scale;
  q.group = group;
  q.divide = divide;
  q.floor = test_floor;
  q.given_scale = scale_of(format, row2_amax);
  return q;
}

/// scale failures a seeded scale defect must give: at least the scales that differ from the correct
/// model's by over 2^-10 of them, at most those that differ at all
struct expected_failures {
  std::int64_t at_least = 0, at_most = 0;
};
expected_failures differing_scales(const std::vector<double>& correct, const std::vector<double>& wrong) {
  expected_failures e;
  for (std::size_t k = 0; k < correct.size(); ++k) {
    if (wrong[k] != correct[k]) ++e.at_most;
    if (std::fabs(wrong[k] - correct[k]) > correct[k] * 0x1p-10) ++e.at_least;
  }
  return e;
}

const qformat all_formats[] = {qformat::e4m3, qformat::e5m2, qformat::int8};

// ---- 1. a correct kernel model passes ----------------------------------------------------------

/// scale variants: 0 given, 1 per token, 2 per group of 64, 3 per group of 128
using model_param = std::tuple<qformat, int, bool>;

class quantized_model : public ::testing::TestWithParam<model_param> {};

TEST_P(quantized_model, a_correct_kernel_model_passes_the_codes_and_the_scales) {
  const auto [format, variant, divide] = GetParam();
  static const scale_source sources[] = {scale_source::given, scale_source::per_token, scale_source::per_group,
                                         scale_source::per_group};
  static const std::int64_t groups[] = {0, 0, 64, 128};
  const quantization q = make_quantization(format, sources[variant], groups[variant], divide);
  const forward_result exact = make_case(format);
  // v = fl(y), and kernels near either edge of y's bound (fl(y ± 0.7·b)): row 2's values then
  // cross the rounding boundaries near them, one way or the other; and a reciprocal rounded toward
  // zero (a faithful one, not the nearest)
  for (const auto& [push, toward_zero] : {std::pair{0.0, false}, std::pair{0.7, false}, std::pair{-0.7, false},
                                          std::pair{0.0, true}, std::pair{0.7, true}, std::pair{-0.7, true}}) {
    if (toward_zero && divide) continue;
    model_options d;
    d.push = push;
    d.reciprocal_toward_zero = toward_zero;
    const kernel_output out = run_kernel(q, exact, M, N, d);
    const quantized_verdict v = judge(q, exact, M, N, out);
    EXPECT_EQ(v.codes.compared, M * N);
    EXPECT_EQ(v.codes.skipped, 0);
    const std::string model = std::string("v = fl(y + ") + std::to_string(push) + "·b)" +
                              (toward_zero ? ", 1/s rounded toward zero: " : ": ");
    EXPECT_EQ(v.codes.bound_failures, 0) << model << first_mismatch(v.codes);
    const std::int64_t scales =
        q.scale == scale_source::given ? 0 : M * (q.scale == scale_source::per_group ? N / q.group : 1);
    EXPECT_EQ(static_cast<std::int64_t>(out.scales.size()), scales);
    EXPECT_EQ(v.scales.compared, scales);
    EXPECT_EQ(v.scales.bound_failures, 0) << model << first_mismatch(v.scales);
    // the cases reach what they are meant to: saturated codes (given), the floor (row 1's first
    // group of 64), codes either side of rounding boundaries (row 2: codes other than y/s's own)
    int saturated = 0, crossed = 0;
    const double max = max_finite(format);
    const std::int64_t per_row = scales_a_row(q, N);
    for (std::int64_t k = 0; k < M * N; ++k) {
      const std::uint8_t code = out.codes[std::size_t(k)];
      saturated += std::fabs(decode(format, code)) == max;
      const double s = q.scale == scale_source::given
                           ? q.given_scale
                           : out.scales[std::size_t(k / N * per_row + k % N / (N / per_row))];
      crossed += k >= 2 * N && decode(format, code) != decode(format, quantize(format, exact.y[std::size_t(k)] / s));
    }
    if (q.scale == scale_source::given) {
      EXPECT_GT(saturated, 0);
    } else if (push == 0) {
      EXPECT_EQ(out.scales.back(), static_cast<double>(scale_of(format, row2_amax)));
    }
    if (push != 0) {
      EXPECT_GT(crossed, 0);
    }
    if (q.scale == scale_source::per_group && q.group == 64) {
      EXPECT_EQ(out.scales[std::size_t(1 * (N / 64))], static_cast<double>(static_cast<float>(test_floor)));
    }
    std::printf(
        "%s%s, v = fl(y + %g b): %lld codes, %d saturated, %d of row 2 not y/s's own; %lld scales, "
        "%.3g bound units at most\n",
        name(format), toward_zero ? ", 1/s toward zero" : "", push, static_cast<long long>(v.codes.compared), saturated,
        crossed, static_cast<long long>(v.scales.compared), v.scales.max_bound_units);
  }
}

std::string model_param_name(const ::testing::TestParamInfo<model_param>& info) {
  static const char* const variants[] = {"given", "per_token", "per_group_64", "per_group_128"};
  return std::string(name(std::get<0>(info.param))) + "_" + variants[std::get<1>(info.param)] + "_" +
         (std::get<2>(info.param) ? "divide" : "reciprocal");
}

INSTANTIATE_TEST_SUITE_P(every_variant, quantized_model,
                         ::testing::Combine(::testing::ValuesIn(all_formats), ::testing::Values(0, 1, 2, 3),
                                            ::testing::Bool()),
                         model_param_name);

// ---- 2. seeded defects fail --------------------------------------------------------------------

class quantized_format : public ::testing::TestWithParam<qformat> {};

TEST_P(quantized_format, a_missing_saturation_clamp_fails_the_codes) {
  // a static scale of 1/max: every |y| over 1 lies past the largest finite code
  const qformat format = GetParam();
  for (const bool divide : {false, true}) {
    quantization q = make_quantization(format, scale_source::given, 0, divide);
    q.given_scale = scale_of(format, 1.0f);
    const forward_result exact = make_case(format);
    const kernel_output correct = run_kernel(q, exact, M, N);
    model_options d;
    d.wraps = true;
    const kernel_output wrong = run_kernel(q, exact, M, N, d);
    std::int64_t differ = 0;
    for (std::size_t k = 0; k < correct.codes.size(); ++k) differ += correct.codes[k] != wrong.codes[k];
    ASSERT_GT(differ, 0) << "the case saturates nothing";
    const quantized_verdict good = judge(q, exact, M, N, correct);
    EXPECT_EQ(good.codes.bound_failures, 0) << first_mismatch(good.codes);
    const quantized_verdict bad = judge(q, exact, M, N, wrong);
    EXPECT_EQ(bad.codes.bound_failures, differ) << name(format) << (divide ? " divide" : " reciprocal");
    std::printf("%s %s: %lld wrapped codes, %lld failures\n", name(format), divide ? "divide" : "reciprocal",
                static_cast<long long>(differ), static_cast<long long>(bad.codes.bound_failures));
  }
}

TEST_P(quantized_format, an_in_domain_finite_value_given_a_nan_or_inf_code_fails) {
  // NaN only arises in rows out of the domain (not judged); in the domain a NaN code is never
  // admissible, not even for a zero y (int8 has no NaN code: NaN gives 0, which fails a value far from 0)
  const qformat format = GetParam();
  const quantization q = make_quantization(format, scale_source::per_token, 0, false);
  const forward_result exact = make_case(format);
  kernel_output out = run_kernel(q, exact, M, N);
  ASSERT_EQ(judge(q, exact, M, N, out).codes.bound_failures, 0);
  std::vector<std::uint8_t> bad_codes;
  switch (format) {
    case qformat::e4m3: bad_codes = {0x7f, 0xff}; break;
    case qformat::e5m2: bad_codes = {0x7d, 0x7e, 0x7f, 0xfd, 0xfe, 0xff, 0x7c, 0xfc}; break;  // NaN and ±Inf
    case qformat::int8: bad_codes = {0x00}; break;
  }
  std::int64_t seeded = 0;
  std::size_t next = 0;
  for (std::size_t k = 0; k < out.codes.size() && next < bad_codes.size() * 3; k += 37) {
    // int8: only values clearly away from 0 (|code| >= 2)
    if (format == qformat::int8 && std::fabs(decode(format, out.codes[k])) < 2) continue;
    out.codes[k] = bad_codes[next++ % bad_codes.size()];
    ++seeded;
  }
  if (format != qformat::int8) {
    ASSERT_EQ(exact.y[7], 0.0);
    out.codes[7] = bad_codes.front();  // a zero y: its NaN code fails too
    ++seeded;
  }
  const quantized_verdict v = judge(q, exact, M, N, out);
  EXPECT_EQ(v.codes.bound_failures, seeded) << first_mismatch(v.codes);
  EXPECT_EQ(v.scales.bound_failures, 0);
}

TEST_P(quantized_format, a_correct_kernel_whose_fp32_rounding_crosses_a_boundary_passes) {
  // y exact in fp32 (bound 0) with y/s just past the midpoint of two codes, and a kernel whose fp32
  // arithmetic puts p on the other side, writing the code below y/s's own:
  //   reciprocal  abi.h lets fl(1/s) lie within an ulp of 1/s: rounded toward zero, for a scale
  //               whose nearest fp32 reciprocal lies just above 1/s, it is nearly an ulp (2^-23 of
  //               it) low, and fl(y·r) may round down onto the midpoint, which ties to the even code
  //   divide      fl(y / s) rounds down onto the midpoint, which ties to the even code
  const qformat format = GetParam();
  float s = 0.9f, best_s = s;
  double most = 0;
  for (int t = 0; t < 4096; ++t, s = std::nextafter(s, 1.0f)) {
    float r = 1.0f / s;
    if (static_cast<double>(r) * s > 1) r = std::nextafter(r, 0.0f);
    const double low = 1 - static_cast<double>(r) * s;  // exact: how far r lies below 1/s, relative
    if (low > most) most = low, best_s = s;
  }
  s = best_s;
  ASSERT_GT(most, 0x1.8p-24) << "a reciprocal toward zero this low";
  float r = 1.0f / s;
  if (static_cast<double>(r) * s > 1) r = std::nextafter(r, 0.0f);
  const std::vector<double> values = nonnegative_values(format);
  for (const bool divide : {false, true}) {
    std::vector<double> y;
    for (std::size_t i = 1; i < values.size(); ++i) {
      const double mid = (values[i - 1] + values[i]) / 2, preimage = mid * s;  // exact
      float v = static_cast<float>(preimage);
      for (int t = 0; t < 4; ++t, v = std::nextafter(v, std::numeric_limits<float>::infinity())) {
        const float p = divide ? v / s : v * r;
        if (static_cast<double>(v) > preimage &&
            quantize(format, static_cast<double>(p)) == quantize(format, values[i - 1])) {
          y.push_back(v);
          y.push_back(-v);
        }
      }
    }
    ASSERT_GE(y.size(), 6u) << name(format) << " s " << s;
    std::printf("%s %s: s %.9g, fl(1/s) toward zero %.3g below 1/s (relative), %zu values past a boundary\n",
                name(format), divide ? "divide" : "reciprocal", static_cast<double>(s), most, y.size());
    const std::int64_t n = static_cast<std::int64_t>(y.size());
    const forward_result exact = from_values(1, y, std::vector<double>(y.size(), 0.0));
    quantization q = make_quantization(format, scale_source::given, 0, divide);
    q.given_scale = s;
    model_options d;
    d.reciprocal_toward_zero = true;
    const kernel_output out = run_kernel(q, exact, 1, n, d);
    for (std::int64_t k = 0; k < n; ++k)
      ASSERT_NE(out.codes[std::size_t(k)], quantize(format, y[std::size_t(k)] / s)) << "y " << y[std::size_t(k)];
    const quantized_verdict v = judge(q, exact, 1, n, out);
    EXPECT_EQ(v.codes.bound_failures, 0) << (divide ? "divide: " : "reciprocal: ") << first_mismatch(v.codes);
  }
}

TEST_P(quantized_format, a_reciprocal_rounded_toward_zero_by_four_ulps_fails_where_it_crosses_a_boundary) {
  // a static scale 0.9 (fl(1/0.9) has a mantissa near 1: four ulps are nearly 4·2^-23 of it); for
  // midpoints of neighbouring codes lo < hi, y (an fp32 value, its bound half an fp32 ulp) is the
  // largest fp32 value above the midpoint's preimage for which fl(y·fl(1/s)) still rounds to hi
  // while the wrong reciprocal gives lo: y/s lies about four reciprocal ulps past the boundary
  const qformat format = GetParam();
  std::vector<std::pair<double, double>> neighbours;
  switch (format) {
    case qformat::e4m3: neighbours = {{1.0, 1.125}, {13.0, 14.0}, {208.0, 224.0}, {0x1p-9, 0x2p-9}}; break;
    case qformat::e5m2: neighbours = {{1.0, 1.25}, {12.0, 14.0}, {40960.0, 49152.0}, {0x1p-14, 0x1.4p-14}}; break;
    case qformat::int8: neighbours = {{100.0, 101.0}, {50.0, 51.0}, {126.0, 127.0}, {1.0, 2.0}}; break;
  }
  const float s = 0.9f;
  const float r = 1.0f / s;
  float wrong_r = r;
  for (int t = 0; t < 4; ++t) wrong_r = std::nextafter(wrong_r, 0.0f);
  std::vector<double> y;
  for (const auto& [lo, hi] : neighbours) {
    const std::uint8_t lo_code = quantize(format, lo), hi_code = quantize(format, hi);
    const double mid = (lo + hi) / 2;
    float v = static_cast<float>(mid * s);
    for (int t = 0; t < 32; ++t) v = std::nextafter(v, 0.0f);
    float found = 0;
    for (int t = 0; t < 128; ++t, v = std::nextafter(v, std::numeric_limits<float>::infinity())) {
      const std::uint8_t right = quantize(format, static_cast<double>(v * r));
      const std::uint8_t wrong = quantize(format, static_cast<double>(v * wrong_r));
      if (wrong == hi_code) break;
      if (right == hi_code && wrong == lo_code) found = v;
    }
    ASSERT_GT(found, 0) << name(format) << " " << mid << ": no fp32 y between the two reciprocals' boundaries";
    std::printf("%s: boundary %g, y %.9g, y/s - boundary = %.3g of the boundary\n", name(format), mid,
                static_cast<double>(found), (found / static_cast<double>(s) - mid) / mid);
    y.push_back(found);
    y.push_back(-found);  // and its mirror
  }
  const std::int64_t n = static_cast<std::int64_t>(y.size());
  std::vector<double> bound(y.size());
  for (std::size_t k = 0; k < y.size(); ++k) bound[k] = std::fabs(y[k]) * 0x1p-24;
  const forward_result exact = from_values(1, y, bound);
  quantization q = make_quantization(format, scale_source::given, 0, false);
  q.given_scale = s;
  const kernel_output correct = run_kernel(q, exact, 1, n);
  const quantized_verdict good = judge(q, exact, 1, n, correct);
  EXPECT_EQ(good.codes.bound_failures, 0) << first_mismatch(good.codes);
  model_options d;
  d.reciprocal_ulps_down = 4;
  const kernel_output wrong = run_kernel(q, exact, 1, n, d);
  for (std::size_t k = 0; k < y.size(); ++k) ASSERT_NE(correct.codes[k], wrong.codes[k]) << k;
  const quantized_verdict bad = judge(q, exact, 1, n, wrong);
  EXPECT_EQ(bad.codes.bound_failures, n) << first_mismatch(bad.codes);
}

TEST_P(quantized_format, a_per_group_scale_from_the_whole_row_fails_the_scales) {
  // rows 0 and 1 have groups whose amax is below the row's; row 2's groups share the row's amax.
  // The codes, judged against the scale the kernel wrote, are consistent with it and pass
  const qformat format = GetParam();
  for (const std::int64_t group : {64, 128}) {
    const quantization q = make_quantization(format, scale_source::per_group, group, false);
    const forward_result exact = make_case(format);
    const kernel_output correct = run_kernel(q, exact, M, N);
    model_options d;
    d.row_amax_for_groups = true;
    const kernel_output wrong = run_kernel(q, exact, M, N, d);
    const expected_failures e = differing_scales(correct.scales, wrong.scales);
    ASSERT_GT(e.at_least, 0);
    const quantized_verdict v = judge(q, exact, M, N, wrong);
    EXPECT_GE(v.scales.bound_failures, e.at_least) << "group " << group;
    EXPECT_LE(v.scales.bound_failures, e.at_most) << "group " << group;
    EXPECT_EQ(v.scales.compared, M * (N / group));
    EXPECT_EQ(v.codes.bound_failures, 0) << first_mismatch(v.codes);
  }
}

TEST_P(quantized_format, a_scale_from_the_unscaled_row_fails_the_scales) {
  // x = y / γ with γ_j = 0.5 + 0.25·(j mod 7): the amax of x is not the amax of y
  const qformat format = GetParam();
  const forward_result exact = make_case(format);
  std::vector<double> x(exact.y.size());
  for (std::size_t k = 0; k < x.size(); ++k) x[k] = exact.y[k] / (0.5 + 0.25 * double(k % std::size_t(N) % 7));
  for (const auto& [source, group] :
       {std::pair{scale_source::per_token, std::int64_t(0)}, std::pair{scale_source::per_group, std::int64_t(64)}}) {
    const quantization q = make_quantization(format, source, group, true);
    const kernel_output correct = run_kernel(q, exact, M, N);
    model_options d;
    d.amax_of = &x;
    const kernel_output wrong = run_kernel(q, exact, M, N, d);
    const expected_failures e = differing_scales(correct.scales, wrong.scales);
    ASSERT_GT(e.at_least, 0);
    const quantized_verdict v = judge(q, exact, M, N, wrong);
    EXPECT_GE(v.scales.bound_failures, e.at_least);
    EXPECT_LE(v.scales.bound_failures, e.at_most);
  }
}

TEST_P(quantized_format, a_code_one_off_far_from_any_boundary_fails) {
  // elements whose y/s lies within 1% of a code's value from it (and not at the largest code):
  // code + 1 is the next value out (or, for int8's -1, zero)
  const qformat format = GetParam();
  const forward_result exact = make_case(format);
  for (const scale_source source : {scale_source::given, scale_source::per_token}) {
    const quantization q = make_quantization(format, source, 0, false);
    kernel_output out = run_kernel(q, exact, M, N);
    const double max = max_finite(format);
    std::int64_t seeded = 0;
    for (std::int64_t k = 0; k < M * N && seeded < 24; ++k) {
      const std::uint8_t code = out.codes[std::size_t(k)];
      const double value = decode(format, code);
      if (std::fabs(value) == max) continue;
      const double s = source == scale_source::given ? q.given_scale : out.scales[std::size_t(k / N)];
      const double p = exact.y[std::size_t(k)] / s;
      const auto next = static_cast<std::uint8_t>(code + 1);
      const double step = std::fabs(decode(format, next) - value);
      // the nearer neighbour's distance: the step to the other side is no smaller than half of it
      if (!(std::fabs(p - value) < 0.01 * step * 0.5)) continue;
      out.codes[std::size_t(k)] = next;
      ++seeded;
    }
    ASSERT_GT(seeded, 0);
    const quantized_verdict v = judge(q, exact, M, N, out);
    EXPECT_EQ(v.codes.bound_failures, seeded) << first_mismatch(v.codes);
  }
}

TEST_P(quantized_format, a_zero_scale_admits_nan_or_zero_codes_and_rejects_any_other) {
  // floor 0 and an all-zero row (y = 0, y_bound = 0): the scale is 0 and the codes are those of 0/0
  const qformat format = GetParam();
  forward_result exact = make_case(format);
  for (std::int64_t j = 0; j < N; ++j) exact.y[std::size_t(N + j)] = 0, exact.y_bound[std::size_t(N + j)] = 0;
  for (const auto& [source, group] :
       {std::pair{scale_source::per_token, std::int64_t(0)}, std::pair{scale_source::per_group, std::int64_t(64)}}) {
    for (const bool divide : {false, true}) {
      quantization q = make_quantization(format, source, group, divide);
      q.floor = 0;
      const std::int64_t per_row = scales_a_row(q, N);
      kernel_output out = run_kernel(q, exact, M, N);
      for (std::int64_t g = 0; g < per_row; ++g) ASSERT_EQ(out.scales[std::size_t(per_row + g)], 0.0);
      // the model's codes: 0/0 and 0·Inf are NaN, quantized to the NaN code (int8: 0)
      const std::uint8_t nan_code = quantize(format, nan);
      for (std::int64_t j = 0; j < N; ++j) ASSERT_EQ(out.codes[std::size_t(N + j)], nan_code);
      quantized_verdict v = judge(q, exact, M, N, out);
      EXPECT_EQ(v.codes.bound_failures, 0) << first_mismatch(v.codes);
      EXPECT_EQ(v.scales.bound_failures, 0) << first_mismatch(v.scales);
      EXPECT_EQ(v.scales.compared, M * per_row);
      // every NaN code and both zeros pass; any other code fails
      std::int64_t admitted = 0;
      for (unsigned c = 0; c < 256; ++c) {
        const auto code = static_cast<std::uint8_t>(c);
        kernel_output one = out;
        one.codes[std::size_t(N + 5)] = code;
        const double value = decode(format, code);
        const bool allowed = std::isnan(value) || value == 0;
        v = judge(q, exact, M, N, one);
        EXPECT_EQ(v.codes.bound_failures, allowed ? 0 : 1) << name(format) << " " << hex(c);
        admitted += allowed;
      }
      EXPECT_EQ(admitted, format == qformat::e4m3 ? 4 : format == qformat::e5m2 ? 8 : 1);
      // a whole row of zero codes passes
      kernel_output zeros = out;
      for (std::int64_t j = 0; j < N; ++j)
        zeros.codes[std::size_t(N + j)] = j % 2 && format != qformat::int8 ? 0x80 : 0x00;
      v = judge(q, exact, M, N, zeros);
      EXPECT_EQ(v.codes.bound_failures, 0) << first_mismatch(v.codes);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(formats, quantized_format, ::testing::ValuesIn(all_formats),
                         [](const auto& info) { return std::string(name(info.param)); });

TEST(quantized, codes_produced_in_the_other_fp8_format_fail) {
  // e4m3 codes produced by an e5m2 conversion (and the reverse): the bytes stand for other values
  for (const auto& [format, other] :
       {std::pair{qformat::e4m3, qformat::e5m2}, std::pair{qformat::e5m2, qformat::e4m3}}) {
    for (const scale_source source : {scale_source::given, scale_source::per_token}) {
      const quantization q = make_quantization(format, source, 0, false);
      const forward_result exact = make_case(format);
      const kernel_output correct = run_kernel(q, exact, M, N);
      model_options d;
      d.other_format = true;
      d.code_format = other;
      const kernel_output wrong = run_kernel(q, exact, M, N, d);
      // at least the codes whose value moves by over a quarter of it (two e4m3 steps) or to NaN
      std::int64_t clearly = 0, differ = 0;
      for (std::size_t k = 0; k < correct.codes.size(); ++k) {
        const double want = decode(format, correct.codes[k]), got = decode(format, wrong.codes[k]);
        differ += correct.codes[k] != wrong.codes[k];
        clearly += !(std::fabs(got - want) <= 0.25 * std::fabs(want) + 0x1p-9);
      }
      ASSERT_GT(clearly, 0);
      const quantized_verdict v = judge(q, exact, M, N, wrong);
      EXPECT_GE(v.codes.bound_failures, clearly) << name(format) << " as " << name(other);
      EXPECT_LE(v.codes.bound_failures, differ);
      std::printf("%s codes written as %s: %lld of %lld differ, %lld failures\n", name(format), name(other),
                  static_cast<long long>(differ), static_cast<long long>(M * N),
                  static_cast<long long>(v.codes.bound_failures));
    }
  }
}

TEST(quantized, a_nan_or_negative_written_scale_fails_the_scales_without_throwing) {
  // a defective kernel can write any fp32 into the scales: the judge fails it, it must not throw
  for (const qformat format : all_formats) {
    const quantization q = make_quantization(format, scale_source::per_token, 0, false);
    const forward_result exact = make_case(format);
    for (const double bad : {nan, -static_cast<double>(scale_of(format, row2_amax)), inf, -inf}) {
      kernel_output out = run_kernel(q, exact, M, N);
      out.scales[2] = bad;
      try {
        const quantized_verdict v = judge(q, exact, M, N, out);
        EXPECT_EQ(v.scales.bound_failures, 1) << name(format) << " scale " << bad;
      } catch (const std::exception& e) {
        ADD_FAILURE() << name(format) << ": a written scale of " << bad << " for row 2 throws: " << e.what();
      }
    }
  }
}

TEST(quantized, a_scale_that_underflows_in_fp32_or_whose_reciprocal_overflows_admits_what_a_kernel_computes) {
  // one row of fp32 subnormals, amax 1.5·2^-136: e5m2's amax / 57344 underflows to 0 (v / 0 and
  // v·Inf give ±max, 0/0 NaN); the e4m3 and int8 scales are subnormal and their fp32 reciprocals
  // overflow (v·Inf again under the reciprocal; the quotient is finite under divide)
  const std::int64_t n = 64;
  std::vector<double> y(static_cast<std::size_t>(n)), bound(static_cast<std::size_t>(n), 0x1p-148);
  static const double multiples[] = {0, 1.5, -1.5, 1, -0.25, 0.75, -1.25, 0x1p-9};
  for (std::int64_t j = 0; j < n; ++j) y[std::size_t(j)] = multiples[j % 8] * 0x1p-136;
  const forward_result exact = from_values(1, y, bound);
  for (const qformat format : all_formats) {
    for (const bool divide : {false, true}) {
      quantization q = make_quantization(format, scale_source::per_token, 0, divide);
      q.floor = 0;
      const kernel_output out = run_kernel(q, exact, 1, n);
      const float s = static_cast<float>(out.scales[0]);
      if (format == qformat::e5m2) EXPECT_EQ(s, 0.0f);
      else EXPECT_TRUE(s > 0 && std::isinf(1.0f / s)) << name(format) << " " << s;
      if (!divide || format == qformat::e5m2) {
        // v·Inf or v / 0: ±max, and 0·Inf or 0/0 (NaN) for the zeros
        EXPECT_EQ(decode(format, out.codes[1]), max_finite(format)) << name(format);
        EXPECT_EQ(decode(format, out.codes[2]), -max_finite(format)) << name(format);
        EXPECT_EQ(out.codes[0], quantize(format, nan)) << name(format);
      }
      const quantized_verdict v = judge(q, exact, 1, n, out);
      EXPECT_EQ(v.scales.bound_failures, 0) << name(format) << first_mismatch(v.scales);
      EXPECT_EQ(v.codes.bound_failures, 0)
          << name(format) << (divide ? " divide: " : " reciprocal: ") << first_mismatch(v.codes);
      // a NaN code (int8: 0) for a v clearly away from 0 fails
      kernel_output wrong = out;
      wrong.codes[1] = quantize(format, nan);
      EXPECT_EQ(judge(q, exact, 1, n, wrong).codes.bound_failures, 1) << name(format);
    }
  }
}

// ---- rows out of the domain ----------------------------------------------------------------------

TEST(quantized, a_row_out_of_the_domain_is_not_judged) {
  // row 1 has a non-finite input: its y is NaN and its bounds NaN. Whatever the kernel wrote there
  // (the model's NaN codes, or +max for NaN, a defect of no consequence there) is skipped
  for (const qformat format : all_formats) {
    forward_result exact = make_case(format);
    for (std::int64_t j = 0; j < N; ++j) exact.y[std::size_t(N + j)] = nan, exact.y_bound[std::size_t(N + j)] = nan;
    exact.rows[1] = row_status{domain_reason::non_finite_input};
    for (const auto& [source, group] :
         {std::pair{scale_source::given, std::int64_t(0)}, std::pair{scale_source::per_token, std::int64_t(0)},
          std::pair{scale_source::per_group, std::int64_t(128)}}) {
      const quantization q = make_quantization(format, source, group, false);
      const std::int64_t per_row = q.scale == scale_source::given ? 0 : scales_a_row(q, N);
      kernel_output out = run_kernel(q, exact, M, N);
      for (std::int64_t g = 0; g < per_row; ++g) out.scales[std::size_t(per_row + g)] = nan;
      for (const bool max_for_nan : {false, true}) {
        if (max_for_nan)
          for (std::int64_t j = 0; j < N; ++j) out.codes[std::size_t(N + j)] = quantize(format, max_finite(format));
        const quantized_verdict v = judge(q, exact, M, N, out);
        EXPECT_EQ(v.codes.compared, (M - 1) * N);
        EXPECT_EQ(v.codes.skipped, N);
        EXPECT_EQ(v.codes.bound_failures, 0) << first_mismatch(v.codes);
        EXPECT_EQ(v.scales.compared, (M - 1) * per_row);
        EXPECT_EQ(v.scales.skipped, per_row);
        EXPECT_EQ(v.scales.bound_failures, 0) << first_mismatch(v.scales);
      }
      // the rows in the domain are still judged: a NaN code there fails
      if (format != qformat::int8) {
        out.codes[3] = quantize(format, nan);
        EXPECT_EQ(judge(q, exact, M, N, out).codes.bound_failures, 1);
      }
    }
  }
}

// ---- 3. exact ties -----------------------------------------------------------------------------

/// midpoints of neighbouring codes: their two codes (lo nearer zero), the round-to-nearest-even
/// one, and the codes one further out on either side
struct tie {
  qformat format;
  double mid;
  std::uint8_t lo, hi, even, out_lo, out_hi;
};

const tie ties[] = {
    {qformat::e4m3, 1.0625, 0x38, 0x39, 0x38, 0x37, 0x3a},
    {qformat::e4m3, 1.1875, 0x39, 0x3a, 0x3a, 0x38, 0x3b},
    {qformat::e4m3, -1.0625, 0xb8, 0xb9, 0xb8, 0xb7, 0xba},
    {qformat::e4m3, 0x1p-10, 0x00, 0x01, 0x00, 0x81, 0x02},
    {qformat::e5m2, 1.125, 0x3c, 0x3d, 0x3c, 0x3b, 0x3e},
    {qformat::e5m2, 1.375, 0x3d, 0x3e, 0x3e, 0x3c, 0x3f},
    {qformat::e5m2, -1.125, 0xbc, 0xbd, 0xbc, 0xbb, 0xbe},
    {qformat::int8, 2.5, 2, 3, 2, 1, 4},
    {qformat::int8, 3.5, 3, 4, 4, 2, 5},
    {qformat::int8, -2.5, 0xfe, 0xfd, 0xfe, 0xff, 0xfc},
};

/// judges code for an element whose exact y/s is t.mid (s = 0.5: y = mid/2, fp32-exact, and both
/// v·fl(1/s) and v/s are exact in fp32), with y's bound b; true when it passes
bool tie_admits(const tie& t, double b, bool divide, std::uint8_t code) {
  quantization q = make_quantization(t.format, scale_source::given, 0, divide);
  q.given_scale = 0.5;
  const forward_result exact = from_values(1, {t.mid * 0.5}, {b});
  return judge_quantized(q, exact, 1, 1, {code}, {}).codes.bound_failures == 0;
}

TEST(quantized, an_exact_tie_with_a_positive_bound_admits_both_neighbouring_codes) {
  for (const tie& t : ties) {
    for (const bool divide : {false, true}) {
      const double b = few_ulps(t.mid * 0.5);
      // the model itself: the tie goes to the even code
      quantization q = make_quantization(t.format, scale_source::given, 0, divide);
      q.given_scale = 0.5;
      const forward_result exact = from_values(1, {t.mid * 0.5}, {b});
      EXPECT_EQ(run_kernel(q, exact, 1, 1).codes[0], t.even) << name(t.format) << " " << t.mid;
      EXPECT_TRUE(tie_admits(t, b, divide, t.lo)) << name(t.format) << " " << t.mid << " " << hex(t.lo);
      EXPECT_TRUE(tie_admits(t, b, divide, t.hi)) << name(t.format) << " " << t.mid << " " << hex(t.hi);
      // and nothing further out
      EXPECT_FALSE(tie_admits(t, b, divide, t.out_lo)) << name(t.format) << " " << t.mid << " " << hex(t.out_lo);
      EXPECT_FALSE(tie_admits(t, b, divide, t.out_hi)) << name(t.format) << " " << t.mid << " " << hex(t.out_hi);
    }
  }
}

TEST(quantized, an_exact_tie_with_a_zero_bound_admits_only_the_even_code) {
  // y = mid·s exactly with y_bound 0: every correct kernel holds v = y, and under divide with
  // s = 0.5, fl(v / s) is the tie itself (IEEE division, exact here), which rounds to the even
  // code; the other neighbour is the code of a kernel that rounds ties away from zero (or up).
  // (Under reciprocal abi.h lets fl(1/s) lie within an ulp of 2, so 2 - 2^-23 is a correct
  // reciprocal too, and p may lie just below the tie: not a case of one code.)
  for (const tie& t : ties) {
    const std::uint8_t odd = t.even == t.lo ? t.hi : t.lo;
    EXPECT_TRUE(tie_admits(t, 0, true, t.even)) << name(t.format) << " " << t.mid << " " << hex(t.even);
    EXPECT_FALSE(tie_admits(t, 0, true, odd))
        << name(t.format) << " " << t.mid << " divide: " << hex(odd) << " admitted";
  }
}

}  // namespace
}  // namespace nc::oracle
