#include "normcheck/harness/execute.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "normcheck/harness/failure.hpp"
#include "normcheck/harness/late_inputs.hpp"
#include "normcheck/harness/worker.hpp"

namespace nc::harness {

std::vector<unsigned char> typed(nc_dtype type, const std::vector<std::uint32_t>& bits) {
  const std::size_t size = size_of(type);
  std::vector<unsigned char> bytes(bits.size() * size);
  for (std::size_t k = 0; k < bits.size(); ++k) std::memcpy(&bytes[k * size], &bits[k], size);
  return bytes;
}

namespace {

operand operand_of(const char* name, nc_dtype type, const matrix_layout& l) {
  operand o;
  o.name = name, o.matrix = true, o.dtype = type;
  o.offset = l.offset, o.row_stride = l.row_stride, o.col_stride = l.col_stride, o.head_stride = l.head_stride;
  o.batch_stride = l.batch_stride;
  return o;
}

operand operand_of(const char* name, nc_dtype type, const vector_layout& l) {
  operand o;
  o.name = name, o.dtype = type;
  o.offset = l.offset, o.col_stride = l.stride;
  return o;
}

}  // namespace

case_arena::case_arena(const kernel& k, const norm_case& c, const call_setting& setting) : memory(k) {
  forward.m = c.m, forward.n = c.n, forward.epsilon = c.epsilon;
  forward.guard = setting.guard, forward.sparse = setting.sparse;
  forward.op = c.op;
  forward.heads = heads_of(c), forward.tokens = rows_of(c).tokens;
  forward.base_align = 256;
  const operand_layouts& l = c.layout;
  forward.ops = {operand_of("x", c.x_dtype, l.x),
                 operand_of("gamma", c.gamma_dtype, l.gamma),
                 operand_of("dy", c.x_dtype, l.dy),
                 operand_of("y", y_dtype(c), l.y),
                 operand_of("r", NC_F32, l.r),
                 operand_of("dx", c.x_dtype, l.dx),
                 operand_of("dgamma", c.gamma_dtype, l.dgamma),
                 operand_of("residual", c.x_dtype, l.residual),
                 operand_of("residual_out", c.x_dtype, c.op.in_place ? l.residual : l.residual_out),
                 operand_of("residual_grad", c.x_dtype, l.residual_grad),
                 operand_of("scale", NC_F32, l.scale)};
  // in place: residual_out is the residual operand itself (abi.h "Variants")
  if (c.op.in_place) forward.ops[op_residual_out].alias_target = op_residual;
  memory.place_operands(forward);
  for (int k = 0; k < all_operands; ++k)
    if (const operand& o = forward.ops[std::size_t(k)]; forward.present(k) && !o.fits)
      throw std::invalid_argument(std::string("the case's layout of ") + o.name +
                                  " reaches before its data pointer: a harness defect if a generator drew it");
  backward = forward;
  backward.backward = true;
  forward.writes_r = k.capabilities().writes_r();
  if (!forward.writes_r) forward.ops[op_r].null = true;  // abi.h NC_NO_R: r.data = NULL
  for (std::int64_t i = 0; i < c.m; ++i)
    for (std::int64_t j = 0; j < c.n; ++j) {
      memory.set(forward, op_x, i, j, c.x[std::size_t(i * c.n + j)]);
      memory.set(forward, op_dy, i, j, c.dy[std::size_t(i * c.n + j)]);
    }
  for (std::int64_t j = 0; j < c.n; ++j) memory.set(forward, op_gamma, 0, j, c.gamma[std::size_t(j)]);
  for (int k : {op_y, op_r, op_dx, op_dgamma}) memory.fill(backward, k, poison_nan(backward.ops[std::size_t(k)].dtype));
  if (quantizes(c.op)) {
    if (c.op.scale == NC_SCALE_STATIC) memory.set(forward, op_scale, 0, 0, c.scale);
    else memory.fill(forward, op_scale, poison_nan(NC_F32));
    // e4m3's poison is its negative NaN, a code a kernel may write: execute() calls again
    forward.ops[op_y].poison_writable = y_dtype(c) == NC_FP8_E4M3;
  }
  if (!adds_residual(c.op)) return;
  for (std::int64_t i = 0; i < c.m; ++i)
    for (std::int64_t j = 0; j < c.n; ++j) {
      memory.set(forward, op_residual, i, j, c.residual[std::size_t(i * c.n + j)]);
      memory.set(forward, op_residual_grad, i, j, c.residual_grad[std::size_t(i * c.n + j)]);
    }
  if (!c.op.in_place) memory.fill(forward, op_residual_out, poison_nan(c.x_dtype));
}

std::size_t case_arena::place_workspace(const kernel& k, std::size_t block) {
  // what the call asks, or the block where that is more
  const auto given = [&](std::size_t needed) {
    backward.workspace_needed = needed;
    backward.workspace = block > needed ? workspace_mode::larger : workspace_mode::exact;
    backward.workspace_param = block > needed ? block - needed : 0;
  };
  given(k.workspace_size(backward_args(backward, memory)));
  // the arena grows past the operands for the workspace, so every pointer changes: asked again
  for (int round = 0; memory.place_workspace(backward); ++round) {
    const std::size_t again = k.workspace_size(backward_args(backward, memory));
    if (again == backward.workspace_needed) break;
    if (round == 2)
      throw property_failure("workspace_size changed when only the pointers' values changed: " +
                             std::to_string(backward.workspace_needed) + " bytes, then " + std::to_string(again));
    given(again);
  }
  return backward.workspace_needed;
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

// what the plugin did, as it did it: a rejection is its contract_error, a failure its kernel_error
void rethrow(const call_result& got) {
  if (got.result == call_result::rejected) throw contract_error(got.message);
  if (got.result == call_result::failed) throw kernel_error(got.status, got.message);
}

// e4m3 codes still holding the poison (0xff, the negative NaN) after the forward were either
// written so or never written: the same call on a fill of 0x7f (the positive NaN) tells them apart
void check_codes_written(const kernel& k, const norm_case& c, case_arena& a, const std::vector<std::uint32_t>& y) {
  const std::uint32_t poison = poison_nan(NC_FP8_E4M3);
  if (std::find(y.begin(), y.end(), poison) == y.end()) return;
  constexpr std::uint32_t other = 0x7fu;
  a.memory.fill(a.forward, op_y, other);
  if (adds_residual(c.op) && c.op.in_place)  // the residual again as the first call read it
    for (std::int64_t i = 0; i < c.m; ++i)
      for (std::int64_t j = 0; j < c.n; ++j)
        a.memory.set(a.forward, op_residual, i, j, c.residual[std::size_t(i * c.n + j)]);
  declared_call(k, c, "forward", [&] { rethrow(run_call(k, a.forward, a.memory)); });
  const std::vector<std::uint32_t> again = a.memory.elements(a.forward, op_y);
  std::int64_t unwritten = 0, first = -1;
  for (std::size_t e = 0; e < y.size(); ++e)
    if (y[e] == poison && again[e] == other && unwritten++ == 0) first = std::int64_t(e);
  if (unwritten > 0)
    throw property_failure("after the forward: never wrote " + std::to_string(unwritten) +
                           " element(s) of output y; the first is (" + std::to_string(first / c.n) + ", " +
                           std::to_string(first % c.n) + "), still the fill after two calls (0xff, then 0x7f)");
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
  if (!caps.takes_n(c.n)) add("N = " + std::to_string(c.n) + ", not a multiple of " + std::to_string(caps.n_multiple));
  if (!caps.serves(c.op)) add("operation " + describe_operation(c.op));
  if (caps.max_n > 0 && c.n > caps.max_n) add("N = " + std::to_string(c.n));
  if (caps.max_elements > 0 && c.m * c.n > caps.max_elements) add("M*N = " + std::to_string(c.m * c.n));
  return why;
}

outputs execute(const kernel& k, const norm_case& c, calls which) { return execute(k, c, which, call_setting{}); }

outputs execute(const kernel& k, const norm_case& c, calls which, const call_setting& setting) {
  const workspace_reuse& reuse = setting.workspace;
  const capabilities& caps = k.capabilities();
  // the generators draw inside the declaration: a case outside it is normcheck's own bug (or a
  // case file replayed on another kernel), never the kernel's
  if (const std::string why = outside_capabilities(caps, c); !why.empty())
    throw std::invalid_argument("the case lies outside the capabilities the kernel declares (" + caps.describe() +
                                "): " + why + "; a harness defect if a generator drew it");
  case_arena a(k, c, setting);
  if (setting.late_inputs)
    for (call_spec* call : {&a.forward, &a.backward}) call->late_inputs = true, call->stream = late_inputs::stream();
  outputs out;
  out.forward_path = k.forward_path(forward_args(a.forward, a.memory));
  // the backward's outputs come out of the forward untouched, and so does r where the kernel
  // writes none: the arena's check holds every byte the call does not write
  declared_call(k, c, "forward", [&] { rethrow(run_call(k, a.forward, a.memory)); });
  if (auto problem = a.memory.check(a.forward, true)) throw property_failure("after the forward: " + *problem);
  out.y = a.memory.elements(a.forward, op_y);
  if (a.forward.ops[op_y].poison_writable) check_codes_written(k, c, a, out.y);
  if (dynamic_scale(c.op)) out.scale = a.memory.elements(a.forward, op_scale);
  // no r: zeros, so that comparisons of two runs' r hold and the differential skips it
  out.r = caps.writes_r() ? a.memory.elements(a.forward, op_r) : std::vector<std::uint32_t>(std::size_t(c.m), 0u);
  if (adds_residual(c.op)) out.residual_out = a.memory.elements(a.forward, op_residual_out);
  if (which == calls::forward) return out;
  if (!caps.backward()) {
    // a forward-only kernel: zeros, so that comparisons of two runs hold; the properties about
    // the backward itself are not run on it (property::needs)
    out.dx.assign(std::size_t(c.m * c.n), 0u);
    out.dgamma.assign(std::size_t(c.n), 0u);
    return out;
  }

  // the backward of a residual add differentiates at the h its forward stored: x is residual_out
  // (the fp32 sum of NC_RESIDUAL_FP32 is stored nowhere, so its backward is not judged: abi.h)
  if (adds_residual(c.op)) {
    if (c.op.residual != NC_RESIDUAL_ROUNDED)
      throw std::invalid_argument("the backward of " + describe_operation(c.op) +
                                  " is not judged (abi.h: the fp32 sum is stored nowhere); a harness defect if a "
                                  "generator drew it");
    for (std::int64_t i = 0; i < c.m; ++i)
      for (std::int64_t j = 0; j < c.n; ++j)
        a.memory.set(a.backward, op_x, i, j, out.residual_out[std::size_t(i * c.n + j)]);
  }
  // the backward reads the r the forward wrote, and leaves it and y as they are
  declared_call(k, c, "workspace query", [&] {
    out.workspace_bytes = a.place_workspace(k, reuse.whole_block ? reuse.left.size() : 0);
  });
  // a reused block: the workspace starts with what the earlier call left (past it, where this
  // call was given more, the background)
  const bool placed = !a.backward.workspace_null && a.backward.workspace_fits;
  if (placed && !reuse.left.empty())
    std::memcpy(a.memory.host(a.backward.workspace_base), reuse.left.data(),
                std::min(reuse.left.size(), a.backward.workspace_bytes));
  out.backward_path = k.backward_path(backward_args(a.backward, a.memory));
  declared_call(k, c, "backward", [&] { rethrow(run_call(k, a.backward, a.memory)); });
  if (auto problem = a.memory.check(a.backward, true)) throw property_failure("after the backward: " + *problem);
  out.dx = a.memory.elements(a.backward, op_dx);
  out.dgamma = a.memory.elements(a.backward, op_dgamma);
  if (reuse.keep && placed) {
    const std::uint8_t* first = a.memory.host(a.backward.workspace_base);
    out.workspace_left.assign(first, first + a.backward.workspace_bytes);
  }
  return out;
}

}  // namespace nc::harness
