// Row sums: the threads of one row combine their fp32 partial sums.
// A row is RT consecutive threads, RT a multiple of 32; a block holds one or several
// rows. Every thread of the row gets the same bits: the warp stage is a butterfly, and
// the shared-memory stage sums the warp totals in one fixed order.
#pragma once

#include "platform.cuh"

namespace nc {

constexpr int warp_size = 32;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = warp_size / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(full_mask, v, offset);
  return v;
}

// RT threads per row. When RT > 32 the barriers are the block's: every row of the block
// (every thread) calls it together, each row with its own warp_totals.
template <int RT>
__device__ __forceinline__ float row_sum(float v, float* warp_totals /* RT / 32 entries */) {
  v = warp_sum(v);
  if constexpr (RT > warp_size) {
    const int warp = threadIdx.x % RT / warp_size;
    if (threadIdx.x % warp_size == 0) warp_totals[warp] = v;
    __syncthreads();
    v = 0.0f;
#pragma unroll
    for (int w = 0; w < RT / warp_size; ++w) v += warp_totals[w];
    // the totals are read before the next row overwrites them
    __syncthreads();
  }
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = warp_size / 2; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(full_mask, v, offset));
  return v;
}

// the largest of the row's values (fmaxf: a NaN is passed over), as row_sum
template <int RT>
__device__ __forceinline__ float row_max(float v, float* warp_totals /* RT / 32 entries */) {
  v = warp_max(v);
  if constexpr (RT > warp_size) {
    if (threadIdx.x % warp_size == 0) warp_totals[threadIdx.x % RT / warp_size] = v;
    __syncthreads();
#pragma unroll
    for (int w = 0; w < RT / warp_size; ++w) v = fmaxf(v, warp_totals[w]);
    __syncthreads();
  }
  return v;
}

}  // namespace nc
