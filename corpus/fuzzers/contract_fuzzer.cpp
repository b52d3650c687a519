// contract_fuzzer: bytes -> one whole call (sizes, layouts, dtypes, ε bits, aliasing, workspace) on
// the plugin, which must either succeed and match the exact oracle or reject it with a contract
// error that names a broken argument, having written nothing.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>

#include "fuzz_call.hpp"
#include "fuzz_input.hpp"
#include "fuzz_session.hpp"
#include "normcheck/harness/judge.hpp"
#include "normcheck/oracles/dtype.hpp"

namespace nc::fuzz {
namespace {

constexpr const char* target = "contract_fuzzer";

// input element values: the trailing bytes as raw bits, or values in [-4, 4) from a seed
class value_source {
 public:
  explicit value_source(const contract_input& in)
      : raw_((in.op & contract_input::raw_values) && !in.values.empty()), bytes_(in.values), state_(in.value_seed) {}

  std::uint32_t next(nc_dtype type, bool gamma) {
    if (raw_) {
      std::uint32_t bits = 0;
      for (std::size_t b = 0; b < element_bytes(type); ++b) bits |= std::uint32_t(bytes_[at_++ % bytes_.size()]) << (8 * b);
      return bits;
    }
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    double v = double(state_ >> 40) / double(1 << 24) * 8 - 4;
    if (gamma) v = 0.25 + (v < 0 ? -v : v) / 2;  // gamma: positive, in [0.25, 2.25)
    return std::uint32_t(oracle::encode(harness::oracle_type(type), v));
  }

 private:
  bool raw_;
  const std::vector<std::uint8_t>& bytes_;
  std::size_t at_ = 0;
  std::uint64_t state_;
};

bool valid_dtype(nc_dtype t) { return t == NC_F32 || t == NC_F16 || t == NC_BF16; }

// whether the plugin must be able to plan the backward: what workspace_size needs
bool plannable(const call_spec& c) {
  const nc_dtype x = c.ops[op_x].dtype, g = c.ops[op_gamma].dtype;
  return c.m >= 0 && c.n >= 1 && valid_dtype(x) && valid_dtype(g) && (g == x || g == NC_F32);
}

// outside: what of the call lies outside the kernel's declaration (it may answer
// NC_ERR_UNSUPPORTED there)
std::size_t workspace_needed(const kernel& k, const call_spec& c, const arena& a, const std::string& outside) {
  try {
    return k.workspace_size(backward_args(c, a));
  } catch (const std::exception& e) {
    if (plannable(c) && outside.empty())
      violation(target, std::string("workspace_size failed on a call it must plan: ") + e.what(), describe(c));
    return 0;
  }
}

std::string rule_list(const std::vector<rule_break>& breaks) {
  std::string out;
  for (const rule_break& b : breaks) out += (out.empty() ? "" : ", ") + b.rule;
  return out;
}

// does the message name one of the broken arguments ("argument 'x.offset' = ..." names x)?
bool names_a_broken_argument(const std::string& message, const std::vector<rule_break>& breaks) {
  for (const rule_break& b : breaks)
    for (const std::string& name : b.operands)
      for (const char* after : {"'", ".", "["})
        if (message.find("'" + name + after) != std::string::npos) return true;
  return false;
}

// the case file of this input: the call in the harness's case format, with what it has no keys
// for (direction, pointers, faulty dtypes, the workspace, the raw input) as metadata
std::string case_of(const call_spec& c, const arena& a, const std::uint8_t* data, std::size_t size,
                    const std::string& failure) {
  std::map<std::string, std::string> meta = {{"origin", target},
                                             {"backend", plugin().backend()},
                                             {"kernel", plugin_path_for_files()},
                                             {"kernel_name", plugin().name()},
                                             {"fuzz.call", describe(c)},
                                             {"fuzz.input", hex_bytes(data, size)}};
  if (!failure.empty()) meta["failure"] = failure;
  // a judged property's failure replays as that property; anything else (the call's acceptance,
  // its memory rules, a sanitizer's report, or no failure at all) is the whole call's, which only
  // this target replays
  if (std::string property = judged_property_of(failure); !property.empty())
    meta["property"] = property;
  else
    meta["fuzz.note"] = "a finding of the whole call, which no property replays: `normcheck replay` runs the raw "
                        "input beside this file through contract_fuzzer_replay";
  std::istringstream lines(case_lines(c));
  for (std::string line; std::getline(lines, line);) {
    const auto eq = line.find(" = ");
    const std::string key = line.substr(0, eq);
    // what the case format has no key for: the direction, pointers, dtypes, the workspace
    const bool extra = key == "direction" || key.rfind("workspace.", 0) == 0 ||
                       key.ends_with(".data") || key.ends_with(".dtype");
    if (extra) meta["fuzz.call." + key] = line.substr(eq + 3);
  }
  // values only where the case format can hold them: N itself bounded too (at M = 0 a wild N
  // has no element of x, but gamma still has N), and M*N without overflow
  const bool representable = c.m >= 0 && c.n >= 1 && c.n <= 65536 && c.m <= 65536 / c.n &&
                             valid_dtype(c.ops[op_x].dtype) && valid_dtype(c.ops[op_gamma].dtype);
  call_spec shown = c;
  std::vector<std::uint32_t> x, gamma, dy;
  if (!representable) {
    meta.erase("property");
    meta["fuzz.note"] = "sizes or dtypes outside the case format: `normcheck replay` runs the raw input beside this file through contract_fuzzer_replay";
    shown.m = std::max<std::int64_t>(c.m, 0) > 65536 ? 0 : std::max<std::int64_t>(c.m, 0);
    shown.n = c.n > 65536 ? 1 : std::max<std::int64_t>(c.n, 1);  // the shape only: no values are read
    shown.m = shown.m * shown.n > 65536 ? 0 : shown.m;
    for (int k : {op_x, op_gamma})
      if (!valid_dtype(shown.ops[std::size_t(k)].dtype)) shown.ops[std::size_t(k)].dtype = NC_F32;
  }
  auto values = [&](int k, std::vector<std::uint32_t>& out) {
    const bool read = representable && c.uses(k) && c.ops[std::size_t(k)].fits;
    for (std::int64_t i = 0; i < shown.rows(k); ++i)
      for (std::int64_t j = 0; j < shown.cols(k); ++j) out.push_back(read ? a.get(c, k, i, j) : 0);
  };
  values(op_x, x);
  values(op_gamma, gamma);
  values(op_dy, dy);
  return case_text(shown, x, gamma, dy, meta);
}

void run(const std::uint8_t* data, std::size_t size) {
  const kernel& k = plugin();
  const capabilities& declared = declaration();
  set_case_writer(nullptr);
  const contract_input in = decode<contract_input>(data, size);
  call_spec c = realize(in, declared);
  arena& a = input_arena();
  a.place_operands(c);
  const std::string outside = outside_declaration(c, declared);
  if (c.backward) {
    c.workspace_needed = workspace_needed(k, c, a, outside);
    if (a.place_workspace(c)) {
      // the region moved (same alignment): the plugin must ask for the same workspace
      const std::size_t again = workspace_needed(k, c, a, outside);
      if (again != c.workspace_needed)
        violation(target, "workspace_size changed from " + std::to_string(c.workspace_needed) + " to " +
                              std::to_string(again) + " bytes when only the pointers' values changed",
                  describe(c));
    }
  }

  // inputs get values, outputs the poison no kernel writes
  value_source values(in);
  for (int op : {op_x, op_gamma, op_dy, op_r}) {
    if (!c.uses(op) || c.writes(op) || !c.ops[std::size_t(op)].fits) continue;
    const nc_dtype type = c.ops[std::size_t(op)].dtype;
    a.each(c, op, [&](std::uint8_t* p) {
      const std::uint32_t bits = values.next(type, op == op_gamma);
      std::memcpy(p, &bits, element_bytes(type));
    });
  }
  for (int op = 0; op < operand_count; ++op)
    if (c.uses(op) && c.writes(op)) a.fill(c, op, nc::poison_nan(c.ops[std::size_t(op)].dtype));

  const std::vector<rule_break> breaks = contract_breaks(c, a);
  const bool valid = breaks.empty();
  if (valid && !outside.empty()) {
    // the drawing keeps valid calls inside the declaration; placement can still align an
    // aliased operand where the kernel declares no such layout
    tag("skipped: a valid call outside the declaration");
    return;
  }
  if (valid && c.backward && !c.workspace_fits) {
    tag("skipped: a valid call too large for the arena");
    return;
  }
  if (valid)
    for (int op = 0; op < operand_count; ++op)
      if (c.uses(op) && c.rows(op) * c.cols(op) > 0 && !c.ops[std::size_t(op)].fits) {
        tag("skipped: a valid call too large for the arena");
        return;  // a valid call whose memory cannot be given: nothing to test
      }

  // the backward takes r as a correct forward wrote it: the oracle's r, rounded to fp32 (unless
  // r shares memory with another input, where writing it would change that input)
  bool oracle_applies = valid;
  if (valid && c.backward && c.m > 0) {
    const byte_span r = span_of(c, op_r);
    for (int op : {op_x, op_gamma, op_dy}) oracle_applies = oracle_applies && !r.overlaps(span_of(c, op));
    if (oracle_applies) {
      const oracle::forward_result f = harness::exact_forward_of(norm_case_of(c, a), declared);
      for (std::int64_t i = 0; i < c.m; ++i)
        a.set(c, op_r, 0, i, std::uint32_t(oracle::encode(oracle::dtype::f32, f.r[std::size_t(i)])));
    } else {
      tag("oracle skipped: r shares memory with an input");
    }
  }

  set_case_writer([&, text = std::optional<std::string>()](const std::string& failure) mutable {
    // the values are the ones before the call, whatever the call did to them
    if (!text) text = case_of(c, a, data, size, "");
    return failure.empty() ? *text : case_of(c, a, data, size, failure);
  });

  const std::string path = valid && c.m > 0 ? (c.backward ? k.backward_path(backward_args(c, a))
                                                          : k.forward_path(forward_args(c, a)))
                                            : "";
  const call_result got = run_call(k, c, a);
  const char* direction = c.backward ? "backward" : "forward";

  if (auto problem = a.check(c, got.result == call_result::accepted)) violation(target, *problem, describe(c));
  switch (got.result) {
    case call_result::failed:
      if (got.status == NC_ERR_UNSUPPORTED && !outside.empty()) {
        tag(std::string(direction) + " unsupported outside the declaration");
        return;  // an invalid call outside what the kernel serves: it may say so instead
      }
      if (got.status == NC_ERR_UNSUPPORTED)
        violation(target,
                  "the kernel answered NC_ERR_UNSUPPORTED to a " + std::string(valid ? "valid" : "broken") +
                      " call inside its declared capabilities (" + declared.describe() + "): " + got.message,
                  describe(c));
      violation(target,
                std::string("the plugin failed ") + (valid ? "a valid call: " : "an invalid call instead of rejecting it (" +
                                                                                    rule_list(breaks) + "): ") +
                    got.message,
                describe(c));
    case call_result::rejected:
      if (valid) violation(target, "rejected a valid call: " + got.message, describe(c));
      if (!names_a_broken_argument(got.message, breaks))
        violation(target, "the error names none of the broken arguments (" + rule_list(breaks) + "): " + got.message,
                  describe(c));
      tag(std::string(direction) + " rejected");
      if (breaks.size() == 1) tag(std::string(direction) + " rejects " + breaks[0].rule);
      return;
    case call_result::accepted:
      // abi.h: a kernel that needs less alignment may serve a call whose workspace has less (the
      // seed design's fp32 table takes 4 bytes); every other broken rule must be rejected
      if (!valid && std::all_of(breaks.begin(), breaks.end(), [](const rule_break& b) { return b.rule == "workspace.align"; })) {
        tag(std::string(direction) + " accepted a less aligned workspace");
        return;
      }
      if (!valid) violation(target, "accepted a call that breaks the contract (" + rule_list(breaks) + ")", describe(c));
      break;
  }

  tag(std::string(direction) + " accepted");
  if (!path.empty()) tag(std::string(direction) + " path " + path);
  if (c.m == 0) tag(std::string(direction) + " m = 0");
  if (!oracle_applies) return;
  // the inputs as they sit in the arena (the arena's check has held them unchanged)
  judge_outputs(target, k, norm_case_of(c, a), outputs_of(c, a), !c.backward, c.backward, c);
}

}  // namespace
}  // namespace nc::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return nc::fuzz::run_input(nc::fuzz::target, nc::fuzz::run, data, size);
}
