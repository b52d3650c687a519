// The shipped cuda kernels inside a CUDA graph: the forward and the forward+backward are
// captured from a stream, replayed, and must give the bits of the same calls launched on the
// stream, outputs and workspace poisoned before every replay. The small shape is the
// document's 128x257, whose forward is one kernel and forward+backward two; a tall shape
// takes the backward with a partial table (three kernels). Each shape prints its launch
// count and microseconds per call, on the stream and as a graph. Exits 77 without a device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "normcheck/kernel.hpp"

namespace nc::test {
namespace {

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

const kernel& plugin() {
  static const kernel k = kernel::shipped("cuda");
  return k;
}

std::size_t size_of(nc_dtype t) { return t == NC_F32 ? 4 : 2; }

// random finite values of magnitude 0.25 to 4 as raw bits of the dtype
std::vector<std::uint8_t> random_bits(nc_dtype t, std::int64_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint8_t> out(std::size_t(count) * size_of(t));
  for (std::int64_t i = 0; i < count; ++i) {
    const std::uint64_t v = rng();
    const std::uint32_t sign = v & 1, exponent = (v >> 1) % 4;  // 2^-2 .. 2^1
    if (t == NC_F32) {
      const std::uint32_t bits = sign << 31 | (125 + exponent) << 23 | (std::uint32_t(v >> 8) & 0x7fffff);
      std::memcpy(&out[std::size_t(i) * 4], &bits, 4);
    } else {
      const std::uint16_t bits = t == NC_F16 ? std::uint16_t(sign << 15 | (13 + exponent) << 10 | ((v >> 8) & 0x3ff))
                                             : std::uint16_t(sign << 15 | (125 + exponent) << 7 | ((v >> 8) & 0x7f));
      std::memcpy(&out[std::size_t(i) * 2], &bits, 2);
    }
  }
  return out;
}

// one dense call's operands in device memory
struct call {
  std::int64_t m, n;
  nc_dtype x_type, gamma_type;
  cudaStream_t stream = nullptr;
  std::vector<void*> owned;
  void *x, *gamma, *dy, *y, *r, *dx, *dgamma, *workspace = nullptr;
  std::size_t workspace_bytes = 0;

  call(std::int64_t rows, std::int64_t cols, nc_dtype xt, nc_dtype gt) : m(rows), n(cols), x_type(xt), gamma_type(gt) {
    x = upload(random_bits(xt, m * n, 1)), dy = upload(random_bits(xt, m * n, 2));
    gamma = upload(random_bits(gt, n, 3));
    y = device(bytes_x()), dx = device(bytes_x()), r = device(std::size_t(m) * 4), dgamma = device(bytes_gamma());
    workspace_bytes = plugin().workspace_size(backward_args());
    if (workspace_bytes > 0) workspace = device(workspace_bytes);
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  }
  ~call() {
    for (void* p : owned) plugin().release(p);
    if (stream) cudaStreamDestroy(stream);
  }

  std::size_t bytes_x() const { return std::size_t(m * n) * size_of(x_type); }
  std::size_t bytes_gamma() const { return std::size_t(n) * size_of(gamma_type); }
  void* device(std::size_t bytes) { return owned.emplace_back(plugin().alloc(bytes)); }
  void* upload(const std::vector<std::uint8_t>& host) {
    void* p = device(host.size());
    plugin().upload(p, host.data(), host.size());
    return p;
  }

  nc_matrix matrix(void* data) const { return {data, x_type, 0, n, 1}; }
  nc_forward_args forward_args() const {
    return {m, n, 1e-6f, matrix(x), {gamma, gamma_type, 0, 1}, matrix(y), {r, NC_F32, 0, 1}, stream};
  }
  nc_backward_args backward_args() const {
    return {m, n, matrix(x), {gamma, gamma_type, 0, 1}, matrix(dy), {r, NC_F32, 0, 1}, matrix(dx),
            {dgamma, gamma_type, 0, 1}, workspace, workspace_bytes, stream};
  }
  void forward_and_backward() const {
    plugin().forward(forward_args());
    plugin().backward(backward_args());
  }

  // every output (and the workspace) as 0xff bytes: NaN in every dtype
  void poison() const {
    const std::initializer_list<std::pair<void*, std::size_t>> outputs = {
        {y, bytes_x()}, {dx, bytes_x()}, {r, std::size_t(m) * 4}, {dgamma, bytes_gamma()}, {workspace, workspace_bytes}};
    for (auto [p, bytes] : outputs)
      if (bytes > 0) cudaMemsetAsync(p, 0xff, bytes, stream);
  }

  struct outputs {
    std::vector<std::uint8_t> y, r, dx, dgamma;
  };
  outputs download() const {
    cudaStreamSynchronize(stream);
    outputs o{std::vector<std::uint8_t>(bytes_x()), std::vector<std::uint8_t>(std::size_t(m) * 4),
              std::vector<std::uint8_t>(bytes_x()), std::vector<std::uint8_t>(bytes_gamma())};
    plugin().download(o.y.data(), y, o.y.size());
    plugin().download(o.r.data(), r, o.r.size());
    plugin().download(o.dx.data(), dx, o.dx.size());
    plugin().download(o.dgamma.data(), dgamma, o.dgamma.size());
    return o;
  }
};

// the kernel nodes of a graph
std::size_t kernel_nodes(cudaGraph_t graph) {
  std::size_t count = 0;
  cudaGraphGetNodes(graph, nullptr, &count);
  std::vector<cudaGraphNode_t> nodes(count);
  cudaGraphGetNodes(graph, nodes.data(), &count);
  std::size_t kernels = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    cudaGraphNodeGetType(node, &type);
    kernels += type == cudaGraphNodeTypeKernel;
  }
  return kernels;
}

// microseconds per call of f, launched 200 times back to back on the stream
template <class F>
double microseconds_per_call(cudaStream_t stream, F&& f) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start), cudaEventCreate(&stop);
  for (int i = 0; i < 20; ++i) f();
  cudaEventRecord(start, stream);
  for (int i = 0; i < 200; ++i) f();
  cudaEventRecord(stop, stream);
  cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start), cudaEventDestroy(stop);
  return 1000.0 * ms / 200;
}

struct shape {
  std::int64_t m, n;
  nc_dtype x, gamma;
  std::size_t forward_kernels, forward_backward_kernels;  // at most
};

std::string name_of(const shape& s) {
  const auto dtype = [](nc_dtype t) { return t == NC_F32 ? "fp32" : t == NC_F16 ? "fp16" : "bf16"; };
  return std::to_string(s.m) + "x" + std::to_string(s.n) + " " + dtype(s.x) +
         (s.gamma != s.x ? std::string(" gamma ") + dtype(s.gamma) : "");
}

class graph : public ::testing::TestWithParam<shape> {};

TEST_P(graph, a_replay_gives_the_bits_of_the_stream_calls) {
  const shape s = GetParam();
  call c(s.m, s.n, s.x, s.gamma);
  // on the stream first: the reference, and the plugin's one-time setup outside any capture
  c.poison();
  c.forward_and_backward();
  const call::outputs expected = c.download();

  cudaGraph_t forward_graph, both_graph;
  cudaGraphExec_t forward_exec, both_exec;
  CUDA_OK(cudaStreamBeginCapture(c.stream, cudaStreamCaptureModeGlobal));
  plugin().forward(c.forward_args());
  CUDA_OK(cudaStreamEndCapture(c.stream, &forward_graph));
  CUDA_OK(cudaStreamBeginCapture(c.stream, cudaStreamCaptureModeGlobal));
  c.forward_and_backward();
  CUDA_OK(cudaStreamEndCapture(c.stream, &both_graph));
  CUDA_OK(cudaGraphInstantiate(&forward_exec, forward_graph, 0));
  CUDA_OK(cudaGraphInstantiate(&both_exec, both_graph, 0));
  const std::size_t forward_kernels = kernel_nodes(forward_graph), both_kernels = kernel_nodes(both_graph);
  EXPECT_LE(forward_kernels, s.forward_kernels);
  EXPECT_LE(both_kernels, s.forward_backward_kernels);

  c.poison();
  CUDA_OK(cudaGraphLaunch(forward_exec, c.stream));
  const call::outputs forward_only = c.download();
  EXPECT_EQ(forward_only.y, expected.y) << "y of the forward's replay";
  EXPECT_EQ(forward_only.r, expected.r) << "r of the forward's replay";
  for (int replay = 0; replay < 2; ++replay) {
    c.poison();
    CUDA_OK(cudaGraphLaunch(both_exec, c.stream));
    const call::outputs got = c.download();
    EXPECT_EQ(got.y, expected.y) << "y, replay " << replay;
    EXPECT_EQ(got.r, expected.r) << "r, replay " << replay;
    EXPECT_EQ(got.dx, expected.dx) << "dx, replay " << replay;
    EXPECT_EQ(got.dgamma, expected.dgamma) << "dgamma, replay " << replay;
  }

  const double forward_stream = microseconds_per_call(c.stream, [&] { plugin().forward(c.forward_args()); });
  const double both_stream = microseconds_per_call(c.stream, [&] { c.forward_and_backward(); });
  const double forward_replay = microseconds_per_call(c.stream, [&] { cudaGraphLaunch(forward_exec, c.stream); });
  const double both_replay = microseconds_per_call(c.stream, [&] { cudaGraphLaunch(both_exec, c.stream); });
  std::printf("%s: forward %zu launch(es), %.2f us a call on the stream, %.2f us as a graph; forward+backward %zu "
              "launches, %.2f us on the stream, %.2f us as a graph\n",
              name_of(s).c_str(), forward_kernels, forward_stream, forward_replay, both_kernels, both_stream,
              both_replay);

  cudaGraphExecDestroy(forward_exec), cudaGraphExecDestroy(both_exec);
  cudaGraphDestroy(forward_graph), cudaGraphDestroy(both_graph);
}

INSTANTIATE_TEST_SUITE_P(shapes, graph,
                         ::testing::Values(shape{128, 257, NC_F32, NC_F32, 1, 2}, shape{128, 257, NC_F16, NC_F16, 1, 2},
                                           shape{128, 257, NC_BF16, NC_BF16, 1, 2},
                                           shape{128, 257, NC_BF16, NC_F32, 1, 2},
                                           shape{128, 256, NC_BF16, NC_BF16, 1, 2},
                                           shape{8192, 1024, NC_BF16, NC_BF16, 1, 3}),
                         [](const auto& info) {
                           std::string name = name_of(info.param);
                           for (char& ch : name)
                             if (ch == ' ') ch = '_';
                           return name;
                         });

}  // namespace
}  // namespace nc::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  return RUN_ALL_TESTS();
}
