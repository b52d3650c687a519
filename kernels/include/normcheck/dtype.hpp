// The host vocabulary of abi.h's element types: what every host front end (the kernels'
// contract checker, the harness, the fuzzers, the tests, the benchmark) says about an nc_dtype,
// written once. Header-only, so a plugin, a fuzz target or a test uses it without linking.
//
//   dtype        bytes  name       16-byte vector  poison (an output element before a call)
//   NC_F32       4      "fp32"     4 elements      0x7fa5a5a5  a signalling NaN
//   NC_F16       2      "fp16"     8 elements      0x7d5a      a signalling NaN
//   NC_BF16      2      "bf16"     8 elements      0x7f85      a signalling NaN
//   NC_FP8_E4M3  1      "fp8e4m3"  16 elements     0xff        -NaN (see poison_nan)
//   NC_FP8_E5M2  1      "fp8e5m2"  16 elements     0xfd        a signalling -NaN
//   NC_INT8      1      "int8"     16 elements     0x80        -128, never a symmetric code
//
// The first three are the contract's element dtypes (valid_dtype); the last three are the codes
// of a quantized output (code_dtype), y's dtype only. Any other value of nc_dtype (the enum spans
// 32 bits) is invalid: size_of gives 0, dtype_name "unknown", and the contract rejects it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "normcheck/abi.h"

namespace nc {

/// the dtypes of the contract, in enum order
inline constexpr nc_dtype all_dtypes[] = {NC_F32, NC_F16, NC_BF16};

/// whether a value of nc_dtype is one of the contract's element dtypes
constexpr bool valid_dtype(nc_dtype type) { return type == NC_F32 || type == NC_F16 || type == NC_BF16; }
/// whether it is the dtype of a quantized output's codes
constexpr bool code_dtype(nc_dtype type) { return type == NC_FP8_E4M3 || type == NC_FP8_E5M2 || type == NC_INT8; }

/// the codes' dtype of a quantization (abi.h nc_quant); the element dtype itself for NC_QUANT_NONE
constexpr nc_dtype code_dtype_of(nc_quant quant, nc_dtype x) {
  switch (quant) {
    case NC_QUANT_FP8_E4M3: return NC_FP8_E4M3;
    case NC_QUANT_FP8_E5M2: return NC_FP8_E5M2;
    case NC_QUANT_INT8: return NC_INT8;
    default: return x;
  }
}

/// bytes of one element; 0 for an invalid dtype
constexpr std::size_t size_of(nc_dtype type) {
  switch (type) {
    case NC_F32: return 4;
    case NC_F16:
    case NC_BF16: return 2;
    case NC_FP8_E4M3:
    case NC_FP8_E5M2:
    case NC_INT8: return 1;
    default: return 0;
  }
}

/// "fp32", "fp16", "bf16", "fp8e4m3", "fp8e5m2", "int8"; "unknown" for an invalid dtype
constexpr const char* dtype_name(nc_dtype type) {
  switch (type) {
    case NC_F32: return "fp32";
    case NC_F16: return "fp16";
    case NC_BF16: return "bf16";
    case NC_FP8_E4M3: return "fp8e4m3";
    case NC_FP8_E5M2: return "fp8e5m2";
    case NC_INT8: return "int8";
    default: return "unknown";
  }
}

/// the dtype dtype_name spells name; nothing for any other text
constexpr std::optional<nc_dtype> parse_dtype(std::string_view name) {
  for (nc_dtype type : all_dtypes)
    if (name == dtype_name(type)) return type;
  return std::nullopt;
}

/// elements of a dtype in one 16-byte vector (the kernels' vectorized path; their vector_width<T>
/// for the element type); 0 for an invalid dtype
constexpr std::int64_t vector_width_of(nc_dtype type) {
  return size_of(type) == 0 ? 0 : 16 / std::int64_t(size_of(type));
}

/// a signalling NaN (the quiet bit, the top mantissa bit, clear; the payload nonzero): an
/// output element before a call. IEEE arithmetic never returns a signalling NaN and the kernels'
/// fp16/bf16 stores quiet every NaN, so an element still holding it was never written. Codes:
/// int8's -128 and e5m2's signalling NaN are never written either; e4m3 has one NaN a sign, so
/// its poison is the negative one, a code a kernel may write for a negative NaN (the harness
/// calls again on a positive-NaN fill before it says such an element was never written)
constexpr std::uint32_t poison_nan(nc_dtype type) {
  switch (type) {
    case NC_F16: return 0x7d5au;
    case NC_BF16: return 0x7f85u;
    case NC_FP8_E4M3: return 0xffu;
    case NC_FP8_E5M2: return 0xfdu;
    case NC_INT8: return 0x80u;
    default: return 0x7fa5a5a5u;
  }
}

}  // namespace nc
