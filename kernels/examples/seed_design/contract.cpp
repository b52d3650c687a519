#include "contract.hpp"

#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

namespace seed_design {
namespace {

template <class... Parts>
std::string text(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

bool known_dtype(nc_dtype t) { return t == NC_F32 || t == NC_F16 || t == NC_BF16; }

std::int64_t element_bytes(nc_dtype t) { return t == NC_F32 ? 4 : 2; }

const char* dtype_text(nc_dtype t) {
  switch (t) {
    case NC_F32: return "fp32";
    case NC_F16: return "fp16";
    case NC_BF16: return "bf16";
    default: return "unknown";
  }
}

// the bytes an operand can touch, [first, last), for the overlap rule
struct extent {
  std::string name;
  std::uintptr_t first, last;
  bool output;
};

// One call's checks. The first broken rule wins; contract rules all run before any
// capability rule, so an invalid call is never answered "unsupported".
class checker {
 public:
  std::optional<rejection> verdict;

  void invalid(std::string message) {
    if (!verdict) verdict = rejection{NC_ERR_INVALID_ARGUMENT, std::move(message)};
  }
  void unsupported(std::string message) {
    if (!verdict) verdict = rejection{NC_ERR_UNSUPPORTED, std::move(message)};
  }

  void sizes(std::int64_t m, std::int64_t n) {
    if (m < 0) invalid(text("argument 'm' = ", m, ": must be >= 0"));
    else if (n < 1) invalid(text("argument 'n' = ", n, ": must be >= 1"));
  }

  void dtype_known(const char* name, nc_dtype t) {
    if (!known_dtype(t))
      invalid(text("argument '", name, "' has dtype code ", static_cast<long long>(t), ": must be fp32, fp16 or bf16"));
  }

  void dtype_is(const char* name, nc_dtype t, nc_dtype want, const char* why) {
    if (t != want)
      invalid(text("argument '", name, "' has dtype ", dtype_text(t), ": must be ", dtype_text(want), " (", why, ")"));
  }

  void gamma_dtype(const char* name, nc_dtype gamma, nc_dtype x) {
    if (!known_dtype(gamma) || (gamma != x && gamma != NC_F32))
      invalid(text("argument '", name, "' has dtype ", dtype_text(gamma), " with x in ", dtype_text(x),
                   ": must be x's dtype or fp32"));
  }

  // an M×N operand: where it is, that its elements are distinct, that its addresses fit
  void matrix(const char* name, const nc_matrix& a, std::int64_t m, std::int64_t n, bool output) {
    if (verdict || m == 0) return;  // an empty operand touches nothing
    if (a.data == nullptr) return invalid(text("argument '", name, "' is a null pointer: must point to ", m, "x", n, " elements"));
    if (a.offset < 0) return invalid(text("argument '", name, ".offset' = ", a.offset, ": must be >= 0"));
    if (a.col_stride < 1) return invalid(text("argument '", name, ".col_stride' = ", a.col_stride, ": must be >= 1"));
    if (m > 1 && a.row_stride < 1) return invalid(text("argument '", name, ".row_stride' = ", a.row_stride, ": must be >= 1"));
    const std::int64_t row_stride = m > 1 ? a.row_stride : 0;
    const std::int64_t col_stride = n > 1 ? a.col_stride : 0;
    std::int64_t last = 0;
    if (!last_element(a.offset, m - 1, row_stride, n - 1, col_stride, &last))
      return invalid(text("argument '", name, "' (offset ", a.offset, ", row_stride ", a.row_stride, ", col_stride ",
                          a.col_stride, ") for ", m, "x", n, ": its last element must be addressable in 64 bits"));
    // distinct elements: each row ends before the next begins, or each column before the next
    const bool rows_apart = m == 1 || row_stride >= (n - 1) * col_stride + 1;
    const bool columns_apart = n == 1 || col_stride >= (m - 1) * row_stride + 1;
    if (!rows_apart && !columns_apart)
      return invalid(text("argument '", name, ".row_stride' = ", a.row_stride, ": must be >= (n-1)*col_stride+1 = ",
                          (n - 1) * col_stride + 1, " for ", m, "x", n, " with col_stride ", a.col_stride,
                          " (or col_stride >= (m-1)*row_stride+1), else elements overlap"));
    add(name, a.data, a.dtype, a.offset, last, output);
  }

  void vector(const char* name, const nc_vector& a, std::int64_t count, bool output) {
    if (verdict || count == 0) return;
    if (a.data == nullptr) return invalid(text("argument '", name, "' is a null pointer: must point to ", count, " elements"));
    if (a.offset < 0) return invalid(text("argument '", name, ".offset' = ", a.offset, ": must be >= 0"));
    if (count > 1 && a.stride < 1) return invalid(text("argument '", name, ".stride' = ", a.stride, ": must be >= 1"));
    std::int64_t last = 0;
    if (!last_element(a.offset, 0, 0, count - 1, count > 1 ? a.stride : 0, &last))
      return invalid(text("argument '", name, "' (offset ", a.offset, ", stride ", a.stride, ") for ", count,
                          " entries: its last element must be addressable in 64 bits"));
    add(name, a.data, a.dtype, a.offset, last, output);
  }

  void workspace(const void* data, std::size_t bytes) {
    if (verdict || bytes == 0) return;
    const auto first = reinterpret_cast<std::uintptr_t>(data);
    std::uintptr_t end = 0;
    if (__builtin_add_overflow(first, bytes, &end))
      return invalid(text("argument 'workspace' = ", data, " with ", bytes, " bytes: must not wrap the address space"));
    extents_.push_back({"workspace", first, end, true});
  }

  // an output shares no byte with any other operand
  void no_overlap() {
    if (verdict) return;
    for (std::size_t i = 0; i < extents_.size(); ++i)
      for (std::size_t j = 0; j < extents_.size(); ++j) {
        const extent& out = extents_[i];
        const extent& other = extents_[j];
        if (i == j || !out.output || (other.output && j < i)) continue;
        if (out.first < other.last && other.first < out.last)
          return invalid(text("argument '", out.name, "' overlaps argument '", other.name,
                              "': an output must share no memory with another operand"));
      }
  }

  // ---- what this kernel serves ----

  void served_pair(nc_dtype x, nc_dtype gamma) {
    if (x == NC_BF16)
      return unsupported(text("argument 'x' has dtype bf16: this kernel serves fp32 and fp16 only, as the document's"));
    if (gamma != x)
      unsupported(text("argument 'gamma' has dtype ", dtype_text(gamma), " with x in ", dtype_text(x),
                       ": this kernel serves gamma in x's dtype only"));
  }

  // dense rows: element (i, j) at i·N + j past the operand's first element. The offset
  // only moves the first element, so any offset that keeps elements aligned is served
  void dense_matrix(const char* name, const nc_matrix& a, std::int64_t m, std::int64_t n) {
    if (verdict || m == 0) return;
    if (n > 1 && a.col_stride != 1)
      return unsupported(text("argument '", name, ".col_stride' = ", a.col_stride,
                              ": must be 1 (this kernel serves dense rows only)"));
    if (m > 1 && a.row_stride != n)
      return unsupported(text("argument '", name, ".row_stride' = ", a.row_stride, ": must be n = ", n,
                              " (this kernel serves dense rows only)"));
    aligned(name, a.data, a.dtype, a.offset);
  }

  void dense_vector(const char* name, const nc_vector& a, std::int64_t count) {
    if (verdict || count == 0) return;
    if (count > 1 && a.stride != 1)
      return unsupported(text("argument '", name, ".stride' = ", a.stride, ": must be 1 (this kernel serves dense vectors only)"));
    aligned(name, a.data, a.dtype, a.offset);
  }

  void served_size(std::int64_t m, std::int64_t n, bool table) {
    if (n > max_n)
      return unsupported(text("argument 'n' = ", n, ": must be <= ", max_n, " (the document's BLOCK limit)"));
    // a block per row: the grid's x dimension counts the rows
    if (m > std::numeric_limits<std::int32_t>::max())
      return unsupported(text("argument 'm' = ", m, ": must be <= 2^31-1 (one block per row)"));
    if (table && m * n > max_elements)
      unsupported(text("argument 'm' = ", m, " with n = ", n, ": the partial table of m*n = ", m * n,
                       " fp32 must be <= ", max_elements, " entries (the document's 64 MiB scratch budget)"));
  }

 private:
  std::vector<extent> extents_;

  // offset + i·row_stride + j·col_stride for the last (i, j), and its byte address, in 64 bits
  static bool last_element(std::int64_t offset, std::int64_t i, std::int64_t row_stride, std::int64_t j,
                           std::int64_t col_stride, std::int64_t* last) {
    std::int64_t a = 0, b = 0, sum = 0, bytes = 0;
    if (__builtin_mul_overflow(i, row_stride, &a) || __builtin_mul_overflow(j, col_stride, &b) ||
        __builtin_add_overflow(a, b, &sum) || __builtin_add_overflow(sum, offset, &sum) ||
        __builtin_add_overflow(sum, std::int64_t{1}, &bytes) || __builtin_mul_overflow(bytes, std::int64_t{4}, &bytes))
      return false;
    *last = sum;
    return true;
  }

  void add(const char* name, const void* data, nc_dtype t, std::int64_t offset, std::int64_t last, bool output) {
    const auto base = reinterpret_cast<std::uintptr_t>(data);
    const auto size = static_cast<std::uintptr_t>(element_bytes(t));
    std::uintptr_t first = 0, end = 0;
    if (__builtin_add_overflow(base, static_cast<std::uintptr_t>(offset) * size, &first) ||
        __builtin_add_overflow(base, static_cast<std::uintptr_t>(last + 1) * size, &end))
      return invalid(text("argument '", name, "' = ", data, " with its last element at ", last,
                          ": the operand must not wrap the address space"));
    extents_.push_back({name, first, end, output});
  }

  // the kernel reads and writes whole elements
  void aligned(const char* name, const void* data, nc_dtype t, std::int64_t offset) {
    const auto size = static_cast<std::uintptr_t>(element_bytes(t));
    if (reinterpret_cast<std::uintptr_t>(data) % size != 0)
      unsupported(text("argument '", name, "' = ", data, " (offset ", offset, "): must be ", size,
                       "-byte aligned for its ", dtype_text(t), " elements"));
  }
};

}  // namespace

std::size_t partial_table_bytes(std::int64_t m, std::int64_t n) {
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<std::size_t>(m), static_cast<std::size_t>(n), &bytes) ||
      __builtin_mul_overflow(bytes, sizeof(float), &bytes))
    return std::numeric_limits<std::size_t>::max();
  return bytes;
}

std::optional<rejection> check_forward(const nc_forward_args& a) {
  checker c;
  c.sizes(a.m, a.n);
  if (!(std::isfinite(a.epsilon) && a.epsilon >= 0.0f))
    c.invalid(text("argument 'epsilon' = ", a.epsilon, ": must be finite and >= 0"));
  c.dtype_known("x", a.x.dtype);
  c.dtype_is("y", a.y.dtype, a.x.dtype, "y has x's dtype");
  c.gamma_dtype("gamma", a.gamma.dtype, a.x.dtype);
  c.dtype_is("r", a.r.dtype, NC_F32, "r is fp32");
  if (c.verdict) return c.verdict;
  c.matrix("x", a.x, a.m, a.n, false);
  c.vector("gamma", a.gamma, a.n, false);
  c.matrix("y", a.y, a.m, a.n, true);
  c.vector("r", a.r, a.m, true);
  c.no_overlap();

  c.served_pair(a.x.dtype, a.gamma.dtype);
  c.dense_matrix("x", a.x, a.m, a.n);
  c.dense_vector("gamma", a.gamma, a.n);
  c.dense_matrix("y", a.y, a.m, a.n);
  c.dense_vector("r", a.r, a.m);
  c.served_size(a.m, a.n, false);
  return c.verdict;
}

std::optional<rejection> check_backward(const nc_backward_args& a) {
  checker c;
  c.sizes(a.m, a.n);
  c.dtype_known("x", a.x.dtype);
  c.dtype_is("dy", a.dy.dtype, a.x.dtype, "dy has x's dtype");
  c.dtype_is("dx", a.dx.dtype, a.x.dtype, "dx has x's dtype");
  c.gamma_dtype("gamma", a.gamma.dtype, a.x.dtype);
  c.dtype_is("dgamma", a.dgamma.dtype, a.gamma.dtype, "dgamma has gamma's dtype");
  c.dtype_is("r", a.r.dtype, NC_F32, "r is fp32");
  if (c.verdict) return c.verdict;
  const std::size_t needed = partial_table_bytes(a.m, a.n);
  if (a.workspace_bytes < needed)
    c.invalid(text("argument 'workspace_bytes' = ", a.workspace_bytes, ": must be >= ", needed,
                   " (what workspace_size reports: the M*N fp32 partial table)"));
  else if (needed > 0 && a.workspace == nullptr)
    c.invalid(text("argument 'workspace' is a null pointer: must point to ", needed, " bytes"));
  else if (needed > 0 && reinterpret_cast<std::uintptr_t>(a.workspace) % alignof(float) != 0)
    c.invalid(text("argument 'workspace' = ", a.workspace, ": must be ", alignof(float), "-byte aligned (an fp32 table)"));
  c.matrix("x", a.x, a.m, a.n, false);
  c.vector("gamma", a.gamma, a.n, false);
  c.matrix("dy", a.dy, a.m, a.n, false);
  c.vector("r", a.r, a.m, false);
  c.matrix("dx", a.dx, a.m, a.n, true);
  c.vector("dgamma", a.dgamma, a.n, true);
  c.workspace(a.workspace, needed);
  c.no_overlap();

  c.served_pair(a.x.dtype, a.gamma.dtype);
  c.dense_matrix("x", a.x, a.m, a.n);
  c.dense_vector("gamma", a.gamma, a.n);
  c.dense_matrix("dy", a.dy, a.m, a.n);
  c.dense_vector("r", a.r, a.m);
  c.dense_matrix("dx", a.dx, a.m, a.n);
  c.dense_vector("dgamma", a.dgamma, a.n);
  c.served_size(a.m, a.n, true);
  return c.verdict;
}

}  // namespace seed_design
