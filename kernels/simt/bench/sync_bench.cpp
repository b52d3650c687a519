// sync_bench: what a sync point costs the simt scheduler, a thread's share. Blocks of 32, 256
// and 1024 threads each run rounds of a warp's butterfly reduction (five shuffles) and a
// barrier, on one OS thread; prints nanoseconds per thread per sync point, the best of five.
//
//   simt_sync_bench [rounds]
//
// simt_sync_bench_chained links the scheduler built with NORMCHECK_SIMT_CHAIN=1; simt_sync_bench
// the one the build ships (chained only where the switches are announced to AddressSanitizer).
#include "simt/runtime.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

constexpr int sync_points_a_round = 6;

__global__ void reduce_rounds(float* out, int rounds) {
  float v = static_cast<float>(threadIdx.x);
  for (int r = 0; r < rounds; ++r) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = v;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 200;
  if (rounds < 1) {
    std::fprintf(stderr, "simt_sync_bench: rounds must be a positive integer, not '%s'\n", argv[1]);
    return 2;
  }
  simt::set_threads(1);
  constexpr unsigned blocks = 8;
  float out[blocks];
  for (const unsigned threads : {32u, 256u, 1024u}) {
    double best = 1e300;
    for (int trial = 0; trial < 5; ++trial) {
      const auto start = std::chrono::steady_clock::now();
      simt::launch(reduce_rounds, dim3(blocks), dim3(threads), out, rounds);
      const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
      best = std::min(best, took.count());
    }
    const double sync_points = double(blocks) * threads * rounds * sync_points_a_round;
    std::printf("%5u threads a block: %6.1f ns a thread a sync point\n", threads, best / sync_points);
  }
}
