// Guarded buffers: every operand a kernel sees sits in plugin memory between two guard
// bands, and every slot of its buffer that is not one of its elements (the offset before
// the first element, row padding, the holes of a column stride) is a gap. Before a call:
//   an input's guard bands and gaps hold gap_nan (a quiet NaN: a kernel that reads one
//   turns its row into NaN, which the comparisons see), its elements the case's values;
//   an output's guard bands, gaps and elements all hold poison_nan, a signalling NaN.
// After a call, check() finds what the call did wrong: an input (value, gap or guard) that
// changed, an output guard band or gap that changed, an output element still holding
// poison_nan. No kernel can produce poison_nan: IEEE arithmetic never returns a signalling
// NaN, and the fp16/bf16 stores of the kernels quiet every NaN, so an element holding it
// was never written — a NaN a kernel legitimately writes (a row with a NaN input) is quiet.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "normcheck/harness/case.hpp"
#include "normcheck/kernel.hpp"

namespace nc::harness {

// the fillers, gap_nan and poison_nan, are the dtype vocabulary's (normcheck/dtype.hpp)
using nc::gap_nan;
using nc::poison_nan;

enum class operand_role { input, output };

/// One operand in plugin memory with a host image of the whole allocation (guard bands
/// included). The element slots are given by a mask over the buffer's extent.
class guarded_buffer {
 public:
  static constexpr std::int64_t guard_bytes = 256;  // keeps the first slot 256-byte aligned, as cudaMalloc

  /// slots: the operand's extent; element_slots: the slot index of each element in order;
  /// placed: where the buffer lies (its front guard band) inside plugin memory the caller owns
  /// (one allocation for every operand of a call, as the fuzz arena; bytes_for() bytes), or
  /// null: the buffer allocates its own
  guarded_buffer(const kernel& k, std::string name, nc_dtype type, std::int64_t slots,
                 std::vector<std::int64_t> element_slots, operand_role role, void* placed = nullptr);
  /// the plugin memory of a buffer of this many slots, guard bands included
  static std::size_t bytes_for(nc_dtype type, std::int64_t slots) {
    return std::size_t(2 * guard_bytes + slots * std::int64_t(size_of(type)));
  }
  ~guarded_buffer();
  guarded_buffer(const guarded_buffer&) = delete;
  guarded_buffer& operator=(const guarded_buffer&) = delete;

  /// plugin memory of slot 0
  void* data() const { return static_cast<char*>(device_) + guard_bytes; }

  /// element k (in element order: row-major for a matrix), in the host image
  void set_element(std::int64_t k, std::uint32_t bits);
  std::uint32_t element(std::int64_t k) const;
  std::int64_t element_count() const { return std::int64_t(element_slots_.size()); }
  /// every element, in element order, from the host image
  std::vector<std::uint32_t> elements() const;

  /// copies the host image to plugin memory and remembers it as the state before a call
  void upload();
  /// copies plugin memory into the host image
  void download();
  /// from now on the buffer must not change: its current image (as downloaded) is checked
  /// like an input's
  void freeze();
  /// an output again, after freeze(): its elements must be written by the next call
  void reopen();

  /// what the last call did wrong to this buffer, or nothing (see the file comment);
  /// needs download() first
  std::optional<std::string> check() const;

 private:
  std::uint32_t slot(std::int64_t s) const;  // s counts slots from the front guard band
  std::string where(std::int64_t s) const;

  const kernel& kernel_;
  std::string name_;
  nc_dtype type_;
  std::int64_t slots_;
  std::vector<std::int64_t> element_slots_;
  std::vector<bool> is_element_;
  operand_role role_;
  operand_role declared_;
  void* device_ = nullptr;
  bool owns_ = true;                   // false: device_ lies in the caller's allocation
  std::vector<unsigned char> image_;   // what plugin memory holds (after download)
  std::vector<unsigned char> before_;  // what it held before the call
};

/// A byte range of plugin memory between guard bands (the backward's workspace): a call may
/// write its contents, never its guard bands; a rejected call may write neither. It starts as
/// all-ones bytes (NaN in every float dtype): a kernel that reads it before writing it shows.
class guarded_scratch {
 public:
  guarded_scratch(const kernel& k, std::size_t bytes);
  ~guarded_scratch();
  guarded_scratch(const guarded_scratch&) = delete;
  guarded_scratch& operator=(const guarded_scratch&) = delete;

  void* data() const { return bytes_ == 0 ? nullptr : static_cast<char*>(device_) + guarded_buffer::guard_bytes; }
  /// what was written that should not have been: the guard bands, or (contents) anything
  std::optional<std::string> check(bool contents);
  /// what was written outside contents [first, last) (a call given a workspace that starts
  /// `first` bytes in), guard bands included
  std::optional<std::string> check_outside(std::size_t first, std::size_t last);

 private:
  const kernel& kernel_;
  std::size_t bytes_;
  void* device_ = nullptr;
};

/// the slot of every element of an M×N operand, row-major
std::vector<std::int64_t> element_slots(const matrix_layout& l, std::int64_t m, std::int64_t n);
std::vector<std::int64_t> element_slots(const vector_layout& l, std::int64_t count);

}  // namespace nc::harness
