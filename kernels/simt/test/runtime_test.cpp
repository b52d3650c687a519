// The simt runtime against CUDA semantics: barriers, shuffles, faults, grids, schedules,
// fp16/bf16 conversions, and the cost of a typical reduction kernel.
#include "src/platform.cuh"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

// ---- helpers --------------------------------------------------------------------------

struct schedule_scope {
  explicit schedule_scope(std::uint64_t seed) { simt::set_schedule(seed); }
  ~schedule_scope() { simt::set_schedule(0); }
};

struct threads_scope {
  explicit threads_scope(unsigned count) { simt::set_threads(count); }
  ~threads_scope() { simt::set_threads(0); }
};

// the fault's text, or "" when the launch ran clean
std::string fault_of(const std::function<void()>& run) {
  try {
    run();
  } catch (const simt::fault& f) {
    return f.what();
  }
  return "";
}

::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << part << "\" is not in \"" << text << "\"";
}

std::uint32_t bits_of(float f) { return std::bit_cast<std::uint32_t>(f); }
float float_of(std::uint32_t b) { return std::bit_cast<float>(b); }

// ---- kernels --------------------------------------------------------------------------

// every thread reads what a thread of another warp wrote
__global__ void reverse_through_shared(const int* in, int* out) {
  __shared__ int buf[256];
  const unsigned t = threadIdx.x;
  const unsigned base = blockIdx.x * blockDim.x;
  buf[t] = in[base + t];
  __syncthreads();
  out[base + t] = buf[blockDim.x - 1 - t];
}

// op 0: xor, 1: idx, 2: down; each lane sends 100 + its lane
__global__ void shuffle_probe(int op, int arg, int width, int* out) {
  const int lane = static_cast<int>(threadIdx.x % warpSize);
  const int v = 100 + lane;
  int r = 0;
  if (op == 0) r = __shfl_xor_sync(nc::full_mask, v, arg, width);
  if (op == 1) r = __shfl_sync(nc::full_mask, v, arg, width);
  if (op == 2) r = __shfl_down_sync(nc::full_mask, v, static_cast<unsigned>(arg), width);
  out[threadIdx.x] = r;
}

template <class T>
__global__ void xor_typed(const T* in, T* out) {
  out[threadIdx.x] = __shfl_xor_sync(nc::full_mask, in[threadIdx.x], 1);
}

// lanes 16-31 exit at once; 0-15 shuffle among themselves
__global__ void half_warp_shuffle(int* out) {
  if (threadIdx.x >= 16) return;
  out[threadIdx.x] = __shfl_xor_sync(0x0000ffffu, static_cast<int>(threadIdx.x), 1, 16);
}

// two half warps shuffle at different sync points with disjoint masks
__global__ void disjoint_masks(int* out) {
  const int t = static_cast<int>(threadIdx.x);
  if (t < 16)
    out[t] = __shfl_sync(0x0000ffffu, t, 3, 16);
  else
    out[t] = __shfl_down_sync(0xffff0000u, t, 2, 16);
}

constexpr unsigned half_barrier_line = __LINE__ + 2;
__global__ void half_barrier() {
  if (threadIdx.x < 16) __syncthreads();
}

constexpr unsigned split_barrier_line = __LINE__ + 3;
__global__ void split_barrier() {
  if (threadIdx.x < 16)
    __syncthreads();
  else
    __syncthreads();
}

// the second warp splits: half at the barrier, half at a shuffle that needs the first half
__global__ void barrier_against_shuffle(int* out) {
  if (threadIdx.x < 48)
    __syncthreads();
  else
    out[threadIdx.x] = __shfl_xor_sync(nc::full_mask, 1, 1);
}

constexpr unsigned exited_lane_line = __LINE__ + 3;
__global__ void shuffle_after_exit(int* out) {
  if (threadIdx.x == 31) return;
  out[threadIdx.x] = __shfl_xor_sync(nc::full_mask, static_cast<int>(threadIdx.x), 1);
}

__global__ void full_mask_shuffle(int* out) {
  out[threadIdx.x] = __shfl_xor_sync(nc::full_mask, static_cast<int>(threadIdx.x), 1);
}

__global__ void shuffle_with(unsigned mask, int lane_mask, int width, int* out) {
  out[threadIdx.x] = __shfl_xor_sync(mask, static_cast<int>(threadIdx.x), lane_mask, width);
}

// 16 floats per thread from base + offset elements: 16-byte loads of 4 floats each
__global__ void load_vectors(const float* base, unsigned bad_block, unsigned bad_thread,
                             unsigned* out) {
  const unsigned offset = blockIdx.x == bad_block && threadIdx.x == bad_thread ? 1u : 0u;
  const uint4 v = nc::load16(base + 4 * threadIdx.x + offset);
  out[blockIdx.x * blockDim.x + threadIdx.x] = v.x;
}

__global__ void store_vector(float* base, unsigned offset) {
  nc::store16(base + offset, uint4{1, 2, 3, 4});
}

// a block's table of 4 slots written by every thread of the block: past it from thread 4 on
constexpr unsigned past_table_line = __LINE__ + 4;
__global__ void fill_table(float* out) {
  __shared__ float table[4];
  const int t = static_cast<int>(threadIdx.x);
  table[t] = float(t);
  __syncthreads();
  out[t] = table[t % 4];
}

constexpr unsigned deadlock_line = __LINE__ + 5;
__global__ void mismatched_shuffles(int* out) {
  const int t = static_cast<int>(threadIdx.x);
  int r;
  if (t < 16)
    r = __shfl_sync(nc::full_mask, t, 0);
  else
    r = __shfl_down_sync(nc::full_mask, t, 1);
  out[t] = r;
}

std::atomic<int> constructed{0};
std::atomic<int> destroyed{0};
struct witness {
  witness() { ++constructed; }
  ~witness() { ++destroyed; }
};

__global__ void throw_in_block(unsigned bad_block, unsigned bad_thread, int* started) {
  const witness w;
  if (threadIdx.x == 0) started[blockIdx.x] = 1;
  if (blockIdx.x == bad_block && threadIdx.x == bad_thread) throw std::runtime_error("boom");
  __syncthreads();
}

__global__ void fault_in_blocks(unsigned first, unsigned second) {
  if (threadIdx.x == 0 && (blockIdx.x == first || blockIdx.x == second))
    throw simt::fault("fault in block " + std::to_string(blockIdx.x));
  __syncthreads();
}

__global__ void own_parameter(int n, int* out) {
  n += static_cast<int>(threadIdx.x);  // each thread has its own copy
  __syncthreads();
  out[threadIdx.x] = n;
}

__global__ void nested_launch() { simt::launch(own_parameter, dim3(1), dim3(1), 0, nullptr); }

// the shape of the rmsnorm reduction: 16 values per thread, a 5-step xor tree, then a
// shared-memory stage between two barriers
__global__ void row_sum(const float* x, float* out, int n) {
  __shared__ float partial[32];
  __shared__ float total;
  const unsigned t = threadIdx.x;
  const unsigned lane = t % warpSize;
  const unsigned warp = t / warpSize;
  const float* row = x + static_cast<std::size_t>(blockIdx.x) * static_cast<std::size_t>(n);
  float acc = 0.0f;
  for (int j = static_cast<int>(t); j < n; j += static_cast<int>(blockDim.x)) acc += row[j];
  for (int offset = 16; offset > 0; offset >>= 1)
    acc += __shfl_xor_sync(nc::full_mask, acc, offset);
  if (lane == 0) partial[warp] = acc;
  __syncthreads();
  if (t == 0) {
    float s = 0.0f;
    for (unsigned w = 0; w < blockDim.x / warpSize; ++w) s += partial[w];
    total = s;
  }
  __syncthreads();
  if (t == 0) out[blockIdx.x] = total;
}

// the same reduction order on the host
std::vector<float> row_sum_reference(const std::vector<float>& x, int rows, int n, int threads) {
  std::vector<float> out(static_cast<std::size_t>(rows));
  for (int r = 0; r < rows; ++r) {
    std::vector<float> acc(static_cast<std::size_t>(threads), 0.0f);
    for (int t = 0; t < threads; ++t)
      for (int j = t; j < n; j += threads) acc[t] += x[static_cast<std::size_t>(r) * n + j];
    for (int offset = 16; offset > 0; offset >>= 1) {
      std::vector<float> next(acc);
      for (int t = 0; t < threads; ++t) next[t] = acc[t] + acc[t ^ offset];
      acc = next;
    }
    float s = 0.0f;
    for (int w = 0; w < threads / 32; ++w) s += acc[w * 32];
    out[r] = s;
  }
  return out;
}

std::vector<float> random_matrix(int rows, int n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(rows) * n);
  for (auto& v : x) v = dist(gen);
  return x;
}

__global__ void slow_block_thread_ids(std::size_t* ids) {
  if (threadIdx.x == 0) {
    ids[blockIdx.x] = std::hash<std::thread::id>{}(std::this_thread::get_id());
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  __syncthreads();
}

__global__ void record_indices(unsigned* out) {
  const unsigned block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  const unsigned thread = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  const unsigned per_block = blockDim.x * blockDim.y * blockDim.z;
  unsigned* o = out + 8 * (block * per_block + thread);
  o[0] = threadIdx.x;
  o[1] = threadIdx.y;
  o[2] = threadIdx.z;
  o[3] = blockIdx.x;
  o[4] = blockIdx.y;
  o[5] = blockIdx.z;
  o[6] = blockDim.x * 100 + blockDim.y * 10 + blockDim.z;
  o[7] = gridDim.x * 100 + gridDim.y * 10 + gridDim.z;
}

// lanes are numbered by the linear thread index, x fastest, as on the GPU
__global__ void lane_zero_y(unsigned* out) {
  const unsigned thread = threadIdx.y * blockDim.x + threadIdx.x;
  out[thread] = __shfl_sync(nc::full_mask, threadIdx.y, 0);
}

// each thread publishes a value, then reads its left neighbour's (thread 0 its own).
// Without the barrier the read may come before the neighbour's write; thread-index
// order happens to hide that, since the neighbour always runs first.
template <bool with_barrier>
__global__ void left_neighbour(int salt, int* out) {
  __shared__ int buf[128];
  const unsigned t = threadIdx.x;
  buf[t] = salt + static_cast<int>(blockIdx.x * 1000 + t);
  if constexpr (with_barrier) __syncthreads();
  out[blockIdx.x * 128 + t] = buf[t == 0 ? 0 : t - 1];
}

// the order in which the threads of each block first run
__global__ void log_order(std::vector<unsigned>* logs) { logs[blockIdx.x].push_back(threadIdx.x); }

// ---- barriers and shared memory -------------------------------------------------------

TEST(simt_barrier, orders_shared_memory_across_warps) {
  constexpr unsigned blocks = 4, threads = 256;
  std::vector<int> in(blocks * threads), out(blocks * threads, -1);
  for (unsigned i = 0; i < in.size(); ++i) in[i] = static_cast<int>(i * 7 + 3);
  for (const std::uint64_t seed : {0u, 1u, 2u, 3u, 99u}) {
    const schedule_scope schedule(seed);
    simt::launch(reverse_through_shared, dim3(blocks), dim3(threads), in.data(), out.data());
    for (unsigned b = 0; b < blocks; ++b)
      for (unsigned t = 0; t < threads; ++t)
        ASSERT_EQ(out[b * threads + t], in[b * threads + threads - 1 - t]) << "seed " << seed;
  }
}

TEST(simt_launch, gives_each_thread_its_own_copy_of_the_parameters) {
  std::vector<int> out(64);
  simt::launch(own_parameter, dim3(1), dim3(64), std::int64_t{10}, out.data());
  for (int t = 0; t < 64; ++t) EXPECT_EQ(out[t], 10 + t);
}

// ---- shuffles -------------------------------------------------------------------------

// the value lane `lane` receives, from the CUDA programming guide's wording
int expected_shuffle(int op, int lane, int arg, int width) {
  const int segment = lane / width;
  int source = lane;
  if (op == 0) {  // xor: a later segment is out of reach and gives the own value
    source = lane ^ arg;
    if (source / width > segment) source = lane;
  } else if (op == 1) {  // idx: srcLane modulo width, within the own segment
    source = segment * width + arg % width;
  } else {  // down: past the own segment gives the own value
    source = lane + arg;
    if (source / width != segment) source = lane;
  }
  return 100 + source;
}

TEST(simt_shuffle, xor_sync_and_down_match_cuda_semantics_for_every_width) {
  std::vector<int> out(64);
  for (int op = 0; op < 3; ++op)
    for (int width = 1; width <= 32; width *= 2)
      for (int arg = 0; arg < 32; ++arg) {
        simt::launch(shuffle_probe, dim3(1), dim3(64), op, arg, width, out.data());
        for (int t = 0; t < 64; ++t)
          ASSERT_EQ(out[t], expected_shuffle(op, t % 32, arg, width))
              << "op " << op << " width " << width << " arg " << arg << " thread " << t;
      }
}

template <class T>
void check_xor_typed(T first, T step) {
  std::vector<T> in(64), out(64);
  for (int t = 0; t < 64; ++t) in[t] = static_cast<T>(first + step * static_cast<T>(t));
  simt::launch(xor_typed<T>, dim3(1), dim3(64), in.data(), out.data());
  for (int t = 0; t < 64; ++t) EXPECT_EQ(out[t], in[t ^ 1]) << "thread " << t;
}

TEST(simt_shuffle, moves_float_int_unsigned_and_double_bit_exactly) {
  check_xor_typed<float>(1.5f, 0.25f);
  check_xor_typed<int>(-40, 3);
  check_xor_typed<unsigned>(0xfffffff0u, 1u);
  check_xor_typed<double>(1.0, 1e-12);  // needs all 64 bits
  std::vector<__half> in(64), out(64);
  for (int t = 0; t < 64; ++t) in[t] = __float2half_rn(static_cast<float>(t) * 0.5f);
  simt::launch(xor_typed<__half>, dim3(1), dim3(64), in.data(), out.data());
  for (int t = 0; t < 64; ++t) EXPECT_EQ(out[t].bits, in[t ^ 1].bits);
}

TEST(simt_shuffle, over_a_partial_mask_waits_only_for_the_lanes_it_names) {
  std::vector<int> out(32, -1);
  simt::launch(half_warp_shuffle, dim3(1), dim3(32), out.data());
  for (int t = 0; t < 16; ++t) EXPECT_EQ(out[t], t ^ 1);
}

TEST(simt_shuffle, with_disjoint_masks_resolves_each_group_on_its_own) {
  std::vector<int> out(32, -1);
  simt::launch(disjoint_masks, dim3(1), dim3(32), out.data());
  for (int t = 0; t < 16; ++t) EXPECT_EQ(out[t], 3);
  for (int t = 16; t < 32; ++t) EXPECT_EQ(out[t], t + 2 < 32 ? t + 2 : t);
}

// ---- faults ---------------------------------------------------------------------------

TEST(simt_fault, barrier_divergence_names_the_waiting_and_the_exited_threads) {
  const std::string text = fault_of([] { simt::launch(half_barrier, dim3(1), dim3(32)); });
  EXPECT_TRUE(contains(text, "barrier divergence in block (0,0,0): "));
  EXPECT_TRUE(
      contains(text, "threads (0,0,0)..(15,0,0) wait at __syncthreads() at runtime_test.cpp:" +
                         std::to_string(half_barrier_line)));
  EXPECT_TRUE(contains(text, "threads (16,0,0)..(31,0,0) exited"));
}

TEST(simt_fault, barriers_at_different_sync_points_diverge) {
  const std::string text = fault_of([] { simt::launch(split_barrier, dim3(1), dim3(32)); });
  EXPECT_TRUE(contains(text, "barrier divergence"));
  EXPECT_TRUE(contains(text, "runtime_test.cpp:" + std::to_string(split_barrier_line)));
  EXPECT_TRUE(contains(text, "runtime_test.cpp:" + std::to_string(split_barrier_line + 2)));
}

TEST(simt_fault, a_barrier_against_a_shuffle_diverges) {
  std::vector<int> out(64);
  const std::string text =
      fault_of([&] { simt::launch(barrier_against_shuffle, dim3(1), dim3(64), out.data()); });
  EXPECT_TRUE(contains(text, "barrier divergence in block (0,0,0)"));
  EXPECT_TRUE(contains(text, "threads (0,0,0)..(47,0,0) wait at __syncthreads()"));
  EXPECT_TRUE(contains(text,
                       "threads (48,0,0)..(63,0,0) wait at __shfl_xor_sync(mask 0xffffffff, "
                       "width 32)"));
  EXPECT_TRUE(contains(text, "for lanes 0-15 of their warp"));
}

TEST(simt_fault, a_shuffle_naming_an_exited_lane_faults) {
  std::vector<int> out(32);
  const std::string text =
      fault_of([&] { simt::launch(shuffle_after_exit, dim3(1), dim3(32), out.data()); });
  EXPECT_TRUE(contains(text, "__shfl_xor_sync(mask 0xffffffff, width 32) at runtime_test.cpp:" +
                                 std::to_string(exited_lane_line) +
                                 " by thread (0,0,0) of block (0,0,0) names lane 31 (thread "
                                 "(31,0,0)), which exited"));
}

TEST(simt_fault, a_shuffle_naming_a_lane_past_the_block_faults) {
  std::vector<int> out(48);
  const std::string text =
      fault_of([&] { simt::launch(full_mask_shuffle, dim3(1), dim3(48), out.data()); });
  EXPECT_TRUE(contains(text, "names lane 16, which does not exist: the block has 48 threads"));
}

TEST(simt_fault, a_shuffle_outside_its_own_mask_or_width_faults) {
  std::vector<int> out(32);
  EXPECT_TRUE(contains(
      fault_of([&] { simt::launch(shuffle_with, dim3(1), dim3(32), 0x1u, 1, 32, out.data()); }),
      "by thread (1,0,0) of block (0,0,0): mask 0x00000001 does not name the "
      "calling lane 1"));
  EXPECT_TRUE(contains(fault_of([&] {
                         simt::launch(shuffle_with, dim3(1), dim3(32), nc::full_mask, 1, 12,
                                      out.data());
                       }),
                       "width 12 is not a power of two in [1, 32]"));
  EXPECT_TRUE(contains(fault_of([&] {
                         simt::launch(shuffle_with, dim3(1), dim3(16), 0x0000ffffu, 16, 32,
                                      out.data());
                       }),
                       "reads lane 16, which is not in the mask"));
}

TEST(simt_fault, a_misaligned_vector_access_faults) {
  alignas(16) float data[2 * 4 * 4 + 4] = {};
  for (int i = 0; i < 36; ++i) data[i] = static_cast<float>(i);
  std::vector<unsigned> out(8);
  simt::launch(load_vectors, dim3(2), dim3(4), static_cast<const float*>(data), 9u, 9u, out.data());
  for (unsigned i = 0; i < 8; ++i) EXPECT_EQ(out[i], bits_of(data[4 * (i % 4)]));

  const std::string text = fault_of([&] {
    simt::launch(load_vectors, dim3(2), dim3(4), static_cast<const float*>(data), 1u, 1u,
                 out.data());
  });
  EXPECT_TRUE(contains(text, "misaligned 16-byte vector access at 0x"));
  EXPECT_TRUE(contains(text, "(offset 4 mod 16) by thread (1,0,0) of block (1,0,0)"));
  EXPECT_TRUE(contains(fault_of([&] { simt::launch(store_vector, dim3(1), dim3(1), data, 2u); }),
                       "(offset 8 mod 16) by thread (0,0,0) of block (0,0,0)"));
}

TEST(simt_fault, an_index_past_a_shared_array_faults) {
#if !NORMCHECK_SIMT_BOUNDS
  GTEST_SKIP() << "a build under the sanitizers' runtime (NORMCHECK_SIMT_BOUNDS off): that runtime reports the index";
#else
  std::vector<float> out(8);
  simt::launch(fill_table, dim3(1), dim3(4), out.data());
  for (int t = 0; t < 4; ++t) EXPECT_EQ(out[t], float(t));
  const std::string text = fault_of([&] { simt::launch(fill_table, dim3(1), dim3(5), out.data()); });
  EXPECT_TRUE(contains(text, "index 4 out of the bounds of 'float [4]' at runtime_test.cpp:" +
                                 std::to_string(past_table_line) + ":"))
      << text;
  EXPECT_TRUE(contains(text, "by thread (4,0,0) of block (0,0,0)")) << text;
#endif
}

TEST(simt_fault, a_deadlock_never_hangs_and_names_what_each_thread_waits_on) {
  std::vector<int> out(32);
  const std::string text =
      fault_of([&] { simt::launch(mismatched_shuffles, dim3(1), dim3(32), out.data()); });
  EXPECT_TRUE(contains(text, "deadlock in block (0,0,0): "));
  EXPECT_TRUE(contains(text,
                       "threads (0,0,0)..(15,0,0) wait at __shfl_sync(mask 0xffffffff, "
                       "width 32) at runtime_test.cpp:" +
                           std::to_string(deadlock_line) + " for lanes 16-31 of their warp"));
  EXPECT_TRUE(contains(text,
                       "threads (16,0,0)..(31,0,0) wait at __shfl_down_sync(mask "
                       "0xffffffff, width 32) at runtime_test.cpp:" +
                           std::to_string(deadlock_line + 2) + " for lanes 0-15 of their warp"));
}

TEST(simt_fault, a_thread_exception_unwinds_the_block_and_stops_the_grid) {
  const threads_scope threads(1);
  constructed = 0;
  destroyed = 0;
  std::vector<int> started(16, 0);
  const std::string text =
      fault_of([&] { simt::launch(throw_in_block, dim3(16), dim3(64), 3u, 5u, started.data()); });
  EXPECT_EQ(text, "thread (5,0,0) of block (3,0,0) threw: boom");
  // every thread that started was unwound, its destructors run
  EXPECT_EQ(constructed.load(), destroyed.load());
  for (int b = 0; b < 16; ++b) EXPECT_EQ(started[b], b <= 3 ? 1 : 0) << "block " << b;
}

TEST(simt_fault, several_faulting_blocks_report_the_first_in_block_order) {
  const threads_scope threads(4);
  for (int attempt = 0; attempt < 10; ++attempt) {
    EXPECT_EQ(fault_of([] { simt::launch(fault_in_blocks, dim3(64), dim3(32), 41u, 5u); }),
              "fault in block 5");
  }
}

TEST(simt_fault, the_runtime_is_usable_after_a_fault) {
  std::vector<int> out(32);
  EXPECT_FALSE(
      fault_of([&] { simt::launch(mismatched_shuffles, dim3(1), dim3(32), out.data()); }).empty());
  simt::launch(own_parameter, dim3(1), dim3(32), 7, out.data());
  for (int t = 0; t < 32; ++t) EXPECT_EQ(out[t], 7 + t);
}

TEST(simt_fault, invalid_configurations_and_misuse_fault) {
  EXPECT_TRUE(contains(fault_of([] { simt::launch(half_barrier, dim3(1), dim3(2048)); }),
                       "invalid launch configuration: block (2048,1,1)"));
  EXPECT_TRUE(contains(fault_of([] { simt::launch(half_barrier, dim3(1), dim3(32, 32, 2)); }),
                       "has 2048 threads, more than 1024"));
  EXPECT_TRUE(contains(fault_of([] { simt::launch(half_barrier, dim3(0), dim3(32)); }),
                       "grid (0,1,1) is empty"));
  EXPECT_TRUE(contains(fault_of([] { __syncthreads(); }), "called outside a kernel"));
  EXPECT_TRUE(contains(fault_of([] { simt::launch(nested_launch, dim3(1), dim3(1)); }),
                       "dynamic parallelism is not emulated"));
}

// ---- grids ----------------------------------------------------------------------------

TEST(simt_grid, several_os_threads_give_the_results_of_one) {
  constexpr int rows = 64, n = 4096;
  const std::vector<float> x = random_matrix(rows, n, 1);
  std::vector<float> one(rows), many(rows), shuffled(rows);
  {
    const threads_scope threads(1);
    simt::launch(row_sum, dim3(rows), dim3(256), x.data(), one.data(), n);
  }
  {
    const threads_scope threads(4);
    simt::launch(row_sum, dim3(rows), dim3(256), x.data(), many.data(), n);
    const schedule_scope schedule(12345);
    simt::launch(row_sum, dim3(rows), dim3(256), x.data(), shuffled.data(), n);
  }
  const std::vector<float> expected = row_sum_reference(x, rows, n, 256);
  for (int r = 0; r < rows; ++r) {
    EXPECT_EQ(bits_of(one[r]), bits_of(expected[r])) << "row " << r;
    EXPECT_EQ(bits_of(many[r]), bits_of(one[r])) << "row " << r;
    EXPECT_EQ(bits_of(shuffled[r]), bits_of(one[r])) << "row " << r;
  }
}

TEST(simt_grid, blocks_are_spread_over_os_threads) {
  const threads_scope threads(4);
  std::vector<std::size_t> ids(32);
  simt::launch(slow_block_thread_ids, dim3(32), dim3(64), ids.data());
  EXPECT_GT(std::set<std::size_t>(ids.begin(), ids.end()).size(), 1u);
}

TEST(simt_grid, two_and_three_dimensional_indices_match_cuda) {
  const dim3 grid(3, 2, 2), block(4, 3, 2);
  const unsigned per_block = 24, blocks = 12;
  std::vector<unsigned> out(8 * per_block * blocks, 999);
  simt::launch(record_indices, grid, block, out.data());
  for (unsigned bz = 0; bz < 2; ++bz)
    for (unsigned by = 0; by < 2; ++by)
      for (unsigned bx = 0; bx < 3; ++bx)
        for (unsigned tz = 0; tz < 2; ++tz)
          for (unsigned ty = 0; ty < 3; ++ty)
            for (unsigned tx = 0; tx < 4; ++tx) {
              const unsigned b = (bz * 2 + by) * 3 + bx, t = (tz * 3 + ty) * 4 + tx;
              const unsigned* o = &out[8 * (b * per_block + t)];
              const std::vector<unsigned> got(o, o + 8);
              EXPECT_EQ(got, (std::vector<unsigned>{tx, ty, tz, bx, by, bz, 432, 322}));
            }

  std::vector<unsigned> lanes(64);
  simt::launch(lane_zero_y, dim3(1), dim3(8, 8), lanes.data());
  for (unsigned t = 0; t < 64; ++t) EXPECT_EQ(lanes[t], t < 32 ? 0u : 4u) << "thread " << t;
}

// ---- schedules ------------------------------------------------------------------------

TEST(simt_schedule, a_missing_barrier_is_exposed_by_a_varied_schedule) {
  std::vector<int> out(2 * 128);
  int salt = 0;
  auto correct = [&](auto kernel) {
    salt += 1 << 20;  // what the previous launch left in shared memory is now stale
    simt::launch(kernel, dim3(2), dim3(128), salt, out.data());
    for (int b = 0; b < 2; ++b)
      for (int t = 0; t < 128; ++t)
        if (out[b * 128 + t] != salt + b * 1000 + (t == 0 ? 0 : t - 1)) return false;
    return true;
  };
  {
    const schedule_scope index_order(0);
    EXPECT_TRUE(correct(left_neighbour<false>));  // thread-index order hides the race
  }
  int exposed = 0;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    const schedule_scope schedule(seed);
    exposed += correct(left_neighbour<false>) ? 0 : 1;
    EXPECT_TRUE(correct(left_neighbour<true>)) << "seed " << seed;
  }
  EXPECT_GT(exposed, 0);
}

TEST(simt_schedule, a_seed_gives_the_same_order_on_any_os_thread) {
  auto orders = [](std::uint64_t seed, unsigned os_threads) {
    const threads_scope threads(os_threads);
    const schedule_scope schedule(seed);
    std::vector<std::vector<unsigned>> logs(8);
    simt::launch(log_order, dim3(8), dim3(64), logs.data());
    return logs;
  };
  const auto index_order = orders(0, 1);
  for (unsigned t = 0; t < 64; ++t) EXPECT_EQ(index_order[0][t], t);
  const auto seeded = orders(7, 1);
  EXPECT_NE(seeded[0], index_order[0]);
  EXPECT_NE(seeded[0], seeded[1]);  // each block draws its own order
  EXPECT_EQ(orders(7, 4), seeded);
  EXPECT_NE(orders(8, 1), seeded);
}

// ---- fp16 and bf16 --------------------------------------------------------------------

// the value of a half from its fields, in double
double half_value(std::uint16_t h) {
  const int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  const double magnitude =
      exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
  return (h & 0x8000) != 0 ? -magnitude : magnitude;
}

TEST(simt_half, every_half_converts_to_float_exactly) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto b = static_cast<std::uint16_t>(h);
    const float f = __half2float(__half{b});
    const int exponent = (b >> 10) & 0x1f, mantissa = b & 0x3ff;
    if (exponent == 0x1f && mantissa != 0) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      ASSERT_NE(bits_of(f) & 0x00400000u, 0u) << "NaN not quiet " << std::hex << h;
      ASSERT_EQ(std::signbit(f), (b & 0x8000) != 0);
    } else if (exponent == 0x1f) {
      ASSERT_EQ(f, (b & 0x8000) != 0 ? -INFINITY : INFINITY);
    } else {
      ASSERT_EQ(bits_of(f), bits_of(static_cast<float>(half_value(b)))) << std::hex << h;
    }
  }
}

TEST(simt_bf16, every_bfloat16_converts_to_float_exactly) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const float f = __bfloat162float(__nv_bfloat16{static_cast<std::uint16_t>(b)});
    ASSERT_EQ(bits_of(f), b << 16) << std::hex << b;
  }
}

TEST(simt_half, every_half_survives_a_round_trip) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto b = static_cast<std::uint16_t>(h);
    const std::uint16_t back = __float2half_rn(__half2float(__half{b})).bits;
    if ((b & 0x7c00) == 0x7c00 && (b & 0x3ff) != 0)
      ASSERT_EQ(back, b | 0x0200) << std::hex << h;  // NaN: payload kept, made quiet
    else
      ASSERT_EQ(back, b) << std::hex << h;
  }
}

TEST(simt_bf16, every_bfloat16_survives_a_round_trip) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto b = static_cast<std::uint16_t>(h);
    const std::uint16_t back = __float2bfloat16_rn(__bfloat162float(__nv_bfloat16{b})).bits;
    if ((b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0)
      ASSERT_EQ(back, b | 0x0040) << std::hex << h;
    else
      ASSERT_EQ(back, b) << std::hex << h;
  }
}

// round to nearest even by search: the non-negative patterns 0..inf are increasing in
// value, inf standing for the next power of two (what an unbounded exponent would give),
// so rounding is picking the nearer neighbour, the even pattern on a tie
struct format {
  float (*to_float)(std::uint16_t);
  std::uint16_t inf;
  double overflow;  // the value inf stands for
};

std::uint16_t round_by_search(float f, const format& fmt) {
  const std::uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(f));
  auto value = [&](std::uint32_t p) {
    return p == fmt.inf ? fmt.overflow
                        : static_cast<double>(fmt.to_float(static_cast<std::uint16_t>(p)));
  };
  if (a >= fmt.overflow) return sign | fmt.inf;
  std::uint32_t lo = 0, hi = fmt.inf;  // value(lo) <= a < value(hi)
  while (hi - lo > 1) {
    const std::uint32_t mid = (lo + hi) / 2;
    (value(mid) <= a ? lo : hi) = mid;
  }
  const double below = a - value(lo), above = value(hi) - a;
  const std::uint32_t pick = below < above ? lo : above < below ? hi : (lo % 2 == 0 ? lo : hi);
  return static_cast<std::uint16_t>(sign | pick);
}

const format half_format{[](std::uint16_t b) { return __half2float(__half{b}); }, 0x7c00, 65536.0};
const format bf16_format{[](std::uint16_t b) { return __bfloat162float(__nv_bfloat16{b}); }, 0x7f80,
                         std::ldexp(1.0, 128)};

std::uint16_t to_half(float f) { return __float2half_rn(f).bits; }
std::uint16_t to_bf16(float f) { return __float2bfloat16_rn(f).bits; }

void expect_rounds_like_search(std::uint16_t (*convert)(float), const format& fmt, float f) {
  const std::uint16_t got = convert(f);
  if (std::isnan(f)) {
    ASSERT_TRUE(std::isnan(fmt.to_float(got))) << std::hex << bits_of(f);
    ASSERT_EQ(std::signbit(fmt.to_float(got)), std::signbit(f)) << std::hex << bits_of(f);
    return;
  }
  ASSERT_EQ(got, round_by_search(f, fmt)) << std::hex << "float bits " << bits_of(f);
}

std::vector<float> boundary_floats() {
  return {0.0f,
          -0.0f,
          1.0f,
          -1.0f,
          INFINITY,
          -INFINITY,
          NAN,
          -NAN,
          float_of(0x7f800001u),
          float_of(0xff800001u),
          float_of(0x7fc00000u),
          float_of(0x7fbfffffu),
          std::numeric_limits<float>::max(),
          -std::numeric_limits<float>::max(),
          std::numeric_limits<float>::min(),
          std::numeric_limits<float>::denorm_min(),
          65504.0f,
          65519.0f,
          std::nextafter(65520.0f, 0.0f),
          65520.0f,
          65536.0f,
          -65520.0f,
          std::ldexp(1.0f, -24),
          std::ldexp(1.0f, -25),
          std::nextafter(std::ldexp(1.0f, -25), 1.0f),
          std::ldexp(3.0f, -26),
          std::ldexp(3.0f, -25),
          std::ldexp(1.0f, -14),
          std::nextafter(std::ldexp(1.0f, -14), 0.0f),
          1.0f + std::ldexp(1.0f, -11),
          1.0f + std::ldexp(3.0f, -11),
          2049.0f,
          float_of(0x7f7f8000u),
          float_of(0x7f7f7fffu),
          float_of(0x7f7fffffu),
          float_of(0x00008000u),
          float_of(0x00018000u),
          float_of(0x3f808000u),
          float_of(0x3f818000u)};
}

// every tie between two neighbours of the format, and the floats just either side of it
void check_all_midpoints(std::uint16_t (*convert)(float), const format& fmt) {
  for (std::uint32_t p = 0; p < fmt.inf; ++p) {
    const double lo = static_cast<double>(fmt.to_float(static_cast<std::uint16_t>(p)));
    const double hi = p + 1 == fmt.inf
                          ? fmt.overflow
                          : static_cast<double>(fmt.to_float(static_cast<std::uint16_t>(p + 1)));
    const auto mid = static_cast<float>((lo + hi) / 2);  // exact: one bit more than the format
    ASSERT_EQ(static_cast<double>(mid), (lo + hi) / 2);
    for (const float f : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY), -mid}) {
      expect_rounds_like_search(convert, fmt, f);
    }
  }
}

void check_random_floats(std::uint16_t (*convert)(float), const format& fmt, bool in_range) {
  std::mt19937_64 gen(2024);
  for (int i = 0; i < (1 << 21); ++i) {
    std::uint32_t b = static_cast<std::uint32_t>(gen());
    if (in_range)  // exponents around the half range: 2^-27 .. 2^16
      b = (b & 0x807fffffu) | ((100u + static_cast<std::uint32_t>(gen() % 44)) << 23);
    expect_rounds_like_search(convert, fmt, float_of(b));
  }
}

TEST(simt_half, float_to_half_rounds_to_nearest_even_on_boundaries) {
  for (const float f : boundary_floats()) expect_rounds_like_search(to_half, half_format, f);
  EXPECT_EQ(to_half(65520.0f), 0x7c00);
  EXPECT_EQ(to_half(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(to_half(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(to_half(std::ldexp(3.0f, -26)), 0x0001);  // 0.75 units of 2^-24
  EXPECT_EQ(to_half(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 units: the tie goes to even
  EXPECT_EQ(to_half(-0.0f), 0x8000);
  EXPECT_EQ(to_half(float_of(0x7f800001u)) & 0x7e00, 0x7e00);  // a low payload stays NaN
  check_all_midpoints(to_half, half_format);
}

TEST(simt_half, float_to_half_matches_a_reference_on_random_floats) {
  check_random_floats(to_half, half_format, false);
  check_random_floats(to_half, half_format, true);
}

TEST(simt_bf16, float_to_bfloat16_rounds_to_nearest_even_on_boundaries) {
  for (const float f : boundary_floats()) expect_rounds_like_search(to_bf16, bf16_format, f);
  EXPECT_EQ(to_bf16(float_of(0x7f7f8000u)), 0x7f80);  // ties past the largest finite to inf
  EXPECT_EQ(to_bf16(float_of(0x7f7f7fffu)), 0x7f7f);
  EXPECT_EQ(to_bf16(float_of(0x7f800001u)), 0x7fc0);
  check_all_midpoints(to_bf16, bf16_format);
}

TEST(simt_bf16, float_to_bfloat16_matches_a_reference_on_random_floats) {
  check_random_floats(to_bf16, bf16_format, false);
}

// ---- fp8: the conversion instruction's built-in ---------------------------------------

// a code's value from the format's fields (test-side, written apart from the runtime's encoder)
float fp8_value(std::uint16_t code, int mantissa_bits, int bias) {
  const int e = (code & 0x7f) >> mantissa_bits, m = code & ((1 << mantissa_bits) - 1);
  const float v = e == 0 ? std::ldexp(static_cast<float>(m), 1 - bias - mantissa_bits)
                         : std::ldexp(static_cast<float>((1 << mantissa_bits) + m), e - bias - mantissa_bits);
  return (code & 0x80) != 0 ? -v : v;
}

// rounding by search with the pattern past the largest finite standing for what an unbounded
// exponent would give next (e4m3: 480 for S.1111.111, e5m2: 65536 for the infinity)
const format e4m3_format{[](std::uint16_t b) { return fp8_value(b, 3, 7); }, 0x7f, 480.0};
const format e5m2_format{[](std::uint16_t b) { return fp8_value(b, 2, 15); }, 0x7c, 65536.0};

struct fp8_case {
  __nv_fp8_interpretation_t interpretation;
  const format& fmt;
  std::uint16_t max_code;
};
const fp8_case fp8_cases[] = {{__NV_E4M3, e4m3_format, 0x7e}, {__NV_E5M2, e5m2_format, 0x7b}};

// what the instruction gives: a NaN 0x7f; else the nearest code, ties to even; a rounding past
// the format is +-max under satfinite, the pattern past it (NaN, Inf) without
std::uint16_t fp8_expected(float f, const fp8_case& c, __nv_saturation_t saturate) {
  if (std::isnan(f)) return 0x7f;
  const std::uint16_t found = round_by_search(f, c.fmt);  // its sign is bit 15
  const std::uint16_t sign = (found & 0x8000) != 0 ? 0x80 : 0, magnitude = found & 0x7fff;
  if (saturate == __NV_SATFINITE && magnitude == c.fmt.inf) return sign | c.max_code;
  return sign | magnitude;
}

void expect_fp8(float f, const fp8_case& c, __nv_saturation_t saturate) {
  ASSERT_EQ(__nv_cvt_float_to_fp8(f, saturate, c.interpretation), fp8_expected(f, c, saturate))
      << std::hex << "float bits " << bits_of(f) << (c.interpretation == __NV_E4M3 ? " e4m3" : " e5m2")
      << (saturate == __NV_SATFINITE ? " satfinite" : " nosat");
}

TEST(simt_fp8, the_conversion_rounds_to_nearest_even_and_saturates_as_declared) {
  for (const fp8_case& c : fp8_cases) {
    for (const auto saturate : {__NV_SATFINITE, __NV_NOSAT}) {
      for (const float f : boundary_floats()) expect_fp8(f, c, saturate);
      // every code's value, and every tie between neighbours with the floats either side of it
      for (std::uint32_t p = 0; p < c.fmt.inf; ++p) {
        const double lo = c.fmt.to_float(static_cast<std::uint16_t>(p));
        const double hi = p + 1 == c.fmt.inf ? c.fmt.overflow : c.fmt.to_float(static_cast<std::uint16_t>(p + 1));
        const auto mid = static_cast<float>((lo + hi) / 2);
        ASSERT_EQ(static_cast<double>(mid), (lo + hi) / 2);
        for (const float f : {static_cast<float>(lo), mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
          expect_fp8(f, c, saturate);
          expect_fp8(-f, c, saturate);
        }
      }
      std::mt19937_64 gen(8);
      for (int i = 0; i < (1 << 20); ++i) {
        std::uint32_t b = static_cast<std::uint32_t>(gen());
        if (i % 2 == 0)  // exponents around the formats' ranges: 2^-20 .. 2^17
          b = (b & 0x807fffffu) | ((107u + static_cast<std::uint32_t>(gen() % 38)) << 23);
        expect_fp8(float_of(b), c, saturate);
      }
    }
  }
  EXPECT_EQ(__nv_cvt_float_to_fp8(448.0f, __NV_NOSAT, __NV_E4M3), 0x7e);
  EXPECT_EQ(__nv_cvt_float_to_fp8(464.0f, __NV_NOSAT, __NV_E4M3), 0x7e);  // the tie goes to even 448
  EXPECT_EQ(__nv_cvt_float_to_fp8(std::nextafter(464.0f, 500.0f), __NV_NOSAT, __NV_E4M3), 0x7f);
  EXPECT_EQ(__nv_cvt_float_to_fp8(-INFINITY, __NV_SATFINITE, __NV_E4M3), 0xfe);
  EXPECT_EQ(__nv_cvt_float_to_fp8(-INFINITY, __NV_NOSAT, __NV_E4M3), 0xff);
  EXPECT_EQ(__nv_cvt_float_to_fp8(61440.0f, __NV_NOSAT, __NV_E5M2), 0x7c);  // the tie goes to Inf
  EXPECT_EQ(__nv_cvt_float_to_fp8(61440.0f, __NV_SATFINITE, __NV_E5M2), 0x7b);
  EXPECT_EQ(__nv_cvt_float_to_fp8(INFINITY, __NV_SATFINITE, __NV_E5M2), 0x7b);
  EXPECT_EQ(__nv_cvt_float_to_fp8(-NAN, __NV_SATFINITE, __NV_E5M2), 0x7f);
  EXPECT_EQ(__nv_cvt_float_to_fp8(-0.0f, __NV_SATFINITE, __NV_E4M3), 0x80);
  EXPECT_EQ(__nv_cvt_float_to_fp8(0x1p-10f, __NV_SATFINITE, __NV_E4M3), 0x00);  // half a quantum: even 0
  EXPECT_EQ(__nv_cvt_float_to_fp8(0x1.8p-9f, __NV_SATFINITE, __NV_E4M3), 0x02);  // 1.5 quanta: even 2
  EXPECT_EQ(__nv_cvt_float_to_fp8(0x1.ep-7f, __NV_SATFINITE, __NV_E4M3), 0x08);  // 7.5 quanta: the smallest normal
}

TEST(simt_fp8, a_pair_puts_the_first_code_in_the_low_byte) {
  EXPECT_EQ(__nv_cvt_float2_to_fp8x2(make_float2(1.0f, -2.0f), __NV_SATFINITE, __NV_E4M3), 0xc038);
  EXPECT_EQ(__nv_cvt_float2_to_fp8x2(make_float2(1e9f, NAN), __NV_SATFINITE, __NV_E5M2), 0x7f7b);
}

// ---- cost -----------------------------------------------------------------------------

TEST(simt_perf, a_64_by_4096_row_reduction_on_one_core) {
  constexpr int rows = 64, n = 4096, repeats = 20;
  const threads_scope threads(1);
  const std::vector<float> x = random_matrix(rows, n, 2);
  std::vector<float> out(rows);
  simt::launch(row_sum, dim3(rows), dim3(256), x.data(), out.data(), n);  // grows the fiber pool
  double best = 1e9, total = 0;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    simt::launch(row_sum, dim3(rows), dim3(256), x.data(), out.data(), n);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    best = std::min(best, ms);
    total += ms;
  }
  std::printf(
      "[ perf     ] 64 x 4096 row reduction, 256 threads/block, 1 OS thread: best %.2f ms, "
      "mean %.2f ms over %d launches\n",
      best, total / repeats, repeats);
  RecordProperty("best_ms", std::to_string(best));
  const std::vector<float> expected = row_sum_reference(x, rows, n, 256);
  for (int r = 0; r < rows; ++r) EXPECT_EQ(bits_of(out[r]), bits_of(expected[r]));
}

}  // namespace
