#include "normcheck/harness/judge.hpp"

#include "normcheck/harness/execute.hpp"

namespace nc::harness {

namespace {

oracle::residual_rule residual_rule_of(const nc_operation& op) {
  return op.residual == NC_RESIDUAL_ROUNDED ? oracle::residual_rule::rounded
         : op.residual == NC_RESIDUAL_FP32  ? oracle::residual_rule::fp32
                                            : oracle::residual_rule::none;
}

}  // namespace

oracle::variant_forward_result exact_variant_forward_of(const norm_case& c, const capabilities& caps) {
  const auto x = typed(c.x_dtype, c.x), g = typed(c.gamma_dtype, c.gamma), res = typed(c.x_dtype, c.residual);
  oracle::variant_forward_problem v;
  oracle::forward_problem& p = v.plain;
  p.m = c.m, p.n = c.n, p.epsilon = c.epsilon;
  p.x = {x.data(), oracle_type(c.x_dtype), 0, c.n, 1};
  p.gamma = {g.data(), oracle_type(c.gamma_dtype), 0, 1};
  p.y_type = oracle_type(c.x_dtype);
  p.rounds_normalized = caps.rounds_normalized();
  v.residual = residual_rule_of(c.op);
  v.residual_in = {res.data(), oracle_type(c.x_dtype), 0, c.n, 1};
  v.weight_offset = c.op.weight_offset;
  return oracle::exact_variant_forward(v);
}

oracle::forward_result exact_forward_of(const norm_case& c, const capabilities& caps) {
  return exact_variant_forward_of(c, caps).plain;
}

oracle::backward_result exact_backward_of(const norm_case& c, const std::vector<std::uint32_t>& dy_bits,
                                          const capabilities& caps) {
  std::vector<std::uint32_t> h_bits;
  if (adds_residual(c.op))
    for (double h : exact_variant_forward_of(c, caps).residual_out) h_bits.push_back(bits_of(c.x_dtype, h));
  const auto x = typed(c.x_dtype, adds_residual(c.op) ? h_bits : c.x), g = typed(c.gamma_dtype, c.gamma),
             dy = typed(c.x_dtype, dy_bits), along = typed(c.x_dtype, c.residual_grad);
  oracle::variant_backward_problem v;
  oracle::backward_problem& p = v.plain;
  p.m = c.m, p.n = c.n, p.epsilon = c.epsilon;
  p.x = {x.data(), oracle_type(c.x_dtype), 0, c.n, 1};
  p.gamma = {g.data(), oracle_type(c.gamma_dtype), 0, 1};
  p.dy = {dy.data(), oracle_type(c.x_dtype), 0, c.n, 1};
  p.dx_type = oracle_type(c.x_dtype);
  p.dgamma_type = oracle_type(c.gamma_dtype);
  p.rounds_gradients = caps.rounds_gradients();
  v.residual = adds_residual(c.op);
  v.residual_grad = {along.data(), oracle_type(c.x_dtype), 0, c.n, 1};
  v.weight_offset = c.op.weight_offset;
  return oracle::exact_variant_backward(v);
}

}  // namespace nc::harness
