// Element types of normcheck's operands and exact conversions between their bits and double.
//
// Every fp32, fp16 and bf16 value is a double exactly, so decode() never rounds; round_to()
// rounds a double into a format (to nearest, ties to even, subnormals and overflow to ±Inf
// included) and hands the result back as a double.
#pragma once

#include <cstdint>
#include <string_view>

namespace nc::oracle {

/// the element types of normcheck's operands; f64 exists for the document's double reference
/// and for cross-oracle checks, kernels never see it.
enum class dtype : std::uint8_t { f32, f16, bf16, f64 };

/// the facts of one binary floating-point format
struct format {
  int precision;              ///< significand bits, the hidden bit included (24, 11, 8, 53)
  int min_exponent;           ///< exponent of the smallest normal number (-126, -14, -126, -1022)
  int max_exponent;           ///< exponent of the largest finite number (127, 15, 127, 1023)
  double unit_roundoff;       ///< u = 2^-precision: the relative error of rounding to nearest
  double half_subnormal;      ///< η: half the smallest subnormal, the absolute error of rounding below min_normal
  double min_normal;          ///< 2^min_exponent
  double max_finite;          ///< the largest finite value
  double overflow_threshold;  ///< the smallest magnitude that rounds to infinity (max_finite + half an ulp)
};

/// the format of a dtype
const format& format_of(dtype type);

/// bytes of one element
std::size_t size_of(dtype type);

/// "fp32", "fp16", "bf16", "fp64": the spelling of normcheck/dtype.hpp's dtype_name
std::string_view name_of(dtype type);

/// the value of a bit pattern (low size_of(type) bytes of bits), exactly; NaN patterns give a quiet NaN
double decode(dtype type, std::uint64_t bits);

/// the bit pattern of value rounded to nearest-even into type; NaN gives the format's quiet NaN
std::uint64_t encode(dtype type, double value);

/// value rounded to nearest-even into type (subnormals, ±0 and overflow to ±Inf as IEEE 754 says)
double round_to(dtype type, double value);

/// the spacing of type's numbers at |value|: 2^(max(e, min_exponent) - precision + 1) where
/// 2^e ≤ |value| < 2^(e+1); the smallest subnormal for 0; NaN for NaN and Inf
double ulp(dtype type, double value);

/// element index of typed memory, decoded exactly
double load(const void* data, dtype type, std::int64_t index);

/// writes value rounded into type at element index of typed memory
void store(void* data, dtype type, std::int64_t index, double value);

}  // namespace nc::oracle
