// A CUDA plugin that faults the device: a plain, correct fp32 forward (dense rows, no r, no
// backward: a partial plugin by declaration) that, for rows longer than 256, also launches a
// kernel that stores through a wild device address. The fault is sticky: the context is lost,
// and every later CUDA call of the process fails. The isolation test of the cuda build
// (harness/test/plugins/CMakeLists.txt) expects a verdict naming the lost context, the case
// file of the faulting case, and the next property run in a fresh worker with a fresh context.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "normcheck/abi.h"
#include "normcheck/contract.hpp"

namespace {

thread_local std::string last_error_text;

nc_status fail(nc_status s, std::string message) {
  last_error_text = std::move(message);
  return s;
}

nc_status cuda_status(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return NC_OK;
  return fail(e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ? NC_ERR_NO_DEVICE : NC_ERR_RUNTIME,
              std::string(call) + " failed: " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

// one thread a row: r = 1/sqrt(mean(x^2) + eps), y = x*r*gamma
__global__ void forward_rows(const float* x, const float* gamma, float* y, std::int64_t m, std::int64_t n,
                             std::int64_t x_row, std::int64_t y_row, float epsilon) {
  const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= m) return;
  float ss = 0;
  for (std::int64_t j = 0; j < n; ++j) ss = fmaf(x[i * x_row + j], x[i * x_row + j], ss);
  const float r = 1.0f / sqrtf(ss / float(n) + epsilon);
  for (std::int64_t j = 0; j < n; ++j) y[i * y_row + j] = x[i * x_row + j] * r * gamma[j];
}

// the fault: a store to an address no allocation holds
__global__ void wild_store(float value) {
  volatile float* wild = reinterpret_cast<volatile float*>(std::uintptr_t(1) << 47);
  *wild = value;
}

nc_status check_on_device(const char* name, const void* p) {
  if (p == nullptr) return NC_OK;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();
    return fail(NC_ERR_INVALID_ARGUMENT, std::string("argument '") + name + "' is not device memory");
  }
  if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged)
    return fail(NC_ERR_INVALID_ARGUMENT, std::string("argument '") + name + "' is host memory: must be device memory");
  return NC_OK;
}

nc_status forward(const nc_forward_args* args) {
  const nc_forward_args& a = *args;
  // the contract's checks of r see a stand-in: this kernel writes no r (NC_NO_R, r.data NULL)
  nc_forward_args checked = a;
  static float stand_in;
  checked.r = {&stand_in, NC_F32, 0, 1};
  if (auto v = nc::check_forward(checked)) return fail(NC_ERR_INVALID_ARGUMENT, v->message);
  if (a.m == 0) return NC_OK;
  for (const auto& [name, p] : {std::pair<const char*, const void*>{"x", a.x.data}, {"gamma", a.gamma.data},
                                {"y", a.y.data}})
    if (const nc_status s = check_on_device(name, p); s != NC_OK) return s;
  const auto* x = static_cast<const float*>(a.x.data) + a.x.offset;
  const auto* gamma = static_cast<const float*>(a.gamma.data) + a.gamma.offset;
  auto* y = static_cast<float*>(a.y.data) + a.y.offset;
  const unsigned threads = 128;
  forward_rows<<<unsigned((a.m + threads - 1) / threads), threads, 0, static_cast<cudaStream_t>(a.stream)>>>(
      x, gamma, y, a.m, a.n, a.x.row_stride, a.y.row_stride, a.epsilon);
  if (a.n > 256) wild_store<<<1, 1, 0, static_cast<cudaStream_t>(a.stream)>>>(1.0f);
  return cuda_status(cudaGetLastError(), "launch");
}

nc_status workspace_size(const nc_backward_args*, size_t* bytes) {
  *bytes = 0;
  return NC_OK;
}

nc_status backward(const nc_backward_args*) { return fail(NC_ERR_UNSUPPORTED, "no backward (NC_FORWARD_ONLY)"); }

nc_status alloc(size_t bytes, void** ptr) {
  *ptr = nullptr;
  return bytes == 0 ? NC_OK : cuda_status(cudaMalloc(ptr, bytes), "cudaMalloc");
}
nc_status release(void* ptr) { return cuda_status(cudaFree(ptr), "cudaFree"); }
nc_status copy(void* dst, const void* src, size_t bytes, nc_copy_kind kind) {
  const cudaMemcpyKind direction = kind == NC_HOST_TO_DEVICE   ? cudaMemcpyHostToDevice
                                   : kind == NC_DEVICE_TO_HOST ? cudaMemcpyDeviceToHost
                                                               : cudaMemcpyDeviceToDevice;
  return cuda_status(cudaMemcpy(dst, src, bytes, direction), "cudaMemcpy");
}
nc_status synchronize() { return cuda_status(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }
const char* last_error() { return last_error_text.c_str(); }

const nc_capabilities caps = {NC_PAIR_F32, 0, NC_FORWARD_ONLY | NC_NO_R, 0, nullptr, 0, 0};

const nc_plugin table = {NORMCHECK_ABI_VERSION, "device-fault-cuda", "cuda", NC_CAP_DEVICE_MEMORY, forward,
                         backward, workspace_size, alloc, release, copy, synchronize, last_error, nullptr, nullptr,
                         &caps, nullptr, nullptr};

}  // namespace

extern "C" __attribute__((visibility("default"))) const nc_plugin* normcheck_plugin(uint32_t abi_version) {
  return abi_version == NORMCHECK_ABI_VERSION ? &table : nullptr;
}
