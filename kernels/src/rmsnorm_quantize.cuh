// RMSNorm forward with a quantized output (abi.h "Variants"): y's fp32 value v = x*r*(gamma +
// offset) (of h = x + residual with a residual add) becomes a one-byte code Q(v / scale).
//
// forward_quantized_vector  16-byte loads: x (and the residual) unit-stride with 16-byte aligned
//                    rows, N a multiple of the vector width W, the codes unit-stride on W bytes.
//                    RT threads a row (32 to 512: path_table.hpp) keep their up to MAXV (4
//                    or 8) vectors of x (and the residual: the ADD builds; the sum rounded
//                    to T in x's place) in registers across the passes (sum of squares; a
//                    per-token scale's amax; the codes, W at a time in one store), and with
//                    up to 4 their gamma across rows. A group of per-group scales is L =
//                    group / W consecutive vectors: L lanes of one warp (L a power of two up
//                    to 32) find its amax by shuffles.
// forward_quantized  RT threads a row (a warp, or 256), any strides and offsets; the row is read
//                    from memory in each pass: its sum of squares, then (a per-token scale) its
//                    amax, then the codes. Per-group scales: a thread takes whole groups (g =
//                    lane, lane + RT, ...), finds a group's amax, writes its scale, then its codes.
// The scale: static (the caller's, read once a row), or max(amax / max, floor) rounded in fp32
// (amax / max, one division) and written; a code is Q(v * (1/scale)) or Q(v / scale) as the
// operation says, each product or quotient rounded to fp32. residual_out is written in the
// codes' pass by the thread that read x and the residual for that element in it, so an in-place
// call reads every residual element before it overwrites it.
#pragma once

#include <cstdint>
#include <type_traits>

#include "dtype.cuh"
#include "normcheck/abi.h"
#include "params.cuh"
#include "reduce.cuh"
#include "rmsnorm_forward.cuh"

namespace nc {

// the code formats (abi.h nc_quant)
enum class code_format : int { e4m3, e5m2, int8 };

// the largest finite code value: 448, 57344, 127
template <code_format F>
constexpr float code_max = F == code_format::e4m3 ? 448.0f : F == code_format::e5m2 ? 57344.0f : 127.0f;

// Q: v rounded to nearest even into the format, saturating: past +-max (Inf included) +-max;
// NaN gives a NaN code (int8: 0); -0 the negative zero code. Two values at a time, the first's
// code in the low byte: the fp8 formats take the conversion instruction (cvt.rn.satfinite.
// {e4m3,e5m2}x2.f32, sm_89 and later; the simt emulator's built-in on the CPU), one for both
template <code_format F>
__device__ __forceinline__ std::uint16_t quantize_pair(float a, float b) {
  if constexpr (F == code_format::int8) {
    // rounded to the nearest integer, even on a tie (one conversion instruction, which gives 0
    // for NaN and saturates past int's range), then clamped to +-127 in integers: the low byte
    // is the code in two's complement
    auto code = [](float v) -> std::uint32_t {
      const int i = __float2int_rn(v);
      return std::uint32_t(i < -127 ? -127 : i > 127 ? 127 : i) & 0xffu;
    };
    return static_cast<std::uint16_t>(code(a) | code(b) << 8);
  } else {
    constexpr auto format = F == code_format::e4m3 ? __NV_E4M3 : __NV_E5M2;
    return __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, format);
  }
}

template <code_format F>
__device__ __forceinline__ std::uint8_t quantize_code(float v) {
  return static_cast<std::uint8_t>(quantize_pair<F>(v, 0.0f));
}

// v / scale for a code: two fused multiply-adds from inverse = 1 / scale rounded give the
// division's bits (Markstein's correction: q0 = v * inverse is within an ulp of the quotient,
// the remainder v - q0 * scale is exact, and q0 + remainder * inverse rounds to the quotient)
// where scale lies in [2^-60, 2^60] (divides_fast) and |q0| in [2^-40, 2^64); outside that
// window q0 itself, which has the quotient's code in every format (|q| < 2^-39: a zero code of
// q's sign; |q| >= 2^63: saturated). A division is about ten instructions and a reciprocal on
// the special-function unit, and a row's (a group's) codes all divide by one scale
__device__ __forceinline__ bool divides_fast(float scale) { return scale >= 0x1p-60f && scale <= 0x1p60f; }
__device__ __forceinline__ bool corrects_exactly(float q0) {
  const float a = fabsf(q0);
  return a >= 0x1p-40f && a < 0x1p64f;
}

__device__ __forceinline__ float quotient(float v, float scale, float inverse) {
  const float q0 = v * inverse;
  return corrects_exactly(q0) ? fmaf(fmaf(-q0, scale, v), inverse, q0) : q0;
}

// quotient for a value of a row (a group) under its own dynamic scale (|v| <= amax, scale =
// dynamic_scale(amax) inside divides_fast's window): |q0| stays below 2^64, and below 2^-40 the
// corrected q0 keeps q0's sign and a magnitude whose code is zero in every format, so no test
// is needed. The remainder is negated after its fused multiply-add, not before, so that
// v = -0 gives -0 (quotient's fmaf(-q0, scale, v) is +0 there)
__device__ __forceinline__ float bounded_quotient(float v, float scale, float inverse) {
  const float q0 = v * inverse;
  return fmaf(-fmaf(q0, scale, -v), inverse, q0);
}

// a dynamic scale, max(amax / max, floor), amax / max rounded as the division: by quotient's
// fused multiply-adds inside its window, else by the division
template <code_format F>
__device__ __forceinline__ float dynamic_scale(float amax, float floor) {
  constexpr float inverse = 1.0f / code_max<F>;
  const float scale = corrects_exactly(amax * inverse) ? quotient(amax, code_max<F>, inverse) : amax / code_max<F>;
  return fmaxf(scale, floor);
}

template <class T, class G>
struct quantize_params {
  forward_params<T, G> f;  // f.y is not used: the codes go to q
  std::uint8_t* q; std::int64_t q_row, q_col;
  // the scale operand: static (read), or one a row / a group (written)
  float* scale; std::int64_t scale_row, scale_col;
  int scale_mode;  // nc_scale
  int divide;      // 1: v / scale; 0: v * (1/scale)
  int residual;    // nc_residual
  std::int64_t group;
  float floor;
};

// W codes at p (W-byte aligned) in one store, given as W/2 pairs (quantize_pair), the first at
// the lowest address
template <int W>
__device__ __forceinline__ void store_codes(std::uint8_t* p, const std::uint16_t (&pairs)[W / 2]) {
  using word = std::conditional_t<W == 8, std::uint64_t, std::uint32_t>;
  word codes = 0;
#pragma unroll
  for (int e = 0; e < W / 2; ++e) codes |= word(pairs[e]) << (16 * e);
  NC_CHECK_VECTOR_ACCESS(p, sizeof(word));  // one store of W bytes: aligned to W, as on a device
  *reinterpret_cast<word*>(p) = codes;
}

template <class T, class G, code_format F, int RT, int MAXV, bool ADD>
__global__ void __launch_bounds__(block_threads<RT>) forward_quantized_vector(quantize_params<T, G> p) {
  constexpr int W = vector_width<T>;
  constexpr int ROWS = rows_per_block<RT>;
  __shared__ float warp_totals[ROWS][RT / warp_size];
  follow_prior_grid();
  const forward_params<T, G>& f = p.f;
  const int lane = threadIdx.x % RT;
  const int slot = threadIdx.x / RT;
  // a row of this path holds at most MAXV * RT vectors: int indices
  const int vectors = int(f.n / W);
  // a build for rows without a residual keeps no registers for it
  constexpr bool add = ADD;

  // a thread's gamma is the same in every row: with up to 4 vectors a thread it is loaded
  // once, before the first row (rmsnorm_forward.cuh forward_vector)
  constexpr bool keep_gamma = MAXV <= 4;
  raw_vectors<G, W> gammas[keep_gamma ? MAXV : 1];
  if constexpr (keep_gamma) {
#pragma unroll
    for (int k = 0; k < MAXV; ++k) {
      const int v = lane + k * RT;
      if (v < vectors) gammas[k] = load_vectors<G, W>(f.gamma + v * W);
    }
  }
  auto gamma_of = [&](int k, int v) {
    if constexpr (keep_gamma) return gammas[k];
    else return load_vectors<G, W>(f.gamma + v * W);
  };

  for (std::int64_t row = std::int64_t(blockIdx.x) * ROWS + slot; row < f.m;
       row += std::int64_t(gridDim.x) * ROWS) {
    const T* x = f.x + row * f.x_row.token;
    const T* res = add ? f.res + row * f.res_row.token : nullptr;
    T* res_out = add ? f.res_out + row * f.res_out_row.token : nullptr;
    std::uint8_t* q = p.q + row * p.q_row;
    // pass 1: x (and the residual) into registers, h's sum of squares. The sum rounded to T
    // (NC_RESIDUAL_ROUNDED) replaces x in cache once formed: its bits are residual_out's, and
    // the later passes read it as they read x. The fp32 sum keeps x and the residual.
    uint4 cache[MAXV], res_cache[MAXV];
    const bool sums = add && p.residual != NC_RESIDUAL_ROUNDED;
    // a vector's elements as h: its cache bits, plus the residual's under the fp32 sum. The
    // lambdas take a vector's bits, never an index into cache: a register array indexed inside
    // a lambda may be placed in local memory
    auto h_of = [&](const uint4& x_bits, const uint4& res_bits, float (&h)[W]) {
      unpack<T>(x_bits, h);
      if (sums) {
        float r[W];
        unpack<T>(res_bits, r);
#pragma unroll
        for (int e = 0; e < W; ++e) h[e] += r[e];
      }
    };
    // residual_out's bits of a vector
    auto h_bits = [&](const uint4& x_bits, const float (&h)[W]) { return sums ? pack<T>(h) : x_bits; };
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < MAXV; ++k) {
      const int v = lane + k * RT;
      if (v < vectors) {
        cache[k] = load16(x + v * W);
        if (add) res_cache[k] = load16(res + v * W);
        float h[W];
        if (add && !sums) {
          float r[W];
          unpack<T>(cache[k], h);
          unpack<T>(res_cache[k], r);
#pragma unroll
          for (int e = 0; e < W; ++e) h[e] += r[e];
          cache[k] = pack<T>(h);
        }
        h_of(cache[k], res_cache[k], h);
#pragma unroll
        for (int e = 0; e < W; ++e) ss = fmaf(h[e], h[e], ss);
      }
    }
    ss = row_sum<RT>(ss, warp_totals[slot]);
    const float r = rsqrtf(ss / static_cast<float>(f.n) + f.epsilon);
    if (lane == 0) f.r[row * f.r_stride] = r;

    // vector k's h and its values v = h*r*(gamma + offset)
    auto values = [&](const uint4& x_bits, const uint4& res_bits, const raw_vectors<G, W>& gamma, float (&h)[W],
                      float (&out)[W]) {
      float g[W];
      h_of(x_bits, res_bits, h);
      unpack(gamma, g);
#pragma unroll
      for (int e = 0; e < W; ++e) out[e] = h[e] * r * (g[e] + f.offset);
    };
    auto scale_of = [&](float amax) { return dynamic_scale<F>(amax, p.floor); };
    // vector k's codes (and residual_out's bits h_bits, stored) under a scale; own: the scale
    // is the dynamic scale of the row or group these values are in (bounded_quotient applies)
    auto emit = [&](int v, const uint4& h_bits, const float (&out)[W], float scale, float inverse, bool own) {
      if (add) store16(res_out + v * W, h_bits);
      // the choice outside the elements' loop: a select inside it would divide every element
      std::uint16_t c[W / 2];
      if (p.divide && divides_fast(scale) && own) {
#pragma unroll
        for (int e = 0; e < W; e += 2)
          c[e / 2] = quantize_pair<F>(bounded_quotient(out[e], scale, inverse),
                                      bounded_quotient(out[e + 1], scale, inverse));
      } else if (p.divide && divides_fast(scale)) {
#pragma unroll
        for (int e = 0; e < W; e += 2)
          c[e / 2] = quantize_pair<F>(quotient(out[e], scale, inverse), quotient(out[e + 1], scale, inverse));
      } else if (p.divide) {
#pragma unroll
        for (int e = 0; e < W; e += 2) c[e / 2] = quantize_pair<F>(out[e] / scale, out[e + 1] / scale);
      } else {
#pragma unroll
        for (int e = 0; e < W; e += 2) c[e / 2] = quantize_pair<F>(out[e] * inverse, out[e + 1] * inverse);
      }
      store_codes<W>(q + v * W, c);
    };

    if (p.scale_mode == NC_SCALE_PER_GROUP) {
      // a group is group_lanes = 2^group_shift consecutive vectors (at most a warp), the same k
      // on consecutive lanes of one warp
      const int group_lanes = int(p.group / W);
      int group_shift = 0;
      while ((1 << group_shift) < group_lanes) ++group_shift;
      float* scales = p.scale + row * p.scale_row;
#pragma unroll
      for (int k = 0; k < MAXV; ++k) {
        const int v = lane + k * RT;
        float h[W], out[W], amax = 0.0f;
        if (v < vectors) {
          values(cache[k], res_cache[k], gamma_of(k, v), h, out);
#pragma unroll
          for (int e = 0; e < W; ++e) amax = fmaxf(amax, fabsf(out[e]));
        }
        // every lane takes part (a group lies wholly inside or past the row)
#pragma unroll
        for (int offset = warp_size / 2; offset > 0; offset /= 2)
          if (offset < group_lanes) amax = fmaxf(amax, __shfl_xor_sync(full_mask, amax, offset));
        if (v < vectors) {
          const float scale = scale_of(amax);
          if ((v & (group_lanes - 1)) == 0) scales[std::int64_t(v >> group_shift) * p.scale_col] = scale;
          emit(v, h_bits(cache[k], h), out, scale, 1.0f / scale, true);
        }
      }
      continue;
    }
    float scale;
    if (p.scale_mode == NC_SCALE_PER_TOKEN) {
      float amax = 0.0f;
#pragma unroll
      for (int k = 0; k < MAXV; ++k) {
        const int v = lane + k * RT;
        if (v < vectors) {
          float h[W], out[W];
          values(cache[k], res_cache[k], gamma_of(k, v), h, out);
#pragma unroll
          for (int e = 0; e < W; ++e) amax = fmaxf(amax, fabsf(out[e]));
        }
      }
      scale = scale_of(row_max<RT>(amax, warp_totals[slot]));
      if (lane == 0) p.scale[row * p.scale_row] = scale;
    } else {
      scale = *p.scale;
    }
    const float inverse = 1.0f / scale;
#pragma unroll
    for (int k = 0; k < MAXV; ++k) {
      const int v = lane + k * RT;
      if (v < vectors) {
        float h[W], out[W];
        values(cache[k], res_cache[k], gamma_of(k, v), h, out);
        emit(v, h_bits(cache[k], h), out, scale, inverse, p.scale_mode == NC_SCALE_PER_TOKEN);
      }
    }
  }
}

template <class T, class G, code_format F, int RT>
__global__ void __launch_bounds__(block_threads<RT>) forward_quantized(quantize_params<T, G> p) {
  constexpr int ROWS = rows_per_block<RT>;
  __shared__ float warp_totals[ROWS][RT / warp_size];
  follow_prior_grid();
  const forward_params<T, G>& f = p.f;
  const int lane = threadIdx.x % RT;
  const int slot = threadIdx.x / RT;

  for (std::int64_t row = std::int64_t(blockIdx.x) * ROWS + slot; row < f.m;
       row += std::int64_t(gridDim.x) * ROWS) {
    const T* x = f.x + row * f.x_row.token;
    const T* res = p.residual != NC_RESIDUAL_NONE ? f.res + row * f.res_row.token : nullptr;
    T* res_out = p.residual != NC_RESIDUAL_NONE ? f.res_out + row * f.res_out_row.token : nullptr;
    std::uint8_t* q = p.q + row * p.q_row;
    // element j of h: x, plus the residual in fp32 (rounded to T under NC_RESIDUAL_ROUNDED)
    auto h_at = [&](std::int64_t j) {
      float h = to_float(x[j * f.x_col]);
      if (p.residual != NC_RESIDUAL_NONE) {
        h += to_float(res[j * f.res_col]);
        if (p.residual == NC_RESIDUAL_ROUNDED) h = to_float(from_float<T>(h));
      }
      return h;
    };

    float ss = 0.0f;
    for (std::int64_t j = lane; j < f.n; j += RT) {
      const float h = h_at(j);
      ss = fmaf(h, h, ss);
    }
    ss = row_sum<RT>(ss, warp_totals[slot]);
    const float r = rsqrtf(ss / static_cast<float>(f.n) + f.epsilon);
    if (lane == 0) f.r[row * f.r_stride] = r;

    auto value = [&](std::int64_t j, float h) { return h * r * (to_float(f.gamma[j * f.gamma_stride]) + f.offset); };
    auto scale_of = [&](float amax) { return dynamic_scale<F>(amax, p.floor); };
    // element j's code (and its h, stored): h read again, by the thread that stores it
    auto emit = [&](std::int64_t j, float scale, float inverse) {
      const float h = h_at(j);
      if (p.residual != NC_RESIDUAL_NONE) res_out[j * f.res_out_col] = from_float<T>(h);
      const float v = value(j, h);
      q[j * p.q_col] = quantize_code<F>(p.divide ? v / scale : v * inverse);
    };

    if (p.scale_mode == NC_SCALE_PER_GROUP) {
      float* scales = p.scale + row * p.scale_row;
      for (std::int64_t g = lane; g < f.n / p.group; g += RT) {
        const std::int64_t first = g * p.group, last = first + p.group;
        float amax = 0.0f;
        for (std::int64_t j = first; j < last; ++j) amax = fmaxf(amax, fabsf(value(j, h_at(j))));
        const float scale = scale_of(amax);
        scales[g * p.scale_col] = scale;
        const float inverse = 1.0f / scale;
        for (std::int64_t j = first; j < last; ++j) emit(j, scale, inverse);
      }
      continue;
    }
    float scale;
    if (p.scale_mode == NC_SCALE_PER_TOKEN) {
      float amax = 0.0f;
      for (std::int64_t j = lane; j < f.n; j += RT) amax = fmaxf(amax, fabsf(value(j, h_at(j))));
      scale = scale_of(row_max<RT>(amax, warp_totals[slot]));
      if (lane == 0) p.scale[row * p.scale_row] = scale;
    } else {
      scale = *p.scale;
    }
    const float inverse = 1.0f / scale;
    for (std::int64_t j = lane; j < f.n; j += RT) emit(j, scale, inverse);
  }
}

}  // namespace nc
