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

}  // namespace nc::harness
