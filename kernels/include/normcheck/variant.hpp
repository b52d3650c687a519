// The vocabulary of variants (abi.h "Variants"): what every part of normcheck (the loader, the
// contract checker, the harness, the CLI, the reports) says about an nc_operation, written once.
// A variant is a family of operations with one name (`normcheck check --variant NAME`):
//
//   variant             operations                               formula
//   rmsnorm             residual NONE, offset 0                  y = x*r*gamma
//   add_rmsnorm         residual ROUNDED or FP32, offset 0       h = x + res; res_out = h; y = h*r(h)*gamma
//   gemma_rmsnorm       residual NONE, offset 1                  y = x*r*(1 + gamma)
//   add_gemma_rmsnorm   residual ROUNDED or FP32, offset 1       h = x + res; res_out = h; y = h*r(h)*(1 + gamma)
//   offset_rmsnorm      any other offset (with or without add)   y = x*r*(offset + gamma)
//   head_rmsnorm        per-head rows (NC_ROWS_HEADS or           rows = (token, head) pairs of a
//                       NC_ROWS_BATCHES), any of the above       [tokens, heads, N] view, or of a
//                                                                [batches, tokens, heads, N] view
//   rmsnorm_F_S         a quantized output (op.quant != NONE):   q = Q(v / scale), v the fp32 y;
//   add_rmsnorm_F_S     F fp8 (e4m3 or e5m2) or int8, S static,  scale given, or max(amax/max, floor)
//                       per_token or per_group; any offset       a row (a group) and written
//
// Header-only, so a plugin, a fuzz target or a test uses it without linking.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <string>
#include <string_view>

#include "normcheck/abi.h"

namespace nc {

struct variant_info {
  std::string_view name;
  std::string_view formula;
  std::string_view stacks;  ///< where the operator ships
};

inline constexpr variant_info variants[] = {
    {"rmsnorm", "y = x*r*gamma, r = 1/sqrt(mean(x^2) + eps)", "the textbook operator"},
    {"add_rmsnorm",
     "h = x + residual (fp32 sum; rounded to x's dtype under the rounded contract); residual_out = h rounded; "
     "y = h*r(h)*gamma; backward dx = d_residual = dx(h) + residual_grad",
     "vLLM fused_add_rms_norm (rounded), FlashInfer fused_add_rmsnorm (fp32), SGLang, TensorRT-LLM, Liger"},
    {"gemma_rmsnorm", "y = x*r*(1 + gamma), 1 + gamma formed in fp32; dgamma = sum dy*x*r",
     "FlashInfer gemma_rmsnorm, Liger offset mode, Gemma 2/3"},
    {"add_gemma_rmsnorm", "the residual add of add_rmsnorm, then gemma_rmsnorm of h",
     "FlashInfer gemma_fused_add_rmsnorm"},
    {"offset_rmsnorm", "y = x*r*(offset + gamma) for a declared offset other than 0 and 1", "declared offsets"},
    {"head_rmsnorm",
     "per-head rows: row i = head i % H of token i / H of a [tokens, H, N] view with its own token and head "
     "strides; gamma of N = head_dim; any residual add or offset above on those rows",
     "QK-norm of Qwen3, Gemma 3 (with offset 1), OLMo 2; vLLM and SGLang per-head q/k norms"},
    {"rmsnorm_fp8_static", "q = Q(y / scale) into fp8 (e4m3 or e5m2), one static scale given",
     "vLLM rms_norm_static_fp8_quant, FlashInfer rmsnorm_fp8, TensorRT-LLM"},
    {"rmsnorm_fp8_per_token", "q = Q(y / s[i]) into fp8, s[i] = max(amax_j |y[i,j]| / max, floor) written",
     "vLLM rms_norm_dynamic_per_token_quant (fp8)"},
    {"rmsnorm_fp8_per_group", "q = Q(y / s[i,g]) into fp8, a written scale a group of 64 or 128 columns",
     "vLLM per-token-group fp8 (DeepSeek-V3's 1x128 blocks)"},
    {"rmsnorm_int8_static", "q = Q(y / scale) into int8 (-127..127), one static scale given",
     "vLLM rms_norm with static int8 quantization (SmoothQuant)"},
    {"rmsnorm_int8_per_token", "q = Q(y / s[i]) into int8, s[i] = max(amax_j |y[i,j]| / 127, floor) written",
     "vLLM rms_norm_dynamic_per_token_quant (int8)"},
    {"rmsnorm_int8_per_group", "q = Q(y / s[i,g]) into int8, a written scale a group", "group-wise int8"},
    {"add_rmsnorm_fp8_static", "the residual add of add_rmsnorm, then rmsnorm_fp8_static of h",
     "vLLM fused_add_rms_norm_static_fp8_quant"},
    {"add_rmsnorm_fp8_per_token", "the residual add, then rmsnorm_fp8_per_token of h",
     "vLLM rms_norm_dynamic_per_token_quant with a residual"},
    {"add_rmsnorm_fp8_per_group", "the residual add, then rmsnorm_fp8_per_group of h", "fused add + group fp8"},
    {"add_rmsnorm_int8_static", "the residual add, then rmsnorm_int8_static of h", "vLLM fused add + static int8"},
    {"add_rmsnorm_int8_per_token", "the residual add, then rmsnorm_int8_per_token of h",
     "vLLM rms_norm_dynamic_per_token_quant (int8) with a residual"},
    {"add_rmsnorm_int8_per_group", "the residual add, then rmsnorm_int8_per_group of h", "fused add + group int8"},
};

inline bool valid_residual(nc_residual r) {
  return r == NC_RESIDUAL_NONE || r == NC_RESIDUAL_ROUNDED || r == NC_RESIDUAL_FP32;
}

inline bool valid_rows(nc_rows r) { return r == NC_ROWS_MATRIX || r == NC_ROWS_HEADS || r == NC_ROWS_BATCHES; }

inline bool valid_quant(nc_quant q) {
  return q == NC_QUANT_NONE || q == NC_QUANT_FP8_E4M3 || q == NC_QUANT_FP8_E5M2 || q == NC_QUANT_INT8;
}
inline bool valid_scale(nc_scale s) { return s == NC_SCALE_STATIC || s == NC_SCALE_PER_TOKEN || s == NC_SCALE_PER_GROUP; }
inline bool valid_apply(nc_scale_apply a) { return a == NC_APPLY_RECIPROCAL || a == NC_APPLY_DIVIDE; }

/// whether an operation's output is quantized (abi.h "Variants": y holds codes, scale an operand)
inline bool quantizes(const nc_operation& op) { return op.quant != NC_QUANT_NONE; }
/// whether its scale is written by the kernel (per token or per group) rather than given
inline bool dynamic_scale(const nc_operation& op) { return quantizes(op) && op.scale != NC_SCALE_STATIC; }
/// the scale operand's rows and columns for an M x N call (1 x 1 static; M x 1; M x N/group)
inline std::int64_t scale_rows(const nc_operation& op, std::int64_t m) { return op.scale == NC_SCALE_STATIC ? 1 : m; }
inline std::int64_t scale_cols(const nc_operation& op, std::int64_t n) {
  return op.scale == NC_SCALE_PER_GROUP && op.group >= 1 ? n / op.group : 1;
}
/// "e4m3", "e5m2", "int8"; the scale "static", "per_token", "per_group"; "reciprocal", "divide"
inline const char* quant_name(nc_quant q) {
  return q == NC_QUANT_FP8_E4M3 ? "e4m3" : q == NC_QUANT_FP8_E5M2 ? "e5m2" : q == NC_QUANT_INT8 ? "int8" : q == NC_QUANT_NONE ? "none" : "invalid";
}
inline const char* scale_name(nc_scale s) {
  return s == NC_SCALE_STATIC ? "static" : s == NC_SCALE_PER_TOKEN ? "per_token" : s == NC_SCALE_PER_GROUP ? "per_group" : "invalid";
}
inline const char* apply_name(nc_scale_apply a) {
  return a == NC_APPLY_RECIPROCAL ? "reciprocal" : a == NC_APPLY_DIVIDE ? "divide" : "invalid";
}

/// the variant an operation belongs to
inline std::string_view variant_of(const nc_operation& op) {
  if (quantizes(op)) {
    // the table's quantized names, in order: fp8 static, per_token, per_group, then int8; add_ after
    const int format = op.quant == NC_QUANT_INT8 ? 1 : 0;
    const int scale = op.scale == NC_SCALE_PER_GROUP ? 2 : op.scale == NC_SCALE_PER_TOKEN ? 1 : 0;
    return variants[6 + (op.residual != NC_RESIDUAL_NONE ? 6 : 0) + format * 3 + scale].name;
  }
  if (op.rows == NC_ROWS_HEADS || op.rows == NC_ROWS_BATCHES) return "head_rmsnorm";
  const bool add = op.residual != NC_RESIDUAL_NONE;
  if (op.weight_offset == 0.0f) return add ? "add_rmsnorm" : "rmsnorm";
  if (op.weight_offset == 1.0f) return add ? "add_gemma_rmsnorm" : "gemma_rmsnorm";
  return "offset_rmsnorm";
}

inline bool is_variant_name(std::string_view name) {
  for (const variant_info& v : variants)
    if (v.name == name) return true;
  return false;
}

/// the quantization fields are read only when quant != NONE, and group only per group
inline bool same_operation(const nc_operation& a, const nc_operation& b) {
  const bool same_quant =
      a.quant == b.quant && (!quantizes(a) || (a.scale == b.scale && a.apply == b.apply &&
                                               (a.scale != NC_SCALE_PER_GROUP || a.group == b.group) &&
                                               (a.scale == NC_SCALE_STATIC || a.scale_floor == b.scale_floor)));
  return a.residual == b.residual && a.in_place == b.in_place && a.rows == b.rows && same_quant &&
         (a.weight_offset == b.weight_offset || (std::isnan(a.weight_offset) && std::isnan(b.weight_offset)));
}

/// "rmsnorm", "add_rmsnorm (rounded sum, in place)", "gemma_rmsnorm", "offset_rmsnorm (offset 0.5)"
inline std::string describe_operation(const nc_operation& op) {
  std::string out(variant_of(op));
  std::string detail;
  if (op.residual == NC_RESIDUAL_ROUNDED) detail = "rounded sum";
  else if (op.residual == NC_RESIDUAL_FP32) detail = "fp32 sum";
  else if (op.residual != NC_RESIDUAL_NONE) detail = "residual code " + std::to_string(int(op.residual));
  if (op.in_place) detail += std::string(detail.empty() ? "" : ", ") + "in place";
  if (op.rows == NC_ROWS_BATCHES) detail += std::string(detail.empty() ? "" : ", ") + "4-D";
  else if (!valid_rows(op.rows)) detail += std::string(detail.empty() ? "" : ", ") + "rows code " + std::to_string(int(op.rows));
  if (quantizes(op)) {
    char text[96];
    std::snprintf(text, sizeof text, "%s, %s", quant_name(op.quant), apply_name(op.apply));
    detail += std::string(detail.empty() ? "" : ", ") + text;
    if (op.scale == NC_SCALE_PER_GROUP) detail += ", group " + std::to_string(op.group);
    if (dynamic_scale(op)) {
      std::snprintf(text, sizeof text, ", floor %g", double(op.scale_floor));
      detail += text;
    }
  }
  if (op.weight_offset != 0.0f && (quantizes(op) || variant_of(op) == "head_rmsnorm" || variant_of(op) == "offset_rmsnorm")) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", double(op.weight_offset));
    detail += std::string(detail.empty() ? "" : ", ") + "offset " + text;
  }
  return detail.empty() ? out : out + " (" + detail + ")";
}

/// the word a case file and a report give the residual mode, and back
inline const char* residual_name(nc_residual r) {
  return r == NC_RESIDUAL_NONE ? "none" : r == NC_RESIDUAL_ROUNDED ? "rounded" : r == NC_RESIDUAL_FP32 ? "fp32" : "invalid";
}

}  // namespace nc

/// two operations are the same operation (a NaN offset never is a valid one)
inline bool operator==(const nc_operation& a, const nc_operation& b) { return nc::same_operation(a, b); }
