#include "normcheck/harness/guarded.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace nc::harness {

std::vector<std::int64_t> element_slots(const matrix_layout& l, std::int64_t m, std::int64_t n) {
  std::vector<std::int64_t> slots;
  slots.reserve(std::size_t(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) slots.push_back(l.offset + i * l.row_stride + j * l.col_stride);
  return slots;
}

std::vector<std::int64_t> element_slots(const vector_layout& l, std::int64_t count) {
  std::vector<std::int64_t> slots;
  slots.reserve(std::size_t(count));
  for (std::int64_t k = 0; k < count; ++k) slots.push_back(l.offset + k * l.stride);
  return slots;
}

guarded_buffer::guarded_buffer(const kernel& k, std::string name, nc_dtype type, std::int64_t slots,
                               std::vector<std::int64_t> element_slots, operand_role role, void* placed)
    : kernel_(k), name_(std::move(name)), type_(type), slots_(slots), element_slots_(std::move(element_slots)),
      is_element_(std::size_t(slots), false), role_(role), declared_(role), device_(placed), owns_(placed == nullptr),
      image_(bytes_for(type, slots)) {
  for (std::int64_t s : element_slots_) is_element_[std::size_t(s)] = true;
  const std::uint32_t filler = role == operand_role::input ? gap_nan(type) : poison_nan(type);
  // one typed fill: operands of a far-row case span billions of slots
  if (size_of(type) == 2) {
    const std::uint16_t half = std::uint16_t(filler);
    std::fill_n(reinterpret_cast<std::uint16_t*>(image_.data()), image_.size() / 2, half);
  } else {
    std::fill_n(reinterpret_cast<std::uint32_t*>(image_.data()), image_.size() / 4, filler);
  }
  if (owns_) device_ = kernel_.alloc(image_.size());
}

guarded_buffer::~guarded_buffer() {
  if (owns_) kernel_.release(device_);
}

void guarded_buffer::set_element(std::int64_t k, std::uint32_t bits) {
  const std::size_t size = size_of(type_);
  std::memcpy(&image_[std::size_t(guard_bytes) + std::size_t(element_slots_[std::size_t(k)]) * size], &bits, size);
}

std::uint32_t guarded_buffer::slot(std::int64_t s) const {
  std::uint32_t bits = 0;
  const std::size_t size = size_of(type_);
  std::memcpy(&bits, &image_[std::size_t(s) * size], size);
  return bits;
}

std::uint32_t guarded_buffer::element(std::int64_t k) const {
  return slot(guard_bytes / std::int64_t(size_of(type_)) + element_slots_[std::size_t(k)]);
}

void guarded_buffer::upload() {
  kernel_.upload(device_, image_.data(), image_.size());
  before_ = image_;
}

void guarded_buffer::download() { kernel_.download(image_.data(), device_, image_.size()); }

void guarded_buffer::freeze() {
  before_ = image_;
  role_ = operand_role::input;
}

void guarded_buffer::reopen() { role_ = declared_; }

std::string guarded_buffer::where(std::int64_t s) const {
  const std::int64_t guard_slots = guard_bytes / std::int64_t(size_of(type_));
  if (s < guard_slots) return "the guard band before it";
  if (s >= guard_slots + slots_) return "the guard band after it";
  const std::int64_t slot_index = s - guard_slots;
  if (!is_element_[std::size_t(slot_index)]) return "gap slot " + std::to_string(slot_index) + " (not an element)";
  for (std::size_t k = 0; k < element_slots_.size(); ++k)
    if (element_slots_[k] == slot_index) return "element " + std::to_string(k) + " (slot " + std::to_string(slot_index) + ")";
  return "slot " + std::to_string(slot_index);
}

std::optional<std::string> guarded_buffer::check() const {
  const std::int64_t guard_slots = guard_bytes / std::int64_t(size_of(type_));
  const std::int64_t total = std::int64_t(image_.size() / size_of(type_));
  const std::uint32_t poison = poison_nan(type_);
  const auto hex = [](std::uint32_t v) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%x", v);
    return std::string(text);
  };
  if (role_ == operand_role::input) {
    if (std::memcmp(image_.data(), before_.data(), image_.size()) == 0) return std::nullopt;
    for (std::int64_t s = 0; s < total; ++s)
      if (std::memcmp(&image_[std::size_t(s) * size_of(type_)], &before_[std::size_t(s) * size_of(type_)], size_of(type_)) != 0) {
        std::uint32_t was = 0;
        std::memcpy(&was, &before_[std::size_t(s) * size_of(type_)], size_of(type_));
        return "input '" + name_ + "' was written at " + where(s) + ": " + hex(was) + " became " + hex(slot(s));
      }
    return std::nullopt;
  }
  for (std::int64_t s = 0; s < total; ++s) {
    const std::int64_t slot_index = s - guard_slots;
    const bool element = slot_index >= 0 && slot_index < slots_ && is_element_[std::size_t(slot_index)];
    const std::uint32_t bits = slot(s);
    if (element && bits == poison)
      return "output '" + name_ + "' " + where(s) + " was never written (still the poison " + hex(poison) + ")";
    if (!element && bits != poison)
      return "output '" + name_ + "': " + where(s) + " was written (" + hex(bits) + ")";
  }
  return std::nullopt;
}

namespace {
// every byte 0xFF: read as fp32, fp16, bf16 or fp64 a workspace word is a NaN, so a kernel that
// accumulates onto its workspace without first writing it (abi.h: its contents before the
// call mean nothing) gives NaN outputs, not an error of a few ulps that a bound could admit
constexpr unsigned char scratch_guard = 0xFF;
}

guarded_scratch::guarded_scratch(const kernel& k, std::size_t bytes) : kernel_(k), bytes_(bytes) {
  std::vector<unsigned char> image(bytes + 2 * guarded_buffer::guard_bytes, scratch_guard);
  device_ = kernel_.alloc(image.size());
  kernel_.upload(device_, image.data(), image.size());
}

guarded_scratch::~guarded_scratch() { kernel_.release(device_); }

std::optional<std::string> guarded_scratch::check(bool contents) {
  // [front guard | contents | back guard], each part downloaded only when it is checked
  const std::size_t guard = guarded_buffer::guard_bytes;
  const struct {
    std::size_t at, bytes;
    const char* what;
  } parts[] = {{0, guard, "the guard band before the workspace"},
               {guard, contents ? bytes_ : 0, "the workspace"},
               {guard + bytes_, guard, "the guard band after the workspace"}};
  std::vector<unsigned char> image;
  for (const auto& part : parts) {
    image.resize(part.bytes);
    if (part.bytes > 0) kernel_.download(image.data(), static_cast<const char*>(device_) + part.at, part.bytes);
    for (std::size_t b = 0; b < part.bytes; ++b)
      if (image[b] != scratch_guard) return std::string(part.what) + " was written at byte " + std::to_string(b);
  }
  return std::nullopt;
}

std::vector<std::uint32_t> guarded_buffer::elements() const {
  std::vector<std::uint32_t> bits(static_cast<std::size_t>(element_count()));
  for (std::int64_t k = 0; k < element_count(); ++k) bits[std::size_t(k)] = element(k);
  return bits;
}

std::optional<std::string> guarded_scratch::check_outside(std::size_t first, std::size_t last) {
  const std::size_t guard = guarded_buffer::guard_bytes;
  std::vector<unsigned char> image(2 * guard + bytes_);
  kernel_.download(image.data(), device_, image.size());
  for (std::size_t b = 0; b < image.size(); ++b) {
    if (b >= guard + first && b < guard + last) continue;
    if (image[b] == scratch_guard) continue;
    if (b < guard) return "the guard band before the workspace was written at byte " + std::to_string(b);
    if (b >= guard + bytes_) return "the guard band after the workspace was written at byte " + std::to_string(b - guard - bytes_);
    return "the workspace was written at byte " + std::to_string(b - guard) + ", outside the " +
           std::to_string(last - first) + " bytes given from byte " + std::to_string(first);
  }
  return std::nullopt;
}

}  // namespace nc::harness
