#include "normcheck/harness/judge.hpp"

#include <bit>
#include <cfloat>
#include <cmath>
#include <optional>

#include "normcheck/harness/execute.hpp"

namespace nc::harness {

namespace {

oracle::residual_rule residual_rule_of(const nc_operation& op) {
  return op.residual == NC_RESIDUAL_ROUNDED ? oracle::residual_rule::rounded
         : op.residual == NC_RESIDUAL_FP32  ? oracle::residual_rule::fp32
                                            : oracle::residual_rule::none;
}

// an operand as the kernel reads it (as_read)
void flush(nc_dtype type, std::vector<std::uint32_t>& bits) {
  for (auto& b : bits)
    if (const double v = value_of(type, b); v != 0 && std::fabs(v) < FLT_MIN) b = bits_of(type, std::copysign(0.0, v));
}


// an M×N operand of x's dtype, row-major, as the oracle reads it
oracle::matrix_view rows(const std::vector<unsigned char>& bytes, const norm_case& c) {
  return {bytes.data(), oracle_type(c.x_dtype), 0, c.n, 1};
}

}  // namespace

norm_case as_read(const norm_case& c, const capabilities& caps) {
  norm_case out = c;
  if (!caps.flushes_subnormals()) return out;
  for (auto* v : {&out.x, &out.dy, &out.dy2, &out.residual, &out.residual_grad}) flush(c.x_dtype, *v);
  flush(c.gamma_dtype, out.gamma);
  if (std::fabs(out.epsilon) < FLT_MIN) out.epsilon = 0.0f;  // ε too is an fp32 operand
  return out;
}

oracle::variant_forward_result exact_variant_forward_of(const norm_case& drawn, const capabilities& caps) {
  const norm_case c = as_read(drawn, caps);
  const auto x = typed(c.x_dtype, c.x), g = typed(c.gamma_dtype, c.gamma), res = typed(c.x_dtype, c.residual);
  oracle::variant_forward_problem v;
  oracle::forward_problem& p = v.plain;
  p.m = c.m, p.n = c.n, p.epsilon = c.epsilon;
  p.x = rows(x, c);
  p.gamma = {g.data(), oracle_type(c.gamma_dtype), 0, 1};
  p.y_type = quantizes(c.op) && !caps.quantizes_rounded_y() ? oracle::dtype::f32 : oracle_type(c.x_dtype);
  p.rounds_normalized = caps.rounds_normalized();
  p.flushes_subnormals = caps.flushes_subnormals();
  v.residual = residual_rule_of(c.op);
  v.residual_in = rows(res, c);
  v.weight_offset = c.op.weight_offset;
  return oracle::exact_variant_forward(v);
}

oracle::forward_result exact_forward_of(const norm_case& c, const capabilities& caps) {
  return exact_variant_forward_of(c, caps).plain;
}

oracle::quantization quantization_of(const nc_operation& op, std::uint32_t static_scale) {
  oracle::quantization q;
  q.format = op.quant == NC_QUANT_FP8_E5M2 ? oracle::qformat::e5m2
             : op.quant == NC_QUANT_INT8    ? oracle::qformat::int8
                                            : oracle::qformat::e4m3;
  q.scale = op.scale == NC_SCALE_PER_TOKEN   ? oracle::scale_source::per_token
            : op.scale == NC_SCALE_PER_GROUP ? oracle::scale_source::per_group
                                             : oracle::scale_source::given;
  q.divide = op.apply == NC_APPLY_DIVIDE;
  q.group = op.group;
  q.floor = op.scale_floor;
  q.given_scale = std::bit_cast<float>(static_scale);
  return q;
}

oracle::quantization quantization_of(const norm_case& c) { return quantization_of(c.op, c.scale); }

oracle::quantized_verdict judge_quantized_of(const norm_case& c, const capabilities& caps,
                                             const std::vector<std::uint32_t>& codes,
                                             const std::vector<std::uint32_t>& scales) {
  std::vector<std::uint8_t> bytes(codes.begin(), codes.end());
  std::vector<double> values;
  for (std::uint32_t s : scales) values.push_back(std::bit_cast<float>(s));
  return oracle::judge_quantized(quantization_of(c), exact_forward_of(c, caps), c.m, c.n, bytes, values);
}

namespace {

oracle::backward_result computed_backward_of(const norm_case& drawn, const std::vector<std::uint32_t>& dy_bits,
                                             const capabilities& caps) {
  // a residual add's backward differentiates at the h its forward stored (execute.cpp)
  norm_case c = drawn;
  c.dy = dy_bits;
  if (adds_residual(c.op)) {
    c.x.clear();
    for (double h : exact_variant_forward_of(drawn, caps).residual_out) c.x.push_back(bits_of(c.x_dtype, h));
  }
  c = as_read(c, caps);
  const auto x = typed(c.x_dtype, c.x), g = typed(c.gamma_dtype, c.gamma), dy = typed(c.x_dtype, c.dy),
             along = typed(c.x_dtype, c.residual_grad);
  oracle::variant_backward_problem v;
  oracle::backward_problem& p = v.plain;
  p.m = c.m, p.n = c.n, p.epsilon = c.epsilon;
  p.x = rows(x, c);
  p.gamma = {g.data(), oracle_type(c.gamma_dtype), 0, 1};
  p.dy = rows(dy, c);
  p.dx_type = oracle_type(c.x_dtype);
  p.dgamma_type = oracle_type(c.gamma_dtype);
  p.rounds_gradients = caps.rounds_gradients();
  p.flushes_subnormals = caps.flushes_subnormals();
  v.residual = adds_residual(c.op);
  v.residual_grad = rows(along, c);
  v.weight_offset = c.op.weight_offset;
  return oracle::exact_variant_backward(v);
}

}  // namespace

// The dx and dgamma judges of one case's outputs (and the properties that judge both) each ask
// for the case's exact backward: a thread keeps the last one with what it was computed from (the
// case, dy, and the declaration's flags, which hold every capability the oracle reads) and gives
// it again for equal arguments
oracle::backward_result exact_backward_of(const norm_case& drawn, const std::vector<std::uint32_t>& dy_bits,
                                          const capabilities& caps) {
  struct kept_backward {
    norm_case drawn;
    std::vector<std::uint32_t> dy;
    std::uint32_t flags;
    oracle::backward_result result;
  };
  thread_local std::optional<kept_backward> kept;
  if (!kept || kept->flags != caps.flags || kept->dy != dy_bits || !(kept->drawn == drawn))
    kept = kept_backward{drawn, dy_bits, caps.flags, computed_backward_of(drawn, dy_bits, caps)};
  return kept->result;
}

}  // namespace nc::harness
