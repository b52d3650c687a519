// Partial kernels: plugins that serve part of the contract and say so (abi.h ABI version 2,
// nc_capabilities), the way foreign kernels usually are. One source, one variant per build:
//
//   PARTIAL_FP32_FORWARD_ONLY  fp32 only, any layout, no backward (NC_FORWARD_ONLY)
//   PARTIAL_FP16_DENSE         fp16 with fp16 gamma only, dense operands only, forward and backward
//   PARTIAL_HALF_NO_R          fp16/bf16 with gamma in x's dtype, unit column strides (padded,
//                              aligned rows), forward only and no r: a FlashInfer-style forward
//   PARTIAL_FIXED_EPSILON      everything, but epsilon 1e-5 built in and the argument ignored
//                              (llm.c's kernel); a version-1 plugin that cannot declare it, so
//                              it passes only with `normcheck check --epsilon 1e-5`
// and the version-3 declarations (abi.h "Variants", shape rules), each also built without its
// declaration (*_UNDECLARED: the same kernel claiming the plain operator on any N), which must
// fail naming why:
//   PARTIAL_N_MULTIPLE_8       everything, N a multiple of 8 only (llm.c's 16-byte loads, no tail)
//   PARTIAL_FUSED_ADD          fp16/bf16 residual add + RMSNorm in FlashInfer's contract (the
//                              fp32 sum normalized, its rounding stored; in place or not),
//                              forward only, written from the formula
//   PARTIAL_GEMMA              Gemma's y = x_hat * (1 + gamma), 1 + gamma in fp32, forward and
//                              backward
//   PARTIAL_FLUSH_TO_ZERO      everything, computed with the host's SSE flush-to-zero and
//                              denormals-are-zero modes on (MXCSR), as a --use_fast_math build
//                              computes: fp32 subnormals read and made as 0
//   PARTIAL_PER_HEAD           a QK-norm kernel: per-head rows of [tokens, heads, N] views only
//                              (plain and Gemma's offset), forward and backward
//   PARTIAL_FP8_STATIC         vLLM's rms_norm_static_fp8_quant and, in place after the rounded
//                              residual add, its fused_add_rms_norm_static_fp8_quant: q = Q(v *
//                              (1/scale)) into OCP E4M3, one static scale an input (the variants
//                              rmsnorm_fp8_static and add_rmsnorm_fp8_static), beside the two
//                              unquantized operations (the twins that `a static scale of 1 is the
//                              plain y quantized` compares with), forward only. v is the fp32 y:
//                              vLLM's kernels round y to x's dtype first and would also declare
//                              NC_QUANTIZES_ROUNDED_Y. *_UNDECLARED declares only the two
//                              unquantized operations (the quantized ones then go untested:
//                              `check --variant rmsnorm_fp8_static` refuses, exit 64); and a
//   PARTIAL_FP8_ROUNDED_Y      PARTIAL_FP8_STATIC quantizing y rounded to x's dtype first (vLLM's
//                              kernels), declared (NC_QUANTIZES_ROUNDED_Y); *_UNDECLARED does the
//                              same without the flag, which the exact judge must fail on fp16/bf16
//   PARTIAL_FP8_STATIC_UNSATURATED  seeded defect: the declared kernel whose E4M3 conversion has
//                              lost its saturation clamp (a value past 448 rounds on into the NaN
//                              code, then wraps: the shipped kernel's mutant quant-no-saturation),
//                              which `check all --variant rmsnorm_fp8_static` must fail
//
// Each checks the contract first (an invalid call is NC_ERR_INVALID_ARGUMENT naming the
// argument, kernels/api/contract.cpp), then its declaration (a valid call outside it is
// NC_ERR_UNSUPPORTED), then computes in PyTorch's order (rstd, x̂ = x·rstd, y = x̂·γ,
// dx = rstd·(u − x̂·mean(u·x̂))). The tests run `normcheck check all` on each.
#include <numeric>

#include "normcheck/plugin_kit.hpp"
#include "../torch_order/torch_order.hpp"

#if defined(PARTIAL_FLUSH_TO_ZERO) || defined(PARTIAL_FLUSH_TO_ZERO_UNDECLARED)
#if !defined(__x86_64__)
#error "the flush-to-zero example sets x86-64's MXCSR"
#endif
#include <xmmintrin.h>
#endif

namespace {

using namespace nc::example;

constexpr float fixed_epsilon = 1e-5f;

#if defined(PARTIAL_FP32_FORWARD_ONLY)
constexpr const char* plugin_name = "partial-fp32-forward-only";
const nc_capabilities caps = {NC_PAIR_F32, NC_LAYOUTS_ALL, NC_FORWARD_ONLY, 0, nullptr, 0, 0};
#elif defined(PARTIAL_FP16_DENSE)
constexpr const char* plugin_name = "partial-fp16-dense";
const nc_capabilities caps = {NC_PAIR_F16, 0, 0, 0, nullptr, 0, 0};
#elif defined(PARTIAL_HALF_NO_R)
constexpr const char* plugin_name = "partial-half-no-r";
const nc_capabilities caps = {NC_PAIR_F16 | NC_PAIR_BF16, NC_LAYOUT_PADDED_ROWS | NC_LAYOUT_OFFSETS,
                              NC_FORWARD_ONLY | NC_NO_R, 0, nullptr, 0, 0};
#elif defined(PARTIAL_FIXED_EPSILON)
constexpr const char* plugin_name = "partial-fixed-epsilon";
#elif defined(PARTIAL_N_MULTIPLE_8) || defined(PARTIAL_N_MULTIPLE_8_UNDECLARED)
constexpr const char* plugin_name = "partial-n-multiple-8";
constexpr std::int64_t n_multiple = 8;
#ifdef PARTIAL_N_MULTIPLE_8
const nc_capabilities caps = {NC_PAIRS_ALL, NC_LAYOUTS_ALL, 0, 0, nullptr, 0, 0, 0, nullptr, n_multiple};
#else
const nc_capabilities caps = {NC_PAIRS_ALL, NC_LAYOUTS_ALL, 0, 0, nullptr, 0, 0};
#endif
#elif defined(PARTIAL_FUSED_ADD) || defined(PARTIAL_FUSED_ADD_UNDECLARED)
constexpr const char* plugin_name = "partial-fused-add";
const nc_operation fused_add_operations[] = {{NC_RESIDUAL_FP32, 0, 0.0f}, {NC_RESIDUAL_FP32, 1, 0.0f}};
#ifdef PARTIAL_FUSED_ADD
const nc_capabilities caps = {NC_PAIR_F16 | NC_PAIR_BF16, NC_LAYOUTS_ALL, NC_FORWARD_ONLY, 0, nullptr, 0, 0,
                              2, fused_add_operations, 0};
#else
const nc_capabilities caps = {NC_PAIR_F16 | NC_PAIR_BF16, NC_LAYOUTS_ALL, NC_FORWARD_ONLY, 0, nullptr, 0, 0};
#endif
#elif defined(PARTIAL_FLUSH_TO_ZERO) || defined(PARTIAL_FLUSH_TO_ZERO_UNDECLARED)
constexpr const char* plugin_name = "partial-flush-to-zero";
#ifdef PARTIAL_FLUSH_TO_ZERO
const nc_capabilities caps = {NC_PAIRS_ALL, NC_LAYOUTS_ALL, NC_FLUSHES_SUBNORMALS, 0, nullptr, 0, 0};
#else
const nc_capabilities caps = {NC_PAIRS_ALL, NC_LAYOUTS_ALL, 0, 0, nullptr, 0, 0};
#endif
#elif defined(PARTIAL_PER_HEAD) || defined(PARTIAL_PER_HEAD_UNDECLARED)
constexpr const char* plugin_name = "partial-per-head";
const nc_operation per_head_operations[] = {{NC_RESIDUAL_NONE, 0, 0.0f, NC_ROWS_HEADS}, {NC_RESIDUAL_NONE, 0, 1.0f, NC_ROWS_HEADS}};
#ifdef PARTIAL_PER_HEAD
const nc_capabilities caps = {NC_PAIRS_ALL, NC_LAYOUTS_ALL, 0, 0, nullptr, 0, 0, 2, per_head_operations, 0};
#else
const nc_capabilities caps = {NC_PAIRS_ALL, NC_LAYOUTS_ALL, 0, 0, nullptr, 0, 0};
#endif
#elif defined(PARTIAL_GEMMA) || defined(PARTIAL_GEMMA_UNDECLARED)
constexpr const char* plugin_name = "partial-gemma";
const nc_operation gemma_operations[] = {{NC_RESIDUAL_NONE, 0, 1.0f}};
#ifdef PARTIAL_GEMMA
const nc_capabilities caps = {NC_PAIRS_ALL, NC_LAYOUTS_ALL, 0, 0, nullptr, 0, 0, 1, gemma_operations, 0};
#else
const nc_capabilities caps = {NC_PAIRS_ALL, NC_LAYOUTS_ALL, 0, 0, nullptr, 0, 0};
#endif
#elif defined(PARTIAL_FP8_STATIC) || defined(PARTIAL_FP8_STATIC_UNDECLARED) || defined(PARTIAL_FP8_STATIC_UNSATURATED) || \
    defined(PARTIAL_FP8_ROUNDED_Y) || defined(PARTIAL_FP8_ROUNDED_Y_UNDECLARED)
constexpr const char* plugin_name = "partial-fp8-static";
// vLLM's four: rms_norm, fused_add_rms_norm (rounded sum, in place) and each with a static E4M3 scale
// applied by its reciprocal (vLLM's scale_inv = 1 / *scale, then x·r·gamma·scale_inv)
const nc_operation fp8_static_operations[] = {
    {NC_RESIDUAL_NONE, 0, 0.0f, NC_ROWS_MATRIX},
    {NC_RESIDUAL_ROUNDED, 1, 0.0f, NC_ROWS_MATRIX},
    {NC_RESIDUAL_NONE, 0, 0.0f, NC_ROWS_MATRIX, NC_QUANT_FP8_E4M3, NC_SCALE_STATIC, NC_APPLY_RECIPROCAL},
    {NC_RESIDUAL_ROUNDED, 1, 0.0f, NC_ROWS_MATRIX, NC_QUANT_FP8_E4M3, NC_SCALE_STATIC, NC_APPLY_RECIPROCAL}};
#if defined(PARTIAL_FP8_STATIC_UNDECLARED)
// the same kernel declaring the first two (the unquantized operations) only
const nc_capabilities caps = {NC_PAIRS_ALL, NC_LAYOUTS_ALL, NC_FORWARD_ONLY, 0, nullptr, 0, 0, 2, fp8_static_operations, 0};
#elif defined(PARTIAL_FP8_ROUNDED_Y)
// y rounded to x's dtype before it is quantized, as vLLM's kernels compute it, and declared
const nc_capabilities caps = {NC_PAIRS_ALL, NC_LAYOUTS_ALL, NC_FORWARD_ONLY | NC_QUANTIZES_ROUNDED_Y, 0, nullptr, 0, 0, 4,
                              fp8_static_operations, 0};
#else
const nc_capabilities caps = {NC_PAIRS_ALL, NC_LAYOUTS_ALL, NC_FORWARD_ONLY, 0, nullptr, 0, 0, 4, fp8_static_operations, 0};
#endif
#else
#error "define one PARTIAL_* variant"
#endif

#ifndef PARTIAL_FIXED_EPSILON
// the layout bits an operand needs (abi.h NC_LAYOUT_*): the plugin's side of the declaration
std::uint32_t needs(std::int64_t offset, std::int64_t row_stride, std::int64_t col_stride, std::int64_t n,
                    std::int64_t size) {
  std::uint32_t bits = 0;
  // elements * size is a multiple of 16 bytes when elements is a multiple of 16 / gcd(size, 16):
  // a stride or offset may be any int64 here, and the product could overflow
  const std::int64_t whole = 16 / std::gcd(size, std::int64_t(16));
  if (col_stride != 1) bits |= NC_LAYOUT_COLUMN_STRIDED;
  if (row_stride != n) bits |= row_stride % whole == 0 ? NC_LAYOUT_PADDED_ROWS : NC_LAYOUT_MISALIGNED;
  if (offset != 0) bits |= offset % whole == 0 ? NC_LAYOUT_OFFSETS : NC_LAYOUT_MISALIGNED;
  return bits;
}
std::int64_t size_of(nc_dtype t) { return std::int64_t(nc::size_of(t)); }  // 1 for a quantized y's codes
std::uint32_t needs(const nc_matrix& a, std::int64_t n) {
  return needs(a.offset, a.row_stride, a.col_stride, n, size_of(a.dtype));
}
std::uint32_t needs(const nc_vector& v) { return needs(v.offset, 1, v.stride, 1, size_of(v.dtype)); }

bool served_pair(nc_dtype x, nc_dtype gamma) {
  const std::uint32_t pair = x == NC_F32 ? (gamma == NC_F32 ? NC_PAIR_F32 : 0)
                             : x == NC_F16 ? (gamma == NC_F16 ? NC_PAIR_F16 : NC_PAIR_F16_GAMMA_F32)
                                           : (gamma == NC_BF16 ? NC_PAIR_BF16 : NC_PAIR_BF16_GAMMA_F32);
  return (caps.dtype_pairs & pair) != 0;
}

nc_status unsupported(const std::string& what) {
  last_error_text = std::string(plugin_name) + " does not serve " + what;
  return NC_ERR_UNSUPPORTED;
}

// what the kernel computes, whatever it declares: the variant it is built as (the plain
// operator for the others)
#if defined(PARTIAL_FUSED_ADD) || defined(PARTIAL_FUSED_ADD_UNDECLARED)
[[maybe_unused]] bool computes(const nc_operation& op) { return op.residual == NC_RESIDUAL_FP32 && op.weight_offset == 0.0f; }
#elif defined(PARTIAL_GEMMA) || defined(PARTIAL_GEMMA_UNDECLARED)
[[maybe_unused]] bool computes(const nc_operation& op) { return op.residual == NC_RESIDUAL_NONE && op.weight_offset == 1.0f; }
#elif defined(PARTIAL_PER_HEAD) || defined(PARTIAL_PER_HEAD_UNDECLARED)
[[maybe_unused]] bool computes(const nc_operation& op) { return op.residual == NC_RESIDUAL_NONE && op.rows == NC_ROWS_HEADS; }
#elif defined(PARTIAL_FP8_STATIC) || defined(PARTIAL_FP8_STATIC_UNDECLARED) || defined(PARTIAL_FP8_STATIC_UNSATURATED) || \
    defined(PARTIAL_FP8_ROUNDED_Y) || defined(PARTIAL_FP8_ROUNDED_Y_UNDECLARED)
// all four of vLLM's operations, declared or not (the quantization fields count only when quantized)
[[maybe_unused]] bool computes(const nc_operation& op) {
  const bool add = op.residual == NC_RESIDUAL_NONE || (op.residual == NC_RESIDUAL_ROUNDED && op.in_place == 1);
  const bool output = op.quant == NC_QUANT_NONE || (op.quant == NC_QUANT_FP8_E4M3 && op.scale == NC_SCALE_STATIC &&
                                                   op.apply == NC_APPLY_RECIPROCAL);
  return add && output && op.weight_offset == 0.0f && op.rows == NC_ROWS_MATRIX;
}
#else
[[maybe_unused]] bool computes(const nc_operation& op) {
  return op.residual == NC_RESIDUAL_NONE && op.weight_offset == 0.0f && op.rows == NC_ROWS_MATRIX;
}
#endif

// the kernel's own shape rule (none but for the N-multiple kernel), whatever it declares
#if defined(PARTIAL_N_MULTIPLE_8) || defined(PARTIAL_N_MULTIPLE_8_UNDECLARED)
bool takes_n(std::int64_t n) { return n % n_multiple == 0; }
#else
bool takes_n(std::int64_t) { return true; }
#endif

// the operation and N the kernel serves
nc_status outside_operation(const nc_operation& op, std::int64_t n) {
#if defined(PARTIAL_GEMMA_UNDECLARED)
  (void)op;  // 1 + gamma built in: every call computes Gemma's operator, whatever it asks
#else
  if (!computes(op)) return unsupported("this operation ('op')");
#endif
  if (!takes_n(n)) return unsupported("N = " + std::to_string(n) + " ('n'): N must be a multiple of 8");
  return NC_OK;
}

nc_status outside(const nc_forward_args& a) {
  if (nc_status s = outside_operation(a.op, a.n); s != NC_OK) return s;
  if (!served_pair(a.x.dtype, a.gamma.dtype)) return unsupported("this (x, gamma) dtype pair ('x', 'gamma')");
  std::uint32_t bits = needs(a.x, a.n) | needs(a.y, a.n) | needs(a.gamma);
  if (caps.flags & NC_NO_R) {
    if (a.r.data != nullptr) return unsupported("r ('r.data' must be NULL: it writes no r)");
  } else {
    bits |= needs(a.r);
  }
  if ((bits & ~caps.layouts) != 0) return unsupported("these layouts ('x', 'y', 'gamma', 'r')");
  return NC_OK;
}
#endif

// PyTorch's order (../torch_order/torch_order.hpp) under this plugin's name
struct partial_order : torch_order {
  static constexpr const char* name = plugin_name;

  static float forward_row(std::int64_t n, const float* x, const float* gamma, float epsilon, float* y) {
#ifdef PARTIAL_FIXED_EPSILON
    epsilon = fixed_epsilon;  // built in, as in llm.c: the argument is not read
#endif
    return torch_order::forward_row(n, x, gamma, epsilon, y);
  }

#if defined(PARTIAL_FP8_ROUNDED_Y) || defined(PARTIAL_FP8_ROUNDED_Y_UNDECLARED)
  static constexpr bool quantizes_rounded_y = true;  // the kit rounds y to x's dtype before Q
#endif
#ifdef PARTIAL_FP8_STATIC_UNSATURATED
  // the seeded defect: the kit's E4M3 conversion (float_to_e4m3) without its saturation clamp. A
  // value in (448, 464] still rounds to 448; past it the rounding runs on into the NaN code 0x7f
  // and then wraps through the sign bit (Inf gives 0x38, the code of 1.0)
  static std::uint8_t e4m3_code(float q) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(q), magnitude = bits & 0x7fffffffu;
    if (magnitude > 0x7f800000u || std::bit_cast<float>(magnitude) <= 448.0f) return float_to_e4m3(q);
    const std::uint32_t rounded = (magnitude + 0x7ffffu + ((magnitude >> 20) & 1u)) >> 20;
    return std::uint8_t(((bits >> 24) & 0x80u) | (rounded - (120u << 3)));
  }
#endif
};

#ifndef PARTIAL_FIXED_EPSILON
// forward without r (NC_NO_R): the row function's r is dropped
nc_status forward_no_r(const nc_forward_args* a) {
  return guarded([&] {
    // the contract's checks of r see a stand-in: this kernel has no r to check
    nc_forward_args checked = *a;
    static float stand_in;
    checked.r = {&stand_in, NC_F32, 0, 1};
    if (auto v = nc::check_forward(checked)) return rejected(*v);
    if (nc_status s = outside(*a); s != NC_OK) return s;
    std::vector<float> x(std::size_t(a->n)), gamma(std::size_t(a->n)), y(std::size_t(a->n));
    for (std::int64_t j = 0; j < a->n; ++j) gamma[std::size_t(j)] = load(a->gamma.data, a->gamma.dtype, at(a->gamma, j));
    for (std::int64_t i = 0; i < a->m; ++i) {
      for (std::int64_t j = 0; j < a->n; ++j) x[std::size_t(j)] = load(a->x.data, a->x.dtype, at(a->x, i, j));
      partial_order::forward_row(a->n, x.data(), gamma.data(), a->epsilon, y.data());
      for (std::int64_t j = 0; j < a->n; ++j) store(a->y.data, a->y.dtype, at(a->y, i, j), y[std::size_t(j)]);
    }
    return NC_OK;
  });
}

// a call under flush-to-zero (MXCSR FTZ, bit 15) and denormals-are-zero (DAZ, bit 6), restored
// after it; other builds compute with gradual underflow
struct arithmetic_mode {
#if defined(PARTIAL_FLUSH_TO_ZERO) || defined(PARTIAL_FLUSH_TO_ZERO_UNDECLARED)
  unsigned saved = _mm_getcsr();
  arithmetic_mode() { _mm_setcsr(saved | 0x8040u); }
  ~arithmetic_mode() { _mm_setcsr(saved); }
#endif
};

nc_status forward_declared(const nc_forward_args* a) {
  [[maybe_unused]] const arithmetic_mode mode;
  if (caps.flags & NC_NO_R) return forward_no_r(a);
  if (auto v = nc::check_forward(*a)) return rejected(*v);
  if (nc_status s = outside(*a); s != NC_OK) return s;
#if defined(PARTIAL_GEMMA_UNDECLARED)
  nc_forward_args gemma = *a;
  gemma.op.weight_offset = 1.0f;  // built in
  return forward<partial_order>(&gemma);
#else
  return forward<partial_order>(a);
#endif
}

nc_status backward_declared(const nc_backward_args* a) {
  [[maybe_unused]] const arithmetic_mode mode;
  if (auto v = nc::check_backward(*a, 0)) return rejected(*v);
  if (nc_status s = outside_operation(a->op, a->n); s != NC_OK) return s;
  if (!served_pair(a->x.dtype, a->gamma.dtype)) return unsupported("this (x, gamma) dtype pair ('x', 'gamma')");
  const std::uint32_t bits = needs(a->x, a->n) | needs(a->dy, a->n) | needs(a->dx, a->n) | needs(a->gamma) |
                             needs(a->dgamma) | needs(a->r);
  if ((bits & ~caps.layouts) != 0) return unsupported("these layouts ('x', 'dy', 'dx', 'gamma', 'dgamma', 'r')");
#if defined(PARTIAL_GEMMA_UNDECLARED)
  nc_backward_args gemma = *a;
  gemma.op.weight_offset = 1.0f;  // built in
  return backward<partial_order>(&gemma);
#else
  return backward<partial_order>(a);
#endif
}
#endif

}  // namespace

extern "C" __attribute__((visibility("default"))) const nc_plugin* normcheck_plugin(uint32_t version) {
#ifdef PARTIAL_FIXED_EPSILON
  // version 1 cannot say "epsilon 1e-5 only": the user pins it with --epsilon
  static const nc_plugin table = [] {
    nc_plugin t = *nc::example::table<partial_order>(1);
    return t;
  }();
  return version == 1 ? &table : nullptr;
#else
  static const nc_plugin table = [] {
    nc_plugin t = *nc::example::table<partial_order>(NORMCHECK_ABI_VERSION);
    t.capabilities = 0;  // host memory; what it serves is in caps
    t.forward = forward_declared;
    const bool forward_only = (caps.flags & NC_FORWARD_ONLY) != 0;
    t.backward = forward_only ? nullptr : backward_declared;
    t.workspace_size = forward_only ? nullptr : t.workspace_size;
    t.caps = &caps;
    return t;
  }();
  return version == NORMCHECK_ABI_VERSION ? &table : nullptr;
#endif
}
