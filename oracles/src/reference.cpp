// The document's oracle: rmsnorm_reference() and manual_backward() on views.
#include "normcheck/oracles/reference.hpp"

#include <vector>

#include "exact_common.hpp"
#include "reference_formula.hpp"

namespace nc::oracle {
namespace {

std::vector<double> load_matrix(const matrix_view& v, std::int64_t m, std::int64_t n) {
  std::vector<double> out(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i) common::load_row(v, i, n, &out[static_cast<std::size_t>(i * n)]);
  return out;
}

std::vector<double> load_vector(const vector_view& v, std::int64_t n) {
  std::vector<double> out(static_cast<std::size_t>(n));
  common::load_vector(v, n, out.data());
  return out;
}

/// the dtype PyTorch's promotion gives the backward's operands
dtype promoted(dtype x, dtype gamma, dtype dy) {
  if (x == dtype::f64 || gamma == dtype::f64 || dy == dtype::f64) return dtype::f64;
  if (x == gamma && x == dy) return x;
  return dtype::f32;
}

}  // namespace

reference_forward_result reference_forward(const forward_problem& p) {
  common::check(p);
  reference_forward_result result;
  result.y.resize(static_cast<std::size_t>(p.m * p.n));
  result.r.resize(static_cast<std::size_t>(p.m));
  if (p.m == 0) return result;
  // xf = x.to(dtype), gf = gamma.to(dtype): float64 if x is float64, else float32
  const std::vector<double> x = load_matrix(p.x, p.m, p.n);
  const std::vector<double> gamma = load_vector(p.gamma, p.n);
  if (p.x.type == dtype::f64) {
    reference_formula::forward<double>(p.m, p.n, x.data(), gamma.data(), p.epsilon, result.y.data(), result.r.data());
  } else {
    const std::vector<float> xf(x.begin(), x.end());
    std::vector<float> gf(gamma.begin(), gamma.end()), y(result.y.size()), r(result.r.size());
    reference_formula::forward<float>(p.m, p.n, xf.data(), gf.data(), p.epsilon, y.data(), r.data());
    result.y.assign(y.begin(), y.end());
    result.r.assign(r.begin(), r.end());
  }
  // .to(x.dtype): cast the output back
  for (double& v : result.y) v = round_to(p.y_type, v);
  return result;
}

reference_backward_result reference_backward(const backward_problem& p) {
  common::check(p);
  reference_backward_result result;
  result.dx.resize(static_cast<std::size_t>(p.m * p.n));
  result.dgamma.assign(static_cast<std::size_t>(p.n), 0.0);
  if (p.m == 0) return result;
  const std::vector<double> x = load_matrix(p.x, p.m, p.n);
  const std::vector<double> dy = load_matrix(p.dy, p.m, p.n);
  const std::vector<double> gamma = load_vector(p.gamma, p.n);
  const dtype working = promoted(p.x.type, p.gamma.type, p.dy.type);
  const double epsilon = p.epsilon;
  if (working == dtype::f64) {
    reference_formula::backward<double, double>(p.m, p.n, x.data(), gamma.data(), dy.data(), epsilon,
                                                [](double v) { return v; }, result.dx.data(), result.dgamma.data());
  } else {
    // a double op rounded once to fp32/fp16/bf16 equals that format's own op (53 ≥ 2p + 2 bits)
    reference_formula::backward<double, float>(p.m, p.n, x.data(), gamma.data(), dy.data(), epsilon,
                                               [working](double v) { return round_to(working, v); }, result.dx.data(),
                                               result.dgamma.data());
  }
  for (double& v : result.dx) v = round_to(p.dx_type, v);
  for (double& v : result.dgamma) v = round_to(p.dgamma_type, v);
  return result;
}

}  // namespace nc::oracle
