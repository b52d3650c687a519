// Shared by the kernel tests: the plugin under test, plugin memory, host-side dtype
// conversion and the plain double-precision loop the kernels are checked against.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "normcheck/kernel.hpp"
#include "normcheck/oracles/dtype.hpp"

namespace nc::test {

// the backend under test: NORMCHECK_TEST_BACKEND, set per registered test
inline const kernel& plugin() {
  static const kernel k = [] {
    const char* b = std::getenv("NORMCHECK_TEST_BACKEND");
    const char* path = std::getenv("NORMCHECK_TEST_PLUGIN");
    return path && *path ? kernel::load(path) : kernel::shipped(b && *b ? b : "simt");
  }();
  return k;
}

inline std::size_t size_of(nc_dtype t) { return t == NC_F32 ? 4 : 2; }

// ---- host conversions: the oracle's exact decode and round-to-nearest-even encode ----
inline oracle::dtype oracle_type(nc_dtype t) {
  return t == NC_F32 ? oracle::dtype::f32 : t == NC_F16 ? oracle::dtype::f16 : oracle::dtype::bf16;
}

inline double decode(nc_dtype t, const void* p, std::int64_t i) { return oracle::load(p, oracle_type(t), i); }

inline void encode(nc_dtype t, void* p, std::int64_t i, float v) { oracle::store(p, oracle_type(t), i, v); }

// ---- a buffer in plugin memory with a host mirror; guard bytes on both sides ----
constexpr std::size_t guard_bytes = 256;
constexpr unsigned char guard_value = 0xA5;

class buffer {
 public:
  buffer(std::size_t bytes) : host_(bytes + 2 * guard_bytes, guard_value) {
    device_ = plugin().alloc(host_.size());
    push();
  }
  ~buffer() { plugin().release(device_); }
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;

  // the usable region starts after the front guard
  void* device() { return static_cast<char*>(device_) + guard_bytes; }
  void* host() { return host_.data() + guard_bytes; }
  std::size_t bytes() const { return host_.size() - 2 * guard_bytes; }
  void push() { plugin().upload(device_, host_.data(), host_.size()); }
  void pull() { plugin().download(host_.data(), device_, host_.size()); }
  const std::vector<unsigned char>& all() const { return host_; }
  bool guards_intact() const {
    for (std::size_t i = 0; i < guard_bytes; ++i)
      if (host_[i] != guard_value || host_[host_.size() - 1 - i] != guard_value) return false;
    return true;
  }

 private:
  std::vector<unsigned char> host_;
  void* device_ = nullptr;
};

// ---- the double-precision loop ----
struct reference {
  std::vector<double> y, r, dx, dgamma;
  std::vector<double> dx_terms;  // |r*u| + |x*r^3*mean(u*x)|: what dx cancels down from
};

struct layout {
  std::int64_t offset = 0, row_pad = 0, col_stride = 1;
};

// an operand: element (i, j) at offset + i*row_stride + j*col_stride
struct matrix {
  nc_dtype type;
  std::int64_t m, n;
  layout l;
  std::int64_t row_stride() const { return (n - 1) * l.col_stride + 1 + l.row_pad; }
  std::int64_t index(std::int64_t i, std::int64_t j) const { return l.offset + i * row_stride() + j * l.col_stride; }
  std::size_t bytes() const { return std::size_t(l.offset + std::max<std::int64_t>(m, 1) * row_stride()) * size_of(type); }
  nc_matrix view(void* data) const { return {data, type, l.offset, row_stride(), l.col_stride}; }
};

inline reference reference_loop(std::int64_t m, std::int64_t n, double eps, const std::vector<double>& x,
                                 const std::vector<double>& g, const std::vector<double>& dy) {
  reference out{std::vector<double>(m * n), std::vector<double>(m), std::vector<double>(m * n),
                std::vector<double>(n, 0.0), std::vector<double>(m * n)};
  for (std::int64_t i = 0; i < m; ++i) {
    double ss = 0, s = 0;
    for (std::int64_t j = 0; j < n; ++j) ss += x[i * n + j] * x[i * n + j];
    const double r = 1.0 / std::sqrt(ss / double(n) + eps);
    out.r[i] = r;
    for (std::int64_t j = 0; j < n; ++j) {
      out.y[i * n + j] = x[i * n + j] * r * g[j];
      s += dy[i * n + j] * g[j] * x[i * n + j];
    }
    for (std::int64_t j = 0; j < n; ++j) {
      const double first = r * dy[i * n + j] * g[j], second = x[i * n + j] * r * r * r * s / double(n);
      out.dx[i * n + j] = first - second;
      out.dx_terms[i * n + j] = std::fabs(first) + std::fabs(second);
      out.dgamma[j] += dy[i * n + j] * x[i * n + j] * r;
    }
  }
  return out;
}

// the document's fixed tolerances
inline double atol(nc_dtype t) { return t == NC_F32 ? 1e-5 : t == NC_F16 ? 3e-3 : 1.6e-2; }
inline double rtol(nc_dtype t) { return t == NC_F32 ? 1e-4 : t == NC_F16 ? 3e-3 : 1.6e-2; }

}  // namespace nc::test
