// Kernel parameters: pointers already advanced by their element offsets, strides in
// elements, 64-bit throughout (a row offset can pass 2^31 elements).
#pragma once

#include <cstdint>

namespace nc {

// the rows of a call (abi.h NC_ROWS_HEADS): heads per token (1: one row a token) and tokens per
// batch (0: one batch); 2-D rows are {1, 0}
struct row_shape {
  std::int64_t heads, tokens;
};
// an operand's strides between tokens, heads and batches
struct row_step {
  std::int64_t token, head, batch;
};
// the first element of row i: 2-D rows at i*token; a per-head view's row i is head i % heads of
// token i / heads, of a 4-D view token t of batch b (i / heads = b*tokens + t)
__host__ __device__ __forceinline__ std::int64_t row_at(std::int64_t i, row_shape r, row_step s) {
  if (r.heads == 1 && r.tokens == 0) return i * s.token;
  const std::int64_t token = i / r.heads;
  const std::int64_t start = r.tokens == 0 ? token * s.token : (token / r.tokens) * s.batch + (token % r.tokens) * s.token;
  return start + (i % r.heads) * s.head;
}

template <class T, class G>
struct forward_params {
  std::int64_t m, n;
  row_shape rows;  // {1, 0}: 2-D rows
  float epsilon;
  const T* x; row_step x_row; std::int64_t x_col;
  const G* gamma; std::int64_t gamma_stride;
  T* y; row_step y_row; std::int64_t y_col;
  float* r; std::int64_t r_stride;
  // the operation (abi.h "Variants"): gamma + offset formed in fp32 (0: plain); with a
  // residual add (the kernels' ADD) h = x + res is normalized and written to res_out
  float offset;
  const T* res; row_step res_row; std::int64_t res_col;
  T* res_out; row_step res_out_row; std::int64_t res_out_col;
};

template <class T, class G>
struct backward_params {
  std::int64_t m, n;
  row_shape rows;
  const T* x; row_step x_row; std::int64_t x_col;
  const G* gamma; std::int64_t gamma_stride;
  const T* dy; row_step dy_row; std::int64_t dy_col;
  const float* r; std::int64_t r_stride;
  T* dx; row_step dx_row; std::int64_t dx_col;
  // the grid's first row_blocks blocks take rows. With a partial table (one row of n fp32 per
  // row slot: the dgamma partial sums) that is the whole grid; without one (partial null: the
  // one-launch backward of small calls) the blocks after them sum dgamma's columns themselves
  std::int64_t row_blocks;
  float* partial;
  G* dgamma; std::int64_t dgamma_stride;
  // the operation: u = dy * (gamma + offset); a residual add's gradient along the residual
  // stream (null: none) is added to dx in fp32
  float offset;
  const T* res_grad; row_step res_grad_row; std::int64_t res_grad_col;
};

template <class G>
struct dgamma_params {
  std::int64_t n;
  std::int64_t partial_rows;
  const float* partial;
  G* dgamma; std::int64_t dgamma_stride;
};

}  // namespace nc
