// The seed-design kernel's contract, checked on the host before any launch or write.
//
// Two verdicts, in this order:
//   NC_ERR_INVALID_ARGUMENT  the call breaks abi.h's contract (sizes, ε, dtypes, null or
//                            malformed layouts, an output overlapping another operand, a
//                            workspace smaller than workspace_size() says);
//   NC_ERR_UNSUPPORTED       a valid call this kernel does not serve, as the document's
//                            kernels do not: bf16 or fp32 gamma with fp16 x, operands that
//                            are not dense rows, N > 4096, a partial table over 64 MiB.
// Every message names the argument in quotes, its value and the rule:
//   argument 'x.row_stride' = 5: must be n = 8 (this kernel serves dense rows only)
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "normcheck/abi.h"

namespace seed_design {

// the document's scratch budget: the M×N fp32 partial table at most 64 MiB (4096×4096)
constexpr std::int64_t max_n = 4096;
constexpr std::int64_t max_elements = std::int64_t{4096} * 4096;

struct rejection {
  nc_status status;
  std::string message;
};

// bytes of the partial table for an m×n backward (m >= 0, n >= 1); SIZE_MAX past size_t
std::size_t partial_table_bytes(std::int64_t m, std::int64_t n);

std::optional<rejection> check_forward(const nc_forward_args& a);
std::optional<rejection> check_backward(const nc_backward_args& a);

}  // namespace seed_design
