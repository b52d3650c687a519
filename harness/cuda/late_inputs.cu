// Late inputs, for the property outputs_match_the_oracle_when_the_inputs_arrive_late: after the
// arena's upload, its bytes are made stale (0xff, a NaN in every dtype) and a kernel of the
// call's stream writes them back late. That kernel lets the next kernel of the stream start at
// once (programmatic dependent launch: griddepcontrol.launch_dependents), then waits before it
// writes: a kernel under test that reads an input before its own dependency wait
// (griddepcontrol.wait, cudaGridDependencySynchronize) reads the stale bytes instead of its
// values, and its outputs show it. A kernel that waits, or that is launched without
// programmatic dependent launch, reads the inputs as written. Loaded by the harness
// (harness/src/late_inputs.cpp) from the shipped plugins' folder, only for a CUDA plugin.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>

namespace {

__global__ void write_late(unsigned char* dst, const unsigned char* src, std::size_t bytes,
                           unsigned long long delay_ns) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  if (threadIdx.x == 0) {
    unsigned long long start = 0, now = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    while (now - start < delay_ns);
  }
  __syncthreads();
  const std::size_t step = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < bytes; i += step) dst[i] = src[i];
}

int failed(cudaError_t e, const char* what, char* error, std::size_t error_bytes) {
  if (e == cudaSuccess) return 0;
  std::snprintf(error, error_bytes, "%s: %s", what, cudaGetErrorString(e));
  return 1;
}

void* staging = nullptr;
std::size_t staging_bytes = 0;

}  // namespace

extern "C" {

/// a stream of its own for the calls (non-blocking: nothing of the default stream's comes
/// between the late writer and the call); 0 on success, else the error in `error`
int normcheck_late_inputs_stream(void** stream, char* error, std::size_t error_bytes) {
  cudaStream_t s = nullptr;
  if (failed(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", error, error_bytes))
    return 1;
  *stream = s;
  return 0;
}

/// after the upload of `bytes` at `region`: in `stream`, the region's bytes kept aside, the
/// region filled with 0xff, then written back by a kernel that releases the stream's next
/// kernel at its start and writes after delay_ns
int normcheck_late_inputs_stage(void* stream, void* region, std::size_t bytes, unsigned long long delay_ns,
                                char* error, std::size_t error_bytes) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  // the upload (a copy from pageable memory may still be on its way) has landed
  if (failed(cudaDeviceSynchronize(), "cudaDeviceSynchronize", error, error_bytes)) return 1;
  if (bytes > staging_bytes) {
    if (staging != nullptr) cudaFree(staging);
    staging = nullptr, staging_bytes = 0;
    if (failed(cudaMalloc(&staging, bytes), "cudaMalloc", error, error_bytes)) return 1;
    staging_bytes = bytes;
  }
  if (failed(cudaMemcpyAsync(staging, region, bytes, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync", error,
             error_bytes) ||
      failed(cudaMemsetAsync(region, 0xff, bytes, s), "cudaMemsetAsync", error, error_bytes))
    return 1;
  // few blocks, all resident at once, so that every one releases the next kernel at its start
  const std::size_t threads = 256, blocks = (bytes + threads * 64 - 1) / (threads * 64);
  write_late<<<unsigned(blocks < 1 ? 1 : blocks > 32 ? 32 : blocks), unsigned(threads), 0, s>>>(
      static_cast<unsigned char*>(region), static_cast<const unsigned char*>(staging), bytes, delay_ns);
  return failed(cudaGetLastError(), "launch of the late writer", error, error_bytes);
}

}  // extern "C"
