// The differential check of a fuzz call: the exact oracle (oracles/exact.hpp) on the inputs as
// they sit in the arena, and the bound verdict on every output element of a row in the domain.
#pragma once

#include <optional>
#include <string>

#include "fuzz_call.hpp"
#include "normcheck/harness/case.hpp"
#include "normcheck/oracles/exact.hpp"

namespace nc::fuzz {

using harness::oracle_type;  // the harness's dtype mapping (case.hpp)

/// the oracle's problems over the arena's host image, with the roundings the kernel declares
/// (abi.h NC_ROUNDS_*: the bound carries them)
oracle::forward_problem forward_problem_of(const call_spec& c, const arena& a, const capabilities& declared);
oracle::backward_problem backward_problem_of(const call_spec& c, const arena& a, const capabilities& declared);

/// what the forward wrote (y, r) against the oracle: nothing if every element of every row in
/// the domain is within its bound, else the first mismatches in words
std::optional<std::string> compare_forward(const call_spec& c, const arena& a, const oracle::forward_result& want);
/// what the backward wrote (dx, dgamma) likewise
std::optional<std::string> compare_backward(const call_spec& c, const arena& a, const oracle::backward_result& want);

}  // namespace nc::fuzz
