// Fixtures the oracle tests share: the seed, typed strided buffers, random cases.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "normcheck/oracles/dtype.hpp"
#include "normcheck/oracles/problem.hpp"

namespace nc::oracle::testing {

/// the run's seed: NORMCHECK_SEED when set, else fallback; printed so that a run can be repeated
inline std::uint64_t seed(std::uint64_t fallback = 20261202) {
  const char* text = std::getenv("NORMCHECK_SEED");
  const std::uint64_t s = text ? std::strtoull(text, nullptr, 10) : fallback;
  static bool printed = false;
  if (!printed) std::printf("seed %llu (repeat with NORMCHECK_SEED=%llu)\n", static_cast<unsigned long long>(s),
                            static_cast<unsigned long long>(s));
  printed = true;
  return s;
}

/// typed memory holding an M×N matrix at an offset, with a column stride and padded rows
struct owned_matrix {
  std::vector<std::uint64_t> storage;  // 8-byte units: aligned for every dtype
  matrix_view view;
  std::int64_t m = 0, n = 0;

  owned_matrix() = default;
  owned_matrix(std::int64_t rows, std::int64_t cols, dtype type, std::int64_t offset = 0, std::int64_t col_stride = 1,
               std::int64_t row_pad = 0)
      : m(rows), n(cols) {
    const std::int64_t row_stride = cols * col_stride + row_pad;
    const std::int64_t elements = offset + rows * row_stride + 1;
    storage.assign(static_cast<std::size_t>(elements * static_cast<std::int64_t>(size_of(type)) / 8 + 2), 0);
    view = {storage.data(), type, offset, row_stride, col_stride};
  }
  void set(std::int64_t i, std::int64_t j, double v) {
    store(storage.data(), view.type, view.offset + i * view.row_stride + j * view.col_stride, v);
  }
  double at(std::int64_t i, std::int64_t j) const { return view.at(i, j); }
};

/// typed memory holding a vector at an offset with a stride
struct owned_vector {
  std::vector<std::uint64_t> storage;
  vector_view view;
  std::int64_t size = 0;

  owned_vector() = default;
  owned_vector(std::int64_t count, dtype type, std::int64_t offset = 0, std::int64_t stride = 1) : size(count) {
    const std::int64_t elements = offset + count * stride + 1;
    storage.assign(static_cast<std::size_t>(elements * static_cast<std::int64_t>(size_of(type)) / 8 + 2), 0);
    view = {storage.data(), type, offset, stride};
  }
  void set(std::int64_t k, double v) { store(storage.data(), view.type, view.offset + k * view.stride, v); }
  double at(std::int64_t k) const { return view.at(k); }
};

inline owned_matrix matrix_of(std::int64_t m, std::int64_t n, dtype type, const std::vector<double>& values) {
  owned_matrix a(m, n, type);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) a.set(i, j, values[static_cast<std::size_t>(i * n + j)]);
  return a;
}

inline owned_vector vector_of(dtype type, const std::vector<double>& values) {
  owned_vector v(static_cast<std::int64_t>(values.size()), type);
  for (std::size_t k = 0; k < values.size(); ++k) v.set(static_cast<std::int64_t>(k), values[k]);
  return v;
}

/// how a random row's values are drawn
enum class value_class { normal, wide, tiny, epsilon_dominated, one_hot, constant };

inline const char* name_of(value_class c) {
  switch (c) {
    case value_class::normal: return "normal";
    case value_class::wide: return "wide";
    case value_class::tiny: return "tiny";
    case value_class::epsilon_dominated: return "epsilon-dominated";
    case value_class::one_hot: return "one-hot";
    case value_class::constant: return "constant";
  }
  return "?";
}

/// a value of class c for column j of a row (the one-hot row's hot column is 0)
inline double draw(std::mt19937_64& rng, value_class c, dtype type, std::int64_t j, double constant) {
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform(-1, 1);
  switch (c) {
    case value_class::normal: return normal(rng);
    // magnitudes over 2^±16 (fp16 keeps its squares finite at 2^±6)
    case value_class::wide:
      return (uniform(rng) < 0 ? -1 : 1) * std::exp2((type == dtype::f16 ? 6 : 16) * uniform(rng));
    // near the bottom of the format: subnormal fp16, fp32 squares near 2^-126
    case value_class::tiny: return normal(rng) * (type == dtype::f16 ? 0x1p-18 : 0x1p-62);
    // mean(x²) about 1e-8 against ε = 1e-6
    case value_class::epsilon_dominated: return normal(rng) * 1e-4;
    case value_class::one_hot: return j == 0 ? 1 + normal(rng) : 0.0;
    case value_class::constant: return constant;
  }
  return 0;
}

/// a random forward+backward case: shape, dtypes, layout, values and ε
struct random_case {
  std::string name;
  std::int64_t m = 1, n = 1;
  float epsilon = 1e-6f;
  owned_matrix x, dy;
  owned_vector gamma;
  dtype type = dtype::f32;  ///< x, y, dy and dx
  dtype gamma_type = dtype::f32;

  forward_problem forward() const { return {m, n, epsilon, x.view, gamma.view, type}; }
  backward_problem backward() const { return {m, n, x.view, gamma.view, dy.view, epsilon, type, gamma_type}; }
};

inline random_case make_random_case(std::mt19937_64& rng, std::int64_t max_elements = 1 << 15) {
  static const std::int64_t ns[] = {1, 2, 3, 7, 31, 32, 33, 127, 255, 257, 1000};
  static const std::int64_t ms[] = {1, 2, 3, 17};
  static const dtype types[] = {dtype::f32, dtype::f16, dtype::bf16};
  static const float epsilons[] = {1e-6f, 0.0f, 1e-30f, 0.5f};
  static const value_class classes[] = {value_class::normal, value_class::wide, value_class::tiny,
                                        value_class::epsilon_dominated, value_class::one_hot, value_class::constant};
  auto pick = [&rng](const auto& options) {
    return options[std::uniform_int_distribution<std::size_t>(0, std::size(options) - 1)(rng)];
  };
  random_case c;
  c.n = pick(ns);
  c.m = std::min<std::int64_t>(pick(ms), std::max<std::int64_t>(1, max_elements / c.n));
  c.type = pick(types);
  c.gamma_type = std::uniform_int_distribution<int>(0, 1)(rng) ? c.type : dtype::f32;
  c.epsilon = pick(epsilons);
  std::uniform_int_distribution<std::int64_t> offset(0, 15), stride(1, 3), pad(0, 5);
  c.x = owned_matrix(c.m, c.n, c.type, offset(rng), stride(rng), pad(rng));
  c.dy = owned_matrix(c.m, c.n, c.type, offset(rng), stride(rng), pad(rng));
  c.gamma = owned_vector(c.n, c.gamma_type, offset(rng), stride(rng));
  const value_class values = pick(classes);
  std::normal_distribution<double> normal;
  for (std::int64_t i = 0; i < c.m; ++i) {
    const double constant = 1 + normal(rng);
    for (std::int64_t j = 0; j < c.n; ++j) {
      c.x.set(i, j, draw(rng, values, c.type, j, constant));
      c.dy.set(i, j, normal(rng));
    }
  }
  for (std::int64_t j = 0; j < c.n; ++j) c.gamma.set(j, 1 + 0.5 * normal(rng));
  c.name = std::string(name_of(c.type)) + " x " + std::to_string(c.m) + "x" + std::to_string(c.n) + ", gamma " +
           std::string(name_of(c.gamma_type)) + ", " + name_of(values) + " values, epsilon " + [&c] {
             char text[32];
             std::snprintf(text, sizeof text, "%g", static_cast<double>(c.epsilon));
             return std::string(text);
           }();
  return c;
}

}  // namespace nc::oracle::testing
