// The floor under a plugin's host work: an empty kernel launched as the shipped kernels launch
// theirs (cudaLaunchKernelEx with programmatic stream serialization, then cudaGetLastError), so
// that a call's host time less this is the work the plugin does besides launching (bench.cpp).
#include <cuda_runtime.h>

#include "bench/launch_floor.hpp"

namespace nc::bench {

namespace {
__global__ void empty_kernel(int) {}
}  // namespace

cudaError_t launch_empty(unsigned grid, unsigned block) {
  cudaLaunchAttribute overlap{};
  overlap.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  overlap.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(block);
  config.attrs = &overlap;
  config.numAttrs = 1;
  const cudaError_t e = cudaLaunchKernelEx(&config, empty_kernel, 0);
  const cudaError_t pending = cudaGetLastError();
  return e != cudaSuccess ? e : pending;
}

}  // namespace nc::bench
