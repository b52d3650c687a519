// Byte decoding of the fuzz targets: what each byte of a fuzz input means.
//
// An input is read front to back by a byte_reader; past the end every field reads 0, so any
// prefix of an input is an input too (libFuzzer's shrinking relies on it). Each target's layout
// is written once, as a schema function templated on the direction (byte_reader or
// byte_writer): the targets decode with it and the seed-corpus generator (seed_corpus.cpp)
// encodes with the same function, so the two cannot drift apart.
//
// Fields are raw values wherever the kernel ABI takes raw values (sizes, offsets, strides, ε's
// bits, dtype codes), with a one-byte selector in front of anything that is usually small, so
// that most mutations stay meaningful calls and a few reach the 64-bit corners.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "normcheck/harness/arena.hpp"

namespace nc::fuzz {

/// reads fields little-endian from the front; 0 past the end
class byte_reader {
 public:
  byte_reader(const std::uint8_t* data, std::size_t size) : data_(data), left_(size) {}
  static constexpr bool decoding = true;

  template <class T>
    requires std::is_integral_v<T>
  void field(T& value) {
    using U = std::make_unsigned_t<T>;
    U bits = 0;
    for (std::size_t b = 0; b < sizeof(T) && left_ > 0; ++b, --left_) bits |= U(U(*data_++) << (8 * b));
    value = T(bits);
  }
  /// every byte that is left
  void rest(std::vector<std::uint8_t>& out) {
    out.assign(data_, data_ + left_);
    data_ += left_;
    left_ = 0;
  }

 private:
  const std::uint8_t* data_;
  std::size_t left_;
};

/// the inverse of byte_reader, for the seed-corpus generator
class byte_writer {
 public:
  static constexpr bool decoding = false;

  template <class T>
    requires std::is_integral_v<T>
  void field(T& value) {
    using U = std::make_unsigned_t<T>;
    const U bits = U(value);
    for (std::size_t b = 0; b < sizeof(T); ++b) bytes_.push_back(std::uint8_t(bits >> (8 * b)));
  }
  void rest(std::vector<std::uint8_t>& in) { bytes_.insert(bytes_.end(), in.begin(), in.end()); }
  const std::vector<std::uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<std::uint8_t> bytes_;
};

// ---- contract_fuzzer: a whole call --------------------------------------------------------

/// the operands of a call, in input order (the harness's operand_index); the forward uses x,
/// gamma, y, r and the backward x, gamma, dy, r, dx, dgamma (the others' bytes are read and
/// ignored, so that flipping the direction keeps every other field in place)
using harness::operand_index, harness::operand_count, harness::operand_names, harness::is_matrix;
using enum harness::operand_index;

/// where one operand lives, as bytes
struct operand_bytes {
  static constexpr std::uint8_t null = 1 << 0;          ///< data is a null pointer
  static constexpr std::uint8_t wild = 1 << 1;          ///< offset and strides are raw 64-bit values
  static constexpr std::uint8_t column_major = 1 << 2;  ///< a matrix stored by columns
  static constexpr std::uint8_t alias = 1 << 3;         ///< placed relative to an earlier operand
  std::uint8_t flags = 0;  ///< the bits above; bits 4-6: the base pointer moved by that many elements
  // plain layout (not wild)
  std::uint8_t offset = 0;  ///< elements before the first one
  std::uint8_t stride = 1;  ///< a matrix's col stride (row stride when column-major); a vector's stride
  std::int8_t pad = 0;      ///< a matrix's row padding (column padding when column-major)
  // wild layout
  std::int64_t wild_offset = 0, wild_row_stride = 0, wild_col_stride = 0;  ///< a vector's stride is wild_col_stride
  // alias
  std::uint8_t alias_target = 0;  ///< an earlier operand (modulo this one's index)
  std::int16_t alias_delta = 0;   ///< this operand's base = the target's base + delta elements of this dtype

  unsigned base_shift() const { return (flags >> 4) & 7u; }
};

/// how the backward's workspace is given
using harness::workspace_mode;

struct contract_input {
  static constexpr std::uint8_t backward = 1 << 0;    ///< else the forward
  static constexpr std::uint8_t raw_values = 1 << 1;  ///< element bits from the trailing bytes, else seeded values
  /// the size class, op's top 4 bits: mostly small, so that a run stays well under a millisecond
  static constexpr std::uint8_t large = 0xe0;     ///< M·N ≤ 4096
  static constexpr std::uint8_t long_row = 0xf0;  ///< M is 0 or 1 and N ≤ 33024 (vector-reload in fp32)
  ///                                                anything else: M·N ≤ 256
  std::uint8_t op = 0;
  std::uint8_t m = 1;          ///< 0-127; bit 7 set: wild_m
  std::int64_t wild_m = 0;
  std::uint16_t n = 1;         ///< modulo 257 (large: 4097, long rows: 33025); 0xffff: wild_n
  std::int64_t wild_n = 0;
  std::uint8_t x_dtype = 0;    ///< < 0xf0: code % 3; else the raw code (byte - 0xf0)
  std::uint8_t gamma_dtype = 0;///< < 0xf0: odd is fp32, even is x's dtype; else the raw code (byte - 0xf0)
  /// bit k set: operand (y, dy, dx, r, dgamma)[k] has fault_code as its dtype instead of the one
  /// the contract requires (x's, x's, x's, fp32, gamma's)
  std::uint8_t dtype_faults = 0;
  std::uint8_t fault_code = 0;  ///< the raw dtype code, 0-255
  std::uint8_t epsilon_mode = 0;  ///< % 4: 1e-6, 0, epsilon_bits, 1
  std::uint32_t epsilon_bits = 0;
  std::array<operand_bytes, operand_count> operands{};
  std::uint8_t workspace = 0;     ///< workspace_mode, % count
  std::uint16_t workspace_param = 0;
  std::uint32_t value_seed = 0;
  std::vector<std::uint8_t> values;  ///< the trailing bytes

  static constexpr std::uint8_t wild_m_flag = 0x80;
  static constexpr std::uint16_t wild_n_flag = 0xffff;
  static constexpr std::uint8_t raw_code_from = 0xf0;
};

template <class IO>
void schema(IO& io, operand_bytes& o, bool matrix) {
  io.field(o.flags);
  if (o.flags & operand_bytes::wild) {
    io.field(o.wild_offset);
    if (matrix) io.field(o.wild_row_stride);
    io.field(o.wild_col_stride);
  } else {
    io.field(o.offset);
    io.field(o.stride);
    if (matrix) io.field(o.pad);
  }
  if (o.flags & operand_bytes::alias) {
    io.field(o.alias_target);
    io.field(o.alias_delta);
  }
}

template <class IO>
void schema(IO& io, contract_input& c) {
  io.field(c.op);
  io.field(c.m);
  if (c.m & contract_input::wild_m_flag) io.field(c.wild_m);
  io.field(c.n);
  if (c.n == contract_input::wild_n_flag) io.field(c.wild_n);
  io.field(c.x_dtype);
  io.field(c.gamma_dtype);
  io.field(c.dtype_faults);
  if (c.dtype_faults) io.field(c.fault_code);
  io.field(c.epsilon_mode);
  if (c.epsilon_mode % 4 == 2) io.field(c.epsilon_bits);
  for (int k = 0; k < operand_count; ++k) schema(io, c.operands[std::size_t(k)], is_matrix(k));
  io.field(c.workspace);
  io.field(c.workspace_param);
  io.field(c.value_seed);
  io.rest(c.values);
}

// ---- value_fuzzer: raw bit patterns of a small case --------------------------------------

struct value_input {
  std::uint8_t dtypes = 0;   ///< % 5: fp32, fp16, fp16 + fp32 gamma, bf16, bf16 + fp32 gamma
  std::uint8_t m = 0;        ///< rows: 1 + m % min(8, elements / n)
  std::uint16_t n = 0;       ///< columns: 1 + n % elements
  /// bit 0: every operand one element off 16 bytes (the strided paths); top 4 bits 0xf: a large
  /// case (elements = 4096), else a small one (elements = 256)
  std::uint8_t layout = 0;
  std::uint8_t epsilon_mode = 0;  ///< % 5: 1e-6, 0, epsilon_bits, 2^-100, 1e3
  std::uint32_t epsilon_bits = 0;
  /// the element bits of x (M·N), gamma (N) and dy (M·N), in that order, each little-endian in
  /// its dtype's width; if they run out they start over (none at all: every element is 1)
  std::vector<std::uint8_t> values;

  static constexpr int max_rows = 8;
  static constexpr int max_elements = 4096;
  static constexpr int small_elements = 256;
  static constexpr std::uint8_t large = 0xf0;
};

template <class IO>
void schema(IO& io, value_input& v) {
  io.field(v.dtypes);
  io.field(v.m);
  io.field(v.n);
  io.field(v.layout);
  io.field(v.epsilon_mode);
  if (v.epsilon_mode % 5 == 2) io.field(v.epsilon_bits);
  io.rest(v.values);
}

/// decodes an input of either target
template <class Input>
Input decode(const std::uint8_t* data, std::size_t size) {
  Input in;
  byte_reader r(data, size);
  schema(r, in);
  return in;
}

/// encodes an input of either target (the seed-corpus generator)
template <class Input>
std::vector<std::uint8_t> encode(Input in) {
  byte_writer w;
  schema(w, in);
  return w.bytes();
}

}  // namespace nc::fuzz
