// The properties: each a claim, the cases it draws, and the check of one case.
//
//   differential   y and r, dx, dgamma against the exact oracle, both verdicts of DESIGN.md
//   metamorphic    scaling by 2^k, batch invariance, layout invariance, determinism, row
//                  permutation, the closed form of Σ x·dx, linearity of the backward in dy
//   isolation      a NaN or Inf in one row leaves every other row's bits alone
//   contract       every rule of the kernel contract rejects a call that breaks it, naming
//                  the argument, before anything is written
// Every run of a kernel goes through execute() (execute.hpp), so every case of every property
// also checks guard bands, gaps, inputs and that every output element was written.
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
#include "path_table.hpp"
#include "property_kit.hpp"
#include "verdicts.hpp"

namespace nc::harness {
namespace {

// ---- differential ----

void check_forward_differential(const kernel& k, const norm_case& c, observation& o) {
  const outputs out = execute(k, c, calls::forward);
  tag_case(o, c), tag_paths(o, out);
  verdicts v(table_binding(c));
  tag_domain(o, judge_forward(v, c, k.capabilities(), out).plain.rows);
  v.finish(o, k.capabilities().writes_r() ? "y and r must match the exact oracle" : "y must match the exact oracle");
}

void check_dx_differential(const kernel& k, const norm_case& c, observation& o) {
  const outputs out = execute(k, c, calls::forward_and_backward);
  tag_case(o, c), tag_paths(o, out);
  const auto exact = exact_backward_of(c, c.dy, k.capabilities());
  tag_domain(o, exact.rows);
  verdicts v(table_binding(c));
  v.oracle_matrix("dx", c.x_dtype, out.dx, c.m, c.n, exact.dx, exact.dx_bound, exact.rows);
  v.finish(o, "dx must match the exact oracle");
}

void check_dgamma_differential(const kernel& k, const norm_case& c, observation& o) {
  const outputs out = execute(k, c, calls::forward_and_backward);
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

// ---- scaling x by 2^k and ε by 4^k ----

// the case with x scaled by 2^k and ε by 4^k; false if a value does not scale exactly
bool scaled(const norm_case& c, int k, norm_case& out) {
  out = c;
  for (auto& bits : out.x) {
    const double v = std::ldexp(value_of(c.x_dtype, bits), k);
    bits = bits_of(c.x_dtype, v);
    if (value_of(c.x_dtype, bits) != v) return false;
  }
  out.epsilon = std::ldexp(c.epsilon, 2 * k);
  return double(out.epsilon) == std::ldexp(double(c.epsilon), 2 * k) &&
         (c.epsilon == 0 || std::fabs(out.epsilon) >= FLT_MIN);
}

rc::Gen<norm_case> scaling_cases() {
  return rc::gen::exec([] {
    static const case_profile profile = case_profile::well_scaled();
    norm_case c = *gen_case(profile);
    const int magnitude = int(*gen_uniform(1, 8, 1));
    const int k = *gen_weighted_index({1, 1}) == 0 ? magnitude : -magnitude;
    // an element that would not scale exactly (a subnormal or an overflow on the way) becomes 0;
    // for a kernel that flushes fp32 subnormals, so does one that is or becomes one
    const bool flushes = drawing_domain().flushes_subnormals();
    for (auto& bits : c.x) {
      const double before = value_of(c.x_dtype, bits), v = std::ldexp(before, k);
      const bool subnormal = flushes && ((before != 0 && std::fabs(before) < FLT_MIN) || (v != 0 && std::fabs(v) < FLT_MIN));
      if (value_of(c.x_dtype, bits_of(c.x_dtype, v)) != v || subnormal) bits = 0;
    }
    c.parameters["k"] = std::to_string(k);
    return c;
  });
}

// A kernel that reports no path (abi.h: the path functions are optional) may round a row by
// where the row lives or by how many rows its call has, and be correct: a vectorized kernel's
// scalar head and tail follow the row's address, a library picks its kernel by the batch. Two
// calls are held to bits where the kernel reports the same path for both; else two correct
// results of a row are within twice its exact bound of each other.
bool same_reported_path(const outputs& a, const outputs& b) {
  return !a.forward_path.empty() && a.forward_path == b.forward_path && a.backward_path == b.backward_path;
}

// the scaled case s's outputs b against c's outputs a scaled by 2^-k (y and dgamma kept, r and
// dx scaled): both are correct results of one exact value (s's is c's, scaled), so they differ by
// at most the two exact bounds, c's scaled alike. For a kernel that may take another order for
// the scaled call (a compiler that specializes on epsilon builds its kernel again, and may split
// a reduction otherwise)
void scaled_within_both_bounds(verdicts& v, const kernel& k, const norm_case& c, const norm_case& s,
                               const outputs& a, const outputs& b, int scale) {
  const auto fc = exact_forward_of(c, k.capabilities()), fs = exact_forward_of(s, k.capabilities());
  const auto bc = exact_backward_of(c, c.dy, k.capabilities()), bs = exact_backward_of(s, s.dy, k.capabilities());
  const auto x_value = [&](const std::vector<std::uint32_t>& out, std::size_t e) { return value_of(c.x_dtype, out[e]); };
  for (std::int64_t i = 0; i < c.m; ++i) {
    const std::size_t row = std::size_t(i);
    const bool forward = fc.rows[row].in_domain() && fs.rows[row].in_domain();
    const bool backward = bc.rows[row].in_domain() && bs.rows[row].in_domain();
    for (std::int64_t j = 0; j < c.n; ++j) {
      const std::size_t e = std::size_t(i * c.n + j);
      if (forward) v.within("y", i, j, x_value(b.y, e), x_value(a.y, e), fs.y_bound[e] + fc.y_bound[e]);
      if (backward)
        v.within("dx", i, j, x_value(b.dx, e), std::ldexp(x_value(a.dx, e), -scale),
                 bs.dx_bound[e] + std::ldexp(bc.dx_bound[e], -scale));
    }
    if (forward)
      v.within("r", i, 0, value_of(NC_F32, b.r[row]), std::ldexp(value_of(NC_F32, a.r[row]), -scale),
               fs.r_bound[row] + std::ldexp(fc.r_bound[row], -scale));
  }
  for (std::int64_t j = 0; j < c.n; ++j) {
    const std::size_t col = std::size_t(j);
    if (bc.columns[col].in_domain() && bs.columns[col].in_domain())
      v.within("dgamma", 0, j, value_of(c.gamma_dtype, b.dgamma[col]), value_of(c.gamma_dtype, a.dgamma[col]),
               bs.dgamma_bound[col] + bc.dgamma_bound[col]);
  }
}

void check_scaling(const kernel& kn, const norm_case& c, observation& o) {
  const int k = std::stoi(parameter(c, "k"));
  norm_case s;
  if (!scaled(c, k, s))
    throw std::invalid_argument("the case does not scale exactly by 2^" + std::to_string(k));
  const outputs a = execute(kn, c, calls::forward_and_backward), b = execute(kn, s, calls::forward_and_backward);
  tag_case(o, c), tag_paths(o, a);
  o.tag("k", k > 0 ? "positive" : "negative");
  verdicts v;
  const std::string claim = "scaling x by 2^k and epsilon by 4^k must keep y and dgamma and scale r and dx by 2^-k";
  if (!same_reported_path(a, b)) {
    scaled_within_both_bounds(v, kn, c, s, a, b, k);
    v.finish(o, claim + " (within the two calls' exact bounds: the kernel reports no path)");
    return;
  }
  v.same_bits("y", c.x_dtype, b.y, a.y, c.n);
  v.same_bits("dgamma", c.gamma_dtype, b.dgamma, a.dgamma, c.n);
  // r and dx scale by 2^-k: exactly, wherever neither value is near the subnormals of its
  // dtype (a stored value of at least twice the smallest normal was rounded as a normal)
  const auto scales = [&](const char* output, nc_dtype t, const std::vector<std::uint32_t>& base,
                          const std::vector<std::uint32_t>& got, std::int64_t cols) {
    const double tiny = oracle::format_of(oracle_type(t)).min_normal;
    for (std::size_t e = 0; e < base.size(); ++e) {
      const double before = value_of(t, base[e]), expected = std::ldexp(before, -k), have = value_of(t, got[e]);
      const bool normal = std::isfinite(before) && std::fabs(before) >= 2 * tiny && std::fabs(expected) >= 2 * tiny;
      // a zero may be an underflowed result (its scaled value must be zero or subnormal), an
      // infinity an overflowed one (out of range either way)
      const bool holds = std::isnan(before) ? std::isnan(have)
                         : before == 0      ? std::fabs(have) < tiny
                                            : !normal || got[e] == bits_of(t, expected);
      if (!holds) v.within(output, std::int64_t(e) / cols, std::int64_t(e) % cols, have, expected, 0);
    }
  };
  scales("r", NC_F32, a.r, b.r, 1);
  scales("dx", c.x_dtype, a.dx, b.dx, c.n);
  if (a.forward_path != b.forward_path || a.backward_path != b.backward_path)
    v.fail("scaling changed the code path (" + a.forward_path + "/" + a.backward_path + " -> " + b.forward_path +
           "/" + b.backward_path + ")");
  v.finish(o, claim);
}

// ---- batch invariance ----

// row i of c's outputs `a` against row j of `b`, for each (i, j): within twice row i's bound
void rows_within_twice_the_bound(verdicts& v, const kernel& k, const norm_case& c, const outputs& a,
                                 const outputs& b, const std::vector<std::pair<std::int64_t, std::int64_t>>& rows) {
  const auto forward = exact_forward_of(c, k.capabilities());
  const auto backward = exact_backward_of(c, c.dy, k.capabilities());
  const auto value = [&](const std::vector<std::uint32_t>& out, std::int64_t row, std::int64_t col) {
    return value_of(c.x_dtype, out[std::size_t(row * c.n + col)]);
  };
  for (const auto& [i, j] : rows) {
    if (forward.rows[std::size_t(i)].in_domain()) {
      for (std::int64_t col = 0; col < c.n; ++col)
        v.within("y", i, col, value(b.y, j, col), value(a.y, i, col), 2 * forward.y_bound[std::size_t(i * c.n + col)]);
      v.within("r", i, 0, value_of(NC_F32, b.r[std::size_t(j)]), value_of(NC_F32, a.r[std::size_t(i)]),
               2 * forward.r_bound[std::size_t(i)]);
    }
    if (backward.rows[std::size_t(i)].in_domain())
      for (std::int64_t col = 0; col < c.n; ++col)
        v.within("dx", i, col, value(b.dx, j, col), value(a.dx, i, col), 2 * backward.dx_bound[std::size_t(i * c.n + col)]);
  }
}

rc::Gen<norm_case> batch_cases() {
  return rc::gen::exec([] {
    static const case_profile profile = [] {
      case_profile p = case_profile::differential();
      p.empty_percent = 0;
      return p;
    }();
    norm_case c = *gen_case(profile);
    c.parameters["row"] = std::to_string(*gen_uniform(0, c.m - 1, 0));
    return c;
  });
}

// rows [first, first + count) of c, each at the same address modulo 16 bytes as in the batch
// (a kernel that does not serve the offsets this takes gets the rows at offset 0 instead)
norm_case rows_of(const norm_case& c, std::int64_t first, std::int64_t count, const capabilities& caps) {
  norm_case s = c;
  s.m = count;
  s.x.assign(c.x.begin() + first * c.n, c.x.begin() + (first + count) * c.n);
  s.dy.assign(c.dy.begin() + first * c.n, c.dy.begin() + (first + count) * c.n);
  s.dy2.clear();
  s.parameters.clear();
  const std::int64_t per_vector = vector_width_of(c.x_dtype);
  for (matrix_layout* l : {&s.layout.x, &s.layout.y, &s.layout.dy, &s.layout.dx})
    l->offset = (l->offset + first * l->row_stride) % per_vector;
  s.layout.r.offset = (s.layout.r.offset + first * s.layout.r.stride) % 4;
  if (!caps.serves_layouts(layout_bits(s, caps.writes_r())))
    for (std::int64_t* offset : {&s.layout.x.offset, &s.layout.y.offset, &s.layout.dy.offset, &s.layout.dx.offset,
                                 &s.layout.r.offset})
      *offset = 0;
  return s;
}

// row i of c alone
norm_case alone(const norm_case& c, std::int64_t i, const capabilities& caps) { return rows_of(c, i, 1, caps); }

void check_batch_invariance(const kernel& k, const norm_case& c, observation& o) {
  const std::int64_t i = std::stoll(parameter(c, "row"));
  const outputs batch = execute(k, c, calls::forward_and_backward);
  const outputs single = execute(k, alone(c, i, k.capabilities()), calls::forward_and_backward);
  tag_case(o, c), tag_paths(o, batch);
  o.tag("row", i == 0 ? "first" : i == c.m - 1 ? "last" : "inside");
  verdicts v;
  if (batch.forward_path.empty()) {
    o.tag("paths", "not reported");
    rows_within_twice_the_bound(v, k, c, batch, single, {{i, 0}});
    return v.finish(o, "row " + std::to_string(i) + " alone must give what it gives in the batch, within twice its "
                       "bound (the kernel reports no path)");
  }
  v.same_bits("y", c.x_dtype, single.y, row_of(batch.y, c.n, i), c.n);
  v.same_bits("r", NC_F32, single.r, {batch.r[std::size_t(i)]}, 1);
  v.same_bits("dx", c.x_dtype, single.dx, row_of(batch.dx, c.n, i), c.n);
  if (!same_reported_path(single, batch))
    v.fail("the row alone took another path (" + single.forward_path + "/" + single.backward_path + ")");
  v.finish(o, "row " + std::to_string(i) + " alone must give the bits it gives in the batch");
}

// ---- layout invariance ----

rc::Gen<norm_case> layout_cases() {
  static const case_profile profile = [] {
    case_profile p = case_profile::differential();
    p.layout_plans = {0, 25, 40, 35};
    return p;
  }();
  return gen_case(profile);
}

void check_layout_invariance(const kernel& k, const norm_case& c, observation& o) {
  norm_case dense = c;
  dense.layout = contiguous_layouts(c.n);
  const outputs a = execute(k, c, calls::forward_and_backward), b = execute(k, dense, calls::forward_and_backward);
  tag_case(o, c), tag_paths(o, a);
  const bool same_forward = !a.forward_path.empty() && a.forward_path == b.forward_path;
  const bool same_backward = same_forward && same_reported_path(a, b);
  o.tag("paths", a.forward_path.empty() ? "not reported"
                 : same_backward        ? "same"
                 : same_forward         ? "backward differs"
                                        : "forward differs");
  verdicts v;
  if (same_forward) {
    v.same_bits("y", c.x_dtype, a.y, b.y, c.n);
    v.same_bits("r", NC_F32, a.r, b.r, 1);
  } else {
    // two correct results are within twice the bound of each other
    const auto exact = exact_forward_of(c, k.capabilities());
    for (std::int64_t i = 0; i < c.m; ++i) {
      if (!exact.rows[std::size_t(i)].in_domain()) continue;
      for (std::int64_t j = 0; j < c.n; ++j) {
        const std::size_t e = std::size_t(i * c.n + j);
        v.within("y", i, j, value_of(c.x_dtype, a.y[e]), value_of(c.x_dtype, b.y[e]), 2 * exact.y_bound[e]);
      }
      v.within("r", i, 0, value_of(NC_F32, a.r[std::size_t(i)]), value_of(NC_F32, b.r[std::size_t(i)]),
               2 * exact.r_bound[std::size_t(i)]);
    }
  }
  if (same_backward) {
    v.same_bits("dx", c.x_dtype, a.dx, b.dx, c.n);
    v.same_bits("dgamma", c.gamma_dtype, a.dgamma, b.dgamma, c.n);
  } else {
    const auto exact = exact_backward_of(c, c.dy, k.capabilities());
    for (std::int64_t i = 0; i < c.m; ++i) {
      if (!exact.rows[std::size_t(i)].in_domain()) continue;
      for (std::int64_t j = 0; j < c.n; ++j) {
        const std::size_t e = std::size_t(i * c.n + j);
        v.within("dx", i, j, value_of(c.x_dtype, a.dx[e]), value_of(c.x_dtype, b.dx[e]), 2 * exact.dx_bound[e]);
      }
    }
    for (std::int64_t j = 0; j < c.n; ++j)
      if (exact.columns[std::size_t(j)].in_domain())
        v.within("dgamma", 0, j, value_of(c.gamma_dtype, a.dgamma[std::size_t(j)]),
                 value_of(c.gamma_dtype, b.dgamma[std::size_t(j)]), 2 * exact.dgamma_bound[std::size_t(j)]);
  }
  v.finish(o, "the strided view must give the bits of its contiguous copy on the same path (" + a.forward_path +
                  "/" + a.backward_path + " vs " + b.forward_path + "/" + b.backward_path + ")");
}

// ---- determinism ----

rc::Gen<norm_case> plain_cases() {
  static const case_profile profile = case_profile::differential();
  return gen_case(profile);
}

void check_determinism(const kernel& k, const norm_case& c, observation& o) {
  const outputs a = execute(k, c, calls::forward_and_backward), b = execute(k, c, calls::forward_and_backward);
  tag_case(o, c), tag_paths(o, a);
  verdicts v;
  v.same_bits("y", c.x_dtype, b.y, a.y, c.n);
  v.same_bits("r", NC_F32, b.r, a.r, 1);
  v.same_bits("dx", c.x_dtype, b.dx, a.dx, c.n);
  v.same_bits("dgamma", c.gamma_dtype, b.dgamma, a.dgamma, c.n);
  v.finish(o, "a second run must give the bits of the first");
}

// ---- row permutation ----

std::string format_permutation(const std::vector<std::int64_t>& p) {
  std::string text;
  for (std::int64_t v : p) text += (text.empty() ? "" : " ") + std::to_string(v);
  return text;
}

std::vector<std::int64_t> parse_permutation(const std::string& text, std::int64_t m) {
  std::vector<std::int64_t> p;
  std::istringstream in(text);
  for (std::int64_t v; in >> v;) p.push_back(v);
  std::vector<std::int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::int64_t> identity(static_cast<std::size_t>(m));
  std::iota(identity.begin(), identity.end(), 0);
  if (sorted != identity) throw std::invalid_argument("'" + text + "' is not a permutation of the case's rows");
  return p;
}

rc::Gen<norm_case> permutation_cases() {
  return rc::gen::exec([] {
    static const case_profile profile = [] {
      case_profile p = case_profile::differential();
      p.min_rows = 2;
      p.empty_percent = 0;
      return p;
    }();
    norm_case c = *gen_case(profile);
    // a shuffle from one draw: it follows M as M shrinks
    const std::uint64_t seed = *gen_seed();
    std::vector<std::int64_t> p(std::size_t(c.m));
    std::iota(p.begin(), p.end(), 0);
    std::uint64_t state = seed;
    for (std::size_t i = p.size(); i > 1; --i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      std::swap(p[i - 1], p[std::size_t((state >> 33) % i)]);
    }
    c.parameters["permutation"] = format_permutation(p);
    return c;
  });
}

void check_permutation(const kernel& k, const norm_case& c, observation& o) {
  const std::vector<std::int64_t> p = parse_permutation(parameter(c, "permutation"), c.m);
  norm_case q = c;
  for (std::int64_t i = 0; i < c.m; ++i)
    for (std::int64_t j = 0; j < c.n; ++j) {
      q.x[std::size_t(i * c.n + j)] = c.x[std::size_t(p[std::size_t(i)] * c.n + j)];
      q.dy[std::size_t(i * c.n + j)] = c.dy[std::size_t(p[std::size_t(i)] * c.n + j)];
    }
  const outputs a = execute(k, c, calls::forward_and_backward), b = execute(k, q, calls::forward_and_backward);
  tag_case(o, c), tag_paths(o, a);
  verdicts v;
  // a row that moves, on a kernel that reports no path, is compared within the bound
  // (same_reported_path: torch's eager kernel rounds a moved fp16 row's r differently even where
  // the move keeps it 16-byte aligned, H200 2026-12-04)
  std::vector<std::pair<std::int64_t, std::int64_t>> moved;
  for (std::int64_t i = 0; i < c.m; ++i) {
    const std::int64_t from = p[std::size_t(i)];
    if (from != i && !same_reported_path(a, b)) {
      moved.push_back({from, i});
      continue;
    }
    v.same_bits("y", c.x_dtype, row_of(b.y, c.n, i), row_of(a.y, c.n, from), c.n);
    v.same_bits("r", NC_F32, {b.r[std::size_t(i)]}, {a.r[std::size_t(from)]}, 1);
    v.same_bits("dx", c.x_dtype, row_of(b.dx, c.n, i), row_of(a.dx, c.n, from), c.n);
  }
  if (a.forward_path.empty()) o.tag("paths", moved.empty() ? "not reported, no row moved" : "not reported, rows moved");
  if (!moved.empty()) rows_within_twice_the_bound(v, k, c, a, b, moved);
  // dgamma sums the rows in another order: within twice the bound
  const auto exact = exact_backward_of(c, c.dy, k.capabilities());
  for (std::int64_t j = 0; j < c.n; ++j)
    if (exact.columns[std::size_t(j)].in_domain())
      v.within("dgamma", 0, j, value_of(c.gamma_dtype, b.dgamma[std::size_t(j)]),
               value_of(c.gamma_dtype, a.dgamma[std::size_t(j)]), 2 * exact.dgamma_bound[std::size_t(j)]);
  v.finish(o, "permuting the rows must permute y, r and dx and keep dgamma within its bound");
}

// ---- Σ x·dx = ε·r³·s ----
// dx = r·u − x·r³·s/N with u = dy·γ and s = Σ u·x, so Σ x·dx = r·s − r³·s·mean(x²)
// = r·s·(1 − r²·mean(x²)); r² = 1/(mean(x²) + ε) makes 1 − r²·mean(x²) = ε·r², hence ε·r³·s.

void check_sum_x_dx(const kernel& k, const norm_case& drawn, observation& o) {
  const outputs a = execute(k, drawn, calls::forward_and_backward);
  const norm_case c = as_read(drawn, k.capabilities());  // the closed form of what the kernel read
  tag_case(o, c), tag_paths(o, a);
  const auto forward = exact_forward_of(c, k.capabilities());
  const auto backward = exact_backward_of(c, c.dy, k.capabilities());
  tag_domain(o, backward.rows);
  o.tag("epsilon", c.epsilon == 0 ? "zero" : "positive");
  verdicts v;
  for (std::int64_t i = 0; i < c.m; ++i) {
    if (!backward.rows[std::size_t(i)].in_domain() || !forward.rows[std::size_t(i)].in_domain()) continue;
    long double sum = 0, magnitude = 0, s = 0, s_magnitude = 0, bound = 0;
    for (std::int64_t j = 0; j < c.n; ++j) {
      const std::size_t e = std::size_t(i * c.n + j);
      const long double x = value_of(c.x_dtype, c.x[e]), dx = value_of(c.x_dtype, a.dx[e]);
      const long double u = (long double)value_of(c.x_dtype, c.dy[e]) * value_of(c.gamma_dtype, c.gamma[std::size_t(j)]);
      sum += x * dx, magnitude += std::fabs(x * dx);
      s += u * x, s_magnitude += std::fabs(u * x);
      bound += std::fabs(x) * backward.dx_bound[e];
    }
    const long double r = forward.r[std::size_t(i)];
    const long double closed = (long double)c.epsilon * r * r * r * s;
    // the long-double sums and the oracle's r (within 2^-52) are far finer than any bug
    const long double slack = 1e-12L * (magnitude + std::fabs(closed) + (long double)c.epsilon * r * r * r * s_magnitude);
    v.within("sum x*dx", i, 0, double(sum), double(closed), double(bound + slack));
  }
  v.finish(o, "sum_j x_j*dx_j must equal epsilon*r^3*sum_j dy_j*gamma_j*x_j within the bound of dx");
}

// ---- the backward is linear in dy ----

rc::Gen<norm_case> linearity_cases() {
  return rc::gen::exec([] {
    // dy and dy2 on a grid whose sums are exact, so dy + dy2 is itself an input
    static const case_profile profile = [] {
      case_profile p = case_profile::differential();
      p.dy = only(row_kind::grid);
      return p;
    }();
    norm_case c = *gen_case(profile);
    c.dy2 = *gen_values(c.x_dtype, c.m, c.n, only(row_kind::grid));
    return c;
  });
}

void check_linearity(const kernel& k, const norm_case& c, observation& o) {
  if (c.dy2.size() != c.dy.size()) throw std::invalid_argument("the case has no dy2");
  norm_case second = c, sum = c;
  second.dy = c.dy2;
  for (std::size_t e = 0; e < c.dy.size(); ++e) {
    const double total = value_of(c.x_dtype, c.dy[e]) + value_of(c.x_dtype, c.dy2[e]);
    sum.dy[e] = bits_of(c.x_dtype, total);
    if (value_of(c.x_dtype, sum.dy[e]) != total) throw std::invalid_argument("dy + dy2 is not exact in the case's dtype");
  }
  const outputs a = execute(k, c, calls::forward_and_backward), b = execute(k, second, calls::forward_and_backward),
                s = execute(k, sum, calls::forward_and_backward);
  tag_case(o, c), tag_paths(o, a);
  const auto ea = exact_backward_of(c, c.dy, k.capabilities()), eb = exact_backward_of(c, second.dy, k.capabilities()), es = exact_backward_of(c, sum.dy, k.capabilities());
  tag_domain(o, es.rows);
  verdicts v;
  for (std::int64_t i = 0; i < c.m; ++i) {
    const std::size_t row = std::size_t(i);
    if (!ea.rows[row].in_domain() || !eb.rows[row].in_domain() || !es.rows[row].in_domain()) continue;
    for (std::int64_t j = 0; j < c.n; ++j) {
      const std::size_t e = std::size_t(i * c.n + j);
      v.within("dx", i, j, value_of(c.x_dtype, s.dx[e]), value_of(c.x_dtype, a.dx[e]) + value_of(c.x_dtype, b.dx[e]),
               ea.dx_bound[e] + eb.dx_bound[e] + es.dx_bound[e]);
    }
  }
  for (std::int64_t j = 0; j < c.n; ++j) {
    const std::size_t e = std::size_t(j);
    if (!ea.columns[e].in_domain() || !eb.columns[e].in_domain() || !es.columns[e].in_domain()) continue;
    v.within("dgamma", 0, j, value_of(c.gamma_dtype, s.dgamma[e]),
             value_of(c.gamma_dtype, a.dgamma[e]) + value_of(c.gamma_dtype, b.dgamma[e]),
             ea.dgamma_bound[e] + eb.dgamma_bound[e] + es.dgamma_bound[e]);
  }
  v.finish(o, "dx(dy + dy2) must equal dx(dy) + dx(dy2), and dgamma likewise, within their bounds");
}

// ---- non-finite isolation ----

bool finite_row(nc_dtype t, const std::vector<std::uint32_t>& v, std::int64_t n, std::int64_t i) {
  for (std::int64_t j = 0; j < n; ++j)
    if (!std::isfinite(value_of(t, v[std::size_t(i * n + j)]))) return false;
  return true;
}

rc::Gen<norm_case> isolation_cases() {
  return rc::gen::exec([] {
    static const case_profile profile = case_profile::non_finite();
    norm_case c = *gen_case(profile);
    const std::int64_t bad = *gen_uniform(0, c.m - 1, 0), col = *gen_uniform(0, c.n - 1, 0);
    const double specials[] = {NAN, INFINITY, -INFINITY};
    const double special = specials[*gen_weighted_index({1, 1, 1})];
    auto& target = *gen_weighted_index({3, 1}) == 0 ? c.x : c.dy;
    target[std::size_t(bad * c.n + col)] = bits_of(c.x_dtype, special);
    // the next row stays finite, so every case has a row to compare
    const std::int64_t witness = (bad + 1) % c.m;
    for (auto* v : {&c.x, &c.dy})
      for (std::int64_t j = 0; j < c.n; ++j) {
        auto& bits = (*v)[std::size_t(witness * c.n + j)];
        if (!std::isfinite(value_of(c.x_dtype, bits))) bits = bits_of(c.x_dtype, 1.0);
      }
    return c;
  });
}

void check_isolation(const kernel& k, const norm_case& c, observation& o) {
  norm_case clean = c;
  std::vector<bool> bad(std::size_t(c.m));
  std::int64_t bad_rows = 0;
  for (std::int64_t i = 0; i < c.m; ++i) {
    bad[std::size_t(i)] = !finite_row(c.x_dtype, c.x, c.n, i) || !finite_row(c.x_dtype, c.dy, c.n, i);
    if (!bad[std::size_t(i)]) continue;
    ++bad_rows;
    for (std::int64_t j = 0; j < c.n; ++j)
      clean.x[std::size_t(i * c.n + j)] = clean.dy[std::size_t(i * c.n + j)] = bits_of(c.x_dtype, 1.0);
  }
  const outputs a = execute(k, c, calls::forward_and_backward), b = execute(k, clean, calls::forward_and_backward);
  tag_case(o, c), tag_paths(o, a);
  o.tag("non-finite rows", bad_rows == 0 ? "none" : bad_rows == 1 ? "one" : "several");
  verdicts v;
  for (std::int64_t i = 0; i < c.m; ++i) {
    if (bad[std::size_t(i)]) continue;
    v.same_bits("y", c.x_dtype, row_of(a.y, c.n, i), row_of(b.y, c.n, i), c.n);
    v.same_bits("r", NC_F32, {a.r[std::size_t(i)]}, {b.r[std::size_t(i)]}, 1);
    v.same_bits("dx", c.x_dtype, row_of(a.dx, c.n, i), row_of(b.dx, c.n, i), c.n);
  }
  v.finish(o, "rows without NaN/Inf must give the bits of a run whose non-finite rows are made finite");
}

// ---- the dispatch table's boundaries ----
// The shipped kernels' paths switch at the limits of path_table.hpp: a row one vector past a
// register path's limit is where an off-by-one in the table or in a kernel's register count
// shows, and random N reaches such a row rarely. Each case sweeps them all: for every dtype
// pair the kernel serves, N of limit - 1, limit and limit + 1 vectors of every vector path of
// both directions (dense, aligned rows), and the strided paths' limit +- 1 element, each run
// forward and backward against the exact oracle. A kernel that lists the table's paths must
// also take the path the table gives. Every cell is a row of the distribution table that
// every case must hit.

struct boundary_cell {
  std::string name;  // "forward vector-warp 256+1 vectors, 4-byte x": a distribution dimension
  std::int64_t n;
};

// the path of the table a dense aligned row of `vectors` vectors takes (strided past them all)
template <std::size_t K>
std::string table_path(const path_limit (&table)[K], std::int64_t vectors, std::int64_t n) {
  for (const path_limit& p : table)
    if (p.max_vectors == 0 || vectors <= p.max_vectors) return path_name(p.choice);
  return path_name(n <= strided_warp_max_n ? path::strided_warp : path::strided_block);
}

std::vector<boundary_cell> boundary_cells(std::int64_t width) {
  std::vector<boundary_cell> out;
  const std::string bytes = ", " + std::to_string(16 / width) + "-byte x";
  const auto vector_cells = [&](const char* direction, const auto& table) {
    for (const path_limit& p : table) {
      if (p.max_vectors == 0) continue;
      for (const std::int64_t side : {-1, 0, 1})
        out.push_back({std::string(direction) + " " + path_name(p.choice) + " " + std::to_string(p.max_vectors) +
                           (side < 0 ? "-1" : side > 0 ? "+1" : "") + " vectors" + bytes,
                       (p.max_vectors + side) * width});
    }
  };
  vector_cells("forward", forward_vector_paths);
  vector_cells("backward", backward_vector_paths);
  // a ragged row (N odd: no vector path) either side of the strided paths' limit
  for (const std::int64_t side : {-1, 1})
    out.push_back({"strided " + std::to_string(strided_warp_max_n) + (side < 0 ? "-1" : "+1") + " elements" + bytes,
                   strided_warp_max_n + side});
  return out;
}

// why a kernel cannot serve a cell's row ("" if it can)
std::string cell_needs(const boundary_cell& cell, const capabilities& caps) {
  if ((caps.max_n > 0 && cell.n > caps.max_n) || (caps.max_elements > 0 && cell.n > caps.max_elements))
    return "longer than the kernel serves";
  if (!caps.takes_n(cell.n)) return "N not a multiple the kernel serves";
  return "";
}

rc::Gen<norm_case> boundary_cases() {
  return rc::gen::noShrink(rc::gen::exec([] {
    // the carrier of the sweep's seed: a valid empty call (M = 0), so its case file reads back
    norm_case c;
    c.n = drawing_domain().n_multiple;
    c.op = drawing_domain().operations.front();  // an operation the kernel declares
    c.epsilon = usual_epsilon();
    c.layout = contiguous_layouts(c.n);
    one_row_a_token(c);
    c.gamma.assign(std::size_t(c.n), bits_of(c.gamma_dtype, 1.0));
    c.parameters["sweep seed"] = std::to_string(*gen_seed());
    return c;
  }));
}

bool lists_table_paths(const kernel& k) {
  for (const path_limit& p : forward_vector_paths)
    if (!k.lists_forward_path(path_name(p.choice))) return false;
  for (const path_limit& p : backward_vector_paths)
    if (!k.lists_backward_path(path_name(p.choice))) return false;
  return true;
}

void check_dispatch_boundaries(const kernel& k, const norm_case& sweep, observation& o) {
  // every cell of an operation the kernel declares (abi.h "Variants": a residual add's
  // operands take the vector paths too), one the sweep's seed draws a cell
  // (its backward judged where the kernel has one)
  case_profile profile = case_profile::differential();
  profile.variants = true, profile.backward = drawing_domain().backward();
  const std::vector<nc_operation> operations = drawable_operations(profile);
  // the campaign's domain: the kernel's capabilities, epsilon pinned where --epsilon pins it
  const capabilities& caps = drawing_domain();
  const float epsilon = usual_epsilon();
  const std::uint64_t seed = std::stoull(parameter(sweep, "sweep seed"));
  const bool table_kernel = lists_table_paths(k);
  std::uint64_t draw = seed;
  for (const nc_dtype x : all_dtypes)
    for (const nc_dtype g : all_dtypes) {
      if (!caps.serves(x, g)) continue;
      const std::int64_t width = vector_width_of(x);
      for (const boundary_cell& cell : boundary_cells(width)) {
        const std::string dimension = cell.name;
        if (const std::string why = cell_needs(cell, caps); !why.empty()) {
          o.tag(dimension, why);
          continue;
        }
        norm_case c;
        c.x_dtype = x, c.gamma_dtype = g, c.n = cell.n, c.epsilon = epsilon;
        // 1 to 3 rows, as many as the kernel's size limit allows
        c.m = 1 + std::int64_t(draw % 3);
        if (caps.max_elements > 0) c.m = std::min(c.m, caps.max_elements / c.n);
        c.layout = contiguous_layouts(c.n);
        draw = draw * 6364136223846793005ull + 1442695040888963407ull;
        if (!operations.empty()) c.op = operations[(draw >> 33) % operations.size()];
        one_row_a_token(c);
        c = rc::gen::exec([&] {
          norm_case v = c;
          draw_values(v, profile);
          draw_residual(v, profile);
          return v;
        })(rc::Random(draw), 0).value();
        outputs out;
        try {
          out = execute(k, c, calls::forward_and_backward);
        } catch (const property_failure& e) {
          throw property_failure(dimension + ": " + describe(c) + ": " + e.summary(), e.first());
        }
        const auto forward = exact_forward_of(c, caps);
        verdicts v;
        v.oracle_matrix("y", c.x_dtype, out.y, c.m, c.n, forward.y, forward.y_bound, forward.rows);
        if (caps.writes_r()) v.oracle_vector("r", NC_F32, out.r, forward.r, forward.r_bound, forward.rows, false);
        if (caps.backward()) {
          const auto backward = exact_backward_of(c, c.dy, caps);
          v.oracle_matrix("dx", c.x_dtype, out.dx, c.m, c.n, backward.dx, backward.dx_bound, backward.rows);
          v.oracle_vector("dgamma", c.gamma_dtype, out.dgamma, backward.dgamma, backward.dgamma_bound,
                          backward.columns, true);
        }
        const std::int64_t vectors = c.n % width == 0 ? c.n / width : 0;
        if (table_kernel) {
          const std::string want_forward = vectors ? table_path(forward_vector_paths, vectors, c.n)
                                                   : path_name(c.n <= strided_warp_max_n ? path::strided_warp : path::strided_block);
          const std::string want_backward = vectors ? table_path(backward_vector_paths, vectors, c.n) : want_forward;
          if (out.forward_path != want_forward)
            v.fail("the forward took " + out.forward_path + ", the dispatch table gives " + want_forward);
          if (caps.backward() && out.backward_path != want_backward)
            v.fail("the backward took " + out.backward_path + ", the dispatch table gives " + want_backward);
        }
        // the case itself, for the failure's message (a case file holds the sweep's seed)
        v.finish(o, dimension + ": " + describe(c) + " must match the exact oracle" +
                        (table_kernel ? " on the table's paths" : ""));
        o.tag(dimension, "hit");
      }
    }
}

// ---- a batch taller than the grid ----
// On a GPU the backward grid is persistent: a few thousand row slots, each looping over the
// rows S apart. Here the rows outnumber the slots on the block paths (N of 1032–1900), and
// the rows past the first S must give the bits they give in pieces of at most S rows, where
// no slot loops; a block reduction whose shared totals a looping warp overwrites too early
// breaks it (compute-sanitizer racecheck sees that hazard on any timing). The batch's dgamma,
// a sum over every slot's rows, must match the exact oracle. Millions of
// elements a case: a device backend only (simt's grid of 16 blocks loops in every property).

rc::Gen<norm_case> tall_wide_cases() {
  return rc::gen::noShrink(rc::gen::exec([] {
    static const case_profile profile = case_profile::differential();
    norm_case c;
    std::tie(c.x_dtype, c.gamma_dtype) = *gen_served_pair(NC_PAIRS_ALL);
    // N past the warp paths (more than 128 vectors, more than 1024 elements); two thirds whole
    // vectors (the vector block paths), the rest ragged (the strided block path), as is every
    // case whose x is one element off 16 bytes
    const std::int64_t w = vector_width_of(c.x_dtype);
    c.n = *gen_uniform(1032, 1900, 1032);
    if (*gen_weighted_index({2, 1}) == 0) c.n = c.n / w * w;
    c.n -= c.n % drawing_domain().n_multiple;  // inside the kernel's shape rule
    c.m = std::min(*gen_uniform(2200, 4400, 2200), (std::int64_t(1) << 22) / c.n);
    c.layout = contiguous_layouts(c.n);
    if (*gen_weighted_index({3, 1}) == 1 && drawing_domain().serves_layouts(NC_LAYOUT_MISALIGNED)) c.layout.x.offset = 1;
    c.epsilon = usual_epsilon();
    draw_values(c, profile);
    return c;
  }));
}

void check_tall_batch(const kernel& k, const norm_case& c, observation& o) {
  const outputs batch = execute(k, c, calls::forward_and_backward);
  tag_case(o, c), tag_paths(o, batch);
  // the backward's row slots: its partial table is slots × N fp32
  // a kernel without a partial table (workspace 0: its own reduction) is cut into pieces of
  // 1024 rows: the rows must still give the bits they give in a shorter batch
  const std::int64_t table_rows = std::int64_t(batch.workspace_bytes / sizeof(float)) / c.n;
  const std::int64_t slots = table_rows >= 1 ? table_rows : 1024;
  o.tag("backward slots", table_rows < 1 ? "no partial table" : c.m > slots ? "loop" : "one row each");
  verdicts v;
  // a kernel that reports no path: the pieces' rows against the batch's, within the bound
  outputs pieces = batch;
  std::vector<std::pair<std::int64_t, std::int64_t>> rows;
  for (std::int64_t first = slots; first < c.m; first += slots) {
    const std::int64_t count = std::min(slots, c.m - first);
    const norm_case piece = rows_of(c, first, count, k.capabilities());
    const outputs p = execute(k, piece, calls::forward_and_backward);
    if (batch.forward_path.empty()) {
      std::copy(p.y.begin(), p.y.end(), pieces.y.begin() + first * c.n);
      std::copy(p.r.begin(), p.r.end(), pieces.r.begin() + first);
      std::copy(p.dx.begin(), p.dx.end(), pieces.dx.begin() + first * c.n);
      for (std::int64_t i = first; i < first + count; ++i) rows.push_back({i, i});
      continue;
    }
    const auto rows = [&](const std::vector<std::uint32_t>& v, std::int64_t width) {
      return std::vector<std::uint32_t>(v.begin() + first * width, v.begin() + (first + count) * width);
    };
    v.same_bits("y", c.x_dtype, rows(batch.y, c.n), p.y, c.n);
    v.same_bits("r", NC_F32, rows(batch.r, 1), p.r, 1);
    v.same_bits("dx", c.x_dtype, rows(batch.dx, c.n), p.dx, c.n);
    if (p.forward_path != batch.forward_path || p.backward_path != batch.backward_path)
      v.fail("rows " + std::to_string(first) + "+ alone took another path (" + p.forward_path + "/" +
             p.backward_path + ")");
  }
  if (!rows.empty()) rows_within_twice_the_bound(v, k, c, batch, pieces, rows);
  // dgamma sums over every slot's rows: no piece has it, the exact oracle does (a slot that
  // keeps only its last row, or starts from what its table row held, is caught here)
  const auto exact = exact_backward_of(c, c.dy, k.capabilities());
  v.oracle_vector("dgamma", c.gamma_dtype, batch.dgamma, exact.dgamma, exact.dgamma_bound, exact.columns, true);
  v.finish(o, "the rows past the first " + std::to_string(slots) + " (the backward's slots) of a batch of " +
                  std::to_string(c.m) + " must give the bits they give in pieces of at most that many rows, "
                  "and its dgamma must match the exact oracle");
}

}  // namespace

// ---- what properties need of a kernel ----

// the sweep runs the backward where there is one: a kernel with a backward whose every declared
// operation is an fp32-sum residual add (its backward not judged) has no operation to sweep
std::string needs_a_sweep_operation(const capabilities& caps) {
  return caps.backward() ? needs_backward(caps) : "";
}

std::string needs_layouts(const capabilities& caps) {
  return caps.layouts != 0 ? "" : "it compares strided views with dense ones: the kernel declares dense operands only";
}

std::string needs_any_epsilon(const capabilities& caps) {
  return caps.any_epsilon() ? "" : "it scales epsilon by 4^k: the kernel's epsilon is fixed";
}

std::string needs_tall_backward(const capabilities& caps) {
  if (!caps.backward()) return needs_backward(caps);
  if ((caps.max_n > 0 && caps.max_n < 1900) || (caps.max_elements > 0 && caps.max_elements < (std::int64_t(1) << 22)))
    return "it needs 4M-element batches of rows up to 1900 long";
  return "";
}

// the contract property lives in contract.cpp
property contract_property();
std::vector<property> variant_properties();
std::vector<property> quantized_properties();
std::vector<property> launch_properties();
property access_property();

// a property whose generator draws every operation the kernel declares (abi.h "Variants")
property drawing_variants(property p) {
  p.variants = true;
  return p;
}
// and quantized outputs too
property drawing_quantized(property p) {
  p.variants = p.quantized = true;
  return p;
}

// a class only operations without a quantized output reach (the forward's rows past 4096
// vectors: a quantized output's vector paths end there, path_table.hpp), or only those with
// one (the 256-thread rows), or without an N multiple (ragged rows)
std::string needs_unquantized(const capabilities& caps) {
  return std::any_of(caps.operations.begin(), caps.operations.end(), [](const nc_operation& op) { return !quantizes(op); })
             ? ""
             : "every operation drawn is a quantized output (its vector paths end at 4096 vectors)";
}
std::string needs_quantized(const capabilities& caps) {
  return std::any_of(caps.operations.begin(), caps.operations.end(), [](const nc_operation& op) { return quantizes(op); })
             ? ""
             : "no operation drawn has a quantized output (the forward's rows take 512 threads there)";
}
std::string needs_tiny_rows(const capabilities& caps) {
  return std::any_of(caps.operations.begin(), caps.operations.end(),
                     [](const nc_operation& op) { return columns_multiple(op) <= 64; })
             ? ""
             : "every operation drawn takes N a multiple of a quantization group past 64 elements";
}
std::string needs_any_n(const capabilities& caps) {
  return std::any_of(caps.operations.begin(), caps.operations.end(),
                     [](const nc_operation& op) { return columns_multiple(op) == 1; })
             ? ""
             : "every operation drawn takes N a multiple of its quantization group";
}

// every cell of the dispatch-boundary sweep in every case, where the kernel serves the dtype
std::vector<intended_share> boundary_intents() {
  std::vector<intended_share> out;
  for (const std::int64_t width : {4, 8})
    for (const boundary_cell& cell : boundary_cells(width)) {
      const bool bytes4 = width == 4;
      out.push_back({cell.name, "hit", 0.99, [bytes4, cell](const capabilities& caps) -> std::string {
                       const std::uint32_t pairs = bytes4 ? NC_PAIR_F32 : NC_PAIRS_ALL & ~std::uint32_t(NC_PAIR_F32);
                       if (!(caps.dtype_pairs & pairs)) return "the kernel serves no x of that size";
                       return cell_needs(cell, caps);
                     }});
    }
  return out;
}

const std::vector<property>& all_properties() {
  static const std::vector<property> properties = [] {
    using intents = std::vector<intended_share>;
    const intents every_dtype = {{"dtype", "fp32", 0.08}, {"dtype", "fp16", 0.08}, {"dtype", "bf16", 0.08},
                                 {"dtype", "fp16+fp32 gamma", 0.08}, {"dtype", "bf16+fp32 gamma", 0.08}};
    const intents every_alignment = {{"alignment", "aligned", 0.12}, {"alignment", "ragged n", 0.025, needs_any_n},
                                     {"alignment", "misaligned", 0.15}, {"alignment", "column strided", 0.05},
                                     {"alignment", "column major", 0.012}};
    const intents every_size = {{"size", "tiny", 0.06, needs_tiny_rows}, {"size", "small", 0.3}, {"size", "large", 0.04}};
    // the shipped kernel's paths (kernels/src/rmsnorm_dispatch.cuh); each minimum is about a
    // third of the share the generators give it
    const intents forward_paths = {
        {"forward path", "vector-warp", 0.08},         {"forward path", "vector-block128", 0.03},
        {"forward path", "vector-block256", 0.0008, needs_quantized}, {"forward path", "vector-block512", 0.006},
        {"forward path", "vector-block1024", 0.01, needs_unquantized}, {"forward path", "vector-reload", 0.003, needs_unquantized},
        {"forward path", "strided-warp", 0.15},        {"forward path", "strided-block", 0.06}};
    const intents backward_paths = {
        {"backward path", "vector-warp", 0.05},      {"backward path", "vector-block128", 0.04},
        {"backward path", "vector-block256", 0.006}, {"backward path", "vector-block512", 0.007},
        {"backward path", "strided-warp", 0.15},     {"backward path", "strided-block", 0.07}};
    const auto join = [](std::initializer_list<intents> parts) {
      intents all;
      for (const intents& p : parts) all.insert(all.end(), p.begin(), p.end());
      return all;
    };
    std::vector<property> list = {
        drawing_quantized({"y_and_r_match_the_exact_oracle", {"forward"}, 4500, differential_cases(false), check_forward_differential,
         join({every_dtype, every_alignment, every_size, forward_paths,
               {{"size", "empty", 0.005}, {"domain", "every row in", 0.5}}})}),
        // tall batches: the backward grid's slots each take several rows (dgamma's partial sums,
        // the row loops); 4% of the wide cases
        drawing_variants({"dx_matches_the_exact_oracle", {"backward"}, 3750, differential_cases(true, 4), check_dx_differential,
         join({every_dtype, every_alignment, every_size, backward_paths,
               {{"domain", "every row in", 0.5}, {"size", "tall", 0.01}}}),
         "", 0, needs_backward}),
        drawing_variants({"dgamma_matches_the_exact_oracle", {"gamma"}, 3000, differential_cases(true, 4), check_dgamma_differential,
         join({every_dtype, every_size, backward_paths,
               {{"rows", "0", 0.005}, {"rows", "1", 0.05}, {"rows", "2-16", 0.1}, {"rows", "17+", 0.2},
                {"size", "tall", 0.01}}}),
         "", 0, needs_backward}),
        // early in the order, cheap (1000 cases in about a second on simt): a mutation run stops a
        // mutant's suite at its first kill, and a contract mutant's suite ran every property first
        contract_property(),
        // cheap too (400 cases in about 7 s on simt), and the only killer of a read whose value is
        // never used (launch_properties.cpp)
        access_property(),
        // two backward calls a case, the second on the workspace the first left dirty (early in
        // the order: a first-kill mutation run gets its mutants here in 25 s, not 70 s; the few
        // others that get this far pay 6 s)
        drawing_variants({"dx_and_dgamma_match_the_oracle_on_a_reused_workspace", {"backward", "gamma"}, 200,
         reused_workspace_cases(), check_reused_workspace,
         join({every_dtype,
               {{"workspace", "the whole block: more than asked, every byte left", 0.1, {},
                 std::pair{std::string("earlier call's workspace"), std::string("none asked")}},
                {"workspace", "what it asked, every byte left", 0.1, {},
                 std::pair{std::string("earlier call's workspace"), std::string("none asked")}},
                {"left partials", "finite", 0.5, {},
                 std::pair{std::string("earlier call's workspace"), std::string("none asked")}},
                {"backward slots", "fewer rows than table rows", 0.02},
                {"backward slots", "loop", 0.1}}}),
         "", 0, needs_backward}),
        {"scaling_x_by_2_to_the_k_keeps_y_and_scales_dx", {"forward", "backward"}, 2250, scaling_cases(),
         check_scaling, join({every_dtype, {{"k", "positive", 0.3}, {"k", "negative", 0.3}}}), "", 0,
         needs_any_epsilon},
        {"a_row_gives_the_same_bits_alone_as_in_its_batch", {"forward", "backward"}, 2250, batch_cases(),
         check_batch_invariance, join({every_dtype, every_alignment, {{"row", "inside", 0.3}}})},
        {"a_strided_view_gives_the_bits_of_its_contiguous_copy", {"forward", "backward", "gamma"}, 2250,
         layout_cases(), check_layout_invariance,
         join({every_dtype, {{"paths", "same", 0.3}, {"paths", "forward differs", 0.1},
                             {"alignment", "misaligned", 0.15}, {"alignment", "column strided", 0.08}}}),
         "", 0, needs_layouts},
        {"two_runs_give_bit_identical_outputs", {"forward", "backward", "gamma"}, 1500, plain_cases(),
         check_determinism, join({every_dtype, forward_paths})},
        {"permuting_rows_permutes_y_r_and_dx", {"forward", "backward", "gamma"}, 1500, permutation_cases(),
         check_permutation, every_dtype},
        {"sum_of_x_times_dx_matches_its_closed_form", {"backward"}, 2250, plain_cases(), check_sum_x_dx,
         join({every_dtype, {{"epsilon", "zero", 0.05}, {"domain", "every row in", 0.5}}}), "", 0, needs_backward},
        {"dx_and_dgamma_are_linear_in_dy", {"backward", "gamma"}, 1500, linearity_cases(), check_linearity,
         every_dtype, "", 0, needs_backward},
        {"a_non_finite_row_leaves_every_other_row_unchanged", {"forward", "backward"}, 2250, isolation_cases(),
         check_isolation, join({every_dtype, {{"non-finite rows", "one", 0.2}, {"non-finite rows", "several", 0.1}}})},
        // a case is a sweep of about 130 calls: 3 cases whatever --cases asks (every cell in each)
        drawing_variants({"the_dispatch_boundaries_match_the_exact_oracle", {"forward", "backward", "gamma"}, 3,
                          boundary_cases(), check_dispatch_boundaries, boundary_intents(), "", 3,
                          needs_a_sweep_operation}),
        {"a_batch_taller_than_the_grid_gives_its_pieces_bits", {"forward", "backward"}, 6,
         tall_wide_cases(), check_tall_batch, {{"backward slots", "loop", 0.85}},
         "up to 4M elements a case; the simt grid of 16 blocks already loops in every other property", 6,
         needs_tall_backward},
    };
    // the variants' own properties (variant_properties.cpp)
    for (property& p : variant_properties()) list.push_back(std::move(p));
    // the quantized outputs' own (quantized_properties.cpp)
    for (property& p : quantized_properties()) list.push_back(std::move(p));
    // the launch's: grids, late inputs (launch_properties.cpp)
    for (property& p : launch_properties()) list.push_back(std::move(p));
    return list;
  }();
  return properties;
}

const property* find_property(const std::string& name) {
  for (const property& p : all_properties())
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace nc::harness
