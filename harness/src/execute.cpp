#include "normcheck/harness/execute.hpp"

#include <cstring>

#include "normcheck/harness/failure.hpp"

namespace nc::harness {

std::vector<unsigned char> typed(nc_dtype type, const std::vector<std::uint32_t>& bits) {
  const std::size_t size = size_of(type);
  std::vector<unsigned char> bytes(bits.size() * size);
  for (std::size_t k = 0; k < bits.size(); ++k) std::memcpy(&bytes[k * size], &bits[k], size);
  return bytes;
}

case_buffers::case_buffers(const kernel& k, const norm_case& c)
    : x(k, "x", c.x_dtype, extent(c.layout.x, c.m, c.n), element_slots(c.layout.x, c.m, c.n), operand_role::input),
      gamma(k, "gamma", c.gamma_dtype, extent(c.layout.gamma, c.n), element_slots(c.layout.gamma, c.n),
            operand_role::input),
      dy(k, "dy", c.x_dtype, extent(c.layout.dy, c.m, c.n), element_slots(c.layout.dy, c.m, c.n), operand_role::input),
      y(k, "y", c.x_dtype, extent(c.layout.y, c.m, c.n), element_slots(c.layout.y, c.m, c.n), operand_role::output),
      r(k, "r", NC_F32, extent(c.layout.r, c.m), element_slots(c.layout.r, c.m), operand_role::output),
      dx(k, "dx", c.x_dtype, extent(c.layout.dx, c.m, c.n), element_slots(c.layout.dx, c.m, c.n),
         operand_role::output),
      dgamma(k, "dgamma", c.gamma_dtype, extent(c.layout.dgamma, c.n), element_slots(c.layout.dgamma, c.n),
             operand_role::output),
      case_(c) {
  for (std::int64_t e = 0; e < c.m * c.n; ++e) {
    x.set_element(e, c.x[std::size_t(e)]);
    dy.set_element(e, c.dy[std::size_t(e)]);
  }
  for (std::int64_t j = 0; j < c.n; ++j) gamma.set_element(j, c.gamma[std::size_t(j)]);
  for (guarded_buffer* b : {&x, &gamma, &dy, &y, &r, &dx, &dgamma}) b->upload();
}

nc_forward_args case_buffers::forward_args() const {
  const norm_case& c = case_;
  return {c.m,
          c.n,
          c.epsilon,
          {x.data(), c.x_dtype, c.layout.x.offset, c.layout.x.row_stride, c.layout.x.col_stride},
          {gamma.data(), c.gamma_dtype, c.layout.gamma.offset, c.layout.gamma.stride},
          {y.data(), c.x_dtype, c.layout.y.offset, c.layout.y.row_stride, c.layout.y.col_stride},
          {r.data(), NC_F32, c.layout.r.offset, c.layout.r.stride},
          nullptr};
}

nc_backward_args case_buffers::backward_args() const {
  const norm_case& c = case_;
  return {c.m,
          c.n,
          {x.data(), c.x_dtype, c.layout.x.offset, c.layout.x.row_stride, c.layout.x.col_stride},
          {gamma.data(), c.gamma_dtype, c.layout.gamma.offset, c.layout.gamma.stride},
          {dy.data(), c.x_dtype, c.layout.dy.offset, c.layout.dy.row_stride, c.layout.dy.col_stride},
          {r.data(), NC_F32, c.layout.r.offset, c.layout.r.stride},
          {dx.data(), c.x_dtype, c.layout.dx.offset, c.layout.dx.row_stride, c.layout.dx.col_stride},
          {dgamma.data(), c.gamma_dtype, c.layout.dgamma.offset, c.layout.dgamma.stride},
          nullptr,
          0,
          nullptr};
}

void case_buffers::freeze_all() {
  for (guarded_buffer* b : {&x, &gamma, &dy, &y, &r, &dx, &dgamma}) b->freeze();
}

std::optional<std::string> case_buffers::check(const char* call) {
  for (guarded_buffer* b : {&x, &gamma, &dy, &y, &r, &dx, &dgamma}) {
    b->download();
    if (auto problem = b->check()) return std::string("after the ") + call + ": " + *problem;
  }
  return std::nullopt;
}

namespace {

std::vector<std::uint32_t> elements_of(const guarded_buffer& b) {
  std::vector<std::uint32_t> bits(std::size_t(b.element_count()));
  for (std::int64_t k = 0; k < b.element_count(); ++k) bits[std::size_t(k)] = b.element(k);
  return bits;
}

}  // namespace

outputs execute(const kernel& k, const norm_case& c, calls which) {
  case_buffers a(k, c);
  outputs out;
  const nc_forward_args f = a.forward_args();
  out.forward_path = k.forward_path(f);
  // the backward's outputs must come out of the forward untouched
  a.dx.freeze();
  a.dgamma.freeze();
  k.forward(f);
  k.synchronize();
  if (auto problem = a.check("forward")) throw property_failure(*problem);
  out.y = elements_of(a.y);
  out.r = elements_of(a.r);
  if (which == calls::forward) return out;

  // the backward reads the r the forward wrote, and leaves it and y as they are
  a.r.freeze();
  a.y.freeze();
  a.dx.reopen();
  a.dgamma.reopen();
  nc_backward_args b = a.backward_args();
  const std::size_t workspace_bytes = k.workspace_size(b);
  out.workspace_bytes = workspace_bytes;
  guarded_scratch workspace(k, workspace_bytes);
  b.workspace = workspace.data();
  b.workspace_bytes = workspace_bytes;
  out.backward_path = k.backward_path(b);
  k.backward(b);
  k.synchronize();
  if (auto problem = a.check("backward")) throw property_failure(*problem);
  if (auto problem = workspace.check(false)) throw property_failure("after the backward: " + *problem);
  out.dx = elements_of(a.dx);
  out.dgamma = elements_of(a.dgamma);
  return out;
}

}  // namespace nc::harness
