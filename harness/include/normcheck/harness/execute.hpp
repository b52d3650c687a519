// Running a case on a kernel plugin: every operand in a guarded buffer (guarded.hpp), the
// forward, then (if asked) the backward on the r the forward wrote; after each call every
// buffer is checked, and any violation is a property_failure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "normcheck/harness/case.hpp"
#include "normcheck/harness/guarded.hpp"
#include "normcheck/kernel.hpp"

namespace nc::harness {

/// what a call pair wrote, as bit patterns: y and dx row-major M×N in x's dtype, r M fp32
/// values, dgamma N values in gamma's dtype; and the code path of each call
struct outputs {
  std::vector<std::uint32_t> y, r, dx, dgamma;
  std::string forward_path, backward_path;
  /// the workspace the backward asked for (0 when only the forward ran)
  std::size_t workspace_bytes = 0;
};

enum class calls { forward, forward_and_backward };

/// runs c on k; throws property_failure for a memory violation or an NC_ERR_UNSUPPORTED (the
/// generators draw inside the kernel's declared capabilities), and what the kernel throws
/// (contract_error, kernel_error) for a call it rejects or fails. A forward-only kernel runs
/// only the forward (outputs::dx and dgamma hold zeros); a kernel that writes no r gets
/// r.data = NULL and outputs::r holds zeros.
outputs execute(const kernel& k, const norm_case& c, calls which);

/// "a call inside its declared capabilities (…): dtype pair fp16, layouts dense, M = 3, N = 8,
/// epsilon 1e-06", for the failure of a kernel that does not serve what it declared
std::string declared_context(const kernel& k, const norm_case& c);

/// what of a case lies outside these capabilities ("" if nothing): execute() refuses such a case
std::string outside_capabilities(const capabilities& caps, const norm_case& c);

/// The guarded buffers of a case and the calls over them, for properties that build a call
/// themselves (the contract property breaks one argument of a valid call). Like the fuzz
/// arena, a call's operands share one allocation of plugin memory, each between its own guard
/// bands, so a kernel that writes past an operand lands in a guard band of the same block.
class case_buffers {
 private:
  /// the one allocation every buffer lies in; declared first, so it outlives them
  struct block {
    const kernel& k;
    void* base;
    ~block() { k.release(base); }
  };
  std::vector<std::size_t> at_;  // each buffer's byte position in the block
  block block_;
  void* placed(int buffer) const { return static_cast<char*>(block_.base) + at_[std::size_t(buffer)]; }

 public:
  case_buffers(const kernel& k, const norm_case& c);
  case_buffers(const case_buffers&) = delete;
  case_buffers& operator=(const case_buffers&) = delete;

  guarded_buffer x, gamma, dy, y, r, dx, dgamma;

  nc_forward_args forward_args() const;
  /// without a workspace
  nc_backward_args backward_args() const;

  /// every buffer must stay as it is now (as uploaded, or as last downloaded)
  void freeze_all();
  /// downloads every buffer; the first violation (guarded_buffer::check), naming the call
  std::optional<std::string> check(const char* call);

 private:
  const norm_case& case_;
};

/// a case's operand values as typed contiguous memory (x, dy: M×N row-major; gamma: N),
/// for the oracle's views
std::vector<unsigned char> typed(nc_dtype type, const std::vector<std::uint32_t>& bits);

}  // namespace nc::harness
