// RMSNorm in the order of Liger-Kernel's Triton kernels (fp32 casting, every step in fp32):
//
//     rstd = rsqrt(Σ x² / N + ε)
//     y    = (x · rstd) · γ
//     dx   = rstd·u + rstd · ((((−1/N)·rstd)·rstd)·s)·x       u = dy·γ, s = Σ u·x
//     dgamma = Σ_rows dy·(x·rstd)
//
// The backward scales s by −rstd²/N first, then by x and rstd once more: it never forms r³,
// and the two terms of dx are added, not subtracted. rstd²/N overflows fp32 for rows tiny next
// to a subnormal ε (rstd > 1.8e19): normcheck names that as this order's defect, and this
// plugin guards that one place. (Liger's "llama" casting mode rounds
// x·rstd to x's dtype before multiplying by γ: a second rounding in fp16/bf16, outside the
// fp32 contract this plugin follows.) The "wrap your own kernel" example of this order;
// normcheck/plugin_kit.hpp does the ABI.
#include "normcheck/plugin_kit.hpp"

namespace {

struct liger_order {
  static constexpr const char* name = "example-liger-order";

  static float forward_row(std::int64_t n, const float* x, const float* gamma, float epsilon, float* y) {
    float ss = 0.0f;
    for (std::int64_t j = 0; j < n; ++j) ss += x[j] * x[j];
    const float rstd = 1.0f / std::sqrt(ss / float(n) + epsilon);
    for (std::int64_t j = 0; j < n; ++j) y[j] = (x[j] * rstd) * gamma[j];
    return rstd;
  }

  static void backward_row(std::int64_t n, const float* x, const float* gamma, const float* dy, float rstd,
                           float* dx, float* dgamma_term) {
    float s = 0.0f;
    for (std::int64_t j = 0; j < n; ++j) s += (dy[j] * gamma[j]) * x[j];
    // −(1/N)·rstd·rstd·s, left to right: one coefficient for the row
    float k = -(1.0f / float(n)) * rstd * rstd * s;
    // the one place this order is weaker than the math: rstd²/N past FLT_MAX (rstd > 1.8e19,
    // a row tiny next to a subnormal ε) although k is finite; there take s/N first
    if (!std::isfinite(k)) k = -(s / float(n)) * rstd * rstd;
    for (std::int64_t j = 0; j < n; ++j) {
      const float u = dy[j] * gamma[j];
      dx[j] = rstd * u + rstd * (k * x[j]);
      dgamma_term[j] = dy[j] * (x[j] * rstd);
    }
  }
};

}  // namespace

NORMCHECK_EXAMPLE_PLUGIN(liger_order)
