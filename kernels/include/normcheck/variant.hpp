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
};

inline bool valid_residual(nc_residual r) {
  return r == NC_RESIDUAL_NONE || r == NC_RESIDUAL_ROUNDED || r == NC_RESIDUAL_FP32;
}

inline bool valid_rows(nc_rows r) { return r == NC_ROWS_MATRIX || r == NC_ROWS_HEADS || r == NC_ROWS_BATCHES; }

/// the variant an operation belongs to
inline std::string_view variant_of(const nc_operation& op) {
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

inline bool same_operation(const nc_operation& a, const nc_operation& b) {
  return a.residual == b.residual && a.in_place == b.in_place && a.rows == b.rows &&
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
  if (op.weight_offset != 0.0f && (variant_of(op) == "head_rmsnorm" || variant_of(op) == "offset_rmsnorm")) {
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
