#include "normcheck/harness/generators.hpp"
#include "normcheck/harness/judge.hpp"
#include "normcheck/path_table.hpp"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <numbers>
#include <numeric>
#include <limits>
#include <set>
#include <span>
#include <tuple>

namespace nc::harness {

value_mix only(row_kind kind) {
  value_mix mix{};
  mix[std::size_t(kind)] = 1;
  return mix;
}

namespace {

// ---- a keyed random source: the value at (seed, a, b) never depends on what else was drawn ----
std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint64_t key(std::uint64_t seed, std::uint64_t a, std::uint64_t b) {
  return mix64(seed ^ mix64(a * 0x9e3779b97f4a7c15ull + 1) ^ mix64(b * 0xd1b54a32d192ed03ull + 2));
}

double unit(std::uint64_t k) { return double(k >> 11) * 0x1p-53; }

double gaussian(std::uint64_t k) {
  const double u1 = unit(mix64(k)), u2 = unit(mix64(k ^ 0x5555555555555555ull));
  return std::sqrt(-2.0 * std::log1p(-u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// row-level keys live in a column index no row reaches
constexpr std::uint64_t row_slot(std::uint64_t k) { return ~std::uint64_t(0) - k; }

// ---- the bit fields of a dtype ----
struct bit_fields {
  int exponent_bits, mantissa_bits;
  std::uint32_t sign() const { return 1u << (exponent_bits + mantissa_bits); }
  std::uint32_t mantissa_mask() const { return (1u << mantissa_bits) - 1; }
  std::uint32_t exponent_field(std::uint32_t b) const { return (b >> mantissa_bits) & ((1u << exponent_bits) - 1); }
  std::uint32_t bias() const { return (1u << (exponent_bits - 1)) - 1; }
  std::uint32_t one() const { return bias() << mantissa_bits; }
};

bit_fields fields_of(nc_dtype t) {
  switch (t) {
    case NC_F16: return {5, 10};
    case NC_BF16: return {8, 7};
    default: return {8, 23};
  }
}

std::uint32_t with_sign(nc_dtype t, std::uint32_t bits, bool negative) {
  return negative ? bits | fields_of(t).sign() : bits;
}

std::uint32_t element(nc_dtype t, row_kind kind, std::uint64_t seed, std::int64_t i, std::int64_t j, std::int64_t n) {
  const oracle::format& f = oracle::format_of(oracle_type(t));
  const std::uint64_t k = key(seed, std::uint64_t(i), std::uint64_t(j));
  const bool negative = (mix64(k) >> 63) != 0;
  const auto magnitude = [&](int lo, int hi) {  // ±(1 + u)·2^e, e uniform in [lo, hi], at most max_finite
    const int e = lo + int(k % std::uint64_t(hi - lo + 1));
    const double v = std::min(std::ldexp(1.0 + unit(mix64(k + 7)), e), f.max_finite);
    return with_sign(t, bits_of(t, v), negative);
  };
  switch (kind) {
    case row_kind::normal: return bits_of(t, gaussian(k));
    case row_kind::ones: return bits_of(t, 1.0);
    case row_kind::near_one: return bits_of(t, 1.0 + 0.25 * gaussian(k));
    case row_kind::constant: return bits_of(t, gaussian(key(seed, std::uint64_t(i), row_slot(0))));
    case row_kind::one_hot: {
      if (std::int64_t(key(seed, std::uint64_t(i), row_slot(1)) % std::uint64_t(n)) != j) return 0;
      const std::uint32_t bits = bits_of(t, 4.0 * gaussian(k));
      return value_of(t, bits) == 0 ? bits_of(t, 1.0) : bits;
    }
    case row_kind::zero: return 0;
    case row_kind::signed_zero:
      return (k & 1) != 0 ? with_sign(t, 0, (k & 2) != 0) : bits_of(t, gaussian(mix64(k)));
    case row_kind::powers_of_two: return with_sign(t, bits_of(t, std::ldexp(1.0, int(k % 13) - 6)), negative);
    case row_kind::wide_range: return magnitude(std::max(f.min_exponent, -40), std::min(f.max_exponent, 40));
    case row_kind::sumsq_overflows_fp16: return magnitude(8, 15);
    case row_kind::sumsq_beyond_fp32: return t == NC_F16 ? magnitude(8, 15) : magnitude(64, 100);
    case row_kind::subnormal: {
      const bit_fields b = fields_of(t);
      return with_sign(t, 1 + std::uint32_t(k % b.mantissa_mask()), negative);
    }
    case row_kind::grid: {
      const std::int64_t limit = std::int64_t(1) << (f.precision - 2);
      return bits_of(t, double(std::int64_t(k % std::uint64_t(2 * limit - 1)) - (limit - 1)) / 16.0);
    }
    case row_kind::non_finite: {
      const std::uint64_t spots = 1 + key(seed, std::uint64_t(i), row_slot(2)) % 3;
      for (std::uint64_t s = 0; s < spots; ++s) {
        const std::uint64_t spot = key(seed, std::uint64_t(i), row_slot(3 + s));
        if (std::int64_t(spot % std::uint64_t(n)) == j) {
          const double special[] = {NAN, INFINITY, -INFINITY};
          return bits_of(t, special[(spot >> 32) % 3]);
        }
      }
      return bits_of(t, gaussian(k));
    }
  }
  return 0;
}

row_kind kind_of_row(const value_mix& mix, std::uint64_t seed, std::int64_t i) {
  int total = 0;
  for (int w : mix) total += w;
  int pick = int(key(seed, std::uint64_t(i), row_slot(10)) % std::uint64_t(total));
  for (std::size_t k = 0; k < row_kind_count; ++k) {
    if (pick < mix[k]) return row_kind(k);
    pick -= mix[k];
  }
  return row_kind::normal;
}

// ---- value shrinking: every candidate lowers an element's rank, so shrinking terminates ----

// 0: ±0; 1: ±1; 2: another power of two (or a subnormal with one bit); 3: other finite; 4: NaN/Inf
int rank(nc_dtype t, std::uint32_t bits) {
  const bit_fields b = fields_of(t);
  const std::uint32_t magnitude = bits & ~b.sign();
  const std::uint32_t exponent = b.exponent_field(bits), mantissa = bits & b.mantissa_mask();
  if (magnitude == 0) return 0;
  if (exponent == (1u << b.exponent_bits) - 1) return 4;
  if (magnitude == b.one()) return 1;
  if ((exponent != 0 && mantissa == 0) || (exponent == 0 && std::popcount(mantissa) == 1)) return 2;
  return 3;
}

std::uint32_t to_one(nc_dtype t, std::uint32_t bits) {
  const bit_fields b = fields_of(t);
  return rank(t, bits) >= 2 ? (bits & b.sign()) | b.one() : bits;
}

std::uint32_t to_power_of_two(nc_dtype t, std::uint32_t bits) {
  if (rank(t, bits) != 3) return bits;
  const bit_fields b = fields_of(t);
  const std::uint32_t mantissa = bits & b.mantissa_mask();
  if (b.exponent_field(bits) != 0) return bits & ~b.mantissa_mask();
  return (bits & b.sign()) | std::bit_floor(mantissa);
}

std::vector<std::uint32_t> element_candidates(nc_dtype t, std::uint32_t bits) {
  const bit_fields b = fields_of(t);
  const int r = rank(t, bits);
  const std::uint32_t sign = bits & b.sign(), mantissa = bits & b.mantissa_mask();
  std::vector<std::uint32_t> out;
  if (r >= 1) out.push_back(0);
  if (r >= 2) out.push_back(sign | b.one());
  if (r == 3) {
    out.push_back(to_power_of_two(t, bits));
    if (std::popcount(mantissa) >= 2) out.push_back(bits & ~(mantissa & -mantissa));
  }
  const std::uint32_t exponent = b.exponent_field(bits);
  if (r == 2 && exponent != 0) {
    const int e = int(exponent) - int(b.bias());
    if (std::abs(e) > 1) out.push_back(sign | (std::uint32_t(int(b.bias()) + e / 2) << b.mantissa_bits));
  }
  return out;
}

using values = std::vector<std::uint32_t>;

values map_all(const values& v, nc_dtype t, std::uint32_t (*f)(nc_dtype, std::uint32_t)) {
  values w(v);
  for (auto& e : w) e = f(t, e);
  return w;
}

rc::Seq<values> value_shrinks(nc_dtype t, const values& v) {
  const auto changed = [v](const values& w) { return w != v; };
  auto whole = rc::seq::filter(rc::seq::just(map_all(v, t, to_one), map_all(v, t, to_power_of_two)), changed);
  std::vector<std::size_t> chunk_sizes;
  for (std::size_t s = v.size() / 2; s >= 1 && s * 64 >= v.size(); s /= 2) chunk_sizes.push_back(s);
  auto chunks = rc::seq::filter(
      rc::seq::mapcat(rc::seq::fromContainer(chunk_sizes),
                      [v, t](std::size_t s) {
                        return rc::seq::map(rc::seq::range<std::size_t>(0, (v.size() + s - 1) / s), [v, t, s](std::size_t c) {
                          values w(v);
                          for (std::size_t e = c * s; e < std::min(v.size(), (c + 1) * s); ++e) w[e] = to_one(t, w[e]);
                          return w;
                        });
                      }),
      changed);
  constexpr std::size_t element_shrink_limit = 512;
  if (v.size() > element_shrink_limit) return rc::seq::concat(std::move(whole), std::move(chunks));
  auto each = rc::shrink::eachElement(v, [t](std::uint32_t bits) { return rc::seq::fromContainer(element_candidates(t, bits)); });
  return rc::seq::concat(std::move(whole), std::move(chunks), std::move(each));
}

// the rows of x and dy together, so that shrinking can remove rows from both
struct row_block {
  std::int64_t n = 1;
  std::int64_t min_rows = 0;
  values x, dy;
  std::int64_t rows() const { return std::int64_t(x.size()) / n; }
};

row_block without_rows(const row_block& b, std::int64_t first, std::int64_t count) {
  row_block out = b;
  const auto cut = [&](values& v) { v.erase(v.begin() + first * b.n, v.begin() + (first + count) * b.n); };
  cut(out.x), cut(out.dy);
  return out;
}

// removing halves, quarters, ... and then single rows (never below min_rows), then the values
// of x, then those of dy
rc::Seq<row_block> row_block_shrinks(nc_dtype t, const row_block& b) {
  std::vector<std::pair<std::int64_t, std::int64_t>> cuts;  // (first row, rows)
  const std::int64_t m = b.rows(), keep = std::max<std::int64_t>(b.min_rows, 1);
  for (std::int64_t size = m / 2; size >= 1; size /= 2)
    for (std::int64_t first = 0; first + size <= m; first += size)
      if (m - size >= keep) cuts.push_back({first, size});
  auto removals = rc::seq::map(rc::seq::fromContainer(cuts),
                               [b](const std::pair<std::int64_t, std::int64_t>& c) { return without_rows(b, c.first, c.second); });
  auto xs = rc::seq::map(value_shrinks(t, b.x), [b](values&& v) {
    row_block out = b;
    out.x = std::move(v);
    return out;
  });
  auto dys = rc::seq::map(value_shrinks(t, b.dy), [b](values&& v) {
    row_block out = b;
    out.dy = std::move(v);
    return out;
  });
  return rc::seq::concat(std::move(removals), std::move(xs), std::move(dys));
}

rc::Gen<row_block> gen_row_block(nc_dtype t, std::int64_t rows, std::int64_t cols, std::int64_t min_rows,
                                 const value_mix& x_mix, const value_mix& dy_mix) {
  return [=](const rc::Random& random, int size) {
    rc::Random r(random);
    row_block b;
    b.n = cols, b.min_rows = min_rows;
    b.x = gen_values(t, rows, cols, x_mix)(r.split(), size).value();
    b.dy = gen_values(t, rows, cols, dy_mix)(r.split(), size).value();
    return rc::shrinkable::shrinkRecur(std::move(b), [t](const row_block& v) { return row_block_shrinks(t, v); });
  };
}

// ---- shapes ----

// M before it is fitted to the element budget: 0, a listed count or uniform in [1, 300]
rc::Gen<std::int64_t> gen_rows(int empty_percent, std::int64_t min_rows) {
  static const std::int64_t listed[] = {1,  2,  3,  4,   7,   8,   15,  16,  17,  31,  32,  33,
                                        63, 64, 65, 127, 128, 129, 131, 132, 133, 263, 264, 265};
  const std::int64_t floor = std::max<std::int64_t>(1, min_rows);
  return [=](const rc::Random& random, int) {
    rc::Random r(random);
    const std::uint64_t a = r.next() % 100, b = r.next();
    if (a < std::uint64_t(empty_percent)) return rc::shrinkable::just(std::int64_t(0));
    std::int64_t m = a < 60 ? listed[b % std::size(listed)] : 1 + std::int64_t(b % 300);
    m = std::max(m, floor);
    return rc::shrinkable::shrinkRecur(m, [floor](std::int64_t v) { return rc::shrink::towards<std::int64_t>(v, floor); });
  };
}

// ---- layouts ----

struct matrix_spec {
  std::size_t kind;  // 0 contiguous, 1 aligned but padded, 2 offset, 3 padded, 4 offset and padded,
                     // 5 column strided, 6 column major
  std::int64_t offset, pad, step;
};

struct vector_spec {
  std::size_t kind;  // 0 contiguous, 1 offset, 2 strided, 3 offset and strided
  std::int64_t offset, stride;
};

rc::Gen<matrix_spec> gen_matrix_spec() {
  return rc::gen::exec([] {
    matrix_spec s{};
    s.kind = *gen_weighted_index({0, 3, 3, 3, 2, 3, 1});
    s.offset = *gen_uniform(1, 15, 1);
    s.pad = *gen_uniform(1, 17, 1);
    s.step = *gen_uniform(2, 3, 2);
    return s;
  });
}

rc::Gen<vector_spec> gen_vector_spec() {
  return rc::gen::exec([] {
    vector_spec s{};
    s.kind = *gen_weighted_index({0, 3, 2, 1});
    s.offset = *gen_uniform(1, 15, 1);
    s.stride = *gen_uniform(2, 3, 2);
    return s;
  });
}

matrix_layout materialize(const matrix_spec& s, std::int64_t m, std::int64_t n) {
  switch (s.kind) {
    // 16-byte rows even when n is not a multiple of the vector width: the layout that sends a
    // ragged row to the vector path's precondition on n alone
    case 1: return {8 * (s.offset % 2), (n + 7) / 8 * 8 + 8 * (1 + s.pad % 3), 1};
    case 2: return {s.offset, n, 1};
    case 3: return {0, n + s.pad, 1};
    case 4: return {s.offset, n + s.pad, 1};
    case 5: return {s.offset % 4, (n - 1) * s.step + 1 + s.pad % 4, s.step};
    case 6: return {s.offset % 4, 1, std::max<std::int64_t>(m, 1) + s.pad % 4};
    default: return {0, n, 1};
  }
}

vector_layout materialize(const vector_spec& s) {
  switch (s.kind) {
    case 1: return {s.offset, 1};
    case 2: return {0, s.stride};
    case 3: return {s.offset, s.stride};
    default: return {0, 1};
  }
}

const std::pair<nc_dtype, nc_dtype> dtype_pairs[] = {
    {NC_F32, NC_F32}, {NC_F16, NC_F16}, {NC_BF16, NC_BF16}, {NC_F16, NC_F32}, {NC_BF16, NC_F32}};

}  // namespace

rc::Gen<std::size_t> gen_weighted_index(std::vector<int> weights) {
  return [weights](const rc::Random& random, int) {
    int total = 0;
    for (int w : weights) total += w;
    int pick = int(rc::Random(random).next() % std::uint64_t(total));
    std::size_t index = 0;
    while (pick >= weights[index]) pick -= weights[index++];
    return rc::shrinkable::shrinkRecur(index, [](std::size_t i) { return rc::shrink::towards<std::size_t>(i, 0); });
  };
}

rc::Gen<std::int64_t> gen_uniform(std::int64_t lo, std::int64_t hi, std::int64_t target) {
  return [=](const rc::Random& random, int) {
    const std::int64_t v = lo + std::int64_t(rc::Random(random).next() % std::uint64_t(hi - lo + 1));
    return rc::shrinkable::shrinkRecur(v, [target](std::int64_t x) { return rc::shrink::towards<std::int64_t>(x, target); });
  };
}

namespace {

// n -> smaller n with the same residue modulo 8
rc::Seq<std::int64_t> column_shrinks(std::int64_t n) {
  const std::int64_t base = n % 8 == 0 ? 8 : n % 8;
  return rc::seq::map(rc::shrink::towards<std::int64_t>((n - base) / 8, 0),
                      [base](std::int64_t q) { return base + 8 * q; });
}

}  // namespace

static std::vector<std::int64_t> path_limits() {
  std::set<std::int64_t> out;
  for (const auto table : {std::span<const path_limit>(forward_vector_paths), std::span<const path_limit>(quantized_vector_paths),
                           std::span<const path_limit>(backward_vector_paths)})
    for (const path_limit& p : table)
      if (p.max_vectors > 0) out.insert(p.max_vectors);
  return {out.begin(), out.end()};
}

namespace {
// N down to the declared multiple (abi.h nc_capabilities.n_multiple: llm.c's N % 8 == 0), never
// below it; every column count a generator draws goes through here, shrinks included
rc::Gen<std::int64_t> declared_multiple(rc::Gen<std::int64_t> columns, std::int64_t multiple) {
  const std::int64_t k = std::lcm(drawing_domain().n_multiple, std::max<std::int64_t>(multiple, 1));
  if (k <= 1) return columns;
  return rc::gen::map(std::move(columns), [k](std::int64_t n) { return std::max(k, n - n % k); });
}
}  // namespace

rc::Gen<std::int64_t> gen_columns(nc_dtype t, std::int64_t max_n, std::int64_t multiple) {
  return declared_multiple(gen_any_columns(t, max_n), multiple);
}

rc::Gen<std::int64_t> gen_long_columns(nc_dtype t, std::int64_t max_n, std::int64_t multiple) {
  return declared_multiple(gen_any_long_columns(t, max_n), multiple);
}

std::int64_t columns_multiple(const nc_operation& op) {
  return quantizes(op) && op.scale == NC_SCALE_PER_GROUP ? std::max<std::int64_t>(op.group, 1) : 1;
}

rc::Gen<std::int64_t> gen_any_columns(nc_dtype t, std::int64_t max_n) {
  std::vector<std::int64_t> listed;
  for (std::int64_t n : interesting_columns(t))
    if (n <= max_n) listed.push_back(n);
  const std::int64_t w = vector_width_of(t);
  return [=](const rc::Random& random, int) {
    rc::Random r(random);
    const std::uint64_t a = r.next() % 20, b = r.next();
    std::int64_t n = 1;
    if (a < 11) n = listed[b % listed.size()];
    else if (a < 14) n = 1 + std::int64_t(b % std::uint64_t(std::min<std::int64_t>(64, max_n)));
    else if (a < 18 && max_n >= w) n = w * (1 + std::int64_t(b % std::uint64_t(max_n / w)));
    else n = 1 + std::int64_t(b % std::uint64_t(max_n));
    return rc::shrinkable::shrinkRecur(n, &column_shrinks);
  };
}

rc::Gen<std::int64_t> gen_any_long_columns(nc_dtype t, std::int64_t max_n) {
  const std::int64_t w = vector_width_of(t), floor = 4096;
  std::vector<std::int64_t> thresholds;
  for (const std::int64_t vectors : path_limits())
    for (std::int64_t n : {vectors * w, vectors * w + w})
      if (n > floor && n <= max_n) thresholds.push_back(n);
  return [=](const rc::Random& random, int) {
    rc::Random r(random);
    const std::uint64_t a = r.next() % 10, b = r.next();
    std::int64_t n = floor + w * (1 + std::int64_t(b % std::uint64_t(std::max<std::int64_t>(1, (max_n - floor) / w))));
    if (a < 6 && !thresholds.empty()) n = thresholds[b % thresholds.size()];
    return rc::shrinkable::shrinkRecur(std::min(n, max_n), &column_shrinks);
  };
}

rc::Gen<std::uint64_t> gen_seed() {
  return [](const rc::Random& random, int) { return rc::shrinkable::just(rc::Random(random).next()); };
}

std::vector<std::int64_t> interesting_columns(nc_dtype x_dtype) {
  const std::int64_t w = vector_width_of(x_dtype);
  std::set<std::int64_t> n = {1, 2, 3, 31, 32, 33, 257, w - 1, w, w + 1, 2 * w - 1, 2 * w + 1};
  for (int k = 2; k <= 16; ++k) n.insert({(std::int64_t(1) << k) - 1, std::int64_t(1) << k, (std::int64_t(1) << k) + 1});
  // threads per block (a warp, the blocks of the shipped kernels) times small multiples
  for (std::int64_t threads : {32, 128, 256, 512, 1024})
    for (std::int64_t times : {1, 2, 3, 4, 8}) n.insert({threads * times - 1, threads * times, threads * times + 1});
  // vectors per row where the shipped kernel switches path (path_table.hpp); one vector and
  // one element either side
  for (const std::int64_t v : path_limits()) n.insert({v * w - w, v * w - 1, v * w, v * w + 1, v * w + w});
  n.erase(0);
  return {n.begin(), n.end()};
}

case_profile case_profile::differential() {
  case_profile p;
  using k = row_kind;
  const auto mix = [](std::initializer_list<std::pair<row_kind, int>> weights) {
    value_mix m{};
    for (auto [kind, w] : weights) m[std::size_t(kind)] = w;
    return m;
  };
  p.x = mix({{k::normal, 30}, {k::ones, 3}, {k::near_one, 3}, {k::constant, 5}, {k::one_hot, 5}, {k::zero, 4},
             {k::signed_zero, 4}, {k::powers_of_two, 8}, {k::wide_range, 12}, {k::sumsq_overflows_fp16, 8},
             {k::sumsq_beyond_fp32, 2}, {k::subnormal, 5}, {k::grid, 4}});
  p.dy = mix({{k::normal, 50}, {k::ones, 5}, {k::constant, 5}, {k::one_hot, 5}, {k::zero, 5}, {k::signed_zero, 3},
              {k::powers_of_two, 8}, {k::wide_range, 8}, {k::sumsq_overflows_fp16, 4}, {k::subnormal, 3}, {k::grid, 4}});
  p.gamma = mix({{k::ones, 30}, {k::near_one, 35}, {k::normal, 15}, {k::powers_of_two, 8}, {k::signed_zero, 5},
                 {k::wide_range, 5}, {k::constant, 2}});
  p.epsilons = {{50, 1e-6f}, {12, 0.0f},  {5, 1e-30f}, {4, FLT_MIN},
                {3, 1e-40f}, {10, 1.0f}, {8, 1e3f},  {8, 1e10f}};
  return p;
}

case_profile case_profile::document() {
  case_profile p = differential();
  p.x = only(row_kind::normal);
  p.dy = only(row_kind::normal);
  p.gamma = only(row_kind::near_one);
  p.epsilons = {{1, 1e-6f}};
  return p;
}

case_profile case_profile::well_scaled() {
  case_profile p = differential();
  using k = row_kind;
  value_mix x{}, dy{}, gamma{};
  x[std::size_t(k::normal)] = 40, x[std::size_t(k::ones)] = 5, x[std::size_t(k::near_one)] = 5;
  x[std::size_t(k::constant)] = 10, x[std::size_t(k::one_hot)] = 10, x[std::size_t(k::powers_of_two)] = 15;
  x[std::size_t(k::grid)] = 10, x[std::size_t(k::signed_zero)] = 5, x[std::size_t(k::zero)] = 5;
  dy[std::size_t(k::normal)] = 60, dy[std::size_t(k::ones)] = 10, dy[std::size_t(k::constant)] = 10;
  dy[std::size_t(k::powers_of_two)] = 10, dy[std::size_t(k::grid)] = 10;
  gamma[std::size_t(k::ones)] = 30, gamma[std::size_t(k::near_one)] = 40, gamma[std::size_t(k::normal)] = 20;
  gamma[std::size_t(k::powers_of_two)] = 10;
  p.x = x, p.dy = dy, p.gamma = gamma;
  p.epsilons = {{50, 1e-6f}, {20, 0.0f}, {15, 1.0f}, {15, 1e-3f}};
  return p;
}

case_profile case_profile::non_finite() {
  case_profile p = differential();
  using k = row_kind;
  p.x = {};
  p.x[std::size_t(k::normal)] = 55, p.x[std::size_t(k::non_finite)] = 30, p.x[std::size_t(k::constant)] = 5;
  p.x[std::size_t(k::powers_of_two)] = 5, p.x[std::size_t(k::zero)] = 5;
  p.dy[std::size_t(k::non_finite)] = 10;
  p.min_rows = 2;
  p.empty_percent = 0;
  return p;
}

namespace {
const capabilities whole_contract{};
thread_local const capabilities* current_domain = &whole_contract;
}  // namespace

const capabilities& drawing_domain() { return *current_domain; }

scoped_domain::scoped_domain(capabilities domain) : domain_(std::move(domain)), previous_(current_domain) {
  current_domain = &domain_;
}
scoped_domain::~scoped_domain() { current_domain = previous_; }

rc::Gen<std::pair<nc_dtype, nc_dtype>> gen_served_pair(std::uint32_t among) {
  return rc::gen::exec([among] {
    std::vector<std::pair<nc_dtype, nc_dtype>> pairs;
    for (const auto& pair : dtype_pairs)
      if ((among & pair_of(pair.first, pair.second)) && drawing_domain().serves(pair.first, pair.second))
        pairs.push_back(pair);
    if (pairs.empty())
      for (const auto& pair : dtype_pairs)
        if (among & pair_of(pair.first, pair.second)) pairs.push_back(pair);
    return pairs[*gen_weighted_index(std::vector<int>(pairs.size(), 1))];
  });
}

std::vector<nc_operation> drawable_operations(const case_profile& profile) {
  std::vector<nc_operation> out;
  const capabilities& domain = drawing_domain();
  if (domain.serves_plain()) out.push_back(nc_operation{});
  if (!profile.variants) return out;
  for (const nc_operation& op : domain.operations) {
    if (op == nc_operation{}) continue;
    if (profile.backward && op.residual == NC_RESIDUAL_FP32) continue;
    if (quantizes(op) && (profile.backward || !profile.quantized)) continue;
    out.push_back(op);
  }
  return out;
}

rc::Gen<nc_operation> gen_operation(const case_profile& profile) {
  return rc::gen::exec([profile] {
    const std::vector<nc_operation> ops = drawable_operations(profile);
    if (ops.size() <= 1) return ops.empty() ? nc_operation{} : ops.front();
    // the plain operation (first, where it is declared) takes half the cases, the variants share
    // the rest, a quantized output half the weight of another variant
    std::vector<int> weights;
    for (const nc_operation& op : ops) weights.push_back(quantizes(op) ? 1 : 2);
    if (ops.front() == nc_operation{}) weights.front() = std::accumulate(weights.begin() + 1, weights.end(), 0);
    return ops[*gen_weighted_index(weights)];
  });
}

namespace {

// a 4-D view [batches, tokens, heads, N] (abi.h NC_ROWS_BATCHES): the tokens a batch divide the
// view's tokens, and each operand's batch stride is drawn from where 4-D views come from
void draw_batches(norm_case& c) {
  c.tokens = 0;
  if (c.op.rows != NC_ROWS_BATCHES) return;
  const std::int64_t heads = c.heads, all_tokens = c.m / heads;
  std::vector<std::int64_t> counts;  // tokens a batch, two batches or more
  for (std::int64_t t = 1; t <= all_tokens / 2; ++t)
    if (all_tokens % t == 0) counts.push_back(t);
  // two batches or more where the tokens allow it, and one batch of all the tokens a tenth of the time
  if (counts.empty() || *gen_weighted_index({9, 1}) == 1) counts = {std::max<std::int64_t>(all_tokens, 1)};
  c.tokens = counts[*gen_weighted_index(std::vector<int>(counts.size(), 1))];
  const std::int64_t tokens = c.tokens, batches = all_tokens / tokens;
  const std::int64_t width = vector_width_of(c.x_dtype);
  const capabilities& domain = drawing_domain();
  for (matrix_layout* l : {&c.layout.x, &c.layout.y, &c.layout.dy, &c.layout.dx}) {
    const std::int64_t head_span = heads > 1 ? (heads - 1) * l->head_stride : 0;
    const std::int64_t token_span = head_span + (c.n - 1) * l->col_stride + 1;  // one token's elements
    const std::int64_t batch_span = (tokens - 1) * l->row_stride + token_span;  // one batch's
    // column-major views, and views whose tokens interleave (a transposed [heads, tokens, N]: a
    // token's heads span the whole tensor, so a padded batch would hold all of it again, a GB
    // operand of a few thousand rows), keep the drawn addresses: their batches follow each other
    const bool interleaved = (l->col_stride > l->row_stride && c.n > 1) || l->row_stride < token_span;
    const int pattern = interleaved ? 0 : *gen_weighted_index({2, 3, 2});
    if (pattern == 0) {  // [B, T, H, N] of one tensor: the 3-D view's addresses
      l->batch_stride = tokens * l->row_stride;
    } else if (pattern == 1) {
      // padded sequences: each batch holds more tokens than the T normalized (on 16 bytes or not)
      const std::int64_t pad = *gen_uniform(1, 2 * l->row_stride + 1, 1);
      l->batch_stride = *gen_weighted_index({1, 1}) == 0 ? batch_span + pad : (batch_span + pad + width - 1) / width * width;
    } else {  // [T, B, H, N] seen as [B, T, H, N]: a batch's tokens interleaved with the others'
      l->batch_stride = l->row_stride, l->row_stride *= batches;
    }
    if (!domain.serves_layouts(layout_bits(*l, c.n, c.x_dtype, {heads, tokens})))
      *l = {0, heads * c.n, 1, c.n, tokens * heads * c.n};
  }
}

}  // namespace

void draw_heads(norm_case& c) {
  c.heads = 1, c.tokens = 0;
  if (c.op.rows == NC_ROWS_MATRIX) return;
  // heads divide M (M = tokens × heads): 1 first, where shrinking goes, then the others alike
  std::vector<std::int64_t> counts = {1};
  const std::int64_t most = c.m == 0 ? 8 : std::min<std::int64_t>(c.m, 64);
  for (std::int64_t h = 2; h <= most; ++h)
    if (c.m % h == 0) counts.push_back(h);
  std::vector<int> weights(counts.size(), 3);
  weights.front() = 1;
  c.heads = counts[*gen_weighted_index(weights)];
  const std::int64_t heads = c.heads, tokens = std::max<std::int64_t>(1, c.m / heads);
  const capabilities& domain = drawing_domain();
  for (matrix_layout* l : {&c.layout.x, &c.layout.y, &c.layout.dy, &c.layout.dx}) {
    // stored by columns: the heads of a token at the drawn row stride, the columns past them all
    // (the addresses of the drawn 2-D layout)
    if (c.m > 1 && c.n > 1 && l->col_stride > l->row_stride) {
      l->head_stride = l->row_stride, l->row_stride *= heads;
      continue;
    }
    // a head's pitch: the drawn row stride where rows lie side by side, else rows past the columns
    const std::int64_t row_span = (c.n - 1) * l->col_stride + 1;
    const std::int64_t pitch = l->row_stride >= row_span ? l->row_stride : row_span;
    const std::int64_t width = vector_width_of(c.x_dtype);
    switch (*gen_weighted_index({4, 3, 2, 2, 2})) {
      case 0:  // [tokens, heads, N]: the rows of a contiguous 3-D tensor
        l->head_stride = pitch, l->row_stride = heads * pitch;
        break;
      case 1:  // q of a fused qkv projection: each token's row holds the other heads too
        l->head_stride = pitch, l->row_stride = (heads + *gen_uniform(1, 2 * heads, 1)) * pitch;
        break;
      case 2:  // [heads, tokens, N] seen as [tokens, heads, N]: a transposed view
        l->head_stride = tokens * pitch, l->row_stride = pitch;
        break;
      case 3:  // padded tokens: each token's heads rounded up to whole vectors, and more (token
               // rows on 16 bytes whatever the heads' pitch)
        l->head_stride = pitch, l->row_stride = (heads * pitch + width - 1) / width * width + width * *gen_uniform(0, 3, 0);
        break;
      default:  // heads at a pitch off 16 bytes inside token rows on 16 bytes
        l->head_stride = row_span + 1 + *gen_uniform(0, std::max<std::int64_t>(0, width - 2), 0);
        l->row_stride = (heads * l->head_stride + width - 1) / width * width;
        break;
    }
    if (!domain.serves_layouts(layout_bits(*l, c.n, c.x_dtype, {heads, 0}))) *l = {0, heads * c.n, 1, c.n};
  }
  draw_batches(c);
}

void draw_quantization(norm_case& c) {
  if (!quantizes(c.op)) return;
  const std::int64_t rows = scale_rows(c.op, c.m), cols = scale_cols(c.op, c.n);
  matrix_layout& l = c.layout.scale;
  l = dense_scale_layout(c.op, c.n);
  switch (*gen_weighted_index({4, 2, 2, 2})) {
    case 0: break;                                           // dense
    case 1: l.offset = *gen_uniform(1, 9, 1); break;         // inside a larger buffer, on 4 bytes or 16
    case 2: l.row_stride = cols + *gen_uniform(1, 5, 1); break;  // padded rows (per token: a strided vector)
    default:  // stored by columns (per-group scales as DeepGEMM takes them, M-major); a column stride of 2
      if (cols > 1) l.row_stride = 1, l.col_stride = std::max<std::int64_t>(rows, 1);
      else l.row_stride = 2;
      break;
  }
  if (!drawing_domain().serves_layouts(layout_bits(l, cols, NC_F32))) l = dense_scale_layout(c.op, c.n);
  // beside an x a vector path would take, a share of codes that path must refuse: off the
  // vector width (one byte each: any offset is theirs to take), or every other byte of rows
  // that start on 16 bytes (a column stride with rows a vector store could still reach)
  switch (*gen_weighted_index({12, 2, 1})) {
    case 0: break;
    case 1: {
      matrix_layout moved = c.layout.y;
      moved.offset += *gen_uniform(1, 15, 1);
      if (drawing_domain().serves_layouts(layout_bits(moved, c.n, y_dtype(c)))) c.layout.y = moved;
      break;
    }
    default: {
      const matrix_layout spread{0, (2 * c.n + 15) / 16 * 16, 2};
      if (drawing_domain().serves_layouts(layout_bits(spread, c.n, y_dtype(c)))) c.layout.y = spread;
      break;
    }
  }
  if (c.op.scale != NC_SCALE_STATIC) return;
  // the static scale: positive, normal and finite (abi.h); about amax/max for y of rows near 1,
  // a power of two (exact reciprocal), 1, so small that most codes saturate, or far out of
  // every row's range either way (past 2^60: where a kernel's fast quotient gives way to a
  // division, and codes are all ±max or all ±0)
  const double max = oracle::max_finite(quantization_of(c).format);
  const auto mantissa = [] { return 1.0 + double(*gen_uniform(0, 1023, 0)) / 1024.0; };
  double scale = 1.0;
  switch (*gen_weighted_index({2, 3, 5, 1, 1})) {
    case 0: break;
    case 1: scale = std::ldexp(1.0, int(*gen_uniform(-12, 4, 0))); break;
    case 2: scale = 4.0 / max * std::ldexp(mantissa(), int(*gen_uniform(-3, 3, 0))); break;
    case 3: scale = std::ldexp(mantissa(), int(*gen_uniform(-40, -20, -20))); break;
    default: {
      const int exponent = int(*gen_uniform(61, 120, 61));
      scale = std::ldexp(mantissa(), *gen_weighted_index({1, 1}) == 0 ? exponent : -exponent);
      break;
    }
  }
  c.scale = std::bit_cast<std::uint32_t>(float(scale));
}

void draw_residual(norm_case& c, const case_profile& profile) {
  if (!adds_residual(c.op)) {
    c.residual.clear(), c.residual_grad.clear();
    return;
  }
  c.layout.residual = c.layout.x;
  c.layout.residual_out = c.op.in_place ? c.layout.x : c.layout.y;
  c.layout.residual_grad = c.layout.dy;
  c.residual = *gen_values(c.x_dtype, c.m, c.n, profile.x);
  c.residual_grad = *gen_values(c.x_dtype, c.m, c.n, profile.dy);
}

rc::Gen<norm_case> gen_case(const case_profile& profile) {
  return rc::gen::exec([profile] {
    const capabilities& domain = drawing_domain();
    norm_case c;
    // the size class: tiny, small, large (many elements), long rows, tall batches; a class the
    // kernel's limits leave no room for goes to the small class
    const std::int64_t limit = domain.max_elements > 0 ? domain.max_elements : std::numeric_limits<std::int64_t>::max();
    const std::int64_t longest = domain.max_n > 0 ? domain.max_n : std::numeric_limits<std::int64_t>::max();
    const std::int64_t budgets[] = {std::min(profile.tiny_elements, limit), std::min(profile.small_elements, limit),
                                    std::min(profile.large_elements, limit), std::min(profile.large_elements, limit),
                                    std::min(profile.tall_elements, limit)};
    const int long_percent = longest > 4096 && limit > 4096 ? profile.long_percent : 0;
    const int tall_percent = profile.tall_rows <= limit ? profile.tall_percent : 0;
    const std::size_t size_class = *gen_weighted_index(
        {profile.tiny_percent, 100 - profile.tiny_percent - profile.large_percent - long_percent - tall_percent,
         profile.large_percent, long_percent, tall_percent});
    const std::int64_t budget = budgets[size_class];
    // the dtype pair: one the kernel serves (shrinking toward the first it serves)
    std::tie(c.x_dtype, c.gamma_dtype) = *gen_served_pair(NC_PAIRS_ALL);
    // the operation first: a per-group quantization's N is a multiple of its group
    c.op = *gen_operation(profile);
    const std::int64_t multiple = columns_multiple(c.op);
    if (size_class == 4) {
      c.m = *gen_uniform(profile.tall_rows, 4 * profile.tall_rows, profile.tall_rows);
      c.m = std::min(c.m, budget);
      c.n = *gen_columns(c.x_dtype, std::min(longest, std::max<std::int64_t>(1, budget / c.m)), multiple);
    } else {
      const std::int64_t max_n = std::min(longest, std::max<std::int64_t>(1, budget / std::max<std::int64_t>(1, profile.min_rows)));
      c.n = size_class == 3 ? *gen_long_columns(c.x_dtype, max_n, multiple) : *gen_columns(c.x_dtype, max_n, multiple);
    }
    // shrinking may keep a column count drawn for another operation (a shrunk choice of it):
    // the operation's multiple holds whatever the count
    if (c.n % multiple != 0) c.n = std::max(multiple, c.n - c.n % multiple);
    if (size_class != 4) {
      const std::int64_t rows = *gen_rows(profile.empty_percent, profile.min_rows);
      // (an N past the budget, rounded up to a multiple, still gets a row)
      c.m = rows == 0 ? 0 : std::max(profile.min_rows, std::min(rows, std::max<std::int64_t>(1, budget / c.n)));
    }

    // layouts: a plan, the operand a one-operand plan perturbs, then a spec per operand
    const auto& plans = profile.layout_plans;
    const std::size_t plan = *gen_weighted_index({plans[0], plans[1], plans[2], plans[3]});
    const std::size_t target = *gen_weighted_index({1, 1, 1, 1, 1, 1, 1});
    matrix_spec matrices[4];
    vector_spec vectors[3];
    for (auto& s : matrices) s = *gen_matrix_spec();
    for (auto& s : vectors) s = *gen_vector_spec();
    for (std::size_t k = 0; k < 7; ++k) {
      const bool perturbed = plan == 3 || (plan == 2 && k == target);
      if (k < 4) {
        matrix_spec s = matrices[k];
        if (plan == 1) s.kind = 1;
        else if (plan == 2 && perturbed) s.kind = std::max<std::size_t>(s.kind, 2);
        else if (!perturbed) s.kind = 0;
        matrix_layout* out[] = {&c.layout.x, &c.layout.y, &c.layout.dy, &c.layout.dx};
        *out[k] = materialize(s, c.m, c.n);
      } else {
        vector_spec s = vectors[k - 4];
        if (plan == 2 && perturbed) s.kind = std::max<std::size_t>(s.kind, 1);
        else if (!perturbed) s.kind = 0;
        vector_layout* out[] = {&c.layout.gamma, &c.layout.r, &c.layout.dgamma};
        *out[k - 4] = materialize(s);
      }
    }
    // an operand whose layout the kernel does not serve is dense instead
    for (matrix_layout* l : {&c.layout.x, &c.layout.y, &c.layout.dy, &c.layout.dx})
      if (!domain.serves_layouts(layout_bits(*l, c.n, l == &c.layout.y ? y_dtype(c) : c.x_dtype))) *l = {0, c.n, 1};
    for (vector_layout* l : {&c.layout.gamma, &c.layout.dgamma})
      if (!domain.serves_layouts(layout_bits(*l, c.gamma_dtype))) *l = {0, 1};
    if (!domain.serves_layouts(layout_bits(c.layout.r, NC_F32))) c.layout.r = {0, 1};

    // ε: the profile's mix, or one of the values the kernel takes
    if (domain.any_epsilon()) {
      std::vector<int> weights;
      for (const auto& [w, e] : profile.epsilons) weights.push_back(w);
      c.epsilon = profile.epsilons[*gen_weighted_index(weights)].second;
    } else {
      c.epsilon = domain.epsilons[*gen_weighted_index(std::vector<int>(domain.epsilons.size(), 1))];
    }

    c.gamma = *gen_values(c.gamma_dtype, 1, c.n, profile.gamma);
    row_block rows_of_values = *gen_row_block(c.x_dtype, c.m, c.n, profile.min_rows, profile.x, profile.dy);
    // removing rows keeps every layout valid: strides only grow relative to the rows left
    c.m = rows_of_values.rows();
    c.x = std::move(rows_of_values.x);
    c.dy = std::move(rows_of_values.dy);
    draw_heads(c);
    draw_residual(c, profile);
    draw_quantization(c);
    return c;
  });
}

rc::Gen<std::vector<std::uint32_t>> gen_values(nc_dtype type, std::int64_t rows, std::int64_t cols,
                                               const value_mix& mix) {
  return [=](const rc::Random& random, int) {
    const std::uint64_t seed = rc::Random(random).next();
    values bits(std::size_t(rows * cols));
    for (std::int64_t i = 0; i < rows; ++i) {
      const row_kind kind = kind_of_row(mix, seed, i);
      for (std::int64_t j = 0; j < cols; ++j) bits[std::size_t(i * cols + j)] = element(type, kind, seed, i, j, cols);
    }
    return rc::shrinkable::shrinkRecur(std::move(bits), [type](const values& v) { return value_shrinks(type, v); });
  };
}

void showValue(const norm_case& c, std::ostream& out) {
  out << describe(c);
  if (c.m * c.n > 64) return;
  const auto row = [&](const char* name, nc_dtype t, const std::vector<std::uint32_t>& v, std::int64_t i) {
    out << "\n  " << name << "[" << i << "] =";
    for (std::int64_t j = 0; j < c.n; ++j) out << " " << value_of(t, v[std::size_t(i * c.n + j)]);
  };
  for (std::int64_t i = 0; i < c.m; ++i) row("x", c.x_dtype, c.x, i);
  row("gamma", c.gamma_dtype, c.gamma, 0);
  for (std::int64_t i = 0; i < c.m; ++i) row("dy", c.x_dtype, c.dy, i);
  if (!adds_residual(c.op)) return;
  for (std::int64_t i = 0; i < c.m; ++i) row("residual", c.x_dtype, c.residual, i);
  for (std::int64_t i = 0; i < c.m; ++i) row("residual_grad", c.x_dtype, c.residual_grad, i);
}

}  // namespace nc::harness
