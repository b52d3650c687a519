// The ABI's contract checker (kernels/api/contract.cpp), run on the host before anything is
// launched or written: by the shipped kernels on both backends, the plugin kit's plugins, the
// test plugins and the Python bridge. A backend adds its own checks (the cuda plugin: pointers
// live on one device) after these.
#pragma once

#include <array>
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

// an operand's byte range less its pointer, and where that pointer sits in the call's arguments
struct relative_span {
  const char* name;
  std::size_t field;  // the pointer's byte offset in the arguments
  std::uintptr_t first, last;
  bool output;
};

// The contract's verdict on a call's layout, kept between calls. Every rule but four reads the
// layout alone: every argument but the operands' pointers and the stream. The four that read
// pointers: no operand with elements is null; the workspace is 16-byte aligned; in place,
// residual_out is the residual itself; no output shares a byte with another operand. A memo
// holds the last layout a thread's calls had when found valid, with each operand's byte range
// relative to its pointer: a call of that layout is judged by the four pointer rules, against
// those ranges (the rest were checked for that layout, so none is skipped); any other call,
// and any call the pointer rules reject, gets the whole check and its message.
template <class Args>
struct contract_memo {
  Args layout{};  // the arguments, their pointers and stream zeroed
  std::size_t workspace = 0;
  bool held = false;
  std::array<relative_span, 10> spans{};
  std::size_t count = 0;
};

std::optional<violation> check_forward(const nc_forward_args& a);
// workspace_needed: what workspace_size() reports for these arguments
std::optional<violation> check_backward(const nc_backward_args& a, std::size_t workspace_needed);
// the same verdicts, a layout's rules checked once while the memo holds it
std::optional<violation> check_forward(const nc_forward_args& a, contract_memo<nc_forward_args>& memo);
std::optional<violation> check_backward(const nc_backward_args& a, std::size_t workspace_needed,
                                        contract_memo<nc_backward_args>& memo);

}  // namespace nc
