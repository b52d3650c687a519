// value_fuzzer: bytes -> raw bit patterns of x, gamma and dy for a small case in any dtype; the
// calls must keep the arena's memory rules, and the case must pass the properties' own checks
// (the harness's property judges): y and r, dx and dgamma against the exact oracle, and a row
// holding NaN/Inf leaving every other row bit-identical. A finding is a failure of a named
// property, so its regression replays as that property in `normcheck replay`.
#include <algorithm>
#include <bit>
#include <cstdio>
#include <cmath>
#include <cstdint>
#include <map>

#include "fuzz_call.hpp"
#include "fuzz_input.hpp"
#include "fuzz_session.hpp"
#include "normcheck/oracles/dtype.hpp"
#include "normcheck/harness/case.hpp"
#include "normcheck/harness/execute.hpp"
#include "normcheck/harness/failure.hpp"
#include "normcheck/harness/property.hpp"

namespace nc::fuzz {
namespace {

constexpr const char* target = "value_fuzzer";

struct value_case {
  call_spec call;  // the forward; the backward is the same call with backward set
  std::vector<std::uint32_t> x, gamma, dy;
};

// drawn inside the kernel's declaration: a pair it serves, sizes within its limits, an ε it
// takes, the offset only where it serves misaligned rows (fit_to_declaration)
value_case case_of(const value_input& v, const capabilities& declared) {
  std::vector<std::pair<nc_dtype, nc_dtype>> pairs;
  for (const auto& pair : {std::pair{NC_F32, NC_F32}, {NC_F16, NC_F16}, {NC_F16, NC_F32}, {NC_BF16, NC_BF16}, {NC_BF16, NC_F32}})
    if (declared.serves(pair.first, pair.second)) pairs.push_back(pair);
  const auto [xt, gt] = pairs[v.dtypes % pairs.size()];
  value_case vc;
  call_spec& c = vc.call;
  const std::int64_t elements =
      (v.layout & 0xf0) == value_input::large ? value_input::max_elements : value_input::small_elements;
  c.n = 1 + v.n % elements;
  const std::int64_t row_cap = std::min<std::int64_t>(value_input::max_rows, elements / c.n);
  c.m = 1 + v.m % std::max<std::int64_t>(row_cap, 1);
  fit_sizes(c.m, c.n, declared);
  c.m = std::max<std::int64_t>(c.m, 1);
  switch (v.epsilon_mode % 5) {
    case 0: c.epsilon = 1e-6f; break;
    case 1: c.epsilon = 0.0f; break;
    case 2: {
      // any finite ε ≥ 0 from raw bits: the sign dropped, a non-finite value becomes the default
      const float e = std::fabs(std::bit_cast<float>(v.epsilon_bits));
      c.epsilon = std::isfinite(e) ? e : 1e-6f;
      break;
    }
    case 3: c.epsilon = 0x1p-100f; break;
    default: c.epsilon = 1e3f; break;
  }
  // dense rows; one element of offset everywhere moves every operand off 16 bytes (the strided paths)
  const std::int64_t offset = v.layout & 1;
  for (int k = 0; k < operand_count; ++k) {
    operand& o = c.ops[std::size_t(k)];
    o.name = operand_names[std::size_t(k)];
    o.matrix = is_matrix(k);
    o.dtype = o.matrix ? xt : k == op_r ? NC_F32 : gt;
    o.offset = offset;
    o.row_stride = o.matrix ? c.n : 0;
    o.col_stride = 1;
  }
  fit_to_declaration(c, declared);
  // the trailing bytes as element bits, started over when they run out
  std::size_t at = 0;
  auto next = [&](nc_dtype t) -> std::uint32_t {
    if (v.values.empty()) return std::uint32_t(oracle::encode(harness::oracle_type(t), 1.0));
    std::uint32_t bits = 0;
    for (std::size_t b = 0; b < element_bytes(t); ++b) bits |= std::uint32_t(v.values[at++ % v.values.size()]) << (8 * b);
    return bits;
  };
  for (std::int64_t e = 0; e < c.m * c.n; ++e) vc.x.push_back(next(xt));
  for (std::int64_t j = 0; j < c.n; ++j) vc.gamma.push_back(next(gt));
  for (std::int64_t e = 0; e < c.m * c.n; ++e) vc.dy.push_back(next(xt));
  return vc;
}

// the value case in the harness's case format: dense rows, each operand at its offset
harness::norm_case norm_case_of(const value_case& vc) {
  const call_spec& c = vc.call;
  harness::norm_case out;
  out.m = c.m, out.n = c.n, out.epsilon = c.epsilon;
  out.x_dtype = c.ops[op_x].dtype, out.gamma_dtype = c.ops[op_gamma].dtype;
  const auto rows = [&](int k) { return harness::matrix_layout{c.ops[std::size_t(k)].offset, c.n, 1}; };
  const auto entries = [&](int k) { return harness::vector_layout{c.ops[std::size_t(k)].offset, 1}; };
  out.layout = {rows(op_x), rows(op_y), rows(op_dy), rows(op_dx), entries(op_gamma), entries(op_r), entries(op_dgamma)};
  out.x = vc.x, out.gamma = vc.gamma, out.dy = vc.dy;
  return out;
}

// the isolation property, judged where it applies; like the differential properties it judges
// the case's one run (property::judge), and makes the run it compares with itself
constexpr const char* isolation_property = "a_non_finite_row_leaves_every_other_row_unchanged";

// the case run once: the forward and the backward (none is called where the kernel has no
// backward: execute gives zeros), every memory rule checked by execute
harness::outputs run_once(const kernel& k, const harness::norm_case& c, const call_spec& call, bool backward) {
  harness::outputs out;
  try {
    out = harness::execute(k, c, harness::calls::forward_and_backward);
  } catch (const harness::property_failure& e) {
    violation(target, e.what(), describe(call));
  } catch (const std::exception& e) {
    violation(target, std::string("a valid call was not accepted: ") + e.what(), describe(call));
  }
  tag("forward path " + out.forward_path);
  if (backward) tag("backward path " + out.backward_path);
  return out;
}

void judge_isolation(const kernel& k, const harness::norm_case& c, const harness::outputs& out, const call_spec& call) {
  harness::observation o;
  if (judge_with(target, judging_property(target, isolation_property, call), k, c, out, call, o))
    tag("non-finite rows isolated");
}

bool finite(nc_dtype t, std::uint32_t bits) { return std::isfinite(oracle::decode(harness::oracle_type(t), bits)); }

// isolation is checked where it applies: finite gamma, and rows with NaN/Inf in x or dy
// beside rows without
bool isolation_applies(const value_case& vc) {
  const call_spec& c = vc.call;
  const nc_dtype xt = c.ops[op_x].dtype, gt = c.ops[op_gamma].dtype;
  for (std::uint32_t g : vc.gamma)
    if (!finite(gt, g)) {
      tag("isolation not applicable: gamma holds NaN/Inf");
      return false;
    }
  std::int64_t bad_rows = 0;
  for (std::int64_t i = 0; i < c.m; ++i) {
    bool bad = false;
    for (std::int64_t j = 0; j < c.n; ++j) {
      const std::size_t e = std::size_t(i * c.n + j);
      bad = bad || !finite(xt, vc.x[e]) || !finite(xt, vc.dy[e]);
    }
    bad_rows += bad ? 1 : 0;
  }
  return bad_rows > 0 && bad_rows < c.m;
}

// the property whose check failed, so that `normcheck replay` re-runs the regression as it
std::string property_of(const std::string& failure) {
  if (std::string judged = judged_property_of(failure); !judged.empty()) return judged;
  if (failure.rfind(isolation_property, 0) == 0) return isolation_property;
  return "dx_matches_the_exact_oracle";  // no failure (a corpus entry) or a memory rule: forward and backward run
}

std::string case_file_of(const value_case& vc, const std::uint8_t* data, std::size_t size, const std::string& failure) {
  std::map<std::string, std::string> meta = {{"origin", target},
                                             {"property", property_of(failure)},
                                             {"backend", plugin().backend()},
                                             {"kernel", plugin_path_for_files()},
                                             {"kernel_name", plugin().name()},
                                             {"fuzz.input", hex_bytes(data, size)}};
  if (!failure.empty()) meta["failure"] = failure;
  return case_text(vc.call, vc.x, vc.gamma, vc.dy, meta);
}

void run(const std::uint8_t* data, std::size_t size) {
  const kernel& k = plugin();
  const capabilities& declared = declaration();
  const value_case vc = case_of(decode<value_input>(data, size), declared);
  set_case_writer([&](const std::string& failure) { return case_file_of(vc, data, size, failure); });
  const call_spec& c = vc.call;
  tag(dtype_text(c.ops[op_x].dtype) + (c.ops[op_gamma].dtype != c.ops[op_x].dtype ? "+fp32 gamma" : ""));
  const harness::norm_case nc = norm_case_of(vc);
  const harness::outputs out = run_once(k, nc, c, declared.backward());
  judge_outputs(target, k, nc, out, true, declared.backward(), c);
  if (isolation_applies(vc)) judge_isolation(k, nc, out, c);
}

}  // namespace
}  // namespace nc::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return nc::fuzz::run_input(nc::fuzz::target, nc::fuzz::run, data, size);
}
