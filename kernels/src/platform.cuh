// What the kernel source sees of the machine it runs on.
//
// Under nvcc this is CUDA itself. Under a host compiler it is the simt runtime
// (kernels/simt/runtime.hpp), which provides exactly the built-ins listed here and
// nothing more, so a kernel that compiles for one compiles for the other:
//   threadIdx blockIdx blockDim gridDim warpSize dim3
//   __global__ __device__ __host__ __forceinline__ __restrict__ __shared__ __launch_bounds__
//   __syncthreads  __shfl_xor_sync  __shfl_sync
//   __half __nv_bfloat16 __half2float __float2half_rn __bfloat162float __float2bfloat16_rn
//   rsqrtf  __float2int_rn  uint4  float2 make_float2
//   __nv_cvt_float2_to_fp8x2 __NV_SATFINITE __NV_NOSAT __NV_E4M3 __NV_E5M2
// plus two of nc's own, which are no-ops on the emulator (its launches run one at a time):
//   wait_for_prior_grid  release_next_grid
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#define NC_CHECK_VECTOR_ACCESS(ptr, bytes) ((void)0)
#else
#include "simt/runtime.hpp"
// a vector access must be aligned to its width; the emulator turns a misaligned one
// into a fault instead of silently doing what x86 allows
#define NC_CHECK_VECTOR_ACCESS(ptr, bytes) ::simt::check_vector_access((ptr), (bytes))
#endif

namespace nc {

constexpr unsigned full_mask = 0xffffffffu;

// 16 bytes moved by one instruction: the unit of the vectorized path
template <class T>
__device__ __forceinline__ uint4 load16(const T* p) {
  NC_CHECK_VECTOR_ACCESS(p, 16);
  return *reinterpret_cast<const uint4*>(p);
}

template <class T>
__device__ __forceinline__ void store16(T* p, uint4 v) {
  NC_CHECK_VECTOR_ACCESS(p, 16);
  *reinterpret_cast<uint4*>(p) = v;
}

// Programmatic dependent launch (sm_90): the launcher lets a kernel start while the kernel
// before it in the stream is finishing, so its launch and block scheduling overlap that
// tail. wait_for_prior_grid() returns once the prior grid has completed and its writes are
// visible; every kernel calls it before its first global memory access, so the overlap never
// changes what a kernel reads. release_next_grid() lets the next kernel launch early; it
// does not make anything visible to it.
__device__ __forceinline__ void wait_for_prior_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void release_next_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// both, at the top of every kernel
__device__ __forceinline__ void follow_prior_grid() {
  wait_for_prior_grid();
  release_next_grid();
}

}  // namespace nc
