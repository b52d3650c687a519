// The exact quantization oracle: FP8 E4M3/E5M2 and symmetric INT8 codes from their definitions.
//
// Every value a code stands for is built from its sign, exponent and mantissa fields with ldexp,
// and quantization finds the nearest representable values by scaling the magnitude so that the
// format's spacing in its binade is 1 and rounding that to an integer, half to even. Every step
// but the final rounding decision is an exact power-of-two scaling or an exact subtraction.
//
// The admissible run's ends are quantizations of v − b and v + b, which a double need not hold:
// each end is carried as an unevaluated sum s + e (s the rounded sum, e its exact error, from
// TwoSum), and the rounding decision looks at e only when s itself lies exactly on a tie. That is
// enough: every rounding boundary of these formats (a midpoint between neighbouring codes, or the
// largest finite value) is a double, and s is the double nearest s + e, so no boundary lies
// strictly between them.
#include "normcheck/oracles/quantize.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace nc::oracle {
namespace {

/// the fields of a one-byte floating-point format
struct fp8_layout {
  int mantissa_bits;     ///< stored mantissa bits (3 for e4m3, 2 for e5m2)
  int exponent_bits;     ///< exponent field width (4, 5)
  int bias;              ///< exponent bias (7, 15)
  bool has_infinity;     ///< e5m2: S.11111.00 is ±Inf and the other all-ones exponents are NaN
  std::uint8_t nan_code; ///< the NaN quantize() produces
  double max;            ///< the largest finite value
};

// e4m3 "fn": 1.110b·2^8 = 448 (S.1111.111 is NaN); e5m2: 1.11b·2^15 = 57344 (exponent 31 is Inf/NaN)
constexpr fp8_layout e4m3_layout{3, 4, 7, false, 0x7f, 448.0};
constexpr fp8_layout e5m2_layout{2, 5, 15, true, 0x7e, 57344.0};
constexpr double int8_max = 127.0;

const fp8_layout& layout_of(qformat format) { return format == qformat::e4m3 ? e4m3_layout : e5m2_layout; }

/// exponent of the smallest normal number: 1 − bias (-6 for e4m3, -14 for e5m2)
int min_exponent(const fp8_layout& f) { return 1 - f.bias; }

double decode_fp8(const fp8_layout& f, std::uint8_t code) {
  const bool negative = (code & 0x80u) != 0;
  const int exponent_field = (code >> f.mantissa_bits) & ((1 << f.exponent_bits) - 1);
  const int mantissa_field = code & ((1 << f.mantissa_bits) - 1);
  const int all_ones_exponent = (1 << f.exponent_bits) - 1;
  const int all_ones_mantissa = (1 << f.mantissa_bits) - 1;
  double magnitude;
  if (f.has_infinity && exponent_field == all_ones_exponent) {
    if (mantissa_field != 0) return std::numeric_limits<double>::quiet_NaN();
    magnitude = std::numeric_limits<double>::infinity();
  } else if (!f.has_infinity && exponent_field == all_ones_exponent && mantissa_field == all_ones_mantissa) {
    return std::numeric_limits<double>::quiet_NaN();
  } else if (exponent_field == 0) {
    // subnormal: M · 2^(emin − mantissa_bits)
    magnitude = std::ldexp(static_cast<double>(mantissa_field), min_exponent(f) - f.mantissa_bits);
  } else {
    // normal: (2^mantissa_bits + M) · 2^(E − bias − mantissa_bits)
    magnitude = std::ldexp(static_cast<double>((1 << f.mantissa_bits) + mantissa_field),
                           exponent_field - f.bias - f.mantissa_bits);
  }
  return negative ? -magnitude : magnitude;
}

/// rounds the integer-scaled magnitude n, plus an error of which only the sign counts, to an
/// integer: to nearest, ties to even; n ≥ 0, and the error matters only when n is exactly a tie
long round_scaled(double n, double error) {
  const double whole = std::floor(n);
  const double fraction = n - whole;  // exact: n and floor(n) share their binade's spacing
  auto result = static_cast<long>(whole);
  bool up;
  if (fraction > 0.5) up = true;
  else if (fraction < 0.5) up = false;
  else if (error != 0) up = error > 0;  // s lies on the tie, the exact value s + e does not
  else up = (result % 2) != 0;          // an exact tie: to the even integer
  return up ? result + 1 : result;
}

/// quantizes the exact value s + e (s the double nearest it, or s non-finite and e = 0) into an FP8 format
std::uint8_t quantize_fp8(const fp8_layout& f, double s, double e) {
  if (std::isnan(s)) return f.nan_code;
  const bool negative = std::signbit(s);
  const std::uint8_t sign = negative ? 0x80u : 0x00u;
  const double magnitude = std::fabs(s);
  const double magnitude_error = negative ? -e : e;  // |s + e| = |s| + magnitude_error (s ≠ 0)
  const int mantissa_bits = f.mantissa_bits;
  const int one = 1 << mantissa_bits;  // the hidden bit, scaled
  // saturation: past the largest finite value (±Inf included) everything gives ±max
  if (magnitude > f.max) return static_cast<std::uint8_t>(sign | quantize_fp8(f, f.max, 0));
  if (magnitude == 0) return sign;  // ±0 (e is 0 here: a nonzero exact sum never rounds to 0 in double)
  // the binade's exponent, no lower than the smallest normal's (below it lies the subnormal spacing)
  int exponent = std::ilogb(magnitude);
  if (exponent < min_exponent(f)) exponent = min_exponent(f);
  const int quantum_exponent = exponent - mantissa_bits;
  // only the error's sign matters (scaling it could underflow it to 0)
  long m = round_scaled(std::ldexp(magnitude, -quantum_exponent), magnitude_error);
  // rounding up out of the binade: 2^(mantissa_bits+1) · 2^q = 2^mantissa_bits · 2^(q+1)
  if (m == 2L * one) {
    m = one;
    ++exponent;
  }
  if (m < one) return static_cast<std::uint8_t>(sign | m);  // subnormal (or zero): E = 0, M = m
  const int exponent_field = exponent + f.bias;
  return static_cast<std::uint8_t>(sign | (exponent_field << mantissa_bits) | (m - one));
}

/// quantizes the exact value s + e into symmetric int8
std::uint8_t quantize_int8(double s, double e) {
  if (std::isnan(s)) return 0;  // NaN → 0, as CUDA's float→integer conversions
  const bool negative = std::signbit(s);
  const double magnitude = std::fabs(s);
  const double magnitude_error = negative ? -e : e;
  const long m = magnitude > int8_max ? 127L : round_scaled(magnitude, magnitude_error);
  // two's complement of ±m; -0 has no code of its own
  return static_cast<std::uint8_t>(negative ? -m : m);
}

std::uint8_t quantize_exact(qformat format, double s, double e) {
  if (!std::isfinite(s)) e = 0;
  return format == qformat::int8 ? quantize_int8(s, e) : quantize_fp8(layout_of(format), s, e);
}

/// TwoSum (Knuth): s = fl(a + b) and e with s + e = a + b exactly, for finite a, b and s
void two_sum(double a, double b, double& s, double& e) {
  s = a + b;
  const double b_virtual = s - a;
  const double a_virtual = s - b_virtual;
  e = (a - a_virtual) + (b - b_virtual);
}

}  // namespace

const char* name(qformat format) {
  switch (format) {
    case qformat::e4m3: return "fp8e4m3";
    case qformat::e5m2: return "fp8e5m2";
    case qformat::int8: return "int8";
  }
  return "?";
}

double max_finite(qformat format) { return format == qformat::int8 ? int8_max : layout_of(format).max; }

double decode(qformat format, std::uint8_t code) {
  if (format == qformat::int8) return static_cast<double>(static_cast<std::int8_t>(code));
  return decode_fp8(layout_of(format), code);
}

std::uint8_t quantize(qformat format, double value) { return quantize_exact(format, value, 0); }

code_range admissible(qformat format, double v, double b) {
  if (std::isnan(b) || b < 0) throw std::invalid_argument("quantize: the bound must be a number >= 0");
  // b = 0, a NaN v or an infinite v: the interval is the one value (its sign of zero included)
  if (b == 0 || !std::isfinite(v)) {
    const std::uint8_t code = quantize(format, v);
    return {code, code};
  }
  double low_s, low_e, high_s, high_e;
  two_sum(v, -b, low_s, low_e);
  two_sum(v, b, high_s, high_e);
  return {quantize_exact(format, low_s, low_e), quantize_exact(format, high_s, high_e)};
}

bool admits(qformat format, double v, double b, std::uint8_t code) {
  const double value = decode(format, code);
  if (std::isnan(v)) return std::isnan(value);
  const code_range range = admissible(format, v, b);
  // comparisons by value: -0 equals +0, and NaN codes compare false
  return value >= decode(format, range.low) && value <= decode(format, range.high);
}

}  // namespace nc::oracle
