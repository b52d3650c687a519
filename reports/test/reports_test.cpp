// The report writers: JSON round trips, the changed region of a mutant, the two scores, and
// what the Markdown table and the Stryker document hold.
#include <gtest/gtest.h>

#include "normcheck/json.hpp"
#include "normcheck/mutation_report.hpp"
#include "sample_campaign.hpp"

namespace nc::reports {
namespace {

TEST(json, a_document_reads_back_as_written) {
  const char* text = R"({"a": [1, 2.5, -3e-7, true, false, null], "b": {"c": "x\"y\\z\n\u00e9"}, "d": []})";
  const json::value v = json::value::parse(text);
  EXPECT_EQ(v["a"].as_array().size(), 6u);
  EXPECT_EQ(v["b"]["c"].as_string(), "x\"y\\z\n\xc3\xa9");
  EXPECT_EQ(json::value::parse(v.dump()).dump(), v.dump());
  EXPECT_EQ(json::value::parse(v.dump(-1)).dump(), v.dump());
  EXPECT_DOUBLE_EQ(json::value::parse(v.dump())["a"].as_array()[2].as_number(), -3e-7);
}

TEST(json, malformed_text_names_the_line_and_column) {
  try {
    json::value::parse("{\n  \"a\": tru }");
    FAIL() << "no error";
  } catch (const json::parse_error& e) {
    EXPECT_NE(std::string(e.what()).find("2:"), std::string::npos) << e.what();
  }
  EXPECT_THROW(json::value::parse("[1, 2"), json::parse_error);
  EXPECT_THROW(json::value::parse("{} x"), json::parse_error);
}

TEST(json, a_64_bit_integer_is_written_and_read_back_exactly) {
  const std::uint64_t seed = 18446744073709551557ull;  // past 2^53: a double would round it
  const json::value v = json::object{{"seed", seed}};
  EXPECT_EQ(v.dump(-1), "{\"seed\":18446744073709551557}");
  // read back and written again, digit for digit
  EXPECT_EQ(json::value::parse(v.dump(-1)).dump(-1), v.dump(-1));
  EXPECT_EQ(json::value::parse("[1.5,-1,0,9007199254740993]").dump(-1), "[1.5,-1,0,9007199254740993]");  // 2^53 + 1
}

TEST(json, a_string_cannot_end_a_script_element) {
  EXPECT_EQ(json::quote("</script>"), "\"<\\/script>\"");
}

TEST(changed_region, covers_only_the_text_that_differs) {
  const std::string src = "a\nconst float r = rsqrtf(ss / n + eps);\n";
  std::string replacement;
  const std::string search = "rsqrtf(ss / n + eps)";
  const location l = changed_region(src, src.find(search), search, "rsqrtf(ss / n)", replacement);
  EXPECT_EQ(l.start.line, 2);
  EXPECT_EQ(l.start.column, 30);  // the " + eps" after n
  EXPECT_EQ(l.end.column, 36);
  EXPECT_EQ(replacement, "");
}

TEST(changed_region, a_pure_insertion_shows_its_whole_line) {
  const std::string src = "x\n  if (ok) {\n";
  std::string replacement;
  const location l = changed_region(src, 2, "  if (ok) {", "  if (m <= 16 && ok) {", replacement);
  EXPECT_EQ(l.start.line, 2);
  EXPECT_EQ(l.start.column, 1);
  EXPECT_EQ(l.end.column, 12);
  EXPECT_EQ(replacement, "  if (m <= 16 && ok) {");
}

TEST(score, counts_timeouts_as_detected_and_leaves_no_coverage_out) {
  const score s = compute_score(test::sample_campaign());
  EXPECT_EQ(s.killed, 2);
  EXPECT_EQ(s.survived, 1);
  EXPECT_EQ(s.timeout, 1);
  EXPECT_EQ(s.no_coverage, 1);
  EXPECT_EQ(s.denominator(), 4);
  EXPECT_DOUBLE_EQ(*s.value(), 75.0);
  // the fault kill and the timeout are not oracle kills
  EXPECT_EQ(s.strict_killed, 1);
  EXPECT_DOUBLE_EQ(*s.strict_value(), 25.0);
}

TEST(markdown, has_a_row_per_mutant_with_its_killers) {
  const std::string md = markdown(test::sample_campaign());
  EXPECT_NE(md.find("| mutant | bug class | status | killing properties | cases to kill | time to kill |"),
            std::string::npos);
  EXPECT_NE(md.find("| `fwd-mean-block` | a bug class | Killed | differential.forward, contract.guard_bands | 12 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("differential.forward (fault)"), std::string::npos);
  EXPECT_NE(md.find("**Score 75.0%**"), std::string::npos);
  EXPECT_NE(md.find("**Strict score 25.0%**"), std::string::npos);
  EXPECT_NE(md.find("1 NoCoverage"), std::string::npos);
}

TEST(stryker, files_hold_the_source_and_every_mutant_with_known_test_ids) {
  const json::value r = stryker(test::sample_campaign());
  EXPECT_EQ(r["schemaVersion"].as_string(), "2");
  const json::value& f = r["files"]["kernels/src/rmsnorm_forward.cuh"];
  EXPECT_EQ(f["language"].as_string(), "cpp");
  ASSERT_EQ(f["mutants"].as_array().size(), 5u);
  std::set<std::string> ids;
  for (const auto& [file, tests] : r["testFiles"].as_object())
    for (const json::value& t : tests["tests"].as_array()) ids.insert(t["id"].as_string());
  for (const json::value& m : f["mutants"].as_array()) {
    for (const json::value& k : m["killedBy"].as_array()) EXPECT_TRUE(ids.count(k.as_string())) << k.as_string();
    for (const json::value& k : m["coveredBy"].as_array()) EXPECT_TRUE(ids.count(k.as_string()));
    EXPECT_GE(m["location"]["start"]["line"].as_number(), 1);
  }
  EXPECT_EQ(f["mutants"].as_array()[4]["status"].as_string(), "NoCoverage");
}

TEST(html, inlines_the_component_and_the_report) {
  const std::string page = html(test::sample_campaign(), "/* elements */ var s = '</script>';");
  EXPECT_NE(page.find("<mutation-test-report-app"), std::string::npos);
  EXPECT_NE(page.find("<\\/script>'"), std::string::npos);
  EXPECT_EQ(page.find("'</script>'"), std::string::npos);
  EXPECT_NE(page.find("\"schemaVersion\":\"2\""), std::string::npos);
}

}  // namespace
}  // namespace nc::reports
