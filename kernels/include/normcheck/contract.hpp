// The ABI's contract checker (kernels/api/contract.cpp), run on the host before anything is
// launched or written: by the shipped kernels on both backends, the plugin kit's plugins, the
// test plugins and the Python bridge. A backend adds its own checks (the cuda plugin: pointers
// live on one device) after these.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "normcheck/abi.h"
#include "normcheck/dtype.hpp"

namespace nc {

// bytes of one element of a dtype: the vocabulary's size_of under the kernels' older name
inline std::size_t dtype_size(nc_dtype t) { return size_of(t); }

// a violation: which argument, its value, and the rule it breaks
struct violation {
  std::string message;
};

// the byte range [first, last) an operand's elements can touch, for overlap checks
struct span {
  const char* name;
  std::uintptr_t first, last;
  bool output;
};

std::optional<violation> check_forward(const nc_forward_args& a);
// workspace_needed: what workspace_size() reports for these arguments
std::optional<violation> check_backward(const nc_backward_args& a, std::size_t workspace_needed);

}  // namespace nc
