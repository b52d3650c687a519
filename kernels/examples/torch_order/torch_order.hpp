// RMSNorm in the fused order of PyTorch's and Apex's kernels, every step in fp32:
//
//     rstd = 1 / sqrt(Σ x² / N + ε)
//     x̂    = x · rstd                    the normalized row, formed once
//     y    = x̂ · γ
//     dx   = rstd · (u − x̂ · mean(u·x̂))  u = dy·γ; mean over the row's N columns
//     dgamma = Σ_rows dy·x̂
//
// The backward works on x̂, which is O(1) whatever the row's scale, so it never forms r³ or
// r²: no intermediate overflows where the result is finite. The row functions of the
// "wrap your own kernel" example of this order (torch_order.cpp); the partial kernels of
// ../partial/ compute in this order too.
#pragma once

#include <cmath>
#include <cstdint>

namespace nc::example {

struct torch_order {
  static constexpr const char* name = "example-torch-order";

  static float forward_row(std::int64_t n, const float* x, const float* gamma, float epsilon, float* y) {
    float ss = 0.0f;
    for (std::int64_t j = 0; j < n; ++j) ss += x[j] * x[j];
    const float rstd = 1.0f / std::sqrt(ss / float(n) + epsilon);
    for (std::int64_t j = 0; j < n; ++j) {
      const float x_hat = x[j] * rstd;
      y[j] = x_hat * gamma[j];
    }
    return rstd;
  }

  static void backward_row(std::int64_t n, const float* x, const float* gamma, const float* dy, float rstd,
                           float* dx, float* dgamma_term) {
    // mean(u·x̂) over the row, x̂ recomputed from the saved rstd as the fused kernels do
    float s = 0.0f;
    for (std::int64_t j = 0; j < n; ++j) s += (dy[j] * gamma[j]) * (x[j] * rstd);
    const float mean_ux_hat = s / float(n);
    for (std::int64_t j = 0; j < n; ++j) {
      const float x_hat = x[j] * rstd;
      const float u = dy[j] * gamma[j];
      dx[j] = rstd * (u - x_hat * mean_ux_hat);
      dgamma_term[j] = dy[j] * x_hat;
    }
  }
};

}  // namespace nc::example
