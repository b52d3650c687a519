// The isolation family: a NaN or Inf in one row leaves every other row's bits alone.
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

// a: the outputs of c's forward and backward; the run it is compared with is made here
void judge_isolation(const kernel& k, const norm_case& c, const outputs& a, observation& o) {
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
  const outputs b = execute(k, clean, calls::forward_and_backward);
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

}  // namespace

property isolation_property() {
  return judging(calls::forward_and_backward, judge_isolation,
                 {"a_non_finite_row_leaves_every_other_row_unchanged", {"forward", "backward"}, 2250, isolation_cases(),
                  nullptr, join({every_dtype(), {{"non-finite rows", "one", 0.2}, {"non-finite rows", "several", 0.1}}})});
}

}  // namespace nc::harness
