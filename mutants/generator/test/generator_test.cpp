// The generated operators on small sources: the sites they must find, the text they must leave
// alone (comments, strings, preprocessor lines, template brackets, declarations), stable ids,
// catalog blocks that occur once; and the runner's selection, verdict cache and equivalence rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "generated.hpp"
#include "generator.hpp"

namespace {

using nc::mutants::generate;
using nc::mutants::generated_mutant;

const char* snippet = R"(// a comment: a + b < c; x[i] = 0;
#include "dtype.cuh"
#define TWICE(x) ((x) * 2)
template <int RT>
__device__ float row(const float* x, float* warp_totals, std::int64_t n) {
  /* a block comment: __syncthreads(); 1 - 2 */
  const char* s = "a + b; __syncthreads();";
  float ss = 0.0f;
  for (std::int64_t j = threadIdx.x; j < n; j += RT) ss = fmaf(x[j], x[j], ss);
  warp_totals[threadIdx.x / 32] = ss;
  __syncthreads();
  const float r = rsqrtf(ss / static_cast<float>(n) + 1e-5f);
  return r * block_threads<RT>;
}
)";

std::vector<std::string> ids(const std::vector<generated_mutant>& ms) {
  std::vector<std::string> out;
  for (const auto& m : ms) out.push_back(m.id);
  return out;
}

bool has(const std::vector<generated_mutant>& ms, const std::string& id) {
  return std::any_of(ms.begin(), ms.end(), [&](const generated_mutant& m) { return m.id == id; });
}

TEST(generator, finds_a_site_of_every_operator_class) {
  const auto ms = generate("row.cuh", snippet);
  EXPECT_TRUE(has(ms, "row.cuh:9:40:relational(<,<=)")) << testing::PrintToString(ids(ms));
  EXPECT_TRUE(has(ms, "row.cuh:9:47:arithmetic(+=,-=)"));
  EXPECT_TRUE(has(ms, "row.cuh:10:27:arithmetic(/,*)"));
  EXPECT_TRUE(has(ms, "row.cuh:10:29:constant(32,33)"));
  EXPECT_TRUE(has(ms, "row.cuh:10:29:constant(32,31)"));
  EXPECT_TRUE(has(ms, "row.cuh:8:14:constant(0.0f,1.0f)"));
  EXPECT_TRUE(has(ms, "row.cuh:9:67:index(+1)"));
  EXPECT_TRUE(has(ms, "row.cuh:9:73:index(-1)"));
  EXPECT_TRUE(has(ms, "row.cuh:9:54:delete-statement"));
  EXPECT_TRUE(has(ms, "row.cuh:10:3:delete-statement"));
  EXPECT_TRUE(has(ms, "row.cuh:11:3:delete-barrier(__syncthreads)"));
  EXPECT_TRUE(has(ms, "row.cuh:12:31:cast(drop float)"));
  EXPECT_FALSE(has(ms, "row.cuh:9:8:cast(drop std::int64_t)"));  // a declaration's type is no cast
  std::set<std::string> classes;
  for (const auto& m : ms) classes.insert(m.op_class);
  for (const auto& c : nc::mutants::operator_classes())
    EXPECT_TRUE(classes.count(c)) << c;
}

TEST(generator, leaves_comments_strings_preprocessor_templates_and_declarations_alone) {
  const auto ms = generate("row.cuh", snippet);
  for (const auto& m : ms) {
    EXPECT_GT(m.line, 3) << m.id;              // the comment, #include and #define lines
    EXPECT_NE(m.line, 6) << m.id;              // the block comment
    EXPECT_NE(m.line, 7) << m.id;              // the string literal's line holds no operator outside it
    EXPECT_NE(m.line, 4) << m.id;              // template <int RT>
    if (m.original == "<") EXPECT_EQ(m.line, 9) << m.id << " (a template bracket is not a relation)";
  }
  // warp_totals and x in the parameter list are declarations, their `*` no operator
  EXPECT_FALSE(has(ms, "row.cuh:5:43:arithmetic(*,/)"));
  // block_threads<RT>: a template argument, not a comparison
  EXPECT_FALSE(has(ms, "row.cuh:13:27:relational(<,<=)"));
  EXPECT_TRUE(has(ms, "row.cuh:13:12:arithmetic(*,/)"));
}

TEST(generator, ids_are_stable_and_blocks_are_unique_in_the_file) {
  const auto a = generate("row.cuh", snippet);
  const auto b = generate("row.cuh", snippet);
  EXPECT_EQ(ids(a), ids(b));
  const std::vector<std::string> all = ids(a);
  const std::set<std::string> unique(all.begin(), all.end());
  EXPECT_EQ(unique.size(), a.size()) << "two mutants share an id";
  // a site's id does not depend on the text after it
  const auto c = generate("row.cuh", std::string(snippet) + "inline int more(int a) { return a + 1; }\n");
  for (const auto& m : a) EXPECT_TRUE(has(c, m.id)) << m.id;
  const std::string text = snippet;
  for (const auto& m : a) {
    EXPECT_EQ(text.find(m.search), m.search_offset) << m.id;
    EXPECT_EQ(text.find(m.search, m.search_offset + 1), std::string::npos) << m.id << ": the block is not unique";
    const std::string mutated = nc::mutants::apply(m, text);
    EXPECT_NE(mutated, text) << m.id;
    EXPECT_EQ(mutated.substr(m.offset, m.mutated.size()), m.mutated) << m.id;
    const std::string cat = nc::mutants::catalog_text(m, "src");
    EXPECT_NE(cat.find("--- search\n" + m.search + "\n+++ replace\n" + m.replace + "\n"), std::string::npos);
    EXPECT_NE(cat.find("file: src/row.cuh\n"), std::string::npos);
  }
}

TEST(generator, a_repeated_line_widens_its_block_until_unique) {
  const std::string text = "void f(int* a) {\n  a[0] = 1;\n  a[1] = 2;\n  a[0] = 1;\n}\n";
  const auto ms = generate("f.cuh", text);
  const auto it = std::find_if(ms.begin(), ms.end(), [](const generated_mutant& m) { return m.line == 4 && m.op_class == "statement"; });
  ASSERT_NE(it, ms.end());
  EXPECT_EQ(it->search, "  a[1] = 2;\n  a[0] = 1;");
  EXPECT_EQ(nc::mutants::apply(*it, text), "void f(int* a) {\n  a[0] = 1;\n  a[1] = 2;\n  {}\n}\n");
}

TEST(selection, a_limit_takes_the_same_sample_whatever_else_is_generated) {
  auto all = generate("row.cuh", snippet);
  nc::mutants::generated_options o;
  o.limit = 5;
  const auto five = nc::mutants::select_generated(all, o);
  ASSERT_EQ(five.size(), 5u);
  // the sample of a larger set keeps every chosen mutant that is still the lowest-hashed
  o.operators = {"constant"};
  o.limit = 0;
  const auto constants = nc::mutants::select_generated(all, o);
  ASSERT_FALSE(constants.empty());
  for (const auto& m : constants) EXPECT_EQ(m.op_class, "constant");
  o.operators.clear();
  o.files = {"other.cuh"};
  EXPECT_TRUE(nc::mutants::select_generated(all, o).empty());
  // --only: the mutants named (an id holds its operator's pair, commas included), nothing else
  o.files.clear();
  o.ids = {constants.back().id, five.front().id};
  const auto named = nc::mutants::select_generated(all, o);
  ASSERT_EQ(named.size(), 2u);
  for (const auto& m : named) EXPECT_NE(std::find(o.ids.begin(), o.ids.end(), m.id), o.ids.end());
}

TEST(equivalence, only_identical_object_bytes_are_equivalent) {
  EXPECT_TRUE(nc::mutants::same_object(std::string("\x7f" "ELF\0\1", 6), std::string("\x7f" "ELF\0\1", 6)));
  EXPECT_FALSE(nc::mutants::same_object(std::string("\x7f" "ELF\0\1", 6), std::string("\x7f" "ELF\0\2", 6)));
  EXPECT_FALSE(nc::mutants::same_object("abc", "abcd"));
}

TEST(cache, a_verdict_reads_back_as_it_was_written) {
  nc::reports::mutant m;
  m.id = "row.cuh:9:40:relational(<,<=)";
  m.result = nc::reports::status::killed;
  m.reason = "killed by y_and_r_match_the_exact_oracle";
  m.kills.push_back({"y_and_r_match_the_exact_oracle", "differential", false, 12, 0.5, "case", "y wrong", true});
  m.covered_by = {"y_and_r_match_the_exact_oracle"};
  m.cases_to_kill = 12;
  m.seconds_to_kill = 0.5;
  m.seconds = 3.25;
  nc::reports::mutant back;
  nc::mutants::verdict_from_json(nc::json::value::parse(nc::mutants::verdict_to_json(m).dump()), back);
  EXPECT_EQ(back.result, m.result);
  EXPECT_EQ(back.reason, m.reason);
  ASSERT_EQ(back.kills.size(), 1u);
  EXPECT_EQ(back.kills[0].property, "y_and_r_match_the_exact_oracle");
  EXPECT_EQ(back.kills[0].cases, 12);
  EXPECT_TRUE(back.kills[0].strict());
  EXPECT_EQ(back.covered_by, m.covered_by);
  EXPECT_EQ(back.cases_to_kill, m.cases_to_kill);
  EXPECT_EQ(back.seconds, m.seconds);
  nc::reports::mutant survivor;
  survivor.result = nc::reports::status::survived;
  nc::mutants::verdict_from_json(nc::mutants::verdict_to_json(survivor), back);
  EXPECT_EQ(back.result, nc::reports::status::survived);
  EXPECT_FALSE(back.cases_to_kill.has_value());
  EXPECT_THROW(nc::mutants::verdict_from_json(nc::json::value::parse(R"({"status": "Maybe", "kills": [], "covered_by": []})"), back),
               std::runtime_error);
}

}  // namespace
