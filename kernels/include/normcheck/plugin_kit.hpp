// The plugin kit: the parts of a host plugin that are not the math, which every example plugin
// under kernels/examples/ uses. A plugin of your own includes it (with kernels/include on the
// include path and the contract checker, kernels/api/contract.cpp, linked: CMake's
// normcheck_contract); then the only code that is yours is the two row functions.
//
// An example defines
//
//     struct my_order {
//       static constexpr const char* name = "my-order";
//       // r[i] and the row's y from fp32 x, gamma (the loads are done here, in fp32)
//       static float forward_row(std::int64_t n, const float* x, const float* gamma, float epsilon, float* y);
//       // the row's dx and its dgamma terms dy·x·r (added here, in row order)
//       static void backward_row(std::int64_t n, const float* x, const float* gamma, const float* dy, float r,
//                                float* dx, float* dgamma_term);
//     };
//     NORMCHECK_EXAMPLE_PLUGIN(my_order)
//
// and gets a complete ABI plugin: every dtype pair, any strides and offsets, every variant of
// abi.h (the residual add before the rows, in either rounding contract and in place or not,
// and gamma + weight_offset formed in fp32: a plugin declares the ones it serves; a quantized
// output in OCP E4M3 with a static scale, by its reciprocal or by division, from the row's fp32
// y: other code formats and dynamic scales are answered NC_ERR_UNSUPPORTED), the contract
// checked before anything is written (kernels/api/contract.cpp: the rules the contract
// property tests, each message naming the argument in quotes), dgamma summed over rows in
// fixed row order in a workspace of N fp32 (one row of partial sums: the smallest table the
// contract's blocks × N allows, and what a caller allocates after asking workspace_size),
// host memory for alloc/copy, and a table answering ABI versions 3 and 1.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "normcheck/contract.hpp"
#include "normcheck/abi.h"

namespace nc::example {

// ---- fp16 / bf16 <-> fp32 (round to nearest even, as a GPU's conversions do) ----

inline float f16_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16, exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0) {
    // zero or subnormal: mantissa·2^-24, exact in fp32
    const float magnitude = std::ldexp(float(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));  // Inf, NaN
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

inline std::uint16_t float_to_f16(float f) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  const auto sign = std::uint16_t((bits >> 16) & 0x8000u);
  const std::uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | 0x7e00u;  // NaN stays NaN (quiet)
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // 65520 and above round to Inf
  if (magnitude < 0x38800000u) {
    // below fp16's smallest normal 2^-14: a multiple of 2^-24; scaling by 2^24 is exact and
    // nearbyint rounds to nearest even (1024 becomes the smallest normal's encoding, as it should)
    return sign | std::uint16_t(std::nearbyint(std::fabs(f) * 0x1p24f));
  }
  // normal: drop 13 mantissa bits with round to nearest even, rebias the exponent (127 -> 15)
  const std::uint32_t rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
  return sign | std::uint16_t((rounded - 0x38000000u) >> 13);
}

inline float bf16_to_float(std::uint16_t b) { return std::bit_cast<float>(std::uint32_t(b) << 16); }

inline std::uint16_t float_to_bf16(float f) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((bits >> 16) | 0x40u);  // quiet NaN
  return std::uint16_t((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

// ---- the one-byte codes of a quantized output (abi.h "Variants", "Quantized output") ----

/// Q into OCP E4M3 ("fn": S.EEEE.MMM, bias 7, no infinities, +-448 largest, S.1111.111 NaN):
/// round to nearest even and saturate. Finite values past 448 and +-Inf give +-448, NaN the NaN
/// code, -0 the negative zero code: the codes of CUDA's __nv_cvt_float_to_fp8(v, __NV_SATFINITE,
/// __NV_E4M3) and PTX's cvt.rn.satfinite.e4m3x2.f32
inline std::uint8_t float_to_e4m3(float v) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(v);
  const std::uint32_t sign = (bits >> 24) & 0x80u, magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return 0x7fu;  // NaN: the NaN code
  const float a = std::bit_cast<float>(magnitude);
  if (a > 448.0f) return std::uint8_t(sign | 0x7eu);  // the saturation: past the largest code, +-448
  // below the smallest normal 2^-6: a count of 2^-9 quanta; scaling by 2^9 is exact and nearbyint
  // rounds to nearest even (8 quanta is the smallest normal's code, as it should be)
  if (a < 0x1p-6f) return std::uint8_t(sign | std::uint32_t(std::nearbyint(a * 0x1p9f)));
  // normal: keep fp32's exponent and the top 3 mantissa bits, rounded to nearest even (a carry
  // moves into the exponent), rebias the exponent (127 -> 7); a <= 448 ends at 448's code 0x7e
  const std::uint32_t rounded = (magnitude + 0x7ffffu + ((magnitude >> 20) & 1u)) >> 20;
  return std::uint8_t(sign | (rounded - (120u << 3)));
}

// ---- operands: element (i, j) at offset + i·row_stride + j·col_stride, counted in elements ----

inline float load(const void* data, nc_dtype t, std::int64_t index) {
  switch (t) {
    case NC_F32: {
      float v;
      std::memcpy(&v, static_cast<const char*>(data) + index * 4, 4);
      return v;
    }
    case NC_F16:
    case NC_BF16: {
      std::uint16_t v;
      std::memcpy(&v, static_cast<const char*>(data) + index * 2, 2);
      return t == NC_F16 ? f16_to_float(v) : bf16_to_float(v);
    }
    default: return NAN;  // unreachable: the contract check rejects other dtypes
  }
}

inline void store(void* data, nc_dtype t, std::int64_t index, float v) {
  if (t == NC_F32) return void(std::memcpy(static_cast<char*>(data) + index * 4, &v, 4));
  const std::uint16_t bits = t == NC_F16 ? float_to_f16(v) : float_to_bf16(v);
  std::memcpy(static_cast<char*>(data) + index * 2, &bits, 2);
}

inline std::int64_t at(const nc_matrix& a, std::int64_t i, std::int64_t j) {
  return a.offset + i * a.row_stride + j * a.col_stride;
}
/// per-head rows (abi.h NC_ROWS_HEADS): row i is head i % heads of token i / heads
inline std::int64_t at(const nc_matrix& a, std::int64_t i, std::int64_t j, std::int64_t heads, std::int64_t head_stride) {
  if (heads <= 1) return at(a, i, j);
  return a.offset + (i / heads) * a.row_stride + (i % heads) * head_stride + j * a.col_stride;
}
template <class Args>
std::int64_t heads_of(const Args& a) { return a.op.rows == NC_ROWS_HEADS ? a.head.heads : 1; }
inline std::int64_t at(const nc_vector& a, std::int64_t k) { return a.offset + k * a.stride; }

/// a code of a quantized output (y.dtype NC_FP8_E4M3, one byte an element)
inline void store_code(void* data, std::int64_t index, std::uint8_t code) { static_cast<std::uint8_t*>(data)[index] = code; }

// ---- the C ABI around an order's row functions ----

inline thread_local std::string last_error_text;

// a violation is NC_ERR_INVALID_ARGUMENT with nothing written; exceptions never cross the ABI
template <class F>
nc_status guarded(F&& f) {
  try {
    last_error_text.clear();
    return f();
  } catch (const std::exception& e) {
    last_error_text = e.what();
  } catch (...) {
    last_error_text = "unknown exception";
  }
  return NC_ERR_RUNTIME;
}

inline nc_status rejected(const nc::violation& v) {
  last_error_text = v.message;
  return NC_ERR_INVALID_ARGUMENT;
}

/// where the row an order computes lives and how big its call is, for an order whose rounding
/// follows them (a vectorized kernel's scalar head ends at the row's first 16-byte boundary; a
/// library picks its kernel by M): set before every forward_row and backward_row
struct row_place {
  std::uintptr_t x_byte = 0;      ///< the address of the row's first element of x
  std::size_t element_bytes = 4;  ///< x's element size
  bool unit_stride = true;        ///< x's columns side by side
  std::int64_t m = 0;             ///< the call's rows
};
inline thread_local row_place current_row;

inline row_place place_of(const nc_matrix& x, std::int64_t i, std::int64_t m) {
  return {reinterpret_cast<std::uintptr_t>(x.data) + std::uintptr_t(at(x, i, 0)) * nc::size_of(x.dtype),
          nc::size_of(x.dtype), x.col_stride == 1, m};
}

/// v rounded to nearest even into a dtype, back in fp32
inline float rounded(nc_dtype t, float v) {
  std::uint32_t bits = 0;
  store(&bits, t, 0, v);
  return load(&bits, t, 0);
}

/// gamma + the operation's weight offset, formed in fp32 (abi.h "Variants"; 0: gamma itself)
inline std::vector<float> offset_gamma(const nc_vector& g, std::int64_t n, float weight_offset) {
  std::vector<float> out(static_cast<std::size_t>(n));
  for (std::int64_t j = 0; j < n; ++j) out[std::size_t(j)] = load(g.data, g.dtype, at(g, j)) + weight_offset;
  return out;
}

/// a quantized output's code of q = v * (1/scale) or v / scale: the kit's Q (float_to_e4m3), or
/// the order's own conversion where it defines one (a kernel that converts its own way: a table,
/// an intrinsic), `static std::uint8_t e4m3_code(float q)`
template <class Order>
std::uint8_t e4m3_code_of(float q) {
  if constexpr (requires { Order::e4m3_code(q); }) return Order::e4m3_code(q);
  else return float_to_e4m3(q);
}

/// the quantized outputs the kit computes (E4M3 codes of a static scale); NC_OK, or
/// NC_ERR_UNSUPPORTED naming the field (a valid call: nothing is written)
inline nc_status quantization_served(const nc_operation& op) {
  if (op.quant == NC_QUANT_NONE) return NC_OK;
  if (op.quant != NC_QUANT_FP8_E4M3) {
    last_error_text = "argument 'op.quant' = " + std::to_string(int(op.quant)) +
                      ": this example writes OCP E4M3 codes only (NC_QUANT_FP8_E4M3)";
    return NC_ERR_UNSUPPORTED;
  }
  if (op.scale != NC_SCALE_STATIC) {
    last_error_text = "argument 'op.scale' = " + std::to_string(int(op.scale)) +
                      ": this example quantizes by a static scale only (NC_SCALE_STATIC)";
    return NC_ERR_UNSUPPORTED;
  }
  return NC_OK;
}

template <class Order>
nc_status forward(const nc_forward_args* a) {
  return guarded([&] {
    if (auto v = nc::check_forward(*a)) return rejected(*v);
    if (nc_status s = quantization_served(a->op); s != NC_OK) return s;
    const std::int64_t n = a->n;
    const auto size = static_cast<std::size_t>(n);
    const nc_operation& op = a->op;
    // a quantized output (2-D rows only, the contract says): the caller's static scale, an fp32
    // input of 1 x 1 (positive, normal and finite), and its reciprocal rounded to fp32
    const bool quantized = op.quant != NC_QUANT_NONE;
    const float scale = quantized ? load(a->scale.data, NC_F32, at(a->scale, 0, 0)) : 1.0f;
    const float inverse = 1.0f / scale;
    const std::int64_t heads = heads_of(*a);
    std::vector<float> x(size), y(size);
    const std::vector<float> gamma = offset_gamma(a->gamma, n, op.weight_offset);
    for (std::int64_t i = 0; i < a->m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) x[std::size_t(j)] = load(a->x.data, a->x.dtype, at(a->x, i, j, heads, a->head.x));
      if (op.residual != NC_RESIDUAL_NONE) {
        // h = x + residual in fp32 (rounded to x's dtype under the rounded contract); the row is
        // read whole before residual_out is written, so in place is safe
        for (std::int64_t j = 0; j < n; ++j) {
          const float h = x[std::size_t(j)] + load(a->residual.data, a->residual.dtype, at(a->residual, i, j, heads, a->head.residual));
          x[std::size_t(j)] = op.residual == NC_RESIDUAL_ROUNDED ? rounded(a->x.dtype, h) : h;
        }
        for (std::int64_t j = 0; j < n; ++j)
          store(a->residual_out.data, a->residual_out.dtype, at(a->residual_out, i, j, heads, a->head.residual_out), x[std::size_t(j)]);
      }
      current_row = place_of(a->x, i, a->m);
      const float r = Order::forward_row(n, x.data(), gamma.data(), a->epsilon, y.data());
      if (quantized) {
        // y's fp32 value v (never rounded to x's dtype: no NC_QUANTIZES_ROUNDED_Y), scaled in fp32,
        // then Q: q = Q(v * (1/scale)) or Q(v / scale), as op.apply says
        for (std::int64_t j = 0; j < n; ++j) {
          float v = y[std::size_t(j)];
          // an order that quantizes y rounded to x's dtype (vLLM's fused kernels: the plugin then
          // declares NC_QUANTIZES_ROUNDED_Y) says so with `static constexpr bool quantizes_rounded_y`
          if constexpr (requires { Order::quantizes_rounded_y; })
            if (Order::quantizes_rounded_y) v = rounded(a->x.dtype, v);
          const float q = op.apply == NC_APPLY_DIVIDE ? v / scale : v * inverse;
          store_code(a->y.data, at(a->y, i, j), e4m3_code_of<Order>(q));
        }
      } else {
        for (std::int64_t j = 0; j < n; ++j) store(a->y.data, a->y.dtype, at(a->y, i, j, heads, a->head.y), y[std::size_t(j)]);
      }
      store(a->r.data, NC_F32, at(a->r, i), r);
    }
    return NC_OK;
  });
}

/// the workspace: one fp32 partial sum per column (N ≥ 1 after the contract check; a size
/// past SIZE_MAX asks for SIZE_MAX, which no caller can give)
inline std::size_t workspace_bytes(std::int64_t n) {
  if (n < 1) return 0;
  return std::uint64_t(n) > SIZE_MAX / sizeof(float) ? SIZE_MAX : std::size_t(n) * sizeof(float);
}

template <class Order>
nc_status backward(const nc_backward_args* a) {
  return guarded([&] {
    if (auto v = nc::check_backward(*a, workspace_bytes(a->n))) return rejected(*v);
    const std::int64_t n = a->n;
    const auto size = static_cast<std::size_t>(n);
    std::vector<float> x(size), dy(size), dx(size), term(size);
    // dgamma's partial sums live in the caller's workspace, summed one row after the other:
    // the same order every run, so bit-identical
    float* dgamma = static_cast<float*>(a->workspace);
    std::fill(dgamma, dgamma + n, 0.0f);
    // u = dy * (gamma + offset); dgamma's terms dy*x*r have no offset
    const std::vector<float> gamma = offset_gamma(a->gamma, n, a->op.weight_offset);
    const bool along = a->op.residual != NC_RESIDUAL_NONE;
    const std::int64_t heads = heads_of(*a);
    for (std::int64_t i = 0; i < a->m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        x[std::size_t(j)] = load(a->x.data, a->x.dtype, at(a->x, i, j, heads, a->head.x));
        dy[std::size_t(j)] = load(a->dy.data, a->dy.dtype, at(a->dy, i, j, heads, a->head.dy));
      }
      const float r = load(a->r.data, NC_F32, at(a->r, i));
      current_row = place_of(a->x, i, a->m);
      Order::backward_row(n, x.data(), gamma.data(), dy.data(), r, dx.data(), term.data());
      for (std::int64_t j = 0; j < n; ++j) {
        // a residual add: dx = d_residual also carries the residual stream's gradient (fp32 sum)
        if (along) dx[std::size_t(j)] += load(a->residual_grad.data, a->residual_grad.dtype, at(a->residual_grad, i, j, heads, a->head.residual_grad));
        store(a->dx.data, a->dx.dtype, at(a->dx, i, j, heads, a->head.dx), dx[std::size_t(j)]);
        // dgamma is a sum over rows, never a mean; row order fixed, so bit-identical run to run
        dgamma[j] += term[std::size_t(j)];
      }
    }
    // M = 0 still writes dgamma: a sum over no rows is 0
    for (std::int64_t j = 0; j < n; ++j) store(a->dgamma.data, a->dgamma.dtype, at(a->dgamma, j), dgamma[j]);
    return NC_OK;
  });
}

inline nc_status workspace_size(const nc_backward_args* a, size_t* bytes) {
  *bytes = workspace_bytes(a->n);
  return NC_OK;
}

// host memory: the harness allocates and copies through these
inline nc_status alloc(size_t bytes, void** ptr) {
  *ptr = std::malloc(bytes == 0 ? 1 : bytes);
  if (*ptr == nullptr) {
    last_error_text = "out of host memory";
    return NC_ERR_RUNTIME;
  }
  return NC_OK;
}
inline nc_status free(void* ptr) {
  std::free(ptr);
  return NC_OK;
}
inline nc_status copy(void* dst, const void* src, size_t bytes, nc_copy_kind) {
  if (bytes > 0) std::memcpy(dst, src, bytes);
  return NC_OK;
}
inline nc_status synchronize() { return NC_OK; }
inline const char* last_error() { return last_error_text.c_str(); }

// the table: caps NULL (version 2) and every NC_CAP_* serving bit (version 1) both say
// "everything the contract allows"; no path functions (one path)
template <class Order>
const nc_plugin* table(std::uint32_t abi_version) {
  static const nc_plugin version_2 = [] {
    nc_plugin t{};
    t.abi_version = NORMCHECK_ABI_VERSION;
    t.name = Order::name;
    t.backend = "host";
    t.capabilities = NC_CAP_F16 | NC_CAP_BF16 | NC_CAP_GAMMA_F32 | NC_CAP_STRIDED;
    t.forward = forward<Order>;
    t.backward = backward<Order>;
    t.workspace_size = workspace_size;
    t.alloc = alloc;
    t.free = example::free;
    t.copy = copy;
    t.synchronize = synchronize;
    t.last_error = last_error;
    return t;  // forward_path, backward_path and (version 2) caps and path lists stay NULL
  }();
  static const nc_plugin version_1 = [] {
    nc_plugin t = version_2;
    t.abi_version = 1;
    return t;
  }();
  if (abi_version == NORMCHECK_ABI_VERSION) return &version_2;
  return abi_version == 1 ? &version_1 : nullptr;
}

}  // namespace nc::example

// the one symbol a plugin exports
#define NORMCHECK_EXAMPLE_PLUGIN(Order)                                                           \
  extern "C" __attribute__((visibility("default"))) const nc_plugin* normcheck_plugin(uint32_t v) { \
    return nc::example::table<Order>(v);                                                          \
  }
