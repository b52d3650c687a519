// RMSNorm forward: y = x * r * gamma, r = 1 / sqrt(mean(x^2) + epsilon), one r per row.
//
// forward_vector   16-byte loads and stores; every operand unit-stride and 16-byte
//                  aligned, N a multiple of the vector width. With MAXV > 0 a thread
//                  keeps its MAXV vectors of x in registers between the two passes
//                  (and with MAXV <= 4 its gamma, for all rows); with MAXV == 0 (rows
//                  too long for registers) it reads them again.
// forward_strided  any strides, offsets and alignment; one element per access. With MAXE > 0
//                  a thread keeps up to MAXE elements of x and gamma in registers, so a row
//                  of up to MAXE * RT elements is read once and gamma's loads overlap x's.
// RT threads share a row; RT == 32 puts several rows (one per warp) in a block.
//
// The variants (abi.h "Variants") are the same kernels: ADD (an nc_residual) adds the residual
// row to x in fp32 (rounded to T under NC_RESIDUAL_ROUNDED) and normalizes that sum h, and every
// kernel scales by gamma + offset formed in fp32. residual_out is written in pass 2, element by
// element by the thread that read x and the residual for it, so an in-place call (res_out ==
// res) reads every residual element before it overwrites it.
#pragma once

#include <type_traits>

#include "dtype.cuh"
#include "params.cuh"
#include "reduce.cuh"

namespace nc {

template <int RT> constexpr int block_threads = RT < 128 ? 128 : RT;
template <int RT> constexpr int rows_per_block = block_threads<RT> / RT;

// h = x + residual in fp32, rounded to T under NC_RESIDUAL_ROUNDED (ADD == 1); x alone when ADD == 0
template <int ADD, class T>
__device__ __forceinline__ float add_residual(float x, T res) {
  if constexpr (ADD == 0) return x;
  const float h = x + to_float(res);
  if constexpr (ADD == 1) return to_float(from_float<T>(h));
  return h;
}

template <int ADD, class T, int W>
__device__ __forceinline__ void add_residual(float (&x)[W], const uint4& res) {
  if constexpr (ADD != 0) {
    const T* e = reinterpret_cast<const T*>(&res);
#pragma unroll
    for (int k = 0; k < W; ++k) x[k] = add_residual<ADD>(x[k], e[k]);
  }
}

template <class T, class G, int RT, int MAXV, int ADD = 0>
__global__ void __launch_bounds__(block_threads<RT>) forward_vector(forward_params<T, G> p) {
  constexpr int W = vector_width<T>;
  constexpr int ROWS = rows_per_block<RT>;
  __shared__ float warp_totals[ROWS][RT / warp_size];
  follow_prior_grid();
  const int lane = threadIdx.x % RT;
  const int slot = threadIdx.x / RT;
  const std::int64_t vectors = p.n / W;

  // a thread's gamma is the same in every row: with up to 4 vectors a thread it is loaded
  // once, before the first row, so no row waits for it between its reduction and its
  // stores (at 8 the registers it takes would cost more blocks an SM than it saves)
  constexpr bool keep_gamma = MAXV > 0 && MAXV <= 4;
  raw_vectors<G, W> gammas[keep_gamma ? MAXV : 1];
  if constexpr (keep_gamma) {
#pragma unroll
    for (int k = 0; k < MAXV; ++k) {
      const std::int64_t v = lane + std::int64_t(k) * RT;
      if (v < vectors) gammas[k] = load_vectors<G, W>(p.gamma + v * W);
    }
  }

  for (std::int64_t row = std::int64_t(blockIdx.x) * ROWS + slot; row < p.m;
       row += std::int64_t(gridDim.x) * ROWS) {
    const T* x = p.x + row_at(row, p.rows, p.x_row);
    T* y = p.y + row_at(row, p.rows, p.y_row);
    const T* res = ADD ? p.res + row_at(row, p.rows, p.res_row) : nullptr;
    T* res_out = ADD ? p.res_out + row_at(row, p.rows, p.res_out_row) : nullptr;

    // pass 1: sum of squares in fp32, each element upcast before it is squared
    uint4 cache[MAXV > 0 ? MAXV : 1], res_cache[ADD && MAXV > 0 ? MAXV : 1];
    float ss = 0.0f;
    if constexpr (MAXV > 0) {
#pragma unroll
      for (int k = 0; k < MAXV; ++k) {
        const std::int64_t v = lane + std::int64_t(k) * RT;
        if (v < vectors) {
          cache[k] = load16(x + v * W);
          float f[W];
          unpack<T>(cache[k], f);
          if constexpr (ADD) {
            res_cache[k] = load16(res + v * W);
            add_residual<ADD, T>(f, res_cache[k]);
          }
#pragma unroll
          for (int e = 0; e < W; ++e) ss = fmaf(f[e], f[e], ss);
        }
      }
    } else {
      for (std::int64_t v = lane; v < vectors; v += RT) {
        float f[W];
        unpack<T>(load16(x + v * W), f);
        if constexpr (ADD) add_residual<ADD, T>(f, load16(res + v * W));
#pragma unroll
        for (int e = 0; e < W; ++e) ss = fmaf(f[e], f[e], ss);
      }
    }
    ss = row_sum<RT>(ss, warp_totals[slot]);
    // the mean divides by the row's true length, never by a padded width
    const float r = rsqrtf(ss / static_cast<float>(p.n) + p.epsilon);
    if (lane == 0) p.r[row * p.r_stride] = r;

    // pass 2: scale and store
    auto emit = [&](std::int64_t v, const uint4& bits, const uint4& res_bits, const raw_vectors<G, W>& gamma) {
      float f[W], g[W], o[W];
      unpack<T>(bits, f);
      unpack(gamma, g);
      if constexpr (ADD) {
        add_residual<ADD, T>(f, res_bits);
        store16(res_out + v * W, pack<T>(f));
      }
#pragma unroll
      for (int e = 0; e < W; ++e) o[e] = f[e] * r * (g[e] + p.offset);
      store16(y + v * W, pack<T>(o));
    };
    if constexpr (MAXV > 0) {
#pragma unroll
      for (int k = 0; k < MAXV; ++k) {
        const std::int64_t v = lane + std::int64_t(k) * RT;
        if (v >= vectors) continue;
        if constexpr (keep_gamma) emit(v, cache[k], res_cache[ADD ? k : 0], gammas[k]);
        else emit(v, cache[k], res_cache[ADD ? k : 0], load_vectors<G, W>(p.gamma + v * W));
      }
    } else {
      for (std::int64_t v = lane; v < vectors; v += RT)
        emit(v, load16(x + v * W), ADD ? load16(res + v * W) : uint4{}, load_vectors<G, W>(p.gamma + v * W));
    }
  }
}

template <class T, class G, int RT, int MAXE, int ADD = 0>
__global__ void __launch_bounds__(block_threads<RT>) forward_strided(forward_params<T, G> p) {
  constexpr int ROWS = rows_per_block<RT>;
  __shared__ float warp_totals[ROWS][RT / warp_size];
  follow_prior_grid();
  const int lane = threadIdx.x % RT;
  const int slot = threadIdx.x / RT;

  for (std::int64_t row = std::int64_t(blockIdx.x) * ROWS + slot; row < p.m;
       row += std::int64_t(gridDim.x) * ROWS) {
    const T* x = p.x + row_at(row, p.rows, p.x_row);
    T* y = p.y + row_at(row, p.rows, p.y_row);
    const T* res = ADD ? p.res + row_at(row, p.rows, p.res_row) : nullptr;
    T* res_out = ADD ? p.res_out + row_at(row, p.rows, p.res_out_row) : nullptr;
    // element j of the row: x (h, with a residual add) and gamma as fp32
    auto load = [&](std::int64_t j, float& v, float& g) {
      v = to_float(x[j * p.x_col]);
      if constexpr (ADD) v = add_residual<ADD>(v, res[j * p.res_col]);
      g = to_float(p.gamma[j * p.gamma_stride]);
    };

    // a thread's first MAXE elements (columns lane, lane + RT, ...) stay in registers between
    // the passes, gamma's with them; any further ones are read again. The order of the sum is
    // j's either way. Without a residual they stay as loaded and are converted where used:
    // kept as fp32, a 16-bit element's load register is free once converted, the compiler
    // reuses it, and each load then waits for an earlier one (H100, 128x257 bf16: a few loads
    // in flight instead of all of a row's)
    using held_x = std::conditional_t<ADD == 0, T, float>;
    auto hold = [&](std::int64_t j, held_x& v, G& g) {
      if constexpr (ADD == 0) v = x[j * p.x_col];
      else v = add_residual<ADD>(to_float(x[j * p.x_col]), res[j * p.res_col]);
      g = p.gamma[j * p.gamma_stride];
    };
    held_x xs[MAXE > 0 ? MAXE : 1];
    G gs[MAXE > 0 ? MAXE : 1];
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < MAXE; ++k) {
      const std::int64_t j = lane + std::int64_t(k) * RT;
      if (j < p.n) {
        hold(j, xs[k], gs[k]);
        ss = fmaf(to_float(xs[k]), to_float(xs[k]), ss);
      }
    }
    for (std::int64_t j = lane + std::int64_t(MAXE) * RT; j < p.n; j += RT) {
      float v, g;
      load(j, v, g);
      ss = fmaf(v, v, ss);
    }
    ss = row_sum<RT>(ss, warp_totals[slot]);
    const float r = rsqrtf(ss / static_cast<float>(p.n) + p.epsilon);
    if (lane == 0) p.r[row * p.r_stride] = r;

    auto emit = [&](std::int64_t j, float v, float g) {
      if constexpr (ADD) res_out[j * p.res_out_col] = from_float<T>(v);
      y[j * p.y_col] = from_float<T>(v * r * (g + p.offset));
    };
#pragma unroll
    for (int k = 0; k < MAXE; ++k) {
      const std::int64_t j = lane + std::int64_t(k) * RT;
      if (j < p.n) emit(j, to_float(xs[k]), to_float(gs[k]));
    }
    for (std::int64_t j = lane + std::int64_t(MAXE) * RT; j < p.n; j += RT) {
      float v, g;
      load(j, v, g);
      emit(j, v, g);
    }
  }
}

}  // namespace nc
