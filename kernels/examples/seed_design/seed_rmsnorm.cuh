// The source document's RMSNorm design (SEED.md, "The kernels' contract"), written in CUDA
// as a second kernel, independent of kernels/src.
//
// The document's programs are Triton: one program per row, whose BLOCK lanes (the next
// power of two >= N) load the row with a mask that reads 0 past N and store with the same
// mask. Here a program is a CUDA block of min(BLOCK, 256) threads; thread t holds lanes
// t, t + threads, t + 2·threads, ... of the program's BLOCK lanes, so the block covers
// exactly the lanes the Triton program has. The row stays in registers between the
// reduction and the stores, as it does in the Triton program.
//
//   seed_forward   r = 1/sqrt(Σx²/N + ε) (fp32, one per row), y = x·r·γ
//   seed_backward  dx = r·u − (x·r)·(Σu·x/N · r·r) with u = dy·γ, and the partial table
//                  P[i, j] = dy·(x·r), M×N fp32
//   seed_dgamma    dgamma[j] = Σ_i P[i, j], rows in order: deterministic, no atomics
//
// Every load is upcast to fp32 before it is squared or multiplied; results are rounded to
// the operand's dtype only when stored. Operands are dense rows (row i at element i·N).
//
// The document's exercise, the kernel that divides by BLOCK instead of N (forward and
// backward), is this source built with SEED_DIVIDE_BY_BLOCK defined.
#pragma once

#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#else
#include "simt/runtime.hpp"
#endif

namespace seed_design {

// the document's limit on N: BLOCK lanes of a row at most
constexpr int max_block = 4096;
// threads of a block; a program of more lanes gives each thread several
constexpr int max_threads = 256;
constexpr int max_lanes_per_thread = max_block / max_threads;

// BLOCK for a row of n elements: the next power of two >= n
constexpr int block_lanes(int n) {
  int b = 1;
  while (b < n) b *= 2;
  return b;
}

constexpr int block_threads(int block) { return block < max_threads ? block : max_threads; }

template <class T>
__device__ __forceinline__ float to_float(T v) {
  if constexpr (std::is_same_v<T, float>) return v;
  else return __half2float(v);
}

template <class T>
__device__ __forceinline__ T from_float(float v) {
  if constexpr (std::is_same_v<T, float>) return v;
  else return __float2half_rn(v);
}

// what a row's mean divides by: N, the document's rule. The exercise's wrong variant divides
// by BLOCK, which is the same number only when N is a power of two
__device__ __forceinline__ float mean_count(int n, int block) {
#if defined(SEED_DIVIDE_BY_BLOCK)
  (void)n;
  return static_cast<float>(block);
#else
  (void)block;
  return static_cast<float>(n);
#endif
}

// the sum of one value per thread, as a tree over shared memory: a fixed order, so a row's
// result never depends on timing. blockDim.x is a power of two. Every thread gets the total.
__device__ __forceinline__ float block_sum(float value, float* scratch) {
  scratch[threadIdx.x] = value;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) scratch[threadIdx.x] += scratch[threadIdx.x + half];
    __syncthreads();
  }
  return scratch[0];
}

// one block per row
template <class T>
__global__ void __launch_bounds__(max_threads)
    seed_forward(const T* __restrict__ x, const T* __restrict__ gamma, T* __restrict__ y,
                 float* __restrict__ r, int n, int block, float epsilon) {
  __shared__ float scratch[max_threads];
  const int lanes = block / static_cast<int>(blockDim.x);
  const std::int64_t row_start = static_cast<std::int64_t>(blockIdx.x) * n;

  // the masked load: a lane past N holds 0, so it adds nothing to the sum of squares
  float v[max_lanes_per_thread];
  float squares = 0.0f;
#pragma unroll
  for (int k = 0; k < max_lanes_per_thread; ++k) {
    const int col = k * static_cast<int>(blockDim.x) + static_cast<int>(threadIdx.x);
    v[k] = k < lanes && col < n ? to_float(x[row_start + col]) : 0.0f;
    if (k < lanes) squares += v[k] * v[k];
  }
  const float total = block_sum(squares, scratch);
  const float rstd = rsqrtf(total / mean_count(n, block) + epsilon);

  // the masked store: lanes past N write nothing
#pragma unroll
  for (int k = 0; k < max_lanes_per_thread; ++k) {
    const int col = k * static_cast<int>(blockDim.x) + static_cast<int>(threadIdx.x);
    if (k < lanes && col < n) y[row_start + col] = from_float<T>(v[k] * rstd * to_float(gamma[col]));
  }
  // the backward reads r instead of recomputing it
  if (threadIdx.x == 0) r[blockIdx.x] = rstd;
}

// one block per row: dx, and the row's share of dgamma into the partial table
template <class T>
__global__ void __launch_bounds__(max_threads)
    seed_backward(const T* __restrict__ x, const T* __restrict__ gamma, const T* __restrict__ dy,
                  const float* __restrict__ r, T* __restrict__ dx, float* __restrict__ partial, int n,
                  int block) {
  __shared__ float scratch[max_threads];
  const int lanes = block / static_cast<int>(blockDim.x);
  const std::int64_t row_start = static_cast<std::int64_t>(blockIdx.x) * n;

  float xv[max_lanes_per_thread], dyv[max_lanes_per_thread], u[max_lanes_per_thread];
  float dot = 0.0f;
#pragma unroll
  for (int k = 0; k < max_lanes_per_thread; ++k) {
    const int col = k * static_cast<int>(blockDim.x) + static_cast<int>(threadIdx.x);
    const bool in_row = k < lanes && col < n;
    xv[k] = in_row ? to_float(x[row_start + col]) : 0.0f;
    dyv[k] = in_row ? to_float(dy[row_start + col]) : 0.0f;
    u[k] = in_row ? dyv[k] * to_float(gamma[col]) : 0.0f;
    if (k < lanes) dot += u[k] * xv[k];
  }
  const float total = block_sum(dot, scratch);
  const float rstd = r[blockIdx.x];
  // x·r³·mean(u·x) is formed as (x·r)·(mean(u·x)·r·r): r³ alone overflows fp32 once r passes
  // about 7e12 (a row of tiny values with a tiny ε), while these two factors stay near u and r
  const float c = total / mean_count(n, block) * rstd * rstd;

#pragma unroll
  for (int k = 0; k < max_lanes_per_thread; ++k) {
    const int col = k * static_cast<int>(blockDim.x) + static_cast<int>(threadIdx.x);
    if (k < lanes && col < n) {
      const float x_hat = xv[k] * rstd;
      dx[row_start + col] = from_float<T>(rstd * u[k] - x_hat * c);
      partial[row_start + col] = dyv[k] * x_hat;
    }
  }
}

// one thread per column: the column of the partial table summed over the rows in order
template <class T>
__global__ void __launch_bounds__(max_threads)
    seed_dgamma(const float* __restrict__ partial, T* __restrict__ dgamma, std::int64_t m, int n) {
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= n) return;
  float sum = 0.0f;
  for (std::int64_t row = 0; row < m; ++row) sum += partial[row * n + col];
  dgamma[col] = from_float<T>(sum);
}

}  // namespace seed_design
