// One call of a fuzz target: its operands placed in a single arena of plugin memory (so that
// operands can alias and overlap), the contract model that says whether the call is valid,
// the call itself, and the memory check after it.
//
// The arena is [guard band][region][guard band]. Every byte of it starts as 0xff (a NaN in
// every dtype at every alignment, so a kernel that reads a gap or a guard band turns its row
// into NaN); input elements then get their values and output elements a signalling NaN no
// kernel can produce. After a call every byte must be as it was except the elements of the
// call's outputs (each of which must have been written) and its workspace; after a rejected
// call every byte must be as it was.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_input.hpp"
#include "normcheck/dtype.hpp"
#include "normcheck/harness/case.hpp"
#include "normcheck/harness/guarded.hpp"
#include "normcheck/kernel.hpp"

namespace nc::fuzz {

/// signalling NaN of a dtype: an output element before the call; the vocabulary's poison
/// (normcheck/dtype.hpp), so every testbed marks an unwritten element alike
inline std::uint32_t poison(nc_dtype type) { return nc::poison_nan(type); }
/// bytes of an element as the arena places it: the vocabulary's size_of, and 2 for a code
/// outside the enum (the call is rejected, but its operand still takes a place in the arena)
constexpr std::size_t size_of(nc_dtype type) { return nc::valid_dtype(type) ? nc::size_of(type) : 2; }
/// "fp32", "fp16", "bf16", or "code N"
std::string dtype_text(nc_dtype type);

/// one operand of a call: dtype, layout (counted in elements, as in the ABI) and where its
/// element 0 sits in the arena's region (in bytes)
struct operand {
  const char* name = "";
  bool matrix = false;
  nc_dtype dtype = NC_F32;
  bool null = false;
  std::int64_t offset = 0;
  std::int64_t row_stride = 0;  ///< matrices only
  std::int64_t col_stride = 1;  ///< a vector's stride
  // placement
  int alias_target = -1;        ///< placed relative to this earlier operand, or -1: after the previous one
  std::int64_t alias_delta = 0; ///< base = the target's base + alias_delta elements of this dtype
  unsigned base_shift = 0;      ///< else: base = a 16-byte boundary + base_shift elements
  std::int64_t base = 0;        ///< byte position of element 0 in the region
  bool fits = false;            ///< every element lies inside the region (placement decides)
};

/// a call, realized: sizes, ε, the seven operands and the workspace
struct call_spec {
  bool backward = false;
  std::int64_t m = 0, n = 1;
  float epsilon = 1e-6f;
  std::array<operand, operand_count> ops;
  bool writes_r = true;             ///< false: a forward of a kernel that writes no r (r.data = NULL, abi.h NC_NO_R)
  std::int64_t base_align = 16;     ///< every placed operand starts on this boundary (+ base_shift)
  std::int64_t alias_align = 1;     ///< an aliased operand's start is rounded down to this (and its element size)

  workspace_mode workspace = workspace_mode::exact;
  std::uint16_t workspace_param = 0;
  bool workspace_null = false;
  std::int64_t workspace_base = 0;    ///< byte position in the region
  std::size_t workspace_bytes = 0;    ///< what the call claims
  std::size_t workspace_needed = 0;   ///< what the plugin's workspace_size reported
  bool workspace_fits = true;         ///< false: too large for the arena (the pointer gets no room)

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

/// Plugin memory for one call: the region between two guard bands, and its host image.
class arena {
 public:
  static constexpr std::int64_t guard_bytes = 256;  // keeps the region 256-byte aligned, as cudaMalloc
  static constexpr std::uint8_t background = 0xff;

  explicit arena(const kernel& k) : kernel_(k) {}
  ~arena();
  arena(const arena&) = delete;
  arena& operator=(const arena&) = delete;

  /// computes every operand's base and fits (not the workspace), then reserves the region
  void place_operands(call_spec& c);
  /// places the workspace for c.workspace_needed; grows the region if it must (true: the
  /// pointers changed, so the caller must ask workspace_size again), unless the region would
  /// pass max_region_bytes (then workspace_fits is false and the workspace gets no room)
  bool place_workspace(call_spec& c);

  /// the region's bytes in plugin memory and in the host image
  void* device(std::int64_t position) const { return static_cast<char*>(device_) + guard_bytes + position; }
  std::uint8_t* host(std::int64_t position) { return image_.data() + guard_bytes + position; }
  const std::uint8_t* host(std::int64_t position) const { return image_.data() + guard_bytes + position; }
  std::int64_t region_bytes() const { return region_; }

  /// element bits of operand k (low bits for 16-bit dtypes)
  void set(const call_spec& c, int k, std::int64_t i, std::int64_t j, std::uint32_t bits);
  std::uint32_t get(const call_spec& c, int k, std::int64_t i, std::int64_t j) const;
  /// every element of operand k (if it fits) set to bits
  void fill(const call_spec& c, int k, std::uint32_t bits);
  /// f(host byte pointer) for every element of operand k in row-major order (k must fit)
  template <class F>
  void each(const call_spec& c, int k, F&& f) {
    const operand& o = c.ops[std::size_t(k)];
    const std::int64_t size = std::int64_t(size_of(o.dtype)), rows = c.rows(k), cols = c.cols(k);
    if (rows == 0 || cols == 0) return;  // an empty operand's offset may be anything
    // a stride is used only where there is a second row (column) to reach
    const std::int64_t row_step = rows > 1 ? o.row_stride * size : 0, col_step = cols > 1 ? o.col_stride * size : 0;
    std::uint8_t* row = host(o.base + o.offset * size);
    for (std::int64_t i = 0; i < rows; ++i, row += row_step) {
      std::uint8_t* p = row;
      for (std::int64_t j = 0; j < cols; ++j, p += col_step) f(p);
    }
  }

  void upload();    ///< host image → plugin memory, remembered as the state before the call
  void download();  ///< plugin memory → host image

  /// what the last call did wrong to memory, or nothing: accepted says whether the call
  /// succeeded (then its outputs' elements must be written and its workspace is free)
  std::optional<std::string> check(const call_spec& c, bool accepted) const;

  /// a byte position of the region in words: "x element (2, 3)", "gap after gamma", ...
  std::string where(const call_spec& c, std::int64_t position) const;

 private:
  void reserve(std::int64_t region);

  const kernel& kernel_;
  std::int64_t region_ = 0;
  void* device_ = nullptr;
  std::vector<std::uint8_t> image_, before_;
};

/// the ABI arguments of a call in an arena
nc_forward_args forward_args(const call_spec& c, const arena& a);
nc_backward_args backward_args(const call_spec& c, const arena& a);

/// every rule the call breaks, by normcheck's contract (DESIGN.md, abi.h), derived
/// independently of the kernels' own checker; empty for a valid call
std::vector<rule_break> contract_breaks(const call_spec& c, const arena& a);

/// what a plugin call did
struct outcome {
  enum kind { accepted, rejected, failed } result = accepted;
  std::string message;  ///< the plugin's error text
  nc_status status = NC_OK;
};

/// runs the call on the plugin: upload, call, synchronize, download
outcome execute(const kernel& k, const call_spec& c, arena& a);

/// one line naming everything about a call, for failure messages
std::string describe(const call_spec& c);

/// the call as case-file lines (key = value), its layout in ABI terms
std::string case_lines(const call_spec& c);

}  // namespace nc::fuzz
