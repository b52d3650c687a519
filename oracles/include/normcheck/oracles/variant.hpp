// The exact oracle of the variants (abi.h "Variants", DESIGN.md "Variants"). Each variant is
// the plain operator on inputs that one correctly rounded operation forms, so its oracle is the
// plain exact oracle on those inputs, exactly:
//   residual add   h = x + residual: the fp32 sum, exactly fl32(x + residual) (one rounding of
//                  the exact sum: a double holds it within half a double ulp and a double
//                  rounding of a sum of two fp32 values into fp32 is innocuous, 53 >= 2*24 + 2);
//                  under the rounded contract h is that sum rounded to x's dtype (innocuous
//                  again), under the fp32 contract the fp32 sum itself. residual_out is h rounded
//                  to x's dtype under both: bit-exact.
//   weight offset  g = fl32(offset + gamma), exactly, for y and for u = dy*g; dgamma has no
//                  offset (sum dy*x*r).
//   backward of a residual add: x is the stored h, and dx = d_residual = the plain dx plus the
//                  residual stream's gradient, summed in fp32 and rounded once: the bound is
//                  the plain dx's fp32 bound, that sum's rounding and the final rounding.
#pragma once

#include <cstdint>
#include <vector>

#include "normcheck/oracles/problem.hpp"

namespace nc::oracle {

/// what the normalized h is (abi.h nc_residual)
enum class residual_rule : std::uint8_t { none, rounded, fp32 };

/// a variant's forward: the plain problem (its x and gamma as the caller gave them) and the
/// variant's own inputs
struct variant_forward_problem {
  forward_problem plain;
  residual_rule residual = residual_rule::none;
  matrix_view residual_in;       ///< M×N in x's dtype (residual != none)
  float weight_offset = 0.0f;  ///< (with plain.flushes_subnormals a subnormal fp32 sum is 0)
};

struct variant_forward_result {
  forward_result plain;             ///< y, r, bounds and rows of the normalized h
  std::vector<double> residual_out; ///< M×N row-major: h rounded to x's dtype, the exact value a kernel must store
};

variant_forward_result exact_variant_forward(const variant_forward_problem& problem);

/// a variant's backward: the plain problem (x is the stored h of a residual add) and the
/// residual stream's gradient (residual != none)
struct variant_backward_problem {
  backward_problem plain;
  bool residual = false;
  matrix_view residual_grad;  ///< M×N in x's dtype
  float weight_offset = 0.0f;
};

backward_result exact_variant_backward(const variant_backward_problem& problem);

}  // namespace nc::oracle
