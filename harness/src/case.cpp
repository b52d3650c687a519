#include "normcheck/harness/case.hpp"

#include <bit>
#include <sstream>

namespace nc::harness {

operand_layouts contiguous_layouts(std::int64_t n) {
  const matrix_layout dense{0, n, 1};
  return {dense, dense, dense, dense, {}, {}, {}, dense, dense, dense};
}

std::int64_t extent(const matrix_layout& l, std::int64_t m, std::int64_t n, row_shape rows) {
  if (m == 0 || n == 0) return 0;
  // the last row lies furthest: every stride is >= 0
  return l.offset + row_start(m - 1, rows, l) + (n - 1) * l.col_stride + 1;
}

std::int64_t extent(const vector_layout& l, std::int64_t count) {
  return count == 0 ? 0 : l.offset + (count - 1) * l.stride + 1;
}

oracle::dtype oracle_type(nc_dtype type) {
  switch (type) {
    case NC_F16: return oracle::dtype::f16;
    case NC_BF16: return oracle::dtype::bf16;
    default: return oracle::dtype::f32;
  }
}

double value_of(nc_dtype type, std::uint32_t bits) { return oracle::decode(oracle_type(type), bits); }

std::uint32_t bits_of(nc_dtype type, double value) {
  return std::uint32_t(oracle::encode(oracle_type(type), value));
}

std::string dtype_class(const norm_case& c) {
  std::string name = dtype_name(c.x_dtype);
  if (c.gamma_dtype != c.x_dtype) name += std::string("+") + dtype_name(c.gamma_dtype) + " gamma";
  return name;
}

namespace {

bool column_major(const matrix_layout& l, std::int64_t m, std::int64_t n) {
  return m > 1 && n > 1 && l.col_stride > l.row_stride;
}

// elements × size is a multiple of 16 bytes (by its residue: a stride of a far-row case would
// overflow the product)
bool aligned(std::int64_t elements, std::size_t size) { return elements % 16 * std::int64_t(size) % 16 == 0; }

}  // namespace

std::string alignment_class(const norm_case& c) {
  const matrix_layout* matrices[] = {&c.layout.x,        &c.layout.y,           &c.layout.dy,           &c.layout.dx,
                                     &c.layout.residual, &c.layout.residual_out, &c.layout.residual_grad};
  bool by_columns = false, strided = false, misaligned = false;
  for (const matrix_layout* l : matrices) {
    if (!adds_residual(c.op) && (l == &c.layout.residual || l == &c.layout.residual_out || l == &c.layout.residual_grad))
      continue;
    const std::size_t size = size_of(l == &c.layout.y ? y_dtype(c) : c.x_dtype);
    by_columns |= column_major(*l, c.m, c.n);
    strided |= l->col_stride > 1 && c.n > 1;
    misaligned |= !aligned(l->offset, size) || (c.m > 1 && !aligned(l->row_stride, size)) ||
                  (heads_of(c) > 1 && !aligned(l->head_stride, size)) ||
                  (rows_of(c).tokens > 0 && !aligned(l->batch_stride, size));
  }
  strided |= c.layout.gamma.stride > 1 && c.n > 1;
  misaligned |= !aligned(c.layout.gamma.offset, size_of(c.gamma_dtype));
  if (by_columns) return "column major";
  if (strided) return "column strided";
  if (misaligned) return "misaligned";
  if (c.n % vector_width_of(c.x_dtype) != 0) return "ragged n";
  return "aligned";
}

std::uint32_t layout_bits(const matrix_layout& l, std::int64_t n, nc_dtype type, row_shape rows) {
  const std::int64_t size = std::int64_t(size_of(type));
  std::uint32_t bits = 0;
  if (l.col_stride != 1) bits |= NC_LAYOUT_COLUMN_STRIDED;
  if (rows.heads > 1 || rows.tokens > 0) {
    // a per-head view: its rows are dense when they lie as [batches, tokens, heads, N]
    const std::int64_t heads = rows.heads, head = heads > 1 ? l.head_stride : n;
    const std::int64_t batch = rows.tokens > 0 ? l.batch_stride : rows.tokens * heads * n;
    if (head != n || l.row_stride != heads * n || batch != rows.tokens * heads * n)
      bits |= (l.row_stride * size) % 16 == 0 && (head * size) % 16 == 0 && (batch * size) % 16 == 0
                  ? NC_LAYOUT_PADDED_ROWS
                  : NC_LAYOUT_MISALIGNED;
  } else if (l.row_stride != n) {
    bits |= (l.row_stride * size) % 16 == 0 ? NC_LAYOUT_PADDED_ROWS : NC_LAYOUT_MISALIGNED;
  }
  if (l.offset != 0) bits |= (l.offset * size) % 16 == 0 ? NC_LAYOUT_OFFSETS : NC_LAYOUT_MISALIGNED;
  return bits;
}

std::uint32_t layout_bits(const vector_layout& l, nc_dtype type) {
  std::uint32_t bits = 0;
  if (l.stride != 1) bits |= NC_LAYOUT_COLUMN_STRIDED;
  if (l.offset != 0)
    bits |= (l.offset * std::int64_t(size_of(type))) % 16 == 0 ? NC_LAYOUT_OFFSETS : NC_LAYOUT_MISALIGNED;
  return bits;
}

std::uint32_t layout_bits(const norm_case& c, bool with_r) {
  std::uint32_t bits = 0;
  for (const matrix_layout* l : {&c.layout.x, &c.layout.dy, &c.layout.dx}) bits |= layout_bits(*l, c.n, c.x_dtype, rows_of(c));
  bits |= layout_bits(c.layout.y, c.n, y_dtype(c), rows_of(c));
  if (quantizes(c.op)) bits |= layout_bits(c.layout.scale, scale_cols(c.op, c.n), NC_F32);
  if (adds_residual(c.op))
    for (const matrix_layout* l : {&c.layout.residual, &c.layout.residual_out, &c.layout.residual_grad})
      bits |= layout_bits(*l, c.n, c.x_dtype, rows_of(c));
  bits |= layout_bits(c.layout.gamma, c.gamma_dtype) | layout_bits(c.layout.dgamma, c.gamma_dtype);
  if (with_r) bits |= layout_bits(c.layout.r, NC_F32);
  return bits;
}

std::string size_class(const norm_case& c) {
  const std::int64_t elements = c.m * c.n;
  if (c.m == 0) return "empty";
  if (c.m >= 4096) return "tall";
  if (elements <= 64) return "tiny";
  if (elements <= 4096) return "small";
  return "large";
}

namespace {

void describe_matrix(std::ostream& out, const char* name, const matrix_layout& l, std::int64_t n) {
  if (l == matrix_layout{0, n, 1}) return;
  out << " " << name << "{offset " << l.offset << ", row " << l.row_stride << ", col " << l.col_stride;
  if (l.head_stride != 0) out << ", head " << l.head_stride;
  if (l.batch_stride != 0) out << ", batch " << l.batch_stride;
  out << "}";
}

void describe_vector(std::ostream& out, const char* name, const vector_layout& l) {
  if (l == vector_layout{}) return;
  out << " " << name << "{offset " << l.offset << ", stride " << l.stride << "}";
}

}  // namespace

std::string describe(const norm_case& c) {
  std::ostringstream out;
  out << c.m << "x" << c.n << " " << dtype_class(c) << " eps " << c.epsilon;
  if (!(c.op == nc_operation{})) out << " " << describe_operation(c.op);
  if (const row_shape rows = rows_of(c); rows.tokens > 0)
    out << " " << c.m / (rows.heads * rows.tokens) << " batches x " << rows.tokens << " tokens x " << rows.heads << " heads";
  else if (rows.heads > 1)
    out << " " << c.m / c.heads << " tokens x " << c.heads << " heads";
  describe_matrix(out, "x", c.layout.x, c.n);
  describe_matrix(out, "y", c.layout.y, c.n);
  describe_matrix(out, "dy", c.layout.dy, c.n);
  describe_matrix(out, "dx", c.layout.dx, c.n);
  describe_vector(out, "gamma", c.layout.gamma);
  describe_vector(out, "r", c.layout.r);
  describe_vector(out, "dgamma", c.layout.dgamma);
  if (adds_residual(c.op)) {
    describe_matrix(out, "residual", c.layout.residual, c.n);
    if (!c.op.in_place) describe_matrix(out, "residual_out", c.layout.residual_out, c.n);
    describe_matrix(out, "residual_grad", c.layout.residual_grad, c.n);
  }
  if (quantizes(c.op)) {
    describe_matrix(out, "scale", c.layout.scale, scale_cols(c.op, c.n));
    if (c.op.scale == NC_SCALE_STATIC) out << " scale " << std::bit_cast<float>(c.scale);
  }
  for (const auto& [key, value] : c.parameters) out << " " << key << "=" << value;
  return out.str();
}

}  // namespace nc::harness
