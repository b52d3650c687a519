// The exact oracle on a case: one place that turns a norm_case (its operation, dtypes and
// values) and the kernel's declared semantics into the oracle's problems (oracles/exact.hpp,
// oracles/variant.hpp), for every property that judges a kernel's outputs.
#pragma once

#include <cstdint>
#include <vector>

#include "normcheck/harness/case.hpp"
#include "normcheck/kernel.hpp"
#include "normcheck/oracles/exact.hpp"
#include "normcheck/oracles/quantized.hpp"
#include "normcheck/oracles/variant.hpp"

namespace nc::harness {

/// the case's inputs as the kernel reads them: a flush-to-zero kernel (NC_FLUSHES_SUBNORMALS)
/// reads an fp32 subnormal (a bf16 or fp32 one) as a zero of its sign; any other, as they are.
/// What a property computes from the inputs itself starts from these
norm_case as_read(const norm_case& c, const capabilities& caps);

/// the exact forward of the case's operation: y, r and their bounds for the normalized h (x
/// itself for the plain operator), and residual_out for a residual add. The kernel's declared
/// forward semantics (NC_ROUNDS_NORMALIZED) widen the y bound; a kernel that declares nothing
/// is held to the strict one. Of a quantized output, y is the value the kernel quantizes: in
/// fp32 (in x's dtype where it declares NC_QUANTIZES_ROUNDED_Y)
oracle::variant_forward_result exact_variant_forward_of(const norm_case& c, const capabilities& caps);
oracle::forward_result exact_forward_of(const norm_case& c, const capabilities& caps);

/// a quantized output's codes (y, one byte each) and dynamic scales (fp32 bits, scale_rows ×
/// scale_cols) against the exact forward of the value the kernel quantizes (y in fp32, or in
/// x's dtype for NC_QUANTIZES_ROUNDED_Y) and the exact quantization (oracles/quantized.hpp)
oracle::quantized_verdict judge_quantized_of(const norm_case& c, const capabilities& caps,
                                             const std::vector<std::uint32_t>& codes,
                                             const std::vector<std::uint32_t>& scales);
/// the oracle's description of an operation's quantization (a static scale's value given as
/// fp32 bits), and of a case's
oracle::quantization quantization_of(const nc_operation& op, std::uint32_t static_scale);
oracle::quantization quantization_of(const norm_case& c);

/// the exact backward for an upstream gradient dy: of a residual add at the h its forward
/// stored, with the residual stream's gradient added to dx; NC_ROUNDS_GRADIENTS widens the bounds
oracle::backward_result exact_backward_of(const norm_case& c, const std::vector<std::uint32_t>& dy_bits,
                                          const capabilities& caps);

}  // namespace nc::harness
