// fp16 and bf16 bit patterns to double, inline for the oracles' row loops.
#pragma once

#include <cstdint>
#include <cstring>

namespace nc::oracle::bits {

/// an fp16 pattern as a double, exactly (zero, subnormals, normals, ±Inf, NaN)
inline double f16_to_double(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu;
  const std::uint32_t mantissa = h & 0x3ffu;
  float f;
  if (exponent == 0) {
    f = static_cast<float>(mantissa) * 0x1p-24f;  // zero or subnormal: an exact product
    return sign ? -static_cast<double>(f) : static_cast<double>(f);
  }
  // normal, Inf and NaN: re-bias the exponent into fp32's
  const std::uint32_t bits = exponent == 31 ? (sign | 0x7f800000u | (mantissa << 13))
                                            : (sign | ((exponent + 112u) << 23) | (mantissa << 13));
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// a bf16 pattern as a double: the top half of an fp32
inline double bf16_to_double(std::uint16_t h) {
  const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace nc::oracle::bits
