// simt: the built-ins of kernels/src/platform.cuh for a host compiler, so that the
// CUDA kernel source runs on the CPU with GPU semantics (precedent: Numba's CUDA
// simulator). This is how CI, which has no GPU, exercises the real kernels.
//
// Execution model. launch() runs a grid block by block. The threads of a block are
// fibers on one OS thread. A fiber runs until it reaches a sync point (__syncthreads or
// a warp shuffle) or exits; then the next ready fiber runs. When no fiber is ready the
// scheduler resolves the waits: a shuffle is released once every lane of its mask waits
// at a shuffle of the same kind, mask and width (values are exchanged, then all go on);
// a barrier once every thread of the block waits at the same __syncthreads. Whatever
// cannot be resolved (a barrier that some threads skip, a shuffle naming an exited lane,
// a cycle of waits) ends the launch with a simt::fault that names what each thread
// waits on: the emulator never hangs on a wait and never guesses. (Fibers are
// cooperative, so a thread that loops forever without a sync point still hangs.)
//
// Where CUDA leaves behaviour undefined the emulator faults rather than imitate one
// chip: a barrier needs every thread of the block, none exited, at one __syncthreads
// call site; a shuffle needs every lane of its mask alive and may read only lanes of
// its mask.
//
// Invariant behind __shared__: all fibers of a block run on one OS thread, and an OS
// thread runs one block at a time, from its first fiber's start to its last fiber's
// exit. So __shared__ is `static thread_local`: one copy per OS thread is one copy per
// running block. As on a GPU, its contents at block start are unspecified (here: what
// the previous block on that OS thread left). Dynamic shared memory (extern __shared__)
// has no equivalent and does not compile.
//
// Blocks are spread over a small pool of OS threads (NORMCHECK_SIMT_THREADS, default the
// hardware concurrency; 1 runs every block inline on the caller). A block's result does
// not depend on the OS thread that runs it. set_schedule() picks the order in which the
// ready fibers run: thread-index order (seed 0, the default) or a seeded random order at
// every round, which exposes a missing __syncthreads between a shared-memory write and a
// read that index order happens to hide.
//
// The sync points are out-of-line calls into runtime.cpp: the compiler must assume they
// read and write any memory, so shared-memory stores are not kept in registers across
// them, exactly as a barrier requires.
#pragma once

#include <math.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

// ---- built-in types -------------------------------------------------------------------

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
};

struct alignas(16) uint4 {
  unsigned x, y, z, w;
};

struct __half {
  std::uint16_t bits;
};

struct __nv_bfloat16 {
  std::uint16_t bits;
};

static_assert(sizeof(__half) == 2 && alignof(__half) == 2 && std::is_standard_layout_v<__half> &&
              std::is_trivially_copyable_v<__half>);
static_assert(sizeof(__nv_bfloat16) == 2 && alignof(__nv_bfloat16) == 2 &&
              std::is_standard_layout_v<__nv_bfloat16> &&
              std::is_trivially_copyable_v<__nv_bfloat16>);

inline constexpr int warpSize = 32;

// each runtime linked into a plugin stays private to that plugin: two plugins loaded
// into one harness never share (or interpose) each other's scheduler state
#pragma GCC visibility push(hidden)
namespace simt {

// a kernel-side error: divergence, deadlock, misaligned access, an index past a fixed-size
// array (NORMCHECK_SIMT_BOUNDS, runtime.cpp), a thread's exception
class fault : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// what threadIdx, blockIdx, blockDim and gridDim read
struct thread_context {
  dim3 thread_idx;
  dim3 block_idx;
  dim3 block_dim;
  dim3 grid_dim;
};

namespace detail {

// the running fiber's context; null outside a kernel
extern constinit thread_local const thread_context* current;

enum class shuffle_op : std::uint8_t { idx, down, bfly };

void sync_threads(const char* file, unsigned line);
std::uint64_t shuffle(shuffle_op op, unsigned mask, std::uint64_t bits, unsigned size, int lane_arg,
                      int width, const char* file, unsigned line);
[[noreturn]] void raise_misaligned(const void* p, std::size_t bytes);

using kernel_invoker = void (*)(const void* closure);
void launch(kernel_invoker invoke, const void* closure, dim3 grid, dim3 block);

template <class T>
concept shuffle_value = std::is_trivially_copyable_v<T> && sizeof(T) <= 8;

template <shuffle_value T>
T shuffle_as(shuffle_op op, unsigned mask, T var, int lane_arg, int width, const char* file,
             unsigned line) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &var, sizeof(T));
  bits = shuffle(op, mask, bits, sizeof(T), lane_arg, width, file, line);
  std::array<unsigned char, sizeof(T)> bytes;
  std::memcpy(bytes.data(), &bits, sizeof(T));
  return std::bit_cast<T>(bytes);
}

}  // namespace detail

inline const thread_context& this_thread() noexcept { return *detail::current; }

// faults unless p is aligned to bytes (a power of two), as the GPU does for a vector access
inline void check_vector_access(const void* p, std::size_t bytes) {
  if (reinterpret_cast<std::uintptr_t>(p) % bytes != 0) [[unlikely]]
    detail::raise_misaligned(p, bytes);
}

// runs kernel(args...) on every thread of the grid and returns when all are done; throws
// simt::fault (the first fault, in block order) if any thread faulted
template <class... P, class... A>
void launch(void (*kernel)(P...), dim3 grid, dim3 block, A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "simt::launch: wrong number of kernel arguments");
  // one copy of the arguments per launch; each thread gets its own copy by value, as
  // each GPU thread gets its own parameters
  struct closure {
    void (*kernel)(P...);
    std::tuple<std::decay_t<P>...> params;
  };
  const closure c{kernel, std::tuple<std::decay_t<P>...>(std::forward<A>(args)...)};
  detail::launch(
      [](const void* p) {
        const auto& cl = *static_cast<const closure*>(p);
        std::apply(cl.kernel, cl.params);
      },
      &c, grid, block);
}

// order of the ready fibers: 0 is thread-index order, anything else a seeded random order
// per scheduling round (deterministic per seed). The default is NORMCHECK_SIMT_SCHEDULE,
// else 0. Applies to launches that start afterwards.
void set_schedule(std::uint64_t seed);

// OS threads that run blocks, the caller included; 0 restores the default
// (NORMCHECK_SIMT_THREADS, else the hardware concurrency). Applies to later launches.
void set_threads(unsigned count);

}  // namespace simt
#pragma GCC visibility pop

// ---- qualifiers and indices -----------------------------------------------------------

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static thread_local

#define threadIdx (::simt::this_thread().thread_idx)
#define blockIdx (::simt::this_thread().block_idx)
#define blockDim (::simt::this_thread().block_dim)
#define gridDim (::simt::this_thread().grid_dim)

// ---- synchronization ------------------------------------------------------------------

// the call site (default arguments are evaluated there) names the sync point in faults
inline void __syncthreads(const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
  ::simt::detail::sync_threads(file, line);
}

template <::simt::detail::shuffle_value T>
inline T __shfl_sync(unsigned mask, T var, int srcLane, int width = warpSize,
                     const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
  return ::simt::detail::shuffle_as(::simt::detail::shuffle_op::idx, mask, var, srcLane, width,
                                    file, line);
}

template <::simt::detail::shuffle_value T>
inline T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = warpSize,
                         const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
  return ::simt::detail::shuffle_as(::simt::detail::shuffle_op::bfly, mask, var, laneMask, width,
                                    file, line);
}

template <::simt::detail::shuffle_value T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                          const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) {
  return ::simt::detail::shuffle_as(::simt::detail::shuffle_op::down, mask, var,
                                    static_cast<int>(delta), width, file, line);
}

// ---- math -----------------------------------------------------------------------------

inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }

// cvt.rni.s32.f32: round to nearest even; past int's range it saturates, NaN gives 0
inline int __float2int_rn(float x) {
  if (std::isnan(x)) return 0;
  if (x >= 0x1p31f) return 2147483647;
  if (x < -0x1p31f) return -2147483647 - 1;
  return static_cast<int>(std::nearbyint(x));  // the default rounding mode: to nearest even
}

// ---- fp16 and bf16: exact, round-to-nearest-even ---------------------------------------

inline float __half2float(__half h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h.bits & 0x8000u) << 16;
  const std::uint32_t exponent = (h.bits >> 10) & 0x1fu;
  const std::uint32_t mantissa = h.bits & 0x3ffu;
  if (exponent == 0x1f) {
    // inf stays inf; a NaN keeps its payload and comes out quiet, as the hardware does
    const std::uint32_t quiet = mantissa != 0 ? 0x00400000u : 0u;
    return std::bit_cast<float>(sign | 0x7f800000u | quiet | (mantissa << 13));
  }
  if (exponent == 0) {
    // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(magnitude));
  }
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

inline __half __float2half_rn(float f) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u)  // NaN: quiet, keeping the top of the payload
    return {static_cast<std::uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x1ffu))};
  if (magnitude >= 0x477ff000u)  // at or past the midpoint of 65504 and 65536: inf
    return {static_cast<std::uint16_t>(sign | 0x7c00u)};
  if (magnitude < 0x38800000u) {   // below 2^-14: a half subnormal, units of 2^-24
    if (magnitude <= 0x33000000u)  // at most 2^-25 (a tie with zero rounds to even zero)
      return {sign};
    const std::uint32_t exponent = magnitude >> 23;
    const std::uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126u - exponent;  // 14..24
    const std::uint32_t rest = significand & ((1u << shift) - 1u);
    const std::uint32_t halfway = 1u << (shift - 1u);
    std::uint32_t h = significand >> shift;
    if (rest > halfway || (rest == halfway && (h & 1u))) ++h;
    return {static_cast<std::uint16_t>(sign | h)};
  }
  // normal: rebias the exponent, round the 13 dropped bits; a carry may bump the exponent
  std::uint32_t h = (magnitude >> 13) - (112u << 10);
  const std::uint32_t rest = magnitude & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return {static_cast<std::uint16_t>(sign | h)};
}

inline float __bfloat162float(__nv_bfloat16 b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b.bits) << 16);
}

inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u)  // NaN: quiet, keeping the top of the payload
    return {static_cast<std::uint16_t>((bits >> 16) | 0x0040u)};
  // adding 0x7fff plus the lowest kept bit rounds to nearest even; a carry past the
  // largest finite value lands on inf, as it should
  const std::uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
  return {static_cast<std::uint16_t>(rounded >> 16)};
}

// ---- fp8: the conversion instruction cvt.rn{.satfinite}.{e4m3,e5m2}x2.f32 ----------------
// The names of cuda_fp8.h. Round to nearest even into OCP FP8: e4m3 (bias 7, largest 448, no
// infinities, NaN S.1111.111) or e5m2 (bias 15, largest 57344, +-Inf S.11111.00). A value
// whose rounding leaves the format (e4m3: past 464, the tie between 448 and the NaN pattern
// going to even 448; e5m2: from 61440, whose tie rounds to the infinity) saturates to +-max
// under __NV_SATFINITE, Inf included; under __NV_NOSAT it becomes the NaN pattern S.1111.111
// (e4m3) or +-Inf (e5m2). A NaN gives 0x7f, the positive NaN pattern of either format.

struct alignas(8) float2 {
  float x, y;
};

inline float2 make_float2(float x, float y) { return {x, y}; }

enum __nv_saturation_t { __NV_NOSAT, __NV_SATFINITE };
enum __nv_fp8_interpretation_t { __NV_E4M3, __NV_E5M2 };
using __nv_fp8_storage_t = unsigned char;
using __nv_fp8x2_storage_t = unsigned short;

inline __nv_fp8_storage_t __nv_cvt_float_to_fp8(float x, __nv_saturation_t saturate,
                                                __nv_fp8_interpretation_t format) {
  const bool e4m3 = format == __NV_E4M3;
  const std::uint32_t mantissa_bits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign = (bits >> 24) & 0x80u, magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return 0x7f;
  const float a = std::bit_cast<float>(magnitude);
  if (e4m3 ? a > 464.0f : a >= 61440.0f) {
    const std::uint32_t out = saturate == __NV_SATFINITE ? (e4m3 ? 0x7eu : 0x7bu) : (e4m3 ? 0x7fu : 0x7cu);
    return static_cast<__nv_fp8_storage_t>(sign | out);
  }
  // below the smallest normal (2^-6, 2^-14) a code counts quanta of 2^-9 (2^-16): a * 2^9 is
  // exact and rounds to nearest even in the integer; 8 (4) quanta are the smallest normal's code
  if (a < (e4m3 ? 0x1p-6f : 0x1p-14f)) {
    const float quanta = std::nearbyint(a * (e4m3 ? 0x1p9f : 0x1p16f));
    return static_cast<__nv_fp8_storage_t>(sign | static_cast<std::uint32_t>(quanta));
  }
  // a normal value keeps fp32's exponent (rebiased) and the top bits of its mantissa, rounded
  // to nearest even; a carry moves into the exponent
  const std::uint32_t drop = 23 - mantissa_bits;
  const std::uint32_t kept = magnitude >> drop, rest = magnitude & ((1u << drop) - 1u);
  const std::uint32_t half = 1u << (drop - 1u);
  const std::uint32_t rounded = kept + (rest > half || (rest == half && (kept & 1u)) ? 1u : 0u);
  return static_cast<__nv_fp8_storage_t>(sign | (rounded - ((127u - bias) << mantissa_bits)));
}

// x.x's code in the low byte, x.y's in the high byte
inline __nv_fp8x2_storage_t __nv_cvt_float2_to_fp8x2(float2 x, __nv_saturation_t saturate,
                                                      __nv_fp8_interpretation_t format) {
  return static_cast<__nv_fp8x2_storage_t>(__nv_cvt_float_to_fp8(x.x, saturate, format) |
                                           __nv_cvt_float_to_fp8(x.y, saturate, format) << 8);
}
