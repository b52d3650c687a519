// RMSNorm backward: dx and the per-block dgamma partial sums.
//
//   u  = dy * gamma
//   dx = r*u - (x*r) * r^2 * mean(u*x)   mean over the row's N columns
//   dgamma partial[slot][j] += dy * x * r  over the rows the slot handles
//
// The grid is persistent: row slot s (block b, warp w when RT == 32) handles rows
// s, s + S, s + 2S, ... with S the number of slots, so the partial table is S x N fp32,
// never M x N. A slot's thread owns the same columns in every row, which is what lets
// it accumulate its columns of dgamma without atomics or races. dgamma_reduce then sums
// the S partials of each column in a fixed order, so dgamma is bit-identical run to run.
//
// backward_vector   16-byte accesses (same preconditions as forward_vector). MAXV vectors
//                   a thread; CACHE keeps x and dy in registers between the passes.
//                   The dgamma partials live in registers until the slot is done.
// backward_strided  any layout; the partials accumulate in the slot's row of the table.
#pragma once

#include "dtype.cuh"
#include "params.cuh"
#include "reduce.cuh"
#include "rmsnorm_forward.cuh"

namespace nc {

template <class T, class G, int RT, int MAXV, bool CACHE>
__global__ void __launch_bounds__(block_threads<RT>) backward_vector(backward_params<T, G> p) {
  constexpr int W = vector_width<T>;
  constexpr int ROWS = rows_per_block<RT>;
  __shared__ float warp_totals[ROWS][RT / warp_size];
  follow_prior_grid();
  const int lane = threadIdx.x % RT;
  const int slot = threadIdx.x / RT;
  const std::int64_t vectors = p.n / W;
  const std::int64_t first = std::int64_t(blockIdx.x) * ROWS + slot;

  float acc[MAXV][W];
#pragma unroll
  for (int k = 0; k < MAXV; ++k)
#pragma unroll
    for (int e = 0; e < W; ++e) acc[k][e] = 0.0f;

  for (std::int64_t row = first; row < p.m; row += std::int64_t(gridDim.x) * ROWS) {
    const T* x = p.x + row * p.x_row;
    const T* dy = p.dy + row * p.dy_row;
    T* dx = p.dx + row * p.dx_row;
    // read before the reduction's barriers, so its latency hides behind them
    const float r = p.r[row * p.r_stride];

    // pass 1: s = sum(u * x)
    uint4 xs[CACHE ? MAXV : 1], dys[CACHE ? MAXV : 1];
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < MAXV; ++k) {
      const std::int64_t v = lane + std::int64_t(k) * RT;
      if (v < vectors) {
        const uint4 xb = load16(x + v * W), dyb = load16(dy + v * W);
        if constexpr (CACHE) { xs[k] = xb; dys[k] = dyb; }
        float xf[W], dyf[W], g[W];
        unpack<T>(xb, xf);
        unpack<T>(dyb, dyf);
        load_floats<G, W>(p.gamma + v * W, g);
#pragma unroll
        for (int e = 0; e < W; ++e) s = fmaf(dyf[e] * g[e], xf[e], s);
      }
    }
    s = row_sum<RT>(s, warp_totals[slot]);
    // the backward mean divides by N too: the same N as the forward. c = mean(u*x) * r^2,
    // used as (x*r) * c: r^3 is never formed, so a row tiny next to epsilon (r ~ 1e15)
    // gives 0 where the math gives 0, not 0 * inf = NaN
    const float c = s / static_cast<float>(p.n) * r * r;

    // pass 2: dx, and this row's share of dgamma
#pragma unroll
    for (int k = 0; k < MAXV; ++k) {
      const std::int64_t v = lane + std::int64_t(k) * RT;
      if (v < vectors) {
        float xf[W], dyf[W], g[W], o[W];
        if constexpr (CACHE) {
          unpack<T>(xs[k], xf);
          unpack<T>(dys[k], dyf);
        } else {
          unpack<T>(load16(x + v * W), xf);
          unpack<T>(load16(dy + v * W), dyf);
        }
        load_floats<G, W>(p.gamma + v * W, g);
#pragma unroll
        for (int e = 0; e < W; ++e) {
          o[e] = r * (dyf[e] * g[e]) - (xf[e] * r) * c;
          acc[k][e] += dyf[e] * xf[e] * r;
        }
        store16(dx + v * W, pack<T>(o));
      }
    }
  }

  // a slot with no rows still writes its zeros: the reduction reads every slot
  float* partial = p.partial + first * p.n;
#pragma unroll
  for (int k = 0; k < MAXV; ++k) {
    const std::int64_t v = lane + std::int64_t(k) * RT;
    if (v < vectors) {
#pragma unroll
      for (int e = 0; e < W; e += 4) {
        uint4 bits;
        float* f = reinterpret_cast<float*>(&bits);
        f[0] = acc[k][e]; f[1] = acc[k][e + 1]; f[2] = acc[k][e + 2]; f[3] = acc[k][e + 3];
        store16(partial + v * W + e, bits);
      }
    }
  }
}

template <class T, class G, int RT>
__global__ void __launch_bounds__(block_threads<RT>) backward_strided(backward_params<T, G> p) {
  constexpr int ROWS = rows_per_block<RT>;
  __shared__ float warp_totals[ROWS][RT / warp_size];
  follow_prior_grid();
  const int lane = threadIdx.x % RT;
  const int slot = threadIdx.x / RT;
  const std::int64_t first = std::int64_t(blockIdx.x) * ROWS + slot;
  float* partial = p.partial + first * p.n;

  // the thread that zeroes a column is the one that accumulates it: no barrier needed
  for (std::int64_t j = lane; j < p.n; j += RT) partial[j] = 0.0f;

  for (std::int64_t row = first; row < p.m; row += std::int64_t(gridDim.x) * ROWS) {
    const T* x = p.x + row * p.x_row;
    const T* dy = p.dy + row * p.dy_row;
    T* dx = p.dx + row * p.dx_row;

    float s = 0.0f;
    for (std::int64_t j = lane; j < p.n; j += RT) {
      const float u = to_float(dy[j * p.dy_col]) * to_float(p.gamma[j * p.gamma_stride]);
      s = fmaf(u, to_float(x[j * p.x_col]), s);
    }
    s = row_sum<RT>(s, warp_totals[slot]);
    const float r = p.r[row * p.r_stride];
    const float c = s / static_cast<float>(p.n) * r * r;

    for (std::int64_t j = lane; j < p.n; j += RT) {
      const float xf = to_float(x[j * p.x_col]);
      const float dyf = to_float(dy[j * p.dy_col]);
      const float g = to_float(p.gamma[j * p.gamma_stride]);
      dx[j * p.dx_col] = from_float<T>(r * (dyf * g) - (xf * r) * c);
      partial[j] += dyf * xf * r;
    }
  }
}

}  // namespace nc
