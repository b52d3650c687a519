// Exact conversions between the bits of fp32/fp16/bf16/f64 and double.
#include "normcheck/oracles/dtype.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "half_bits.hpp"

namespace nc::oracle {
namespace {

constexpr format make_format(int precision, int min_exponent, int max_exponent) {
  // the largest finite value is (2 − 2^(1−p))·2^emax; from halfway to the next binade on, values round to Inf
  const double top = [max_exponent] {
    double t = 1;
    for (int i = 0; i < max_exponent; ++i) t *= 2;
    return t;
  }();
  double ulp_of_max = top;
  for (int i = 1; i < precision; ++i) ulp_of_max /= 2;
  double min_normal = 1;
  for (int i = 0; i > min_exponent; --i) min_normal /= 2;
  double u = 1;
  for (int i = 0; i < precision; ++i) u /= 2;
  double half_subnormal = min_normal;
  for (int i = 0; i < precision; ++i) half_subnormal /= 2;
  // f64's threshold lies beyond double's range: everything finite stays finite
  const double threshold = precision == 53 ? std::numeric_limits<double>::infinity() : top + (top - ulp_of_max / 2);
  return {precision, min_exponent, max_exponent, u, half_subnormal, min_normal, top + (top - ulp_of_max), threshold};
}

constexpr format f32_format = make_format(24, -126, 127);
constexpr format f16_format = make_format(11, -14, 15);
constexpr format bf16_format = make_format(8, -126, 127);
// f64's half subnormal (2^-1075) is below double's range: it reads as 0, which is harmless
// because no f64 bound is ever evaluated near double underflow.
constexpr format f64_format = make_format(53, -1022, 1023);

// round a finite double to a narrower format: scale the value so that the format's quantum at
// its binade is 1, round to an integer (nearbyint rounds to nearest-even in the default mode),
// scale back. Every step but the nearbyint is an exact power-of-two scaling.
double round_narrow(const format& f, double value) {
  if (!std::isfinite(value) || value == 0) return value;
  const double magnitude = std::fabs(value);
  const int quantum_exponent = std::max(std::ilogb(magnitude), f.min_exponent) - f.precision + 1;
  const double rounded = std::ldexp(std::nearbyint(std::ldexp(magnitude, -quantum_exponent)), quantum_exponent);
  const double result = rounded > f.max_finite ? std::numeric_limits<double>::infinity() : rounded;
  return std::copysign(result, value);
}

std::uint64_t encode_f16(double value) {
  const std::uint64_t sign = std::signbit(value) ? 0x8000u : 0u;
  if (std::isnan(value)) return 0x7e00u;
  const double magnitude = std::fabs(round_narrow(f16_format, value));
  if (std::isinf(magnitude)) return sign | 0x7c00u;
  if (magnitude < f16_format.min_normal) {
    // subnormal: an integer count of 2^-24
    return sign | static_cast<std::uint64_t>(std::ldexp(magnitude, 24));
  }
  const int exponent = std::ilogb(magnitude);
  const auto mantissa = static_cast<std::uint64_t>(std::ldexp(magnitude, 10 - exponent)) - 1024u;
  return sign | (static_cast<std::uint64_t>(exponent + 15) << 10) | mantissa;
}

}  // namespace

const format& format_of(dtype type) {
  switch (type) {
    case dtype::f32: return f32_format;
    case dtype::f16: return f16_format;
    case dtype::bf16: return bf16_format;
    case dtype::f64: return f64_format;
  }
  return f64_format;
}

std::size_t size_of(dtype type) {
  switch (type) {
    case dtype::f32: return 4;
    case dtype::f16: return 2;
    case dtype::bf16: return 2;
    case dtype::f64: return 8;
  }
  return 0;
}

std::string_view name_of(dtype type) {
  switch (type) {
    case dtype::f32: return "fp32";
    case dtype::f16: return "fp16";
    case dtype::bf16: return "bf16";
    case dtype::f64: return "fp64";
  }
  return "?";
}

double decode(dtype type, std::uint64_t bits) {
  switch (type) {
    case dtype::f32: return std::bit_cast<float>(static_cast<std::uint32_t>(bits));
    case dtype::f16: return bits::f16_to_double(static_cast<std::uint16_t>(bits));
    case dtype::bf16: return bits::bf16_to_double(static_cast<std::uint16_t>(bits));
    case dtype::f64: return std::bit_cast<double>(bits);
  }
  return std::numeric_limits<double>::quiet_NaN();
}

std::uint64_t encode(dtype type, double value) {
  switch (type) {
    case dtype::f32: return std::bit_cast<std::uint32_t>(static_cast<float>(value));
    case dtype::f16: return encode_f16(value);
    case dtype::bf16:
      if (std::isnan(value)) return 0x7fc0u;
      // the rounded value is an fp32 whose low 16 bits are zero
      return std::bit_cast<std::uint32_t>(static_cast<float>(round_narrow(bf16_format, value))) >> 16;
    case dtype::f64: return std::bit_cast<std::uint64_t>(value);
  }
  return 0;
}

double round_to(dtype type, double value) {
  switch (type) {
    // a double-to-float conversion rounds to nearest-even, subnormals and overflow included
    case dtype::f32: return static_cast<float>(value);
    case dtype::f16: return round_narrow(f16_format, value);
    case dtype::bf16: return round_narrow(bf16_format, value);
    case dtype::f64: return value;
  }
  return value;
}

double ulp(dtype type, double value) {
  if (!std::isfinite(value)) return std::numeric_limits<double>::quiet_NaN();
  const format& f = format_of(type);
  const int exponent = value == 0 ? f.min_exponent : std::max(std::ilogb(std::fabs(value)), f.min_exponent);
  return std::ldexp(1.0, exponent - f.precision + 1);
}

double load(const void* data, dtype type, std::int64_t index) {
  const auto* bytes = static_cast<const unsigned char*>(data) + index * static_cast<std::int64_t>(size_of(type));
  switch (type) {
    case dtype::f32: {
      float v;
      std::memcpy(&v, bytes, sizeof v);
      return v;
    }
    case dtype::f16:
    case dtype::bf16: {
      std::uint16_t v;
      std::memcpy(&v, bytes, sizeof v);
      return decode(type, v);
    }
    case dtype::f64: {
      double v;
      std::memcpy(&v, bytes, sizeof v);
      return v;
    }
  }
  return std::numeric_limits<double>::quiet_NaN();
}

void store(void* data, dtype type, std::int64_t index, double value) {
  auto* bytes = static_cast<unsigned char*>(data) + index * static_cast<std::int64_t>(size_of(type));
  const std::uint64_t bits = encode(type, value);
  switch (type) {
    case dtype::f32: {
      const auto v = static_cast<std::uint32_t>(bits);
      std::memcpy(bytes, &v, sizeof v);
      return;
    }
    case dtype::f16:
    case dtype::bf16: {
      const auto v = static_cast<std::uint16_t>(bits);
      std::memcpy(bytes, &v, sizeof v);
      return;
    }
    case dtype::f64: std::memcpy(bytes, &bits, sizeof bits); return;
  }
}

}  // namespace nc::oracle
