// The shipped kernels on the cuda backend. Adds the device rules to the contract:
// every pointer must be device memory of the current device.
#define NC_PLUGIN_NAME "normcheck-cuda"
#define NC_PLUGIN_BACKEND "cuda"
#define NC_PLUGIN_EXTRA_CAPS NC_CAP_DEVICE_MEMORY
// the quantized forward's kernels: quantize.cu
#define NC_QUANTIZED_ELSEWHERE

#include <cuda.h>  // the driver API's types; its functions are reached through the runtime

#include <algorithm>
#include <array>
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

// What the driver says of the allocation holding a pointer: its address range (the mappable
// range, as cuPointerGetAttributes reports it), the memory type, the device and whether it is
// managed. Type 0 and an empty range: memory the driver does not know (plain host memory).
struct allocation {
  std::uintptr_t first = 0, last = 0;
  unsigned type = 0;
  int device = -1;
  bool managed = false;
  bool holds(std::uintptr_t p) const { return first <= p && p < last; }
};

using pointer_attributes_fn = CUresult (*)(unsigned, CUpointer_attribute*, void**, CUdeviceptr);

// cuPointerGetAttributes through the runtime's entry point (the plugin links no libcuda): every
// attribute in one query, where cudaPointerGetAttributes is a query of its own for each pointer
pointer_attributes_fn pointer_attributes() {
  static const pointer_attributes_fn f = []() -> pointer_attributes_fn {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuPointerGetAttributes", &fn, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    return reinterpret_cast<pointer_attributes_fn>(fn);
  }();
  return f;
}

nc_status query(const void* p, allocation& out) {
  const pointer_attributes_fn f = pointer_attributes();
  if (f == nullptr) {
    set_last_error("the CUDA driver has no cuPointerGetAttributes: cannot check that the operands are device memory");
    return NC_ERR_RUNTIME;
  }
  CUpointer_attribute what[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                CU_POINTER_ATTRIBUTE_IS_MANAGED, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  unsigned type = 0, managed = 0;
  int device = -1;
  CUdeviceptr start = 0;
  std::size_t size = 0;
  void* into[] = {&type, &device, &managed, &start, &size};
  // an unknown pointer is no error here: its attributes stay 0 (type 0, an empty range)
  if (f(5, what, into, reinterpret_cast<CUdeviceptr>(p)) != CUDA_SUCCESS) type = 0, start = 0, size = 0;
  out = {std::uintptr_t(start), std::uintptr_t(start) + size, type, device, managed != 0};
  return NC_OK;
}

// null and empty operands are the generic contract's business
nc_status check_pointer(const char* name, const allocation& a, int device) {
  if (a.type != CU_MEMORYTYPE_DEVICE && !a.managed) {
    set_last_error(std::string("argument '") + name + "' is host memory: must be device memory");
    return NC_ERR_INVALID_ARGUMENT;
  }
  if (a.device != device) {
    set_last_error(std::string("argument '") + name + "' is on device " + std::to_string(a.device) +
                   ", the call runs on device " + std::to_string(device) + ": all operands must be on one device");
    return NC_ERR_INVALID_ARGUMENT;
  }
  return NC_OK;
}

// Every operand's pointer is asked about once a call (its allocation may have been freed since
// the last one), and operands inside one allocation share that allocation's answer: a call whose
// operands come from one allocation (a caching allocator's segment, the harness's arena) costs
// one query of the driver
template <class... Named>
nc_status check_pointers(Named... named) {
  int device = 0;
  if (nc_status s = cuda_status(cudaGetDevice(&device), "cudaGetDevice"); s != NC_OK) return s;
  std::array<allocation, sizeof...(Named)> asked{};
  std::size_t count = 0;
  for (auto [name, p] : {named...}) {
    if (p == nullptr) continue;
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    const allocation* a = std::find_if(asked.begin(), asked.begin() + count, [&](const allocation& k) { return k.holds(at); });
    if (a == asked.begin() + count) {
      if (nc_status s = query(p, asked[count]); s != NC_OK) return s;
      a = &asked[count++];
    }
    if (nc_status s = check_pointer(name, *a, device); s != NC_OK) return s;
  }
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
