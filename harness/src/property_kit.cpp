#include "property_kit.hpp"

#include <algorithm>
#include <stdexcept>

namespace nc::harness {

void tag_case(observation& o, const norm_case& c) {
  o.tag("operation", describe_operation(c.op));
  o.tag("dtype", dtype_class(c));
  o.tag("alignment", alignment_class(c));
  o.tag("size", size_class(c));
}

void tag_paths(observation& o, const outputs& out) {
  o.tag("forward path", out.forward_path);
  if (!out.backward_path.empty()) o.tag("backward path", out.backward_path);
}

void tag_domain(observation& o, const std::vector<oracle::row_status>& rows) {
  const auto out = std::count_if(rows.begin(), rows.end(), [](const auto& s) { return !s.in_domain(); });
  o.tag("domain", rows.empty() ? "no rows" : out == 0 ? "every row in" : "some rows out");
}

bool table_binding(const norm_case& c) {
  const auto it = c.parameters.find("fixed_table");
  return it != c.parameters.end() && it->second == "binding";
}

std::string parameter(const norm_case& c, const std::string& name) {
  const auto it = c.parameters.find(name);
  if (it == c.parameters.end()) throw std::invalid_argument("the case has no parameter '" + name + "'");
  return it->second;
}

std::vector<std::uint32_t> row_of(const std::vector<std::uint32_t>& v, std::int64_t n, std::int64_t i) {
  return {v.begin() + i * n, v.begin() + (i + 1) * n};
}

bool backward_judged(const nc_operation& op) { return op.residual != NC_RESIDUAL_FP32 && !quantizes(op); }

std::string needs_backward(const capabilities& caps) {
  if (!caps.backward()) return "the kernel declares no backward (NC_FORWARD_ONLY)";
  for (const nc_operation& op : caps.operations)
    if (backward_judged(op)) return "";
  return "the backward of an fp32-sum residual add is not judged (abi.h: the sum is stored nowhere) and a "
         "quantized output has none, and the kernel declares no other operation";
}

rc::Gen<norm_case> differential_cases(bool backward, int tall_percent) {
  case_profile wide = case_profile::differential();
  wide.tall_percent = tall_percent;
  wide.variants = true, wide.backward = backward, wide.quantized = !backward;
  case_profile document = case_profile::document();
  document.variants = true, document.backward = backward, document.quantized = !backward;
  return rc::gen::exec([wide, document] {
    // a quarter of the cases are the document's kind of inputs, where its table binds too
    const bool documented = *gen_weighted_index({1, 3}) == 0;
    norm_case c = *gen_case(documented ? document : wide);
    if (documented) c.parameters["fixed_table"] = "binding";
    return c;
  });
}

float usual_epsilon() {
  const capabilities& caps = drawing_domain();
  return caps.takes_epsilon(1e-6f) ? 1e-6f : caps.epsilons.front();
}

void draw_values(norm_case& c, const case_profile& profile) {
  c.x = *gen_values(c.x_dtype, c.m, c.n, profile.x);
  c.dy = *gen_values(c.x_dtype, c.m, c.n, profile.dy);
  c.gamma = *gen_values(c.gamma_dtype, 1, c.n, profile.gamma);
}

// ---- what the families share ----

// row i of c's outputs `a` against row j of `b`, for each (i, j): within twice row i's bound
void rows_within_twice_the_bound(verdicts& v, const kernel& k, const norm_case& c, const outputs& a,
                                 const outputs& b, const std::vector<std::pair<std::int64_t, std::int64_t>>& rows) {
  const auto forward = exact_forward_of(c, k.capabilities());
  const auto backward = exact_backward_of(c, c.dy, k.capabilities());
  const auto value = [&](const std::vector<std::uint32_t>& out, std::int64_t row, std::int64_t col) {
    return value_of(c.x_dtype, out[std::size_t(row * c.n + col)]);
  };
  for (const auto& [i, j] : rows) {
    if (forward.rows[std::size_t(i)].in_domain()) {
      for (std::int64_t col = 0; col < c.n; ++col)
        v.within("y", i, col, value(b.y, j, col), value(a.y, i, col), 2 * forward.y_bound[std::size_t(i * c.n + col)]);
      v.within("r", i, 0, value_of(NC_F32, b.r[std::size_t(j)]), value_of(NC_F32, a.r[std::size_t(i)]),
               2 * forward.r_bound[std::size_t(i)]);
    }
    if (backward.rows[std::size_t(i)].in_domain())
      for (std::int64_t col = 0; col < c.n; ++col)
        v.within("dx", i, col, value(b.dx, j, col), value(a.dx, i, col), 2 * backward.dx_bound[std::size_t(i * c.n + col)]);
  }
}

// rows [first, first + count) of c, each at the same address modulo 16 bytes as in the batch
// (a kernel that does not serve the offsets this takes gets the rows at offset 0 instead)
norm_case piece_of(const norm_case& c, std::int64_t first, std::int64_t count, const capabilities& caps) {
  norm_case s = c;
  s.m = count;
  s.x.assign(c.x.begin() + first * c.n, c.x.begin() + (first + count) * c.n);
  s.dy.assign(c.dy.begin() + first * c.n, c.dy.begin() + (first + count) * c.n);
  s.dy2.clear();
  s.parameters.clear();
  const std::int64_t per_vector = vector_width_of(c.x_dtype);
  for (matrix_layout* l : {&s.layout.x, &s.layout.y, &s.layout.dy, &s.layout.dx})
    l->offset = (l->offset + first * l->row_stride) % per_vector;
  s.layout.r.offset = (s.layout.r.offset + first * s.layout.r.stride) % 4;
  if (!caps.serves_layouts(layout_bits(s, caps.writes_r())))
    for (std::int64_t* offset : {&s.layout.x.offset, &s.layout.y.offset, &s.layout.dy.offset, &s.layout.dx.offset,
                                 &s.layout.r.offset})
      *offset = 0;
  return s;
}

// ---- the distribution's intents ----

// a property whose generator draws every operation the kernel declares (abi.h "Variants")
property drawing_variants(property p) {
  p.variants = true;
  return p;
}
// and quantized outputs too
property drawing_quantized(property p) {
  p.variants = p.quantized = true;
  return p;
}

property judging(calls which, std::function<void(const kernel&, const norm_case&, const outputs&, observation&)> judge,
                 property p) {
  p.judge = std::move(judge);
  p.judged_calls = which;
  p.check = [judge = p.judge, which](const kernel& k, const norm_case& c, observation& o) {
    judge(k, c, execute(k, c, which), o);
  };
  return p;
}

// a class only operations without a quantized output reach (the forward's rows past 4096
// vectors: a quantized output's vector paths end there, path_table.hpp), or only those with
// one (the 256-thread rows), or without an N multiple (ragged rows)
std::string needs_unquantized(const capabilities& caps) {
  return std::any_of(caps.operations.begin(), caps.operations.end(), [](const nc_operation& op) { return !quantizes(op); })
             ? ""
             : "every operation drawn is a quantized output (its vector paths end at 4096 vectors)";
}
std::string needs_quantized(const capabilities& caps) {
  return std::any_of(caps.operations.begin(), caps.operations.end(), [](const nc_operation& op) { return quantizes(op); })
             ? ""
             : "no operation drawn has a quantized output (the forward's rows take 512 threads there)";
}
std::string needs_tiny_rows(const capabilities& caps) {
  return std::any_of(caps.operations.begin(), caps.operations.end(),
                     [](const nc_operation& op) { return columns_multiple(op) <= 64; })
             ? ""
             : "every operation drawn takes N a multiple of a quantization group past 64 elements";
}
std::string needs_any_n(const capabilities& caps) {
  return std::any_of(caps.operations.begin(), caps.operations.end(),
                     [](const nc_operation& op) { return columns_multiple(op) == 1; })
             ? ""
             : "every operation drawn takes N a multiple of its quantization group";
}

const intents& every_dtype() {
  static const intents list = {{"dtype", "fp32", 0.08}, {"dtype", "fp16", 0.08}, {"dtype", "bf16", 0.08},
                               {"dtype", "fp16+fp32 gamma", 0.08}, {"dtype", "bf16+fp32 gamma", 0.08}};
  return list;
}

const intents& every_alignment() {
  static const intents list = {{"alignment", "aligned", 0.12}, {"alignment", "ragged n", 0.025, needs_any_n},
                               {"alignment", "misaligned", 0.15}, {"alignment", "column strided", 0.05},
                               {"alignment", "column major", 0.012}};
  return list;
}

const intents& every_size() {
  static const intents list = {{"size", "tiny", 0.06, needs_tiny_rows}, {"size", "small", 0.3}, {"size", "large", 0.04}};
  return list;
}

// the shipped kernel's paths (kernels/src/rmsnorm_dispatch.cuh); each minimum is about a third
// of the share the generators give it
const intents& forward_paths() {
  static const intents list = {
      {"forward path", "vector-warp", 0.08},         {"forward path", "vector-block128", 0.03},
      {"forward path", "vector-block256", 0.0008, needs_quantized}, {"forward path", "vector-block512", 0.006},
      {"forward path", "vector-block1024", 0.01, needs_unquantized}, {"forward path", "vector-reload", 0.003, needs_unquantized},
      {"forward path", "strided-warp", 0.15},        {"forward path", "strided-block", 0.06}};
  return list;
}

const intents& backward_paths() {
  static const intents list = {
      {"backward path", "vector-warp", 0.05},      {"backward path", "vector-block128", 0.04},
      {"backward path", "vector-block256", 0.006}, {"backward path", "vector-block512", 0.007},
      {"backward path", "strided-warp", 0.15},     {"backward path", "strided-block", 0.07}};
  return list;
}

intents join(std::initializer_list<intents> parts) {
  intents all;
  for (const intents& p : parts) all.insert(all.end(), p.begin(), p.end());
  return all;
}

}  // namespace nc::harness
