// What an oracle is asked (views over the caller's memory, shapes, ε) and what it answers
// (values, per-element error bounds, per-row domain status).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "normcheck/oracles/dtype.hpp"

namespace nc::oracle {

/// an M×N matrix in caller memory: element (i, j) is element offset + i·row_stride + j·col_stride
/// of typed memory at data (offsets and strides count elements, as in the kernel ABI)
struct matrix_view {
  const void* data = nullptr;
  dtype type = dtype::f32;
  std::int64_t offset = 0;
  std::int64_t row_stride = 0;
  std::int64_t col_stride = 1;

  /// element (i, j), decoded exactly
  double at(std::int64_t i, std::int64_t j) const { return load(data, type, offset + i * row_stride + j * col_stride); }
};

/// a vector in caller memory: entry k is element offset + k·stride of typed memory at data
struct vector_view {
  const void* data = nullptr;
  dtype type = dtype::f32;
  std::int64_t offset = 0;
  std::int64_t stride = 1;

  /// entry k, decoded exactly
  double at(std::int64_t k) const { return load(data, type, offset + k * stride); }
};

/// why a row (or a dgamma column) is outside the differential domain, where no bound exists
enum class domain_reason : std::uint8_t {
  none,                      ///< in the domain: values and bounds are valid
  non_finite_input,          ///< a NaN or ±Inf among the row's inputs (x, dy, or gamma anywhere)
  zero_row_without_epsilon,  ///< Σx² = 0 and ε = 0: r is +Inf and y = 0·Inf
  intermediate_overflow,     ///< some fp32 intermediate of a correct kernel could exceed FLT_MAX
  output_overflow,           ///< the result could round to ±Inf in the output dtype
  intermediate_underflow,    ///< fp32 underflow alone could move a result by more than 2^-10 of the row's scale
  accumulation_too_long,     ///< γ_N (or γ_M for dgamma) of fp32 is so large the bound says nothing
  row_out_of_domain,         ///< (dgamma columns) a row contributing to the column is out of the domain
};

/// a short sentence naming the reason
std::string_view describe(domain_reason reason);

/// An fp32 intermediate that overflows in some standard evaluation order of dx although the row
/// is in the domain: the shipped kernels' order and PyTorch's stay finite there, and the bound
/// holds for them. A kernel in an order that forms the intermediate gives Inf or NaN: a defect
/// of that order, which a failing comparison names (describe(hazard, r)) instead of calling it
/// a bare bound failure.
enum class order_hazard : std::uint8_t {
  none,
  r_squared_overflow,        ///< r²/N > FLT_MAX, and r³ (Liger's order forms (−1/N·r)·r; abi's and the reference's r³)
  r_cubed_overflow,          ///< r³ > FLT_MAX (abi.h's formula read left to right; the document's reference)
  x_r_cubed_overflow,        ///< x·r³ > FLT_MAX for an x of the row (the same orders)
  x_r_cubed_s_overflow,      ///< (x·r³)·s > FLT_MAX (abi.h's formula read left to right: s/N comes last)
};

/// a sentence naming the hazard, the row's r and what an order must do instead
std::string describe(order_hazard hazard, double r);

/// the domain status of one row of y/r/dx (or one column of dgamma)
struct row_status {
  domain_reason reason = domain_reason::none;
  order_hazard hazard = order_hazard::none;  ///< (dx rows in the domain) an order that overflows here
  double r = 0;                              ///< the row's exact r, for the hazard's sentence

  bool in_domain() const { return reason == domain_reason::none; }
};

/// y = x·r·gamma, r = 1/sqrt(mean(x²) + ε) for an M×N x
struct forward_problem {
  std::int64_t m = 0;
  std::int64_t n = 0;
  float epsilon = 1e-6f;   ///< the fp32 value the kernel is given; finite, ≥ 0
  matrix_view x;
  vector_view gamma;       ///< N entries
  dtype y_type = dtype::f32;
  /// the kernel declares NC_ROUNDS_NORMALIZED: x̂ = x·r is rounded to y's dtype before the γ
  /// multiply (ATen's composite rms_norm, some Triton casting modes). The y bound then carries
  /// that one more rounding; without the declaration a kernel is held to the strict bound
  bool rounds_normalized = false;
  /// the kernel flushes fp32 subnormals to zero (NC_FLUSHES_SUBNORMALS): each operation's
  /// underflow error is 2^-126 instead of 2^-150. Its inputs are the caller's to flush
  bool flushes_subnormals = false;
};

/// The oracle's answer to a forward_problem.
///
/// Values are the exact results rounded to double with round-to-odd. Double is far finer than
/// any kernel format (53 bits against at most 24), and rounding to odd at p + 2 or more bits
/// makes a later round_to(dtype, value) the correctly rounded result of the exact value, with
/// no double-rounding error. Bounds include that final rounding to double (one double ulp).
/// Where the exact result is itself a double or cancels to exactly 0, the value may carry the
/// residue of the 50-digit computation (one double ulp, or about 10^-50 of the terms), far below
/// any bound. The sign of an exact zero is not specified: the comparator treats ±0 alike.
/// Out-of-domain rows carry NaN bounds; their values are what IEEE arithmetic gives when an
/// input is not finite (NaN where the math has no value), the exact values otherwise.
struct forward_result {
  std::vector<double> y;        ///< row-major M×N
  std::vector<double> y_bound;  ///< |kernel y − y| ≤ y_bound for any correct fp32-accumulating kernel
  std::vector<double> r;        ///< M entries: 1/sqrt(mean(x²) + ε)
  std::vector<double> r_bound;  ///< |kernel r − r| ≤ r_bound (r is stored fp32 by the kernel)
  std::vector<row_status> rows; ///< M entries
};

/// dx and dgamma of RMSNorm for an upstream gradient dy
struct backward_problem {
  std::int64_t m = 0;
  std::int64_t n = 0;
  matrix_view x;
  vector_view gamma;  ///< N entries
  matrix_view dy;
  float epsilon = 1e-6f;  ///< the forward's ε; the kernel gets r as that forward wrote it
  dtype dx_type = dtype::f32;
  dtype dgamma_type = dtype::f32;
  /// the kernel declares NC_ROUNDS_GRADIENTS: u = dy·γ and each dgamma term dy·x̂ are rounded to
  /// x's dtype (autograd through 16-bit tensors); the dx and dgamma bounds then carry it
  bool rounds_gradients = false;
  /// as forward_problem::flushes_subnormals
  bool flushes_subnormals = false;
};

/// The oracle's answer to a backward_problem, with the conventions of forward_result.
/// dgamma_j = Σ_i dy_ij·x_ij·r_i over all M rows (0 when M = 0, with a zero bound). A column is
/// out of the domain when one of its terms is not finite or comes from a row whose r has no
/// bound; a NaN in one row's dy leaves the other columns in the domain.
struct backward_result {
  std::vector<double> dx;            ///< row-major M×N
  std::vector<double> dx_bound;
  std::vector<double> dgamma;        ///< N entries
  std::vector<double> dgamma_bound;
  std::vector<row_status> rows;      ///< M entries: the status of each row's dx and of its dgamma contributions
  std::vector<row_status> columns;   ///< N entries: the status of each dgamma entry
};

}  // namespace nc::oracle
