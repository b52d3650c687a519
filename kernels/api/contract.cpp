#include "normcheck/contract.hpp"

#include "normcheck/variant.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <sstream>

namespace nc {

namespace {

// a message: "[rule id] " (normcheck/contract_rules.hpp), then the argument, its value and the rule
template <class... Parts>
violation fail(const std::string& rule_id, const Parts&... parts) {
  std::ostringstream out;
  out << "[" << rule_id << "] ";
  (out << ... << parts);
  return {out.str()};
}

// the id of an operand's rule: "x" and "offset" give "x.offset"
std::string rule(const char* operand, const char* kind) { return std::string(operand) + "." + kind; }

// one dimension of an operand: its entries and the stride between them
struct dimension {
  std::int64_t count, stride;
};

// largest element index an operand reaches (strides >= 0), or nullopt if it, or the end of its
// last element in bytes (add_span), overflows 64 bits
std::optional<std::int64_t> last_index(std::int64_t offset, std::initializer_list<dimension> dims) {
  std::int64_t sum = offset;
  for (const dimension& d : dims) {
    std::int64_t a = 0;
    if (d.count < 1) continue;
    if (__builtin_mul_overflow(d.count - 1, d.stride, &a) || __builtin_add_overflow(sum, a, &sum)) return std::nullopt;
  }
  std::int64_t end = 0, bytes = 0;
  if (__builtin_add_overflow(sum, std::int64_t{1}, &end) || __builtin_mul_overflow(end, std::int64_t{4}, &bytes))
    return std::nullopt;
  return sum;
}

// whether no two elements share an index: ordered by stride, each dimension's stride passes
// the span of every smaller one (the dimensions of one entry take no part); no overflow (checked).
// At most four dimensions, sorted in place: a valid call allocates nothing
bool distinct(std::initializer_list<dimension> list) {
  std::array<dimension, 4> dims{};
  std::size_t count = 0;
  for (const dimension& d : list)
    if (d.count > 1) dims.at(count++) = d;
  std::sort(dims.begin(), dims.begin() + count, [](const dimension& a, const dimension& b) { return a.stride < b.stride; });
  std::int64_t span = 0;  // the largest index the smaller dimensions reach
  for (std::size_t i = 0; i < count; ++i) {
    if (dims[i].stride <= span) return false;
    span += (dims[i].count - 1) * dims[i].stride;
  }
  return true;
}

// the rows of a call (abi.h "Variants"): heads per token, tokens per batch (0: one batch); 2-D
// rows are {1, 0}
struct row_shape {
  std::int64_t heads = 1, tokens = 0;
};
// an operand's head and batch strides (read where its rows have those dimensions)
struct row_strides {
  std::int64_t head = 0, batch = 0;
};

// the first output, in the operands' order, that shares a byte with another operand: the two
std::optional<std::pair<std::size_t, std::size_t>> first_overlap(const span* spans, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    const span& a = spans[i];
    if (!a.output) continue;
    for (std::size_t j = 0; j < count; ++j) {
      const span& b = spans[j];
      if (a.first < b.last && b.first < a.last && i != j && !(b.output && j < i)) return std::pair{i, j};
    }
  }
  return std::nullopt;
}

// the checks of one call's arguments (args: the nc_*_args they are part of)
class checker {
 public:
  explicit checker(const void* args) : args_(static_cast<const char*>(args)) {}

  std::optional<violation> error;

  void dtype_in(const char* name, nc_dtype t) {
    if (!error && !valid_dtype(t))
      error = fail(rule(name, "dtype"), "argument '", name, "' has dtype code ", int(t), ": must be fp32, fp16 or bf16");
  }

  void dtype_is(const char* name, nc_dtype t, nc_dtype want, const char* why) {
    if (!error && t != want)
      error = fail(rule(name, "dtype"), "argument '", name, "' has dtype ", dtype_name(t), ": must be ", dtype_name(want), " (",
                   why, ")");
  }

  // per-head rows (abi.h "Variants"): a [m/heads, heads, n] view, tokens at the row stride and
  // heads at the head stride; a 4-D view [batches, tokens, heads, n] has batches at the batch stride
  void matrix(const char* name, const nc_matrix& a, std::int64_t m, std::int64_t n, bool output, row_shape rows = {},
              row_strides step = {}) {
    if (error) return;
    if (m == 0) return;  // an empty operand touches nothing; its pointer may be anything
    const std::int64_t heads = rows.heads, head_stride = step.head, batch_stride = step.batch;
    const std::int64_t tokens = rows.tokens > 0 ? rows.tokens : m / heads;
    const std::int64_t batches = m / heads / tokens;
    if (a.data == nullptr) return void(error = fail(rule(name, "null"), "argument '", name, "' is a null pointer: must point to ", m, "x", n, " elements"));
    if (a.offset < 0) return void(error = fail(rule(name, "offset"), "argument '", name, ".offset' = ", a.offset, ": must be >= 0"));
    if (a.col_stride < 1)
      return void(error = fail(rule(name, "col_stride"), "argument '", name, ".col_stride' = ", a.col_stride, ": must be >= 1"));
    if (tokens > 1 && a.row_stride < 1)
      return void(error = fail(rule(name, "row_stride"), "argument '", name, ".row_stride' = ", a.row_stride, ": must be >= 1",
                               heads > 1 ? " (the token stride of " + std::to_string(tokens) + " tokens)" : ""));
    if (heads > 1 && head_stride < 1)
      return void(error = fail(rule(name, "head_stride"), "argument 'head.", name, "' = ", head_stride,
                               ": must be >= 1 (the head stride of ", heads, " heads)"));
    if (batches > 1 && batch_stride < 1)
      return void(error = fail(rule(name, "batch_stride"), "argument 'head.batch.", name, "' = ", batch_stride,
                               ": must be >= 1 (the batch stride of ", batches, " batches)"));
    // overflow first: past this check no product of a count and a stride overflows
    const std::initializer_list<dimension> dims = {{batches, batches > 1 ? batch_stride : 0},
                                                   {tokens, tokens > 1 ? a.row_stride : 0},
                                                   {heads, heads > 1 ? head_stride : 0},
                                                   {n, a.col_stride}};
    const auto last = last_index(a.offset, dims);
    if (!last) return void(error = fail(rule(name, "overflow"), "argument '", name, "' layout overflows 64-bit indexing"));
    // the elements must be distinct: rows side by side, or columns side by side (and heads)
    if (!distinct(dims)) {
      // a per-head view: every dimension it has, outermost first
      if (heads > 1 || rows.tokens > 0) {
        const std::string batch = rows.tokens > 0 ? "batch " + std::to_string(batch_stride) + ", " : "",
                          outer = rows.tokens > 0 ? std::to_string(batches) + " batches x " : "";
        return void(error = fail(rule(name, "distinct"), "argument '", name, "' strides (", batch, "token ", a.row_stride,
                                 ", head ", head_stride, ", col ", a.col_stride, ") for ", outer, tokens, " tokens x ",
                                 heads, " heads x ", n,
                                 ": two elements share an address (each stride, smallest first, must pass the span of "
                                 "the smaller ones)"));
      }
      return void(error = fail(rule(name, "distinct"), "argument '", name, "' strides (row ", a.row_stride, ", col ",
                               a.col_stride, ") for ", m, "x", n, ": row_stride must be >= (n-1)*col_stride+1 = ",
                               (n - 1) * a.col_stride + 1, " (or col_stride >= (m-1)*row_stride+1)"));
    }
    add_span(name, a.data, a.dtype, a.offset, *last, output);
  }

  void vector(const char* name, const nc_vector& a, std::int64_t count, bool output) {
    if (error || count == 0) return;
    if (a.data == nullptr)
      return void(error = fail(rule(name, "null"), "argument '", name, "' is a null pointer: must point to ", count, " elements"));
    if (a.offset < 0) return void(error = fail(rule(name, "offset"), "argument '", name, ".offset' = ", a.offset, ": must be >= 0"));
    if (count > 1 && a.stride < 1)
      return void(error = fail(rule(name, "stride"), "argument '", name, ".stride' = ", a.stride, ": must be >= 1"));
    const auto last = last_index(a.offset, {{count, count > 1 ? a.stride : 0}});
    if (!last) return void(error = fail(rule(name, "overflow"), "argument '", name, "' layout overflows 64-bit indexing"));
    add_span(name, a.data, a.dtype, a.offset, *last, output);
  }

  void raw(const char* name, void* const& data, std::size_t bytes, bool output) {
    if (error || bytes == 0) return;
    push(name, data, 0, bytes, output);
  }

  // an output may share no byte with any other operand
  void no_overlap() {
    if (error) return;
    if (const auto pair = first_overlap(spans_.data(), count_)) {
      const span &a = spans_[pair->first], &b = spans_[pair->second];
      error = fail(rule(a.name, "overlap"), "argument '", a.name, "' overlaps argument '", b.name,
                   "': an output must not share memory with any other operand");
    }
  }

  // a valid call's operand ranges, relative to their pointers
  template <class Args>
  void keep(contract_memo<Args>& memo) const {
    memo.spans = relative_, memo.count = count_;
  }

 private:
  const char* args_;
  // every operand of a call, the workspace included (the forward has 7, the backward 8): held in
  // place, so that a valid call's check allocates nothing (it runs before every launch)
  std::array<span, 10> spans_{};
  std::array<relative_span, 10> relative_{};
  std::size_t count_ = 0;

  // an operand's bytes [data + first, data + last); data is the pointer field of the arguments
  void push(const char* name, void* const& data, std::uintptr_t first, std::uintptr_t last, bool output) {
    const auto base = reinterpret_cast<std::uintptr_t>(data);
    const auto field = std::size_t(reinterpret_cast<const char*>(&data) - args_);
    relative_.at(count_) = {name, field, first, last, output};
    spans_.at(count_++) = {name, base + first, base + last, output};
  }

  void add_span(const char* name, void* const& data, nc_dtype t, std::int64_t offset, std::int64_t last,
                bool output) {
    const std::size_t size = size_of(t);
    push(name, data, std::uintptr_t(offset) * size, std::uintptr_t(last + 1) * size, output);
  }
};

void sizes(checker& c, std::int64_t m, std::int64_t n) {
  if (c.error) return;
  if (m < 0) c.error = fail("m", "argument 'm' = ", m, ": must be >= 0");
  else if (n < 1) c.error = fail("n", "argument 'n' = ", n, ": must be >= 1");
}

void gamma_dtype(checker& c, const char* name, nc_dtype gamma, nc_dtype x) {
  if (c.error || gamma == x || gamma == NC_F32) return;
  c.error = fail("gamma.dtype_pair", "argument '", name, "' has dtype ", dtype_name(gamma), " with x in ", dtype_name(x),
                 ": must be x's dtype or fp32");
}

// the operation (version 3, abi.h "Variants"): both calls
void operation(checker& c, const nc_operation& op) {
  if (c.error) return;
  if (!valid_residual(op.residual))
    c.error = fail("op.residual", "argument 'op.residual' = ", int(op.residual),
                   ": must be NC_RESIDUAL_NONE, NC_RESIDUAL_ROUNDED or NC_RESIDUAL_FP32");
  else if (op.in_place > 1 || (op.in_place == 1 && op.residual == NC_RESIDUAL_NONE))
    c.error = fail("op.in_place", "argument 'op.in_place' = ", op.in_place, ": must be 0, or 1 with a residual add");
  else if (!std::isfinite(op.weight_offset))
    c.error = fail("op.weight_offset", "argument 'op.weight_offset' = ", op.weight_offset, ": must be finite");
  else if (!valid_rows(op.rows))
    c.error = fail("op.rows", "argument 'op.rows' = ", int(op.rows), ": must be NC_ROWS_MATRIX, NC_ROWS_HEADS or NC_ROWS_BATCHES");
  else if (!valid_quant(op.quant))
    c.error = fail("op.quant", "argument 'op.quant' = ", int(op.quant),
                   ": must be NC_QUANT_NONE, NC_QUANT_FP8_E4M3, NC_QUANT_FP8_E5M2 or NC_QUANT_INT8");
}

// a quantized output's own fields (forward only; the backward has none)
void quantization(checker& c, const nc_operation& op, std::int64_t n) {
  if (c.error || !quantizes(op)) return;
  if (op.rows != NC_ROWS_MATRIX)
    c.error = fail("op.rows", "argument 'op.rows' = ", int(op.rows), ": a quantized output (op.quant = ", quant_name(op.quant),
                   ") takes 2-D rows, NC_ROWS_MATRIX");
  else if (!valid_scale(op.scale))
    c.error = fail("op.scale", "argument 'op.scale' = ", int(op.scale),
                   ": must be NC_SCALE_STATIC, NC_SCALE_PER_TOKEN or NC_SCALE_PER_GROUP");
  else if (!valid_apply(op.apply))
    c.error = fail("op.apply", "argument 'op.apply' = ", int(op.apply), ": must be NC_APPLY_RECIPROCAL or NC_APPLY_DIVIDE");
  else if (op.scale == NC_SCALE_PER_GROUP && (op.group < 1 || n % op.group != 0))
    c.error = fail("op.group", "argument 'op.group' = ", op.group, ": must be >= 1 and divide n = ", n,
                   " (per-group scales: N/group groups a row)");
  else if (op.scale != NC_SCALE_STATIC && !(std::isfinite(op.scale_floor) && op.scale_floor >= 0.0f))
    c.error = fail("op.scale_floor", "argument 'op.scale_floor' = ", op.scale_floor, ": must be finite and >= 0");
}

// the rows of a per-head call: heads >= 1 dividing m; of a 4-D view tokens >= 1 with heads x
// tokens dividing m; 2-D rows for NC_ROWS_MATRIX (the fields are not read)
template <class H>
row_shape rows_of(checker& c, const nc_operation& op, const H& head, std::int64_t m) {
  if (c.error || op.rows == NC_ROWS_MATRIX) return {};
  std::int64_t group = 0;
  if (head.heads < 1) c.error = fail("head.heads", "argument 'head.heads' = ", head.heads, ": must be >= 1");
  else if (m % head.heads != 0)
    c.error = fail("head.heads", "argument 'head.heads' = ", head.heads, ": must divide m = ", m, " (m = tokens x heads)");
  if (c.error || op.rows == NC_ROWS_HEADS) return {head.heads, 0};
  if (head.tokens < 1)
    c.error = fail("head.tokens", "argument 'head.tokens' = ", head.tokens, ": must be >= 1 (the tokens of a batch)");
  else if (__builtin_mul_overflow(head.heads, head.tokens, &group) || m % group != 0)
    c.error = fail("head.tokens", "argument 'head.tokens' = ", head.tokens, ": heads x tokens must divide m = ", m,
                   " (m = batches x tokens x heads)");
  return {head.heads, head.tokens};
}

bool same_matrix(const nc_matrix& a, const nc_matrix& b) {
  return a.data == b.data && a.dtype == b.dtype && a.offset == b.offset && a.row_stride == b.row_stride &&
         a.col_stride == b.col_stride;
}

// the whole check of a call; a valid one's operand ranges go to keep, when given
std::optional<violation> check_forward(const nc_forward_args& a, contract_memo<nc_forward_args>* keep) {
  checker c(&a);
  sizes(c, a.m, a.n);
  if (!c.error && !(std::isfinite(a.epsilon) && a.epsilon >= 0.0f))
    c.error = fail("epsilon", "argument 'epsilon' = ", a.epsilon, ": must be finite and >= 0");
  c.dtype_in("x", a.x.dtype);
  operation(c, a.op);
  quantization(c, a.op, a.n);
  const bool quantized = !c.error && quantizes(a.op);
  if (quantized) c.dtype_is("y", a.y.dtype, code_dtype_of(a.op.quant, a.x.dtype), "y holds the codes of op.quant");
  else c.dtype_is("y", a.y.dtype, a.x.dtype, "y has x's dtype");
  c.dtype_in("gamma", a.gamma.dtype);
  gamma_dtype(c, "gamma", a.gamma.dtype, a.x.dtype);
  c.dtype_is("r", a.r.dtype, NC_F32, "r is fp32");
  if (quantized) c.dtype_is("scale", a.scale.dtype, NC_F32, "scales are fp32");
  const bool add = !c.error && a.op.residual != NC_RESIDUAL_NONE, in_place = add && a.op.in_place == 1;
  if (add) {
    c.dtype_is("residual", a.residual.dtype, a.x.dtype, "residual has x's dtype");
    c.dtype_is("residual_out", a.residual_out.dtype, a.x.dtype, "residual_out has x's dtype");
  }
  const row_shape h = rows_of(c, a.op, a.head, a.m);
  const auto& hd = a.head;
  c.matrix("x", a.x, a.m, a.n, false, h, {hd.x, hd.batch.x});
  c.vector("gamma", a.gamma, a.n, false);
  c.matrix("y", a.y, a.m, a.n, true, h, {hd.y, hd.batch.y});
  c.vector("r", a.r, a.m, true);
  // in place, the residual is written (residual_out is it): an output nothing else may touch
  if (in_place) c.matrix("residual", a.residual, a.m, a.n, true, h, {hd.residual, hd.batch.residual});
  else if (add) c.matrix("residual", a.residual, a.m, a.n, false, h, {hd.residual, hd.batch.residual});
  if (in_place && !c.error && a.m > 0 &&
      (!same_matrix(a.residual_out, a.residual) || (h.heads > 1 && hd.residual_out != hd.residual) ||
       (h.tokens > 0 && hd.batch.residual_out != hd.batch.residual)))
    c.error = fail("residual_out.in_place", "argument 'residual_out' is not the residual operand (data, dtype, offset, ",
                   "strides): in place (op.in_place = 1) it must be 'residual' itself");
  if (add && !in_place) c.matrix("residual_out", a.residual_out, a.m, a.n, true, h, {hd.residual_out, hd.batch.residual_out});
  // the static scale is an input of one element, the dynamic ones outputs of M rows
  if (quantized && dynamic_scale(a.op)) c.matrix("scale", a.scale, a.m, scale_cols(a.op, a.n), true);
  else if (quantized) c.matrix("scale", a.scale, 1, 1, false);
  c.no_overlap();
  if (!c.error && keep != nullptr) c.keep(*keep);
  return c.error;
}

std::optional<violation> check_backward(const nc_backward_args& a, std::size_t workspace_needed,
                                        contract_memo<nc_backward_args>* keep) {
  checker c(&a);
  sizes(c, a.m, a.n);
  c.dtype_in("x", a.x.dtype);
  c.dtype_is("dy", a.dy.dtype, a.x.dtype, "dy has x's dtype");
  c.dtype_is("dx", a.dx.dtype, a.x.dtype, "dx has x's dtype");
  c.dtype_in("gamma", a.gamma.dtype);
  gamma_dtype(c, "gamma", a.gamma.dtype, a.x.dtype);
  c.dtype_is("dgamma", a.dgamma.dtype, a.gamma.dtype, "dgamma has gamma's dtype");
  c.dtype_is("r", a.r.dtype, NC_F32, "r is fp32");
  operation(c, a.op);
  if (!c.error && quantizes(a.op))
    c.error = fail("op.quant", "argument 'op.quant' = ", quant_name(a.op.quant),
                   ": a backward takes no quantized output (must be NC_QUANT_NONE)");
  const bool add = !c.error && a.op.residual != NC_RESIDUAL_NONE;
  if (add) c.dtype_is("residual_grad", a.residual_grad.dtype, a.x.dtype, "residual_grad has x's dtype");
  if (!c.error && a.workspace_bytes < workspace_needed)
    c.error = fail("workspace_bytes", "argument 'workspace_bytes' = ", a.workspace_bytes, ": must be >= ", workspace_needed,
                   " (what workspace_size reports for this call)");
  if (!c.error && workspace_needed > 0 && a.workspace == nullptr)
    c.error = fail("workspace.null", "argument 'workspace' is a null pointer: must point to ", workspace_needed, " bytes");
  if (!c.error && workspace_needed > 0 && reinterpret_cast<std::uintptr_t>(a.workspace) % 16 != 0)
    c.error = fail("workspace.align", "argument 'workspace' = ", a.workspace, ": must be 16-byte aligned");
  const row_shape h = rows_of(c, a.op, a.head, a.m);
  const auto& hd = a.head;
  c.matrix("x", a.x, a.m, a.n, false, h, {hd.x, hd.batch.x});
  c.vector("gamma", a.gamma, a.n, false);
  c.matrix("dy", a.dy, a.m, a.n, false, h, {hd.dy, hd.batch.dy});
  c.vector("r", a.r, a.m, false);
  c.matrix("dx", a.dx, a.m, a.n, true, h, {hd.dx, hd.batch.dx});
  c.vector("dgamma", a.dgamma, a.n, true);
  if (add) c.matrix("residual_grad", a.residual_grad, a.m, a.n, false, h, {hd.residual_grad, hd.batch.residual_grad});
  c.raw("workspace", a.workspace, workspace_needed, true);
  c.no_overlap();
  if (!c.error && keep != nullptr) c.keep(*keep);
  return c.error;
}

// ---- the memo (contract.hpp contract_memo)

// a call's layout: its arguments with every pointer and the stream zeroed
nc_forward_args layout_of(nc_forward_args a) {
  for (void** p : {&a.x.data, &a.gamma.data, &a.y.data, &a.r.data, &a.residual.data, &a.residual_out.data, &a.scale.data,
                   &a.stream})
    *p = nullptr;
  return a;
}
nc_backward_args layout_of(nc_backward_args a) {
  for (void** p : {&a.x.data, &a.gamma.data, &a.dy.data, &a.r.data, &a.dx.data, &a.dgamma.data, &a.residual_grad.data,
                   &a.workspace, &a.stream})
    *p = nullptr;
  return a;
}

// the pointer rules of a call whose layout the memo holds valid: no null operand (an operand
// with elements has a range), no output sharing a byte with another operand, and the call's own
// (the workspace's alignment; in place, residual_out the residual itself)
bool workspace_aligned(const nc_backward_args& a, std::size_t needed) {
  return needed == 0 || reinterpret_cast<std::uintptr_t>(a.workspace) % 16 == 0;
}
bool residual_itself(const nc_forward_args& a) {
  return !(a.m > 0 && a.op.residual != NC_RESIDUAL_NONE && a.op.in_place == 1) || a.residual_out.data == a.residual.data;
}
template <class Args>
bool pointers_hold(const Args& a, const contract_memo<Args>& memo) {
  std::array<span, 10> spans;  // the first memo.count are set
  for (std::size_t i = 0; i < memo.count; ++i) {
    const relative_span& r = memo.spans[i];
    void* data = nullptr;
    std::memcpy(&data, reinterpret_cast<const char*>(&a) + r.field, sizeof data);
    if (data == nullptr) return false;
    const auto base = reinterpret_cast<std::uintptr_t>(data);
    spans[i] = {r.name, base + r.first, base + r.last, r.output};
  }
  return !first_overlap(spans.data(), memo.count);
}

// the verdict: the pointer rules where the memo holds this layout, else the whole check (which
// then holds a valid call's layout)
template <class Args, class Whole, class Own>
std::optional<violation> memoized(const Args& a, std::size_t workspace, contract_memo<Args>& memo, Whole whole, Own own) {
  const Args layout = layout_of(a);
  if (memo.held && memo.workspace == workspace && std::memcmp(&memo.layout, &layout, sizeof layout) == 0 && own(a) &&
      pointers_hold(a, memo))
    return std::nullopt;
  std::optional<violation> v = whole(&memo);
  if (!v) memo.layout = layout, memo.workspace = workspace, memo.held = true;
  return v;
}

}  // namespace

std::optional<violation> check_forward(const nc_forward_args& a) { return check_forward(a, nullptr); }

std::optional<violation> check_backward(const nc_backward_args& a, std::size_t workspace_needed) {
  return check_backward(a, workspace_needed, nullptr);
}

std::optional<violation> check_forward(const nc_forward_args& a, contract_memo<nc_forward_args>& memo) {
  return memoized(a, 0, memo, [&](contract_memo<nc_forward_args>* keep) { return check_forward(a, keep); }, residual_itself);
}

std::optional<violation> check_backward(const nc_backward_args& a, std::size_t workspace_needed,
                                        contract_memo<nc_backward_args>& memo) {
  return memoized(a, workspace_needed, memo,
                  [&](contract_memo<nc_backward_args>* keep) { return check_backward(a, workspace_needed, keep); },
                  [&](const nc_backward_args& b) { return workspace_aligned(b, workspace_needed); });
}

}  // namespace nc
