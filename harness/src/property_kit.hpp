// What the properties' families share: the tags every check records, the differential cases, the
// pieces of cases built by hand, the distribution's intents, and each family's entry point
// (properties.cpp orders them into the registry).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <rapidcheck.h>

#include "normcheck/harness/execute.hpp"
#include "normcheck/harness/generators.hpp"
#include "normcheck/harness/property.hpp"
#include "normcheck/oracles/exact.hpp"
#include "verdicts.hpp"

namespace nc::harness {

// ---- tags ----
void tag_case(observation& o, const norm_case& c);
void tag_paths(observation& o, const outputs& out);
void tag_domain(observation& o, const std::vector<oracle::row_status>& rows);

/// the case's parameters: whether the document's fixed table binds it, and one by name
bool table_binding(const norm_case& c);
std::string parameter(const norm_case& c, const std::string& name);
/// row i of a row-major matrix of n columns
std::vector<std::uint32_t> row_of(const std::vector<std::uint32_t>& v, std::int64_t n, std::int64_t i);

/// whether an operation's backward is judged (abi.h "Variants": not an fp32-sum residual add,
/// whose sum is stored nowhere, nor a quantized output, which has none)
bool backward_judged(const nc_operation& op);
/// "" where the kernel has a backward the properties judge (an operation whose backward is), else why not
std::string needs_backward(const capabilities& caps);

/// the differential properties' cases. tall_percent: the share of tall batches
/// (generators.hpp) among the wide cases. Every operation the kernel declares (abi.h
/// "Variants"); backward: those whose backward is judged
rc::Gen<norm_case> differential_cases(bool backward, int tall_percent = 0);

// ---- cases built by hand (inside rc::gen::exec) ----
/// the document's 1e-6 where the kernel takes it, else the first epsilon it declares (a kernel
/// with 1e-5 built in once got 1e-6 from the tall batches)
float usual_epsilon();
/// x, dy and gamma of c's shape and dtypes from a profile's value mixes
void draw_values(norm_case& c, const case_profile& profile);


// ---- what the families share ----
/// row i of c's outputs `a` against row j of `b`, for each (i, j): within twice row i's bound
void rows_within_twice_the_bound(verdicts& v, const kernel& k, const norm_case& c, const outputs& a,
                                 const outputs& b, const std::vector<std::pair<std::int64_t, std::int64_t>>& rows);
/// rows [first, first + count) of c as a case of their own, each at the same address modulo 16
/// bytes as in the batch (at offset 0 where the kernel does not serve those offsets)
norm_case piece_of(const norm_case& c, std::int64_t first, std::int64_t count, const capabilities& caps);

// ---- the distribution's intents, shared by the families ----
using intents = std::vector<intended_share>;
const intents& every_dtype();
const intents& every_alignment();
const intents& every_size();
const intents& forward_paths();   ///< the shipped kernel's forward paths
const intents& backward_paths();  ///< and its backward's
intents join(std::initializer_list<intents> parts);
/// classes only some operations reach: "" where the drawing domain has one, else why not
std::string needs_unquantized(const capabilities& caps);
std::string needs_quantized(const capabilities& caps);
std::string needs_tiny_rows(const capabilities& caps);
std::string needs_any_n(const capabilities& caps);
/// a property whose generator draws every operation the kernel declares; and quantized outputs too
property drawing_variants(property p);
property drawing_quantized(property p);
/// a property that judges one run of its case: check = execute(k, c, which) then judge
property judging(calls which, std::function<void(const kernel&, const norm_case&, const outputs&, observation&)> judge,
                 property p);

// ---- the families, each in a file of its own; properties.cpp orders them ----
std::vector<property> differential_properties();  ///< differential_properties.cpp
property reused_workspace_property();             ///< differential_properties.cpp
property contract_property();                     ///< contract_property.cpp
property access_property();                       ///< launch_properties.cpp
std::vector<property> metamorphic_properties();   ///< metamorphic_properties.cpp
property isolation_property();                    ///< isolation_properties.cpp
std::vector<property> dispatch_properties();      ///< dispatch_properties.cpp
std::vector<property> variant_properties();       ///< variant_properties.cpp
std::vector<property> quantized_properties();     ///< quantized_properties.cpp
std::vector<property> launch_properties();        ///< launch_properties.cpp

}  // namespace nc::harness
