// The testbed: every kernel call normcheck makes (the properties, the contract property, both
// fuzz targets, kernel_test, replay) runs with its operands in one arena of plugin memory.
//
// The arena is one allocation, [guard band][region][guard band]; each operand of a call lies
// in the region at a byte position of its own (after the previous one, past a gap of at least
// 64 bytes, on a 16- or 256-byte boundary), or relative to an earlier operand, so that a
// fuzzer can make operands alias and overlap. Before a call every byte of the arena is 0xff (a
// quiet NaN in every dtype at every alignment, so a kernel that reads a gap, a stride hole or a
// guard band turns its row into NaN); input elements then get their values and output elements
// the dtype's poison (normcheck/dtype.hpp: a signalling NaN no kernel produces). After a call
// (check): every byte is as it was except the elements of the call's outputs, each of which
// must have been written, and its workspace; after a rejected call every byte is as it was.
// Frozen inputs are the same rule: what a call does not write must not change, and each upload
// makes what the last call wrote (the forward's y and r) an input of the next (the backward).
//
// Isolation: a call in the arena is an ordinary call into the plugin; what isolates it is the
// process it runs in. The properties, replay and the mutation runner run their checks in a
// forked worker under a per-call watchdog (worker.hpp); the fuzz targets run under libFuzzer,
// whose own handlers make a crash, an abort, an exit() or a timeout a finding with its input
// saved. kernel_test runs in its test process, on the shipped kernels only.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "normcheck/dtype.hpp"
#include "normcheck/harness/case.hpp"
#include "normcheck/kernel.hpp"
#include "normcheck/variant.hpp"

namespace nc::harness {

/// the operands of a call pair, in one order everywhere: the forward uses x, gamma, y, r and
/// the backward x, gamma, dy, r, dx, dgamma (the plain operator's operand_count, what a fuzz
/// input places); a residual add's forward adds residual and residual_out, its backward
/// residual_grad, and a quantized output's forward its scale (abi.h "Variants"): all_operands in all
enum operand_index : int {
  op_x, op_gamma, op_dy, op_y, op_r, op_dx, op_dgamma, operand_count,
  op_residual = operand_count, op_residual_out, op_residual_grad, op_scale, all_operands
};
inline constexpr std::array<const char*, all_operands> operand_names = {
    "x", "gamma", "dy", "y", "r", "dx", "dgamma", "residual", "residual_out", "residual_grad", "scale"};
inline constexpr bool is_matrix(int k) { return k == op_x || k == op_dy || k == op_y || k == op_dx || k >= op_residual; }

/// bytes of an element as the arena places it: the vocabulary's size_of, and 2 for a code
/// outside the enum (such a call is rejected, but its operand still takes a place)
constexpr std::size_t element_bytes(nc_dtype type) { return nc::size_of(type) != 0 ? nc::size_of(type) : 2; }
/// "fp32", "fp16", "bf16", or "code N"
std::string dtype_text(nc_dtype type);

/// how the backward's workspace is given
enum class workspace_mode : std::uint8_t {
  exact,       ///< what workspace_size reports, 16-byte aligned
  short_by,    ///< param + 1 bytes less (0 if that is nothing)
  null,        ///< a null pointer claiming the needed bytes
  misaligned,  ///< the needed bytes, param % 15 + 1 bytes past a 16-byte boundary
  larger,      ///< param bytes more than needed
  none,        ///< null and 0 bytes
  aliased,     ///< the needed bytes at operand param % operand_count's base (a plain operand)
  claimed,     ///< exactly param bytes, whatever is needed
  count
};

/// pages no call may touch around the operands (page_guard): each operand (and the workspace)
/// lies between two of them, its last byte against the next one (after_each) or its first byte
/// against the one before (before_each), as close as its alignment lets it. In host memory
/// (simt, a C plugin) they are protected for the call, so a read or write of one faults and the
/// worker names the operand, the element and the kernel thread (a read whose value is never
/// used shows there, and nowhere else); in device memory they only keep the operands apart
enum class page_guard : std::uint8_t { none, after_each, before_each };

/// one operand of a call: dtype, layout (counted in elements, as in the ABI) and where its
/// element 0 sits in the arena's region (in bytes)
struct operand {
  const char* name = "";
  bool matrix = false;
  nc_dtype dtype = NC_F32;
  bool null = false;
  std::int64_t offset = 0;
  std::int64_t row_stride = 0;  ///< matrices only (a per-head view's token stride)
  std::int64_t col_stride = 1;  ///< a vector's stride
  std::int64_t head_stride = 0; ///< a matrix of a call with heads > 1
  std::int64_t batch_stride = 0; ///< a matrix of a call with tokens > 0 (a 4-D view)
  // placement
  int alias_target = -1;        ///< placed relative to this earlier operand, or -1: after the previous one
  std::int64_t alias_delta = 0; ///< base = the target's base + alias_delta elements of this dtype
  unsigned base_shift = 0;      ///< else: base = a base_align boundary + base_shift elements
  std::int64_t base = 0;        ///< byte position of element 0 in the region
  bool fits = false;            ///< every element lies inside the region (placement decides)
  /// its poison is a code a kernel may write (e4m3 codes: the negative NaN): check() does not
  /// call an element holding it unwritten (execute() tells the two apart with a second call)
  bool poison_writable = false;
};

/// a call: direction, sizes, ε, the operation, its operands and the workspace
struct call_spec {
  bool backward = false;
  std::int64_t m = 0, n = 1;
  float epsilon = 1e-6f;
  nc_operation op{};  ///< abi.h "Variants": a residual add has the three residual operands
  std::int64_t heads = 1;  ///< per-head rows (op.rows HEADS or BATCHES): rows a token; 1 otherwise
  std::int64_t tokens = 0; ///< a 4-D view (op.rows == NC_ROWS_BATCHES): tokens a batch; 0 otherwise
  std::array<operand, all_operands> ops;
  bool writes_r = true;             ///< false: a forward of a kernel that writes no r (r.data = NULL, abi.h NC_NO_R)
  std::int64_t base_align = 16;     ///< every placed operand starts on this boundary (+ base_shift)
  std::int64_t alias_align = 1;     ///< an aliased operand's start is rounded down to this (and its element size)
  /// the call's stream (abi.h: NULL, the default stream), and whether its inputs arrive late
  /// (late_inputs.hpp: written after the upload by a kernel of that stream)
  void* stream = nullptr;
  bool late_inputs = false;
  page_guard guard = page_guard::none;  ///< set before place_operands
  /// the host image holds only the bytes around the elements (and the workspace): a layout of
  /// rows gigabytes apart costs what its elements do, on the host. Plugin memory is the whole
  /// region; the bytes no element is near are neither uploaded nor checked
  bool sparse = false;

  workspace_mode workspace = workspace_mode::exact;
  std::size_t workspace_param = 0;   ///< the mode's bytes (a fuzz input gives 16 bits of them)
  bool workspace_null = false;
  std::int64_t workspace_base = 0;    ///< byte position in the region
  std::size_t workspace_bytes = 0;    ///< what the call claims
  std::size_t workspace_needed = 0;   ///< what the plugin's workspace_size reported
  bool workspace_fits = true;         ///< false: too large for the arena (the pointer gets no room)

  /// whether operand k has a place in the arena (every operand of the operation, in both calls)
  bool present(int k) const { return k < operand_count || (k == op_scale ? quantizes(op) : adds_residual(op)); }
  /// whether operand k takes part in this call, and whether the call writes it
  bool uses(int k) const;
  bool writes(int k) const;
  /// elements of operand k: rows × cols (a vector has 1 row; both 0 for an empty operand)
  std::int64_t rows(int k) const;
  std::int64_t cols(int k) const;
  /// element (i, j) of operand k, counted from its data pointer
  std::int64_t index(int k, std::int64_t i, std::int64_t j) const;
};

/// the region bytes [first, last) spanned by operand k's elements; empty (first == last) for an
/// operand with no elements or that does not fit
struct byte_span {
  std::int64_t first = 0, last = 0;
  bool overlaps(const byte_span& o) const { return first < last && o.first < o.last && first < o.last && o.first < last; }
};
byte_span span_of(const call_spec& c, int k);

/// how large an arena may grow: the fuzz targets keep each call small (an operand that would
/// pass a limit does not fit, and gets no room); the properties place every case whole
struct arena_limits {
  std::int64_t region_bytes = std::numeric_limits<std::int64_t>::max() / 4;
  std::int64_t operand_elements = std::numeric_limits<std::int64_t>::max() / 4;
};

/// Plugin memory for one call: the region between two guard bands, and its host image.
class arena {
 public:
  static constexpr std::int64_t guard_bytes = 256;  // keeps the region 256-byte aligned, as cudaMalloc
  static constexpr std::uint8_t background = 0xff;

  explicit arena(const kernel& k, arena_limits limits = {}) : kernel_(k), limits_(limits) {}
  ~arena();
  arena(const arena&) = delete;
  arena& operator=(const arena&) = delete;

  /// computes every operand's base and fits (not the workspace), then reserves the region.
  /// Each call starts a new placement whose image is all background; an arena placed call
  /// after call keeps its host memory (and the image's) where it is large enough, so that a
  /// fuzz target's inputs cost no allocation
  void place_operands(call_spec& c);
  /// places the workspace (c.workspace, for c.workspace_needed bytes); grows the region if it
  /// must, keeping what the host image holds (true: the pointers changed, so the caller must
  /// ask workspace_size again), unless the region would pass the limit (then workspace_fits is
  /// false and the workspace gets no room)
  bool place_workspace(call_spec& c);

  /// the region's bytes in plugin memory and in the host image
  void* device(std::int64_t position) const {
    return chunks_.empty() ? static_cast<char*>(device_) + front_ + position : chunk_device(position);
  }
  std::uint8_t* host(std::int64_t position) { return image_.data() + image_at(position); }
  const std::uint8_t* host(std::int64_t position) const { return image_.data() + image_at(position); }
  std::int64_t region_bytes() const { return region_; }
  /// the whole allocation in plugin memory: the region, its guard bands (and, with page guards,
  /// the bytes before the region's first page); null with page guards in device memory, where
  /// each run of bytes between two guard pages is an allocation of its own
  void* allocation() const { return device_; }
  std::int64_t allocation_bytes() const { return allocated_; }
  /// the host image's bytes (the allocation's, but for a sparse call: those near its elements)
  std::int64_t image_bytes() const { return std::int64_t(image_.size()); }

  /// the page guards' positions (page_guard; empty without), and the page size. In device
  /// memory the guard pages are not allocated: each run of bytes between two of them is an
  /// allocation of exactly its used bytes, so compute-sanitizer memcheck reports an access past
  /// an operand (or before it) as out of bounds
  const std::vector<std::int64_t>& guard_pages() const { return guards_; }
  static std::int64_t page_bytes();
  /// makes the guard pages untouchable in host memory (a no-op in device memory), and touchable again
  void protect_guards();
  void unprotect_guards();
  const arena_limits& limits() const { return limits_; }

  /// element bits of operand k (low bits for 16-bit dtypes)
  void set(const call_spec& c, int k, std::int64_t i, std::int64_t j, std::uint32_t bits);
  std::uint32_t get(const call_spec& c, int k, std::int64_t i, std::int64_t j) const;
  /// every element of operand k (if it fits) set to bits
  void fill(const call_spec& c, int k, std::uint32_t bits);
  /// every element of operand k in row-major order (rows × cols, as call_spec counts them)
  std::vector<std::uint32_t> elements(const call_spec& c, int k) const;
  /// f(host byte pointer) for every element of operand k in row-major order (k must fit)
  template <class F>
  void each(const call_spec& c, int k, F&& f) {
    const operand& o = c.ops[std::size_t(k)];
    const std::int64_t size = std::int64_t(element_bytes(o.dtype)), rows = c.rows(k), cols = c.cols(k);
    if (rows == 0 || cols == 0) return;  // an empty operand's offset may be anything
    // a stride is used only where there is a second column to reach
    const std::int64_t col_step = cols > 1 ? o.col_stride * size : 0;
    for (std::int64_t i = 0; i < rows; ++i) {
      std::uint8_t* p = host(o.base + c.index(k, i, 0) * size);
      for (std::int64_t j = 0; j < cols; ++j, p += col_step)
        // a sparse image holds each element's bytes, not the strides between them
        f(extents_.empty() ? p : host(o.base + c.index(k, i, j) * size));
    }
  }

  void upload();    ///< host image → plugin memory, remembered as the state before the call
  void download();  ///< plugin memory → host image

  /// what the last call did wrong to memory, or nothing: accepted says whether the call
  /// succeeded (then its outputs' elements must be written and its workspace is free)
  std::optional<std::string> check(const call_spec& c, bool accepted) const;

  /// a byte position of the region in words: "x element (2, 3)", "a stride gap of gamma", ...
  std::string where(const call_spec& c, std::int64_t position) const;

 private:
  void reserve(std::int64_t region);
  void reserve_sparse(std::int64_t region);
  /// device_ holds at least bytes (a kept host allocation where it is large enough)
  void hold(std::int64_t bytes);
  void release_whole();
  /// poisons (for AddressSanitizer) a kept host allocation's bytes past the first bytes
  void mark_slack(std::int64_t bytes);
  /// the image's index of a region position, and back (sparse: through the extents)
  std::int64_t image_at(std::int64_t position) const { return extents_.empty() ? front_ + position : extent_at(position); }
  std::int64_t extent_at(std::int64_t position) const;
  std::int64_t position_at(std::int64_t index) const;
  void* chunk_device(std::int64_t position) const;
  void release_chunks() noexcept;

  const kernel& kernel_;
  arena_limits limits_;
  std::int64_t region_ = 0;
  std::int64_t front_ = guard_bytes;  ///< image (and allocation) bytes before the region
  void* device_ = nullptr;
  std::int64_t allocated_ = 0;  ///< bytes at device_ the call uses
  std::int64_t capacity_ = 0;   ///< bytes at device_ allocated
  std::vector<std::uint8_t> image_, before_;
  bool guarded_ = false;              ///< the call has page guards: the region starts on a page
  std::vector<std::int64_t> guards_;  ///< their positions
  bool protected_ = false;
  /// page guards in device memory: the bytes each placed operand and the workspace span, and
  /// an allocation per run between guard pages ([first, last) of the region, sorted)
  std::vector<std::pair<std::int64_t, std::int64_t>> used_;
  struct chunk {
    std::int64_t first, last;
    void* ptr;
  };
  std::vector<chunk> chunks_;
  /// sparse: the region's runs the image holds ([first, last) positions, sorted, disjoint; at:
  /// the run's index in the image), and the runs the operands and workspace want
  struct extent {
    std::int64_t first, last, at;
  };
  std::vector<extent> extents_;
  std::vector<std::pair<std::int64_t, std::int64_t>> wanted_;
};

/// the ABI arguments of a call in an arena
nc_forward_args forward_args(const call_spec& c, const arena& a);
nc_backward_args backward_args(const call_spec& c, const arena& a);

/// what a plugin call did
struct call_result {
  enum kind { accepted, rejected, failed } result = accepted;
  std::string message;  ///< the plugin's error text
  nc_status status = NC_OK;
};

/// runs the call on the plugin: upload (late where c.late_inputs), call, synchronize, download
/// (a failed call whose download fails too leaves the image as uploaded)
call_result run_call(const kernel& k, const call_spec& c, arena& a);

/// one line naming everything about a call, for failure messages
std::string describe(const call_spec& c);
/// "exact", "short", ...: a workspace mode in words
const char* workspace_mode_name(workspace_mode m);

}  // namespace nc::harness
