// The document's two reference functions as loop templates over the working type, so that the
// same lines run in float/double for reference.cpp and in multiprecision for the gradcheck.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace nc::oracle::reference_formula {

/// rmsnorm_reference over row-major m×n arrays in the working type T
template <class T>
void forward(std::int64_t m, std::int64_t n, const T* x, const T* gamma, const T& epsilon, T* y, T* r) {
  using std::sqrt;
  for (std::int64_t i = 0; i < m; ++i) {
    const T* xi = x + i * n;
    // r = rsqrt(x.square().mean(-1) + epsilon)
    T sum = 0;
    for (std::int64_t j = 0; j < n; ++j) sum += xi[j] * xi[j];
    r[i] = T(1) / sqrt(T(sum / T(static_cast<double>(n))) + epsilon);
    // y = x·r·γ
    for (std::int64_t j = 0; j < n; ++j) y[i * n + j] = xi[j] * r[i] * gamma[j];
  }
}

/// manual_backward over row-major m×n arrays: T holds the values, round() rounds each tensor
/// operation's result to the argument dtype, Acc accumulates the reductions
template <class T, class Acc, class Round>
void backward(std::int64_t m, std::int64_t n, const T* x, const T* gamma, const T* dy, const T& epsilon,
              Round round, T* dx, T* dgamma) {
  using std::sqrt;
  const Acc count = static_cast<double>(n);
  std::vector<Acc> dgamma_sum(static_cast<std::size_t>(n), Acc(0));
  for (std::int64_t i = 0; i < m; ++i) {
    const T* xi = x + i * n;
    const T* dyi = dy + i * n;
    // r = rsqrt(x.square().mean(-1, keepdim=True) + epsilon)
    Acc square_sum = 0;
    for (std::int64_t j = 0; j < n; ++j) square_sum += Acc(round(xi[j] * xi[j]));
    const T mean_square = round(T(square_sum / count));
    const T r = round(T(1) / sqrt(round(mean_square + epsilon)));
    // (u·x).mean(-1) with u = dy·γ
    Acc ux_sum = 0;
    for (std::int64_t j = 0; j < n; ++j) ux_sum += Acc(round(round(dyi[j] * gamma[j]) * xi[j]));
    const T mean_ux = round(T(ux_sum / count));
    // dx = r·u − x·r.pow(3)·mean(u·x)
    const T r3 = round(r * r * r);
    for (std::int64_t j = 0; j < n; ++j) {
      const T u = round(dyi[j] * gamma[j]);
      dx[i * n + j] = round(round(r * u) - round(round(xi[j] * r3) * mean_ux));
    }
    // dgamma = (dy·x·r).sum(0): a sum over the rows, never a mean
    for (std::int64_t j = 0; j < n; ++j) dgamma_sum[static_cast<std::size_t>(j)] += Acc(round(round(dyi[j] * xi[j]) * r));
  }
  for (std::int64_t j = 0; j < n; ++j) dgamma[j] = round(T(dgamma_sum[static_cast<std::size_t>(j)]));
}

}  // namespace nc::oracle::reference_formula
