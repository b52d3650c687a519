// The differential family: y and r, dx and dgamma against the exact oracle (both verdicts of
// DESIGN.md), and dx and dgamma again on a workspace an earlier call left dirty.
#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <numeric>
#include <sstream>
#include <tuple>

#include "normcheck/harness/execute.hpp"
#include "normcheck/harness/failure.hpp"
#include "normcheck/harness/generators.hpp"
#include "normcheck/harness/judge.hpp"
#include "normcheck/harness/property.hpp"
#include "normcheck/oracles/compare.hpp"
#include "normcheck/oracles/exact.hpp"
#include "normcheck/path_table.hpp"
#include "property_kit.hpp"
#include "verdicts.hpp"

namespace nc::harness {
namespace {

// ---- differential ----

void judge_forward_differential(const kernel& k, const norm_case& c, const outputs& out, observation& o) {
  tag_case(o, c), tag_paths(o, out);
  verdicts v(table_binding(c));
  tag_domain(o, judge_forward(v, c, k.capabilities(), out).plain.rows);
  v.finish(o, k.capabilities().writes_r() ? "y and r must match the exact oracle" : "y must match the exact oracle");
}

void judge_dx_differential(const kernel& k, const norm_case& c, const outputs& out, observation& o) {
  tag_case(o, c), tag_paths(o, out);
  const auto exact = exact_backward_of(c, c.dy, k.capabilities());
  tag_domain(o, exact.rows);
  verdicts v(table_binding(c));
  v.oracle_matrix("dx", c.x_dtype, out.dx, c.m, c.n, exact.dx, exact.dx_bound, exact.rows);
  v.finish(o, "dx must match the exact oracle");
}

void judge_dgamma_differential(const kernel& k, const norm_case& c, const outputs& out, observation& o) {
  tag_case(o, c), tag_paths(o, out);
  const auto exact = exact_backward_of(c, c.dy, k.capabilities());
  tag_domain(o, exact.rows);
  o.tag("rows", c.m == 0 ? "0" : c.m == 1 ? "1" : c.m <= 16 ? "2-16" : "17+");
  verdicts v(table_binding(c));
  v.oracle_vector("dgamma", c.gamma_dtype, out.dgamma, exact.dgamma, exact.dgamma_bound, exact.columns, true);
  v.finish(o, "dgamma must match the exact oracle");
}

// ---- a workspace left dirty by an earlier call ----
// A caching allocator (PyTorch's, a framework's workspace pool) hands a freed block out again
// with its bytes as the last call left them, and a block larger than asked where it has one.
// Each case is two backward calls of one kernel: an earlier call of another shape (257 to 514
// rows, the document's kind of values, so its partials are finite), then the judged call on a
// workspace that starts with the bytes the earlier call left in its own: either exactly what it
// asks, or the whole block (the earlier call's size where that is more). Every other property
// gives a fresh workspace of exactly the size asked, whose bytes are NaN: a kernel that sums
// table rows it never wrote this call shows here as a wrong finite dgamma. The judged call's dx
// and dgamma must match the exact oracle.

rc::Gen<norm_case> reused_workspace_cases() {
  return rc::gen::exec([] {
    // the judged call: the differential mix, with a share of batches taller than one launch
    // takes (257 rows and more: a table on the shipped kernels of both backends)
    static const case_profile profile = [] {
      case_profile p = case_profile::differential();
      p.tall_percent = 40, p.tall_rows = 257, p.tall_elements = 257 * 4 * 16;
      p.variants = true, p.backward = true;
      return p;
    }();
    norm_case c = *gen_case(profile);
    const capabilities& caps = drawing_domain();
    // the earlier call: more rows than one launch takes, N up to 64 (a whole number of the
    // kernel's N multiple) and at least the judged call's up to there (so its table is the
    // larger one in most cases)
    const std::int64_t step = std::max<std::int64_t>(1, caps.n_multiple);
    const std::int64_t widest = std::max(step, (caps.max_n > 0 ? std::min<std::int64_t>(64, caps.max_n) : 64) / step * step);
    const std::int64_t n = std::max(*gen_columns(c.x_dtype, widest), std::min(c.n, widest));
    std::int64_t m = *gen_uniform(257, 514, 257);
    if (caps.max_elements > 0) m = std::max<std::int64_t>(1, std::min(m, caps.max_elements / n));
    c.parameters["earlier rows"] = std::to_string(m);
    c.parameters["earlier columns"] = std::to_string(n);
    // x one element off 16 bytes takes the strided paths (a row of the table a slot)
    c.parameters["earlier x"] = *gen_weighted_index({1, 1}) == 0 ? "dense" : "one element off";
    c.parameters["earlier seed"] = std::to_string(*gen_seed());
    c.parameters["block"] = *gen_weighted_index({1, 1}) == 0 ? "whole" : "asked";
    return c;
  });
}

// the earlier call of a case: c's dtypes, operation and epsilon, its own shape and values
norm_case earlier_call(const norm_case& c) {
  static const case_profile document = [] {
    case_profile p = case_profile::document();
    p.variants = true, p.backward = true;
    return p;
  }();
  const capabilities& caps = drawing_domain();
  norm_case e;
  e.x_dtype = c.x_dtype, e.gamma_dtype = c.gamma_dtype, e.epsilon = c.epsilon, e.op = c.op;
  e.m = std::stoll(parameter(c, "earlier rows")), e.n = std::stoll(parameter(c, "earlier columns"));
  if (e.m < 1 || e.n < 1) throw std::invalid_argument("the case's earlier call has no rows or no columns");
  e.layout = contiguous_layouts(e.n);
  const std::string x = parameter(c, "earlier x");
  if (x != "dense" && x != "one element off")
    throw std::invalid_argument("the case's 'earlier x' is '" + x + "': must be 'dense' or 'one element off'");
  if (x == "one element off" && caps.serves_layouts(NC_LAYOUT_MISALIGNED)) e.layout.x.offset = 1;
  one_row_a_token(e);
  const std::uint64_t seed = std::stoull(parameter(c, "earlier seed"));
  return rc::gen::exec([&] {
    norm_case v = e;
    v.x = *gen_values(v.x_dtype, v.m, v.n, document.x);
    v.dy = *gen_values(v.x_dtype, v.m, v.n, document.dy);
    v.gamma = *gen_values(v.gamma_dtype, 1, v.n, document.gamma);
    draw_residual(v, document);
    return v;
  })(rc::Random(seed), 0).value();
}

void check_reused_workspace(const kernel& k, const norm_case& c, observation& o) {
  const std::string block = parameter(c, "block");
  if (block != "whole" && block != "asked")
    throw std::invalid_argument("the case's 'block' is '" + block + "': must be 'whole' or 'asked'");
  const norm_case e = earlier_call(c);
  workspace_reuse first;
  first.keep = true;
  outputs earlier;
  try {
    earlier = execute(k, e, calls::forward_and_backward, call_setting{first});
  } catch (const property_failure& f) {
    throw property_failure("the earlier call (" + describe(e) + ", a fresh workspace): " + f.summary(), f.first());
  }
  workspace_reuse reuse;
  reuse.left = earlier.workspace_left;
  reuse.whole_block = block == "whole";
  const outputs out = execute(k, c, calls::forward_and_backward, call_setting{reuse});
  tag_case(o, c), tag_paths(o, out);

  const std::size_t left = reuse.left.size(), asked = out.workspace_bytes;
  o.tag("earlier call's workspace", left == 0 ? "none asked" : "asked");
  o.tag("workspace", asked == 0                       ? "none asked"
                     : left == 0                      ? "the earlier call left none"
                     : reuse.whole_block && left > asked ? "the whole block: more than asked, every byte left"
                     : left >= asked                  ? "what it asked, every byte left"
                                                      : "what it asked, the left bytes then fresh ones");
  bool finite = left >= sizeof(float);
  for (std::size_t at = 0; finite && at + sizeof(float) <= left; at += sizeof(float)) {
    float v;
    std::memcpy(&v, &reuse.left[at], sizeof v);
    finite = std::isfinite(v);
  }
  o.tag("left partials", left == 0 ? "none" : finite ? "finite" : "some not finite");
  // a table of a row per slot: rows past the last row of the batch belong to slots that own none
  const std::int64_t table_rows = std::int64_t(asked / sizeof(float)) / c.n;
  o.tag("backward slots", table_rows < 1        ? "no partial table"
                          : c.m > table_rows    ? "loop"
                          : c.m == table_rows   ? "one row each"
                                                : "fewer rows than table rows");

  verdicts v;
  tag_domain(o, judge_backward(v, c, k.capabilities(), out).rows);
  v.finish(o, "on a workspace of " + std::to_string(reuse.whole_block ? std::max(left, asked) : asked) +
                  " bytes (it asked for " + std::to_string(asked) + ") starting with what an earlier backward (" +
                  std::to_string(e.m) + "x" + std::to_string(e.n) + ") left in its " + std::to_string(left) +
                  ", dx and dgamma must match the exact oracle");
}

}  // namespace

std::vector<property> differential_properties() {
  return {
        judging(calls::forward, judge_forward_differential,
        drawing_quantized({"y_and_r_match_the_exact_oracle", {"forward"}, 4500, differential_cases(false), {},
         join({every_dtype(), every_alignment(), every_size(), forward_paths(),
               {{"size", "empty", 0.005}, {"domain", "every row in", 0.5}}})})),
        // tall batches: the backward grid's slots each take several rows (dgamma's partial sums,
        // the row loops); 4% of the wide cases
        judging(calls::forward_and_backward, judge_dx_differential,
        drawing_variants({"dx_matches_the_exact_oracle", {"backward"}, 3750, differential_cases(true, 4), {},
         join({every_dtype(), every_alignment(), every_size(), backward_paths(),
               {{"domain", "every row in", 0.5}, {"size", "tall", 0.01}}}),
         "", 0, needs_backward})),
        judging(calls::forward_and_backward, judge_dgamma_differential,
        drawing_variants({"dgamma_matches_the_exact_oracle", {"gamma"}, 3000, differential_cases(true, 4), {},
         join({every_dtype(), every_size(), backward_paths(),
               {{"rows", "0", 0.005}, {"rows", "1", 0.05}, {"rows", "2-16", 0.1}, {"rows", "17+", 0.2},
                {"size", "tall", 0.01}}}),
         "", 0, needs_backward}))};
}

property reused_workspace_property() {
  return drawing_variants({"dx_and_dgamma_match_the_oracle_on_a_reused_workspace", {"backward", "gamma"}, 200,
         reused_workspace_cases(), check_reused_workspace,
         join({every_dtype(),
               {{"workspace", "the whole block: more than asked, every byte left", 0.1, {},
                 std::pair{std::string("earlier call's workspace"), std::string("none asked")}},
                {"workspace", "what it asked, every byte left", 0.1, {},
                 std::pair{std::string("earlier call's workspace"), std::string("none asked")}},
                {"left partials", "finite", 0.5, {},
                 std::pair{std::string("earlier call's workspace"), std::string("none asked")}},
                {"backward slots", "fewer rows than table rows", 0.02},
                {"backward slots", "loop", 0.1}}}),
         "", 0, needs_backward});
}

}  // namespace nc::harness
