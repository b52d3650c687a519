// The contract property: a valid call with one argument broken by one rule of the kernel
// contract (abi.h, DESIGN.md "Kernel contract") must be rejected with a contract_error whose
// message names that argument, and must write nothing — no output element, gap or guard band,
// no byte of the workspace.
#include <cfloat>
#include <cmath>
#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <tuple>

#include "normcheck/contract_rules.hpp"
#include "normcheck/harness/execute.hpp"
#include "normcheck/harness/failure.hpp"
#include "normcheck/harness/generators.hpp"
#include "normcheck/harness/judge.hpp"
#include "normcheck/harness/property.hpp"
#include "verdicts.hpp"

namespace nc::harness {
namespace {

// the arguments of both calls over one case's arena, and the workspace
struct call {
  nc_forward_args f;
  nc_backward_args b;
  std::size_t workspace_needed;
};

// the operation a rule needs the valid call to have (abi.h "Variants"): any the kernel declares;
// one other than the plain one is declared (a plugin that declares only the plain operation is
// never sent an operation); a residual add; one into a separate output; one in place
enum class needs_op : std::uint8_t { any, variants, residual, separate, in_place, quantized, dynamic_scale, per_group };

struct rule {
  std::string name;     // a sentence: what is broken
  bool backward;        // the call it breaks
  std::string rule_id;  // the rule of the catalog it breaks (normcheck/contract_rules.hpp)
  std::function<void(call&, const norm_case&)> apply;
  // the case must be this big for the rule to be breakable (a row stride needs two rows, of a
  // per-head view two tokens; overlapping rows two columns as well); a workspace rule needs a
  // call that needs a workspace
  std::int64_t min_rows = 1, min_n = 1;
  // a rule abi.h asks of the caller for the kernel's sake (the workspace's alignment): a kernel
  // that needs less may serve the call instead, and then must give the bits of a call that
  // keeps the rule, touching nothing outside what it was given
  bool may_serve = false;
  needs_op op = needs_op::any;
  // per-head rows (abi.h NC_ROWS_HEADS): the valid call has them, with this many heads or more,
  // and a 4-D view of this many batches or more
  std::int64_t min_heads = 0, min_batches = 0;
  // a quantized output's scale operand has this many columns or more (per-group: two groups)
  std::int64_t min_scale_cols = 0;
  // the rule's exact boundary. `boundary` breaks it at the first broken value beside the last
  // valid one (an offset of -1, rows one element too close, a workspace 1 to 15 bytes off 16,
  // the negative float nearest 0, the code past an enum's last), where `apply` breaks it further
  // in; the case's "boundary draw" picks among such values. at_boundary: `apply` is that value
  // already (a stride of 0, a workspace one byte short)
  std::function<void(call&, const norm_case&, std::uint64_t)> boundary = {};
  bool at_boundary = false;
  // the valid call beside the boundary: the case changed by the least step that keeps the rule
  // (the offset 0, rows exactly far enough apart, M = 0, epsilon -0), which the kernel must
  // accept and compute right; false where the case cannot take it (a layout or an epsilon the
  // kernel does not declare, a per-head view)
  std::function<bool(norm_case&, const capabilities&, std::uint64_t)> valid_beside = {};
  // the argument the message must name: the catalog's for the rule
  std::string argument() const { return std::string(find_contract_rule(rule_id)->argument); }
  bool workspace() const { return rule_id.rfind("workspace", 0) == 0; }
  bool has_boundary() const { return at_boundary || bool(boundary); }
};

// the case's layout of an operand, by its name
matrix_layout& layout_of(norm_case& c, const std::string& name) {
  operand_layouts& l = c.layout;
  if (name == "x") return l.x;
  if (name == "y") return l.y;
  if (name == "dy") return l.dy;
  if (name == "dx") return l.dx;
  if (name == "residual") return l.residual;
  if (name == "residual_out") return l.residual_out;
  if (name == "residual_grad") return l.residual_grad;
  throw std::invalid_argument("no matrix operand '" + name + "' in a case's layouts");
}
vector_layout& vector_layout_of(norm_case& c, const std::string& name) {
  if (name == "gamma") return c.layout.gamma;
  if (name == "r") return c.layout.r;
  if (name == "dgamma") return c.layout.dgamma;
  throw std::invalid_argument("no vector operand '" + name + "' in a case's layouts");
}

// whether a case's layouts are ones the kernel declares
bool served_layouts(const norm_case& c, const capabilities& caps) {
  return caps.serves_layouts(layout_bits(c, caps.writes_r()));
}

// the negative float nearest 0: the first broken epsilon (or scale floor) below 0 and -0; the
// negative normal nearest 0 for a kernel that declares it flushes subnormals (its -denorm_min
// is -0, which keeps the rule)
float least_negative() {
  return drawing_domain().flushes_subnormals() ? -std::numeric_limits<float>::min()
                                               : -std::numeric_limits<float>::denorm_min();
}

nc_dtype other_dtype(nc_dtype t) { return t == NC_F32 ? NC_F16 : NC_F32; }
nc_dtype wrong_gamma(nc_dtype x) { return x == NC_F32 ? NC_F16 : x == NC_F16 ? NC_BF16 : NC_F16; }

// a layout whose last element lies past 2^63 elements
void overflow_layout(nc_matrix& a, const norm_case& c) {
  if (tokens_of(c) >= 2) a.row_stride = std::int64_t(1) << 62;  // two rows (of a per-head view: tokens of a batch)
  else if (c.n >= 2) a.col_stride = std::int64_t(1) << 62;
  else a.offset = std::int64_t(1) << 62;
}
void overflow_layout(nc_vector& v, std::int64_t count) {
  if (count >= 2) v.stride = std::int64_t(1) << 62;
  else v.offset = std::int64_t(1) << 62;
}

// moves operand `out` onto `other`'s memory so that its first element covers other's first byte
template <class A, class B>
void overlap(A& out, const B& other) {
  const std::int64_t first_byte = other.offset * std::int64_t(size_of(other.dtype));
  out.data = other.data;
  out.offset = first_byte / std::int64_t(size_of(out.dtype));
}

// the workspace over an operand's first element (misaligned or overlapping: both rejected)
template <class B>
void workspace_over(call& k, const B& other) {
  k.b.workspace = static_cast<char*>(other.data) + other.offset * std::int64_t(size_of(other.dtype));
}

// a workspace this many bytes past a 16-byte boundary (fp32-aligned: a kernel that needs only
// that may serve the call)
constexpr std::size_t misaligned_by = 8;

using matrix_of = nc_matrix& (*)(call&);
using vector_of = nc_vector& (*)(call&);

// the layout rules of abi.h every matrix operand has, broken on one of a call (on a call with
// the operation `op` needs: a residual add's operands)
void matrix_rules(std::vector<rule>& out, bool backward, const char* name, matrix_of at, needs_op op = needs_op::any) {
  const std::string who = std::string(backward ? "backward: " : "") + name, id = name;
  const std::size_t first = out.size();
  out.push_back({who + " is null", backward, id + ".null", [at](call& k, const norm_case&) { at(k).data = nullptr; }});
  out.push_back({who + " has a negative offset", backward, id + ".offset", [at](call& k, const norm_case&) { at(k).offset = -1; }});
  // -1 is the boundary; beside it the offset 0
  out.back().at_boundary = true;
  out.back().valid_beside = [id](norm_case& c, const capabilities& caps, std::uint64_t) {
    layout_of(c, id).offset = 0;
    return served_layouts(c, caps);
  };
  out.push_back({who + " has a zero column stride", backward, id + ".col_stride",
                 [at](call& k, const norm_case&) { at(k).col_stride = 0; }});
  out.back().at_boundary = true;
  out.push_back({who + " has a zero row stride", backward, id + ".row_stride",
                 [at](call& k, const norm_case&) { at(k).row_stride = 0; }, 2});
  out.back().at_boundary = true;
  // rows one element shorter apart than they are long (neither rows nor columns side by side)
  out.push_back({who + " rows overlap", backward, id + ".distinct",
                 [at](call& k, const norm_case& c) { at(k).row_stride = c.n - 1, at(k).col_stride = 1; }, 2, 2});
  // the boundary at a column stride of 1 to 3: row i's last element is row i + 1's first.
  // Beside it, on a 2-D case, rows exactly far enough apart: (n - 1) * col_stride + 1
  out.back().at_boundary = true;
  out.back().boundary = [at](call& k, const norm_case& c, std::uint64_t draw) {
    const std::int64_t col = 1 + std::int64_t(draw % 3);
    at(k).row_stride = (c.n - 1) * col, at(k).col_stride = col;
  };
  out.back().valid_beside = [id](norm_case& c, const capabilities& caps, std::uint64_t draw) {
    if (heads_of(c) > 1 || rows_of(c).tokens > 0) return false;
    const std::int64_t col = 1 + std::int64_t(draw % 3);
    matrix_layout& l = layout_of(c, id);
    l.row_stride = (c.n - 1) * col + 1, l.col_stride = col;
    return served_layouts(c, caps);
  };
  out.push_back({who + "'s layout overflows 64-bit indexing", backward, id + ".overflow",
                 [at](call& k, const norm_case& c) { overflow_layout(at(k), c); }});
  for (std::size_t i = first; i < out.size(); ++i) out[i].op = op;
}

// the version-3 rules (abi.h "Variants"): the operation's fields, a residual add's operands
void operation_rules(std::vector<rule>& out) {
  using o = needs_op;
  const auto on = [](rule r, needs_op op) {
    r.op = op;
    return r;
  };
  for (const bool backward : {false, true}) {
    const std::string who = backward ? "backward: " : "";
    const auto op_of = [backward](call& k) -> nc_operation& { return backward ? k.b.op : k.f.op; };
    out.push_back(on({who + "op.residual is no nc_residual", backward, "op.residual",
                      [op_of](call& k, const norm_case&) { op_of(k).residual = nc_residual(7); }},
                     o::variants));
    out.push_back(on({who + "op.in_place is 2", backward, "op.in_place",
                      [op_of](call& k, const norm_case&) { op_of(k).in_place = 2; }},
                     o::variants));
    out.push_back(on({who + "op.weight_offset is NaN", backward, "op.weight_offset",
                      [op_of](call& k, const norm_case&) { op_of(k).weight_offset = NAN; }},
                     o::variants));
    out.push_back(on({who + "op.weight_offset is infinite", backward, "op.weight_offset",
                      [op_of](call& k, const norm_case&) { op_of(k).weight_offset = -INFINITY; }},
                     o::variants));
  }
  // in place without a residual add: the plain operation's call, flagged in place
  out.push_back(on({"op.in_place without a residual add", false, "op.in_place",
                    [](call& k, const norm_case&) {
                      k.f.op.residual = NC_RESIDUAL_NONE;
                      k.f.op.in_place = 1;
                    }},
                   o::in_place));
  out.push_back(on({"residual is not in x's dtype", false, "residual.dtype",
                    [](call& k, const norm_case&) { k.f.residual.dtype = other_dtype(k.f.x.dtype); }},
                   o::separate));
  out.push_back(on({"residual_out is not in x's dtype", false, "residual_out.dtype",
                    [](call& k, const norm_case&) { k.f.residual_out.dtype = other_dtype(k.f.x.dtype); }},
                   o::separate));
  out.push_back(on({"residual_grad is not in x's dtype", true, "residual_grad.dtype",
                    [](call& k, const norm_case&) { k.b.residual_grad.dtype = other_dtype(k.b.x.dtype); }},
                   o::residual));
  matrix_rules(out, false, "residual", [](call& k) -> nc_matrix& { return k.f.residual; }, o::separate);
  matrix_rules(out, false, "residual_out", [](call& k) -> nc_matrix& { return k.f.residual_out; }, o::separate);
  matrix_rules(out, true, "residual_grad", [](call& k) -> nc_matrix& { return k.b.residual_grad; }, o::residual);
  out.push_back(on({"residual_out overlaps x", false, "residual_out.overlap",
                    [](call& k, const norm_case&) { overlap(k.f.residual_out, k.f.x); }},
                   o::separate));
  // the same memory as the residual without op.in_place: in place only where the call says so
  out.push_back(on({"residual_out is the residual without op.in_place", false, "residual_out.overlap",
                    [](call& k, const norm_case&) { k.f.residual_out = k.f.residual; }},
                   o::separate));
  out.push_back(on({"in place, residual_out is not the residual operand", false, "residual_out.in_place",
                    [](call& k, const norm_case&) { k.f.residual_out.offset += 1; }},
                   o::in_place));
  out.push_back(on({"in place, the residual (an output) overlaps gamma", false, "residual.overlap",
                    [](call& k, const norm_case&) {
                      overlap(k.f.residual, k.f.gamma);
                      k.f.residual_out = k.f.residual;
                    }},
                   o::in_place));
  out.push_back(on({"dx overlaps residual_grad", true, "dx.overlap",
                    [](call& k, const norm_case&) { overlap(k.b.dx, k.b.residual_grad); }},
                   o::residual));
}

// a quantized output (abi.h "Variants"): the operation's quantization fields and the scale operand
void quantization_rules(std::vector<rule>& out) {
  using o = needs_op;
  const auto on = [](rule r, needs_op op) {
    r.op = op;
    return r;
  };
  const auto scale = [](call& k) -> nc_matrix& { return k.f.scale; };
  out.push_back(on({"op.quant is no nc_quant", false, "op.quant",
                    [](call& k, const norm_case&) { k.f.op.quant = nc_quant(9); }}, o::variants));
  // the valid backward of a plain operation, asked to quantize: a backward has no codes
  out.push_back(on({"backward: op.quant asks for codes", true, "op.quant",
                    [](call& k, const norm_case&) { k.b.op.quant = NC_QUANT_FP8_E4M3; }}, o::variants));
  out.push_back(on({"op.scale is no nc_scale", false, "op.scale",
                    [](call& k, const norm_case&) { k.f.op.scale = nc_scale(6); }}, o::quantized));
  out.push_back(on({"op.apply is no nc_scale_apply", false, "op.apply",
                    [](call& k, const norm_case&) { k.f.op.apply = nc_scale_apply(4); }}, o::quantized));
  out.push_back(on({"a quantized output on per-head rows", false, "op.rows",
                    [](call& k, const norm_case&) { k.f.op.rows = NC_ROWS_HEADS, k.f.head.heads = 1; }}, o::quantized));
  out.push_back(on({"op.group is 0", false, "op.group", [](call& k, const norm_case&) { k.f.op.group = 0; }}, o::per_group));
  out.push_back(on({"op.group does not divide n", false, "op.group",
                    [](call& k, const norm_case& c) { k.f.op.group = std::int32_t(c.n + 1); }}, o::per_group));
  out.push_back(on({"op.scale_floor is NaN", false, "op.scale_floor",
                    [](call& k, const norm_case&) { k.f.op.scale_floor = NAN; }}, o::dynamic_scale));
  out.push_back(on({"op.scale_floor is negative", false, "op.scale_floor",
                    [](call& k, const norm_case&) { k.f.op.scale_floor = -1e-6f; }}, o::dynamic_scale));
  out.push_back(on({"scale is not fp32", false, "scale.dtype", [](call& k, const norm_case&) { k.f.scale.dtype = NC_F16; }},
                   o::quantized));
  out.push_back(on({"scale is null", false, "scale.null", [scale](call& k, const norm_case&) { scale(k).data = nullptr; }},
                   o::quantized));
  out.push_back(on({"scale has a negative offset", false, "scale.offset",
                    [scale](call& k, const norm_case&) { scale(k).offset = -1; }}, o::quantized));
  out.push_back(on({"scale has a zero column stride", false, "scale.col_stride",
                    [scale](call& k, const norm_case&) { scale(k).col_stride = 0; }}, o::quantized));
  out.push_back(on({"scale's layout overflows 64-bit indexing", false, "scale.overflow",
                    [scale](call& k, const norm_case&) { scale(k).offset = std::int64_t(1) << 62; }}, o::quantized));
  // a dynamic scale: M rows, written
  rule rows = on({"scale has a zero row stride", false, "scale.row_stride",
                  [scale](call& k, const norm_case&) { scale(k).row_stride = 0; }}, o::dynamic_scale);
  rows.min_rows = 2;
  out.push_back(rows);
  rule distinct = on({"scale's rows overlap", false, "scale.distinct",
                      [scale](call& k, const norm_case&) { scale(k).row_stride = 1, scale(k).col_stride = 1; }},
                     o::per_group);
  distinct.min_rows = 2, distinct.min_scale_cols = 2;
  out.push_back(distinct);
  out.push_back(on({"scale overlaps x", false, "scale.overlap", [scale](call& k, const norm_case&) { overlap(scale(k), k.f.x); }},
                   o::dynamic_scale));
}

// per-head rows (abi.h "Variants"): the operation's geometry, the heads, each view's head stride
using head_of = std::int64_t& (*)(call&);
void head_rules(std::vector<rule>& out) {
  const auto on_heads = [](rule r, std::int64_t heads, needs_op op = needs_op::any) {
    r.min_heads = heads, r.op = op;
    return r;
  };
  for (const bool backward : {false, true}) {
    const std::string who = backward ? "backward: " : "";
    const auto op_of = [backward](call& k) -> nc_operation& { return backward ? k.b.op : k.f.op; };
    const auto heads_field = [backward](call& k) -> std::int64_t& { return backward ? k.b.head.heads : k.f.head.heads; };
    out.push_back({who + "op.rows is no nc_rows", backward, "op.rows",
                   [op_of](call& k, const norm_case&) { op_of(k).rows = nc_rows(5); }, 1, 1, false, needs_op::variants});
    out.push_back(on_heads({who + "head.heads is 0", backward, "head.heads",
                            [heads_field](call& k, const norm_case&) { heads_field(k) = 0; }},
                           1));
    out.push_back(on_heads({who + "head.heads does not divide m", backward, "head.heads",
                            [heads_field](call& k, const norm_case& c) { heads_field(k) = c.m + 1; }},
                           1));
  }
  const auto stride = [&](const char* name, bool backward, head_of at, needs_op op = needs_op::any) {
    out.push_back(on_heads({std::string(backward ? "backward: " : "") + name + " has a zero head stride", backward,
                            std::string(name) + ".head_stride", [at](call& k, const norm_case&) { at(k) = 0; }},
                           2, op));
  };
  stride("x", false, [](call& k) -> std::int64_t& { return k.f.head.x; });
  stride("y", false, [](call& k) -> std::int64_t& { return k.f.head.y; });
  stride("x", true, [](call& k) -> std::int64_t& { return k.b.head.x; });
  stride("dy", true, [](call& k) -> std::int64_t& { return k.b.head.dy; });
  stride("dx", true, [](call& k) -> std::int64_t& { return k.b.head.dx; });
  stride("residual", false, [](call& k) -> std::int64_t& { return k.f.head.residual; }, needs_op::residual);
  stride("residual_out", false, [](call& k) -> std::int64_t& { return k.f.head.residual_out; }, needs_op::separate);
  stride("residual_grad", true, [](call& k) -> std::int64_t& { return k.b.head.residual_grad; }, needs_op::residual);
  // two heads of x one element apart: their rows share addresses
  out.push_back(on_heads({"x's heads overlap", false, "x.distinct",
                          [](call& k, const norm_case&) { k.f.head.x = 1, k.f.x.col_stride = 1; }, 1, 2},
                         2));
  // a 4-D view [batches, tokens, heads, N] (head.tokens > 0)
  const auto on_batches = [](rule r, needs_op op = needs_op::any) {
    r.min_heads = 1, r.min_batches = 2, r.op = op;
    return r;
  };
  for (const bool backward : {false, true}) {
    const std::string who = backward ? "backward: " : "";
    const auto tokens = [backward](call& k) -> std::int64_t& { return backward ? k.b.head.tokens : k.f.head.tokens; };
    out.push_back(on_batches({who + "head.tokens is negative", backward, "head.tokens",
                              [tokens](call& k, const norm_case&) { tokens(k) = -1; }}));
    out.push_back(on_batches({who + "heads x tokens do not divide m", backward, "head.tokens",
                              [tokens](call& k, const norm_case& c) { tokens(k) = c.m + 1; }}));
  }
  const auto batch = [&](const char* name, bool backward, head_of at, needs_op op = needs_op::any) {
    out.push_back(on_batches({std::string(backward ? "backward: " : "") + name + " has a zero batch stride", backward,
                              std::string(name) + ".batch_stride", [at](call& k, const norm_case&) { at(k) = 0; }},
                             op));
  };
  batch("x", false, [](call& k) -> std::int64_t& { return k.f.head.batch.x; });
  batch("y", false, [](call& k) -> std::int64_t& { return k.f.head.batch.y; });
  batch("x", true, [](call& k) -> std::int64_t& { return k.b.head.batch.x; });
  batch("dy", true, [](call& k) -> std::int64_t& { return k.b.head.batch.dy; });
  batch("dx", true, [](call& k) -> std::int64_t& { return k.b.head.batch.dx; });
  batch("residual", false, [](call& k) -> std::int64_t& { return k.f.head.batch.residual; }, needs_op::residual);
  batch("residual_out", false, [](call& k) -> std::int64_t& { return k.f.head.batch.residual_out; }, needs_op::separate);
  batch("residual_grad", true, [](call& k) -> std::int64_t& { return k.b.head.batch.residual_grad; }, needs_op::residual);
  // dy's batches one element apart: a batch's first row shares addresses with the next one's
  out.push_back(on_batches({"backward: dy's batches overlap", true, "dy.distinct",
                            [](call& k, const norm_case&) { k.b.head.batch.dy = 1, k.b.dy.col_stride = 1; }, 1, 2}));
}

// the layout rules of a vector operand of `count` entries (gamma: N, r: M)
void vector_rules(std::vector<rule>& out, bool backward, const char* name, vector_of at, bool rows) {
  const std::string who = std::string(backward ? "backward: " : "") + name, id = name;
  const std::int64_t two_rows = rows ? 2 : 1, two_columns = rows ? 1 : 2;
  out.push_back({who + " is null", backward, id + ".null", [at](call& k, const norm_case&) { at(k).data = nullptr; }});
  out.push_back({who + " has a negative offset", backward, id + ".offset", [at](call& k, const norm_case&) { at(k).offset = -2; }});
  out.back().boundary = [at](call& k, const norm_case&, std::uint64_t) { at(k).offset = -1; };
  out.back().valid_beside = [id](norm_case& c, const capabilities& caps, std::uint64_t) {
    vector_layout_of(c, id).offset = 0;
    return served_layouts(c, caps);
  };
  out.push_back({who + " has a zero stride", backward, id + ".stride", [at](call& k, const norm_case&) { at(k).stride = 0; },
                 two_rows, two_columns});
  out.back().at_boundary = true;
  out.push_back({who + "'s layout overflows 64-bit indexing", backward, id + ".overflow",
                 [at, rows](call& k, const norm_case& c) { overflow_layout(at(k), rows ? c.m : c.n); }});
}

// the boundaries of the rules matrix_rules and vector_rules do not build, by breaker
void boundaries(std::vector<rule>& out) {
  const auto named = [&](const std::string& name) -> rule& {
    for (rule& r : out)
      if (r.name == name) return r;
    throw std::logic_error("contract property: no breaker '" + name + "' to give a boundary");
  };
  using value = std::function<void(call&, const norm_case&, std::uint64_t)>;
  const auto at = [&](const std::string& name) { named(name).at_boundary = true; };
  const auto beside = [&](const std::string& name, value v) { named(name).boundary = std::move(v); };
  for (const char* name : {"n is zero", "backward: n is zero", "epsilon is infinite", "the workspace is smaller than the query",
                           "op.in_place is 2", "backward: op.in_place is 2", "op.weight_offset is infinite",
                           "backward: op.weight_offset is infinite", "op.group is 0", "op.group does not divide n",
                           "scale has a negative offset", "scale has a zero column stride", "scale has a zero row stride",
                           "head.heads is 0", "backward: head.heads is 0", "head.heads does not divide m",
                           "backward: head.heads does not divide m", "heads x tokens do not divide m",
                           "backward: heads x tokens do not divide m", "backward: op.quant asks for codes"})
    at(name);
  for (rule& r : out)
    if (r.rule_id.ends_with(".head_stride") || r.rule_id.ends_with(".batch_stride")) r.at_boundary = true;
  // M = 0 beside M = -1: a valid empty call (2-D rows: a per-head view's heads must divide M)
  const auto empty = [](norm_case& c, const capabilities&, std::uint64_t) {
    if (c.op.rows != NC_ROWS_MATRIX) return false;
    c.m = 0;
    c.x.clear(), c.dy.clear(), c.dy2.clear(), c.residual.clear(), c.residual_grad.clear();
    return true;
  };
  beside("n is negative", [](call& k, const norm_case&, std::uint64_t) { k.f.n = -1; });
  beside("m is negative", [](call& k, const norm_case&, std::uint64_t) { k.f.m = -1; });
  named("m is negative").valid_beside = empty;
  at("backward: m is negative");
  named("backward: m is negative").valid_beside = empty;
  // epsilon: the negative float nearest 0 is broken, -0 beside it keeps ">= 0"
  beside("epsilon is negative", [](call& k, const norm_case&, std::uint64_t) { k.f.epsilon = least_negative(); });
  named("epsilon is negative").valid_beside = [](norm_case& c, const capabilities& caps, std::uint64_t) {
    c.epsilon = -0.0f;
    return caps.takes_epsilon(c.epsilon);
  };
  // a per-group scale's rows one scale too close: row i's last scale is row i + 1's first
  beside("scale's rows overlap", [](call& k, const norm_case& c, std::uint64_t) {
    k.f.scale.row_stride = scale_cols(k.f.op, c.n) - 1, k.f.scale.col_stride = 1;
  });
  beside("op.scale_floor is negative", [](call& k, const norm_case&, std::uint64_t) { k.f.op.scale_floor = least_negative(); });
  // the code past an enum's last: NC_FP8_E4M3 is a dtype (a quantized output's codes), no element dtype
  beside("x has an unknown dtype", [](call& k, const norm_case&, std::uint64_t) { k.f.x.dtype = NC_FP8_E4M3; });
  beside("gamma has an unknown dtype", [](call& k, const norm_case&, std::uint64_t) { k.f.gamma.dtype = NC_FP8_E4M3; });
  beside("backward: x has an unknown dtype", [](call& k, const norm_case&, std::uint64_t) { k.b.x.dtype = NC_FP8_E4M3; });
  beside("backward: gamma has an unknown dtype",
         [](call& k, const norm_case&, std::uint64_t) { k.b.gamma.dtype = NC_FP8_E4M3; });
  beside("op.residual is no nc_residual", [](call& k, const norm_case&, std::uint64_t) { k.f.op.residual = nc_residual(3); });
  beside("backward: op.residual is no nc_residual",
         [](call& k, const norm_case&, std::uint64_t) { k.b.op.residual = nc_residual(3); });
  beside("op.rows is no nc_rows", [](call& k, const norm_case&, std::uint64_t) { k.f.op.rows = nc_rows(3); });
  beside("backward: op.rows is no nc_rows", [](call& k, const norm_case&, std::uint64_t) { k.b.op.rows = nc_rows(3); });
  beside("op.quant is no nc_quant", [](call& k, const norm_case&, std::uint64_t) { k.f.op.quant = nc_quant(4); });
  beside("op.scale is no nc_scale", [](call& k, const norm_case&, std::uint64_t) { k.f.op.scale = nc_scale(3); });
  beside("op.apply is no nc_scale_apply", [](call& k, const norm_case&, std::uint64_t) { k.f.op.apply = nc_scale_apply(2); });
  beside("head.tokens is negative", [](call& k, const norm_case&, std::uint64_t) { k.f.head.tokens = 0; });
  beside("backward: head.tokens is negative", [](call& k, const norm_case&, std::uint64_t) { k.b.head.tokens = 0; });
  // a workspace 1 to 15 bytes past a 16-byte boundary
  beside("the workspace is not 16-byte aligned", [](call& k, const norm_case&, std::uint64_t draw) {
    k.b.workspace = static_cast<char*>(k.b.workspace) + 1 + draw % 15;
  });
}

const std::vector<rule>& rules() {
  static const std::vector<rule> list = [] {
    std::vector<rule> out = {
        {"n is zero", false, "n", [](call& k, const norm_case&) { k.f.n = 0; }},
        {"n is negative", false, "n", [](call& k, const norm_case& c) { k.f.n = -c.n; }},
        {"m is negative", false, "m", [](call& k, const norm_case& c) { k.f.m = -1 - c.m; }},
        {"epsilon is negative", false, "epsilon", [](call& k, const norm_case& c) { k.f.epsilon = -(c.epsilon + 1e-6f); }},
        {"epsilon is NaN", false, "epsilon", [](call& k, const norm_case&) { k.f.epsilon = NAN; }},
        {"epsilon is infinite", false, "epsilon", [](call& k, const norm_case&) { k.f.epsilon = INFINITY; }},
        {"x has an unknown dtype", false, "x.dtype", [](call& k, const norm_case&) { k.f.x.dtype = nc_dtype(7); }},
        {"gamma has an unknown dtype", false, "gamma.dtype", [](call& k, const norm_case&) { k.f.gamma.dtype = nc_dtype(5); }},
        {"y is not in x's dtype", false, "y.dtype", [](call& k, const norm_case&) { k.f.y.dtype = other_dtype(k.f.x.dtype); }},
        {"gamma is neither x's dtype nor fp32", false, "gamma.dtype_pair",
         [](call& k, const norm_case&) { k.f.gamma.dtype = wrong_gamma(k.f.x.dtype); }},
        {"r is not fp32", false, "r.dtype", [](call& k, const norm_case&) { k.f.r.dtype = NC_F16; }},
        {"y overlaps x", false, "y.overlap", [](call& k, const norm_case&) { overlap(k.f.y, k.f.x); }},
        {"y overlaps gamma", false, "y.overlap", [](call& k, const norm_case&) { overlap(k.f.y, k.f.gamma); }},
        {"r overlaps x", false, "r.overlap", [](call& k, const norm_case&) { overlap(k.f.r, k.f.x); }},
        {"r overlaps gamma", false, "r.overlap", [](call& k, const norm_case&) { overlap(k.f.r, k.f.gamma); }},
        {"r overlaps y", false, "r.overlap", [](call& k, const norm_case&) { overlap(k.f.r, k.f.y); }},
        {"backward: n is zero", true, "n", [](call& k, const norm_case&) { k.b.n = 0; }},
        {"backward: m is negative", true, "m", [](call& k, const norm_case&) { k.b.m = -1; }},
        {"backward: x has an unknown dtype", true, "x.dtype", [](call& k, const norm_case&) { k.b.x.dtype = nc_dtype(9); }},
        {"backward: gamma has an unknown dtype", true, "gamma.dtype",
         [](call& k, const norm_case&) { k.b.gamma.dtype = nc_dtype(6); }},
        {"dy is not in x's dtype", true, "dy.dtype", [](call& k, const norm_case&) { k.b.dy.dtype = other_dtype(k.b.x.dtype); }},
        {"dx is not in x's dtype", true, "dx.dtype", [](call& k, const norm_case&) { k.b.dx.dtype = other_dtype(k.b.x.dtype); }},
        {"backward: gamma is neither x's dtype nor fp32", true, "gamma.dtype_pair",
         [](call& k, const norm_case&) { k.b.gamma.dtype = k.b.dgamma.dtype = wrong_gamma(k.b.x.dtype); }},
        {"dgamma is not in gamma's dtype", true, "dgamma.dtype",
         [](call& k, const norm_case&) { k.b.dgamma.dtype = k.b.gamma.dtype == NC_F32 ? NC_BF16 : NC_F32; }},
        {"backward: r is not fp32", true, "r.dtype", [](call& k, const norm_case&) { k.b.r.dtype = NC_BF16; }},
        {"dx overlaps x", true, "dx.overlap", [](call& k, const norm_case&) { overlap(k.b.dx, k.b.x); }},
        {"dx overlaps dy", true, "dx.overlap", [](call& k, const norm_case&) { overlap(k.b.dx, k.b.dy); }},
        {"dx overlaps r", true, "dx.overlap", [](call& k, const norm_case&) { overlap(k.b.dx, k.b.r); }},
        {"dgamma overlaps gamma", true, "dgamma.overlap", [](call& k, const norm_case&) { overlap(k.b.dgamma, k.b.gamma); }},
        {"dgamma overlaps dx", true, "dgamma.overlap", [](call& k, const norm_case&) { overlap(k.b.dgamma, k.b.dx); }},
        {"the workspace overlaps dx", true, "workspace.overlap", [](call& k, const norm_case&) { workspace_over(k, k.b.dx); }},
        {"the workspace overlaps x", true, "workspace.overlap", [](call& k, const norm_case&) { workspace_over(k, k.b.x); }},
        {"the workspace is smaller than the query", true, "workspace_bytes",
         [](call& k, const norm_case&) { k.b.workspace_bytes = k.workspace_needed - 1; }},
        {"the workspace is null", true, "workspace.null", [](call& k, const norm_case&) { k.b.workspace = nullptr; }},
        {"the workspace is not 16-byte aligned", true, "workspace.align",
         [](call& k, const norm_case&) { k.b.workspace = static_cast<char*>(k.b.workspace) + misaligned_by; }, 1, 1,
         true},
    };
    matrix_rules(out, false, "x", [](call& k) -> nc_matrix& { return k.f.x; });
    matrix_rules(out, false, "y", [](call& k) -> nc_matrix& { return k.f.y; });
    vector_rules(out, false, "gamma", [](call& k) -> nc_vector& { return k.f.gamma; }, false);
    vector_rules(out, false, "r", [](call& k) -> nc_vector& { return k.f.r; }, true);
    matrix_rules(out, true, "x", [](call& k) -> nc_matrix& { return k.b.x; });
    matrix_rules(out, true, "dy", [](call& k) -> nc_matrix& { return k.b.dy; });
    matrix_rules(out, true, "dx", [](call& k) -> nc_matrix& { return k.b.dx; });
    vector_rules(out, true, "gamma", [](call& k) -> nc_vector& { return k.b.gamma; }, false);
    vector_rules(out, true, "r", [](call& k) -> nc_vector& { return k.b.r; }, true);
    vector_rules(out, true, "dgamma", [](call& k) -> nc_vector& { return k.b.dgamma; }, false);
    operation_rules(out);
    head_rules(out);
    quantization_rules(out);
    boundaries(out);
    return out;
  }();
  return list;
}

// whether a rule can be broken on a kernel drawn inside these capabilities: the backward's
// rules need a backward, r's rules a forward that writes r ("" if it can)
// the declared operations a rule's valid call may have
std::vector<nc_operation> operations_for(const rule& r, const capabilities& caps) {
  std::vector<nc_operation> out;
  for (const nc_operation& op : caps.operations) {
    const bool add = op.residual != NC_RESIDUAL_NONE;
    if (r.backward && quantizes(op)) continue;  // a quantized output has no backward
    const bool fits = r.op == needs_op::any || r.op == needs_op::variants || (r.op == needs_op::residual && add) ||
                      (r.op == needs_op::separate && add && !op.in_place) || (r.op == needs_op::in_place && op.in_place) ||
                      (r.op == needs_op::quantized && quantizes(op)) || (r.op == needs_op::dynamic_scale && dynamic_scale(op)) ||
                      (r.op == needs_op::per_group && quantizes(op) && op.scale == NC_SCALE_PER_GROUP);
    if (fits && (r.min_heads == 0 || op.rows != NC_ROWS_MATRIX) && (r.min_batches == 0 || op.rows == NC_ROWS_BATCHES))
      out.push_back(op);
  }
  return out;
}

std::string rule_needs(const rule& r, const capabilities& caps) {
  if (r.backward && !caps.backward()) return "the kernel declares no backward";
  if (!r.backward && r.argument() == "r" && !caps.writes_r()) return "the kernel writes no r";
  const bool variants = std::any_of(caps.operations.begin(), caps.operations.end(),
                                    [](const nc_operation& op) { return !(op == nc_operation{}); });
  if (r.op != needs_op::any && !variants) return "the kernel declares only the plain operation (it is never sent one)";
  if (operations_for(r, caps).empty()) return "the kernel declares no operation of the kind it breaks";
  return "";
}

// the class of the distribution a case that broke a rule falls in: "backward workspace.null"
constexpr const char* broken_dimension = "rule broken";
constexpr const char* not_applicable_dimension = "rule drawn, not applicable";
std::string broken_class(const rule& r) { return std::string(r.backward ? "backward " : "forward ") + r.rule_id; }

const rule& rule_named(const std::string& name) {
  for (const rule& r : rules())
    if (name == r.name) return r;
  throw std::invalid_argument("no contract rule '" + name + "'");
}

// the rule id a message cites in its "[id] " prefix, if it has one
std::optional<std::string> cited_rule(const std::string& message) {
  const std::size_t close = message.find("] argument '");
  if (close == std::string::npos) return std::nullopt;
  const std::size_t open = message.rfind('[', close);
  if (open == std::string::npos) return std::nullopt;
  return message.substr(open + 1, close - open - 1);
}

bool names(const std::string& message, const std::string& argument) {
  return message.find("'" + argument + "'") != std::string::npos ||
         message.find("'" + argument + ".") != std::string::npos;
}

// where a case breaks its rule: as its breaker does, or at the exact boundary, with the valid
// call beside the boundary after the rejection (where the case takes one)
constexpr const char* side_names[] = {"the breaker", "at the boundary"};
// the distribution's dimensions of the boundaries: where the broken value lay, each rule's cases
// broken at its boundary (as "rule broken" counts them), and the valid calls beside one
constexpr const char* boundary_dimension = "boundary";
constexpr const char* broken_at_boundary_dimension = "rule broken at its boundary";
constexpr const char* valid_beside_dimension = "valid beside";
constexpr const char* kept_beside_dimension = "rule kept beside its boundary";
// what the kernel was given before the broken call: nothing, or the same call unbroken, so that
// a kernel that keeps its verdict on a call's layout (the shipped ones: contract.hpp
// contract_memo) is held to every rule on a layout it has accepted
constexpr const char* before_names[] = {"nothing", "the same call, valid"};
constexpr const char* before_dimension = "before the broken call";

// whether the case can take the valid call beside the rule's boundary (and takes it, in c)
bool valid_beside_applies(const rule& r, norm_case& c, const capabilities& caps, std::uint64_t draw) {
  if (!r.valid_beside) return false;
  // the backward of an fp32-sum residual add is not judged (abi.h: the sum is stored nowhere)
  if (r.backward && c.op.residual == NC_RESIDUAL_FP32) return false;
  return r.valid_beside(c, caps, draw) && outside_capabilities(caps, c).empty();
}

rc::Gen<norm_case> contract_cases() {
  return rc::gen::exec([] {
    // small valid calls with at least one row: every rule applies to them
    static const case_profile small = [] {
      case_profile p = case_profile::differential();
      p.small_elements = 256;
      p.large_percent = p.long_percent = 0;
      p.empty_percent = 0;
      p.min_rows = 1;
      return p;
    }();
    static const case_profile two_rows = [] {
      case_profile p = small;
      p.min_rows = 2;
      return p;
    }();
    // a workspace rule needs a call that needs a workspace: on the shipped kernels, more rows
    // than one launch takes (257 and up), short ones
    static const case_profile tall = [] {
      case_profile p = small;
      p.tiny_percent = 0;
      p.tall_percent = 100;
      p.tall_rows = 257;
      p.tall_elements = 4 * 257 * 8;
      return p;
    }();
    // one of the rules the kernel's calls can break, alike: drawn among those only, so that a
    // shrink stays among them too (gen_weighted_index shrinks toward index 0 whatever its weight)
    std::vector<const rule*> breakable;
    for (const rule& r : rules())
      if (rule_needs(r, drawing_domain()).empty()) breakable.push_back(&r);
    if (breakable.empty()) throw std::invalid_argument("no rule of the contract can be broken on this kernel");
    const rule& r = *breakable[*gen_weighted_index(std::vector<int>(breakable.size(), 1))];
    // two groups of scales a row: rows long enough for two groups of 128
    static const case_profile two_groups = [] {
      case_profile p = two_rows;
      p.small_elements = 1024;
      return p;
    }();
    case_profile profile = r.workspace() ? tall : r.min_scale_cols > 1 ? two_groups : r.min_rows > 1 ? two_rows : small;
    // a valid call of an operation the rule needs (abi.h "Variants"), among those declared,
    // drawn by gen_case (a per-group quantization's N is a multiple of its group)
    const std::vector<nc_operation> ops = operations_for(r, drawing_domain());
    const nc_operation op = ops.empty() ? nc_operation{} : ops[*gen_weighted_index(std::vector<int>(ops.size(), 1))];
    capabilities one_operation = drawing_domain();
    one_operation.operations = {op};
    const scoped_domain drawing(one_operation);
    profile.variants = profile.quantized = true;
    // big enough for the rule: a head stride is read only where there are two heads, a token
    // stride where there are two tokens (a per-head view's rows are tokens × heads)
    norm_case c;
    do {
      c = *gen_case(profile);
    } while (c.n < r.min_n || heads_of(c) < r.min_heads || tokens_of(c) < r.min_rows || batches_of(c) < r.min_batches ||
             (quantizes(op) && scale_cols(op, c.n) < r.min_scale_cols));
    c.parameters["rule"] = r.name;
    // where the rule has a boundary, half its cases break it there and then make the valid call
    // beside it (a breaker at the boundary already: the valid call is what these cases add)
    const std::uint64_t draw = *gen_seed();
    norm_case valid = c;
    const bool beside = valid_beside_applies(r, valid, drawing_domain(), draw);
    const std::size_t side = *gen_weighted_index({1, r.boundary || beside ? 1 : 0});
    c.parameters["side"] = side_names[side];
    if (side > 0) c.parameters["boundary draw"] = std::to_string(draw);
    c.parameters["before"] = before_names[*gen_weighted_index({1, 1})];
    return c;
  });
}

std::uint32_t matrix_bits(const nc_matrix& a, std::int64_t n, row_shape rows, std::int64_t head_stride,
                          std::int64_t batch_stride) {
  if (!valid_dtype(a.dtype)) return 0;
  return layout_bits(matrix_layout{a.offset, a.row_stride, a.col_stride, head_stride, batch_stride}, n, a.dtype, rows);
}
std::uint32_t vector_bits(const nc_vector& v) {
  if (!valid_dtype(v.dtype)) return 0;
  return layout_bits(vector_layout{v.offset, v.stride}, v.dtype);
}

// whether a dtype is x's (or gamma's) in a pair the kernel serves
bool served_dtype(const capabilities& caps, nc_dtype t, bool as_gamma) {
  for (nc_dtype x : all_dtypes)
    for (nc_dtype g : all_dtypes)
      if (caps.serves(x, g) && (as_gamma ? g : x) == t) return true;
  return false;
}

// whether a (broken) call lies outside the kernel's declared capabilities: an operand in a
// dtype or a layout it does not serve, a longer row, an ε it does not take
bool outside(const capabilities& caps, const call& k, bool backward) {
  // a per-head call's views are judged as such (heads 1, tokens 0: 2-D rows)
  struct view {
    const nc_matrix* a;
    std::int64_t head_stride, batch_stride;
  };
  const auto matrices = [&](std::initializer_list<view> list, std::int64_t n, const nc_operation& op,
                            std::int64_t heads, std::int64_t tokens) {
    bool out = false;
    const row_shape rows{op.rows != NC_ROWS_MATRIX && heads > 1 ? heads : 1,
                         op.rows == NC_ROWS_BATCHES && tokens > 0 ? tokens : 0};
    for (const view& v : list)
      out |= !served_dtype(caps, v.a->dtype, false) ||
             !caps.serves_layouts(matrix_bits(*v.a, n, rows, v.head_stride, v.batch_stride));
    return out;
  };
  const auto vectors = [&](std::initializer_list<const nc_vector*> list) {
    bool out = false;
    for (const nc_vector* v : list) out |= !served_dtype(caps, v->dtype, true) || !caps.serves_layouts(vector_bits(*v));
    return out;
  };
  if (backward) {
    const nc_backward_args& b = k.b;
    return !caps.serves(b.op) || !caps.serves(b.x.dtype, b.gamma.dtype) ||
           matrices({{&b.x, b.head.x, b.head.batch.x}, {&b.dy, b.head.dy, b.head.batch.dy}, {&b.dx, b.head.dx, b.head.batch.dx}},
                    b.n, b.op, b.head.heads, b.head.tokens) ||
           vectors({&b.gamma, &b.dgamma}) || !caps.serves_layouts(vector_bits(b.r)) ||
           (caps.max_n > 0 && b.n > caps.max_n);
  }
  const nc_forward_args& f = k.f;
  // a quantized output's codes: served where the operation is (its layout judged as x's dtype's)
  nc_matrix y = f.y;
  if (quantizes(f.op) && y.dtype == code_dtype_of(f.op.quant, f.x.dtype)) y.dtype = f.x.dtype;
  return !caps.serves(f.op) || !caps.serves(f.x.dtype, f.gamma.dtype) ||
         matrices({{&f.x, f.head.x, f.head.batch.x}, {&y, f.head.y, f.head.batch.y}}, f.n, f.op, f.head.heads,
                  f.head.tokens) ||
         vectors({&f.gamma}) ||
         (caps.writes_r() && !caps.serves_layouts(vector_bits(f.r))) || !caps.takes_epsilon(f.epsilon) ||
         (caps.max_n > 0 && f.n > caps.max_n);
}

// a backward the kernel served with a workspace that breaks a rule it may serve (may_serve):
// it wrote only dx, dgamma and the workspace it was given, and the same call with the
// workspace kept to the rule gives the same dx and dgamma bits
void check_served(const kernel& k, case_arena& a, call& args, const std::string& claim) {
  const std::string what = claim + " the bits of the call that keeps the rule and write only what it was given";
  call_spec served = a.backward;
  served.workspace_base +=
      static_cast<const char*>(args.b.workspace) - static_cast<const char*>(a.memory.device(a.backward.workspace_base));
  if (auto problem = a.memory.check(served, true)) throw property_failure(what + ": " + *problem);
  const std::vector<std::uint32_t> dx = a.memory.elements(a.backward, op_dx),
                                   dgamma = a.memory.elements(a.backward, op_dgamma);
  // the call kept to the rule, on outputs poisoned again
  for (int o : {op_dx, op_dgamma}) a.memory.fill(a.backward, o, poison_nan(a.backward.ops[std::size_t(o)].dtype));
  args.b.workspace = a.memory.device(a.backward.workspace_base);
  a.memory.upload();
  k.backward(args.b);
  k.synchronize();
  a.memory.download();
  if (auto problem = a.memory.check(a.backward, true)) throw property_failure(what + ": " + *problem);
  if (dx != a.memory.elements(a.backward, op_dx)) throw property_failure(what + ": dx differs between the two calls");
  if (dgamma != a.memory.elements(a.backward, op_dgamma))
    throw property_failure(what + ": dgamma differs between the two calls");
}

// the valid call beside a rule's boundary (valid_beside_applies made it): accepted, and its
// outputs those of the exact oracle
void check_valid_beside(const kernel& k, const norm_case& valid, const rule& r, observation& o) {
  o.tag(valid_beside_dimension, "accepted and judged");
  o.tag(kept_beside_dimension, broken_class(r));
  const std::string claim = "the valid call beside the boundary of '" + r.name + "' (" + describe(valid) +
                            ") must be accepted and match the exact oracle";
  const capabilities& caps = k.capabilities();
  outputs out;
  try {
    out = execute(k, valid, r.backward ? calls::forward_and_backward : calls::forward);
  } catch (const contract_error& e) {
    throw property_failure(claim + ": it was rejected: " + e.what());
  } catch (const property_failure& e) {
    throw property_failure(claim + ": " + e.summary(), e.first());
  }
  verdicts v;
  judge_forward(v, valid, caps, out);
  if (r.backward) judge_backward(v, valid, caps, out);
  v.finish(o, claim);
}

void check_contract(const kernel& k, const norm_case& c, observation& o) {
  const auto named = c.parameters.find("rule");
  if (named == c.parameters.end()) throw std::invalid_argument("the case has no parameter 'rule'");
  const rule& broken = rule_named(named->second);
  o.tag("rule", broken.name);
  o.tag("dtype", dtype_class(c));
  o.tag("call", broken.backward ? "backward" : "forward");

  const capabilities& caps = k.capabilities();
  if (const std::string why = rule_needs(broken, caps); !why.empty())
    throw std::invalid_argument("the rule '" + broken.name + "' does not apply to this kernel: " + why);
  const auto side_named = c.parameters.find("side");
  const std::string side = side_named == c.parameters.end() ? side_names[0] : side_named->second;
  const auto side_at = std::find(std::begin(side_names), std::end(side_names), side);
  if (side_at == std::end(side_names))
    throw std::invalid_argument("the case's side is '" + side + "': must be '" + side_names[0] + "' or '" +
                                side_names[1] + "'");
  std::uint64_t draw = 0;
  if (side_at != std::begin(side_names)) {
    const auto drawn = c.parameters.find("boundary draw");
    if (drawn == c.parameters.end()) throw std::invalid_argument("the case has no parameter 'boundary draw'");
    draw = std::stoull(drawn->second);
  }
  const bool at_boundary = side == side_names[1];
  if (at_boundary && !broken.has_boundary())
    throw std::invalid_argument("the rule '" + broken.name + "' has no boundary");
  const auto before_named = c.parameters.find("before");
  const std::string before = before_named == c.parameters.end() ? before_names[0] : before_named->second;
  if (before != before_names[0] && before != before_names[1])
    throw std::invalid_argument("the case's 'before' is '" + before + "': must be '" + before_names[0] + "' or '" +
                                before_names[1] + "'");
  case_arena a(k, c);
  call args{{}, {}, 0};
  if (caps.backward()) {
    try {
      args.workspace_needed = a.place_workspace(k);
    } catch (const kernel_error& e) {
      if (e.status != NC_ERR_UNSUPPORTED) throw;
      throw property_failure("the kernel answered NC_ERR_UNSUPPORTED to the workspace query for " +
                             declared_context(k, c) + ": " + e.what());
    }
  }
  // the workspace lies after the operands, in the 64-byte gap before the guard band there is
  // room for a misaligned one. Both calls' pointers are taken once it is placed: placing it
  // grows the arena, which moves every operand (pointers taken before would dangle)
  args.f = forward_args(a.forward, a.memory);  // r.data is NULL where the kernel writes no r
  args.b = backward_args(a.backward, a.memory);
  // a plugin that needs no workspace has no workspace rules to break: the rule was drawn (its
  // share holds) and the case says why it checked nothing
  if (broken.workspace() && args.workspace_needed == 0) {
    o.tag(not_applicable_dimension, broken_class(broken));
    return;
  }
  if (tokens_of(c) < broken.min_rows || c.n < broken.min_n)
    throw std::invalid_argument("the rule '" + broken.name + "' needs a case of at least " +
                                std::to_string(broken.min_rows) + " rows and " + std::to_string(broken.min_n) +
                                " columns: the case has " + std::to_string(c.m) + "x" + std::to_string(c.n));
  // r from a valid forward, so that a served backward's dx means something
  if (broken.may_serve) {
    a.memory.upload();
    k.forward(args.f);
    k.synchronize();
    a.memory.download();
  }
  o.tag(before_dimension, before);
  if (before == before_names[1]) {
    a.memory.upload();
    try {
      if (broken.backward) k.backward(args.b);
      else k.forward(args.f);
      k.synchronize();
    } catch (const std::exception& e) {
      throw property_failure("the valid call made before breaking '" + broken.name + "' (" + describe(c) +
                             ") must be accepted: " + e.what());
    }
  }
  if (at_boundary && broken.boundary) broken.boundary(args, c, draw);
  else broken.apply(args, c);
  o.tag(broken_dimension, broken_class(broken));
  const bool on_boundary = at_boundary || broken.at_boundary;
  o.tag(boundary_dimension, on_boundary ? "at the boundary" : broken.boundary ? "inside the broken region" : "no boundary");
  if (on_boundary) o.tag(broken_at_boundary_dimension, broken_class(broken));

  a.memory.upload();  // every byte must stay as it is now
  const std::string where = broken.name + (at_boundary ? " (at the boundary)" : "");
  const std::string claim = "a call where " + where + " must be rejected naming '" + broken.argument() + "' and write nothing";
  try {
    if (broken.backward) k.backward(args.b);
    else k.forward(args.f);
    k.synchronize();
    if (!broken.may_serve) throw property_failure(claim + ": the call was accepted");
    o.tag("answer", "served (a rule abi.h asks of the caller)");
    a.memory.download();
    return check_served(k, a, args, "a call where " + where + ", served, must give");
  } catch (const contract_error& e) {
    if (!names(e.what(), broken.argument()))
      throw property_failure(claim + ": the message does not name it: " + e.what());
    // a message that cites a rule ("[x.offset] argument 'x.offset' ...", as the shipped checker's
    // do) must cite one of the catalog, of an argument it names (two outputs that overlap are
    // one rejection, which may cite either's overlap rule)
    if (const std::optional<std::string> id = cited_rule(e.what())) {
      const contract_rule* cited = find_contract_rule(*id);
      if (cited == nullptr || !names(e.what(), std::string(cited->argument)))
        throw property_failure(claim + ": the message cites " +
                               (cited == nullptr ? "[" + *id + "], no rule of the catalog"
                                                 : "[" + *id + "], a rule of '" + std::string(cited->argument) +
                                                       "', an argument it does not name") +
                               ": " + e.what());
      o.tag("cited rule", *id == broken.rule_id ? "the one broken" : "another of the argument");
    }
  } catch (const kernel_error& e) {
    // a partial kernel may answer NC_ERR_UNSUPPORTED where the broken call also lies outside
    // what it declares (a dtype or a layout it does not serve): nothing written is still checked
    if (e.status != NC_ERR_UNSUPPORTED || !outside(caps, args, broken.backward))
      throw property_failure(claim + ": failed with status " + std::to_string(int(e.status)) +
                             " instead of a contract error: " + e.what());
    o.tag("answer", "unsupported (outside the declared capabilities)");
  }
  a.memory.download();
  if (auto problem = a.memory.check(broken.backward ? a.backward : a.forward, false))
    throw property_failure(claim + ": " + *problem);
  // rejected at the boundary: the least step back that keeps the rule must be served, and right
  if (!at_boundary) return;
  norm_case valid = c;
  valid.parameters.clear();
  if (valid_beside_applies(broken, valid, drawing_domain(), draw)) check_valid_beside(k, valid, broken, o);
}

}  // namespace

std::vector<contract_breaker> contract_breakers() {
  std::vector<contract_breaker> out;
  for (const rule& r : rules()) out.push_back({r.name, r.backward, r.rule_id, r.has_boundary()});
  return out;
}

property contract_property() {
  // every rule of the catalog broken in each call it applies to, in its share of the cases
  // (at least one breaker each: harness_test); a workspace rule only where the kernel needed a
  // workspace for the call
  std::vector<intended_share> intended;
  const auto has = [&](const char* dimension, const std::string& cls) {
    return std::any_of(intended.begin(), intended.end(),
                       [&](const intended_share& i) { return i.dimension == dimension && i.cls == cls; });
  };
  for (const rule& r : rules()) {
    const std::string cls = broken_class(r);
    const requirement needs = [&r](const capabilities& caps) { return rule_needs(r, caps); };
    const auto unless = std::pair{std::string(not_applicable_dimension), cls};
    if (!has(broken_dimension, cls)) {
      intended_share share{broken_dimension, cls, 0.004, needs};
      if (r.workspace()) share.unless_observed = unless;
      intended.push_back(share);
    }
    // each rule with a boundary broken there in its share (a third of its cases, or all)
    if (r.has_boundary() && !has(broken_at_boundary_dimension, cls)) {
      intended_share share{broken_at_boundary_dimension, cls, 0.001, needs};
      if (r.workspace()) share.unless_observed = unless;
      intended.push_back(share);
    }
  }
  // about half the breakers have a boundary, a third of those a valid call beside it
  intended.push_back({boundary_dimension, side_names[1], 0.2});
  intended.push_back({valid_beside_dimension, "accepted and judged", 0.03});
  intended.push_back({before_dimension, before_names[1], 0.3});
  property p{"invalid_calls_are_rejected_naming_the_argument", {"forward", "backward", "gamma"}, 4500,
             contract_cases(), check_contract, intended};
  // about 115 breakers, one drawn a case: at the 150 cases a mutation run gives every property a
  // rule of one breaker went unbroken in a quarter of the runs; 1000 cases take 0.1 s on simt
  p.min_cases = 1000;
  // its valid calls are of the operations the kernel declares (operations_for), quantized too
  p.variants = p.quantized = true;
  return p;
}

}  // namespace nc::harness
