// RMSNorm in the order of the source document's reference (SEED.md), every step in fp32:
//
//     ms = mean(x²)                       Σ x² / N
//     r  = 1 / sqrt(ms + ε)
//     y  = x · r · γ
//     dx = r·u − x·r³·mean(u·x)          r³ = r·r·r formed once per row, u = dy·γ
//     dgamma = Σ_rows dy·x·r
//
// Like abi.h's formula it forms r³, so a row tiny next to ε (r > 7e12) overflows it to Inf:
// normcheck names that as this order's defect, and this plugin guards that one place. The "wrap your own kernel" example of the
// document's design; normcheck/plugin_kit.hpp does the ABI.
#include "normcheck/plugin_kit.hpp"

namespace {

struct reference_order {
  static constexpr const char* name = "example-reference-order";

  static float forward_row(std::int64_t n, const float* x, const float* gamma, float epsilon, float* y) {
    float ss = 0.0f;
    for (std::int64_t j = 0; j < n; ++j) ss += x[j] * x[j];
    const float ms = ss / float(n);
    const float r = 1.0f / std::sqrt(ms + epsilon);
    for (std::int64_t j = 0; j < n; ++j) y[j] = x[j] * r * gamma[j];
    return r;
  }

  static void backward_row(std::int64_t n, const float* x, const float* gamma, const float* dy, float r, float* dx,
                           float* dgamma_term) {
    float s = 0.0f;
    for (std::int64_t j = 0; j < n; ++j) s += (dy[j] * gamma[j]) * x[j];
    const float mean_ux = s / float(n);
    const float r3 = r * r * r;
    for (std::int64_t j = 0; j < n; ++j) {
      const float u = dy[j] * gamma[j];
      float term = x[j] * r3 * mean_ux;
      // the one place this order is weaker than the math: r³ (or x·r³) past FLT_MAX although
      // the term is finite; there apply r² to x·r instead (the shipped kernels' order)
      if (!std::isfinite(term)) term = (x[j] * r) * (mean_ux * r * r);
      dx[j] = r * u - term;
      dgamma_term[j] = dy[j] * x[j] * r;
    }
  }
};

}  // namespace

NORMCHECK_EXAMPLE_PLUGIN(reference_order)
