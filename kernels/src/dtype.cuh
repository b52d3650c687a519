// Storage types and the conversions every kernel does at its edges: loads upcast to
// fp32 before any arithmetic, stores round to the operand's dtype (nearest even).
#pragma once

#include "platform.cuh"

namespace nc {

template <class T> __device__ __forceinline__ float to_float(T v);
template <> __device__ __forceinline__ float to_float<float>(float v) { return v; }
template <> __device__ __forceinline__ float to_float<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <class T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// elements of T in one 16-byte vector
template <class T> constexpr int vector_width = 16 / static_cast<int>(sizeof(T));

// W consecutive elements of T as raw 16-byte vectors, converted where they are used.
// W * sizeof(T) is a multiple of 16: fp32 gamma beside 16-bit x takes two vectors.
template <class T, int W>
struct raw_vectors {
  static_assert(W * sizeof(T) % 16 == 0, "whole vectors only");
  static constexpr int count = W * int(sizeof(T)) / 16;
  uint4 bits[count];
};

// the W elements starting at p (16-byte aligned)
template <class T, int W>
__device__ __forceinline__ raw_vectors<T, W> load_vectors(const T* p) {
  raw_vectors<T, W> out;
#pragma unroll
  for (int v = 0; v < raw_vectors<T, W>::count; ++v) out.bits[v] = load16(p + v * vector_width<T>);
  return out;
}

template <class T, int W>
__device__ __forceinline__ void unpack(const raw_vectors<T, W>& in, float (&out)[W]) {
  constexpr int per_vector = vector_width<T>;
#pragma unroll
  for (int v = 0; v < raw_vectors<T, W>::count; ++v) {
    const T* e = reinterpret_cast<const T*>(&in.bits[v]);
#pragma unroll
    for (int k = 0; k < per_vector; ++k) out[v * per_vector + k] = to_float(e[k]);
  }
}

// W consecutive elements of T starting at p (16-byte aligned) as fp32
template <class T, int W>
__device__ __forceinline__ void load_floats(const T* p, float (&out)[W]) {
  unpack(load_vectors<T, W>(p), out);
}

template <class T, int W>
__device__ __forceinline__ void unpack(const uint4& bits, float (&out)[W]) {
  static_assert(W == vector_width<T>, "one vector");
  const T* e = reinterpret_cast<const T*>(&bits);
#pragma unroll
  for (int k = 0; k < W; ++k) out[k] = to_float(e[k]);
}

template <class T, int W>
__device__ __forceinline__ uint4 pack(const float (&in)[W]) {
  static_assert(W == vector_width<T>, "one vector");
  uint4 bits;
  T* e = reinterpret_cast<T*>(&bits);
#pragma unroll
  for (int k = 0; k < W; ++k) e[k] = from_float<T>(in[k]);
  return bits;
}

}  // namespace nc
