// One call of a fuzz target: a call_spec drawn from its input inside the kernel's
// declaration, the contract model that says whether the call is valid, and its case lines.
// The call runs in the harness's testbed (normcheck/harness/arena.hpp): one arena of plugin
// memory where operands may alias and overlap, and the arena's check after the call.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_input.hpp"
#include "normcheck/dtype.hpp"
#include "normcheck/harness/arena.hpp"
#include "normcheck/harness/case.hpp"
#include "normcheck/kernel.hpp"

namespace nc::fuzz {

using harness::arena;
using harness::arena_limits;
using harness::backward_args;
using harness::byte_span;
using harness::call_result;
using harness::call_spec;
using harness::describe;
using harness::dtype_text;
using harness::element_bytes;
using harness::forward_args;
using harness::operand;
using harness::run_call;
using harness::span_of;

/// a call_spec from a contract_fuzzer input (no positions yet), drawn inside the kernel's
/// declaration (fit_sizes, fit_to_declaration)
call_spec realize(const contract_input& in, const capabilities& declared);

// ---- the kernel's declaration (abi.h nc_capabilities) ---------------------------------------
// The fuzz targets draw inside what a kernel declares, as the properties do: a value drawn
// within the contract but outside the declaration (an fp32 call of an fp16-only kernel, a
// strided operand of a dense-only one, a backward of a forward-only one) is moved inside it.
// Values that break the contract stay as drawn: the kernel must reject them, or answer
// NC_ERR_UNSUPPORTED where the call also lies outside its declaration.

/// N at most max_n and M·N at most max_elements (sizes that break the contract stay)
void fit_sizes(std::int64_t& m, std::int64_t& n, const capabilities& declared);
/// the direction, the dtype pair, ε, r and every operand whose own layout keeps the contract,
/// moved inside the declaration (dense where its layout is not declared); before placement
void fit_to_declaration(call_spec& c, const capabilities& declared);
/// the NC_LAYOUT_* bits operand k needs, as abi.h defines them: its strides and offset, and
/// where element 0 of its buffer lies (a byte position of the 256-byte aligned region)
std::uint32_t layout_bits(const call_spec& c, int k, std::int64_t base);
/// what of a placed call lies outside the declaration, in words; empty when it lies inside
std::string outside_declaration(const call_spec& c, const capabilities& declared);

/// the element-count limits of one call
inline constexpr std::int64_t small_elements = 256;  ///< M·N of most calls
inline constexpr std::int64_t max_elements = 4096;   ///< M·N of a large call
inline constexpr std::int64_t long_row_cap = 33024;  ///< N of a call with M ≤ 1 (reaches vector-reload in fp32)
inline constexpr std::int64_t max_region_bytes = std::int64_t(2) << 20;

/// a rule of the contract a call breaks, as the contract model sees it
struct rule_break {
  std::string rule;                  ///< "x.offset", "epsilon", "y.overlap", ...
  std::vector<std::string> operands; ///< the arguments an error message may name
};

/// the arena of one fuzz call: small enough that a call stays fast
inline constexpr arena_limits fuzz_limits{max_region_bytes, std::int64_t(1) << 20};

/// every rule the call breaks, by normcheck's contract (DESIGN.md, abi.h), derived
/// independently of the kernels' own checker; empty for a valid call
std::vector<rule_break> contract_breaks(const call_spec& c, const arena& a);

/// the call as case-file lines (key = value), its layout in ABI terms
std::string case_lines(const call_spec& c);

}  // namespace nc::fuzz
