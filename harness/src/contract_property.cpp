// The contract property: a valid call with one argument broken by one rule of the kernel
// contract (abi.h, DESIGN.md "Kernel contract") must be rejected with a contract_error whose
// message names that argument, and must write nothing — no output element, gap or guard band,
// no byte of the workspace.
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>

#include "normcheck/contract_rules.hpp"
#include "normcheck/harness/execute.hpp"
#include "normcheck/harness/failure.hpp"
#include "normcheck/harness/generators.hpp"
#include "normcheck/harness/property.hpp"

namespace nc::harness {
namespace {

// the arguments of both calls over one case's buffers, and the workspace
struct call {
  nc_forward_args f;
  nc_backward_args b;
  std::size_t workspace_needed;
};

struct rule {
  const char* name;     // a sentence: what is broken
  bool backward;        // the call it breaks
  const char* rule_id;  // the rule of the catalog it breaks (normcheck/contract_rules.hpp)
  std::function<void(call&, const norm_case&)> apply;
  // the argument the message must name: the catalog's for the rule
  std::string argument() const { return std::string(find_contract_rule(rule_id)->argument); }
};

nc_dtype other_dtype(nc_dtype t) { return t == NC_F32 ? NC_F16 : NC_F32; }
nc_dtype wrong_gamma(nc_dtype x) { return x == NC_F32 ? NC_F16 : x == NC_F16 ? NC_BF16 : NC_F16; }

// rows that overlap (two or more rows), else a zero column stride
void overlap_rows(nc_matrix& a, const norm_case& c) {
  if (c.m >= 2) a.row_stride = c.n > 1 ? c.n - 1 : 0, a.col_stride = 1;
  else a.col_stride = 0;
}

// a layout whose last element lies past 2^63 elements
void overflow_layout(nc_matrix& a, const norm_case& c) {
  if (c.m >= 2) a.row_stride = std::int64_t(1) << 62;
  else if (c.n >= 2) a.col_stride = std::int64_t(1) << 62;
  else a.offset = std::int64_t(1) << 62;
}

// moves operand `out` onto `other`'s memory so that its first element covers other's first byte
template <class A, class B>
void overlap(A& out, const B& other) {
  const std::int64_t first_byte = other.offset * std::int64_t(size_of(other.dtype));
  out.data = other.data;
  out.offset = first_byte / std::int64_t(size_of(out.dtype));
}

// the workspace over an operand's first element (misaligned or overlapping: both rejected)
template <class B>
void workspace_over(call& k, const B& other) {
  k.b.workspace = static_cast<char*>(other.data) + other.offset * std::int64_t(size_of(other.dtype));
}

const std::vector<rule>& rules() {
  static const std::vector<rule> list = {
      {"n is zero", false, "n", [](call& k, const norm_case&) { k.f.n = 0; }},
      {"n is negative", false, "n", [](call& k, const norm_case& c) { k.f.n = -c.n; }},
      {"m is negative", false, "m", [](call& k, const norm_case& c) { k.f.m = -1 - c.m; }},
      {"epsilon is negative", false, "epsilon", [](call& k, const norm_case& c) { k.f.epsilon = -(c.epsilon + 1e-6f); }},
      {"epsilon is NaN", false, "epsilon", [](call& k, const norm_case&) { k.f.epsilon = NAN; }},
      {"epsilon is infinite", false, "epsilon", [](call& k, const norm_case&) { k.f.epsilon = INFINITY; }},
      {"x has an unknown dtype", false, "x.dtype", [](call& k, const norm_case&) { k.f.x.dtype = nc_dtype(7); }},
      {"y is not in x's dtype", false, "y.dtype", [](call& k, const norm_case&) { k.f.y.dtype = other_dtype(k.f.x.dtype); }},
      {"gamma is neither x's dtype nor fp32", false, "gamma.dtype_pair",
       [](call& k, const norm_case&) { k.f.gamma.dtype = wrong_gamma(k.f.x.dtype); }},
      {"r is not fp32", false, "r.dtype", [](call& k, const norm_case&) { k.f.r.dtype = NC_F16; }},
      {"x rows overlap", false, "x.distinct", [](call& k, const norm_case& c) { overlap_rows(k.f.x, c); }},
      {"y rows overlap", false, "y.distinct", [](call& k, const norm_case& c) { overlap_rows(k.f.y, c); }},
      {"x has a zero column stride", false, "x.col_stride", [](call& k, const norm_case&) { k.f.x.col_stride = 0; }},
      {"x has a negative offset", false, "x.offset", [](call& k, const norm_case&) { k.f.x.offset = -1; }},
      {"gamma has a negative offset", false, "gamma.offset", [](call& k, const norm_case&) { k.f.gamma.offset = -3; }},
      {"x's layout overflows 64-bit indexing", false, "x.overflow", [](call& k, const norm_case& c) { overflow_layout(k.f.x, c); }},
      {"x is null", false, "x.null", [](call& k, const norm_case&) { k.f.x.data = nullptr; }},
      {"gamma is null", false, "gamma.null", [](call& k, const norm_case&) { k.f.gamma.data = nullptr; }},
      {"y is null", false, "y.null", [](call& k, const norm_case&) { k.f.y.data = nullptr; }},
      {"r is null", false, "r.null", [](call& k, const norm_case&) { k.f.r.data = nullptr; }},
      {"y overlaps x", false, "y.overlap", [](call& k, const norm_case&) { overlap(k.f.y, k.f.x); }},
      {"y overlaps gamma", false, "y.overlap", [](call& k, const norm_case&) { overlap(k.f.y, k.f.gamma); }},
      {"r overlaps x", false, "r.overlap", [](call& k, const norm_case&) { overlap(k.f.r, k.f.x); }},
      {"r overlaps gamma", false, "r.overlap", [](call& k, const norm_case&) { overlap(k.f.r, k.f.gamma); }},
      {"r overlaps y", false, "r.overlap", [](call& k, const norm_case&) { overlap(k.f.r, k.f.y); }},
      {"backward: n is zero", true, "n", [](call& k, const norm_case&) { k.b.n = 0; }},
      {"backward: m is negative", true, "m", [](call& k, const norm_case&) { k.b.m = -1; }},
      {"backward: x has an unknown dtype", true, "x.dtype", [](call& k, const norm_case&) { k.b.x.dtype = nc_dtype(9); }},
      {"dy is not in x's dtype", true, "dy.dtype", [](call& k, const norm_case&) { k.b.dy.dtype = other_dtype(k.b.x.dtype); }},
      {"dx is not in x's dtype", true, "dx.dtype", [](call& k, const norm_case&) { k.b.dx.dtype = other_dtype(k.b.x.dtype); }},
      {"backward: gamma is neither x's dtype nor fp32", true, "gamma.dtype_pair",
       [](call& k, const norm_case&) { k.b.gamma.dtype = k.b.dgamma.dtype = wrong_gamma(k.b.x.dtype); }},
      {"dgamma is not in gamma's dtype", true, "dgamma.dtype",
       [](call& k, const norm_case&) { k.b.dgamma.dtype = k.b.gamma.dtype == NC_F32 ? NC_BF16 : NC_F32; }},
      {"backward: r is not fp32", true, "r.dtype", [](call& k, const norm_case&) { k.b.r.dtype = NC_BF16; }},
      {"dy rows overlap", true, "dy.distinct", [](call& k, const norm_case& c) { overlap_rows(k.b.dy, c); }},
      {"dx rows overlap", true, "dx.distinct", [](call& k, const norm_case& c) { overlap_rows(k.b.dx, c); }},
      {"dgamma has a negative offset", true, "dgamma.offset", [](call& k, const norm_case&) { k.b.dgamma.offset = -1; }},
      {"dy is null", true, "dy.null", [](call& k, const norm_case&) { k.b.dy.data = nullptr; }},
      {"dx is null", true, "dx.null", [](call& k, const norm_case&) { k.b.dx.data = nullptr; }},
      {"dgamma is null", true, "dgamma.null", [](call& k, const norm_case&) { k.b.dgamma.data = nullptr; }},
      {"backward: r is null", true, "r.null", [](call& k, const norm_case&) { k.b.r.data = nullptr; }},
      {"dx overlaps x", true, "dx.overlap", [](call& k, const norm_case&) { overlap(k.b.dx, k.b.x); }},
      {"dx overlaps dy", true, "dx.overlap", [](call& k, const norm_case&) { overlap(k.b.dx, k.b.dy); }},
      {"dx overlaps r", true, "dx.overlap", [](call& k, const norm_case&) { overlap(k.b.dx, k.b.r); }},
      {"dgamma overlaps gamma", true, "dgamma.overlap", [](call& k, const norm_case&) { overlap(k.b.dgamma, k.b.gamma); }},
      {"dgamma overlaps dx", true, "dgamma.overlap", [](call& k, const norm_case&) { overlap(k.b.dgamma, k.b.dx); }},
      {"the workspace overlaps dx", true, "workspace.overlap", [](call& k, const norm_case&) { workspace_over(k, k.b.dx); }},
      {"the workspace overlaps x", true, "workspace.overlap", [](call& k, const norm_case&) { workspace_over(k, k.b.x); }},
      {"the workspace is smaller than the query", true, "workspace_bytes",
       [](call& k, const norm_case&) { k.b.workspace_bytes = k.workspace_needed - 1; }},
      {"the workspace is null", true, "workspace.null", [](call& k, const norm_case&) { k.b.workspace = nullptr; }},
  };
  return list;
}

// whether a rule can be broken on a kernel drawn inside these capabilities: the backward's
// rules need a backward, r's rules a forward that writes r ("" if it can)
std::string rule_needs(const rule& r, const capabilities& caps) {
  if (r.backward && !caps.backward()) return "the kernel declares no backward";
  if (!r.backward && r.argument() == "r" && !caps.writes_r()) return "the kernel writes no r";
  return "";
}

const rule& rule_named(const std::string& name) {
  for (const rule& r : rules())
    if (name == r.name) return r;
  throw std::invalid_argument("no contract rule '" + name + "'");
}

// the rule id a message cites in its "[id] " prefix, if it has one
std::optional<std::string> cited_rule(const std::string& message) {
  const std::size_t close = message.find("] argument '");
  if (close == std::string::npos) return std::nullopt;
  const std::size_t open = message.rfind('[', close);
  if (open == std::string::npos) return std::nullopt;
  return message.substr(open + 1, close - open - 1);
}

bool names(const std::string& message, const std::string& argument) {
  return message.find("'" + argument + "'") != std::string::npos ||
         message.find("'" + argument + ".") != std::string::npos;
}

rc::Gen<norm_case> contract_cases() {
  return rc::gen::exec([] {
    // small valid calls with at least one row: every rule applies to them
    static const case_profile profile = [] {
      case_profile p = case_profile::differential();
      p.small_elements = 256;
      p.large_percent = p.long_percent = 0;
      p.empty_percent = 0;
      p.min_rows = 1;
      return p;
    }();
    norm_case c = *gen_case(profile);
    std::vector<int> weights;
    for (const rule& r : rules()) weights.push_back(rule_needs(r, drawing_domain()).empty() ? 1 : 0);
    c.parameters["rule"] = rules()[*gen_weighted_index(weights)].name;
    return c;
  });
}

std::uint32_t matrix_bits(const nc_matrix& a, std::int64_t n) {
  if (!valid_dtype(a.dtype)) return 0;
  return layout_bits(matrix_layout{a.offset, a.row_stride, a.col_stride}, n, a.dtype);
}
std::uint32_t vector_bits(const nc_vector& v) {
  if (!valid_dtype(v.dtype)) return 0;
  return layout_bits(vector_layout{v.offset, v.stride}, v.dtype);
}

// whether a dtype is x's (or gamma's) in a pair the kernel serves
bool served_dtype(const capabilities& caps, nc_dtype t, bool as_gamma) {
  for (nc_dtype x : all_dtypes)
    for (nc_dtype g : all_dtypes)
      if (caps.serves(x, g) && (as_gamma ? g : x) == t) return true;
  return false;
}

// whether a (broken) call lies outside the kernel's declared capabilities: an operand in a
// dtype or a layout it does not serve, a longer row, an ε it does not take
bool outside(const capabilities& caps, const call& k, bool backward) {
  const auto matrices = [&](std::initializer_list<const nc_matrix*> list, std::int64_t n) {
    bool out = false;
    for (const nc_matrix* a : list)
      out |= !served_dtype(caps, a->dtype, false) || !caps.serves_layouts(matrix_bits(*a, n));
    return out;
  };
  const auto vectors = [&](std::initializer_list<const nc_vector*> list) {
    bool out = false;
    for (const nc_vector* v : list) out |= !served_dtype(caps, v->dtype, true) || !caps.serves_layouts(vector_bits(*v));
    return out;
  };
  if (backward) {
    const nc_backward_args& b = k.b;
    return !caps.serves(b.x.dtype, b.gamma.dtype) || matrices({&b.x, &b.dy, &b.dx}, b.n) ||
           vectors({&b.gamma, &b.dgamma}) || !caps.serves_layouts(vector_bits(b.r)) ||
           (caps.max_n > 0 && b.n > caps.max_n);
  }
  const nc_forward_args& f = k.f;
  return !caps.serves(f.x.dtype, f.gamma.dtype) || matrices({&f.x, &f.y}, f.n) || vectors({&f.gamma}) ||
         (caps.writes_r() && !caps.serves_layouts(vector_bits(f.r))) || !caps.takes_epsilon(f.epsilon) ||
         (caps.max_n > 0 && f.n > caps.max_n);
}

void check_contract(const kernel& k, const norm_case& c, observation& o) {
  const auto named = c.parameters.find("rule");
  if (named == c.parameters.end()) throw std::invalid_argument("the case has no parameter 'rule'");
  const rule& broken = rule_named(named->second);
  o.tag("rule", broken.name);
  o.tag("dtype", dtype_class(c));
  o.tag("call", broken.backward ? "backward" : "forward");

  const capabilities& caps = k.capabilities();
  if (const std::string why = rule_needs(broken, caps); !why.empty())
    throw std::invalid_argument("the rule '" + std::string(broken.name) + "' does not apply to this kernel: " + why);
  case_buffers buffers(k, c);
  call args{buffers.forward_args(), buffers.backward_args(), 0};
  if (!caps.writes_r()) args.f.r.data = nullptr;  // abi.h NC_NO_R
  if (caps.backward()) {
    try {
      args.workspace_needed = k.workspace_size(args.b);
    } catch (const kernel_error& e) {
      if (e.status != NC_ERR_UNSUPPORTED) throw;
      throw property_failure("the kernel answered NC_ERR_UNSUPPORTED to the workspace query for " +
                             declared_context(k, c) + ": " + e.what());
    }
  }
  guarded_scratch workspace(k, std::max<std::size_t>(args.workspace_needed, 16));
  args.b.workspace = workspace.data();
  args.b.workspace_bytes = args.workspace_needed;
  // a plugin that needs no workspace has no workspace rules to break: the rule was drawn (its
  // share holds) and the case says why it checked nothing
  if (broken.argument().rfind("workspace", 0) == 0 && args.workspace_needed == 0) {
    o.tag("workspace rules", "not applicable (no workspace needed)");
    return;
  }
  broken.apply(args, c);

  buffers.freeze_all();
  const std::string claim = "a call where " + std::string(broken.name) + " must be rejected naming '" +
                            broken.argument() + "' and write nothing";
  try {
    if (broken.backward) k.backward(args.b);
    else k.forward(args.f);
    k.synchronize();
    throw property_failure(claim + ": the call was accepted");
  } catch (const contract_error& e) {
    if (!names(e.what(), broken.argument()))
      throw property_failure(claim + ": the message does not name it: " + e.what());
    // a message that cites a rule ("[x.offset] argument 'x.offset' ...", as the shipped checker's
    // do) must cite one of the catalog, of an argument it names (two outputs that overlap are
    // one rejection, which may cite either's overlap rule)
    if (const std::optional<std::string> id = cited_rule(e.what())) {
      const contract_rule* cited = find_contract_rule(*id);
      if (cited == nullptr || !names(e.what(), std::string(cited->argument)))
        throw property_failure(claim + ": the message cites " +
                               (cited == nullptr ? "[" + *id + "], no rule of the catalog"
                                                 : "[" + *id + "], a rule of '" + std::string(cited->argument) +
                                                       "', an argument it does not name") +
                               ": " + e.what());
      o.tag("cited rule", *id == broken.rule_id ? "the one broken" : "another of the argument");
    }
  } catch (const kernel_error& e) {
    // a partial kernel may answer NC_ERR_UNSUPPORTED where the broken call also lies outside
    // what it declares (a dtype or a layout it does not serve): nothing written is still checked
    if (e.status != NC_ERR_UNSUPPORTED || !outside(caps, args, broken.backward))
      throw property_failure(claim + ": failed with status " + std::to_string(int(e.status)) +
                             " instead of a contract error: " + e.what());
    o.tag("answer", "unsupported (outside the declared capabilities)");
  }
  if (auto problem = buffers.check(broken.backward ? "rejected backward" : "rejected forward"))
    throw property_failure(claim + ": " + *problem);
  if (auto problem = workspace.check(true)) throw property_failure(claim + ": " + *problem);
}

}  // namespace

std::vector<contract_breaker> contract_breakers() {
  std::vector<contract_breaker> out;
  for (const rule& r : rules()) out.push_back({r.name, r.backward, r.rule_id});
  return out;
}

property contract_property() {
  std::vector<intended_share> intended;
  for (const rule& r : rules())
    intended.push_back({"rule", r.name, 0.004, [&r](const capabilities& caps) { return rule_needs(r, caps); }});
  return {"invalid_calls_are_rejected_naming_the_argument", {"forward", "backward", "gamma"}, 4500,
          contract_cases(), check_contract, intended};
}

}  // namespace nc::harness
