// The shipped kernels on the simt backend: the kernel source of kernels/src compiled
// by the host compiler against the simt runtime. Memory is host memory.
#define NC_PLUGIN_NAME "normcheck-simt"
#define NC_PLUGIN_BACKEND "simt"
#define NC_PLUGIN_EXTRA_CAPS 0u

#include <cstdlib>
#include <cstring>

#include "src/plugin_table.cuh"

namespace nc {

// the host is the machine: the harness names its CPU
std::string backend_machine() { return ""; }

nc_status backend_check_forward(const nc_forward_args&) { return NC_OK; }
nc_status backend_check_backward(const nc_backward_args&) { return NC_OK; }

nc_status backend_alloc(std::size_t bytes, void** ptr) {
  // 256-byte alignment, as cudaMalloc gives, so both backends see the same layouts
  *ptr = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (*ptr == nullptr && bytes > 0) {
    set_last_error("alloc: out of host memory for " + std::to_string(bytes) + " bytes");
    return NC_ERR_RUNTIME;
  }
  return NC_OK;
}

nc_status backend_free(void* ptr) {
  std::free(ptr);
  return NC_OK;
}

nc_status backend_copy(void* dst, const void* src, std::size_t bytes, nc_copy_kind) {
  if (bytes > 0) std::memmove(dst, src, bytes);
  return NC_OK;
}

nc_status backend_synchronize() { return NC_OK; }

}  // namespace nc
