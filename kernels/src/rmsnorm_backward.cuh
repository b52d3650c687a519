// RMSNorm backward: dx and the per-block dgamma partial sums.
//
//   u  = dy * (gamma + offset)            the offset formed in fp32 (abi.h "Variants"; 0: plain)
//   dx = r*u - (x*r) * r^2 * mean(u*x)   mean over the row's N columns
//        (+ res_grad, in fp32, for a residual add: dx is then d_residual too)
//   dgamma partial[slot][j] += dy * x * r  over the rows the slot handles
//
// The grid is persistent: row slot s (block b, warp w when RT == 32) handles rows
// s, s + S, s + 2S, ... with S the number of slots, so the partial table is at most S x N
// fp32, never M x N. A slot's thread owns the same columns in every row, which is what lets
// it accumulate its columns of dgamma without atomics or races. dgamma_reduce then sums
// the S partials of each column in a fixed order, so dgamma is bit-identical run to run.
// A small call has no table and one launch: its grid ends in column blocks that sum dgamma
// from x, dy and r themselves (column_dgamma, rmsnorm_dgamma.cuh).
//
// backward_vector   16-byte accesses (same preconditions as forward_vector). ROWS row slots
//                   of RT threads a block, MAXV vectors a thread; H says where x and dy
//                   stay between the passes (read again, registers, or registers with
//                   the slot's next row read ahead: hold below).
//                   The dgamma partials live in registers until the slot is done; then
//                   a block's slots add theirs up: one row of the table a block.
// backward_strided  any layout; the partials accumulate in the slot's row of the table.
//                   MAXE elements a thread of x, dy and gamma stay in registers between
//                   the passes (rows up to MAXE * RT are read once).
#pragma once

#include "dtype.cuh"
#include "params.cuh"
#include "reduce.cuh"
#include "rmsnorm_dgamma.cuh"
#include "rmsnorm_forward.cuh"

namespace nc {

// where backward_vector keeps a thread's vectors of x and dy between the two passes
enum class hold {
  reread,     // nowhere: pass 2 reads them again
  registers,  // in registers
  pipelined,  // in registers, and the slot's next row is read while this one is computed
};

template <class T, class G, int RT, int ROWS, int MAXV, hold H>
__global__ void __launch_bounds__(RT * ROWS) backward_vector(backward_params<T, G> p) {
  constexpr int W = vector_width<T>;
  constexpr bool CACHE = H != hold::reread;
  constexpr int HELD = CACHE ? MAXV : 1;  // vectors of x (and of dy) a thread holds
  __shared__ float warp_totals[ROWS][RT / warp_size];
  follow_prior_grid();
  if (blockIdx.x >= p.row_blocks) return column_dgamma(p, blockIdx.x - p.row_blocks);
  const int lane = threadIdx.x % RT;
  const int slot = threadIdx.x / RT;
  const std::int64_t vectors = p.n / W;
  const std::int64_t step = p.row_blocks * ROWS;

  float acc[MAXV][W];
#pragma unroll
  for (int k = 0; k < MAXV; ++k)
#pragma unroll
    for (int e = 0; e < W; ++e) acc[k][e] = 0.0f;

  // the slot's row of the step at base: its r and, when held, its vectors of x and dy.
  // A row past the last has no vectors and r 0
  auto fetch = [&](std::int64_t base, uint4 (&xv)[HELD], uint4 (&dyv)[HELD], float& rv) {
    const std::int64_t row = base + slot;
    rv = 0.0f;
    if (row >= p.m) return;
    rv = p.r[row * p.r_stride];
    if constexpr (CACHE) {
      const T* x = p.x + row_at(row, p.rows, p.x_row);
      const T* dy = p.dy + row_at(row, p.rows, p.dy_row);
#pragma unroll
      for (int k = 0; k < MAXV; ++k) {
        const std::int64_t v = lane + std::int64_t(k) * RT;
        if (v < vectors) {
          xv[k] = load16(x + v * W);
          dyv[k] = load16(dy + v * W);
        }
      }
    }
  };

  // the slots of a block go through the rows together (with RT > 32 their reductions share
  // the block's barriers); a slot past the last row has no vectors in it. hold::pipelined
  // reads the slot's next row before this one's pass 1, so those loads are in flight
  // across this row's reduction, its barriers and its stores; the arithmetic and its
  // order are the same in every build
  uint4 xs[HELD], dys[HELD];
  float r;
  fetch(std::int64_t(blockIdx.x) * ROWS, xs, dys, r);
  for (std::int64_t base = std::int64_t(blockIdx.x) * ROWS; base < p.m; base += step) {
    const std::int64_t row = base + slot;
    const std::int64_t row_vectors = row < p.m ? vectors : 0;
    const T* x = p.x + row_at(row, p.rows, p.x_row);
    const T* dy = p.dy + row_at(row, p.rows, p.dy_row);
    T* dx = p.dx + row_at(row, p.rows, p.dx_row);
    const T* res_grad = p.res_grad != nullptr ? p.res_grad + row_at(row, p.rows, p.res_grad_row) : nullptr;
    uint4 next_xs[HELD], next_dys[HELD];
    float next_r;
    if constexpr (H == hold::pipelined) fetch(base + step, next_xs, next_dys, next_r);

    // pass 1: s = sum(u * x)
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < MAXV; ++k) {
      const std::int64_t v = lane + std::int64_t(k) * RT;
      if (v < row_vectors) {
        float xf[W], dyf[W], g[W];
        if constexpr (CACHE) {
          unpack<T>(xs[k], xf);
          unpack<T>(dys[k], dyf);
        } else {
          unpack<T>(load16(x + v * W), xf);
          unpack<T>(load16(dy + v * W), dyf);
        }
        load_floats<G, W>(p.gamma + v * W, g);
#pragma unroll
        for (int e = 0; e < W; ++e) g[e] += p.offset;
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
      if (v < row_vectors) {
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
        for (int e = 0; e < W; ++e) g[e] += p.offset;
#pragma unroll
        for (int e = 0; e < W; ++e) {
          o[e] = r * (dyf[e] * g[e]) - (xf[e] * r) * c;
          acc[k][e] += dyf[e] * xf[e] * r;
        }
        if (res_grad != nullptr) {
          float along[W];
          unpack<T>(load16(res_grad + v * W), along);
#pragma unroll
          for (int e = 0; e < W; ++e) o[e] += along[e];
        }
        store16(dx + v * W, pack<T>(o));
      }
    }

    if constexpr (H == hold::pipelined) {
      // the row read ahead becomes the slot's row
#pragma unroll
      for (int k = 0; k < HELD; ++k) {
        xs[k] = next_xs[k];
        dys[k] = next_dys[k];
      }
      r = next_r;
    } else {
      fetch(base + step, xs, dys, r);
    }
  }

  if (p.partial == nullptr) return;
  // a block of several row slots writes one row of the table: its slots add their partials
  // into slot 0's, in slot order
  if constexpr (ROWS > 1) {
    __shared__ float later_slots[ROWS - 1][RT * W];
#pragma unroll
    for (int k = 0; k < MAXV; ++k) {
      if (slot > 0) {
#pragma unroll
        for (int e = 0; e < W; ++e) later_slots[slot - 1][lane * W + e] = acc[k][e];
      }
      __syncthreads();
      if (slot == 0) {
        for (int w = 0; w < ROWS - 1; ++w) {
#pragma unroll
          for (int e = 0; e < W; ++e) acc[k][e] += later_slots[w][lane * W + e];
        }
      }
      // read before the next k overwrites them
      __syncthreads();
    }
    if (slot > 0) return;
  }
  // a block with no rows still writes its zeros: the reduction reads every row
  float* partial = p.partial + std::int64_t(blockIdx.x) * p.n;
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

template <class T, class G, int RT, int MAXE>
__global__ void __launch_bounds__(block_threads<RT>) backward_strided(backward_params<T, G> p) {
  constexpr int ROWS = rows_per_block<RT>;
  __shared__ float warp_totals[ROWS][RT / warp_size];
  follow_prior_grid();
  if (blockIdx.x >= p.row_blocks) return column_dgamma(p, blockIdx.x - p.row_blocks);
  const int lane = threadIdx.x % RT;
  const int slot = threadIdx.x / RT;
  const std::int64_t first = std::int64_t(blockIdx.x) * ROWS + slot;
  float* partial = p.partial == nullptr ? nullptr : p.partial + first * p.n;

  // the thread that zeroes a column is the one that accumulates it: no barrier needed
  if (partial != nullptr)
    for (std::int64_t j = lane; j < p.n; j += RT) partial[j] = 0.0f;

  for (std::int64_t row = first; row < p.m; row += p.row_blocks * ROWS) {
    const T* x = p.x + row_at(row, p.rows, p.x_row);
    const T* dy = p.dy + row_at(row, p.rows, p.dy_row);
    T* dx = p.dx + row_at(row, p.rows, p.dx_row);
    const T* res_grad = p.res_grad != nullptr ? p.res_grad + row_at(row, p.rows, p.res_grad_row) : nullptr;
    const float r = p.r[row * p.r_stride];
    // element j of the row: x, dy and gamma as fp32
    auto load = [&](std::int64_t j, float& xf, float& dyf, float& g) {
      xf = to_float(x[j * p.x_col]);
      dyf = to_float(dy[j * p.dy_col]);
      g = to_float(p.gamma[j * p.gamma_stride]) + p.offset;
    };

    // pass 1: s = sum(u * x). A thread's first MAXE elements stay in registers for pass 2,
    // as loaded (converted where used, so that all their loads are in flight at once:
    // forward_strided); any further ones are read again. The order of the sum is j's either way
    T xs[MAXE > 0 ? MAXE : 1], dys[MAXE > 0 ? MAXE : 1];
    G gs[MAXE > 0 ? MAXE : 1];
#pragma unroll
    for (int k = 0; k < MAXE; ++k) {
      const std::int64_t j = lane + std::int64_t(k) * RT;
      if (j < p.n) xs[k] = x[j * p.x_col], dys[k] = dy[j * p.dy_col], gs[k] = p.gamma[j * p.gamma_stride];
    }
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < MAXE; ++k) {
      const std::int64_t j = lane + std::int64_t(k) * RT;
      if (j < p.n) s = fmaf(to_float(dys[k]) * (to_float(gs[k]) + p.offset), to_float(xs[k]), s);
    }
    for (std::int64_t j = lane + std::int64_t(MAXE) * RT; j < p.n; j += RT) {
      float xf, dyf, g;
      load(j, xf, dyf, g);
      s = fmaf(dyf * g, xf, s);
    }
    s = row_sum<RT>(s, warp_totals[slot]);
    const float c = s / static_cast<float>(p.n) * r * r;

    // pass 2: dx, and this row's share of dgamma
    auto emit = [&](std::int64_t j, float xf, float dyf, float g) {
      const float along = res_grad != nullptr ? to_float(res_grad[j * p.res_grad_col]) : 0.0f;
      dx[j * p.dx_col] = from_float<T>(r * (dyf * g) - (xf * r) * c + along);
      if (partial != nullptr) partial[j] += dyf * xf * r;
    };
#pragma unroll
    for (int k = 0; k < MAXE; ++k) {
      const std::int64_t j = lane + std::int64_t(k) * RT;
      if (j < p.n) emit(j, to_float(xs[k]), to_float(dys[k]), to_float(gs[k]) + p.offset);
    }
    for (std::int64_t j = lane + std::int64_t(MAXE) * RT; j < p.n; j += RT) {
      float xf, dyf, g;
      load(j, xf, dyf, g);
      emit(j, xf, dyf, g);
    }
  }
}

}  // namespace nc
