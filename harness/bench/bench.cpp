// normcheck bench: the source document's benchmark protocol, run on a loaded kernel plugin
// (default: the shipped cuda plugin) through the C++ API, timed with CUDA events.
//
// Protocol. For every shape M×N and dtype (gamma in x's dtype, epsilon 1e-6): 20 warm-up
// calls, then 50 samples; a sample is cudaEventRecord(start) on the default stream, 20
// calls back to back with no synchronization between them, cudaEventRecord(stop),
// cudaEventSynchronize(stop), and its value is the elapsed time / 20. The figure is the
// median of the 50 samples (min and max go to the JSON). The counts are options.
//
// Inside the timed region (whole calls, as the document timed its autograd call):
//   fwd      one forward() through the plugin table: its host-side contract and pointer
//            checks, the path choice, the kernel launch.
//   fwd+bwd  forward(), then workspace_size() (the workspace query), then backward(): its
//            host checks and its two kernels (dx with the dgamma partial table, then the
//            column reduction into dgamma). The workspace comes from a cache filled once
//            per input set before timing at the size the query returns, as PyTorch's
//            caching allocator served the document's autograd call; every call still
//            makes the query and grows the cache if it ever asked for more. With
//            --alloc-per-call the plugin's alloc() and free() of the workspace (cudaMalloc,
//            cudaFree) are inside every call instead.
// Outside it: allocating x, dy, gamma, y, r, dx, dgamma (one set of each per input set),
// filling the inputs with random values (never zeros) and poisoning the outputs.
//
// Bytes, counted as BASELINE.md does (the fewest bytes a call must move; gamma, r, dgamma
// and the workspace are ignored), s being the bytes of one element of x:
//   fwd      read x + write y                                 = 2·M·N·s
//   fwd+bwd  fwd + read x and dy + write dx                   = 5·M·N·s
// Variants (--variants, abi.h "Variants"): the same protocol on one operation of each: a
// residual add (the rounded sum into a separate residual_out, vLLM's) also reads residual and
// writes residual_out, and its backward reads residual_grad: fwd 4·M·N·s, fwd+bwd 8·M·N·s;
// Gemma's offset moves what the plain operator moves; per-head rows are [M/8, 8, N] views
// (QK-norm of 8 heads; 2-D rows where 8 does not divide M).
// GB/s = bytes / median time (1 GB = 1e9 bytes). "% copy" is that over the device-to-device
// copy bandwidth measured in the same run: cudaMemcpyAsync of a 1 GiB buffer, bytes read +
// bytes written (2 GiB a copy), median of 10 copies after 3 warm-up copies.
//
// Cache. If a forward working set (x and y) fits in the L2 budget (--l2-mb, 60 MB), the
// calls rotate among ceil(2·L2 / (2·M·N·s)) input sets (at most 1024), each with its own
// inputs and outputs, so that a call never finds its operands left in L2 by the previous
// one. torch_peer.py uses the same rule.
//
// Before timing, rows 0, M/2 and M-1 of y, r and dx of one call pair on the first input set
// are judged by the properties' judges (a spot check that the calls compute the operator and
// write their outputs, not the correctness harness); a row that fails is reported, not timed.
//
// Host work. At the first latency-bound shape (M·N <= 2^18; 128×257 by default) each dtype's
// forward and workspace query + backward are timed on the host clock against an empty kernel
// launched as the shipped kernels launch (launch_floor.cu): the difference is what a call costs
// the calling thread besides its launch. The reports name the commit built (commit.cmake).
#include "bench/bench.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "normcheck_build_commit.hpp"
#include "bench/launch_floor.hpp"
#include "normcheck/harness/case.hpp"
#include "normcheck/harness/execute.hpp"
#include "normcheck/harness/exit_code.hpp"
#include "normcheck/harness/failure.hpp"
#include "normcheck/harness/options.hpp"
#include "normcheck/harness/property.hpp"
#include "normcheck/harness/report.hpp"
#include "normcheck/harness/worker.hpp"
#include "normcheck/kernel.hpp"
#include "normcheck/nvidia.hpp"
#include "normcheck/oracles/dtype.hpp"
#include "normcheck/variant.hpp"

namespace nc::bench {
namespace {

// ---------------------------------------------------------------- CUDA checks

// the file's name without its folders: error messages never carry machine paths
constexpr const char* base_name(const char* path) {
  const char* base = path;
  for (const char* p = path; *p; ++p)
    if (*p == '/') base = p + 1;
  return base;
}

void cuda_check(cudaError_t e, const char* call, const char* file, int line) {
  if (e == cudaSuccess) return;
  throw std::runtime_error(std::string(call) + " failed at " + base_name(file) + ":" + std::to_string(line) +
                           ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

#define NC_CUDA(call) ::nc::bench::cuda_check((call), #call, __FILE__, __LINE__)

// ---------------------------------------------------------------- options

struct shape {
  std::int64_t m, n;
};

struct options {
  std::string kernel_path;  // empty: the shipped cuda plugin
  std::vector<shape> shapes{{128, 257}, {4096, 4096}, {32768, 4096}, {16384, 8192}, {65536, 1024}, {8192, 16384}};
  std::vector<nc_dtype> dtypes{NC_F32, NC_F16, NC_BF16};
  std::vector<std::string> variants{"rmsnorm"};
  int warmup = 20, samples = 50, calls = 20;
  std::string out = "reports/bench";
  std::string commit = NORMCHECK_BUILD_COMMIT;  // the commit built (commit.cmake); --commit names another
  double l2_mb = 60;
  bool alloc_per_call = false;
  std::vector<std::string> peers;  // --peer, in the order given
};

constexpr float epsilon = 1e-6f;
constexpr int copy_warmup = 3, copy_samples = 10;
constexpr std::size_t copy_bytes = std::size_t(1) << 30;
constexpr std::int64_t max_input_sets = 1024;

const char* usage =
    "usage: normcheck bench [options]\n"
    "Times forward and forward+backward of a kernel plugin on the CUDA device with the\n"
    "document's protocol and writes a Markdown table (stdout and OUT/normcheck.md) and\n"
    "OUT/normcheck.json.\n"
    "  --kernel PATH     plugin to time (default: the shipped cuda plugin)\n"
    "  --shapes LIST     MxN,MxN,... (default 128x257,4096x4096,32768x4096,16384x8192,\n"
    "                    65536x1024,8192x16384)\n"
    "  --dtypes LIST     fp32,fp16,bf16 (default all three; gamma in x's dtype)\n"
    "  --variants LIST   rmsnorm,add_rmsnorm,gemma_rmsnorm,add_gemma_rmsnorm,head_rmsnorm, a\n"
    "                    quantized output (rmsnorm_fp8_static, rmsnorm_int8_per_token, ...,\n"
    "                    `normcheck variants` lists them), quantized (five of those) or all\n"
    "                    (default rmsnorm): rows of each, same protocol (a residual add: the\n"
    "                    rounded sum into a separate residual_out; per-head rows: 8 heads; a\n"
    "                    quantized output: the forward only)\n"
    "  --warmup N        warm-up calls before each timing (default 20)\n"
    "  --samples N       samples per timing; the median is reported (default 50)\n"
    "  --calls N         calls per sample (default 20)\n"
    "  --out DIR         folder of the reports (default reports/bench)\n"
    "  --commit TEXT     the commit the reports name (default: the one built, with\n"
    "                    '+changes' when tracked files differed from it)\n"
    "  --l2-mb MB        rotate input sets while x and y fit in this much L2 (default 60)\n"
    "  --alloc-per-call  alloc() and free() the backward workspace inside every timed call\n"
    "  --peer SPEC       also time a peer on the same shapes, dtypes and protocol, in the same\n"
    "                    run (repeatable): a kernel plugin (.so), or through the torch peer\n"
    "                    (torch_peer.py, beside the shipped plugins or NORMCHECK_TORCH_PEER)\n"
    "                    `eager` (torch.nn.functional.rms_norm), `compiled` (under\n"
    "                    torch.compile), or a Python kernel FILE.py[:FUNCTION] (autograd style);\n"
    "                    then OUT/compare.md puts every kernel side by side\n"
    "Exit status: 0 all rows timed and spot-checked, 1 a row failed, 64 usage, 77 no device.\n";

using nc::usage_error;

std::int64_t parse_int(const std::string& option, const std::string& text, std::int64_t min) {
  return std::int64_t(nc::parse_integer(option, text, std::uint64_t(min), std::numeric_limits<std::int64_t>::max()));
}

std::optional<nc_dtype> parse_dtype(const std::string& s) {
  if (s == "fp32" || s == "f32" || s == "float32" || s == "float") return NC_F32;
  if (s == "fp16" || s == "f16" || s == "float16" || s == "half") return NC_F16;
  if (s == "bf16" || s == "bfloat16") return NC_BF16;
  return std::nullopt;
}

// the dtype's name as torch spells it, so both reports join on it
const char* dtype_label(nc_dtype t) { return t == NC_F32 ? "float32" : t == NC_F16 ? "float16" : "bfloat16"; }
std::size_t dtype_bytes(nc_dtype t) { return t == NC_F32 ? 4 : 2; }

options parse(int argc, char** argv, bool& help) {
  const int first = argc > 0 && std::string(argv[0]) == "bench" ? 1 : 0;
  const nc::options a(argc, argv, first, "normcheck bench",
                      {"kernel", "out", "commit", "warmup", "samples", "calls", "l2-mb", "shapes", "variants", "dtypes"},
                      {"alloc-per-call"}, {"peer"});
  help = a.help();
  a.no_positional("normcheck bench");
  options o;
  const int most = std::numeric_limits<int>::max();
  if (auto v = a.get("kernel")) o.kernel_path = *v;
  if (auto v = a.get("out")) o.out = *v;
  if (auto v = a.get("commit")) o.commit = *v;
  o.warmup = int(a.integer("warmup", o.warmup, 0, most));
  o.samples = int(a.integer("samples", o.samples, 1, most));
  o.calls = int(a.integer("calls", o.calls, 1, most));
  o.l2_mb = double(a.integer("l2-mb", std::uint64_t(o.l2_mb), 0, 1 << 20));
  o.alloc_per_call = a.has("alloc-per-call");
  for (const std::string& spec : a.list("peer")) {
    const bool plugin = spec.size() > 3 && spec.ends_with(".so");
    if (!plugin && spec != "eager" && spec != "compiled" && spec.find(".py") == std::string::npos)
      throw usage_error("--peer '" + spec + "': need a plugin (.so), eager, compiled or FILE.py[:FUNCTION]");
    o.peers.push_back(spec);
  }
  if (auto v = a.get("shapes")) {
    o.shapes.clear();
    for (const std::string& s : nc::split_list(*v)) {
      const auto x = s.find_first_of("xX");
      if (x == std::string::npos) throw usage_error("--shapes '" + s + "': need MxN, e.g. 4096x4096");
      o.shapes.push_back({parse_int("--shapes M", s.substr(0, x), 1), parse_int("--shapes N", s.substr(x + 1), 1)});
    }
    if (o.shapes.empty()) throw usage_error("--shapes: need at least one MxN");
  }
  if (auto text = a.get("variants")) {
    o.variants.clear();
    for (const std::string& v : nc::split_list(*text)) {
      const std::vector<std::string> quantized = {"rmsnorm_fp8_static", "rmsnorm_fp8_per_token", "rmsnorm_fp8_per_group",
                                                  "rmsnorm_int8_per_token", "add_rmsnorm_fp8_static"};
      if (v == "all" || v == "quantized") {
        if (v == "all") o.variants = {"rmsnorm", "add_rmsnorm", "gemma_rmsnorm", "add_gemma_rmsnorm", "head_rmsnorm"};
        o.variants.insert(o.variants.end(), quantized.begin(), quantized.end());
        continue;
      }
      if (!is_variant_name(v) || v == "offset_rmsnorm")
        throw usage_error("--variants '" + v + "': need rmsnorm, add_rmsnorm, gemma_rmsnorm, add_gemma_rmsnorm, "
                          "head_rmsnorm, a quantized output, quantized or all (normcheck variants lists them)");
      o.variants.push_back(v);
    }
    if (o.variants.empty()) throw usage_error("--variants: need at least one variant");
  }
  if (auto text = a.get("dtypes")) {
    o.dtypes.clear();
    for (const std::string& s : nc::split_list(*text)) {
      const auto t = parse_dtype(s);
      if (!t) throw usage_error("--dtypes '" + s + "': need fp32, fp16 or bf16");
      o.dtypes.push_back(*t);
    }
    if (o.dtypes.empty()) throw usage_error("--dtypes: need at least one dtype");
  }
  return o;
}

// ---------------------------------------------------------------- host data

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// count values uniform in [lo, hi), stored in dtype t; chunks filled on all cores
std::vector<unsigned char> random_values(nc_dtype t, std::int64_t count, float lo, float hi, std::uint64_t seed) {
  std::vector<unsigned char> out(std::size_t(count) * dtype_bytes(t));
  const std::int64_t chunk = 1 << 20;
  const std::int64_t chunks = (count + chunk - 1) / chunk;
  auto fill = [&](std::int64_t first_chunk, std::int64_t step) {
    for (std::int64_t c = first_chunk; c < chunks; c += step) {
      std::uint64_t state = seed * 0x100000001b3ull + std::uint64_t(c);
      for (std::int64_t i = c * chunk; i < std::min(count, (c + 1) * chunk); ++i) {
        const float u = float(splitmix64(state) >> 40) * 0x1p-24f;  // [0, 1)
        const float v = lo + (hi - lo) * u;
        oracle::store(out.data(), harness::oracle_type(t), i, v);  // exact for fp32, round to nearest even else
      }
    }
  };
  const std::int64_t workers =
      std::min<std::int64_t>(chunks, std::max(1u, std::min(32u, std::thread::hardware_concurrency())));
  std::vector<std::thread> pool;
  for (std::int64_t w = 1; w < workers; ++w) pool.emplace_back(fill, w, workers);
  fill(0, workers);
  for (auto& th : pool) th.join();
  return out;
}

// ---------------------------------------------------------------- plugin memory

// a block of plugin memory, freed when it goes
class device_block {
 public:
  device_block(const kernel& k, std::size_t bytes) : k_(&k), bytes_(bytes) {
    if (bytes > 0) p_ = k.alloc(bytes);
  }
  ~device_block() { release(); }
  device_block(device_block&& o) noexcept : k_(o.k_), p_(std::exchange(o.p_, nullptr)), bytes_(o.bytes_) {}
  device_block& operator=(device_block&& o) noexcept {
    if (this != &o) release(), k_ = o.k_, p_ = std::exchange(o.p_, nullptr), bytes_ = o.bytes_;
    return *this;
  }
  void* get() const { return p_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void release() noexcept {
    if (p_ == nullptr) return;
    try {
      k_->free(p_);
    } catch (const std::exception& e) {
      std::cerr << "normcheck bench: " << e.what() << "\n";
    }
    p_ = nullptr;
  }
  const kernel* k_;
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

// the operation a variant's rows time, and the heads of its rows. A quantized output: e4m3 for
// fp8 (int8 otherwise), as the shipped kernels declare them: a static scale applied by its
// reciprocal (vLLM's), a per-token one under vLLM's floor (int8: divided, no floor), groups of
// 128 columns divided under a floor (DeepSeek-V3's 1x128 blocks)
nc_operation operation_of(const std::string& variant) {
  const bool add = variant.starts_with("add_"), gemma = variant.find("gemma") != std::string::npos;
  nc_operation op{add ? NC_RESIDUAL_ROUNDED : NC_RESIDUAL_NONE, 0, gemma ? 1.0f : 0.0f,
                  variant == "head_rmsnorm" ? NC_ROWS_HEADS : NC_ROWS_MATRIX};
  if (variant.find("_fp8_") == std::string::npos && variant.find("_int8_") == std::string::npos) return op;
  const bool int8 = variant.find("_int8_") != std::string::npos;
  op.quant = int8 ? NC_QUANT_INT8 : NC_QUANT_FP8_E4M3;
  if (variant.ends_with("per_token")) {
    op.scale = NC_SCALE_PER_TOKEN;
    op.apply = int8 ? NC_APPLY_DIVIDE : NC_APPLY_RECIPROCAL;
    op.scale_floor = int8 ? 0.0f : 1.0f / (448.0f * 512.0f);
  } else if (variant.ends_with("per_group")) {
    op.scale = NC_SCALE_PER_GROUP, op.apply = NC_APPLY_DIVIDE, op.group = 128;
    op.scale_floor = int8 ? 0.0f : 1e-10f / 448.0f;
  }
  return op;
}
// a static scale that keeps the inputs' y (|y| < about 3) inside the format, not a power of two
float static_scale(const nc_operation& op) { return op.quant == NC_QUANT_INT8 ? 0.0247f : 0.00703f; }
constexpr std::int64_t bench_heads = 8;
std::int64_t heads_of(const nc_operation& op, std::int64_t m) {
  return op.rows == NC_ROWS_HEADS && m % bench_heads == 0 ? bench_heads : 1;
}

// one input set: its operands carved out of one block, its workspace in another
struct input_set {
  device_block block;
  device_block workspace;
  nc_forward_args fwd{};
  nc_backward_args bwd{};
};

struct host_inputs {
  std::vector<unsigned char> x, dy, gamma, residual, residual_grad;
};

constexpr std::size_t align_up(std::size_t v) { return (v + 255) / 256 * 256; }

input_set make_set(const kernel& k, std::int64_t m, std::int64_t n, nc_dtype t, const nc_operation& op,
                   std::uint64_t seed, host_inputs* keep) {
  const std::size_t s = dtype_bytes(t);
  const std::size_t mat = align_up(std::size_t(m) * std::size_t(n) * s), vec = align_up(std::size_t(n) * s),
                    rows = align_up(std::size_t(m) * 4);
  const bool add = op.residual != NC_RESIDUAL_NONE;
  // a residual add's residual, residual_out and residual_grad follow the plain operands, a
  // quantized output's scales (fp32, at most M x N/1) them
  const std::size_t scales = quantizes(op) ? align_up(std::size_t(m) * std::size_t(scale_cols(op, n)) * 4) : 0;
  input_set set{device_block(k, (add ? 7 : 4) * mat + 2 * vec + rows + scales), device_block(k, 0)};
  char* base = static_cast<char*>(set.block.get());
  void *x = base, *dy = base + mat, *y = base + 2 * mat, *dx = base + 3 * mat;
  void *gamma = base + 4 * mat, *dgamma = base + 4 * mat + vec, *r = base + 4 * mat + 2 * vec;
  char* extra = base + 4 * mat + 2 * vec + rows;
  void *residual = extra, *residual_out = extra + mat, *residual_grad = extra + 2 * mat;
  void* scale = extra + (add ? 3 * mat : 0);

  host_inputs in{random_values(t, m * n, -2.0f, 2.0f, 5 * seed + 1), random_values(t, m * n, -1.0f, 1.0f, 5 * seed + 2),
                 random_values(t, n, 0.5f, 1.5f, 5 * seed + 3), {}, {}};
  k.upload(x, in.x.data(), in.x.size());
  k.upload(dy, in.dy.data(), in.dy.size());
  k.upload(gamma, in.gamma.data(), in.gamma.size());
  // outputs poisoned with 0xFF bytes (NaN in every dtype): an unwritten element shows
  NC_CUDA(cudaMemset(y, 0xFF, 2 * mat));          // y and dx, adjacent
  NC_CUDA(cudaMemset(dgamma, 0xFF, vec + rows));  // dgamma and r, adjacent
  if (add) {
    in.residual = random_values(t, m * n, -2.0f, 2.0f, 5 * seed + 4);
    in.residual_grad = random_values(t, m * n, -1.0f, 1.0f, 5 * seed + 5);
    k.upload(residual, in.residual.data(), in.residual.size());
    k.upload(residual_grad, in.residual_grad.data(), in.residual_grad.size());
    NC_CUDA(cudaMemset(residual_out, 0xFF, mat));
  }
  if (keep) *keep = std::move(in);

  // per-head rows: [M/heads, heads, N] (row i at i·N, the memory of the 2-D rows)
  const std::int64_t heads = heads_of(op, m);
  const nc_matrix mx{x, t, 0, heads * n, 1}, mdy{dy, t, 0, heads * n, 1}, my{y, t, 0, heads * n, 1},
      mdx{dx, t, 0, heads * n, 1};
  const nc_vector vg{gamma, t, 0, 1}, vdg{dgamma, t, 0, 1}, vr{r, NC_F32, 0, 1};
  set.fwd = {m, n, epsilon, mx, vg, my, vr, nullptr};
  set.bwd = {m, n, mx, vg, mdy, vr, mdx, vdg, nullptr, 0, nullptr};
  set.fwd.op = set.bwd.op = op;
  if (quantizes(op)) {
    // y holds the codes (one byte each, rows of N); the backward is not timed
    set.fwd.y = {y, code_dtype_of(op.quant, t), 0, n, 1};
    set.fwd.scale = {scale, NC_F32, 0, scale_cols(op, n), 1};
    set.bwd.op = nc_operation{add ? NC_RESIDUAL_ROUNDED : NC_RESIDUAL_NONE};
    if (op.scale == NC_SCALE_STATIC) {
      const float s = static_scale(op);
      k.upload(scale, &s, sizeof s);
    } else {
      NC_CUDA(cudaMemset(scale, 0xFF, scales));
    }
  }
  if (op.rows == NC_ROWS_HEADS) {
    set.fwd.head = {heads, n, n, n, n};
    set.bwd.head = {heads, n, n, n, n};
  }
  if (add) {
    set.fwd.residual = {residual, t, 0, heads * n, 1};
    set.fwd.residual_out = {residual_out, t, 0, heads * n, 1};
    set.bwd.x = set.fwd.residual_out;  // the backward of a residual add differentiates at the stored h
    set.bwd.residual_grad = {residual_grad, t, 0, heads * n, 1};
  }
  set.workspace = device_block(k, k.workspace_size(set.bwd));
  set.bwd.workspace = set.workspace.get();
  set.bwd.workspace_bytes = set.workspace.bytes();
  return set;
}

// ---------------------------------------------------------------- timing

struct timing {
  double median_us = 0, min_us = 0, max_us = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

class event_pair {
 public:
  event_pair() {
    NC_CUDA(cudaEventCreate(&start));
    NC_CUDA(cudaEventCreate(&stop));
  }
  ~event_pair() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  event_pair(const event_pair&) = delete;
  event_pair& operator=(const event_pair&) = delete;
  cudaEvent_t start{}, stop{};
};

// warmup calls, then samples of `calls` calls each between two events on the default stream
template <class F>
timing time_calls(F&& call, int warmup, int samples, int calls) {
  for (int i = 0; i < warmup; ++i) call();
  NC_CUDA(cudaDeviceSynchronize());
  event_pair ev;
  std::vector<double> us;
  for (int s = 0; s < samples; ++s) {
    NC_CUDA(cudaEventRecord(ev.start, nullptr));
    for (int c = 0; c < calls; ++c) call();
    NC_CUDA(cudaEventRecord(ev.stop, nullptr));
    NC_CUDA(cudaEventSynchronize(ev.stop));
    float ms = 0;
    NC_CUDA(cudaEventElapsedTime(&ms, ev.start, ev.stop));
    us.push_back(double(ms) * 1000.0 / calls);
  }
  NC_CUDA(cudaGetLastError());
  return {median(us), *std::min_element(us.begin(), us.end()), *std::max_element(us.begin(), us.end())};
}

// device-to-device copy bandwidth in GB/s: bytes read + bytes written over the median time
double copy_bandwidth(const kernel& k, double& median_us) {
  device_block src(k, copy_bytes), dst(k, copy_bytes);
  NC_CUDA(cudaMemset(src.get(), 0x5A, copy_bytes));
  NC_CUDA(cudaMemset(dst.get(), 0xA5, copy_bytes));
  auto copy = [&] { NC_CUDA(cudaMemcpyAsync(dst.get(), src.get(), copy_bytes, cudaMemcpyDeviceToDevice, nullptr)); };
  const timing t = time_calls(copy, copy_warmup, copy_samples, 1);
  median_us = t.median_us;
  return 2.0 * double(copy_bytes) / (t.median_us * 1e3);
}

// ---------------------------------------------------------------- spot check

struct spot {
  bool pass = true;
  double worst = 0;  // the largest error in units of the exact oracle's per-element bound; <= 1 passes
  std::string what;
};

// element bits of a row held as bytes (fp32: 4 bytes each, fp16/bf16: 2, codes: 1)
std::vector<std::uint32_t> bits_of(const unsigned char* bytes, std::size_t element_bytes, std::int64_t count) {
  std::vector<std::uint32_t> out(static_cast<std::size_t>(count));
  for (std::size_t e = 0; e < out.size(); ++e) std::memcpy(&out[e], bytes + e * element_bytes, element_bytes);
  return out;
}

// Rows 0, M/2 and M-1 of the first input set, each judged as a case of one row by the
// properties' judges (property::judge: y and r, residual_out bit-exact, a quantized output's
// codes and scales, dx; the exact oracle's per-element bound and the fixed table where every
// correct kernel meets it), not a tolerance of the bench's own. A row's y, r and dx depend on
// nothing else; every operand's row i lies at i·N (make_set's views, per-head rows included)
void spot_check(const kernel& k, const input_set& set, const host_inputs& in, nc_dtype t, spot& out) {
  const std::int64_t m = set.fwd.m, n = set.fwd.n;
  const nc_operation& op = set.fwd.op;
  const std::size_t s = dtype_bytes(t), row_bytes = std::size_t(n) * s;
  const bool add = op.residual != NC_RESIDUAL_NONE, quantized = quantizes(op);
  const std::int64_t scales_a_row = quantized && op.scale != NC_SCALE_STATIC ? scale_cols(op, n) : 0;
  harness::norm_case c;
  c.m = 1, c.n = n, c.x_dtype = t, c.gamma_dtype = t, c.epsilon = epsilon, c.op = op;
  c.op.rows = NC_ROWS_MATRIX;  // one row of a per-head view is one row
  c.layout = {{0, n, 1}, {0, n, 1}, {0, n, 1}, {0, n, 1}, {0, 1}, {0, 1}, {0, 1}};
  c.gamma = bits_of(in.gamma.data(), s, n);
  if (quantized) c.scale = std::bit_cast<std::uint32_t>(static_scale(op));
  const harness::property* forward = harness::find_property("y_and_r_match_the_exact_oracle");
  const harness::property* dx = harness::find_property("dx_matches_the_exact_oracle");
  if (forward == nullptr || dx == nullptr) throw std::logic_error("the spot check's properties are not registered");
  for (std::int64_t i : {std::int64_t(0), m / 2, m - 1}) {
    const std::size_t at = std::size_t(i) * row_bytes;
    c.x = bits_of(in.x.data() + at, s, n), c.dy = bits_of(in.dy.data() + at, s, n);
    if (add) c.residual = bits_of(in.residual.data() + at, s, n), c.residual_grad = bits_of(in.residual_grad.data() + at, s, n);
    const std::size_t y_bytes = quantized ? std::size_t(n) : row_bytes;
    std::vector<unsigned char> y(y_bytes), dx_row(row_bytes), h(row_bytes);
    std::vector<float> scales(static_cast<std::size_t>(scales_a_row));
    std::uint32_t r = 0;
    k.download(y.data(), static_cast<const char*>(set.fwd.y.data) + std::size_t(i) * y_bytes, y_bytes);
    k.download(&r, static_cast<const char*>(set.fwd.r.data) + i * 4, 4);
    if (add) k.download(h.data(), static_cast<const char*>(set.fwd.residual_out.data) + at, row_bytes);
    if (!quantized) k.download(dx_row.data(), static_cast<const char*>(set.bwd.dx.data) + at, row_bytes);
    if (scales_a_row > 0)
      k.download(scales.data(), static_cast<const char*>(set.fwd.scale.data) + std::size_t(i * scales_a_row) * 4,
                 scales.size() * 4);
    harness::outputs got;
    got.y = bits_of(y.data(), quantized ? 1 : s, n), got.r = {r}, got.dx = bits_of(dx_row.data(), s, n);
    if (add) got.residual_out = bits_of(h.data(), s, n);
    got.scale = bits_of(reinterpret_cast<const unsigned char*>(scales.data()), 4, scales_a_row);
    for (const harness::property* p : {forward, dx}) {
      if (p == dx && quantized) continue;  // a quantized output's kernel has no backward here
      harness::observation o;
      try {
        p->judge(k, c, got, o);
      } catch (const harness::property_failure& e) {
        if (out.pass) {
          out.pass = false;
          out.what = "row " + std::to_string(i) + ": " + e.summary();
          if (!e.first().empty()) {
            const harness::mismatch& first = e.first().front();
            std::ostringstream w;
            w << " (" << first.output << "[" << first.col << "] = " << first.got << ", exact " << first.expected
              << ", bound " << first.bound << ")";
            out.what += w.str();
          }
        }
      }
      out.worst = std::max(out.worst, o.max_error_in_bounds);
    }
  }
}

// ---------------------------------------------------------------- one row

struct row {
  std::string variant = "rmsnorm";
  shape sh{};
  nc_dtype t = NC_F32;
  std::int64_t input_sets = 0;
  std::size_t workspace_bytes = 0;
  timing fwd, fwd_bwd;
  double fwd_bytes = 0, fwd_bwd_bytes = 0;
  std::string fwd_path, bwd_path;
  spot check;
  bool checked = false;        // the spot check ran (before timing)
  std::string error;           // empty: timed
  std::string not_applicable;  // why the variant cannot take this shape (not timed, not a failure)
  bool ok() const { return !not_applicable.empty() || (error.empty() && check.pass); }
};

std::int64_t rotation_sets(std::int64_t m, std::int64_t n, std::size_t s, double l2_bytes) {
  const double working = 2.0 * double(m) * double(n) * double(s);  // x and y
  if (working > l2_bytes) return 1;
  return std::min<std::int64_t>(max_input_sets, std::int64_t(std::ceil(2.0 * l2_bytes / working)));
}

row bench_row(const kernel& k, const options& o, const std::string& variant, shape sh, nc_dtype t) {
  row out;
  out.variant = variant, out.sh = sh, out.t = t;
  const nc_operation op = operation_of(variant);
  const bool add = op.residual != NC_RESIDUAL_NONE;
  const std::size_t s = dtype_bytes(t);
  const double elems = double(sh.m) * double(sh.n);
  out.fwd_bytes = (add ? 4.0 : 2.0) * elems * double(s);
  out.fwd_bwd_bytes = (add ? 8.0 : 5.0) * elems * double(s);
  // a quantized output writes a byte an element and its scales (4 bytes a row or a group)
  if (quantizes(op))
    out.fwd_bytes = (add ? 3.0 : 1.0) * elems * double(s) + elems +
                    (op.scale == NC_SCALE_STATIC ? 0.0 : 4.0 * double(sh.m) * double(scale_cols(op, sh.n)));
  if (op.scale == NC_SCALE_PER_GROUP && quantizes(op) && sh.n % op.group != 0) {
    out.not_applicable = "N = " + std::to_string(sh.n) + " is no multiple of the group of " +
                         std::to_string(op.group) + " columns";
    return out;
  }
  try {
    // the rotation counts the forward's working set: x and y, and a residual add's two more
    out.input_sets = rotation_sets(sh.m, sh.n, add ? 2 * s : s, o.l2_mb * 1e6);
    std::vector<input_set> sets;
    host_inputs first;
    for (std::int64_t i = 0; i < out.input_sets; ++i)
      sets.push_back(make_set(k, sh.m, sh.n, t, op, std::uint64_t(i + 1), i == 0 ? &first : nullptr));
    out.workspace_bytes = sets[0].workspace.bytes();
    out.fwd_path = k.forward_path(sets[0].fwd);
    out.bwd_path = k.backward_path(sets[0].bwd);

    // checked before it is timed: one call pair on the first set, judged (a wrong kernel's
    // timing is not reported)
    k.forward(sets[0].fwd);
    if (!quantizes(op)) k.backward(sets[0].bwd);
    k.synchronize();
    spot_check(k, sets[0], first, t, out.check);
    out.checked = true;
    if (!out.check.pass) {
      out.error = "not timed: SPOT CHECK FAILED: " + out.check.what;
      return out;
    }

    std::size_t next = 0;
    auto pick = [&]() -> input_set& { return sets[std::exchange(next, (next + 1) % sets.size())]; };
    out.fwd = time_calls([&] { k.forward(pick().fwd); }, o.warmup, o.samples, o.calls);
    if (quantizes(op)) {  // forward only
      out.bwd_path.clear();
      return out;
    }

    next = 0;
    auto fwd_bwd = [&] {
      input_set& set = pick();
      k.forward(set.fwd);
      const std::size_t need = k.workspace_size(set.bwd);
      if (o.alloc_per_call) {
        device_block w(k, need);
        set.bwd.workspace = w.get(), set.bwd.workspace_bytes = need;
        k.backward(set.bwd);
        return;  // w frees here, inside the call
      }
      if (need > set.workspace.bytes()) set.workspace = device_block(k, need);  // the cache grows
      set.bwd.workspace = set.workspace.get(), set.bwd.workspace_bytes = set.workspace.bytes();
      k.backward(set.bwd);
    };
    out.fwd_bwd = time_calls(fwd_bwd, o.warmup, o.samples, o.calls);
  } catch (const std::exception& e) {
    out.error = e.what();
    (void)cudaGetLastError();  // clear a non-sticky error so the next row starts clean
  }
  return out;
}

// ---------------------------------------------------------------- host work

// A call's host work: what it costs the calling thread besides launching its kernel (the
// contract and pointer checks, the path choice, the workspace query). Calls are timed on the host
// clock in bursts, the device drained between bursts outside the timing (a full launch queue
// would time the device instead); an empty kernel launched as the shipped kernels launch theirs
// (launch_floor.cu) is timed the same way, and the difference is the host work over one launch.
// Measured where a call is latency-bound (M·N <= 2^18), where the shipped kernels launch once a
// forward and once a backward.
struct host_work {
  shape sh{};
  nc_dtype t = NC_F32;
  double forward_ns = 0, backward_ns = 0, launch_ns = 0;  // backward_ns: the workspace query too
};

constexpr int host_burst = 64;

template <class F>
double host_ns_per_call(F&& call, int bursts) {
  for (int i = 0; i < host_burst; ++i) call();
  NC_CUDA(cudaDeviceSynchronize());
  std::vector<double> ns;
  for (int b = 0; b < bursts; ++b) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < host_burst; ++i) call();
    ns.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / host_burst);
    NC_CUDA(cudaDeviceSynchronize());
  }
  return median(ns);
}

std::vector<host_work> measure_host_work(const kernel& k, const options& o) {
  std::vector<host_work> out;
  for (const shape& sh : o.shapes) {
    if (sh.m * sh.n > (std::int64_t(1) << 18)) continue;
    for (const nc_dtype t : o.dtypes) {
      // two input sets of one layout, called in turn, as a model's layers call one shape with
      // buffers of their own: no call repeats the one before it, so a plugin that keeps its verdict
      // on a layout (the shipped one: contract.hpp contract_memo) is timed checking every call's
      // pointers
      input_set sets[2] = {make_set(k, sh.m, sh.n, t, nc_operation{}, 1, nullptr),
                           make_set(k, sh.m, sh.n, t, nc_operation{}, 2, nullptr)};
      int turn = 0;
      host_work w{sh, t};
      w.launch_ns = host_ns_per_call([&] { NC_CUDA(launch_empty(unsigned(sh.m), 32)); }, o.samples);
      w.forward_ns = host_ns_per_call([&] { k.forward(sets[turn ^= 1].fwd); }, o.samples);
      w.backward_ns = host_ns_per_call(
          [&] {
            input_set& set = sets[turn ^= 1];
            set.bwd.workspace_bytes = k.workspace_size(set.bwd);
            k.backward(set.bwd);
          },
          o.samples);
      out.push_back(w);
    }
    break;  // the first latency-bound shape
  }
  return out;
}

// ---------------------------------------------------------------- reports

struct stamp {
  std::string date, device, driver, runtime, commit, plugin_name, plugin_backend, plugin_file;
  int cc_major = 0, cc_minor = 0, sms = 0;
  std::size_t l2_bytes = 0, memory_bytes = 0;
  double copy_gbps = 0, copy_us = 0;
};

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else out += c;
  }
  return out + "\"";
}

std::string num(double v, int digits) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string timed_region_fwd() {
  return "one forward() call through the plugin table: its host-side contract and pointer checks, the path "
         "choice and its kernel launch; y and r preallocated per input set";
}

std::string timed_region_fwd_bwd(const options& o) {
  return std::string("forward(), then workspace_size() (the workspace query), then backward(): its host-side "
                     "checks and its two kernels (dx with the dgamma partial table, then the column reduction "
                     "into dgamma); ") +
         (o.alloc_per_call ? "the plugin's alloc() and free() of the workspace (cudaMalloc, cudaFree) inside "
                             "every call"
                           : "the workspace taken from a cache filled once per input set before timing at the "
                             "size the query returns (as PyTorch's caching allocator serves an autograd call), "
                             "regrown inside the call if the query ever asks for more") +
         "; dx and dgamma preallocated per input set";
}

std::string variants_line() {
  return "rmsnorm the plain operator; add_rmsnorm the rounded sum h = x + residual into a separate residual_out "
         "(fwd 4·M·N·s: x, residual read, y, residual_out written; fwd+bwd 8·M·N·s: the backward reads h, dy and "
         "residual_grad and writes dx); gemma_rmsnorm y = x·r·(1 + gamma); add_gemma_rmsnorm both; head_rmsnorm "
         "per-head rows of [M/8, 8, N] views (bytes as the plain operator's); rmsnorm_fp8_* and rmsnorm_int8_* a "
         "quantized output, the forward only (fwd (1 + s)·M·N + 4 bytes a scale: x read, a byte a code and the "
         "dynamic scales written; e4m3 static by its reciprocal, per token under vLLM's floor, per group of 128 "
         "divided; int8 per token divided)";
}

std::string protocol_line(const options& o) {
  return std::to_string(o.warmup) + " warm-up calls, then the median of " + std::to_string(o.samples) +
         " samples of " + std::to_string(o.calls) +
         " calls each; a sample is CUDA events on the default stream around its calls, back to back, divided by " +
         std::to_string(o.calls);
}

// the host work's table, under the rows' table
std::string host_work_markdown(const options& o, const std::vector<host_work>& work) {
  if (work.empty()) return "";
  std::ostringstream md;
  md << "\nHost work per call at " << work[0].sh.m << "×" << work[0].sh.n
     << " (host clock: the median of " << o.samples << " bursts of " << host_burst
     << " calls, the device drained between bursts; the floor is an empty kernel launched as the shipped kernels "
        "launch, and host work is a call less one floor):\n\n"
     << "| dtype | forward ns | workspace query + backward ns | launch floor ns | host work fwd ns | host work bwd ns |\n"
     << "|---|---|---|---|---|---|\n";
  for (const host_work& w : work)
    md << "| " << dtype_label(w.t) << " | " << num(w.forward_ns, 0) << " | " << num(w.backward_ns, 0) << " | "
       << num(w.launch_ns, 0) << " | " << num(w.forward_ns - w.launch_ns, 0) << " | "
       << num(w.backward_ns - w.launch_ns, 0) << " |\n";
  return md.str();
}

std::string markdown(const options& o, const stamp& st, const std::vector<row>& rows) {
  std::ostringstream md;
  md << "# normcheck bench: " << st.plugin_name << " (" << st.plugin_file << ")\n\n"
     << "- date " << st.date << "; device " << st.device << " (cc " << st.cc_major << "." << st.cc_minor << ", "
     << st.sms << " SMs); driver " << (st.driver.empty() ? "?" : st.driver) << "; CUDA runtime " << st.runtime
     << "; commit " << (st.commit.empty() ? "not given" : st.commit) << "\n"
     << "- protocol: " << protocol_line(o) << "\n"
     << "- timed, fwd: " << timed_region_fwd() << "\n"
     << "- timed, fwd+bwd: " << timed_region_fwd_bwd(o) << "\n"
     << "- bytes: fwd = read x + write y = 2·M·N·s; fwd+bwd = fwd + read x, dy + write dx = 5·M·N·s (gamma, r, "
        "dgamma, workspace ignored); GB/s = 1e9 bytes/s\n"
     << "- copy: cudaMemcpy device to device of 1 GiB, read + written, median of " << copy_samples << ": "
     << num(st.copy_gbps, 0) << " GB/s (" << num(st.copy_us, 1) << " µs a copy)\n"
     << "- inputs random, never zeros (x in [-2,2), dy in [-1,1), gamma in [0.5,1.5) in x's dtype), epsilon 1e-6; "
        "input sets rotate while x and y fit in "
     << num(o.l2_mb, 0) << " MB of L2\n"
     << "- variants: " << variants_line() << "\n\n"
     << "| variant | shape | dtype | fwd µs | fwd GB/s | fwd % copy | fwd+bwd µs | GB/s | % copy | path |\n"
     << "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const row& r : rows) {
    md << "| " << r.variant << " | " << r.sh.m << "×" << r.sh.n << " | " << dtype_label(r.t) << " | ";
    if (!r.error.empty() || !r.not_applicable.empty()) {
      md << "– | – | – | – | – | – | " << (r.error.empty() ? "not applicable: " + r.not_applicable : "error: " + r.error)
         << " |\n";
      continue;
    }
    const double fg = r.fwd_bytes / (r.fwd.median_us * 1e3), bg = r.fwd_bwd_bytes / (r.fwd_bwd.median_us * 1e3);
    md << num(r.fwd.median_us, 2) << " | " << num(fg, 0) << " | " << num(100 * fg / st.copy_gbps, 1) << " | ";
    if (r.bwd_path.empty()) md << "– | – | – | " << r.fwd_path << " (forward only)";
    else
      md << num(r.fwd_bwd.median_us, 2) << " | " << num(bg, 0) << " | " << num(100 * bg / st.copy_gbps, 1) << " | "
         << r.fwd_path << " / " << r.bwd_path;
    if (r.input_sets > 1) md << " (" << r.input_sets << " input sets)";
    md << " |\n";
  }
  return md.str();
}

std::string json(const options& o, const stamp& st, const std::vector<row>& rows, const std::vector<host_work>& work) {
  std::ostringstream js;
  auto str = [](const std::string& s) { return s.empty() ? std::string("null") : json_string(s); };
  js << "{\n  \"schema\": \"normcheck-bench/1\",\n  \"tool\": \"normcheck\",\n"
     << "  \"date\": " << json_string(st.date) << ",\n"
     << "  \"device\": {\"name\": " << json_string(st.device) << ", \"compute_capability\": \"" << st.cc_major << "."
     << st.cc_minor << "\", \"sms\": " << st.sms << ", \"l2_bytes\": " << st.l2_bytes
     << ", \"memory_bytes\": " << st.memory_bytes << "},\n"
     << "  \"driver\": " << str(st.driver) << ",\n  \"cuda_runtime\": " << json_string(st.runtime) << ",\n"
     << "  \"commit\": " << str(st.commit) << ",\n"
     << "  \"kernel\": {\"name\": " << json_string(st.plugin_name) << ", \"backend\": " << json_string(st.plugin_backend)
     << ", \"file\": " << json_string(st.plugin_file) << "},\n"
     << "  \"protocol\": {\"warmup\": " << o.warmup << ", \"samples\": " << o.samples << ", \"calls\": " << o.calls
     << ", \"statistic\": \"median\", \"epsilon\": 1e-06, \"l2_rotation_bytes\": " << num(o.l2_mb * 1e6, 0)
     << ", \"alloc_per_call\": " << (o.alloc_per_call ? "true" : "false") << ",\n"
     << "    \"description\": " << json_string(protocol_line(o)) << ",\n"
     << "    \"timed_region_fwd\": " << json_string(timed_region_fwd()) << ",\n"
     << "    \"timed_region_fwd_bwd\": " << json_string(timed_region_fwd_bwd(o)) << ",\n"
     << "    \"bytes_fwd\": \"2*M*N*s (read x, write y)\", \"bytes_fwd_bwd\": \"5*M*N*s (fwd + read x, dy, write dx)\"},\n"
     << "  \"copy\": {\"bytes_per_copy\": " << 2 * copy_bytes << ", \"samples\": " << copy_samples
     << ", \"median_us\": " << num(st.copy_us, 3) << ", \"gbps\": " << num(st.copy_gbps, 1) << "},\n"
     << "  \"results\": [";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const row& r = rows[i];
    const bool timed = r.error.empty() && r.not_applicable.empty(), backward = timed && !r.bwd_path.empty();
    const double fg = timed ? r.fwd_bytes / (r.fwd.median_us * 1e3) : NAN;
    const double bg = backward ? r.fwd_bwd_bytes / (r.fwd_bwd.median_us * 1e3) : NAN;
    auto t = [&](double v, int d) { return timed ? num(v, d) : std::string("null"); };
    auto tb = [&](double v, int d) { return backward ? num(v, d) : std::string("null"); };
    js << (i ? ",\n" : "\n") << "    {\"variant\": " << json_string(r.variant) << ", \"m\": " << r.sh.m << ", \"n\": " << r.sh.n << ", \"dtype\": \""
       << dtype_label(r.t) << "\", \"input_sets\": " << r.input_sets << ", \"workspace_bytes\": " << r.workspace_bytes
       << ",\n     \"fwd_us\": " << t(r.fwd.median_us, 3) << ", \"fwd_us_min\": " << t(r.fwd.min_us, 3)
       << ", \"fwd_us_max\": " << t(r.fwd.max_us, 3) << ", \"fwd_bytes\": " << num(r.fwd_bytes, 0)
       << ", \"fwd_gbps\": " << t(fg, 1) << ", \"fwd_pct_copy\": " << t(100 * fg / st.copy_gbps, 2)
       << ",\n     \"fwd_bwd_us\": " << tb(r.fwd_bwd.median_us, 3) << ", \"fwd_bwd_us_min\": " << tb(r.fwd_bwd.min_us, 3)
       << ", \"fwd_bwd_us_max\": " << tb(r.fwd_bwd.max_us, 3) << ", \"fwd_bwd_bytes\": " << tb(r.fwd_bwd_bytes, 0)
       << ", \"fwd_bwd_gbps\": " << tb(bg, 1) << ", \"fwd_bwd_pct_copy\": " << tb(100 * bg / st.copy_gbps, 2)
       << ",\n     \"fwd_path\": " << str(r.fwd_path) << ", \"bwd_path\": " << str(r.bwd_path)
       << ", \"path\": " << str(r.fwd_path.empty() ? "" : r.fwd_path + " / " + r.bwd_path)
       << ", \"spot_check\": " << (r.checked ? json_string(r.check.pass ? "pass" : "fail: " + r.check.what) : "null")
       << ", \"spot_check_worst\": " << (r.checked ? num(r.check.worst, 4) : "null") << ", \"error\": " << str(r.error)
       << ", \"not_applicable\": " << str(r.not_applicable) << "}";
  }
  js << "\n  ],\n  \"host_work\": [";
  for (std::size_t i = 0; i < work.size(); ++i) {
    const host_work& w = work[i];
    js << (i ? ",\n" : "\n") << "    {\"m\": " << w.sh.m << ", \"n\": " << w.sh.n << ", \"dtype\": \"" << dtype_label(w.t)
       << "\", \"forward_ns\": " << num(w.forward_ns, 1) << ", \"workspace_query_and_backward_ns\": " << num(w.backward_ns, 1)
       << ", \"launch_floor_ns\": " << num(w.launch_ns, 1) << "}";
  }
  js << (work.empty() ? "]\n}\n" : "\n  ]\n}\n");
  return js.str();
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  if (!f) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace

namespace {
// times every shape and dtype on k into STEM.md and STEM.json; true when every row passed
bool time_kernel(const kernel& k, const options& o, const stamp& st, const std::filesystem::path& stem);
bool run_torch_peer(const options& o, const std::string& spec, const std::filesystem::path& dir, const std::string& stem);
std::string shell_quote(const std::string& s);
std::string python();
std::string torch_peer_script();
}  // namespace

int run_main(int argc, char** argv) {
  options o;
  try {
    bool help = false;
    o = parse(argc, argv, help);
    if (help) {
      std::cout << usage;
      return nc::exit_pass;
    }
  } catch (const usage_error& e) {
    std::cerr << "normcheck bench: " << e.what() << "\n" << usage;
    return nc::exit_usage;
  }

  int devices = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess || devices == 0) {
    std::cerr << "normcheck bench: no CUDA device here ("
              << (e != cudaSuccess ? std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e)
                                   : std::string("cudaGetDeviceCount found 0 devices"))
              << "); the benchmark times CUDA kernels and needs an NVIDIA GPU\n";
    return nc::exit_skipped;
  }

  try {
    const kernel k = harness::resolve_kernel(
        {o.kernel_path.empty() ? std::nullopt : std::optional(o.kernel_path), std::nullopt, "cuda"}, {});
    if (!k.device_memory())
      throw std::runtime_error("plugin " + k.name() + " (backend " + k.backend() +
                               ") does not run on a device (no NC_CAP_DEVICE_MEMORY): bench times CUDA plugins");
    if (!k.available()) throw std::runtime_error("plugin " + k.name() + " finds no device");

    stamp st;
    st.date = harness::utc_now();
    int device = 0, driver = 0, runtime = 0;
    NC_CUDA(cudaGetDevice(&device));
    cudaDeviceProp prop{};
    NC_CUDA(cudaGetDeviceProperties(&prop, device));
    NC_CUDA(cudaDriverGetVersion(&driver));
    NC_CUDA(cudaRuntimeGetVersion(&runtime));
    st.device = prop.name, st.cc_major = prop.major, st.cc_minor = prop.minor, st.sms = prop.multiProcessorCount;
    st.l2_bytes = std::size_t(prop.l2CacheSize), st.memory_bytes = prop.totalGlobalMem;
    const std::string kmod = nc::nvidia_driver_version();
    st.driver = (kmod.empty() ? std::string() : kmod + " ") + "(CUDA " + nc::cuda_version_text(driver) + ")";
    st.runtime = nc::cuda_version_text(runtime);
    st.commit = o.commit;
    st.plugin_name = k.name(), st.plugin_backend = k.backend();
    st.plugin_file = std::filesystem::path(k.path()).filename().string();  // never a machine path

    std::cerr << "normcheck bench: " << st.device << ", plugin " << st.plugin_name << "; measuring the copy\n";
    st.copy_gbps = copy_bandwidth(k, st.copy_us);
    const std::filesystem::path dir(o.out);
    std::filesystem::create_directories(dir);
    const bool ok = time_kernel(k, o, st, dir / "normcheck");

    // the peers, each into its own report of the same schema, then one table of all
    bool peers_ok = true;
    std::vector<std::string> reports{(dir / "normcheck.json").string()};
    for (std::size_t i = 0; i < o.peers.size(); ++i) {
      const std::string& spec = o.peers[i];
      const std::string stem = "peer-" + std::to_string(i + 1);
      if (spec.ends_with(".so")) {
        const kernel p = kernel::load(spec);
        if (!p.device_memory() || !p.available())
          throw std::runtime_error("--peer '" + spec + "': plugin " + p.name() + " does not run on this device");
        stamp sp = st;
        sp.plugin_name = p.name(), sp.plugin_backend = p.backend();
        sp.plugin_file = std::filesystem::path(p.path()).filename().string();
        peers_ok = time_kernel(p, o, sp, dir / stem) && peers_ok;
      } else {
        peers_ok = run_torch_peer(o, spec, dir, stem) && peers_ok;
      }
      reports.push_back((dir / (stem + ".json")).string());
    }
    if (!o.peers.empty()) {
      std::string command = shell_quote(python()) + " -B " + shell_quote(torch_peer_script()) + " --merge";
      for (const std::string& r : reports) command += " " + shell_quote(r);
      command += " --out " + shell_quote(dir.string());
      if (std::system(command.c_str()) != 0) peers_ok = false;
    }
    return ok && peers_ok ? nc::exit_pass : nc::exit_property_failed;
  } catch (const nc::usage_error& e) {
    std::cerr << "normcheck bench: " << e.what() << "\n";
    return nc::exit_usage;
  } catch (const nc::skipped_error& e) {
    std::cerr << "normcheck bench: " << e.what() << "\n";
    return nc::exit_skipped;
  } catch (const std::exception& e) {
    std::cerr << "normcheck bench: " << e.what() << "\n";
    return nc::exit_property_failed;
  }
}

namespace {

bool time_kernel(const kernel& k, const options& o, const stamp& st, const std::filesystem::path& stem) {
  std::vector<row> rows;
  for (const std::string& variant : o.variants)
    for (const shape& sh : o.shapes)
      for (const nc_dtype t : o.dtypes) {
        const auto t0 = std::chrono::steady_clock::now();
        rows.push_back(bench_row(k, o, variant, sh, t));
        const row& r = rows.back();
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::cerr << "  " << variant << " " << sh.m << "x" << sh.n << " " << dtype_label(t) << ": "
                  << (!r.not_applicable.empty() ? "not applicable: " + r.not_applicable
                      : r.error.empty() ? num(r.fwd.median_us, 2) + " / " + num(r.fwd_bwd.median_us, 2) + " us"
                                        : "error: " + r.error)
                  << " (" << num(secs, 1) << " s)\n";
      }

  const std::vector<host_work> work = measure_host_work(k, o);
  const std::string md = markdown(o, st, rows) + host_work_markdown(o, work);
  std::cout << md << std::flush;
  write_file(stem.string() + ".md", md);
  write_file(stem.string() + ".json", json(o, st, rows, work));
  std::cerr << "normcheck bench: wrote " << stem.string() << ".md and " << stem.string() << ".json\n";
  return std::all_of(rows.begin(), rows.end(), [](const row& r) { return r.ok(); });
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (const char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string python() {
  const char* p = std::getenv("NORMCHECK_PYTHON");
  return p && *p ? p : "python3";
}

// torch_peer.py: NORMCHECK_TORCH_PEER, else the copy the build puts beside the shipped plugins
std::string torch_peer_script() {
  if (const char* p = std::getenv("NORMCHECK_TORCH_PEER"); p && *p) return p;
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / ".." / "lib" / "normcheck_torch_peer.py")
      .lexically_normal()
      .string();
}

std::string join_shapes(const options& o) {
  std::string text;
  for (const shape& sh : o.shapes) text += (text.empty() ? "" : ",") + std::to_string(sh.m) + "x" + std::to_string(sh.n);
  return text;
}

std::string join_dtypes(const options& o) {
  std::string text;
  for (const nc_dtype t : o.dtypes) text += (text.empty() ? "" : ",") + std::string(t == NC_F32 ? "fp32" : t == NC_F16 ? "fp16" : "bf16");
  return text;
}

// a Python peer, timed by torch_peer.py with this run's shapes, dtypes and protocol
bool run_torch_peer(const options& o, const std::string& spec, const std::filesystem::path& dir, const std::string& stem) {
  const std::string script = torch_peer_script();
  if (!std::filesystem::exists(script))
    throw std::runtime_error("--peer '" + spec + "': the torch peer " + script +
                             " is missing (NORMCHECK_TORCH_PEER names another)");
  std::string command = shell_quote(python()) + " -B " + shell_quote(script) + " --peer " + shell_quote(spec) +
                        " --name " + stem + " --out " + shell_quote(dir.string()) + " --shapes " + join_shapes(o) +
                        " --dtypes " + join_dtypes(o) + " --warmup " + std::to_string(o.warmup) + " --samples " +
                        std::to_string(o.samples) + " --calls " + std::to_string(o.calls) + " --l2-mb " +
                        num(o.l2_mb, 0);
  if (!o.commit.empty()) command += " --commit " + shell_quote(o.commit);
  std::cerr << "normcheck bench: peer " << spec << ": " << command << "\n";
  const int status = std::system(command.c_str());
  if (status != 0) std::cerr << "normcheck bench: peer " << spec << " exited with status " << status << "\n";
  return status == 0;
}

}  // namespace

}  // namespace nc::bench
