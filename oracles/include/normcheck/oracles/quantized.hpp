// The judge of a quantized output (abi.h "Variants", DESIGN.md "Variants"): the codes and the
// scales a kernel wrote, against the exact forward and the exact quantization (quantize.hpp).
//
// The kernel's pre-quantization value v lies within b of the exact y (the forward oracle's y and
// y_bound for y computed in fp32, or rounded to x's dtype where the kernel declares it does so).
//   scale   static: the caller's s. Dynamic: s = max(A / max, floor), A the amax of the row's (the
//           group's) exact y; a kernel's amax lies within B = max b of A, its quotient carries up
//           to two fp32 roundings (amax / max, or amax * fl(1/max)) and max(., floor) is
//           1-Lipschitz, so |s_kernel - s| <= B / max + (A + B) / max * 2^-22 + 2^-149.
//   code    judged against the scale the kernel used (its own written one, checked above): the
//           kernel quantizes p = fl(v * fl(1/s)) (reciprocal: 1/s within an ulp, the product
//           rounded) or fl(v / s), so |p - y / s| <= b / s + (|y| + b) / s * e + 2^-149 with
//           e = 2^-23 + 2^-24 + 2^-46 (reciprocal) or 2^-24 (divide), plus y / s's own double
//           rounding; p is an fp32 value, so the admissible codes are the exact quantizations
//           of the fp32 values in that interval: one code, or two neighbours where a rounding
//           boundary lies within it (an exact tie of fp32 p admits only its even code).
//           A scale of 0 (a zero row under a floor of 0, or amax / max underflowing), or one whose
//           fp32 reciprocal overflows, gives what v / 0 (v * Inf) gives: +-max by the sign of v,
//           and where v may be 0 the codes of 0/0 (a NaN code, or zero).
// Rows out of the domain (a non-finite input, an overflow) are not judged.
#pragma once

#include <cstdint>
#include <vector>

#include "normcheck/oracles/compare.hpp"
#include "normcheck/oracles/problem.hpp"
#include "normcheck/oracles/quantize.hpp"

namespace nc::oracle {

/// where a quantization's scale comes from (abi.h nc_scale)
enum class scale_source : std::uint8_t { given, per_token, per_group };

struct quantization {
  qformat format = qformat::e4m3;
  scale_source scale = scale_source::given;
  bool divide = false;         ///< v / s; else v * fl(1/s)
  std::int64_t group = 0;      ///< per_group: columns a group
  double floor = 0;            ///< dynamic scales: the least scale (an fp32 value)
  double given_scale = 1;      ///< scale_source::given: the caller's scale (an fp32 value)
};

/// scales a row has: 1 (given, per token) or N / group
std::int64_t scales_a_row(const quantization& q, std::int64_t n);

struct quantized_verdict {
  comparison codes;   ///< oracle: the exact y / s, got: the code's value, bound: |p - y / s|'s bound
  comparison scales;  ///< dynamic scales only (empty for a given one)
};

/// judges an M×N call's codes (row-major) and, for a dynamic scale, the scales the kernel wrote
/// (row-major M × scales_a_row values) against exact: the forward oracle's answer for y in fp32
/// (or in x's dtype: the kernel quantizes y rounded to it)
quantized_verdict judge_quantized(const quantization& q, const forward_result& exact, std::int64_t m, std::int64_t n,
                                  const std::vector<std::uint8_t>& codes, const std::vector<double>& scales);

/// the exact scale of a row's (a group's) exact values y[first, last) and its bound, as the judge
/// uses them
struct scale_bound {
  double scale, bound;
};
scale_bound exact_scale(const quantization& q, const forward_result& exact, std::int64_t first, std::int64_t last);

}  // namespace nc::oracle
