// What the properties' files share: the tags every check records, the differential cases, and
// the pieces of cases built by hand (properties.cpp, launch_properties.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <rapidcheck.h>

#include "normcheck/harness/execute.hpp"
#include "normcheck/harness/generators.hpp"
#include "normcheck/harness/property.hpp"
#include "normcheck/oracles/exact.hpp"

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

}  // namespace nc::harness
