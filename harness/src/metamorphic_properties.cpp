// The metamorphic family: scaling by 2^k, batch invariance, layout invariance, determinism,
// row permutation, the closed form of Σ x·dx, linearity of the backward in dy. Each compares a
// kernel with itself, so it judges a kernel the oracle's bounds leave room for.
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

// row i of c alone
norm_case alone(const norm_case& c, std::int64_t i, const capabilities& caps) { return piece_of(c, i, 1, caps); }

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

std::string needs_layouts(const capabilities& caps) {
  return caps.layouts != 0 ? "" : "it compares strided views with dense ones: the kernel declares dense operands only";
}

std::string needs_any_epsilon(const capabilities& caps) {
  return caps.any_epsilon() ? "" : "it scales epsilon by 4^k: the kernel's epsilon is fixed";
}

}  // namespace

std::vector<property> metamorphic_properties() {
  return {
        {"scaling_x_by_2_to_the_k_keeps_y_and_scales_dx", {"forward", "backward"}, 2250, scaling_cases(),
         check_scaling, join({every_dtype(), {{"k", "positive", 0.3}, {"k", "negative", 0.3}}}), "", 0,
         needs_any_epsilon},
        {"a_row_gives_the_same_bits_alone_as_in_its_batch", {"forward", "backward"}, 2250, batch_cases(),
         check_batch_invariance, join({every_dtype(), every_alignment(), {{"row", "inside", 0.3}}})},
        {"a_strided_view_gives_the_bits_of_its_contiguous_copy", {"forward", "backward", "gamma"}, 2250,
         layout_cases(), check_layout_invariance,
         join({every_dtype(), {{"paths", "same", 0.3}, {"paths", "forward differs", 0.1},
                             {"alignment", "misaligned", 0.15}, {"alignment", "column strided", 0.08}}}),
         "", 0, needs_layouts},
        {"two_runs_give_bit_identical_outputs", {"forward", "backward", "gamma"}, 1500, plain_cases(),
         check_determinism, join({every_dtype(), forward_paths()})},
        {"permuting_rows_permutes_y_r_and_dx", {"forward", "backward", "gamma"}, 1500, permutation_cases(),
         check_permutation, every_dtype()},
        {"sum_of_x_times_dx_matches_its_closed_form", {"backward"}, 2250, plain_cases(), check_sum_x_dx,
         join({every_dtype(), {{"epsilon", "zero", 0.05}, {"domain", "every row in", 0.5}}}), "", 0, needs_backward},
        {"dx_and_dgamma_are_linear_in_dy", {"backward", "gamma"}, 1500, linearity_cases(), check_linearity,
         every_dtype(), "", 0, needs_backward}};
}

}  // namespace nc::harness
