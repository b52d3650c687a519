// The quantized outputs' own properties (abi.h "Variants"): what a quantization must do beside
// matching the exact oracle (y_and_r_match_the_exact_oracle judges every code and scale):
//   saturation   rows scaled past the format's range give +-max, never a wrapped code, never
//                a NaN code where the row has no NaN
//   equivariance scaling gamma by 2^k scales every dynamic scale by 2^k, bit for bit, and leaves
//                every code as it was (where neither scale is the floor)
//   scale one    a static scale of 1 gives the quantization of the plain operator's y, within the
//                roundings that separate the two calls (an fp32 ulp of evaluation order, y's
//                rounding to x's dtype, and any difference of their r)
#include <algorithm>
#include <bit>
#include <cmath>
#include <sstream>

#include "normcheck/harness/execute.hpp"
#include "normcheck/harness/failure.hpp"
#include "normcheck/harness/generators.hpp"
#include "normcheck/harness/judge.hpp"
#include "normcheck/harness/property.hpp"
#include "verdicts.hpp"

namespace nc::harness {
namespace {

using predicate = bool (*)(const nc_operation&);

bool static_quantization(const nc_operation& op) { return quantizes(op) && op.scale == NC_SCALE_STATIC; }
// gamma's scaling reaches y only without an offset (offset + 2^k gamma is no multiple of y)
bool scalable_quantization(const nc_operation& op) { return dynamic_scale(op) && op.weight_offset == 0.0f; }
nc_operation unquantized(const nc_operation& op) { return {op.residual, op.in_place, op.weight_offset, op.rows}; }

// static quantizations whose unquantized twin the kernel declares too
bool has_plain_twin(const nc_operation& op, const capabilities& caps) {
  const auto& declared = caps.declared_operations;
  return std::find(declared.begin(), declared.end(), unquantized(op)) != declared.end();
}

std::vector<nc_operation> drawable(const capabilities& caps, predicate which, bool twin = false) {
  std::vector<nc_operation> out;
  for (const nc_operation& op : caps.operations)
    if (which(op) && (!twin || has_plain_twin(op, caps))) out.push_back(op);
  return out;
}

requirement needs(predicate which, bool twin, std::string what) {
  return [which, twin, what](const capabilities& caps) {
    return drawable(caps, which, twin).empty() ? "the kernel declares no " + what : std::string();
  };
}

// a case of one of the operations drawn: gen_case in a domain of those alone (a per-group
// quantization's N is then a multiple of its group)
norm_case case_of(predicate which, bool twin, case_profile profile) {
  capabilities domain = drawing_domain();
  domain.operations = drawable(domain, which, twin);
  const scoped_domain drawing(domain);
  profile.variants = profile.quantized = true;
  return *gen_case(profile);
}

// the verdict of a case's codes and scales, as y_and_r_match_the_exact_oracle gives it
void judge(const kernel& k, const norm_case& c, const outputs& out, observation& o, const std::string& claim) {
  verdicts v;
  v.quantized(judge_quantized_of(c, k.capabilities(), out.y, out.scale));
  v.finish(o, claim);
}

double code_value(const norm_case& c, std::uint32_t code) {
  return oracle::decode(quantization_of(c).format, std::uint8_t(code));
}

// whether row i of h (x, plus the residual in a residual add) holds a NaN
bool row_has_nan(const norm_case& c, std::int64_t i) {
  for (std::int64_t j = 0; j < c.n; ++j) {
    const std::size_t e = std::size_t(i * c.n + j);
    const double h = value_of(c.x_dtype, c.x[e]) + (adds_residual(c.op) ? value_of(c.x_dtype, c.residual[e]) : 0.0);
    if (std::isnan(h)) return true;
  }
  return false;
}

// ---- saturation ----

rc::Gen<norm_case> saturation_cases() {
  return rc::gen::exec([] {
    // a third of the cases hold rows with a NaN or an Inf among well-scaled ones
    const bool non_finite = *gen_weighted_index({2, 1}) == 1;
    norm_case c = case_of(static_quantization, false, non_finite ? case_profile::non_finite() : case_profile::well_scaled());
    // a scale that puts rows of y near 1 past the format's largest code, by 2 to 256 times
    const double max = oracle::max_finite(quantization_of(c).format);
    c.scale = std::bit_cast<std::uint32_t>(float(std::ldexp(1.0 / max, -int(*gen_uniform(1, 8, 1)))));
    return c;
  });
}

void check_saturation(const kernel& k, const norm_case& c, observation& o) {
  const outputs out = execute(k, c, calls::forward);
  o.tag("operation", describe_operation(c.op));
  o.tag("dtype", dtype_class(c));
  judge(k, c, out, o, "codes past the format's range must saturate to +-max");
  // the exact judge holds every code to its quantization; say what share saturated, and that no
  // code of a row the oracle judges is a NaN
  const auto exact = exact_forward_of(c, k.capabilities());
  const double max = oracle::max_finite(quantization_of(c).format), scale = std::bit_cast<float>(c.scale);
  const bool int8 = c.op.quant == NC_QUANT_INT8;
  std::int64_t saturated = 0, judged = 0, nan_rows = 0;
  for (std::int64_t i = 0; i < c.m; ++i) {
    // a row whose h holds a NaN has r = NaN, so every v is NaN: every code a NaN code (int8: 0)
    if (row_has_nan(as_read(c, k.capabilities()), i)) {
      ++nan_rows;
      for (std::int64_t j = 0; j < c.n; ++j) {
        const std::uint32_t code = out.y[std::size_t(i * c.n + j)];
        if (int8 ? code != 0 : !std::isnan(code_value(c, code)))
          throw property_failure("a row holding a NaN must give NaN codes (int8: 0): y[" + std::to_string(i) + "," +
                                     std::to_string(j) + "] = " + std::to_string(code_value(c, code)),
                                 {{"y", i, j, NAN, code_value(c, code), 0}});
      }
      continue;
    }
    if (!exact.rows[std::size_t(i)].in_domain()) continue;
    for (std::int64_t j = 0; j < c.n; ++j) {
      const std::size_t e = std::size_t(i * c.n + j);
      ++judged;
      if (std::isnan(code_value(c, out.y[e])))
        throw property_failure("a code of a row without NaN must not be a NaN code: y[" + std::to_string(i) + "," +
                               std::to_string(j) + "] is");
      if (std::fabs(exact.y[e] / scale) > 2 * max) ++saturated;
    }
  }
  o.tag("saturated", judged == 0 ? "nothing judged" : saturated * 4 >= judged ? "a quarter or more" : "less");
  o.tag("rows with a NaN", nan_rows > 0 ? "some" : "none");
}

// ---- gamma scaled by 2^k: dynamic scales scale, codes stay ----

rc::Gen<norm_case> equivariance_cases() {
  return rc::gen::exec([] {
    norm_case c = case_of(scalable_quantization, false, case_profile::well_scaled());
    const int k = int(*gen_uniform(-6, 6, 1));
    c.parameters["k"] = std::to_string(k == 0 ? 1 : k);
    return c;
  });
}

void check_equivariance(const kernel& k, const norm_case& c, observation& o) {
  const int shift = std::stoi(c.parameters.at("k"));
  norm_case twin = c;
  // gamma by 2^k where that is exact in gamma's dtype; an element where it is not becomes 0 in both
  norm_case base = c;
  for (std::size_t j = 0; j < c.gamma.size(); ++j) {
    const double g = value_of(c.gamma_dtype, c.gamma[j]), scaled = std::ldexp(g, shift);
    const std::uint32_t bits = bits_of(c.gamma_dtype, scaled);
    if (!std::isfinite(scaled) || value_of(c.gamma_dtype, bits) != scaled || (g != 0 && std::fabs(g) < 0x1p-100)) {
      base.gamma[j] = twin.gamma[j] = bits_of(c.gamma_dtype, 0.0);
    } else {
      twin.gamma[j] = bits;
    }
  }
  const outputs a = execute(k, base, calls::forward), b = execute(k, twin, calls::forward);
  // each call is right on its own (a zero row's scale is the floor), then the two agree
  judge(k, base, a, o, "the codes and scales of the case");
  judge(k, twin, b, o, "the codes and scales of the case with gamma scaled by 2^" + std::to_string(shift));
  o.tag("operation", describe_operation(c.op));
  o.tag("dtype", dtype_class(c));
  o.tag("k", shift > 0 ? "positive" : "negative");
  const auto exact = exact_forward_of(base, k.capabilities());
  const std::int64_t per_row = scale_cols(c.op, c.n), width = c.n / per_row;
  const double floor = c.op.scale_floor;
  std::int64_t compared = 0, failures = 0;
  std::vector<mismatch> first;
  const auto fail = [&](mismatch m) {
    if (first.size() < 8) first.push_back(std::move(m));
    ++failures;
  };
  // a kernel that quantizes y rounded to an fp16 x (NC_QUANTIZES_ROUNDED_Y) scales exactly only
  // where y stays a normal fp16 in both calls: other rows are not compared
  const bool fp16_y = k.capabilities().quantizes_rounded_y() && c.x_dtype == NC_F16;
  const auto fp16_normal = [&](std::int64_t i) {
    for (std::int64_t j = 0; j < c.n; ++j)
      for (const double y : {exact.y[std::size_t(i * c.n + j)], std::ldexp(exact.y[std::size_t(i * c.n + j)], shift)})
        if (y != 0 && !(std::fabs(y) >= 0x1p-13 && std::fabs(y) <= 0x1p15)) return false;
    return true;
  };
  for (std::int64_t i = 0; i < c.m; ++i) {
    if (!exact.rows[std::size_t(i)].in_domain() || (fp16_y && !fp16_normal(i))) continue;
    for (std::int64_t g = 0; g < per_row; ++g) {
      const std::size_t at = std::size_t(i * per_row + g);
      const double sa = std::bit_cast<float>(a.scale[at]), sb = std::bit_cast<float>(b.scale[at]);
      // exact where both scales are normal, well clear of the floor and of fp32's ends
      const bool clear = [&] {
        for (double s : {sa, sb})
          if (!(s > 2 * floor && s >= 0x1p-100 && s <= 0x1p100)) return false;
        return true;
      }();
      if (!clear) continue;
      ++compared;
      const double want = std::ldexp(sa, shift);
      if (sb != want) fail({"scale", i, g, want, sb, 0});
      for (std::int64_t j = g * width; j < (g + 1) * width; ++j) {
        const std::size_t e = std::size_t(i * c.n + j);
        if (a.y[e] != b.y[e]) fail({"y", i, j, code_value(c, a.y[e]), code_value(c, b.y[e]), 0});
      }
    }
  }
  o.tag("scales compared", compared == 0 ? "none" : "some");
  if (failures > 0)
    throw property_failure("scaling gamma by 2^" + std::to_string(shift) +
                               " must scale every dynamic scale by it and keep every code: " + std::to_string(failures) +
                               " scale(s) or code(s) differ",
                           first);
}

// ---- a static scale of 1 is the plain operator's y, quantized ----

rc::Gen<norm_case> scale_one_cases() {
  return rc::gen::exec([] {
    norm_case c = case_of(static_quantization, true, case_profile::differential());
    c.scale = std::bit_cast<std::uint32_t>(1.0f);
    return c;
  });
}

void check_scale_one(const kernel& k, const norm_case& c, observation& o) {
  norm_case plain = c;
  plain.op = unquantized(c.op);
  plain.layout.y = {0, c.n, 1};
  const outputs q = execute(k, c, calls::forward), p = execute(k, plain, calls::forward);
  o.tag("operation", describe_operation(c.op));
  o.tag("dtype", dtype_class(c));
  const auto exact = exact_forward_of(plain, k.capabilities());
  const oracle::qformat format = quantization_of(c).format;
  std::int64_t failures = 0;
  bool same_r = true;
  std::vector<mismatch> first;
  for (std::int64_t i = 0; i < c.m; ++i) {
    if (!exact.rows[std::size_t(i)].in_domain()) continue;
    // the two calls' r differ at most by what each may differ from the exact one
    const double rq = std::bit_cast<float>(q.r[std::size_t(i)]), rp = std::bit_cast<float>(p.r[std::size_t(i)]);
    const double r_spread = k.capabilities().writes_r() ? std::fabs(rq - rp) / rp
                                                        : 2 * exact.r_bound[std::size_t(i)] / exact.r[std::size_t(i)];
    same_r &= q.r[std::size_t(i)] == p.r[std::size_t(i)];
    for (std::int64_t j = 0; j < c.n; ++j) {
      const std::size_t e = std::size_t(i * c.n + j);
      const double w = value_of(c.x_dtype, p.y[e]);
      // an fp32 ulp or two of another evaluation order, y's rounding to a 16-bit x, r's difference
      const double half_ulp = c.x_dtype == NC_F32 ? 0 : std::fabs(w) * (c.x_dtype == NC_F16 ? 0x1p-11 : 0x1p-8) + 0x1p-25;
      const double bound = std::fabs(w) * (0x1p-22 + r_spread) + half_ulp + 0x1p-149;
      if (!oracle::admits(format, w, bound, std::uint8_t(q.y[e]))) {
        if (first.size() < 8) first.push_back({"y", i, j, w, code_value(c, q.y[e]), bound});
        ++failures;
      }
    }
  }
  o.tag("r of the two calls", same_r ? "the same bits" : "differs");
  if (failures > 0)
    throw property_failure("a static scale of 1 must give the quantization of the plain operator's y: " +
                               std::to_string(failures) + " code(s) differ",
                           first);
}

}  // namespace

std::vector<property> quantized_properties() {
  std::vector<property> list = {
      {"quantized_codes_past_the_format_range_saturate", {"forward"}, 600, saturation_cases(), check_saturation,
       {{"saturated", "a quarter or more", 0.4}, {"rows with a NaN", "some", 0.1}}, "", 0,
       needs(static_quantization, false, "quantized output with a static scale")},
      {"scaling_gamma_by_2_to_the_k_scales_the_dynamic_scales_and_keeps_the_codes", {"forward"}, 600,
       equivariance_cases(), check_equivariance, {{"scales compared", "some", 0.5}}, "", 0,
       needs(scalable_quantization, false, "quantized output with a dynamic scale and no weight offset")},
      {"a_static_scale_of_1_gives_the_quantization_of_the_plain_y", {"forward"}, 600, scale_one_cases(),
       check_scale_one, {}, "", 0,
       needs(static_quantization, true, "static quantization beside the same operation unquantized")},
  };
  for (property& p : list) p.variants = p.quantized = true;
  return list;
}

}  // namespace nc::harness
