#include "normcheck/harness/arena.hpp"

#include <dlfcn.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "normcheck/harness/late_inputs.hpp"
#include "normcheck/harness/worker.hpp"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NORMCHECK_ARENA_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define NORMCHECK_ARENA_ASAN 1
#endif
#ifdef NORMCHECK_ARENA_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace nc::harness {

namespace {

using wide = __int128;

// a product of two 64-bit values fits in 128 bits, a sum of three of them may not: anything
// past 2^100 is just "too large" for every use here
wide clamped(wide v) {
  constexpr wide limit = wide(1) << 100;
  return v > limit ? limit : v < -limit ? -limit : v;
}

std::int64_t align_up(std::int64_t v, std::int64_t to) { return (v + to - 1) / to * to; }

// the index range an operand's elements span, counted from its data pointer
struct index_range {
  wide count = 0;  // elements
  wide first = 0, last = -1;
};

index_range range_of(const call_spec& c, int k) {
  const operand& o = c.ops[std::size_t(k)];
  index_range r;
  const wide rows = std::max<std::int64_t>(c.rows(k), 0), cols = std::max<std::int64_t>(c.cols(k), 0);
  r.count = rows * cols;
  if (r.count == 0) return r;
  // a per-head view's rows: tokens at the row stride, heads at the head stride, and the batches
  // of a 4-D view at the batch stride (tokens that do not divide the rows: the contract's to reject)
  const wide heads = is_matrix(k) && c.heads > 1 && rows > 0 ? c.heads : 1;
  const bool batched = is_matrix(k) && c.tokens > 0 && rows % (heads * wide(c.tokens)) == 0;
  const wide tokens = batched ? wide(c.tokens) : rows / heads, batches = batched ? rows / (heads * tokens) : 1;
  const wide rs = tokens > 1 ? o.row_stride : 0, hs = heads > 1 ? o.head_stride : 0, cs = cols > 1 ? o.col_stride : 0;
  const wide bs = batches > 1 ? o.batch_stride : 0;
  const wide a = clamped((tokens - 1) * rs), h = clamped((heads - 1) * hs), b = clamped((cols - 1) * cs),
             d = clamped((batches - 1) * bs);
  r.first = o.offset + std::min<wide>(a, 0) + std::min<wide>(h, 0) + std::min<wide>(b, 0) + std::min<wide>(d, 0);
  r.last = o.offset + std::max<wide>(a, 0) + std::max<wide>(h, 0) + std::max<wide>(b, 0) + std::max<wide>(d, 0);
  return r;
}

}  // namespace

std::string dtype_text(nc_dtype type) {
  return nc::valid_dtype(type) ? nc::dtype_name(type) : "code " + std::to_string(int(type));
}

// ---- call_spec --------------------------------------------------------------------------

bool call_spec::uses(int k) const {
  if (k == op_x || k == op_gamma) return true;
  if (k == op_r) return backward || writes_r;
  if (k == op_scale) return !backward && quantizes(op);
  if (k >= op_residual) return adds_residual(op) && (backward ? k == op_residual_grad : k != op_residual_grad);
  return backward ? (k == op_dy || k == op_dx || k == op_dgamma) : k == op_y;
}

bool call_spec::writes(int k) const {
  if (k == op_scale) return !backward && dynamic_scale(op);
  if (k >= op_residual) return !backward && k == op_residual_out && adds_residual(op);
  return backward ? (k == op_dx || k == op_dgamma) : (k == op_y || (k == op_r && writes_r));
}

namespace {
// an operand's rows and columns before an empty dimension empties both: a matrix is M × N (the
// scale scale_rows × scale_cols), r M entries, gamma and dgamma N
std::pair<std::int64_t, std::int64_t> shape_of(const call_spec& c, int k) {
  if (k == op_scale) return {scale_rows(c.op, c.m), c.n >= 1 ? scale_cols(c.op, c.n) : 0};
  if (is_matrix(k)) return {c.m, c.n};
  return {1, k == op_r ? c.m : c.n};
}
}  // namespace

// an operand with a dimension ≤ 0 has no elements: both its counts are 0
std::int64_t call_spec::rows(int k) const {
  const auto [r, c] = shape_of(*this, k);
  return r <= 0 || c <= 0 ? 0 : r;
}
std::int64_t call_spec::cols(int k) const {
  const auto [r, c] = shape_of(*this, k);
  return r <= 0 || c <= 0 ? 0 : c;
}

std::int64_t call_spec::index(int k, std::int64_t i, std::int64_t j) const {
  const operand& o = ops[std::size_t(k)];
  if (!is_matrix(k)) return o.offset + j * o.col_stride;
  // the rows the kernel reads: a fuzzed call's heads or tokens out of range read as 2-D rows
  const row_shape rows{heads > 1 ? heads : 1, tokens > 0 ? tokens : 0};
  const matrix_layout l{o.offset, o.row_stride, o.col_stride, o.head_stride, o.batch_stride};
  return o.offset + row_start(i, rows, l) + j * o.col_stride;
}

byte_span span_of(const call_spec& c, int k) {
  const operand& o = c.ops[std::size_t(k)];
  const index_range r = range_of(c, k);
  if (!o.fits || r.count == 0) return {};
  const std::int64_t size = std::int64_t(element_bytes(o.dtype));
  return {o.base + std::int64_t(r.first) * size, o.base + std::int64_t(r.last + 1) * size};
}

// ---- arena ------------------------------------------------------------------------------

arena::~arena() {
  unprotect_guards();
  release_chunks();
  if (device_) {
    mark_slack(0);
    kernel_.release(device_);
  }
}

// A kept host allocation larger than the call's: the bytes past the call's are poisoned for
// AddressSanitizer, so that an access past the back guard band faults as it would past an
// allocation of exactly the call's size (bytes 0 unpoisons them all, before a free)
void arena::mark_slack([[maybe_unused]] std::int64_t bytes) {
#ifdef NORMCHECK_ARENA_ASAN
  if (device_ == nullptr || kernel_.device_memory()) return;
  ASAN_UNPOISON_MEMORY_REGION(device_, std::size_t(capacity_));
  if (bytes > 0 && bytes < capacity_)
    ASAN_POISON_MEMORY_REGION(static_cast<char*>(device_) + bytes, std::size_t(capacity_ - bytes));
#endif
}

void arena::release_whole() {
  if (device_ == nullptr) return;
  mark_slack(0);
  kernel_.free(device_);
  device_ = nullptr, allocated_ = 0, capacity_ = 0;
}

void arena::hold(std::int64_t bytes) {
  // host memory is kept from one placement to the next (a fuzz target places an input after
  // another in one arena: a fresh allocation each time costs its page faults), device memory
  // is allocated to the byte, as compute-sanitizer's bounds need
  if (device_ == nullptr || kernel_.device_memory() || capacity_ < bytes) {
    release_whole();
    device_ = kernel_.alloc(std::size_t(bytes));
    capacity_ = bytes;
  }
  allocated_ = bytes;
  mark_slack(bytes);
}

void arena::release_chunks() noexcept {
  for (const chunk& k : chunks_) kernel_.release(k.ptr);
  chunks_.clear();
}

std::int64_t arena::extent_at(std::int64_t position) const {
  const auto it = std::upper_bound(extents_.begin(), extents_.end(), position,
                                   [](std::int64_t p, const extent& e) { return p < e.first; });
  if (it == extents_.begin() || position >= std::prev(it)->last)
    throw std::logic_error("region byte " + std::to_string(position) + " lies outside the sparse arena's image");
  return std::prev(it)->at + (position - std::prev(it)->first);
}

std::int64_t arena::position_at(std::int64_t index) const {
  if (extents_.empty()) return index - front_;
  for (const extent& e : extents_)
    if (index >= e.at && index < e.at + (e.last - e.first)) return e.first + (index - e.at);
  return index - front_;
}

void* arena::chunk_device(std::int64_t position) const {
  // the run holding the position, or the first after it (an operand's data pointer may lie
  // before its first element: an offset)
  const auto it = std::find_if(chunks_.begin(), chunks_.end(), [&](const chunk& k) { return position < k.last; });
  const chunk& k = it != chunks_.end() ? *it : chunks_.back();
  return static_cast<char*>(k.ptr) + (position - k.first);
}

std::int64_t arena::page_bytes() {
  static const std::int64_t page = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
  return page;
}

void arena::reserve(std::int64_t region) {
  unprotect_guards();
  for (const chunk& k : chunks_) kernel_.free(k.ptr);
  chunks_.clear();
  // a region that grows keeps what its image holds: the bytes past the old region (its back
  // guard band, the new room) are background, as everything not an element is
  if (!wanted_.empty()) {
    release_whole();
    return reserve_sparse(region);
  }
  std::vector<std::uint8_t> kept;
  if (!image_.empty() && extents_.empty()) kept.assign(image_.begin() + front_, image_.begin() + front_ + region_);
  extents_.clear();
  region_ = region;
  if (guarded_ && kernel_.device_memory()) {
    release_whole();
    // an allocation per run between guard pages, from its first byte to its last used one
    image_.assign(std::size_t(region + 2 * guard_bytes), background);
    front_ = guard_bytes;
    std::copy(kept.begin(), kept.end(), image_.begin() + front_);
    std::vector<std::int64_t> bounds = guards_;
    std::sort(bounds.begin(), bounds.end());
    bounds.push_back(region);
    const std::int64_t page = page_bytes();
    for (std::size_t i = 0; i + 1 < bounds.size(); ++i) {
      const std::int64_t first = bounds[i] + page, end = bounds[i + 1];
      std::int64_t last = first;
      for (const auto& [a, b] : used_)
        if (a < end && b > first) last = std::max(last, std::min(b, end));
      if (last > first) chunks_.push_back({first, last, kernel_.alloc(std::size_t(last - first))});
    }
    return;
  }
  // page guards: a page more, so that the region can start on a page of the allocation
  const std::int64_t slack = guarded_ ? page_bytes() : 0;
  const std::size_t total = std::size_t(region + 2 * guard_bytes + slack);
  hold(std::int64_t(total));
  const auto start = std::int64_t(reinterpret_cast<std::uintptr_t>(device_)) + guard_bytes;
  front_ = guard_bytes + (slack > 0 ? (slack - start % slack) % slack : 0);
  image_.assign(total, background);
  std::copy(kept.begin(), kept.end(), image_.begin() + front_);
}

// the whole region in plugin memory; in the image, the wanted runs (merged) and the guard bands,
// keeping what the old image held
void arena::reserve_sparse(std::int64_t region) {
  const std::vector<extent> old_extents = std::move(extents_);
  const std::vector<std::uint8_t> old_image = std::move(image_);
  region_ = region;
  front_ = guard_bytes;
  allocated_ = capacity_ = region + 2 * guard_bytes;
  device_ = kernel_.alloc(std::size_t(allocated_));
  std::vector<std::pair<std::int64_t, std::int64_t>> runs = wanted_;
  runs.emplace_back(-guard_bytes, 0);
  runs.emplace_back(region, region + guard_bytes);
  for (auto& [a, b] : runs) a = std::max(a, -guard_bytes), b = std::min(b, region + guard_bytes);
  std::sort(runs.begin(), runs.end());
  extents_.clear();
  std::int64_t size = 0;
  for (const auto& [a, b] : runs) {
    if (a >= b) continue;
    if (!extents_.empty() && a <= extents_.back().last) {
      const std::int64_t grow = std::max<std::int64_t>(0, b - extents_.back().last);
      extents_.back().last += grow, size += grow;
    } else {
      extents_.push_back({a, b, size});
      size += b - a;
    }
  }
  image_.assign(std::size_t(size), background);
  for (const extent& o : old_extents)
    for (const extent& e : extents_) {
      const std::int64_t a = std::max(o.first, e.first), b = std::min(o.last, e.last);
      if (a < b) std::copy_n(old_image.begin() + (o.at + a - o.first), b - a, image_.begin() + (e.at + a - e.first));
    }
}

void arena::protect_guards() {
  if (kernel_.device_memory() || guards_.empty() || protected_) return;
  for (const std::int64_t g : guards_)
    if (mprotect(device(g), std::size_t(page_bytes()), PROT_NONE) != 0)
      throw std::runtime_error(std::string("cannot protect a guard page of the arena: ") + std::strerror(errno));
  protected_ = true;
}

void arena::unprotect_guards() {
  if (!protected_) return;
  for (const std::int64_t g : guards_) mprotect(device(g), std::size_t(page_bytes()), PROT_READ | PROT_WRITE);
  protected_ = false;
}

void arena::place_operands(call_spec& c) {
  unprotect_guards();
  // a new placement: nothing of an earlier call's image is kept (its memory is, for reuse)
  image_.clear(), extents_.clear();
  guarded_ = c.guard != page_guard::none;
  guards_.clear(), used_.clear();
  const std::int64_t page = page_bytes();
  std::int64_t cursor = 0, end = 0;
  if (guarded_) guards_.push_back(0), cursor = page;  // the region starts with a guard page
  for (int k = 0; k < all_operands; ++k) {
    operand& o = c.ops[std::size_t(k)];
    if (!c.present(k)) {  // an operand the operation does not have takes no room
      o.fits = false;
      continue;
    }
    const std::int64_t size = std::int64_t(element_bytes(o.dtype));
    const bool alias = o.alias_target >= 0 && o.alias_target < k;
    if (alias) {
      const operand& t = c.ops[std::size_t(o.alias_target)];
      const std::int64_t base = std::max<std::int64_t>(0, t.base + o.alias_delta * size);
      o.base = base - base % std::max(size, c.alias_align);
    } else if (!guarded_) {
      cursor = align_up(cursor + 64, c.base_align);
      o.base = cursor + std::int64_t(o.base_shift) * size;
    }
    const index_range r = range_of(c, k);
    if (!alias && guarded_) {
      // between the guard page before cursor and the next: its last byte against the next
      // (after_each) or its first byte against the one before (before_each), o.base keeping
      // its residue modulo base_align
      const std::int64_t shift = std::int64_t(o.base_shift) * size, align = c.base_align;
      const wide first_rel = r.count > 0 ? wide(r.first) * size : 0, last_rel = r.count > 0 ? wide(r.last + 1) * size : 0;
      if (r.count > 0 && r.first >= 0 && last_rel <= limits_.region_bytes) {
        std::int64_t base = 0;
        if (c.guard == page_guard::after_each) {
          base = align_up(cursor + std::int64_t(last_rel) + align, page) - std::int64_t(last_rel);
          base -= ((base - shift) % align + align) % align;
        } else {
          // the data pointer (first_rel before the first byte) stays past the guard page before
          // the cursor, out of the operand before it (whose allocation, in device memory, would
          // otherwise be the one it points into): an offset past a page moves the operand on by
          // whole pages, with a guard page before its first byte
          if (first_rel > page) {
            cursor += align_up(std::int64_t(first_rel) - page, page);
            guards_.push_back(cursor - page);
          }
          base = cursor - std::int64_t(first_rel);
          base += ((shift - base) % align + align) % align;
        }
        o.base = base;
      } else {
        o.base = cursor + shift;
      }
    }
    const wide last_byte = wide(o.base) + (r.last + 1) * size;
    o.fits = !o.null && r.count <= limits_.operand_elements && r.first >= 0 && last_byte <= limits_.region_bytes;
    const std::int64_t stop = o.fits && r.count > 0 ? std::int64_t(last_byte) : o.base;
    end = std::max(end, stop);
    if (guarded_ && o.fits && r.count > 0) used_.emplace_back(o.base + r.first * size, stop);
    if (!alias && guarded_ && stop > cursor) {
      guards_.push_back(align_up(stop, page));  // the guard page after it
      cursor = guards_.back() + page;
    } else if (!alias) {
      cursor = std::max(cursor, stop);
    }
  }
  wanted_.clear();
  if (c.sparse) {
    // a page either side of every element: where a row offset computed in 32 bits lands (row
    // i at i * (stride mod 2^32) elements, next to row 0) is in the image too
    for (int k = 0; k < all_operands; ++k) {
      const operand& o = c.ops[std::size_t(k)];
      if (!o.fits) continue;
      const std::int64_t size = std::int64_t(element_bytes(o.dtype));
      for (std::int64_t i = 0; i < c.rows(k); ++i)
        for (std::int64_t j = 0; j < c.cols(k); ++j) {
          const std::int64_t p = o.base + c.index(k, i, j) * size;
          wanted_.emplace_back(p - page, p + size + page);
        }
    }
  }
  reserve(guarded_ ? std::max(cursor, align_up(end, page) + page) : align_up(end, 16) + 64);
}

bool arena::place_workspace(call_spec& c) {
  if (!c.backward) return false;
  const std::size_t need = c.workspace_needed, param = c.workspace_param;
  std::int64_t base = region_;  // the region ends with a 64-byte gap: the workspace goes after it
  std::size_t bytes = need;
  c.workspace_null = false;
  switch (c.workspace) {
    case workspace_mode::exact: break;
    case workspace_mode::short_by: bytes = need > param + 1 ? need - (param + 1) : 0; break;
    case workspace_mode::null: c.workspace_null = true; break;
    case workspace_mode::misaligned: base += std::int64_t(param % 15 + 1); break;
    case workspace_mode::larger: bytes = need + param; break;
    case workspace_mode::none: c.workspace_null = true; bytes = 0; break;
    case workspace_mode::aliased: {
      const operand& t = c.ops[param % operand_count];
      const std::int64_t first = t.base + std::max<std::int64_t>(0, std::min<std::int64_t>(t.offset, region_)) *
                                              std::int64_t(element_bytes(t.dtype));
      base = std::min(first, region_) / 16 * 16;
      break;
    }
    default: bytes = param; break;  // claimed
  }
  c.workspace_base = base;
  c.workspace_bytes = bytes;
  c.workspace_fits = true;
  const std::int64_t footprint = std::int64_t(std::min<std::size_t>(bytes, std::size_t(limits_.region_bytes) + 1));
  std::int64_t end = c.workspace_null ? region_ : align_up(base + footprint, 16) + 64;
  if (guarded_ && !c.workspace_null) {
    // the region ends with a guard page: the workspace starts on the page after it, and has a
    // guard page of its own after its last byte. An empty one still gets a byte of device
    // memory: its pointer is checked like any other
    const std::int64_t used = std::max<std::int64_t>(footprint, 1);
    end = align_up(base + used, page_bytes()) + page_bytes();
    if (end <= limits_.region_bytes && (guards_.empty() || guards_.back() < end - page_bytes()))
      guards_.push_back(end - page_bytes()), used_.emplace_back(base, base + used);
  }
  if (!wanted_.empty() && !c.workspace_null) wanted_.emplace_back(base, base + footprint + 64);
  if (end <= region_) return false;
  if (end > limits_.region_bytes) {
    c.workspace_fits = false;
    return false;
  }
  reserve(end);
  return true;
}

void arena::set(const call_spec& c, int k, std::int64_t i, std::int64_t j, std::uint32_t bits) {
  const operand& o = c.ops[std::size_t(k)];
  const std::size_t size = element_bytes(o.dtype);
  std::memcpy(host(o.base + c.index(k, i, j) * std::int64_t(size)), &bits, size);
}

std::uint32_t arena::get(const call_spec& c, int k, std::int64_t i, std::int64_t j) const {
  const operand& o = c.ops[std::size_t(k)];
  const std::size_t size = element_bytes(o.dtype);
  std::uint32_t bits = 0;
  std::memcpy(&bits, host(o.base + c.index(k, i, j) * std::int64_t(size)), size);
  return bits;
}

void arena::fill(const call_spec& c, int k, std::uint32_t bits) {
  if (!c.ops[std::size_t(k)].fits) return;
  const std::size_t size = element_bytes(c.ops[std::size_t(k)].dtype);
  each(c, k, [&](std::uint8_t* p) { std::memcpy(p, &bits, size); });
}

std::vector<std::uint32_t> arena::elements(const call_spec& c, int k) const {
  std::vector<std::uint32_t> bits;
  bits.reserve(std::size_t(c.rows(k) * c.cols(k)));
  for (std::int64_t i = 0; i < c.rows(k); ++i)
    for (std::int64_t j = 0; j < c.cols(k); ++j) bits.push_back(get(c, k, i, j));
  return bits;
}

void arena::upload() {
  for (const extent& e : extents_) kernel_.upload(device(e.first), image_.data() + e.at, std::size_t(e.last - e.first));
  if (chunks_.empty() && extents_.empty()) kernel_.upload(device_, image_.data(), image_.size());
  for (const chunk& k : chunks_) kernel_.upload(k.ptr, host(k.first), std::size_t(k.last - k.first));
  before_ = image_;
}

void arena::download() {
  for (const extent& e : extents_) kernel_.download(image_.data() + e.at, device(e.first), std::size_t(e.last - e.first));
  if (chunks_.empty() && extents_.empty()) kernel_.download(image_.data(), device_, image_.size());
  for (const chunk& k : chunks_) kernel_.download(host(k.first), k.ptr, std::size_t(k.last - k.first));
}

std::string arena::where(const call_spec& c, std::int64_t p) const {
  if (p < 0) return "the guard band before the arena (" + std::to_string(-p) + " byte(s) before it)";
  if (p >= region_) return "the guard band after the arena (byte " + std::to_string(p - region_) + " of it)";
  const auto role = [&](int k) {
    return std::string(c.uses(k) ? (c.writes(k) ? "output " : "input ") : "") + c.ops[std::size_t(k)].name;
  };
  const auto aside = [&](int k) {
    return c.uses(k) ? std::string() : std::string(" (not an operand of the ") + (c.backward ? "backward" : "forward") + ")";
  };
  for (int k = 0; k < all_operands; ++k) {
    const operand& o = c.ops[std::size_t(k)];
    const std::int64_t size = std::int64_t(element_bytes(o.dtype));
    if (!o.fits) continue;
    const index_range r = range_of(c, k);
    if (r.count == 0 || p < o.base + r.first * size || p >= o.base + (r.last + 1) * size) continue;
    const std::int64_t slot = (p - o.base) / size;
    for (std::int64_t i = 0; i < c.rows(k); ++i)
      for (std::int64_t j = 0; j < c.cols(k); ++j)
        if (c.index(k, i, j) == slot)
          return role(k) + (o.matrix ? " element (" + std::to_string(i) + ", " + std::to_string(j) + ")"
                                     : " element " + std::to_string(j)) + aside(k);
    return "a stride gap of " + role(k) + " (slot " + std::to_string(slot) + ")" + aside(k);
  }
  const std::int64_t reach = std::int64_t(std::min<std::size_t>(std::max(c.workspace_bytes, c.workspace_needed),
                                                                 std::size_t(limits_.region_bytes)));
  if (c.backward && !c.workspace_null && p >= c.workspace_base && p < c.workspace_base + reach) {
    const std::int64_t at = p - c.workspace_base;
    return "workspace byte " + std::to_string(at) +
           (at >= std::int64_t(c.workspace_bytes) ? " (past the " + std::to_string(c.workspace_bytes) +
                                                         " bytes the call gave; workspace_size asked for " +
                                                         std::to_string(c.workspace_needed) + ")"
                                                   : "");
  }
  // a gap between operands: named by the nearest operand on either side
  int before = -1, after = -1;
  std::int64_t before_end = 0, after_start = 0;
  for (int k = 0; k < all_operands; ++k) {
    const byte_span s = span_of(c, k);
    if (s.first == s.last) continue;
    if (s.last <= p && (before < 0 || s.last > before_end)) before = k, before_end = s.last;
    if (s.first > p && (after < 0 || s.first < after_start)) after = k, after_start = s.first;
  }
  if (after >= 0 && (before < 0 || after_start - p <= p - before_end + 1))
    return "a gap: " + std::to_string(after_start - p) + " byte(s) before the first element of " + role(after) +
           aside(after);
  if (before >= 0)
    return "a gap: " + std::to_string(p - before_end + 1) + " byte(s) past the last element of " + role(before) +
           aside(before);
  return "a gap of the arena (region byte " + std::to_string(p) + ")";
}

std::optional<std::string> arena::check(const call_spec& c, bool accepted) const {
  // the byte ranges of the image the call may change, merged; everything else must be as before
  std::vector<std::pair<std::int64_t, std::int64_t>> free;
  if (accepted) {
    for (int k = 0; k < all_operands; ++k) {
      if (!c.uses(k) || !c.writes(k) || !c.ops[std::size_t(k)].fits) continue;
      const std::int64_t size = std::int64_t(element_bytes(c.ops[std::size_t(k)].dtype));
      const std::int64_t base = c.ops[std::size_t(k)].base;
      for (std::int64_t i = 0; i < c.rows(k); ++i)
        for (std::int64_t j = 0; j < c.cols(k); ++j) {
          const std::int64_t p = image_at(base + c.index(k, i, j) * size);
          if (!free.empty() && free.back().second == p) free.back().second = p + size;
          else free.emplace_back(p, p + size);
        }
    }
    if (c.backward && !c.workspace_null) {
      const std::int64_t first = std::clamp<std::int64_t>(image_at(c.workspace_base), 0, std::int64_t(image_.size()));
      free.emplace_back(first, first + std::int64_t(std::min<std::size_t>(c.workspace_bytes, image_.size() - std::size_t(first))));
    }
    std::sort(free.begin(), free.end());
  }
  std::int64_t changed = 0, first = -1;
  auto scan = [&](std::int64_t from, std::int64_t to) {
    if (from >= to || std::memcmp(image_.data() + from, before_.data() + from, std::size_t(to - from)) == 0) return;
    for (std::int64_t p = from; p < to; ++p)
      if (image_[std::size_t(p)] != before_[std::size_t(p)] && changed++ == 0) first = p;
  };
  std::int64_t at = 0;
  for (const auto& [lo, hi] : free) {
    scan(at, lo);
    at = std::max(at, hi);
  }
  scan(at, std::int64_t(image_.size()));
  std::ostringstream out;
  if (changed > 0) {
    const std::int64_t p = position_at(first);
    out << (accepted ? "" : "a rejected call ") << "changed " << changed << " byte(s) it must not write; the first is "
        << where(c, p) << ": 0x" << std::hex << int(before_[std::size_t(first)]) << " -> 0x"
        << int(image_[std::size_t(first)]) << std::dec;
    return out.str();
  }
  if (!accepted) return std::nullopt;
  for (int k = 0; k < all_operands; ++k) {
    if (!c.uses(k) || !c.writes(k) || !c.ops[std::size_t(k)].fits || c.ops[std::size_t(k)].poison_writable) continue;
    const std::uint32_t p = poison_nan(c.ops[std::size_t(k)].dtype);
    std::int64_t unwritten = 0, ui = 0, uj = 0;
    for (std::int64_t i = 0; i < c.rows(k); ++i)
      for (std::int64_t j = 0; j < c.cols(k); ++j)
        if (get(c, k, i, j) == p && unwritten++ == 0) ui = i, uj = j;
    if (unwritten > 0) {
      out << "never wrote " << unwritten << " element(s) of output " << c.ops[std::size_t(k)].name << "; the first is ";
      if (is_matrix(k)) out << "(" << ui << ", " << uj << ")";
      else out << uj;
      out << ", still the poison 0x" << std::hex << p;
      return out.str();
    }
  }
  return std::nullopt;
}

// ---- the call ---------------------------------------------------------------------------

namespace {

nc_matrix matrix_arg(const call_spec& c, const arena& a, int k) {
  const operand& o = c.ops[std::size_t(k)];
  return {o.null ? nullptr : a.device(o.base), o.dtype, o.offset, o.row_stride, o.col_stride};
}

nc_vector vector_arg(const call_spec& c, const arena& a, int k) {
  const operand& o = c.ops[std::size_t(k)];
  return {o.null ? nullptr : a.device(o.base), o.dtype, o.offset, o.col_stride};
}

}  // namespace

nc_forward_args forward_args(const call_spec& c, const arena& a) {
  nc_forward_args f{c.m, c.n, c.epsilon, matrix_arg(c, a, op_x), vector_arg(c, a, op_gamma), matrix_arg(c, a, op_y),
                    vector_arg(c, a, op_r), c.stream};
  f.op = c.op;
  if (adds_residual(c.op)) f.residual = matrix_arg(c, a, op_residual), f.residual_out = matrix_arg(c, a, op_residual_out);
  if (quantizes(c.op)) f.scale = matrix_arg(c, a, op_scale);
  if (c.op.rows != NC_ROWS_MATRIX) {
    const auto head = [&](int k) { return c.ops[std::size_t(k)].head_stride; };
    const auto batch = [&](int k) { return c.ops[std::size_t(k)].batch_stride; };
    f.head = {c.heads, head(op_x), head(op_y), head(op_residual), head(op_residual_out),
              c.tokens, {batch(op_x), batch(op_y), batch(op_residual), batch(op_residual_out)}};
  }
  return f;
}

nc_backward_args backward_args(const call_spec& c, const arena& a) {
  const auto head = [&](int k) { return c.ops[std::size_t(k)].head_stride; };
  const auto batch = [&](int k) { return c.ops[std::size_t(k)].batch_stride; };
  const nc_backward_heads heads =
      c.op.rows != NC_ROWS_MATRIX
          ? nc_backward_heads{c.heads, head(op_x), head(op_dy), head(op_dx), head(op_residual_grad),
                              c.tokens, {batch(op_x), batch(op_dy), batch(op_dx), batch(op_residual_grad)}}
          : nc_backward_heads{};
  return {c.m,
          c.n,
          matrix_arg(c, a, op_x),
          vector_arg(c, a, op_gamma),
          matrix_arg(c, a, op_dy),
          vector_arg(c, a, op_r),
          matrix_arg(c, a, op_dx),
          vector_arg(c, a, op_dgamma),
          c.workspace_null ? nullptr : a.device(c.workspace_base),
          c.workspace_bytes,
          c.stream,
          c.op,
          adds_residual(c.op) ? matrix_arg(c, a, op_residual_grad) : nc_matrix{},
          heads};
}

namespace {

// the call a guard_watch watches (a worker runs one call at a time), and the simt plugin's
// function that names its running kernel thread
using simt_thread_fn = bool (*)(unsigned (*)[6]);
struct watched_call {
  const call_spec* call = nullptr;
  const arena* memory = nullptr;
  simt_thread_fn thread = nullptr;
};
watched_call watched_;

// A call of a host-memory plugin with page guards: while it runs, a fault on a guard page is
// named (the operand beside it and the element the access would be, the kernel thread) in the
// worker's last words (note_fault), then the fault kills the worker as any crash does.
class guard_watch {
 public:
  guard_watch(const kernel& k, const call_spec& c, const arena& a) {
    if (k.device_memory() || a.guard_pages().empty()) return;
    watched_ = watched_call{&c, &a, nullptr};
    // a simt plugin names the running kernel thread (kernels/simt/runtime.cpp)
    if (void* plugin = dlopen(k.path().c_str(), RTLD_NOW | RTLD_NOLOAD)) {
      watched_.thread = reinterpret_cast<simt_thread_fn>(dlsym(plugin, "normcheck_simt_thread"));
      dlclose(plugin);
    }
    struct sigaction on{};
    on.sa_sigaction = &on_fault;
    on.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER;
    sigemptyset(&on.sa_mask);
    sigaction(SIGSEGV, &on, &previous_);
    active_ = true;
  }
  ~guard_watch() {
    if (active_) sigaction(SIGSEGV, &previous_, nullptr);
    watched_ = watched_call{};
  }
  guard_watch(const guard_watch&) = delete;
  guard_watch& operator=(const guard_watch&) = delete;

 private:
  // SA_RESETHAND: the access runs again on return and kills the worker by SIGSEGV
  static void on_fault(int, siginfo_t* info, void* context) {
    const watched_call w = watched_;
    if (w.call == nullptr) return;
    const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
    const auto first = reinterpret_cast<std::uintptr_t>(w.memory->device(0));
    const std::int64_t page = arena::page_bytes();
    const std::int64_t p = std::int64_t(address - first);
    if (address < first || p >= w.memory->region_bytes()) return;
    const bool guard = std::any_of(w.memory->guard_pages().begin(), w.memory->guard_pages().end(),
                                   [&](std::int64_t g) { return p >= g && p < g + page; });
    if (!guard) return;
    bool wrote = false;
#if defined(__x86_64__)
    wrote = (static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#else
    (void)context;
#endif
    std::string what = std::string("a ") + (wrote ? "write" : "read") + " outside every operand, of a guard page at " +
                       w.memory->where(*w.call, p);
    unsigned t[6];
    if (w.thread != nullptr && w.thread(&t))
      what += ", by the kernel thread of block (" + std::to_string(t[0]) + ", " + std::to_string(t[1]) + ", " +
              std::to_string(t[2]) + "), thread (" + std::to_string(t[3]) + ", " + std::to_string(t[4]) + ", " +
              std::to_string(t[5]) + ")";
    note_fault(what.c_str());
    const std::string line = "normcheck: " + what + "\n";
    [[maybe_unused]] const ssize_t n = write(STDERR_FILENO, line.data(), line.size());
  }

  struct sigaction previous_{};
  bool active_ = false;
};

}  // namespace

call_result run_call(const kernel& k, const call_spec& c, arena& a) {
  call_result out;
  a.upload();
  if (c.late_inputs) late_inputs::stage(a.allocation(), std::size_t(a.allocation_bytes()));
  try {
    const guard_watch watch(k, c, a);
    a.protect_guards();
    struct unprotect {
      arena& a;
      ~unprotect() { a.unprotect_guards(); }
    } after{a};
    if (c.backward) k.backward(backward_args(c, a));
    else k.forward(forward_args(c, a));
    k.synchronize();
  } catch (const contract_error& e) {
    out = {call_result::rejected, e.what(), NC_ERR_INVALID_ARGUMENT};
  } catch (const kernel_error& e) {
    out = {call_result::failed, e.what(), e.status};
  }
  try {
    a.download();
  } catch (const kernel_error&) {
    // a failed call may have taken the device with it (a sticky fault): the failure is the
    // answer, and the image stays as uploaded
    if (out.result != call_result::failed) throw;
  }
  return out;
}

// ---- words ------------------------------------------------------------------------------

const char* workspace_mode_name(workspace_mode m) {
  switch (m) {
    case workspace_mode::exact: return "exact";
    case workspace_mode::short_by: return "short";
    case workspace_mode::null: return "null";
    case workspace_mode::misaligned: return "misaligned";
    case workspace_mode::larger: return "larger";
    case workspace_mode::none: return "none";
    case workspace_mode::aliased: return "aliased";
    default: return "claimed";
  }
}

std::string describe(const call_spec& c) {
  std::ostringstream out;
  out << (c.backward ? "backward" : "forward") << " m=" << c.m << " n=" << c.n;
  if (!c.backward) out << " eps=" << c.epsilon << " (0x" << std::hex << std::bit_cast<std::uint32_t>(c.epsilon) << std::dec << ")";
  if (!(c.op == nc_operation{})) out << " " << describe_operation(c.op);
  for (int k = 0; k < all_operands; ++k) {
    if (!c.uses(k)) continue;
    const operand& o = c.ops[std::size_t(k)];
    out << " " << o.name << "{" << dtype_text(o.dtype);
    if (o.null) out << " null";
    else out << " @" << o.base;
    out << " off " << o.offset;
    if (o.matrix) out << " rs " << o.row_stride << " cs " << o.col_stride;
    else out << " stride " << o.col_stride;
    if (o.matrix && c.heads > 1) out << " hs " << o.head_stride;
    if (o.matrix && c.tokens > 0) out << " bs " << o.batch_stride;
    out << "}";
  }
  if (c.backward)
    out << " workspace{" << workspace_mode_name(c.workspace) << " " << c.workspace_bytes << " of " << c.workspace_needed
        << (c.workspace_null ? " null" : " @" + std::to_string(c.workspace_base)) << "}";
  return out.str();
}

}  // namespace nc::harness
