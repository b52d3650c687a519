// A correct kernel whose bits follow where a row lives and how big its call is, as a
// vectorized GPU kernel's do, and which reports no path (abi.h: the path functions are
// optional). PyTorch's fused order (torch_order.hpp), with each row sum taken the way a
// vector loop takes it:
//
//     a scalar head up to the row's first 16-byte boundary, then the aligned body in L lanes
//     (summed lane by lane, the lanes added pairwise), then a scalar tail; a column-strided
//     row is all head. L = 4, or 8 in a call of 64 rows or more (a library's other kernel),
//     and in the forward also for an epsilon whose exponent has bit 1 set (a compiler that
//     specializes on epsilon's value builds its kernel again, and may split the sum otherwise).
//
// So a row moved to another address modulo 16 bytes (a permutation of rows with N·size not a
// multiple of 16, a strided view), into a batch of another size, or given an epsilon 4^k times
// larger rounds differently: a difference of an ulp, inside the exact oracle's bound. The
// bit-identity properties must pass it: they hold a kernel to bits where it reports one path for
// both calls, and compare within twice the bound where it reports none (they once failed such
// kernels: the peer campaign of 2026-12-04, torch's eager kernel and torch.compile's).
#include <bit>
#include <cstdint>

#include "normcheck/plugin_kit.hpp"

namespace {

struct vectorized_order {
  static constexpr const char* name = "example-vectorized-order";

  // Σ term(j) over the row, in the order of a vector loop over the row's place in memory
  template <class Term>
  static float row_sum(std::int64_t n, Term term, bool other_kernel = false) {
    const nc::example::row_place& at = nc::example::current_row;
    const std::int64_t lanes = at.m >= 64 || other_kernel ? 8 : 4;
    const std::int64_t to_boundary = std::int64_t((16 - at.x_byte % 16) % 16 / at.element_bytes);
    const std::int64_t head = at.unit_stride ? std::min(n, to_boundary) : n;
    const std::int64_t body = (n - head) / lanes * lanes;
    float sum = 0.0f;
    for (std::int64_t j = 0; j < head; ++j) sum += term(j);
    float lane[8] = {};
    for (std::int64_t j = 0; j < body; ++j) lane[j % lanes] += term(head + j);
    for (std::int64_t width = lanes / 2; width >= 1; width /= 2)
      for (std::int64_t l = 0; l < width; ++l) lane[l] += lane[l + width];
    sum += lane[0];
    for (std::int64_t j = head + body; j < n; ++j) sum += term(j);
    return sum;
  }

  static float forward_row(std::int64_t n, const float* x, const float* gamma, float epsilon, float* y) {
    const bool specialized = (std::bit_cast<std::uint32_t>(epsilon) >> 24) & 1;
    const float ss = row_sum(n, [&](std::int64_t j) { return x[j] * x[j]; }, specialized);
#ifdef NORMCHECK_EXAMPLE_SPECIALIZED_WRONG
    // the ctest variant that proves the scaling property can fail such a kernel: its other
    // kernel's r is 1.6% off, far outside every bound
    const float rstd = (specialized ? 1.015625f : 1.0f) / std::sqrt(ss / float(n) + epsilon);
#else
    const float rstd = 1.0f / std::sqrt(ss / float(n) + epsilon);
#endif
    for (std::int64_t j = 0; j < n; ++j) y[j] = (x[j] * rstd) * gamma[j];
    return rstd;
  }

  static void backward_row(std::int64_t n, const float* x, const float* gamma, const float* dy, float rstd,
                           float* dx, float* dgamma_term) {
    const float s = row_sum(n, [&](std::int64_t j) { return (dy[j] * gamma[j]) * (x[j] * rstd); });
    const float mean_ux_hat = s / float(n);
    for (std::int64_t j = 0; j < n; ++j) {
      const float x_hat = x[j] * rstd;
      dx[j] = rstd * (dy[j] * gamma[j] - x_hat * mean_ux_hat);
      dgamma_term[j] = dy[j] * x_hat;
    }
  }
};

}  // namespace

NORMCHECK_EXAMPLE_PLUGIN(vectorized_order)
