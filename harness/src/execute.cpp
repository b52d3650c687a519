#include "normcheck/harness/execute.hpp"

#include <cstdio>
#include <cstring>

#include "normcheck/harness/failure.hpp"
#include "normcheck/harness/worker.hpp"

namespace nc::harness {

std::vector<unsigned char> typed(nc_dtype type, const std::vector<std::uint32_t>& bits) {
  const std::size_t size = size_of(type);
  std::vector<unsigned char> bytes(bits.size() * size);
  for (std::size_t k = 0; k < bits.size(); ++k) std::memcpy(&bytes[k * size], &bits[k], size);
  return bytes;
}

namespace {

// the byte position of each buffer of a case in its one allocation (x, gamma, dy, y, r, dx,
// dgamma), then the allocation's size: each buffer starts on a 256-byte boundary, so its
// first slot is as aligned as a cudaMalloc of its own
std::vector<std::size_t> placement(const norm_case& c) {
  const std::size_t bytes[] = {
      guarded_buffer::bytes_for(c.x_dtype, extent(c.layout.x, c.m, c.n)),
      guarded_buffer::bytes_for(c.gamma_dtype, extent(c.layout.gamma, c.n)),
      guarded_buffer::bytes_for(c.x_dtype, extent(c.layout.dy, c.m, c.n)),
      guarded_buffer::bytes_for(c.x_dtype, extent(c.layout.y, c.m, c.n)),
      guarded_buffer::bytes_for(NC_F32, extent(c.layout.r, c.m)),
      guarded_buffer::bytes_for(c.x_dtype, extent(c.layout.dx, c.m, c.n)),
      guarded_buffer::bytes_for(c.gamma_dtype, extent(c.layout.dgamma, c.n))};
  std::vector<std::size_t> at;
  std::size_t end = 0;
  for (std::size_t b : bytes) {
    at.push_back(end);
    end += (b + 255) / 256 * 256;
  }
  at.push_back(end);
  return at;
}

}  // namespace

case_buffers::case_buffers(const kernel& k, const norm_case& c)
    : at_(placement(c)),
      block_{k, k.alloc(at_.back())},
      x(k, "x", c.x_dtype, extent(c.layout.x, c.m, c.n), element_slots(c.layout.x, c.m, c.n), operand_role::input,
        placed(0)),
      gamma(k, "gamma", c.gamma_dtype, extent(c.layout.gamma, c.n), element_slots(c.layout.gamma, c.n),
            operand_role::input, placed(1)),
      dy(k, "dy", c.x_dtype, extent(c.layout.dy, c.m, c.n), element_slots(c.layout.dy, c.m, c.n), operand_role::input,
         placed(2)),
      y(k, "y", c.x_dtype, extent(c.layout.y, c.m, c.n), element_slots(c.layout.y, c.m, c.n), operand_role::output,
        placed(3)),
      r(k, "r", NC_F32, extent(c.layout.r, c.m), element_slots(c.layout.r, c.m), operand_role::output, placed(4)),
      dx(k, "dx", c.x_dtype, extent(c.layout.dx, c.m, c.n), element_slots(c.layout.dx, c.m, c.n),
         operand_role::output, placed(5)),
      dgamma(k, "dgamma", c.gamma_dtype, extent(c.layout.dgamma, c.n), element_slots(c.layout.dgamma, c.n),
             operand_role::output, placed(6)),
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


std::string declared_context(const kernel& k, const norm_case& c) {
  std::string text = "a call inside its declared capabilities (" + k.capabilities().describe() + "): dtype pair " +
                     dtype_class(c) + ", layouts ";
  const std::uint32_t bits = layout_bits(c, k.capabilities().writes_r());
  if (bits == 0) text += "dense";
  for (std::uint32_t b = 1; b <= NC_LAYOUT_COLUMN_STRIDED; b <<= 1)
    if (bits & b) text += std::string(text.back() == ' ' ? "" : ", ") + layout_name(b);
  char eps[32];
  std::snprintf(eps, sizeof eps, "%g", double(c.epsilon));
  return text + ", M = " + std::to_string(c.m) + ", N = " + std::to_string(c.n) + ", epsilon " + eps;
}

namespace {

// a call of a kernel inside its declared capabilities: NC_ERR_UNSUPPORTED there is a broken
// declaration, a failure of the property that made the call
template <class F>
void declared_call(const kernel& k, const norm_case& c, const char* which, F&& call) {
  try {
    call();
  } catch (const kernel_error& e) {
    // a device plugin whose call failed and whose device now refuses even a synchronize has
    // lost its context (a sticky fault): every later call would fail the same way, so the
    // shrinker's "smaller failing cases" would be fiction. The worker stops on this case
    if (e.status != NC_ERR_UNSUPPORTED && k.device_memory() && !k.available())
      abandon_worker(std::string("the device context was lost in the ") + which + " (" + e.what() +
                     "; a synchronize after it fails too): the case is reported as drawn, not shrunk, and the "
                     "next property gets a fresh worker and context");
    if (e.status != NC_ERR_UNSUPPORTED) throw;
    throw property_failure(std::string("the kernel answered NC_ERR_UNSUPPORTED to the ") + which + " for " +
                           declared_context(k, c) + ": " + e.what());
  }
}

}  // namespace

std::string outside_capabilities(const capabilities& caps, const norm_case& c) {
  std::string why;
  const auto add = [&](const std::string& what) { why += (why.empty() ? "" : ", ") + what; };
  if (!caps.serves(c.x_dtype, c.gamma_dtype)) add("dtype pair " + dtype_class(c));
  const std::uint32_t bits = layout_bits(c, caps.writes_r()) & ~caps.layouts;
  for (std::uint32_t b = 1; b <= NC_LAYOUT_COLUMN_STRIDED; b <<= 1)
    if (bits & b) add(std::string("layout ") + layout_name(b));
  if (!caps.takes_epsilon(c.epsilon)) add("epsilon " + std::to_string(c.epsilon));
  if (caps.max_n > 0 && c.n > caps.max_n) add("N = " + std::to_string(c.n));
  if (caps.max_elements > 0 && c.m * c.n > caps.max_elements) add("M*N = " + std::to_string(c.m * c.n));
  return why;
}

outputs execute(const kernel& k, const norm_case& c, calls which) {
  const capabilities& caps = k.capabilities();
  // the generators draw inside the declaration: a case outside it is normcheck's own bug (or a
  // case file replayed on another kernel), never the kernel's
  if (const std::string why = outside_capabilities(caps, c); !why.empty())
    throw std::invalid_argument("the case lies outside the capabilities the kernel declares (" + caps.describe() +
                                "): " + why + "; a harness defect if a generator drew it");
  case_buffers a(k, c);
  outputs out;
  nc_forward_args f = a.forward_args();
  out.forward_path = k.forward_path(f);
  // the backward's outputs must come out of the forward untouched; a kernel that writes no r
  // gets r.data = NULL (abi.h NC_NO_R), and its r buffer must stay as it is
  a.dx.freeze();
  a.dgamma.freeze();
  if (!caps.writes_r()) {
    f.r.data = nullptr;
    a.r.freeze();
  }
  declared_call(k, c, "forward", [&] {
    k.forward(f);
    k.synchronize();
  });
  if (auto problem = a.check("forward")) throw property_failure(*problem);
  out.y = a.y.elements();
  // no r: zeros, so that comparisons of two runs' r hold and the differential skips it
  out.r = caps.writes_r() ? a.r.elements() : std::vector<std::uint32_t>(std::size_t(c.m), 0u);
  if (which == calls::forward) return out;
  if (!caps.backward()) {
    // a forward-only kernel: zeros, so that comparisons of two runs hold; the properties about
    // the backward itself are not run on it (property::needs)
    out.dx.assign(std::size_t(c.m * c.n), 0u);
    out.dgamma.assign(std::size_t(c.n), 0u);
    return out;
  }

  // the backward reads the r the forward wrote, and leaves it and y as they are
  a.r.freeze();
  a.y.freeze();
  a.dx.reopen();
  a.dgamma.reopen();
  nc_backward_args b = a.backward_args();
  std::size_t workspace_bytes = 0;
  declared_call(k, c, "workspace query", [&] { workspace_bytes = k.workspace_size(b); });
  out.workspace_bytes = workspace_bytes;
  guarded_scratch workspace(k, workspace_bytes);
  b.workspace = workspace.data();
  b.workspace_bytes = workspace_bytes;
  out.backward_path = k.backward_path(b);
  declared_call(k, c, "backward", [&] {
    k.backward(b);
    k.synchronize();
  });
  if (auto problem = a.check("backward")) throw property_failure(*problem);
  if (auto problem = workspace.check(false)) throw property_failure("after the backward: " + *problem);
  out.dx = a.dx.elements();
  out.dgamma = a.dgamma.elements();
  return out;
}

}  // namespace nc::harness
