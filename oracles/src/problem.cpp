// Names of the domain reasons.
#include "normcheck/oracles/problem.hpp"

namespace nc::oracle {

std::string_view describe(domain_reason reason) {
  switch (reason) {
    case domain_reason::none: return "in the domain";
    case domain_reason::non_finite_input: return "a NaN or Inf among the inputs";
    case domain_reason::zero_row_without_epsilon: return "a zero row with epsilon 0: r is infinite";
    case domain_reason::intermediate_overflow: return "an fp32 intermediate could overflow";
    case domain_reason::output_overflow: return "the result could round to Inf in the output dtype";
    case domain_reason::intermediate_underflow: return "fp32 underflow could exceed 2^-10 of the row's scale";
    case domain_reason::accumulation_too_long: return "the sum is too long for a meaningful fp32 bound";
    case domain_reason::row_out_of_domain: return "a contributing row is out of the domain";
  }
  return "?";
}

}  // namespace nc::oracle
