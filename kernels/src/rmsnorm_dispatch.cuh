// Host side of the shipped kernels: pick a path for a call, size the grid and the
// dgamma workspace, and launch. Compiled once per backend (nvcc for cuda, the host
// compiler for simt), from this same source.
//
// Paths (path_table.hpp: the first whose preconditions hold; sizes in 16-byte vectors per row):
//   forward   vector-warp      a warp per row, x held in registers              <= 256
//             vector-block128  128 threads per row, x in registers              <= 1024
//             vector-block512  512 threads per row, x in registers              <= 4096
//             vector-block1024 1024 threads per row, x in registers             <= 8192
//             vector-reload    1024 threads per row, x read twice               longer rows
//             strided-warp / strided-block   any layout (N <= 1024 / longer); a small
//                              call's rows (up to 1024 / 4096 elements) held in registers
//   quantized forward (a code output): vector-warp (<= 256), vector-block128 (<= 1024),
//             vector-block256 (<= 2048), vector-block512 (<= 4096), x in registers;
//             strided-warp / strided-block otherwise
//   backward  vector-warp (<= 128), vector-block128 (<= 512), vector-block256 (<= 1024),
//             vector-block512 (<= 4096), x and dy in registers with the next row read
//             ahead up to 4 vectors a thread; longer rows of vector-block512 hold fp32 in
//             registers and read 16-bit twice; else strided-warp / strided-block
//             (registers as the forward's).
//             A small call is one launch without workspace (one_launch_backward).
// Each vector path gives a thread 4 to 8 vectors where the row allows: that many 16-byte
// loads in flight per thread is what keeps HBM busy at this occupancy.
// The vector paths need every operand unit-stride with 16-byte aligned rows and N a
// multiple of the vector width. A path depends on N and the layout, never on M, so a
// row computes the same bits wherever it sits and however many rows come with it (M
// picks only how dgamma is summed).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <type_traits>

#include "normcheck/contract.hpp"
#include "normcheck/path_table.hpp"
#include "normcheck/variant.hpp"
#include "launch.cuh"
#include "rmsnorm_backward.cuh"
#include "rmsnorm_dgamma.cuh"
#include "rmsnorm_forward.cuh"
#include "rmsnorm_quantize.cuh"

namespace nc {

template <class T> struct type_tag { using type = T; };

// the storage type pairs the kernels serve: X(x's dtype, gamma's dtype, T, G)
#define NC_STORAGE_TYPE_PAIRS(X)                                                            \
  X(NC_F32, NC_F32, float, float) X(NC_F16, NC_F16, __half, __half) X(NC_F16, NC_F32, __half, float) \
  X(NC_BF16, NC_BF16, __nv_bfloat16, __nv_bfloat16) X(NC_BF16, NC_F32, __nv_bfloat16, float)

// calls f(type_tag<T>{}, type_tag<G>{}) for the storage types of x and gamma
template <class F>
nc_status with_types(nc_dtype x, nc_dtype gamma, F&& f) {
#define NC_TYPE_PAIR_CALL(XD, GD, T, G) \
  if (x == XD && gamma == GD) return f(type_tag<T>{}, type_tag<G>{});
  NC_STORAGE_TYPE_PAIRS(NC_TYPE_PAIR_CALL)
#undef NC_TYPE_PAIR_CALL
  set_last_error("no kernel for x " + std::string(dtype_name(x)) + " with gamma " + dtype_name(gamma));
  return NC_ERR_UNSUPPORTED;
}

inline bool supported_types(nc_dtype x, nc_dtype gamma) {
  return (x == NC_F32 || x == NC_F16 || x == NC_BF16) && (gamma == x || gamma == NC_F32);
}

inline bool aligned16(const void* data, std::int64_t offset, std::size_t size) {
  return (reinterpret_cast<std::uintptr_t>(data) + std::uintptr_t(offset) * size) % 16 == 0;
}

// the rows of a call: heads per token and tokens per batch ({1, 0}: 2-D rows)
template <class H>
row_shape rows_of(const nc_operation& op, const H& head) {
  return op.rows == NC_ROWS_HEADS     ? row_shape{head.heads, 0}
         : op.rows == NC_ROWS_BATCHES ? row_shape{head.heads, head.tokens}
                                      : row_shape{1, 0};
}
// an operand's steps: its row stride, and the head and batch strides its rows read
inline row_step step_of(const nc_matrix& a, row_shape rows, std::int64_t head_stride, std::int64_t batch_stride) {
  return {a.row_stride, rows.heads > 1 ? head_stride : 0, rows.tokens > 0 ? batch_stride : 0};
}

// step: a per-head view's head and batch strides (0: 2-D rows), whose every row start must be
// aligned too
inline bool vector_matrix(const nc_matrix& a, std::int64_t n, std::size_t size, row_step step = {}) {
  const std::int64_t width = 16 / std::int64_t(size);
  // row_stride % width, not (row_stride * size) % 16: the stride of a single row may be any int64
  return a.col_stride == 1 && n % width == 0 && aligned16(a.data, a.offset, size) && a.row_stride % width == 0 &&
         step.head % width == 0 && step.batch % width == 0;
}

inline bool vector_gamma(const nc_vector& g) {
  return (g.stride == 1) && aligned16(g.data, g.offset, dtype_size(g.dtype));
}

// a residual add's operands take the vector path only when they are fit for it too
inline bool adds_residual(const nc_operation& op) { return op.residual != NC_RESIDUAL_NONE; }

// a quantized output's vector path (rmsnorm_quantize.cuh forward_quantized_vector): x, the
// residual operands and gamma as the plain vector paths take them, the codes unit-stride on W
// bytes (W = x's vector width), a row within quantized_vector_paths, and a per-group scale's
// group a power-of-two count of vectors up to a warp's 32
inline std::optional<path> quantized_vector_path(const nc_forward_args& a) {
  const std::size_t size = dtype_size(a.x.dtype);
  const std::int64_t width = 16 / std::int64_t(size), vectors = a.n / width;
  const auto codes_fit = [&] {
    return a.y.col_stride == 1 && (reinterpret_cast<std::uintptr_t>(a.y.data) + std::uintptr_t(a.y.offset)) % width == 0 &&
           a.y.row_stride % width == 0;
  };
  const auto group_fits = [&] {
    if (a.op.scale != NC_SCALE_PER_GROUP) return true;
    const std::int64_t lanes = a.op.group / width;
    return a.op.group % width == 0 && lanes >= 1 && lanes <= 32 && (lanes & (lanes - 1)) == 0;
  };
  const bool residual_fits = !adds_residual(a.op) || (vector_matrix(a.residual, a.n, size) &&
                                                       vector_matrix(a.residual_out, a.n, size));
  if (!(vector_matrix(a.x, a.n, size) && vector_gamma(a.gamma) && residual_fits && codes_fit() && group_fits()))
    return std::nullopt;
  for (const path_limit& p : quantized_vector_paths)
    if (vectors <= p.max_vectors) return p.choice;
  return std::nullopt;
}

inline path forward_path(const nc_forward_args& a) {
  // a quantized output: forward_quantized_vector where it fits, else forward_quantized, which
  // reads any layout (rmsnorm_quantize.cuh)
  if (quantizes(a.op)) {
    if (const std::optional<path> p = quantized_vector_path(a)) return *p;
    return a.n <= strided_warp_max_n ? path::strided_warp : path::strided_block;
  }
  const std::size_t size = dtype_size(a.x.dtype);
  const row_shape rows = rows_of(a.op, a.head);
  const nc_forward_heads& h = a.head;
  const bool residual_fits =
      !adds_residual(a.op) ||
      (vector_matrix(a.residual, a.n, size, step_of(a.residual, rows, h.residual, h.batch.residual)) &&
       vector_matrix(a.residual_out, a.n, size, step_of(a.residual_out, rows, h.residual_out, h.batch.residual_out)));
  if (vector_matrix(a.x, a.n, size, step_of(a.x, rows, h.x, h.batch.x)) &&
      vector_matrix(a.y, a.n, size, step_of(a.y, rows, h.y, h.batch.y)) && vector_gamma(a.gamma) && residual_fits) {
    const std::int64_t vectors = a.n / (16 / std::int64_t(size));
    for (const path_limit& p : forward_vector_paths)
      if (p.max_vectors == 0 || vectors <= p.max_vectors) return p.choice;
  }
  return a.n <= strided_warp_max_n ? path::strided_warp : path::strided_block;
}

inline path backward_path(const nc_backward_args& a) {
  const std::size_t size = dtype_size(a.x.dtype);
  const row_shape rows = rows_of(a.op, a.head);
  const nc_backward_heads& h = a.head;
  if (vector_matrix(a.x, a.n, size, step_of(a.x, rows, h.x, h.batch.x)) &&
      vector_matrix(a.dy, a.n, size, step_of(a.dy, rows, h.dy, h.batch.dy)) &&
      vector_matrix(a.dx, a.n, size, step_of(a.dx, rows, h.dx, h.batch.dx)) && vector_gamma(a.gamma) &&
      (!adds_residual(a.op) ||
       vector_matrix(a.residual_grad, a.n, size, step_of(a.residual_grad, rows, h.residual_grad, h.batch.residual_grad)))) {
    const std::int64_t vectors = a.n / (16 / std::int64_t(size));
    for (const path_limit& p : backward_vector_paths)
      if (vectors <= p.max_vectors) return p.choice;
  }
  return a.n <= strided_warp_max_n ? path::strided_warp : path::strided_block;
}

// A small call (launch.cuh) keeps its strided rows in registers; the same arithmetic in
// another build, so a row gives the same bits either way
inline bool small_call(std::int64_t m, std::int64_t n) { return n >= 1 && m <= small_call_elements / n; }

template <class K>
nc_status launch_rows(K kernel, int rt, std::int64_t m, void* stream, const char* what,
                      auto params) {
  const int threads = rt < 128 ? 128 : rt;
  const std::int64_t rows = threads / rt;
  const std::int64_t grid = std::min((m + rows - 1) / rows, forward_grid_cap);
  return launch(kernel, dim3(unsigned(grid)), dim3(unsigned(threads)), stream, what, params);
}

// the forward of one residual mode (ADD: an nc_residual)
template <class T, class G, int ADD>
nc_status forward_built(const nc_forward_args& a, const forward_params<T, G>& p);

template <class T, class G>
nc_status forward_quantized_typed(const nc_forward_args& a, const forward_params<T, G>& f);

template <class T, class G>
nc_status forward_typed(const nc_forward_args& a) {
  if (a.m == 0) return NC_OK;
  const row_shape rows = rows_of(a.op, a.head);
  const nc_forward_heads& h = a.head;
  forward_params<T, G> p{a.m, a.n, rows, a.epsilon,
                         static_cast<const T*>(a.x.data) + a.x.offset, step_of(a.x, rows, h.x, h.batch.x), a.x.col_stride,
                         static_cast<const G*>(a.gamma.data) + a.gamma.offset, a.gamma.stride,
                         static_cast<T*>(a.y.data) + a.y.offset, step_of(a.y, rows, h.y, h.batch.y), a.y.col_stride,
                         static_cast<float*>(a.r.data) + a.r.offset, a.r.stride};
  p.offset = a.op.weight_offset;
  if (adds_residual(a.op)) {
    p.res = static_cast<const T*>(a.residual.data) + a.residual.offset;
    p.res_row = step_of(a.residual, rows, h.residual, h.batch.residual), p.res_col = a.residual.col_stride;
    p.res_out = static_cast<T*>(a.residual_out.data) + a.residual_out.offset;
    p.res_out_row = step_of(a.residual_out, rows, h.residual_out, h.batch.residual_out);
    p.res_out_col = a.residual_out.col_stride;
  }
  if (quantizes(a.op)) return forward_quantized_typed<T, G>(a, p);
  if (!adds_residual(a.op)) return forward_built<T, G, NC_RESIDUAL_NONE>(a, p);
  return a.op.residual == NC_RESIDUAL_ROUNDED ? forward_built<T, G, NC_RESIDUAL_ROUNDED>(a, p)
                                              : forward_built<T, G, NC_RESIDUAL_FP32>(a, p);
}

template <class T, class G, int ADD>
nc_status forward_built(const nc_forward_args& a, const forward_params<T, G>& p) {
  const path choice = forward_path(a);
  const char* what = path_name(choice);
  // a register path keeps up to 8 vectors of x a thread. Rows of warps and 128-thread blocks
  // that need 4 or fewer take the 4-vector build, which also keeps gamma in registers
  // (rmsnorm_forward.cuh); for 512 and 1024 threads its extra registers would halve the
  // blocks an SM holds (H200, 8192x16384 fp16: 71% of copy instead of 97%)
  const std::int64_t vectors = a.n / vector_width<T>;
  auto registers = [&](auto four, auto eight, int rt) {
    return vectors <= 4 * rt ? launch_rows(four, rt, a.m, a.stream, what, p)
                             : launch_rows(eight, rt, a.m, a.stream, what, p);
  };
  switch (choice) {
    case path::vector_warp: return registers(forward_vector<T, G, 32, 4, ADD>, forward_vector<T, G, 32, 8, ADD>, 32);
    case path::vector_block128: return registers(forward_vector<T, G, 128, 4, ADD>, forward_vector<T, G, 128, 8, ADD>, 128);
    case path::vector_block512: return launch_rows(forward_vector<T, G, 512, 8, ADD>, 512, a.m, a.stream, what, p);
    case path::vector_block1024: return launch_rows(forward_vector<T, G, 1024, 8, ADD>, 1024, a.m, a.stream, what, p);
    case path::vector_reload: return launch_rows(forward_vector<T, G, 1024, 0, ADD>, 1024, a.m, a.stream, what, p);
    // a small call's strided rows of up to 8, 16 or 32 (256 threads: 16) elements a thread stay
    // in registers, in the smallest build that holds the row
    case path::strided_warp:
      if (!small_call(a.m, a.n)) return launch_rows(forward_strided<T, G, 32, 0, ADD>, 32, a.m, a.stream, what, p);
      return a.n <= 32 * 8    ? launch_rows(forward_strided<T, G, 32, 8, ADD>, 32, a.m, a.stream, what, p)
             : a.n <= 32 * 16 ? launch_rows(forward_strided<T, G, 32, 16, ADD>, 32, a.m, a.stream, what, p)
                              : launch_rows(forward_strided<T, G, 32, 32, ADD>, 32, a.m, a.stream, what, p);
    default:
      return small_call(a.m, a.n) ? launch_rows(forward_strided<T, G, 256, 16, ADD>, 256, a.m, a.stream, what, p)
                                  : launch_rows(forward_strided<T, G, 256, 0, ADD>, 256, a.m, a.stream, what, p);
  }
}

// a quantized output (2-D rows): a warp a row up to strided_warp_max_n, else 256 threads
template <class T, class G>
nc_status forward_quantized_typed(const nc_forward_args& a, const forward_params<T, G>& f) {
  const quantize_params<T, G> p{f,
                                static_cast<std::uint8_t*>(a.y.data) + a.y.offset, a.y.row_stride, a.y.col_stride,
                                static_cast<float*>(a.scale.data) + a.scale.offset, a.scale.row_stride,
                                a.scale.col_stride,
                                int(a.op.scale), a.op.apply == NC_APPLY_DIVIDE ? 1 : 0, int(a.op.residual),
                                std::int64_t(a.op.group), a.op.scale_floor};
  const path choice = forward_path(a);
  const char* what = path_name(choice);
  // the kernels of one code format: 32 to 512 threads a row by 16-byte vectors, each with and
  // without a residual (the registers a build does not need would cost blocks an SM), warps
  // and 128 threads in a build for rows of up to 4 vectors a thread and one for 8, 256 and
  // 512 threads for 8 (as forward_built's 512); or strided
  const std::int64_t vectors = a.n / vector_width<T>;
  auto vector_rows = [&](auto format, auto rt, auto add) {
    constexpr code_format F = decltype(format)::value;
    constexpr int RT = decltype(rt)::value;
    constexpr bool ADD = decltype(add)::value;
    if constexpr (RT <= 128)
      if (vectors <= 4 * RT) return launch_rows(forward_quantized_vector<T, G, F, RT, 4, ADD>, RT, a.m, a.stream, what, p);
    return launch_rows(forward_quantized_vector<T, G, F, RT, 8, ADD>, RT, a.m, a.stream, what, p);
  };
  auto vector_path = [&](auto format, auto rt) {
    return adds_residual(a.op) ? vector_rows(format, rt, std::true_type{}) : vector_rows(format, rt, std::false_type{});
  };
  auto launch_format = [&](auto format) {
    constexpr code_format F = decltype(format)::value;
    switch (choice) {
      case path::vector_warp: return vector_path(format, std::integral_constant<int, 32>{});
      case path::vector_block128: return vector_path(format, std::integral_constant<int, 128>{});
      case path::vector_block256: return vector_path(format, std::integral_constant<int, 256>{});
      case path::vector_block512: return vector_path(format, std::integral_constant<int, 512>{});
      case path::strided_warp: return launch_rows(forward_quantized<T, G, F, 32>, 32, a.m, a.stream, what, p);
      default: return launch_rows(forward_quantized<T, G, F, 256>, 256, a.m, a.stream, what, p);
    }
  };
  switch (a.op.quant) {
    case NC_QUANT_FP8_E4M3: return launch_format(std::integral_constant<code_format, code_format::e4m3>{});
    case NC_QUANT_FP8_E5M2: return launch_format(std::integral_constant<code_format, code_format::e5m2>{});
    default: return launch_format(std::integral_constant<code_format, code_format::int8>{});
  }
}

// NC_QUANTIZED_ELSEWHERE: the quantized forward's kernels are built by another translation unit
// (kernels/cuda/quantize.cu instantiates forward_quantized_typed), so a build of the plugin
// compiles the two on two cores
#if defined(NC_QUANTIZED_ELSEWHERE)
#define NC_QUANTIZED_EXTERN(XD, GD, T, G) \
  extern template nc_status forward_quantized_typed<T, G>(const nc_forward_args&, const forward_params<T, G>&);
NC_STORAGE_TYPE_PAIRS(NC_QUANTIZED_EXTERN)
#undef NC_QUANTIZED_EXTERN
#endif

// the backward kernel a path runs (every build has the same signature)
template <class T, class G>
using backward_kernel = void (*)(backward_params<T, G>);

// a backward path's block: row slots of rt threads. The 128- and 256-thread rows share
// 512-thread blocks, so a block's slots add their dgamma partials into one row of the table
// (four or two times fewer rows to write and read than a block a slot)
struct backward_shape {
  int rt, rows;
};

inline backward_shape shape_of(path choice) {
  switch (choice) {
    case path::vector_warp: case path::strided_warp: return {32, 4};
    case path::vector_block128: return {128, 4};
    case path::vector_block256: return {256, 2};
    case path::vector_block512: return {512, 1};
    default: return {256, 1};
  }
}

// The vector builds of up to 4 vectors a thread hold x and dy in registers and read a slot's
// next row while they compute this one (hold::pipelined), but for 16-bit vector-block128
// rows: pipelined, their build takes the 128 registers a thread of 512 may have and spills,
// so they hold one row (hold::registers). Rows of vector-block512 with more hold their 8
// vectors in registers too when x is fp32 (8 x 4 dgamma partials beside them fit one
// 512-thread block an SM) and read them again when 16-bit (8 x 8 would not)
template <class T, class G>
backward_kernel<T, G> backward_build(path choice, std::int64_t m, std::int64_t n) {
  const bool registers = small_call(m, n);
  constexpr hold wide = sizeof(T) == 4 ? hold::registers : hold::reread;
  constexpr hold block128 = sizeof(T) == 4 ? hold::pipelined : hold::registers;
  switch (choice) {
    case path::vector_warp: return backward_vector<T, G, 32, 4, 4, hold::pipelined>;
    case path::vector_block128: return backward_vector<T, G, 128, 4, 4, block128>;
    case path::vector_block256: return backward_vector<T, G, 256, 2, 4, hold::pipelined>;
    case path::vector_block512:
      return n / vector_width<T> <= 512 * 4 ? backward_vector<T, G, 512, 1, 4, hold::pipelined>
                                            : backward_vector<T, G, 512, 1, 8, wide>;
    // a small call's rows of up to 8, 16 or 32 (256 threads: 16) elements a thread stay in registers
    case path::strided_warp:
      return !registers     ? backward_strided<T, G, 32, 0>
             : n <= 32 * 8  ? backward_strided<T, G, 32, 8>
             : n <= 32 * 16 ? backward_strided<T, G, 32, 16>
                            : backward_strided<T, G, 32, 32>;
    default: return registers ? backward_strided<T, G, 256, 16> : backward_strided<T, G, 256, 0>;
  }
}

// A small call of M <= 256 rows is one backward launch with no workspace: row blocks for dx,
// then column blocks for dgamma (column_dgamma). Any other call has a persistent grid of row
// blocks writing the partial table, then dgamma_reduce. Both run the same dx code.
inline bool one_launch_backward(std::int64_t m, std::int64_t n) { return m <= 256 && small_call(m, n); }

// the backward grid and its dgamma partial table, for a call's m, n and layout
template <class T, class G>
struct backward_plan {
  path choice;
  backward_kernel<T, G> kernel;
  int threads;              // a block
  std::int64_t row_blocks;  // the blocks that take rows
  std::int64_t grid;        // row blocks, then column blocks on the one-launch backward
  std::int64_t slots;       // rows of the partial table; 0: none (one launch)
};

template <class T, class G>
backward_plan<T, G> plan_backward(const nc_backward_args& a) {
  const path choice = backward_path(a);
  const backward_shape shape = shape_of(choice);
  const int threads = shape.rt * shape.rows;
  const std::int64_t rows = shape.rows;
  const backward_kernel<T, G> kernel = backward_build<T, G>(choice, a.m, a.n);
  if (one_launch_backward(a.m, a.n)) {
    const std::int64_t row_blocks = (a.m + rows - 1) / rows;
    const std::int64_t columns = threads / column_slices;
    return {choice, kernel, threads, row_blocks, row_blocks + (a.n + columns - 1) / columns, 0};
  }
  const std::int64_t resident = std::max<std::int64_t>(resident_blocks(kernel, threads), 1);
  // the planner runs before the contract's checks (the workspace rule needs the plan): any m >= 0,
  // so its blocks are counted without m + rows - 1, which overflows past 2^63 - rows
  const std::int64_t grid = std::min(a.m / rows + (a.m % rows != 0), resident);
  // a vector block writes one row of the table, a strided one a row per slot
  const bool vector = choice != path::strided_warp && choice != path::strided_block;
  return {choice, kernel, threads, grid, grid, vector ? grid : grid * rows};
}

// SIZE_MAX when the table would not fit in size_t: no workspace satisfies that call. A plan
// without a table (one launch, or M = 0) needs none, whatever N is
template <class T, class G>
std::size_t partial_bytes(const backward_plan<T, G>& plan, std::int64_t n) {
  if (plan.slots == 0) return 0;
  const std::size_t per_slot_limit = SIZE_MAX / sizeof(float) / std::size_t(plan.slots);
  if (std::size_t(n) > per_slot_limit) return SIZE_MAX;
  return std::size_t(plan.slots) * std::size_t(n) * sizeof(float);
}

// an operand's first element. An empty operand (the row operands at M = 0) keeps its pointer
// as given: it may be null, and its offset is checked by no rule (it places no element), so
// its pointer plus that offset may be no address at all (undefined even when nothing is read)
template <class T>
T* first_element(void* data, std::int64_t offset, std::int64_t elements) {
  return elements == 0 ? static_cast<T*>(data) : static_cast<T*>(data) + offset;
}

template <class T, class G>
nc_status backward_typed(const nc_backward_args& a, const backward_plan<T, G>& plan) {
  float* partial = plan.slots > 0 ? static_cast<float*>(a.workspace) : nullptr;
  G* dgamma = static_cast<G*>(a.dgamma.data) + a.dgamma.offset;
  const row_shape rows = rows_of(a.op, a.head);
  const nc_backward_heads& h = a.head;
  const backward_params<T, G> p{a.m, a.n, rows,
                                first_element<const T>(a.x.data, a.x.offset, a.m), step_of(a.x, rows, h.x, h.batch.x), a.x.col_stride,
                                first_element<const G>(a.gamma.data, a.gamma.offset, a.n), a.gamma.stride,
                                first_element<const T>(a.dy.data, a.dy.offset, a.m), step_of(a.dy, rows, h.dy, h.batch.dy), a.dy.col_stride,
                                first_element<const float>(a.r.data, a.r.offset, a.m), a.r.stride,
                                first_element<T>(a.dx.data, a.dx.offset, a.m), step_of(a.dx, rows, h.dx, h.batch.dx), a.dx.col_stride,
                                plan.row_blocks, partial, dgamma, a.dgamma.stride,
                                a.op.weight_offset,
                                adds_residual(a.op) ? first_element<const T>(a.residual_grad.data, a.residual_grad.offset, a.m)
                                                    : nullptr,
                                step_of(a.residual_grad, rows, h.residual_grad, h.batch.residual_grad),
                                a.residual_grad.col_stride};
  const nc_status s = launch(plan.kernel, dim3(unsigned(plan.grid)), dim3(unsigned(plan.threads)), a.stream,
                            path_name(plan.choice), p);
  if (s != NC_OK || plan.slots == 0) return s;  // one launch: its column blocks wrote dgamma
  const dgamma_params<G> d{a.n, plan.slots, partial, dgamma, a.dgamma.stride};
  const dim3 grid(unsigned((a.n + dgamma_columns - 1) / dgamma_columns));
  return launch(dgamma_reduce<G>, grid, dim3(dgamma_columns * dgamma_slices), a.stream, "dgamma-reduce", d);
}

// ---- the entry points every backend's plugin table points at ----

inline nc_status workspace_size(const nc_backward_args& a, std::size_t* bytes) {
  *bytes = 0;
  if (a.m < 0 || a.n < 1) {
    set_last_error("workspace_size: argument 'm' = " + std::to_string(a.m) + ", 'n' = " + std::to_string(a.n) +
                   ": need m >= 0 and n >= 1");
    return NC_ERR_INVALID_ARGUMENT;
  }
  if (one_launch_backward(a.m, a.n)) return NC_OK;  // no table, and no device query
  return with_types(a.x.dtype, a.gamma.dtype, [&](auto t, auto g) {
    using T = typename decltype(t)::type;
    using G = typename decltype(g)::type;
    *bytes = partial_bytes(plan_backward<T, G>(a), a.n);
    return NC_OK;
  });
}

// A thread keeps the last layout it found valid (contract.hpp contract_memo): a model's every
// step calls with the same shapes, so most calls are judged by the pointer rules alone
inline nc_status forward(const nc_forward_args& a) {
  thread_local contract_memo<nc_forward_args> memo;
  if (auto v = check_forward(a, memo)) {
    set_last_error(v->message);
    return NC_ERR_INVALID_ARGUMENT;
  }
  return with_types(a.x.dtype, a.gamma.dtype, [&](auto t, auto g) {
    return forward_typed<typename decltype(t)::type, typename decltype(g)::type>(a);
  });
}

inline nc_status backward(const nc_backward_args& a) {
  // the workspace rule needs the plan; a call too broken to plan fails an earlier rule
  const auto reject = [](const std::optional<violation>& v) {
    set_last_error(v->message);
    return NC_ERR_INVALID_ARGUMENT;
  };
  if (!(a.m >= 0 && a.n >= 1 && supported_types(a.x.dtype, a.gamma.dtype))) {
    if (auto v = check_backward(a, 0)) return reject(v);
  }
  return with_types(a.x.dtype, a.gamma.dtype, [&](auto t, auto g) {
    using T = typename decltype(t)::type;
    using G = typename decltype(g)::type;
    const backward_plan<T, G> plan = plan_backward<T, G>(a);
    const std::size_t needed = partial_bytes(plan, a.n);
    thread_local contract_memo<nc_backward_args> memo;
    if (auto v = check_backward(a, needed, memo)) return reject(v);
    return backward_typed<T, G>(a, plan);
  });
}

}  // namespace nc
