// A case: everything one forward + backward call pair depends on — shape, dtypes, the layout
// of every operand, the values of x, gamma and dy (as bit patterns), and ε. Properties draw
// cases from the generators (generators.hpp), case files (case_file.hpp) store them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "normcheck/abi.h"
#include "normcheck/dtype.hpp"
#include "normcheck/oracles/dtype.hpp"
#include "normcheck/variant.hpp"

namespace nc::harness {

/// where an M×N operand's elements live: (i, j) is element offset + i·row_stride + j·col_stride
/// of its buffer, as in the kernel ABI (counts of elements, not bytes); in a per-head view of
/// H heads (abi.h NC_ROWS_HEADS) row i starts at offset + (i/H)·row_stride + (i%H)·head_stride,
/// in a 4-D view of T tokens a batch at offset + b·batch_stride + t·row_stride + (i%H)·head_stride
/// (i/H = b·T + t)
struct matrix_layout {
  std::int64_t offset = 0;
  std::int64_t row_stride = 0;
  std::int64_t col_stride = 1;
  std::int64_t head_stride = 0;   ///< a per-head view's; 0 otherwise
  std::int64_t batch_stride = 0;  ///< a 4-D view's; 0 otherwise
  bool operator==(const matrix_layout&) const = default;
};

/// the rows of a call (abi.h NC_ROWS_HEADS): heads a token, tokens a batch (0: one batch); 2-D
/// rows are {1, 0}
struct row_shape {
  std::int64_t heads = 1, tokens = 0;
  bool operator==(const row_shape&) const = default;
};
/// the first element of row i (before the offset)
inline std::int64_t row_start(std::int64_t i, row_shape rows, const matrix_layout& l) {
  if (rows.heads == 1 && rows.tokens == 0) return i * l.row_stride;
  const std::int64_t token = i / rows.heads, head = i % rows.heads;
  const std::int64_t start = rows.tokens > 0 ? (token / rows.tokens) * l.batch_stride + (token % rows.tokens) * l.row_stride
                                             : token * l.row_stride;
  return start + (rows.heads > 1 ? head * l.head_stride : 0);
}

/// where a vector's entries live: entry k is element offset + k·stride
struct vector_layout {
  std::int64_t offset = 0;
  std::int64_t stride = 1;
  bool operator==(const vector_layout&) const = default;
};

/// the layout of every operand of a call pair (the residual operands: of a residual add only;
/// residual_out is residual's own layout when the operation is in place; scale: of a quantized
/// output only, a matrix of scale_rows × scale_cols (normcheck/variant.hpp))
struct operand_layouts {
  matrix_layout x, y, dy, dx;
  vector_layout gamma, r, dgamma;
  matrix_layout residual, residual_out, residual_grad;
  matrix_layout scale{0, 1, 1};
  bool operator==(const operand_layouts&) const = default;
};

/// dense, unit-stride, zero-offset layouts for an M×N call
operand_layouts contiguous_layouts(std::int64_t n);

/// elements a buffer needs to hold an operand (0 for an empty one)
std::int64_t extent(const matrix_layout& layout, std::int64_t m, std::int64_t n, row_shape rows = {});
std::int64_t extent(const vector_layout& layout, std::int64_t count);

/// whether an operation adds a residual (and so has the residual operands)
inline bool adds_residual(const nc_operation& op) { return op.residual != NC_RESIDUAL_NONE; }
/// a dense scale operand: 1 × 1, M × 1 or M × N/group row-major
inline matrix_layout dense_scale_layout(const nc_operation& op, std::int64_t n) { return {0, scale_cols(op, n), 1}; }

struct norm_case {
  std::int64_t m = 0;
  std::int64_t n = 1;
  nc_dtype x_dtype = NC_F32;      ///< x, y, dy, dx
  nc_dtype gamma_dtype = NC_F32;  ///< gamma, dgamma
  float epsilon = 1e-6f;
  /// the operation (abi.h "Variants"); all zero: the plain operator
  nc_operation op{};
  /// rows a token of a per-head view (op.rows NC_ROWS_HEADS or NC_ROWS_BATCHES; else 1):
  /// M = tokens × heads
  std::int64_t heads = 1;
  /// tokens a batch of a 4-D view (op.rows == NC_ROWS_BATCHES; else 0): M = batches × tokens × heads
  std::int64_t tokens = 0;
  operand_layouts layout;
  /// bit patterns (the low 16 bits for fp16/bf16): x and dy row-major M×N, gamma N entries
  std::vector<std::uint32_t> x, gamma, dy;
  /// a residual add's operands (else empty), M×N in x's dtype: the residual added to x in the
  /// forward, and the gradient reaching residual_out along the residual stream in the backward
  std::vector<std::uint32_t> residual, residual_grad;
  /// a second upstream gradient, for properties that compare two backward calls (else empty)
  std::vector<std::uint32_t> dy2;
  /// a quantized output's static scale, as fp32 bits (abi.h NC_SCALE_STATIC: positive, normal)
  std::uint32_t scale = 0x3f800000u;
  /// a property's own parameters (a row index, a permutation, a scaling exponent, ...)
  std::map<std::string, std::string> parameters;

  bool operator==(const norm_case&) const = default;
};

/// y's dtype: x's, or the codes' of a quantized output
inline nc_dtype y_dtype(const norm_case& c) { return code_dtype_of(c.op.quant, c.x_dtype); }

/// the heads of a case's rows: its heads for a per-head operation, else 1
inline std::int64_t heads_of(const norm_case& c) { return c.op.rows != NC_ROWS_MATRIX ? c.heads : 1; }
/// the shape of a case's rows: heads, and the tokens a batch of a 4-D view; 2-D rows {1, 0}
inline row_shape rows_of(const norm_case& c) {
  return {heads_of(c), c.op.rows == NC_ROWS_BATCHES ? c.tokens : 0};
}
/// the tokens the row stride steps over: a batch's in a 4-D view, else every token (M / heads)
inline std::int64_t tokens_of(const norm_case& c) { return rows_of(c).tokens > 0 ? c.tokens : c.m / heads_of(c); }
/// a per-head operation's rows laid out as 2-D rows: a head a token, and all the tokens in one
/// batch of a 4-D view, its batch stride the dense one (the properties that sweep operations
/// without drawing views)
inline void one_row_a_token(norm_case& c) {
  c.heads = 1, c.tokens = c.op.rows == NC_ROWS_BATCHES ? (c.m > 0 ? c.m : 1) : 0;
  for (matrix_layout* l : {&c.layout.x, &c.layout.y, &c.layout.dy, &c.layout.dx, &c.layout.residual,
                           &c.layout.residual_out, &c.layout.residual_grad})
    l->batch_stride = c.tokens * l->row_stride;
}
/// the batches of a 4-D view, else 1
inline std::int64_t batches_of(const norm_case& c) { return c.m > 0 ? c.m / heads_of(c) / tokens_of(c) : 1; }

// the dtype vocabulary (normcheck/dtype.hpp: size, name, parse, validity, vector_width_of) is nc's;
// these declarations keep harness::size_of and harness::dtype_name naming it
using nc::dtype_name;
using nc::size_of;

/// the oracle's name for a kernel dtype
oracle::dtype oracle_type(nc_dtype type);

/// the value of a bit pattern of a dtype, exactly
double value_of(nc_dtype type, std::uint32_t bits);
/// a value rounded to nearest-even into a dtype, as bits
std::uint32_t bits_of(nc_dtype type, double value);

// ---- which declared capabilities (abi.h NC_LAYOUT_*, NC_PAIR_*) a case needs ----

/// the NC_LAYOUT_* bits an operand's layout needs: dense (offset 0, row stride N, unit column
/// stride; a per-head view: head stride N, token stride heads·N, batch stride tokens·heads·N; a
/// vector: offset 0, stride 1) needs none
std::uint32_t layout_bits(const matrix_layout& l, std::int64_t n, nc_dtype type, row_shape rows = {});
std::uint32_t layout_bits(const vector_layout& l, nc_dtype type);
/// the bits every operand of the case needs (r only when with_r)
std::uint32_t layout_bits(const norm_case& c, bool with_r = true);

// ---- the classes a case falls in, for the distribution tables ----

/// "fp32", "fp16", "bf16", "fp16+fp32 gamma", "bf16+fp32 gamma"
std::string dtype_class(const norm_case& c);
/// "aligned" (every operand fit for the 16-byte path), "ragged n" (n not a multiple of the
/// vector width), "misaligned" (an offset or a row stride off 16 bytes), "column strided"
/// (a col stride > 1), "column major" (a matrix stored by columns)
std::string alignment_class(const norm_case& c);
/// "empty" (M = 0), "tall" (M ≥ 4096), "tiny" (≤ 64 elements), "small" (≤ 4096), "large"
std::string size_class(const norm_case& c);

/// a one-line summary: shape, dtypes, ε, layouts that are not contiguous
std::string describe(const norm_case& c);

}  // namespace nc::harness
