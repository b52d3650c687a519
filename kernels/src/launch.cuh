// Launching a kernel on the backend this translation unit is compiled for: a CUDA
// launch under nvcc, the simt emulator under a host compiler. Both report failures as
// a status plus the plugin's last-error text.
#pragma once

#include <cstdlib>
#include <map>
#include <string>
#include <utility>

#include "normcheck/abi.h"
#include "platform.cuh"

namespace nc {

// the message last_error() returns; defined by the plugin
void set_last_error(std::string message);

#if defined(__CUDACC__)

// NORMCHECK_CUDA_SYNC=1 synchronizes after every launch, so a fault names its kernel
inline bool sync_every_launch() {
  static const bool on = [] {
    const char* v = std::getenv("NORMCHECK_CUDA_SYNC");
    return v != nullptr && *v != '\0' && *v != '0';
  }();
  return on;
}

// Launches overlap the tail of the kernel before them in the stream (programmatic dependent
// launch; every kernel waits for that one before touching memory: platform.cuh).
// NORMCHECK_CUDA_PDL=0 launches them one after the other instead.
inline bool overlap_launches() {
  static const bool on = [] {
    const char* v = std::getenv("NORMCHECK_CUDA_PDL");
    return v == nullptr || *v == '\0' || *v != '0';
  }();
  return on;
}

template <class... P, class... A>
nc_status launch(void (*kernel)(P...), dim3 grid, dim3 block, void* stream, const char* what, A... args) {
  cudaLaunchAttribute overlap{};
  overlap.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  overlap.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.stream = static_cast<cudaStream_t>(stream);
  config.attrs = &overlap;
  config.numAttrs = overlap_launches() ? 1 : 0;
  cudaError_t e = cudaLaunchKernelEx(&config, kernel, args...);
  const cudaError_t pending = cudaGetLastError();  // read either way: it clears the error
  if (e == cudaSuccess) e = pending;
  if (e == cudaSuccess && sync_every_launch()) e = cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
  if (e != cudaSuccess) {
    set_last_error(std::string("launch of ") + what + " failed: " + cudaGetErrorString(e));
    return NC_ERR_RUNTIME;
  }
  return NC_OK;
}

// blocks of this kernel that fit on the whole device at once. Asked once per OS thread,
// device and kernel: the occupancy query costs microseconds, and every backward call and
// workspace query plans its grid (a lookup in a map of this thread's own, no lock)
template <class... P>
std::int64_t resident_blocks(void (*kernel)(P...), int threads) {
  thread_local std::map<std::pair<int, const void*>, std::int64_t> known;
  int device = 0;
  cudaGetDevice(&device);
  auto [it, fresh] = known.try_emplace({device, reinterpret_cast<const void*>(kernel)}, 0);
  if (fresh) {
    int sms = 0, per_sm = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0);
    it->second = std::int64_t(sms) * (per_sm > 0 ? per_sm : 1);
  }
  return it->second;
}

// the forward's largest grid: rows past it loop inside the blocks (2^16 blocks are about 30
// waves of an H100's resident blocks, so no bench shape loops; the harness's batches taller
// than the grid pass it with a few columns, at 2^16 rows of a block or 2^18 of warps)
constexpr std::int64_t forward_grid_cap = std::int64_t(1) << 16;

// the largest M*N of a small call, which latency bounds, not bandwidth: its strided rows stay
// in registers (occupancy matters little), and with M <= 256 its backward is one launch
// without a partial table (the column blocks read x and dy again, from L2 at this size)
constexpr std::int64_t small_call_elements = std::int64_t(1) << 18;

#else

template <class... P, class... A>
nc_status launch(void (*kernel)(P...), dim3 grid, dim3 block, void*, const char* what, A... args) {
  try {
    ::simt::launch(kernel, grid, block, args...);
  } catch (const std::exception& e) {
    set_last_error(std::string("simt: ") + what + ": " + e.what());
    return NC_ERR_RUNTIME;
  }
  return NC_OK;
}

// the emulator has no occupancy; a fixed count keeps the persistent grid and the
// dgamma partial table small and the same on every host
template <class... P>
std::int64_t resident_blocks(void (*)(P...), int) {
  return 16;
}

// as the backward's persistent grid: the forward's row loop runs in every case of more than
// 16 blocks' rows
constexpr std::int64_t forward_grid_cap = 16;

// small, so that the property campaign's cases (mostly M*N <= 4096) take both builds
constexpr std::int64_t small_call_elements = 1024;

#endif

}  // namespace nc
