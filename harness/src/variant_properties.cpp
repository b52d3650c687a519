// The variants' own properties (abi.h "Variants"): metamorphic relations between an operation
// and a simpler one the kernel also declares, bitwise where the arithmetic is exact. The
// differential properties (properties.cpp) judge every declared operation against the exact
// oracle; these say that the variant's extra step is the step it claims to be:
//   add      add(x, residual) gives the bits of the plain operator on h = x + residual, where that
//            sum is exact (then both rounding contracts normalize the same h), and residual_out = h
//   offset   offset 1 with gamma gives the bits of offset 0 with gamma + 1, where that is exact
//   in place an in-place residual add gives the bits of the same add into a separate output
//   heads    a per-head view (3-D or 4-D) gives the bits of the same rows as a dense 2-D batch
// Two calls are held to bits where the kernel reports the same code path for both (a kernel
// that reports none, or another path, is held to the two exact bounds instead).
#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "normcheck/harness/execute.hpp"
#include "normcheck/harness/failure.hpp"
#include "normcheck/harness/generators.hpp"
#include "normcheck/harness/judge.hpp"
#include "normcheck/harness/property.hpp"

namespace nc::harness {
namespace {

// the operation an operation is compared with, for each relation
nc_operation plain_twin(const nc_operation& op) { return {NC_RESIDUAL_NONE, 0, op.weight_offset, op.rows}; }
nc_operation offset_twin(const nc_operation& op) { return {op.residual, op.in_place, 0.0f, op.rows}; }
nc_operation separate_twin(const nc_operation& op) { return {op.residual, 0, op.weight_offset, op.rows}; }
nc_operation matrix_twin(const nc_operation& op) { return {op.residual, op.in_place, op.weight_offset, NC_ROWS_MATRIX}; }

struct relation {
  bool (*applies)(const nc_operation&);
  nc_operation (*twin)(const nc_operation&);
};

const relation add_relation{[](const nc_operation& op) { return adds_residual(op); }, plain_twin};
const relation offset_relation{[](const nc_operation& op) { return op.weight_offset == 1.0f; }, offset_twin};
const relation in_place_relation{[](const nc_operation& op) { return op.in_place != 0; }, separate_twin};
const relation heads_relation{[](const nc_operation& op) { return op.rows != NC_ROWS_MATRIX; }, matrix_twin};
const relation batches_relation{[](const nc_operation& op) { return op.rows == NC_ROWS_BATCHES; }, matrix_twin};

// the operations of the drawing domain a relation compares with a twin the kernel declares
std::vector<nc_operation> related(const capabilities& caps, const relation& r) {
  std::vector<nc_operation> out;
  const auto& declared = caps.declared_operations;
  // a quantized output's codes are judged by its own properties (quantized_properties.cpp)
  for (const nc_operation& op : caps.operations)
    if (!quantizes(op) && r.applies(op) && std::find(declared.begin(), declared.end(), r.twin(op)) != declared.end())
      out.push_back(op);
  return out;
}

requirement needs(const relation& r, std::string what) {
  return [r, what](const capabilities& caps) {
    return related(caps, r).empty() ? "the kernel declares no " + what : std::string();
  };
}

// a case of an operation the relation compares, dense operands (the twin's call takes the
// same path where the kernel's paths follow the layout)
rc::Gen<norm_case> related_cases(relation r) {
  return rc::gen::exec([r] {
    static const case_profile profile = [] {
      case_profile p = case_profile::well_scaled();
      p.layout_plans = {1, 0, 0, 0};
      p.variants = true;
      return p;
    }();
    norm_case c = *gen_case(profile);
    const std::vector<nc_operation> ops = related(drawing_domain(), r);
    c.op = ops.empty() ? nc_operation{} : ops[*gen_weighted_index(std::vector<int>(ops.size(), 1))];
    c.layout = contiguous_layouts(c.n);
    draw_heads(c);
    draw_residual(c, profile);
    return c;
  });
}

// element-wise comparison of two calls' outputs: bits, or within both exact bounds
class comparison {
 public:
  comparison(bool bits, std::string claim) : bits_(bits), claim_(std::move(claim)) {}

  void matrix(const char* output, nc_dtype type, const std::vector<std::uint32_t>& got,
              const std::vector<std::uint32_t>& want, std::int64_t cols, const std::vector<double>* bound_a = nullptr,
              const std::vector<double>* bound_b = nullptr) {
    for (std::size_t e = 0; e < got.size(); ++e) {
      const double g = value_of(type, got[e]), w = value_of(type, want[e]);
      const bool nan = std::isnan(g) && std::isnan(w);
      double bound = 0;
      bool ok = got[e] == want[e] || nan;
      if (!ok && !bits_ && bound_a && bound_b) {
        bound = (*bound_a)[e] + (*bound_b)[e];
        ok = std::fabs(g - w) <= bound;  // a NaN bound (a row out of the domain) never holds
        if (std::isnan(bound)) ok = true;  // out of the domain: nothing to compare
      }
      if (!ok) fail({output, std::int64_t(e) / cols, std::int64_t(e) % cols, w, g, bound});
    }
  }

  void finish() const {
    if (failures_ == 0) return;
    std::ostringstream out;
    out << claim_ << ": " << failures_ << " element(s) differ (" << (bits_ ? "bits, the same code path" : "within both exact bounds") << ")";
    throw property_failure(out.str(), first_);
  }

 private:
  void fail(mismatch m) {
    if (first_.size() < 8) first_.push_back(std::move(m));
    ++failures_;
  }
  bool bits_;
  std::string claim_;
  std::int64_t failures_ = 0;
  std::vector<mismatch> first_;
};

bool same_path(const outputs& a, const outputs& b) {
  return !a.forward_path.empty() && a.forward_path == b.forward_path && a.backward_path == b.backward_path;
}

// the backward of the case's operation is run where the kernel has one and it is judged
calls calls_for(const kernel& k, const nc_operation& op) {
  return k.capabilities().backward() && op.residual != NC_RESIDUAL_FP32 ? calls::forward_and_backward : calls::forward;
}

// the two calls of a relation — the case and its twin, run alike — and their comparison: y
// and r always, residual_out, dx and dgamma where the relation asks for them
struct related_calls {
  calls which;
  outputs a, b;
  oracle::forward_result fa, fb;
  std::optional<oracle::backward_result> ba, bb;
  comparison v;

  related_calls(const kernel& k, const norm_case& c, const norm_case& twin, observation& o, std::string claim)
      : which(calls_for(k, c.op)),
        a(execute(k, c, which)),
        b(execute(k, twin, which)),
        fa(exact_forward_of(c, k.capabilities())),
        fb(exact_forward_of(twin, k.capabilities())),
        v(same_path(a, b), std::move(claim)) {
    o.tag("operation", describe_operation(c.op));
    o.tag("dtype", dtype_class(c));
    o.tag("paths", same_path(a, b) ? "same" : "differ");
    v.matrix("y", c.x_dtype, a.y, b.y, c.n, &fa.y_bound, &fb.y_bound);
    if (k.capabilities().writes_r()) v.matrix("r", NC_F32, a.r, b.r, 1, &fa.r_bound, &fb.r_bound);
    if (which == calls::forward_and_backward)
      ba = exact_backward_of(c, c.dy, k.capabilities()), bb = exact_backward_of(twin, twin.dy, k.capabilities());
  }
  bool backward() const { return ba.has_value(); }
};

// ---- add(x, residual) is the plain operator of x + residual where that sum is exact ----

// a residual element whose sum with x is not exact in x's dtype becomes 0 (then it is)
void exact_sums(norm_case& c) {
  for (std::size_t e = 0; e < c.residual.size(); ++e) {
    const double sum = value_of(c.x_dtype, c.x[e]) + value_of(c.x_dtype, c.residual[e]);
    if (!std::isfinite(sum) || value_of(c.x_dtype, bits_of(c.x_dtype, sum)) != sum) c.residual[e] = 0;
  }
}

rc::Gen<norm_case> add_cases() {
  return rc::gen::map(related_cases(add_relation), [](norm_case c) {
    exact_sums(c);
    return c;
  });
}

void check_add_is_plain_of_sum(const kernel& k, const norm_case& c, observation& o) {
  norm_case twin = c;
  twin.op = plain_twin(c.op);
  twin.residual.clear(), twin.residual_grad.clear();
  for (std::size_t e = 0; e < c.x.size(); ++e)
    twin.x[e] = bits_of(c.x_dtype, value_of(c.x_dtype, c.x[e]) + value_of(c.x_dtype, c.residual[e]));
  related_calls r(k, c, twin, o, "add(x, residual) must give the plain operator's outputs on h = x + residual (an exact sum)");
  r.v.matrix("residual_out", c.x_dtype, r.a.residual_out, twin.x, c.n);  // h itself: bits whatever the path
  // the backward at the same h with the same dy: the same dgamma (dx differs by the residual
  // stream's gradient, which the differential property judges)
  if (r.backward()) r.v.matrix("dgamma", c.gamma_dtype, r.a.dgamma, r.b.dgamma, c.n, &r.ba->dgamma_bound, &r.bb->dgamma_bound);
  r.v.finish();
}

// ---- offset 1 with gamma is offset 0 with gamma + 1, where gamma + 1 is exact ----

rc::Gen<norm_case> offset_cases() {
  return rc::gen::map(related_cases(offset_relation), [](norm_case c) {
    for (auto& g : c.gamma) {
      const double plus = value_of(c.gamma_dtype, g) + 1.0;
      if (!std::isfinite(plus) || value_of(c.gamma_dtype, bits_of(c.gamma_dtype, plus)) != plus) g = 0;
    }
    return c;
  });
}

// residual_out, dx and dgamma of two calls that must agree on them
void same_backward_and_residual(related_calls& r, const norm_case& c) {
  if (adds_residual(c.op)) r.v.matrix("residual_out", c.x_dtype, r.a.residual_out, r.b.residual_out, c.n);
  if (!r.backward()) return;
  r.v.matrix("dx", c.x_dtype, r.a.dx, r.b.dx, c.n, &r.ba->dx_bound, &r.bb->dx_bound);
  r.v.matrix("dgamma", c.gamma_dtype, r.a.dgamma, r.b.dgamma, c.n, &r.ba->dgamma_bound, &r.bb->dgamma_bound);
}

void check_offset_is_gamma_plus_one(const kernel& k, const norm_case& c, observation& o) {
  norm_case twin = c;
  twin.op = offset_twin(c.op);
  for (auto& g : twin.gamma) g = bits_of(c.gamma_dtype, value_of(c.gamma_dtype, g) + 1.0);
  related_calls r(k, c, twin, o, "offset 1 with gamma must give the outputs of offset 0 with gamma + 1 (an exact sum)");
  // dgamma = sum dy*x*r: the offset has no gradient, gamma none either
  same_backward_and_residual(r, c);
  r.v.finish();
}

// ---- in place: the output aliases the residual it replaces, and nothing else changes ----

void check_in_place_is_separate(const kernel& k, const norm_case& c, observation& o) {
  norm_case twin = c;
  twin.op = separate_twin(c.op);
  twin.layout.residual_out = c.layout.y;
  related_calls r(k, c, twin, o, "an in-place residual add must give the outputs of the same add into a separate output");
  same_backward_and_residual(r, c);
  r.v.finish();
}

// ---- per-head rows: a [tokens, heads, N] or [batches, tokens, heads, N] view is its rows, wherever they lie ----

void check_heads_are_rows(const kernel& k, const norm_case& c, observation& o) {
  norm_case twin = c;
  twin.op = matrix_twin(c.op);
  twin.heads = 1, twin.tokens = 0;
  twin.layout = contiguous_layouts(c.n);
  if (adds_residual(c.op)) twin.layout.residual_out = c.op.in_place ? twin.layout.residual : twin.layout.y;
  o.tag("heads", c.heads == 1 ? "1" : c.heads <= 8 ? "2-8" : "9+");
  o.tag("view", c.tokens > 0 ? "4-D" : "3-D");
  related_calls r(k, c, twin, o, "a per-head view must give the outputs of the same rows as a dense 2-D batch");
  same_backward_and_residual(r, c);
  r.v.finish();
}

}  // namespace

std::vector<property> variant_properties() {
  const std::vector<intended_share> paths_same = {{"paths", "same", 0.5}};
  std::vector<property> list = {
      {"add_of_x_and_residual_is_the_plain_operator_of_their_sum_where_exact", {"forward", "backward", "gamma"}, 600,
       add_cases(), check_add_is_plain_of_sum, paths_same, "", 0,
       needs(add_relation, "residual add beside the plain operation of its offset")},
      {"offset_one_with_gamma_is_offset_zero_with_gamma_plus_one_where_exact", {"forward", "backward", "gamma"}, 600,
       offset_cases(), check_offset_is_gamma_plus_one, paths_same, "", 0,
       needs(offset_relation, "weight offset 1 beside the same operation with offset 0")},
      {"an_in_place_residual_add_gives_the_bits_of_a_separate_output", {"forward", "backward", "gamma"}, 600,
       related_cases(in_place_relation), check_in_place_is_separate, paths_same, "", 0,
       needs(in_place_relation, "in-place residual add beside the same add into a separate output")},
      {"a_per_head_view_gives_the_bits_of_the_same_rows_as_a_2d_batch", {"forward", "backward", "gamma"}, 600,
       related_cases(heads_relation), check_heads_are_rows,
       {{"paths", "same", 0.3},
        {"heads", "2-8", 0.3},
        {"view", "4-D", 0.15, needs(batches_relation, "4-D views beside the same operation on 2-D rows")}},
       "", 0,
       needs(heads_relation, "per-head rows beside the same operation on 2-D rows")},
  };
  for (property& p : list) p.variants = true;
  return list;
}

}  // namespace nc::harness
