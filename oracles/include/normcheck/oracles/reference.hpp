// The document's oracle, in C++: rmsnorm_reference() and manual_backward().
//
// reference_forward computes in double when x is f64, else in float, and casts y to y_type.
// reference_backward reads like the document's manual_backward, which does not upcast: every
// tensor operation's result is rounded to the argument dtype (as PyTorch does per operation),
// reductions accumulate in float (double for f64). With mixed dtypes the whole backward works in
// the promoted dtype (f64 if any operand is f64, else f32 if any is f32 or the half types differ).
#pragma once

#include <vector>

#include "normcheck/oracles/problem.hpp"

namespace nc::oracle {

struct reference_forward_result {
  std::vector<double> y;  ///< row-major M×N, values of y_type
  std::vector<double> r;  ///< M entries, in the working type (float or double)
};

struct reference_backward_result {
  std::vector<double> dx;      ///< row-major M×N, values of dx_type
  std::vector<double> dgamma;  ///< N entries, values of dgamma_type
};

/// rmsnorm_reference(x, gamma, epsilon)
reference_forward_result reference_forward(const forward_problem& problem);

/// manual_backward(x, gamma, dy, epsilon)
reference_backward_result reference_backward(const backward_problem& problem);

}  // namespace nc::oracle
