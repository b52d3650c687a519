// The exact oracle: y, r, dx and dgamma computed exactly (then rounded to odd into double) from
// inputs of any dtype, strides and ε, each with a per-element bound on the error of any correct
// kernel that accumulates in fp32 and rounds to the output dtype.
//
// Two paths give the same answer. The Boost path (exact_*_mp, exact_*_mpfr) computes in
// Boost.Multiprecision at Digits decimal digits. The fast path (exact_forward, exact_backward:
// what campaigns call) computes in double-double arithmetic — squares and products of
// fp32/fp16/bf16 values are exact in double — and certifies every rounding against its own
// rigorous error bound; a row (or dgamma column) it cannot certify is recomputed by the 50-digit
// Boost path. Problems with an f64 operand always take the Boost path.
//
// What the bound covers: any kernel that upcasts its inputs to fp32 exactly; sums Σx² and
// Σ(dy·γ)·x in any order and tree, with or without fma; forms the mean as ss/N or ss·(1/N);
// takes r = rsqrt(mean + ε) within 2 ulp; forms y = x·r·γ and c = s/N·r·r·r in any association
// and dx = r·u − x·c; sums dgamma's per-row terms dy·x·r in any order; rounds each result to
// nearest-even into its dtype; and underflows gradually (no flush-to-zero: nvcc's default,
// not --use_fast_math). The backward's r may be anything the forward's r bound admits. With an
// f64 operand the same model is applied to fp64 arithmetic.
#pragma once

#include <cstdint>

#include "normcheck/oracles/problem.hpp"

namespace nc::oracle {

/// how much of a fast-path call fell back to the Boost path
struct exact_stats {
  std::int64_t rows_recomputed = 0;     ///< rows of y/r or dx whose rounding could not be certified
  std::int64_t columns_recomputed = 0;  ///< dgamma columns likewise
  bool whole_problem_recomputed = false;///< an f64 operand sent the whole problem to the Boost path
};

/// the fast exact forward: y, r, their bounds, the rows' domain status
forward_result exact_forward(const forward_problem& problem, exact_stats* stats = nullptr);

/// the same into result, reusing its vectors' memory (what a campaign calls case after case)
void exact_forward(const forward_problem& problem, forward_result& result, exact_stats* stats = nullptr);

/// the fast exact backward: dx, dgamma, their bounds, the rows' and columns' domain status
backward_result exact_backward(const backward_problem& problem, exact_stats* stats = nullptr);

/// the same into result, reusing its vectors' memory
void exact_backward(const backward_problem& problem, backward_result& result, exact_stats* stats = nullptr);

/// the Boost path: number<cpp_bin_float<Digits>> (instantiated for 30, 50 and 100 digits)
template <int Digits = 50>
forward_result exact_forward_mp(const forward_problem& problem);
template <int Digits = 50>
backward_result exact_backward_mp(const backward_problem& problem);

/// the Boost path on MPFR: number<mpfr_float_backend<Digits>> (instantiated for 30, 50 and 100 digits)
template <int Digits = 50>
forward_result exact_forward_mpfr(const forward_problem& problem);
template <int Digits = 50>
backward_result exact_backward_mpfr(const backward_problem& problem);

#define NORMCHECK_ORACLE_EXACT_MP(digits)                                              \
  extern template forward_result exact_forward_mp<digits>(const forward_problem&);     \
  extern template backward_result exact_backward_mp<digits>(const backward_problem&);  \
  extern template forward_result exact_forward_mpfr<digits>(const forward_problem&);   \
  extern template backward_result exact_backward_mpfr<digits>(const backward_problem&);
NORMCHECK_ORACLE_EXACT_MP(30)
NORMCHECK_ORACLE_EXACT_MP(50)
NORMCHECK_ORACLE_EXACT_MP(100)
#undef NORMCHECK_ORACLE_EXACT_MP

}  // namespace nc::oracle
