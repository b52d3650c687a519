// Names of the domain reasons and of the evaluation-order hazards.
#include "normcheck/oracles/problem.hpp"

#include <cstdio>

namespace nc::oracle {

std::string_view describe(domain_reason reason) {
  switch (reason) {
    case domain_reason::none: return "in the domain";
    case domain_reason::non_finite_input: return "a NaN or Inf among the inputs";
    case domain_reason::zero_row_without_epsilon: return "a zero row with epsilon 0: r is infinite";
    case domain_reason::intermediate_overflow: return "an fp32 intermediate (or one the kernel declares it rounds to x's dtype) could overflow";
    case domain_reason::output_overflow: return "the result could round to Inf in the output dtype";
    case domain_reason::intermediate_underflow: return "fp32 underflow could exceed 2^-10 of the row's scale";
    case domain_reason::accumulation_too_long: return "the sum is too long for a meaningful fp32 bound";
    case domain_reason::row_out_of_domain: return "a contributing row is out of the domain";
  }
  return "?";
}

std::string describe(order_hazard hazard, double r) {
  char value[32];
  std::snprintf(value, sizeof value, "%.3g", r);
  const std::string at = std::string(" (r = ") + value + ")";
  switch (hazard) {
    case order_hazard::none: return "";
    case order_hazard::r_squared_overflow:
      return "a kernel defect of the evaluation order, not of the bound: r^2/N and r^3 overflow fp32" + at +
             ", so an order that scales by -r*r/N before s (Liger-Kernel's) or forms r^3 (abi.h's formula read left "
             "to right, the document's reference) gives Inf or NaN here; multiply s/N by r, then by r again";
    case order_hazard::r_cubed_overflow:
      return "a kernel defect of the evaluation order, not of the bound: r^3 overflows fp32" + at +
             ", so an order that forms r^3 (abi.h's formula read left to right, the document's reference) gives "
             "Inf or NaN here; apply r^2 to x*r instead ((x*r)*(s/N*r*r)) or work on x_hat = x*r";
    case order_hazard::x_r_cubed_overflow:
      return "a kernel defect of the evaluation order, not of the bound: x*r^3 overflows fp32" + at +
             ", so an order that multiplies x by r^3 first gives Inf or NaN here; apply r^2 to x*r instead";
    case order_hazard::x_r_cubed_s_overflow:
      return "a kernel defect of the evaluation order, not of the bound: (x*r^3)*s overflows fp32" + at +
             " before the division by N, so abi.h's formula read left to right gives Inf or NaN here; divide s by N "
             "first, or apply r^2 to x*r";
  }
  return "?";
}

}  // namespace nc::oracle
