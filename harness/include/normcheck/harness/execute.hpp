// Running a case on a kernel plugin: every operand in the testbed's arena (arena.hpp), the
// forward, then (if asked) the backward on the r the forward wrote; after each call the whole
// arena is checked, and any violation is a property_failure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "normcheck/harness/case.hpp"
#include "normcheck/harness/arena.hpp"
#include "normcheck/kernel.hpp"

namespace nc::harness {

/// what a call pair wrote, as bit patterns: y and dx row-major M×N in x's dtype, r M fp32
/// values, dgamma N values in gamma's dtype; and the code path of each call
struct outputs {
  std::vector<std::uint32_t> y, r, dx, dgamma;
  /// a residual add's h as the forward stored it (M×N in x's dtype; else empty)
  std::vector<std::uint32_t> residual_out;
  /// a dynamic scale's values as the forward wrote them (fp32 bits, scale_rows × scale_cols
  /// row-major; else empty). A quantized output's y holds its codes (one byte each)
  std::vector<std::uint32_t> scale;
  std::string forward_path, backward_path;
  /// the workspace the backward asked for (0 when only the forward ran)
  std::size_t workspace_bytes = 0;
  /// the bytes the backward left in its workspace, where workspace_reuse::keep asked for them
  std::vector<std::uint8_t> workspace_left;
};

enum class calls { forward, forward_and_backward };

/// how the backward's workspace is handed out. Fresh (the default): exactly what workspace_size
/// asks, every byte the arena's background (0xff: NaN as fp32). Reused, as a caching allocator
/// hands a freed block out again: the workspace starts with the bytes an earlier call left in
/// its own (finite partials where that call's inputs were), and is either exactly what the call
/// asks or the whole block (the earlier call's size where that is more)
struct workspace_reuse {
  std::vector<std::uint8_t> left;  ///< the block's bytes, as the earlier call left them (empty: fresh)
  bool whole_block = false;        ///< the call is given left.size() bytes where it asks fewer
  bool keep = false;               ///< outputs::workspace_left gets what this call's backward left
};

/// how a call pair is made beyond its case
struct call_setting {
  workspace_reuse workspace;  ///< how the backward's workspace is handed out
  bool late_inputs = false;   ///< each call's inputs arrive late (late_inputs.hpp: CUDA plugins)
  page_guard guard = page_guard::none;  ///< pages no call may touch around each operand (arena.hpp)
  bool sparse = false;                  ///< the host image holds only the bytes near the elements (arena.hpp)
};

/// runs c on k; throws property_failure for a memory violation or an NC_ERR_UNSUPPORTED (the
/// generators draw inside the kernel's declared capabilities), and what the kernel throws
/// (contract_error, kernel_error) for a call it rejects or fails. A forward-only kernel runs
/// only the forward (outputs::dx and dgamma hold zeros); a kernel that writes no r gets
/// r.data = NULL and outputs::r holds zeros.
outputs execute(const kernel& k, const norm_case& c, calls which);
/// the same, made as `setting` says
outputs execute(const kernel& k, const norm_case& c, calls which, const call_setting& setting);

/// "a call inside its declared capabilities (…): dtype pair fp16, layouts dense, M = 3, N = 8,
/// epsilon 1e-06", for the failure of a kernel that does not serve what it declared
std::string declared_context(const kernel& k, const norm_case& c);

/// what of a case lies outside these capabilities ("" if nothing): execute() refuses such a case
std::string outside_capabilities(const capabilities& caps, const norm_case& c);

/// A case in an arena, for properties that build a call themselves (the contract property
/// breaks one argument of a valid call): x, gamma and dy hold the case's values and y, r, dx,
/// dgamma the poison; each operand starts on a 256-byte boundary (as a cudaMalloc of its own)
/// and lies at the case's offset and strides. The two calls share every position.
struct case_arena {
  case_arena(const kernel& k, const norm_case& c, const call_setting& setting = {});
  case_arena(const case_arena&) = delete;
  case_arena& operator=(const case_arena&) = delete;

  call_spec forward, backward;  ///< forward.writes_r: the kernel writes r (else r.data is NULL)
  arena memory;

  /// asks the kernel's workspace_size for the backward and places what it asks for (exact,
  /// after the operands; the arena grows, so the pointers change and it is asked again: an
  /// answer that keeps changing is a property_failure), or `block` bytes where that is more
  /// (workspace_mode::larger: a caching allocator's block); the bytes asked for
  std::size_t place_workspace(const kernel& k, std::size_t block = 0);
};

/// a case's operand values as typed contiguous memory (x, dy: M×N row-major; gamma: N),
/// for the oracle's views
std::vector<unsigned char> typed(nc_dtype type, const std::vector<std::uint32_t>& bits);

}  // namespace nc::harness
