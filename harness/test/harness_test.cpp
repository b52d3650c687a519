// The harness's own parts: case files, generators and their shrinking, guarded buffers, the
// executor, and the property registry against the ctest registration.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "normcheck/contract_rules.hpp"
#include "normcheck/harness/campaign.hpp"
#include "normcheck/harness/case_file.hpp"
#include "normcheck/harness/arena.hpp"
#include "normcheck/harness/execute.hpp"
#include "normcheck/harness/failure.hpp"
#include "normcheck/harness/generators.hpp"
#include "normcheck/harness/property.hpp"
#include "normcheck/harness/report.hpp"
#include "normcheck/harness/worker.hpp"

namespace nc::harness {
namespace {

const kernel& simt() {
  static const kernel k = kernel::shipped("simt");
  return k;
}

norm_case sample_case(std::uint64_t seed) {
  return gen_case(case_profile::differential())(rc::Random(seed), 0).value();
}

TEST(case_file, a_written_case_reads_back_identical) {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    case_file file{sample_case(seed), {{"property", "y_and_r_match_the_exact_oracle"}, {"failure", "a # b\nc"}}};
    file.value.parameters["row"] = "3";
    if (seed % 2) file.value.dy2 = file.value.dy;
    const case_file back = parse_case_file(to_text(file));
    EXPECT_EQ(back.value, file.value) << to_text(file);
    EXPECT_EQ(back.metadata.at("failure"), "a %23 b c");
  }
}

TEST(case_file, a_malformed_file_is_rejected_naming_the_line) {
  const std::string good = to_text({sample_case(3), {}});
  try {
    parse_case_file(good + "x[0,0] = zz\n");
    FAIL() << "accepted";
  } catch (const case_file_error& e) {
    EXPECT_NE(std::string(e.what()).find("line"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_case_file("format = normcheck-case 1\nm = 1\n"), case_file_error);
}

TEST(registry, every_property_is_a_ctest_test_once_on_each_backend_it_can_run_on) {
  const kernel shipped = kernel::shipped("simt");
  const std::string script = ctest_script("property_test", {"simt", "cuda"}, shipped);
  const auto count = [&](const std::string& text) {
    std::size_t n = 0;
    for (std::size_t at = script.find(text); at != std::string::npos; at = script.find(text, at + 1)) ++n;
    return n;
  };
  std::set<std::string> names;
  for (const property& p : all_properties()) {
    EXPECT_TRUE(names.insert(p.name).second) << p.name << " twice";
    EXPECT_GT(p.cases, 0) << p.name;
    EXPECT_EQ(count("add_test([==[property_simt." + p.name + "]==]"), p.device_only.empty() ? 1u : 0u) << p.name;
    EXPECT_EQ(count("add_test([==[property_cuda." + p.name + "]==]"), 1u) << p.name;
  }
  // each declared variant alone through the differential properties (the forward's alone for a
  // quantized output): the shipped kernel declares residual adds, offsets, per-head rows and
  // quantized outputs
  EXPECT_EQ(count("add_test([==[variant_simt.add_rmsnorm.dx_matches_the_exact_oracle]==]"), 1u);
  EXPECT_EQ(count("add_test([==[variant_simt.head_rmsnorm.y_and_r_match_the_exact_oracle]==]"), 1u);
  EXPECT_EQ(count("add_test([==[variant_cuda.rmsnorm_fp8_per_group.y_and_r_match_the_exact_oracle]==]"), 1u);
  EXPECT_EQ(count("add_test([==[variant_simt.rmsnorm_fp8_static.dx_matches_the_exact_oracle]==]"), 0u);
  EXPECT_EQ(count("add_test([==[variant_simt.rmsnorm."), 0u);
  EXPECT_EQ(count("NORMCHECK_VARIANT=gemma_rmsnorm;NORMCHECK_CASE_SCALE=0.2"), 2u * 4u);  // 4 properties, 2 backends
}

// the contract's vocabulary is one catalog (normcheck/contract_rules.hpp): the contract
// property's breakers cite it, the contract fuzzer's tags (and so its seeds) name exactly its
// rules, and the shipped checker's messages start with an id of it
TEST(contract_rules, every_breaker_cites_a_rule_of_the_catalog_for_its_call) {
  std::set<std::string> ids;
  for (const contract_rule& r : contract_rules) EXPECT_TRUE(ids.insert(std::string(r.id)).second) << r.id;
  for (const contract_breaker& b : contract_breakers()) {
    const contract_rule* r = find_contract_rule(b.rule_id);
    ASSERT_NE(r, nullptr) << b.name << " cites '" << b.rule_id << "'";
    EXPECT_TRUE(r->calls & (b.backward ? rule_backward : rule_forward)) << b.name << ": " << b.rule_id;
  }
}

// a rule with a numeric boundary (an offset, a stride, rows far enough apart, a count, epsilon, an
// enum's codes, the workspace's bytes and alignment) is broken at its exact boundary in a share
// of its cases, in each call it applies to (the contract property's "rule broken at its
// boundary" dimension); a pointer, a dtype pair, an overlap and 64-bit overflow have none
TEST(contract_rules, every_rule_with_a_boundary_is_broken_there) {
  const std::set<std::string> whole = {"m", "n", "epsilon", "workspace_bytes", "workspace.align", "head.heads",
                                       "head.tokens", "op.group", "op.scale_floor", "x.dtype", "gamma.dtype",
                                       "op.residual", "op.in_place", "op.weight_offset", "op.rows", "op.quant",
                                       "op.scale", "op.apply"};
  const auto numeric = [&](const std::string& id) {
    if (whole.count(id)) return true;
    for (const char* kind : {".offset", ".stride", ".col_stride", ".row_stride", ".head_stride", ".batch_stride", ".distinct"})
      if (id.size() > std::strlen(kind) && id.ends_with(kind)) return true;
    return false;
  };
  std::set<std::string> at_boundary;
  for (const contract_breaker& b : contract_breakers())
    if (b.boundary) at_boundary.insert((b.backward ? "backward " : "forward ") + b.rule_id);
  for (const contract_breaker& b : contract_breakers()) {
    const std::string pair = (b.backward ? "backward " : "forward ") + b.rule_id;
    if (numeric(b.rule_id)) {
      EXPECT_TRUE(at_boundary.count(pair)) << pair << " has no breaker at its boundary";
    }
  }
}

// the (call, rule id) pairs of the catalog: "forward x.offset", "backward workspace.null"
std::set<std::string> catalog_pairs() {
  std::set<std::string> out;
  for (const contract_rule& r : contract_rules)
    for (auto [bit, call] : {std::pair{rule_forward, "forward "}, std::pair{rule_backward, "backward "}})
      if (r.calls & bit) out.insert(call + std::string(r.id));
  return out;
}

TEST(contract_rules, every_rule_of_the_catalog_has_a_breaker_in_each_call_it_applies_to) {
  std::set<std::string> broken;
  for (const contract_breaker& b : contract_breakers()) broken.insert((b.backward ? "backward " : "forward ") + b.rule_id);
  for (const std::string& pair : catalog_pairs()) EXPECT_TRUE(broken.count(pair)) << pair << " has no breaker";
}

// every rule the shipped checker (kernels/api/contract.cpp) can cite, read from its source: the
// literal ids of fail("..."), and each operand's layout, dtype and overlap rules by the calls
// that check them. A rule added there without a catalog entry and a breaker fails here.
std::set<std::string> checker_pairs() {
  std::ifstream in(NORMCHECK_CONTRACT_CHECKER);
  EXPECT_TRUE(in) << NORMCHECK_CONTRACT_CHECKER;
  std::stringstream text;
  text << in.rdbuf();
  const std::string source = text.str();
  const std::size_t forward_at = source.find("check_forward(const"), backward_at = source.find("check_backward(const");
  EXPECT_NE(forward_at, std::string::npos);
  EXPECT_NE(backward_at, std::string::npos);
  const std::map<std::string, std::vector<std::string>> kinds = {
      {"matrix", {"null", "offset", "col_stride", "row_stride", "overflow", "distinct"}},
      {"vector", {"null", "offset", "stride", "overflow"}},
      {"raw", {}},
      {"dtype_in", {"dtype"}},
      {"dtype_is", {"dtype"}}};
  std::set<std::string> out;
  const auto section = [&](std::size_t from, std::size_t to, std::vector<std::string> calls) {
    const std::string part = source.substr(from, to - from);
    const std::regex literal(R"re(fail\("([a-z_.]+)")re"), operand(R"re(\b(matrix|vector|raw|dtype_in|dtype_is)\("([a-z_]+)"([^;]*)\);)re");
    for (std::sregex_iterator i(part.begin(), part.end(), literal), end; i != end; ++i)
      for (const std::string& call : calls) {
        const contract_rule* r = find_contract_rule((*i)[1].str());
        // a helper's literal belongs to the calls the catalog gives it (a missing id fails below)
        if (r == nullptr || (r->calls & (call == "forward " ? rule_forward : rule_backward)) || calls.size() == 1)
          out.insert(call + (*i)[1].str());
      }
    for (std::sregex_iterator i(part.begin(), part.end(), operand), end; i != end; ++i) {
      const std::string name = (*i)[2].str();
      std::vector<std::string> rules = kinds.at((*i)[1].str());
      // an output (the argument after the sizes true) must share no byte with any other operand;
      // a matrix given a per-head view's strides ({hd.x, hd.batch.x}) has the head- and
      // batch-stride rules too
      const std::string rest = (*i)[3].str();
      if (std::regex_search(rest, std::regex(R"re(,\s*true\b)re"))) rules.push_back("overlap");
      if (rest.find("hd.") != std::string::npos) rules.push_back("head_stride"), rules.push_back("batch_stride");
      for (const std::string& call : calls)
        for (const std::string& kind : rules) out.insert(call + name + "." + kind);
    }
  };
  section(0, forward_at, {"forward ", "backward "});
  section(forward_at, backward_at, {"forward "});
  section(backward_at, source.size(), {"backward "});
  return out;
}

TEST(contract_rules, every_rule_the_shipped_checker_applies_is_in_the_catalog_with_a_breaker) {
  const std::set<std::string> checker = checker_pairs(), catalog = catalog_pairs();
  EXPECT_GE(checker.size(), 70u) << "the checker's source was not read as expected";
  for (const std::string& pair : checker) EXPECT_TRUE(catalog.count(pair)) << pair << ": applied by the checker, not in the catalog";
  for (const std::string& pair : catalog) EXPECT_TRUE(checker.count(pair)) << pair << ": in the catalog, not applied by the checker";
}

// a default campaign's contract property on the shipped kernel breaks every rule of the catalog
// in every call it applies to (its distribution judges each one's share)
TEST(contract_rules, the_contract_property_breaks_every_rule_on_the_shipped_kernel) {
  const property* p = find_property("invalid_calls_are_rejected_naming_the_argument");
  ASSERT_NE(p, nullptr);
  campaign_options options;
  options.cases = 1500;
  options.seed = 7;
  const property_result r = run_property(*p, simt(), options);
  EXPECT_TRUE(r.passed()) << r.failure;
  std::map<std::string, std::int64_t> broken;
  for (const class_share& c : r.distribution) {
    if (c.dimension == "rule broken") broken[c.cls] = c.count;
    EXPECT_NE(c.dimension, "rule drawn, not applicable") << c.cls;
  }
  for (const std::string& pair : catalog_pairs()) EXPECT_GT(broken[pair], 0) << pair << " never broken";
}

TEST(contract_rules, the_contract_fuzzer_tags_name_every_rule_of_the_catalog_and_no_other) {
  std::set<std::string> catalog, tags;
  for (const contract_rule& r : contract_rules)
    for (auto [bit, call] : {std::pair{rule_forward, "forward"}, std::pair{rule_backward, "backward"}})
      if ((r.calls & bit) && r.fuzzed) catalog.insert(std::string(call) + " rejects " + std::string(r.id));
  std::ifstream in(NORMCHECK_CONTRACT_FUZZER_TAGS);
  ASSERT_TRUE(in) << NORMCHECK_CONTRACT_FUZZER_TAGS;
  for (std::string line; std::getline(in, line);)
    if (line.find(" rejects ") != std::string::npos && line[0] != '#') tags.insert(line);
  EXPECT_EQ(tags, catalog);
}

TEST(contract_rules, the_shipped_checker_cites_the_rule_it_applies) {
  const kernel k = kernel::shipped("simt");
  nc_forward_args f{};
  f.m = -1, f.n = 4, f.epsilon = 1e-6f;
  try {
    k.forward(f);
    FAIL() << "m = -1 was accepted";
  } catch (const contract_error& e) {
    EXPECT_NE(std::string(e.what()).find("[m] argument 'm' = -1"), std::string::npos) << e.what();
  }
  f.m = 2, f.x.dtype = nc_dtype(7);
  try {
    k.forward(f);
    FAIL() << "dtype code 7 was accepted";
  } catch (const contract_error& e) {
    EXPECT_NE(std::string(e.what()).find("[x.dtype] argument 'x'"), std::string::npos) << e.what();
  }
  f.x.dtype = NC_F32;
  try {
    k.forward(f);
    FAIL() << "a null x was accepted";
  } catch (const contract_error& e) {
    EXPECT_NE(std::string(e.what()).find("[x.null] argument 'x'"), std::string::npos) << e.what();
  }
}

TEST(campaign, a_device_only_property_is_skipped_on_simt_saying_why) {
  const nc::kernel k = nc::kernel::shipped("simt");
  const property* p = find_property("rows_past_element_2_to_the_31_match_the_exact_oracle");
  ASSERT_NE(p, nullptr);
  campaign_options options;
  options.cases = 50;
  const property_result r = run_property(*p, k, options);
  EXPECT_FALSE(r.failed);
  EXPECT_EQ(r.cases, 0);
  EXPECT_NE(r.skipped.find("device memory"), std::string::npos) << r.skipped;
  options.cases = 500;
  EXPECT_EQ(planned_cases(*p, options), p->max_cases) << "its cases allocate gigabytes: --cases cannot raise them past "
                                                        "its maximum";
}

TEST(generators, column_shrinks_keep_the_residue_modulo_8_and_go_down) {
  for (nc_dtype t : {NC_F32, NC_BF16})
    for (std::uint64_t seed = 1; seed <= 200; ++seed) {
      const auto shrinkable = gen_columns(t, 66000)(rc::Random(seed), 0);
      const std::int64_t n = shrinkable.value();
      auto shrinks = shrinkable.shrinks();
      while (const auto s = shrinks.next()) {
        EXPECT_LT(s->value(), n);
        EXPECT_EQ(s->value() % 8, n % 8) << n << " -> " << s->value();
        EXPECT_GE(s->value(), 1);
      }
    }
}

TEST(generators, an_element_depends_only_on_its_row_and_column) {
  const value_mix mix = only(row_kind::wide_range);
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const auto big = gen_values(NC_BF16, 9, 40, mix)(rc::Random(seed), 0).value();
    const auto small = gen_values(NC_BF16, 4, 17, mix)(rc::Random(seed), 0).value();
    for (std::int64_t i = 0; i < 4; ++i)
      for (std::int64_t j = 0; j < 17; ++j) ASSERT_EQ(small[std::size_t(i * 17 + j)], big[std::size_t(i * 40 + j)]);
  }
}

TEST(generators, value_shrinking_ends_at_zeros_through_ones) {
  for (nc_dtype t : all_dtypes) {
    auto s = gen_values(t, 3, 11, only(row_kind::wide_range))(rc::Random(5), 0);
    int steps = 0;
    bool saw_ones = false;
    for (auto next = s.shrinks().next(); next; next = s.shrinks().next(), ++steps) {
      s = *next;
      bool ones = true;
      for (std::uint32_t b : s.value()) ones &= std::fabs(value_of(t, b)) == 1.0;
      saw_ones |= ones;
      ASSERT_LT(steps, 1000) << "shrinking does not terminate";
    }
    EXPECT_TRUE(saw_ones);
    for (std::uint32_t b : s.value()) EXPECT_EQ(b, 0u);
  }
}

TEST(generators, the_listed_columns_include_the_path_thresholds_either_side) {
  const auto listed = interesting_columns(NC_F32);
  const std::set<std::int64_t> n(listed.begin(), listed.end());
  for (std::int64_t v : {1, 2, 3, 31, 32, 33, 257, 3, 5, 1023, 1025, 1024 * 4 - 4, 1024 * 4 + 1, 8192 * 4 + 4})
    EXPECT_TRUE(n.count(v)) << v;
}

TEST(generators, every_case_lies_inside_the_kernels_declared_capabilities) {
  // a partial kernel: fp16 with fp16 gamma or bf16 with fp32 gamma, padded rows only, rows of
  // at most 300, 5000 elements, epsilon 1e-5 or 0
  capabilities caps;
  caps.dtype_pairs = NC_PAIR_F16 | NC_PAIR_BF16_GAMMA_F32;
  caps.layouts = NC_LAYOUT_PADDED_ROWS;
  caps.epsilons = {1e-5f, 0.0f};
  caps.max_n = 300;
  caps.max_elements = 5000;
  const scoped_domain domain(caps);
  std::set<std::string> dtypes;
  std::set<float> epsilons;
  bool padded = false;
  for (std::uint64_t seed = 1; seed <= 400; ++seed) {
    const norm_case c = sample_case(seed);
    EXPECT_EQ(outside_capabilities(caps, c), "") << describe(c);
    dtypes.insert(dtype_class(c));
    epsilons.insert(c.epsilon);
    padded |= (layout_bits(c) & NC_LAYOUT_PADDED_ROWS) != 0;
  }
  // and the declaration is covered, not only respected
  EXPECT_EQ(dtypes, (std::set<std::string>{"fp16", "bf16+fp32 gamma"}));
  EXPECT_EQ(epsilons, (std::set<float>{1e-5f, 0.0f}));
  EXPECT_TRUE(padded);
}

// every property's generator (not only gen_case) draws inside a declaration of each kind: a
// fixed epsilon, N a multiple of 8 (llm.c), flush-to-zero, variants only; each declaration
// is respected by every case and its classes are covered
void every_generator_draws_inside(const capabilities& caps, const std::string& what) {
  const scoped_domain domain(caps);
  for (const property& p : all_properties()) {
    if (!p.variants && !caps.serves_plain()) continue;  // not exercised there (campaign.cpp)
    if (p.needs && !p.needs(caps).empty()) continue;
    // a few cases of a property whose cases are costly (millions of elements), 30 of the rest
    const std::uint64_t seeds = p.max_cases > 0 ? 3 : 30;
    for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
      const norm_case c = p.gen(rc::Random(seed * 7919), 0).value();
      EXPECT_EQ(outside_capabilities(caps, c), "") << what << ": " << p.name << ": " << describe(c);
    }
  }
}

TEST(generators, every_generator_draws_inside_a_fixed_epsilon) {
  capabilities caps;
  caps.epsilons = {1e-5f};
  every_generator_draws_inside(caps, "epsilon 1e-5 only");
}

TEST(generators, every_generator_draws_inside_an_n_multiple) {
  capabilities caps;
  caps.n_multiple = 8;
  every_generator_draws_inside(caps, "N a multiple of 8");
}

TEST(generators, every_generator_draws_inside_a_flush_to_zero_declaration) {
  capabilities caps;
  caps.flags = NC_FLUSHES_SUBNORMALS;
  every_generator_draws_inside(caps, "flush-to-zero");
}

TEST(generators, every_generator_draws_inside_a_variant_only_declaration) {
  capabilities caps;
  caps.operations = caps.declared_operations = {{NC_RESIDUAL_ROUNDED, 1, 1.0f}, {NC_RESIDUAL_FP32, 0, 1.0f}};
  every_generator_draws_inside(caps, "add_gemma_rmsnorm only");
}

// a QK-norm kernel of dense operands only: every per-head view drawn is [tokens, heads, N] itself,
// and views of two heads or more are drawn (else the declaration would be tested on 2-D rows)
TEST(generators, every_generator_draws_inside_a_dense_per_head_declaration) {
  capabilities caps;
  caps.layouts = 0;
  caps.operations = caps.declared_operations = {{NC_RESIDUAL_NONE, 0, 0.0f, NC_ROWS_HEADS},
                                                {NC_RESIDUAL_NONE, 0, 1.0f, NC_ROWS_HEADS}};
  every_generator_draws_inside(caps, "head_rmsnorm, dense operands only");
  const scoped_domain domain(caps);
  const property* p = find_property("y_and_r_match_the_exact_oracle");
  ASSERT_NE(p, nullptr);
  int several = 0;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    const norm_case c = p->gen(rc::Random(seed * 104729), 0).value();
    EXPECT_EQ(c.op.rows, NC_ROWS_HEADS) << describe(c);
    several += heads_of(c) > 1;
  }
  EXPECT_GE(several, 10) << "per-head views of two heads or more: " << several << " of 60 cases";
}

// a kernel of dense 4-D views only ([batches, tokens, heads, N], abi.h NC_ROWS_BATCHES): every
// view drawn is dense, its tokens a batch divide its tokens, and views of two batches or more
// are drawn (else the batch stride would never be read)
TEST(generators, every_generator_draws_inside_a_dense_4d_declaration) {
  capabilities caps;
  caps.layouts = 0;
  caps.operations = caps.declared_operations = {{NC_RESIDUAL_NONE, 0, 0.0f, NC_ROWS_BATCHES}};
  every_generator_draws_inside(caps, "head_rmsnorm on 4-D views, dense operands only");
  const scoped_domain domain(caps);
  const property* p = find_property("dx_matches_the_exact_oracle");
  ASSERT_NE(p, nullptr);
  int several = 0;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    const norm_case c = p->gen(rc::Random(seed * 104729), 0).value();
    ASSERT_EQ(c.op.rows, NC_ROWS_BATCHES) << describe(c);
    ASSERT_GE(c.tokens, 1) << describe(c);
    EXPECT_EQ(c.m % (c.heads * c.tokens), 0) << describe(c);
    several += batches_of(c) > 1;
  }
  EXPECT_GE(several, 10) << "4-D views of two batches or more: " << several << " of 60 cases";
}

// per-head and 4-D views stay about the size of their rows: a transposed [heads, tokens, N] view
// batched as padded sequences once held the whole tensor again in each batch (a 9655x1 case of
// 1931 batches: 1.9 GB an operand, an OOM kill of the variant test on a CI machine)
TEST(generators, per_head_and_4d_views_stay_near_the_size_of_their_rows) {
  capabilities caps;  // every layout, per-head rows and 4-D views
  caps.operations = caps.declared_operations = {{NC_RESIDUAL_NONE, 0, 0.0f, NC_ROWS_HEADS},
                                                {NC_RESIDUAL_NONE, 0, 0.0f, NC_ROWS_BATCHES}};
  const scoped_domain domain(caps);
  double worst = 0;
  std::string widest;
  for (const char* name : {"y_and_r_match_the_exact_oracle", "dx_matches_the_exact_oracle", "dgamma_matches_the_exact_oracle"}) {
    const property* p = find_property(name);
    ASSERT_NE(p, nullptr) << name;
    for (std::uint64_t seed = 1; seed <= 400; ++seed) {
      const norm_case c = p->gen(rc::Random(seed * 7919), int(seed % 100)).value();
      for (const matrix_layout* l : {&c.layout.x, &c.layout.y, &c.layout.dy, &c.layout.dx}) {
        const double ratio = double(extent(*l, c.m, c.n, rows_of(c))) / double(std::max<std::int64_t>(c.m * c.n, 1) + 4096);
        if (ratio > worst) worst = ratio, widest = describe(c);
      }
    }
  }
  EXPECT_LE(worst, 64.0) << "an operand spans " << worst << "x its M·N (+4096) elements: " << widest;
}

// every report names the machine: on simt the host is the machine, named by its CPU; the line
// reaches the JSON report and the JUnit file's properties
TEST(report, the_machine_line_names_the_host_and_reaches_every_report) {
  const std::string line = machine_line(simt(), isolation_options{});
  EXPECT_EQ(line.rfind("host ", 0), 0u) << line;
  EXPECT_NE(line.find(" core"), std::string::npos) << line;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string l; std::getline(cpuinfo, l);)
    if (l.rfind("model name", 0) == 0) {
      const std::string model = l.substr(l.find_first_not_of(" \t", l.find(':') + 1));
      EXPECT_NE(line.find(model), std::string::npos) << line << " does not name " << model;
      break;
    }
  campaign_report report;
  report.machine = line;
  EXPECT_NE(to_json(report).find("\"machine\": \"" + line + "\""), std::string::npos);
  EXPECT_NE(to_junit(report, {}).find("<property name=\"machine\" value=\"" + line + "\"/>"), std::string::npos);
}

TEST(campaign, the_shipped_kernel_lists_every_path_the_properties_set_a_minimum_for) {
  // path minimums apply only to listed paths: an unlisted one would silently go unjudged
  for (const property& p : all_properties())
    for (const intended_share& i : p.intended) {
      if (i.dimension == "forward path") {
        EXPECT_NE(std::find(simt().forward_paths().begin(), simt().forward_paths().end(), i.cls),
                  simt().forward_paths().end()) << p.name << ": " << i.cls;
      }
      if (i.dimension == "backward path") {
        EXPECT_NE(std::find(simt().backward_paths().begin(), simt().backward_paths().end(), i.cls),
                  simt().backward_paths().end()) << p.name << ": " << i.cls;
      }
    }
}

TEST(case, layout_bits_name_what_a_layout_needs_beyond_dense) {
  EXPECT_EQ(layout_bits(matrix_layout{0, 257, 1}, 257, NC_F32), 0u);  // dense, even with rows off 16 bytes
  EXPECT_EQ(layout_bits(matrix_layout{0, 260, 1}, 257, NC_F32), std::uint32_t(NC_LAYOUT_PADDED_ROWS));
  EXPECT_EQ(layout_bits(matrix_layout{0, 258, 1}, 257, NC_F32), std::uint32_t(NC_LAYOUT_MISALIGNED));
  EXPECT_EQ(layout_bits(matrix_layout{8, 16, 1}, 16, NC_F16), std::uint32_t(NC_LAYOUT_OFFSETS));
  EXPECT_EQ(layout_bits(matrix_layout{3, 16, 1}, 16, NC_F16), std::uint32_t(NC_LAYOUT_MISALIGNED));
  EXPECT_EQ(layout_bits(matrix_layout{0, 1, 5}, 4, NC_F32), std::uint32_t(NC_LAYOUT_COLUMN_STRIDED | NC_LAYOUT_MISALIGNED));
  EXPECT_EQ(layout_bits(vector_layout{0, 2}, NC_F32), std::uint32_t(NC_LAYOUT_COLUMN_STRIDED));
  // per-head views of 4 heads: [tokens, heads, N] is dense; q of a fused qkv pads; heads off 16 bytes misalign
  EXPECT_EQ(layout_bits(matrix_layout{0, 64, 1, 16}, 16, NC_F32, {4, 0}), 0u);
  EXPECT_EQ(layout_bits(matrix_layout{0, 96, 1, 16}, 16, NC_F32, {4, 0}), std::uint32_t(NC_LAYOUT_PADDED_ROWS));
  EXPECT_EQ(layout_bits(matrix_layout{0, 72, 1, 17}, 16, NC_F32, {4, 0}), std::uint32_t(NC_LAYOUT_MISALIGNED));
  // 4-D views of 3 tokens a batch: [batches, tokens, heads, N] is dense; padded sequences pad,
  // on 16 bytes or not
  EXPECT_EQ(layout_bits(matrix_layout{0, 64, 1, 16, 192}, 16, NC_F32, {4, 3}), 0u);
  EXPECT_EQ(layout_bits(matrix_layout{0, 64, 1, 16, 256}, 16, NC_F32, {4, 3}), std::uint32_t(NC_LAYOUT_PADDED_ROWS));
  EXPECT_EQ(layout_bits(matrix_layout{0, 64, 1, 16, 193}, 16, NC_F32, {4, 3}), std::uint32_t(NC_LAYOUT_MISALIGNED));
  EXPECT_EQ(layout_bits(matrix_layout{0, 16, 1, 0, 48}, 16, NC_F32, {1, 3}), 0u);  // [batches, tokens, N]
}

TEST(campaign, a_share_is_below_its_minimum_only_when_chance_cannot_explain_it) {
  // P(X <= k) for Binomial(n, p), against sums written out
  EXPECT_NEAR(binomial_lower_tail(0, 10, 0.1), std::pow(0.9, 10), 1e-12);
  EXPECT_NEAR(binomial_lower_tail(1, 10, 0.1), std::pow(0.9, 10) + 10 * 0.1 * std::pow(0.9, 9), 1e-12);
  EXPECT_EQ(binomial_lower_tail(10, 10, 0.5), 1.0);
  // 20 cases at a 15% minimum: even 0 hits happen 3.9% of the time, so nothing can be judged
  EXPECT_GT(binomial_lower_tail(0, 20, 0.15), share_test_level);
  // 4500 cases at 8%: 300 hits (6.7%) is within chance, 250 (5.6%) is not
  EXPECT_GT(binomial_lower_tail(300, 4500, 0.08), share_test_level);
  EXPECT_LT(binomial_lower_tail(250, 4500, 0.08), share_test_level);
}

TEST(arena, the_background_is_a_quiet_nan_and_only_the_poison_signals) {
  for (nc_dtype t : all_dtypes) {
    const std::uint32_t background = t == NC_F32 ? 0xffffffffu : 0xffffu;
    EXPECT_TRUE(std::isnan(value_of(t, background)));
    EXPECT_TRUE(std::isnan(value_of(t, poison_nan(t))));
    const std::uint32_t quiet_bit = t == NC_F32 ? 1u << 22 : t == NC_F16 ? 1u << 9 : 1u << 6;
    EXPECT_NE(background & quiet_bit, 0u);
    EXPECT_EQ(poison_nan(t) & quiet_bit, 0u);
  }
}

// a 2x3 fp32 forward with holes between x's columns and y's rows, in an arena of simt memory
struct small_call {
  call_spec c;
  arena a{simt()};
  small_call() {
    c.m = 2, c.n = 3;
    c.base_align = 256;
    for (int k = 0; k < operand_count; ++k) {
      c.ops[std::size_t(k)].name = operand_names[std::size_t(k)];
      c.ops[std::size_t(k)].matrix = is_matrix(k);
      c.ops[std::size_t(k)].row_stride = 3;
    }
    c.ops[op_x].offset = 1, c.ops[op_x].row_stride = 7, c.ops[op_x].col_stride = 2;
    c.ops[op_y].row_stride = 4;
    a.place_operands(c);
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t j = 0; j < 3; ++j) a.set(c, op_x, i, j, 0x3f800000u);
    for (std::int64_t j = 0; j < 3; ++j) a.set(c, op_gamma, 0, j, 0x3f800000u);
    for (int k : {op_y, op_r, op_dx, op_dgamma}) a.fill(c, k, poison_nan(NC_F32));
    a.upload();
  }
  // what a kernel might do: one byte of the region changed in plugin memory
  void poke(std::int64_t position) {
    const unsigned char value = 0x11;
    simt().upload(a.device(position), &value, 1);
  }
  // writes every element of y and r, as a correct forward does
  void write_outputs() {
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t j = 0; j < 3; ++j) a.set(c, op_y, i, j, 0x3f000000u);
    for (std::int64_t i = 0; i < 2; ++i) a.set(c, op_r, 0, i, 0x3f000000u);
    simt().upload(a.device(0), a.host(0), std::size_t(a.region_bytes()));
  }
  std::string problem(bool accepted = true) {
    a.download();
    const auto p = a.check(c, accepted);
    return p ? *p : "";
  }
};

TEST(arena, passes_a_call_that_writes_its_outputs_and_nothing_else) {
  small_call s;
  s.write_outputs();
  EXPECT_EQ(s.problem(), "");
  // a rejected call must not have written even its outputs
  EXPECT_NE(s.problem(false).find("a rejected call changed 32 byte(s)"), std::string::npos) << s.problem(false);
}

TEST(arena, names_an_unwritten_output_element) {
  small_call s;
  EXPECT_NE(s.problem().find("never wrote 6 element(s) of output y; the first is (0, 0), still the poison 0x7fa5a5a5"),
            std::string::npos)
      << s.problem();
}

TEST(arena, names_a_write_into_a_gap_a_stride_gap_an_input_and_a_guard_band) {
  const auto written = [](auto where) {
    small_call s;
    s.write_outputs();
    where(s);
    return s.problem();
  };
  const auto has = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  };
  std::string p = written([](small_call& s) { s.poke(s.c.ops[op_y].base - 4); });
  EXPECT_TRUE(has(p, "a gap: 4 byte(s) before the first element of output y")) << p;
  p = written([](small_call& s) { s.poke(s.c.ops[op_y].base + 3 * 4); });  // slot 3: between y's rows
  EXPECT_TRUE(has(p, "a stride gap of output y (slot 3)")) << p;
  p = written([](small_call& s) { s.poke(s.c.ops[op_x].base + (1 + 7 + 2) * 4); });
  EXPECT_TRUE(has(p, "input x element (1, 1)")) << p;
  p = written([](small_call& s) { s.poke(s.c.ops[op_dx].base); });
  EXPECT_TRUE(has(p, "dx element (0, 0) (not an operand of the forward)")) << p;
  p = written([](small_call& s) { s.poke(-1); });
  EXPECT_TRUE(has(p, "the guard band before the arena")) << p;
  p = written([](small_call& s) { s.poke(s.a.region_bytes() + 5); });
  EXPECT_TRUE(has(p, "the guard band after the arena (byte 5 of it)")) << p;
}

TEST(arena, a_workspace_keeps_the_operands_and_the_image_where_they_were) {
  small_call s;
  call_spec b = s.c;
  b.backward = true;
  b.workspace_needed = std::size_t(1) << 16;
  const std::int64_t x_at = b.ops[op_x].base;
  const std::uint32_t x00 = s.a.get(b, op_x, 0, 0);
  EXPECT_TRUE(s.a.place_workspace(b));  // the region grew: new pointers
  EXPECT_EQ(b.ops[op_x].base, x_at);
  EXPECT_EQ(s.a.get(b, op_x, 0, 0), x00);
  EXPECT_GE(s.a.region_bytes(), b.workspace_base + std::int64_t(b.workspace_bytes) + 64);
  EXPECT_EQ(b.workspace_base % 16, 0);
}

// a fuzz target places input after input in one arena: a placement after a larger call keeps
// the host memory, but nothing of the earlier image, and the checks see the new call alone
TEST(arena, a_placement_after_a_larger_call_keeps_its_memory_and_nothing_of_its_image) {
  small_call s;
  call_spec b = s.c;
  b.backward = true;
  b.workspace_needed = std::size_t(1) << 16;
  s.a.place_workspace(b);
  s.a.upload();
  void* const memory = s.a.allocation();
  const std::int64_t larger = s.a.region_bytes();
  s.a.place_operands(s.c);  // the 2x3 forward again: a smaller region
  EXPECT_LT(s.a.region_bytes(), larger);
  EXPECT_EQ(s.a.allocation(), memory);
  for (std::int64_t p = -arena::guard_bytes; p < s.a.region_bytes() + arena::guard_bytes; ++p)
    ASSERT_EQ(*s.a.host(p), arena::background) << "region byte " << p;
  for (int k : {op_y, op_r}) s.a.fill(s.c, k, poison_nan(NC_F32));
  s.a.upload();
  s.write_outputs();
  EXPECT_EQ(s.problem(), "");
  s.poke(s.a.region_bytes() + 5);
  EXPECT_NE(s.problem().find("the guard band after the arena (byte 5 of it)"), std::string::npos) << s.problem();
}

// page guards: every guard page starts on a page of plugin memory, no operand's bytes touch
// one, and each operand's last byte (after_each) or first byte (before_each) lies within its
// alignment of one; in host memory a guard page is untouchable during a call
TEST(arena, page_guards_lie_against_each_operand_on_the_side_asked) {
  for (const page_guard side : {page_guard::after_each, page_guard::before_each}) {
    call_spec c;
    c.m = 5, c.n = 7;
    c.base_align = 256;
    c.guard = side;
    for (int k = 0; k < operand_count; ++k) {
      c.ops[std::size_t(k)].name = operand_names[std::size_t(k)];
      c.ops[std::size_t(k)].matrix = is_matrix(k);
      c.ops[std::size_t(k)].row_stride = 7;
      c.ops[std::size_t(k)].base_shift = unsigned(k);  // residues modulo 256 that guards must keep
    }
    // dy's offset is past a page: its data pointer must still lie past the operand before it
    c.ops[op_x].offset = 3, c.ops[op_y].row_stride = 9, c.ops[op_dy].offset = 3000;
    arena a(simt());
    a.place_operands(c);
    const std::int64_t page = arena::page_bytes();
    const auto& guards = a.guard_pages();
    ASSERT_GE(guards.size(), std::size_t(operand_count));
    for (const std::int64_t g : guards) EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.device(g)) % std::uintptr_t(page), 0u);
    for (int k = 0; k < operand_count; ++k) {
      const operand& o = c.ops[std::size_t(k)];
      const byte_span s = span_of(c, k);
      ASSERT_TRUE(o.fits && s.first < s.last) << o.name;
      EXPECT_EQ(o.base % 256, std::int64_t(k) * 4) << o.name << ": its base residue";
      bool against = false;
      for (const std::int64_t g : guards) {
        EXPECT_FALSE(s.overlaps({g, g + page})) << o.name << " overlaps the guard page at " << g;
        const std::int64_t gap = side == page_guard::after_each ? g - s.last : s.first - (g + page);
        against = against || (gap >= 0 && gap < 256);
      }
      EXPECT_TRUE(against) << o.name << " lies no closer than its alignment to a guard page";
      // its data pointer lies past every byte of the operands placed before it
      for (int e = 0; e < k; ++e)
        EXPECT_GE(o.base, span_of(c, e).last) << o.name << "'s data pointer lies inside " << c.ops[std::size_t(e)].name;
    }
    a.upload();
    EXPECT_DEATH(
        {
          a.protect_guards();
          [[maybe_unused]] volatile char v = *static_cast<volatile char*>(a.device(guards.back()));
        },
        "");
    a.protect_guards();
    a.unprotect_guards();
    [[maybe_unused]] volatile char v = *static_cast<volatile char*>(a.device(guards.back()));
  }
}

// a sparse image (rows far apart) gives the outputs of the dense one, from an image of the
// bytes near the elements only
TEST(arena, a_sparse_image_gives_the_dense_outputs_from_the_bytes_near_the_elements) {
  norm_case c;
  c.m = 3, c.n = 8;
  c.layout = contiguous_layouts(c.n);
  c.layout.dx.row_stride = (std::int64_t(1) << 24) + 8;  // 64 MiB of fp32 dx
  c.layout.r.stride = std::int64_t(1) << 22;            // and of r: a vector's elements far apart
  for (std::int64_t e = 0; e < c.m * c.n; ++e) {
    c.x.push_back(bits_of(NC_F32, double(e % 7) - 3.0));
    c.dy.push_back(bits_of(NC_F32, double(e % 5) * 0.5 - 1.0));
  }
  for (std::int64_t j = 0; j < c.n; ++j) c.gamma.push_back(bits_of(NC_F32, 1.0 + double(j) / 8));
  call_setting sparse;
  sparse.sparse = true;
  const outputs dense = execute(simt(), c, calls::forward_and_backward);
  const outputs thin = execute(simt(), c, calls::forward_and_backward, sparse);
  EXPECT_EQ(thin.y, dense.y);
  EXPECT_EQ(thin.r, dense.r);
  EXPECT_EQ(thin.dx, dense.dx);
  EXPECT_EQ(thin.dgamma, dense.dgamma);
  case_arena a(simt(), c, sparse);
  EXPECT_GT(a.memory.region_bytes(), std::int64_t(1) << 26);
  EXPECT_GE(a.memory.allocation_bytes(), a.memory.region_bytes());
  EXPECT_LT(a.memory.image_bytes(), std::int64_t(1) << 20) << "the image holds the bytes near the elements only";
}

TEST(execute, the_document_worked_numbers_come_out_of_the_simt_kernel) {
  norm_case c;
  c.m = 1, c.n = 2;
  c.layout = contiguous_layouts(2);
  c.x = {bits_of(NC_F32, 3), bits_of(NC_F32, 4)};
  c.gamma = {bits_of(NC_F32, 1), bits_of(NC_F32, 1)};
  c.dy = {bits_of(NC_F32, 1), bits_of(NC_F32, 2)};
  const outputs out = execute(simt(), c, calls::forward_and_backward);
  EXPECT_NEAR(value_of(NC_F32, out.y[0]), 0.848528, 5e-7);
  EXPECT_NEAR(value_of(NC_F32, out.y[1]), 1.131371, 5e-7);
  EXPECT_NEAR(value_of(NC_F32, out.r[0]), 0.282843, 5e-7);
  EXPECT_NEAR(value_of(NC_F32, out.dx[0]), -0.090510, 5e-7);
  EXPECT_NEAR(value_of(NC_F32, out.dx[1]), 0.067882, 5e-7);
}

TEST(execute, a_strided_case_takes_a_strided_path_and_checks_every_buffer) {
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    const norm_case c = sample_case(seed);
    const outputs out = execute(simt(), c, calls::forward_and_backward);
    EXPECT_EQ(out.y.size(), std::size_t(c.m * c.n));
    EXPECT_EQ(out.dgamma.size(), std::size_t(c.n));
    if (c.layout.x.col_stride > 1 && c.n > 1) {
      EXPECT_EQ(out.forward_path.rfind("strided", 0), 0u) << describe(c);
      EXPECT_EQ(out.backward_path.rfind("strided", 0), 0u) << describe(c);
    }
  }
}

}  // namespace
}  // namespace nc::harness
