// The Boost path's entry points, instantiated for the digit counts the header lists. Another
// precision is one more line here.
#include "exact_mp.hpp"

namespace nc::oracle {

template <int Digits>
forward_result exact_forward_mp(const forward_problem& problem) {
  return mp::forward<mp::bin_float<Digits>>(problem);
}

template <int Digits>
backward_result exact_backward_mp(const backward_problem& problem) {
  return mp::backward<mp::bin_float<Digits>>(problem);
}

template <int Digits>
forward_result exact_forward_mpfr(const forward_problem& problem) {
  return mp::forward<mp::mpfr_float<Digits>>(problem);
}

template <int Digits>
backward_result exact_backward_mpfr(const backward_problem& problem) {
  return mp::backward<mp::mpfr_float<Digits>>(problem);
}

#define NORMCHECK_ORACLE_EXACT_MP(digits)                                       \
  template forward_result exact_forward_mp<digits>(const forward_problem&);     \
  template backward_result exact_backward_mp<digits>(const backward_problem&);  \
  template forward_result exact_forward_mpfr<digits>(const forward_problem&);   \
  template backward_result exact_backward_mpfr<digits>(const backward_problem&);
NORMCHECK_ORACLE_EXACT_MP(30)
NORMCHECK_ORACLE_EXACT_MP(50)
NORMCHECK_ORACLE_EXACT_MP(100)
#undef NORMCHECK_ORACLE_EXACT_MP

}  // namespace nc::oracle
