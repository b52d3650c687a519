// dgamma[j] = sum over the partial table's rows of partial[s][j]: a SUM over rows,
// never a mean. A block covers 32 columns with 8 slices of rows; slice k sums rows
// k, k+8, ... in order, then thread k == 0 adds the 8 slice sums in order. The order
// is fixed by the table's shape alone, so the result is bit-identical run to run.
#pragma once

#include "dtype.cuh"
#include "params.cuh"

namespace nc {

constexpr int dgamma_columns = 32;
constexpr int dgamma_slices = 8;

template <class G>
__global__ void __launch_bounds__(dgamma_columns * dgamma_slices) dgamma_reduce(dgamma_params<G> p) {
  __shared__ float slice_sums[dgamma_slices][dgamma_columns];
  follow_prior_grid();
  const int col_in_block = threadIdx.x % dgamma_columns;
  const int slice = threadIdx.x / dgamma_columns;
  const std::int64_t j = std::int64_t(blockIdx.x) * dgamma_columns + col_in_block;

  float sum = 0.0f;
  if (j < p.n)
    for (std::int64_t s = slice; s < p.partial_rows; s += dgamma_slices) sum += p.partial[s * p.n + j];
  slice_sums[slice][col_in_block] = sum;
  __syncthreads();

  if (slice == 0 && j < p.n) {
    float total = 0.0f;
#pragma unroll
    for (int k = 0; k < dgamma_slices; ++k) total += slice_sums[k][col_in_block];
    p.dgamma[j * p.dgamma_stride] = from_float<G>(total);
  }
}

}  // namespace nc
