// dgamma[j] = sum over the partial table's rows of partial[s][j]: a SUM over rows,
// never a mean. A block covers 8 columns with S = 32 slices of rows (4 on simt); slice k
// sums rows k, k+S, ... in order, then thread k == 0 adds the S slice sums in order. The order
// is fixed by the table's shape alone, so the result is bit-identical run to run.
// A table holds thousands of rows: many short slices, each with several loads in flight,
// keep its read from waiting on L2 latency (a warp reads 4 rows of 32 bytes).
//
// column_dgamma is the same sum taken straight from x, dy and r, for the one-launch
// backward of small calls: the column blocks at the end of the backward's grid each take
// blockDim / 16 columns with 16 slices of rows. Its order is fixed by M alone.
#pragma once

#include "dtype.cuh"
#include "params.cuh"

namespace nc {

constexpr int dgamma_columns = 8;
#if defined(__CUDACC__)
constexpr int dgamma_slices = 32;
#else
// the simt table has at most 64 rows (16 persistent blocks, launch.cuh), and the emulator's
// cost is a fiber a thread: 4 slices of 16 rows, a warp a block, instead of 32 slices of 2
constexpr int dgamma_slices = 4;
#endif

// a block's slices combine: each thread's sum goes to slice_sums[slice][col_in_block], then
// slice 0 adds its column's sums in slice order and writes dgamma[j]
template <int SLICES, int COLUMNS, class G>
__device__ __forceinline__ void combine_slices(float (&slice_sums)[SLICES][COLUMNS], int slice, int col_in_block,
                                               float sum, std::int64_t j, std::int64_t n, G* dgamma,
                                               std::int64_t dgamma_stride) {
  slice_sums[slice][col_in_block] = sum;
  __syncthreads();

  if (slice == 0 && j < n) {
    float total = 0.0f;
#pragma unroll
    for (int k = 0; k < SLICES; ++k) total += slice_sums[k][col_in_block];
    dgamma[j * dgamma_stride] = from_float<G>(total);
  }
}

template <class G>
__global__ void __launch_bounds__(dgamma_columns * dgamma_slices) dgamma_reduce(dgamma_params<G> p) {
  __shared__ float slice_sums[dgamma_slices][dgamma_columns];
  follow_prior_grid();
  const int col_in_block = threadIdx.x % dgamma_columns;
  const int slice = threadIdx.x / dgamma_columns;
  const std::int64_t j = std::int64_t(blockIdx.x) * dgamma_columns + col_in_block;

  float sum = 0.0f;
  if (j < p.n) {
#pragma unroll 4
    for (std::int64_t s = slice; s < p.partial_rows; s += dgamma_slices) sum += p.partial[s * p.n + j];
  }
  combine_slices(slice_sums, slice, col_in_block, sum, j, p.n, p.dgamma, p.dgamma_stride);
}

// the backward's column blocks (rmsnorm_backward.cuh): blockDim.x is 128, 256 or 512
constexpr int column_slices = 16;

template <class T, class G>
__device__ __forceinline__ void column_dgamma(const backward_params<T, G>& p, std::int64_t tile) {
  __shared__ float slice_sums[column_slices][512 / column_slices];
  const int columns = int(blockDim.x) / column_slices;
  const int col_in_block = threadIdx.x % columns;
  const int slice = threadIdx.x / columns;
  const std::int64_t j = tile * columns + col_in_block;

  float sum = 0.0f;
  if (j < p.n) {
#pragma unroll 4
    for (std::int64_t i = slice; i < p.m; i += column_slices)
      sum += to_float(p.dy[row_at(i, p.rows, p.dy_row) + j * p.dy_col]) * to_float(p.x[row_at(i, p.rows, p.x_row) + j * p.x_col]) * p.r[i * p.r_stride];
  }
  combine_slices(slice_sums, slice, col_in_block, sum, j, p.n, p.dgamma, p.dgamma_stride);
}

}  // namespace nc
