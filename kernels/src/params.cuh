// Kernel parameters: pointers already advanced by their element offsets, strides in
// elements, 64-bit throughout (a row offset can pass 2^31 elements).
#pragma once

#include <cstdint>

namespace nc {

template <class T, class G>
struct forward_params {
  std::int64_t m, n;
  float epsilon;
  const T* x; std::int64_t x_row, x_col;
  const G* gamma; std::int64_t gamma_stride;
  T* y; std::int64_t y_row, y_col;
  float* r; std::int64_t r_stride;
  // the operation (abi.h "Variants"): gamma + offset formed in fp32 (0: plain); with a
  // residual add (the kernels' ADD) h = x + res is normalized and written to res_out
  float offset;
  const T* res; std::int64_t res_row, res_col;
  T* res_out; std::int64_t res_out_row, res_out_col;
};

template <class T, class G>
struct backward_params {
  std::int64_t m, n;
  const T* x; std::int64_t x_row, x_col;
  const G* gamma; std::int64_t gamma_stride;
  const T* dy; std::int64_t dy_row, dy_col;
  const float* r; std::int64_t r_stride;
  T* dx; std::int64_t dx_row, dx_col;
  // the grid's first row_blocks blocks take rows. With a partial table (one row of n fp32 per
  // row slot: the dgamma partial sums) that is the whole grid; without one (partial null: the
  // one-launch backward of small calls) the blocks after them sum dgamma's columns themselves
  std::int64_t row_blocks;
  float* partial;
  G* dgamma; std::int64_t dgamma_stride;
  // the operation: u = dy * (gamma + offset); a residual add's gradient along the residual
  // stream (null: none) is added to dx in fp32
  float offset;
  const T* res_grad; std::int64_t res_grad_row, res_grad_col;
};

template <class G>
struct dgamma_params {
  std::int64_t n;
  std::int64_t partial_rows;
  const float* partial;
  G* dgamma; std::int64_t dgamma_stride;
};

}  // namespace nc
