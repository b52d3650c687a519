// The seed-design kernel on the cuda backend. Adds the document's device rule to the
// contract: every operand must be device memory of the current device.
#if defined(SEED_DIVIDE_BY_BLOCK)
#define SEED_PLUGIN_NAME "seed-design-divide-by-block-cuda"
#else
#define SEED_PLUGIN_NAME "seed-design-cuda"
#endif
#define SEED_PLUGIN_BACKEND "cuda"
#define SEED_PLUGIN_CAPS NC_CAP_DEVICE_MEMORY

#include <initializer_list>
#include <string>
#include <utility>

#include "plugin_table.cuh"

namespace seed_design {
namespace {

nc_status cuda_status(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return NC_OK;
  const nc_status status =
      e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ? NC_ERR_NO_DEVICE : NC_ERR_RUNTIME;
  return fail(status, std::string(call) + " failed: " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

using named_pointer = std::pair<const char*, const void*>;

// the document rejects tensors on different devices; here every operand must be device
// memory of the device the call runs on (a host pointer would fault inside the kernel)
nc_status check_on_device(std::initializer_list<named_pointer> operands) {
  int device = 0;
  if (const nc_status s = cuda_status(cudaGetDevice(&device), "cudaGetDevice"); s != NC_OK) return s;
  for (const auto& [name, p] : operands) {
    if (p == nullptr) continue;  // an empty operand: the contract let it through
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
      cudaGetLastError();  // clear it: the call itself has not failed
      return fail(NC_ERR_INVALID_ARGUMENT,
                  std::string("argument '") + name + "' is not memory the CUDA runtime knows: must be device memory");
    }
    if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged)
      return fail(NC_ERR_INVALID_ARGUMENT, std::string("argument '") + name + "' is host memory: must be device memory");
    if (attributes.device != device)
      return fail(NC_ERR_INVALID_ARGUMENT, std::string("argument '") + name + "' is on device " +
                                               std::to_string(attributes.device) + ": must be on device " +
                                               std::to_string(device) + ", where the call runs");
  }
  return NC_OK;
}

}  // namespace

nc_status backend_check_pointers(const nc_forward_args& a) {
  if (a.m == 0) return NC_OK;  // nothing is read or written
  return check_on_device({{"x", a.x.data}, {"gamma", a.gamma.data}, {"y", a.y.data}, {"r", a.r.data}});
}

nc_status backend_check_pointers(const nc_backward_args& a) {
  if (a.m == 0) return check_on_device({{"dgamma", a.dgamma.data}});
  return check_on_device({{"x", a.x.data}, {"gamma", a.gamma.data}, {"dy", a.dy.data}, {"r", a.r.data},
                          {"dx", a.dx.data}, {"dgamma", a.dgamma.data}, {"workspace", a.workspace}});
}

nc_status backend_alloc(std::size_t bytes, void** ptr) { return cuda_status(cudaMalloc(ptr, bytes), "cudaMalloc"); }

nc_status backend_free(void* ptr) { return cuda_status(cudaFree(ptr), "cudaFree"); }

nc_status backend_copy(void* dst, const void* src, std::size_t bytes, nc_copy_kind kind) {
  const cudaMemcpyKind direction = kind == NC_HOST_TO_DEVICE   ? cudaMemcpyHostToDevice
                                   : kind == NC_DEVICE_TO_HOST ? cudaMemcpyDeviceToHost
                                                               : cudaMemcpyDeviceToDevice;
  return cuda_status(cudaMemcpy(dst, src, bytes, direction), "cudaMemcpy");
}

// also where a fault inside a kernel shows: the launches themselves are asynchronous
nc_status backend_synchronize() { return cuda_status(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

}  // namespace seed_design
