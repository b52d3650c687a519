// The exact quantization oracle of the quantized-output variant: FP8 (OCP E4M3 "fn", E5M2) and
// symmetric INT8 codes, written from the format definitions.
//
// Formats (one byte each; the sign is the top bit of the FP8 formats):
//   fp8e4m3  S.EEEE.MMM, bias 7, subnormals at E = 0, no infinities, NaN only S.1111.111,
//            largest finite ±448 (S.1111.110)
//   fp8e5m2  S.EEEEE.MM, bias 15, subnormals at E = 0, ±Inf at S.11111.00, NaN at S.11111.{01,10,11},
//            largest finite ±57344 (S.11110.11)
//   int8     a two's-complement byte; symmetric quantization produces only -127..127 (0x80, -128,
//            decodes but is never produced)
//
// quantize() is a saturating, round-to-nearest-even conversion (the behaviour of CUDA's
// __NV_SATFINITE fp8 conversions and of saturating float→int8 conversions):
//   - finite values round to nearest, ties to the even code (even mantissa field; even integer
//     for int8); magnitudes past the largest finite value give ±max (whatever their rounding)
//   - ±Inf give ±max in every format (e5m2 included: saturation never produces its Inf codes)
//   - NaN gives 0x7f for fp8e4m3 (its only positive NaN), 0x7e for fp8e5m2 (the quiet NaN
//     S.11111.10, the top byte of fp16's canonical NaN 0x7e00) and 0 for int8 (what CUDA's
//     float→integer conversions give for NaN)
//   - -0.0, and negative values that round to zero, give the negative-zero code 0x80 for the FP8
//     formats; int8 has one zero, 0
//
// The bound rule: a kernel's pre-quantization value lies in [v − b, v + b] around the exact value v;
// quantization is monotone, so the admissible codes are the run from quantize(v − b) to
// quantize(v + b). The endpoints are evaluated exactly (v ± b is never rounded before quantizing).
#pragma once

#include <cstdint>

namespace nc::oracle {

/// the quantized output formats
enum class qformat : std::uint8_t { e4m3, e5m2, int8 };

/// "fp8e4m3", "fp8e5m2", "int8"
const char* name(qformat format);

/// the largest finite value: 448, 57344, 127
double max_finite(qformat format);

/// the value of a code, exactly: NaN for NaN codes, ±Inf for e5m2's infinities, the two's-complement
/// byte for int8 (so 0x80 decodes to -128)
double decode(qformat format, std::uint8_t code);

/// value rounded to nearest-even with saturation (see the file comment for ±Inf, NaN and -0)
std::uint8_t quantize(qformat format, double value);

/// a run of codes in value order: low quantizes the low end of an interval, high the high end;
/// for a NaN value both are the format's NaN code
struct code_range {
  std::uint8_t low, high;
};

/// the codes a correct kernel may produce when the exact pre-quantization value is v and any
/// correct kernel's value lies within b of it: {quantize(v − b), quantize(v + b)} with v ± b exact.
/// b must be ≥ 0 (+Inf allowed); a NaN or negative b throws std::invalid_argument.
code_range admissible(qformat format, double v, double b);

/// whether code is admissible for v and b: its value lies between the values of admissible()'s
/// ends (so the -0 and +0 codes are alike, and NaN and Inf codes never are admitted for finite v);
/// a NaN v admits exactly the NaN codes
bool admits(qformat format, double v, double b, std::uint8_t code);

}  // namespace nc::oracle
