// The seed-design kernel on the simt backend: seed_rmsnorm.cuh compiled by the host compiler
// against the simt runtime. Its memory is host memory.
#if defined(SEED_DIVIDE_BY_BLOCK)
#define SEED_PLUGIN_NAME "seed-design-divide-by-block-simt"
#else
#define SEED_PLUGIN_NAME "seed-design-simt"
#endif
#define SEED_PLUGIN_BACKEND "simt"
#define SEED_PLUGIN_CAPS 0u

#include <cstdlib>
#include <cstring>

#include "plugin_table.cuh"

namespace seed_design {

// host memory is all there is: any pointer the contract accepted can be used
nc_status backend_check_pointers(const nc_forward_args&) { return NC_OK; }
nc_status backend_check_pointers(const nc_backward_args&) { return NC_OK; }

nc_status backend_alloc(std::size_t bytes, void** ptr) {
  // rounded up to 256 bytes and aligned to them, as cudaMalloc is, so both backends see
  // operands that start alike
  const std::size_t rounded = (bytes + 255) / 256 * 256;
  *ptr = rounded == 0 ? nullptr : std::aligned_alloc(256, rounded);
  if (*ptr == nullptr && bytes > 0) return fail(NC_ERR_RUNTIME, "alloc: no host memory for " + std::to_string(bytes) + " bytes");
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

// every launch has finished when simt::launch returns
nc_status backend_synchronize() { return NC_OK; }

}  // namespace seed_design
