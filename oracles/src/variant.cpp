#include "normcheck/oracles/variant.hpp"

#include <cmath>

#include "normcheck/oracles/exact.hpp"

namespace nc::oracle {
namespace {

// the inputs a variant's forward normalizes, as fp32 values (exactly representable): h = x +
// residual under the rule, M×N row-major; and g = fl32(offset + gamma), N entries
std::vector<float> normalized_input(const variant_forward_problem& p) {
  const forward_problem& f = p.plain;
  std::vector<float> h(std::size_t(f.m * f.n));
  for (std::int64_t i = 0; i < f.m; ++i)
    for (std::int64_t j = 0; j < f.n; ++j) {
      // fl32(x + residual): the double sum is within half a double ulp of the exact one, and
      // its rounding into fp32 is the correct rounding (innocuous double rounding)
      const double sum = f.x.at(i, j) + (p.residual == residual_rule::none ? 0.0 : p.residual_in.at(i, j));
      double v = double(float(sum));
      // a flush-to-zero kernel's fp32 sum below the smallest normal is 0
      if (f.flushes_subnormals && std::fabs(v) < format_of(dtype::f32).min_normal) v = std::copysign(0.0, v);
      if (p.residual == residual_rule::rounded) v = round_to(f.x.type, v);
      h[std::size_t(i * f.n + j)] = float(v);
    }
  return h;
}

std::vector<float> offset_gamma(const vector_view& gamma, std::int64_t n, float weight_offset) {
  std::vector<float> g(static_cast<std::size_t>(n));
  for (std::int64_t j = 0; j < n; ++j) g[std::size_t(j)] = float(double(weight_offset) + gamma.at(j));
  return g;
}

}  // namespace

variant_forward_result exact_variant_forward(const variant_forward_problem& p) {
  variant_forward_result out;
  forward_problem f = p.plain;
  std::vector<float> h, g;
  if (p.residual != residual_rule::none) {
    h = normalized_input(p);
    f.x = {h.data(), dtype::f32, 0, f.n, 1};
    out.residual_out.resize(h.size());
    for (std::size_t e = 0; e < h.size(); ++e) out.residual_out[e] = round_to(p.plain.x.type, h[e]);
  }
  if (p.weight_offset != 0.0f) {
    g = offset_gamma(p.plain.gamma, f.n, p.weight_offset);
    f.gamma = {g.data(), dtype::f32, 0, 1};
  }
  out.plain = exact_forward(f);
  return out;
}

backward_result exact_variant_backward(const variant_backward_problem& p) {
  backward_problem b = p.plain;
  std::vector<float> g;
  if (p.weight_offset != 0.0f) {
    g = offset_gamma(p.plain.gamma, b.n, p.weight_offset);
    b.gamma = {g.data(), dtype::f32, 0, 1};
  }
  if (!p.residual) return exact_backward(b);

  // dx in fp32 (its bound then covers the kernel's fp32 value before the sum), then the sum
  b.dx_type = dtype::f32;
  backward_result out = exact_backward(b);
  const format& f32 = format_of(dtype::f32);
  const format& t = format_of(p.plain.dx_type);
  const bool rounds = p.plain.dx_type != dtype::f32;
  for (std::int64_t i = 0; i < b.m; ++i) {
    row_status& row = out.rows[std::size_t(i)];
    for (std::int64_t j = 0; j < b.n; ++j) {
      const std::size_t e = std::size_t(i * b.n + j);
      const double along = p.residual_grad.at(i, j);
      const double total = out.dx[e] + along;
      if (!std::isfinite(along)) {
        out.dx[e] = total;
        if (row.in_domain()) row.reason = domain_reason::non_finite_input;
        continue;
      }
      out.dx[e] = total;
      if (!row.in_domain()) continue;
      const double before = out.dx_bound[e];
      // the kernel's fp32 sum of its dx and the gradient, then its rounding to dx's dtype
      // (a flush-to-zero kernel's sum below the smallest normal is 0)
      const double flushed = p.plain.flushes_subnormals ? f32.min_normal : 0.0;
      const double sum_bound = before + f32.unit_roundoff * (std::fabs(total) + before) + flushed;
      const double reach = std::fabs(total) + sum_bound;
      const double final_bound = rounds ? t.unit_roundoff * reach + t.half_subnormal : 0.0;
      // the double sum above: within a double ulp of the exact one
      out.dx_bound[e] = sum_bound + final_bound + std::ldexp(std::fabs(total), -52);
      if (reach + final_bound >= (rounds ? t.overflow_threshold : f32.overflow_threshold))
        row.reason = domain_reason::output_overflow;
    }
  }
  // a row out of the domain has no bound
  for (std::int64_t i = 0; i < b.m; ++i)
    if (!out.rows[std::size_t(i)].in_domain())
      for (std::int64_t j = 0; j < b.n; ++j) out.dx_bound[std::size_t(i * b.n + j)] = NAN;
  return out;
}

}  // namespace nc::oracle
