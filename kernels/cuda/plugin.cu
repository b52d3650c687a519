// The shipped kernels on the cuda backend. Adds the device rules to the contract:
// every pointer must be device memory of the current device.
#define NC_PLUGIN_NAME "normcheck-cuda"
#define NC_PLUGIN_BACKEND "cuda"
#define NC_PLUGIN_EXTRA_CAPS NC_CAP_DEVICE_MEMORY
// the quantized forward's kernels: quantize.cu
#define NC_QUANTIZED_ELSEWHERE

#include <string>

#include "normcheck/nvidia.hpp"
#include "src/plugin_table.cuh"

namespace nc {

namespace {

nc_status cuda_status(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return NC_OK;
  set_last_error(std::string(what) + ": " + cudaGetErrorString(e));
  return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ? NC_ERR_NO_DEVICE : NC_ERR_RUNTIME;
}

// null and empty operands are the generic contract's business
nc_status check_pointer(const char* name, const void* p, int device) {
  if (p == nullptr) return NC_OK;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();
    set_last_error(std::string("argument '") + name + "' is not a pointer the CUDA runtime knows: must be device memory");
    return NC_ERR_INVALID_ARGUMENT;
  }
  if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged) {
    set_last_error(std::string("argument '") + name + "' is host memory: must be device memory");
    return NC_ERR_INVALID_ARGUMENT;
  }
  if (attr.device != device) {
    set_last_error(std::string("argument '") + name + "' is on device " + std::to_string(attr.device) +
                   ", the call runs on device " + std::to_string(device) + ": all operands must be on one device");
    return NC_ERR_INVALID_ARGUMENT;
  }
  return NC_OK;
}

template <class... Named>
nc_status check_pointers(Named... named) {
  int device = 0;
  if (nc_status s = cuda_status(cudaGetDevice(&device), "cudaGetDevice"); s != NC_OK) return s;
  for (auto [name, p] : {named...})
    if (nc_status s = check_pointer(name, p, device); s != NC_OK) return s;
  return NC_OK;
}

using named = std::pair<const char*, const void*>;

}  // namespace

nc_status backend_check_forward(const nc_forward_args& a) {
  if (a.m == 0) return check_pointers(named{"gamma", a.gamma.data});
  return check_pointers(named{"x", a.x.data}, named{"gamma", a.gamma.data}, named{"y", a.y.data},
                        named{"r", a.r.data});
}

nc_status backend_check_backward(const nc_backward_args& a) {
  if (a.m == 0)
    return check_pointers(named{"gamma", a.gamma.data}, named{"dgamma", a.dgamma.data},
                          named{"workspace", a.workspace});
  return check_pointers(named{"x", a.x.data}, named{"gamma", a.gamma.data}, named{"dy", a.dy.data},
                        named{"r", a.r.data}, named{"dx", a.dx.data}, named{"dgamma", a.dgamma.data},
                        named{"workspace", a.workspace});
}

nc_status backend_alloc(std::size_t bytes, void** ptr) { return cuda_status(cudaMalloc(ptr, bytes), "cudaMalloc"); }
nc_status backend_free(void* ptr) { return cuda_status(cudaFree(ptr), "cudaFree"); }

nc_status backend_copy(void* dst, const void* src, std::size_t bytes, nc_copy_kind kind) {
  const cudaMemcpyKind k = kind == NC_HOST_TO_DEVICE   ? cudaMemcpyHostToDevice
                           : kind == NC_DEVICE_TO_HOST ? cudaMemcpyDeviceToHost
                                                       : cudaMemcpyDeviceToDevice;
  return cuda_status(cudaMemcpy(dst, src, bytes, k), "cudaMemcpy");
}

nc_status backend_synchronize() { return cuda_status(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

// "NVIDIA H100 80GB HBM3, cc 9.0, 132 SMs, driver 580.159.04, CUDA 13.0" (the kernel module's
// version where /proc says it; the runtime's CUDA version)
std::string backend_machine() {
  int device = 0, runtime = 0;
  cudaDeviceProp p{};
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&p, device) != cudaSuccess) {
    cudaGetLastError();
    return "a CUDA device that does not answer";
  }
  const std::string driver = nvidia_driver_version();
  cudaRuntimeGetVersion(&runtime);
  return std::string(p.name) + ", cc " + std::to_string(p.major) + "." + std::to_string(p.minor) + ", " +
         std::to_string(p.multiProcessorCount) + " SMs" + (driver.empty() ? "" : ", driver " + driver) + ", CUDA " +
         cuda_version_text(runtime);
}

}  // namespace nc
