#include "normcheck/oracles/quantized.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace nc::oracle {
namespace {

constexpr double smallest_subnormal_step = 0x1p-149;  // two fp32 underflows' worth, absolute
constexpr std::size_t kept = 8;                       // mismatches a comparison keeps

// a failing element, recorded
void fail(comparison& c, std::int64_t row, std::int64_t col, double oracle, double got, double bound, std::string note) {
  ++c.bound_failures;
  if (c.mismatches.size() >= kept) return;
  mismatch m;
  m.row = row, m.col = col, m.oracle = oracle, m.got = got, m.bound = bound;
  m.error = std::isfinite(got) && std::isfinite(oracle) ? std::fabs(got - oracle) : INFINITY;
  m.bound_failed = true;
  m.note = std::move(note);
  c.mismatches.push_back(std::move(m));
}

void account(comparison& c, double error, double bound) {
  ++c.compared;
  if (std::isfinite(error)) c.max_abs_error = std::max(c.max_abs_error, error);
  if (bound > 0 && std::isfinite(error)) c.max_bound_units = std::max(c.max_bound_units, error / bound);
}

std::string code_note(qformat format, std::uint8_t code, const code_range& range) {
  char text[160];
  std::snprintf(text, sizeof text, "code 0x%02x (%g); the admissible codes run 0x%02x (%g) to 0x%02x (%g)", code,
                decode(format, code), range.low, decode(format, range.low), range.high, decode(format, range.high));
  return text;
}

// the largest fp32 value, and past it (with an ulp's slack) the reciprocal of a scale overflows
constexpr double max_fp32 = 0x1.fffffep127;

// value is a code of v * Inf (or v / 0) for some v in [low, high]: +-max by v's sign, and for
// v = 0 a NaN code or zero (int8's NaN)
bool degenerate_code(qformat format, double low, double high, double value) {
  const double max = max_finite(format);
  if (std::isnan(value) || value == 0) return low <= 0 && high >= 0;
  return (value == max && high > 0) || (value == -max && low < 0);
}

// the least fp32 value >= x and the greatest <= x (+-Inf past the finite ones)
float fp32_up(double x) {
  const float f = float(x);
  return double(f) < x ? std::nextafter(f, INFINITY) : f;
}
float fp32_down(double x) {
  const float f = float(x);
  return double(f) > x ? std::nextafter(f, -INFINITY) : f;
}

// The codes of the fp32 values in [p - bound, p + bound]: a kernel quantizes an fp32 value, so
// the interval's ends move inward to fp32 (after a widening by 2^-50 of themselves that covers
// their own rounding to double) before they are quantized; where no fp32 value lies inside, the
// codes of the interval itself
code_range fp32_admissible(qformat format, double p, double bound) {
  const double low = p - bound, high = p + bound;
  const float low32 = fp32_up(low - std::fabs(low) * 0x1p-50), high32 = fp32_down(high + std::fabs(high) * 0x1p-50);
  if (!(low32 <= high32)) return admissible(format, p, bound);
  return {quantize(format, low32), quantize(format, high32)};
}

}  // namespace

std::int64_t scales_a_row(const quantization& q, std::int64_t n) {
  return q.scale == scale_source::per_group && q.group > 0 ? n / q.group : 1;
}

scale_bound exact_scale(const quantization& q, const forward_result& exact, std::int64_t first, std::int64_t last) {
  double amax = 0, spread = 0;
  for (std::int64_t k = first; k < last; ++k) {
    amax = std::max(amax, std::fabs(exact.y[std::size_t(k)]));
    spread = std::max(spread, exact.y_bound[std::size_t(k)]);
  }
  const double max = max_finite(q.format);
  return {std::max(amax / max, q.floor), spread / max + (amax + spread) / max * 0x1p-22 + smallest_subnormal_step};
}

quantized_verdict judge_quantized(const quantization& q, const forward_result& exact, std::int64_t m, std::int64_t n,
                                  const std::vector<std::uint8_t>& codes, const std::vector<double>& scales) {
  quantized_verdict v;
  const std::int64_t per_row = scales_a_row(q, n), width = n / per_row;
  const double relative = q.divide ? 0x1p-24 : 0x1p-23 + 0x1p-24 + 0x1p-46;
  for (std::int64_t i = 0; i < m; ++i) {
    if (!exact.rows[std::size_t(i)].in_domain()) {
      v.codes.skipped += n;
      if (q.scale != scale_source::given) v.scales.skipped += per_row;
      continue;
    }
    for (std::int64_t g = 0; g < per_row; ++g) {
      const std::int64_t first = i * n + g * width, last = first + width;
      double s = q.given_scale;
      if (q.scale != scale_source::given) {
        s = scales[std::size_t(i * per_row + g)];
        const scale_bound want = exact_scale(q, exact, first, last);
        const double error = std::fabs(s - want.scale);
        account(v.scales, error, want.bound);
        if (!(error <= want.bound)) fail(v.scales, i, g, want.scale, s, want.bound, "");
      }
      for (std::int64_t k = first; k < last; ++k) {
        const std::uint8_t code = codes[std::size_t(k)];
        const double y = exact.y[std::size_t(k)], b = exact.y_bound[std::size_t(k)];
        const std::int64_t col = k - i * n;
        const double value = decode(q.format, code);
        ++v.codes.compared;  // a code's distance from p says nothing past its rounding: no bound units
        // a scale of 0, or one whose fp32 reciprocal overflows (a subnormal scale under a floor
        // of 0): v / 0 or v * Inf, so +-max by the sign of v, and 0/0's NaN (int8: 0) where v may be 0
        const bool infinite = s == 0 || (!q.divide && 1 / s >= max_fp32);
        if (infinite && degenerate_code(q.format, y - b, y + b, value)) continue;
        if (s == 0) {
          fail(v.codes, i, col, y > 0 ? INFINITY : y < 0 ? -INFINITY : NAN, value, 0,
               "the scale is 0: a code must be what v / 0 gives (+-max, or a NaN code or zero where v may be 0)");
          continue;
        }
        if (!(s > 0)) continue;  // a NaN or negative scale: the scale's verdict above failed it
        const double p = y / s;
        const double bound = b / s + (std::fabs(y) + b) / s * relative + std::fabs(p) * 0x1p-52 + smallest_subnormal_step;
        const code_range range = fp32_admissible(q.format, p, bound);
        if (!(value >= decode(q.format, range.low) && value <= decode(q.format, range.high)))
          fail(v.codes, i, col, p, value, bound, code_note(q.format, code, range));
      }
    }
  }
  return v;
}

}  // namespace nc::oracle
