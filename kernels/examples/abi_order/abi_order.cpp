// RMSNorm in abi.h's own formula, evaluated left to right as C reads it:
//
//     r  = 1 / sqrt(Σ x² / N + ε)
//     y  = x · r · γ                      = (x·r)·γ
//     dx = r·u − x·(r·r·r)·s/N            = r·u − ((x·r³)·s)/N,   u = dy·γ, s = Σ u·x
//     dgamma = Σ_rows dy·x·r
//
// every sum in fp32. The order forms r³, which overflows fp32 once r > 7e12 (a row tiny next
// to ε): there it gives Inf or NaN where the math is finite. normcheck reports that as a defect
// of this order (the shipped kernels apply r² to x·r instead), so this plugin guards that one
// place; everywhere else the error bound admits the order as written. The example of abi.h's formula for "wrap your own kernel": the two row functions
// are the whole kernel, normcheck/plugin_kit.hpp does the ABI.
#include "normcheck/plugin_kit.hpp"

namespace {

struct abi_order {
  static constexpr const char* name = "example-abi-order";

  static float forward_row(std::int64_t n, const float* x, const float* gamma, float epsilon, float* y) {
    float ss = 0.0f;
    for (std::int64_t j = 0; j < n; ++j) ss += x[j] * x[j];
    // the mean divides by the row's N (never a padded width)
    const float r = 1.0f / std::sqrt(ss / float(n) + epsilon);
    for (std::int64_t j = 0; j < n; ++j) y[j] = x[j] * r * gamma[j];
    return r;
  }

  static void backward_row(std::int64_t n, const float* x, const float* gamma, const float* dy, float r, float* dx,
                           float* dgamma_term) {
    float s = 0.0f;
    for (std::int64_t j = 0; j < n; ++j) s += dy[j] * gamma[j] * x[j];
    for (std::int64_t j = 0; j < n; ++j) {
      const float u = dy[j] * gamma[j];
      float term = x[j] * (r * r * r) * s / float(n);  // the formula's second term, left to right
#ifndef NORMCHECK_EXAMPLE_UNGUARDED
      // the one place this order is weaker than the math: r³ or x·r³·s past FLT_MAX although
      // the term is finite. There apply r² to x·r instead (the shipped kernels' order). Built
      // without this guard, normcheck names the defect ("r^3 overflows fp32 ...")
      if (!std::isfinite(term)) term = (x[j] * r) * (s / float(n) * r * r);
#endif
      dx[j] = r * u - term;
      dgamma_term[j] = dy[j] * x[j] * r;
    }
  }
};

}  // namespace

NORMCHECK_EXAMPLE_PLUGIN(abi_order)
