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

// ---- host conversions: exact decode, round-to-nearest-even encode ----
inline float bits_to_float(std::uint32_t b) { float f; std::memcpy(&f, &b, 4); return f; }
inline std::uint32_t float_to_bits(float f) { std::uint32_t b; std::memcpy(&b, &f, 4); return b; }

inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v;
  if (exp == 0) v = std::ldexp(float(man), -24);
  else if (exp == 31) v = man ? NAN : INFINITY;
  else v = std::ldexp(float(man | 0x400), int(exp) - 25);
  return sign ? -v : v;
}

inline std::uint16_t float_to_half(float f) {
  // through double: every half is a double, and rounding double -> half once is exact RNE
  const std::uint32_t b = float_to_bits(f);
  const std::uint16_t sign = std::uint16_t((b >> 16) & 0x8000);
  const float a = std::fabs(f);
  if (std::isnan(f)) return std::uint16_t(sign | 0x7e00);
  if (a >= 65520.0f) return std::uint16_t(sign | 0x7c00);
  int e = 0;
  std::frexp(a, &e);                   // a = m * 2^e, m in [0.5, 1)
  const int quantum = std::max(e - 11, -24);  // 11 significant bits, subnormals at 2^-24
  const double q = std::nearbyint(std::ldexp(double(a), -quantum));
  const double v = std::ldexp(q, quantum);
  if (v == 0) return sign;
  int ve = 0;
  const double vm = std::frexp(v, &ve);
  if (ve - 1 < -14) return std::uint16_t(sign | std::uint16_t(std::ldexp(v, 24)));
  const std::uint16_t exp = std::uint16_t(ve - 1 + 15);
  const std::uint16_t man = std::uint16_t(std::ldexp(vm, 11)) & 0x3ff;
  return std::uint16_t(sign | (exp << 10) | man);
}

inline float bf16_to_float(std::uint16_t h) { return bits_to_float(std::uint32_t(h) << 16); }

inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t b = float_to_bits(f);
  if (std::isnan(f)) return std::uint16_t((b >> 16) | 0x40);
  b += 0x7fff + ((b >> 16) & 1);
  return std::uint16_t(b >> 16);
}

inline double decode(nc_dtype t, const void* p, std::int64_t i) {
  if (t == NC_F32) return static_cast<const float*>(p)[i];
  const std::uint16_t h = static_cast<const std::uint16_t*>(p)[i];
  return t == NC_F16 ? half_to_float(h) : bf16_to_float(h);
}

inline void encode(nc_dtype t, void* p, std::int64_t i, float v) {
  if (t == NC_F32) static_cast<float*>(p)[i] = v;
  else static_cast<std::uint16_t*>(p)[i] = t == NC_F16 ? float_to_half(v) : float_to_bf16(v);
}

// ---- a buffer in plugin memory with a host mirror; guard bytes on both sides ----
constexpr std::size_t guard_bytes = 256;
constexpr unsigned char guard_value = 0xA5;

class buffer {
 public:
  buffer(std::size_t bytes) : host_(bytes + 2 * guard_bytes, guard_value) {
    device_ = plugin().alloc(host_.size());
    push();
  }
  ~buffer() { plugin().free(device_); }
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
