// Error-free transformations and double-word ("double-double") arithmetic for the fast exact path.
//
// A double-word (hi, lo) stands for the exact sum hi + lo with hi = RN(hi + lo). The algorithms
// and their relative error bounds are those of Joldes, Muller and Popescu, "Tight and rigorous
// error bounds for basic building blocks of double-word arithmetic" (ACM TOMS 44, 2017), with
// u = 2^-53: add(dd, double) ≤ 2u², add(dd, dd) ≤ 3u² + 13u³, mul(dd, double) ≤ 1.5u² + 4u³,
// mul(dd, dd) ≤ 7u², div(dd, double) ≤ 3.5u². The fast path charges every operation
// op_error = 16u², comfortably above each. They hold while no intermediate leaves double's normal
// range, which the inputs' formats guarantee here (every magnitude stays within 2^±700).
// The file must be compiled without floating-point contraction (-ffp-contract=off): a fused
// a·b + c inside these algorithms would break their exactness.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace nc::oracle::dd {

/// the unit roundoff of double
inline constexpr double u = 0x1p-53;
/// the relative error charged to every double-word operation
inline constexpr double op_error = 16 * u * u;

struct number {
  double hi = 0;
  double lo = 0;
};

/// s + e = a + b exactly (Knuth)
inline number two_sum(double a, double b) {
  const double s = a + b;
  const double bb = s - a;
  const double e = (a - (s - bb)) + (b - bb);
  return {s, e};
}

/// s + e = a + b exactly when a = 0 or exponent(a) ≥ exponent(b) (Dekker)
inline number fast_two_sum(double a, double b) {
  const double s = a + b;
  return {s, b - (s - a)};
}

/// hi + lo = a with hi holding the top 26 bits (Veltkamp): products of halves are exact
inline number split(double a) {
  const double c = 134217729.0 * a;  // 2^27 + 1
  const double hi = c - (c - a);
  return {hi, a - hi};
}

/// p + e = a·b exactly, with a already split (Dekker)
inline number two_prod(const number& a_split, double a, double b) {
  const double p = a * b;
#ifdef __FMA__
  (void)a_split;
  return {p, std::fma(a, b, -p)};
#else
  const number bs = split(b);
  const double e = ((a_split.hi * bs.hi - p) + a_split.hi * bs.lo + a_split.lo * bs.hi) + a_split.lo * bs.lo;
  return {p, e};
#endif
}

/// p + e = a·b exactly when b has at most 26 significant bits (an fp32 value): b needs no split
inline number two_prod_short(const number& a_split, double a, double b) {
  const double p = a * b;
#ifdef __FMA__
  (void)a_split;
  return {p, std::fma(a, b, -p)};
#else
  (void)a;
  return {p, (a_split.hi * b - p) + a_split.lo * b};
#endif
}

/// p + e = a·b exactly
inline number two_prod(double a, double b) { return two_prod(split(a), a, b); }

/// x + y (DWPlusFP)
inline number add(const number& x, double y) {
  const number s = two_sum(x.hi, y);
  return fast_two_sum(s.hi, x.lo + s.lo);
}

/// x + y (AccurateDWPlusDW)
inline number add(const number& x, const number& y) {
  const number s = two_sum(x.hi, y.hi);
  const number t = two_sum(x.lo, y.lo);
  const number v = fast_two_sum(s.hi, s.lo + t.hi);
  return fast_two_sum(v.hi, t.lo + v.lo);
}

/// x − y for the fast path's dx, where the error budget is relative to |x| + |y| (the shadow of
/// a difference): the hi parts exactly, the lo parts in two roundings, an exact renormalisation;
/// the error is at most 4u²·(|x| + |y|)
inline number subtract_sloppy(const number& x, const number& y) {
  const number s = two_sum(x.hi, -y.hi);
  return two_sum(s.hi, (s.lo + x.lo) - y.lo);
}

/// x·y (DWTimesFP1), with x.hi already split
inline number mul(const number& x, const number& x_hi_split, double y) {
  const number c = two_prod(x_hi_split, x.hi, y);
  const number t = fast_two_sum(c.hi, x.lo * y);
  return fast_two_sum(t.hi, t.lo + c.lo);
}

/// x·y for y of at most 26 significant bits, with x.hi already split
inline number mul_short(const number& x, const number& x_hi_split, double y) {
  const number c = two_prod_short(x_hi_split, x.hi, y);
  const number t = fast_two_sum(c.hi, x.lo * y);
  return fast_two_sum(t.hi, t.lo + c.lo);
}

/// x·y (DWTimesDW1)
inline number mul(const number& x, const number& y) {
  const number c = two_prod(x.hi, y.hi);
  const double cross = x.hi * y.lo + x.lo * y.hi;
  return fast_two_sum(c.hi, c.lo + cross);
}

/// x / y (DWDivFP3)
inline number div(const number& x, double y) {
  const double th = x.hi / y;
  const number p = two_prod(th, y);
  const double d = ((x.hi - p.hi) - p.lo) + x.lo;
  return fast_two_sum(th, d / y);
}

/// 1/sqrt(x) for x > 0: one Newton step from the double estimate r0 = 1/sqrt(x.hi), whose
/// relative error e0 is below 2u. The step r0·(1 + (1 − x·r0²)/2) leaves 1.5·e0² ≤ 6u²; the
/// residual 1 − x·r0² is formed to 16u² (r0² exact, one double-word product, an exact
/// subtraction from 1 by Sterbenz) and halved and scaled in two roundings: ≤ 17u² in all.
/// rsqrt_error = 32u² is charged.
inline constexpr double rsqrt_error = 32 * u * u;

inline number rsqrt(const number& x) {
  const double r0 = 1 / std::sqrt(x.hi);
  const number w = mul(x, two_prod(r0, r0));
  const double residual = (1 - w.hi) - w.lo;
  return fast_two_sum(r0, r0 * (0.5 * residual));
}

/// The exact value t lies within error of x.hi + x.lo. If that interval holds no double other
/// than possibly x.hi itself and t ≠ x.hi, the round-to-odd of t is certain: the odd one of x.hi
/// and its neighbour on x.lo's side. Writes it and returns true; returns false when uncertain.
inline bool round_to_odd(const number& x, double error, double& out) {
  if (x.lo == 0) {
    // exact only with a zero error: otherwise t may sit on either side of x.hi
    out = x.hi;
    return error == 0;
  }
  // |x.lo| is at most half the spacing on its side, so error < |x.lo| keeps t strictly inside
  if (!(error < std::fabs(x.lo))) return false;
  // an even x.hi steps one ulp towards x.lo: up in magnitude when the signs agree (no branch:
  // the parity is a coin toss the predictor cannot learn)
  const std::uint64_t bits = std::bit_cast<std::uint64_t>(x.hi);
  const std::uint64_t even = ~bits & 1u;
  const std::uint64_t opposite = (bits ^ std::bit_cast<std::uint64_t>(x.lo)) >> 63;
  out = std::bit_cast<double>(bits + even - 2 * (even & opposite));
  return true;
}

/// Sum2 of Ogita, Rump and Oishi over a block: hi accumulates by TwoSum, lo collects the errors.
/// After k terms, |hi + lo − Σ| ≤ γ_{k−1}²·Σ|terms| (γ of double); blocks stay short so that
/// this stays near 2^-92 and whole blocks are combined with add(dd, dd).
struct block_sum {
  double hi = 0;
  double lo = 0;

  void add(double term) {
    const number s = two_sum(hi, term);
    hi = s.hi;
    lo += s.lo;
  }
  /// the block as a double-word (an exact renormalisation)
  number value() const { return two_sum(hi, lo); }
};

/// the relative error, against Σ|terms|, of summing terms in blocks of at most block_terms with
/// block_sum and combining the blocks with add(dd, dd)
inline double blocked_sum_error(double block_terms, double blocks) {
  const double g = block_terms * u / (1 - block_terms * u);
  return g * g + blocks * op_error;
}

}  // namespace nc::oracle::dd
