// oracle_bench: elements per second of the exact oracle's fast path against its Boost paths
// (cpp_bin_float and MPFR, 50 digits), forward and backward, on one core.
//
//   oracle_bench [N]      rows of N columns (default 4096); prints path | op | dtype | elements/s
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "normcheck/oracles/exact.hpp"
#include "normcheck/oracles/reference.hpp"

namespace {

using namespace nc::oracle;

/// typed row-major storage of normal values
struct buffer {
  std::vector<std::uint64_t> storage;
  std::int64_t count;
  dtype type;
  buffer(std::int64_t elements, dtype t, std::mt19937_64& rng, double mean, double spread) : count(elements), type(t) {
    storage.assign(static_cast<std::size_t>(elements * static_cast<std::int64_t>(size_of(t)) / 8 + 1), 0);
    std::normal_distribution<double> normal(mean, spread);
    for (std::int64_t k = 0; k < elements; ++k) store(storage.data(), t, k, normal(rng));
  }
};

/// the best call of those made in 0.3 s (three at least), in elements per second: the best,
/// because interference only ever slows a call down
double throughput(std::int64_t elements, const std::function<void()>& call) {
  double best = 0;
  const auto begin = std::chrono::steady_clock::now();
  for (int k = 0; k < 3 || std::chrono::steady_clock::now() - begin < std::chrono::milliseconds(300); ++k) {
    const auto start = std::chrono::steady_clock::now();
    call();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, static_cast<double>(elements) / seconds);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t n = argc > 1 ? std::atoll(argv[1]) : 4096;
  std::mt19937_64 rng(1);
  std::printf("%-22s | %-8s | %-5s | %14s\n", "path", "op", "dtype", "elements/s");
  std::printf("%-22s-|-%-8s-|-%-5s-|-%14s\n", std::string(22, '-').c_str(), "--------", "-----",
              std::string(14, '-').c_str());
  auto row = [](const char* path, const char* op, dtype type, double rate) {
    std::printf("%-22s | %-8s | %-5s | %14.3e\n", path, op, std::string(name_of(type)).c_str(), rate);
  };
  for (dtype type : {dtype::f32, dtype::f16, dtype::bf16}) {
    // the fast path on 256 rows, the Boost paths on 8 (they are ~100 times slower)
    for (std::int64_t m : {std::int64_t{256}, std::int64_t{8}}) {
      buffer x(m * n, type, rng, 0, 1), dy(m * n, type, rng, 0, 1), gamma(n, dtype::f32, rng, 1, 0.2);
      const matrix_view xv{x.storage.data(), type, 0, n, 1}, dyv{dy.storage.data(), type, 0, n, 1};
      const vector_view gv{gamma.storage.data(), dtype::f32, 0, 1};
      const forward_problem f{m, n, 1e-6f, xv, gv, type};
      const backward_problem b{m, n, xv, gv, dyv, 1e-6f, type, dtype::f32};
      const std::int64_t elements = m * n;
      if (m == 256) {
        // as a campaign calls it: into results that keep their memory from call to call
        exact_stats fs, bs;
        forward_result fr;
        backward_result br;
        row("fast (double-double)", "forward", type, throughput(elements, [&] { exact_forward(f, fr, &fs); }));
        row("fast (double-double)", "backward", type, throughput(elements, [&] { exact_backward(b, br, &bs); }));
        if (fs.rows_recomputed + bs.rows_recomputed + bs.columns_recomputed > 0)
          std::printf("  (fast path fell back on %lld rows and %lld columns)\n",
                      static_cast<long long>(fs.rows_recomputed + bs.rows_recomputed),
                      static_cast<long long>(bs.columns_recomputed));
        row("reference (float)", "forward", type, throughput(elements, [&] { reference_forward(f); }));
        row("reference (float)", "backward", type, throughput(elements, [&] { reference_backward(b); }));
      } else if (type == dtype::f32) {
        row("boost cpp_bin_float 50", "forward", type, throughput(elements, [&] { exact_forward_mp<50>(f); }));
        row("boost cpp_bin_float 50", "backward", type, throughput(elements, [&] { exact_backward_mp<50>(b); }));
        row("boost mpfr 50", "forward", type, throughput(elements, [&] { exact_forward_mpfr<50>(f); }));
        row("boost mpfr 50", "backward", type, throughput(elements, [&] { exact_backward_mpfr<50>(b); }));
      }
    }
  }
  return 0;
}
