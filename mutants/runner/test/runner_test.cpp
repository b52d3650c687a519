// The runner's judgement, without processes: the suite result it reads (README.md's format),
// the verdict it gives a mutant from its runs, and where it says the mutant sits.
#include <gtest/gtest.h>

#include "campaign.hpp"

namespace nc::mutants {
namespace {

using reports::status;

const char* suite_with_two_kills = R"({
  "kernel": "lib/libnormcheck_mutant_x_simt.so", "backend": "simt", "seed": "7",
  "properties": [
    {"name": "contract.rejects", "kind": "contract", "cases": 40, "failed": false, "seconds": 1.5},
    {"name": "differential.forward", "kind": "differential", "judges_values": true, "cases": 12, "failed": true,
     "cases_to_failure": 12, "seconds_to_failure": 0.25, "seconds": 0.5,
     "counterexample": "m=1 n=257 fp32", "message": "y[0] = 1.411458, exact 0.9999995"},
    {"name": "metamorphic.scaling", "kind": "metamorphic", "judges_values": true, "cases": 3, "failed": true,
     "cases_to_failure": 3, "seconds_to_failure": 0.1, "error": true, "message": "simt fault"}
  ]})";

run run_of(const char* text, int exit_code = 1) {
  run r;
  r.process.exit_code = exit_code;
  r.process.seconds = 2;
  r.suite = parse_suite(json::value::parse(text));
  return r;
}

TEST(suite_result, reads_every_field_of_a_property) {
  const suite_result s = parse_suite(json::value::parse(suite_with_two_kills));
  ASSERT_EQ(s.properties.size(), 3u);
  EXPECT_EQ(s.backend, "simt");
  const property_result& p = s.properties[1];
  EXPECT_EQ(p.name, "differential.forward");
  EXPECT_EQ(p.kind, "differential");
  EXPECT_TRUE(p.failed);
  EXPECT_EQ(p.cases_to_failure, 12);
  EXPECT_DOUBLE_EQ(p.seconds_to_failure, 0.25);
  EXPECT_EQ(p.counterexample, "m=1 n=257 fp32");
  EXPECT_TRUE(s.properties[2].error);
  EXPECT_FALSE(s.properties[0].error);
  EXPECT_TRUE(s.any_failed());
}

TEST(suite_result, rejects_a_property_without_its_verdict) {
  EXPECT_THROW(parse_suite(json::value::parse(R"({"properties": [{"name": "a", "cases": 1}]})")), std::runtime_error);
  EXPECT_THROW(parse_suite(json::value::parse(R"({"kernel": "k"})")), std::runtime_error);
  EXPECT_THROW(parse_suite(json::value::parse(R"({"properties": [{"name": "a", "failed": "yes"}]})")),
               std::runtime_error);
}

TEST(judge, a_mutant_failing_two_properties_is_killed_by_both) {
  reports::mutant d;
  judge(d, {run_of(suite_with_two_kills)});
  EXPECT_EQ(d.result, status::killed);
  ASSERT_EQ(d.kills.size(), 2u);
  EXPECT_EQ(d.kills[0].property, "differential.forward");
  EXPECT_EQ(d.kills[1].property, "metamorphic.scaling");
  EXPECT_EQ(d.covered_by.size(), 3u);
  // the suite's cases and seconds from its start: 40 cases and 1.5 s of the passing property first
  EXPECT_EQ(*d.cases_to_kill, 52);
  EXPECT_DOUBLE_EQ(*d.seconds_to_kill, 1.75);
  EXPECT_NE(d.reason.find("m=1 n=257 fp32"), std::string::npos);
  EXPECT_TRUE(d.strict_kill());
}

TEST(judge, a_kill_by_a_fault_alone_is_not_strict) {
  reports::mutant d;
  judge(d, {run_of(R"({"properties": [{"name": "differential.dx", "kind": "differential", "judges_values": true, "cases": 5,
                        "failed": true, "error": true, "message": "misaligned"}]})")});
  EXPECT_EQ(d.result, status::killed);
  EXPECT_FALSE(d.strict_kill());
}

TEST(judge, a_contract_kill_is_not_strict) {
  reports::mutant d;
  judge(d, {run_of(R"({"properties": [{"name": "contract.guards", "kind": "contract", "cases": 5,
                        "failed": true, "message": "guard band written"}]})")});
  EXPECT_EQ(d.result, status::killed);
  EXPECT_FALSE(d.strict_kill());
}

TEST(judge, a_clean_suite_run_is_a_survivor) {
  reports::mutant d;
  d.expected_killer = "differential dgamma at M > 64";
  judge(d, {run_of(R"({"properties": [{"name": "a", "kind": "differential", "cases": 5, "failed": false}]})", 0)});
  EXPECT_EQ(d.result, status::survived);
  EXPECT_NE(d.reason.find("differential dgamma at M > 64"), std::string::npos);
}

TEST(judge, a_second_schedule_that_kills_makes_it_killed) {
  reports::mutant d;
  run clean = run_of(R"({"properties": [{"name": "a", "kind": "differential", "cases": 5, "failed": false}]})", 0);
  clean.schedule = "1";
  run killing = run_of(suite_with_two_kills);
  killing.schedule = "2";
  judge(d, {clean, killing});
  EXPECT_EQ(d.result, status::killed);
  EXPECT_NE(d.reason.find("schedule 2"), std::string::npos);
}

TEST(judge, a_racecheck_hazard_after_a_clean_run_kills_but_not_strictly) {
  reports::mutant d;
  const char* clean = R"({"properties": [{"name": "a", "kind": "differential", "cases": 5, "failed": false}]})";
  run sanitized = run_of(clean, sanitizer_exit_code);
  sanitized.sanitizer = "racecheck";
  sanitized.log_tail = "========= Error: Race reported between Read access at row_sum\n"
                       "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n";
  judge(d, {run_of(clean, 0), sanitized});
  EXPECT_EQ(d.result, status::killed);
  ASSERT_EQ(d.kills.size(), 1u);
  EXPECT_EQ(d.kills[0].property, racecheck_test);
  EXPECT_FALSE(d.strict_kill());
  EXPECT_NE(d.reason.find("1 hazard"), std::string::npos) << d.reason;
}

TEST(judge, a_clean_racecheck_pass_leaves_a_survivor) {
  reports::mutant d;
  const char* clean = R"({"properties": [{"name": "a", "kind": "differential", "cases": 5, "failed": false}]})";
  run sanitized = run_of(clean, 0);
  sanitized.sanitizer = "racecheck";
  judge(d, {run_of(clean, 0), sanitized});
  EXPECT_EQ(d.result, status::survived);
}

TEST(suite_result, a_skipped_property_neither_covers_nor_kills) {
  const suite_result s = parse_suite(json::value::parse(
      R"({"properties": [{"name": "a", "cases": 3, "failed": false},
                         {"name": "b", "cases": 0, "failed": false, "skipped": "needs a backend with device memory"}]})"));
  ASSERT_EQ(s.properties.size(), 1u);
  EXPECT_EQ(s.properties[0].name, "a");
}

TEST(judge, no_result_before_the_deadline_is_a_timeout) {
  reports::mutant d;
  run r;
  r.process.timed_out = true;
  r.process.signal = 9;
  r.timeout_seconds = 40;
  judge(d, {r});
  EXPECT_EQ(d.result, status::timeout);
}

TEST(judge, a_crash_without_a_result_is_a_runtime_error) {
  reports::mutant d;
  run r;
  r.process.signal = 11;
  r.problem = "it wrote no run.json";
  r.log_tail = "Segmentation fault";
  judge(d, {r});
  EXPECT_EQ(d.result, status::runtime_error);
  EXPECT_NE(d.reason.find("signal 11"), std::string::npos);
  EXPECT_NE(d.reason.find("Segmentation fault"), std::string::npos);
}

TEST(judge, a_failing_exit_without_a_failing_property_is_a_runtime_error) {
  reports::mutant d;
  judge(d, {run_of(R"({"properties": [{"name": "a", "kind": "differential", "cases": 5, "failed": false}]})", 2)});
  EXPECT_EQ(d.result, status::runtime_error);
}

TEST(describe, points_at_the_changed_text_in_the_original_source) {
  manifest m;
  m.sources["kernels/src/a.cuh"] = "line one\n  x = a + b;\n  y = x;\n";
  mutant_spec s;
  s.id = "plus-minus";
  s.file = "kernels/src/a.cuh";
  s.hunks.push_back({9, "  x = a + b;", "  x = a - b;"});
  const reports::mutant d = describe(s, m);
  EXPECT_EQ(d.where.start.line, 2);
  EXPECT_EQ(d.where.start.column, 9);
  EXPECT_EQ(d.where.end.line, 2);
  EXPECT_EQ(d.where.end.column, 10);
  EXPECT_EQ(d.replacement, "-");
}

TEST(manifest, reads_what_the_build_writes) {
  const manifest m = parse_manifest(json::value::parse(R"({"version": 1, "backends": ["simt"],
    "mutants": [{"id": "a", "bug_class": "b", "summary": "s", "mirrors": "m", "expected_killer": "e",
                 "needs_gpu": "", "file": "kernels/src/x.cuh", "catalog": "mutants/catalog/a.mutant",
                 "hunks": [{"offset": 3, "search": "p.n", "replace": "block"}]}],
    "sources": {"kernels/src/x.cuh": "abcp.n"}})"));
  ASSERT_EQ(m.mutants.size(), 1u);
  EXPECT_EQ(m.mutants[0].hunks[0].offset, 3u);
  EXPECT_EQ(m.sources.at("kernels/src/x.cuh"), "abcp.n");
  EXPECT_EQ(m.backends, std::vector<std::string>{"simt"});
}

TEST(named_killers, lists_the_properties_the_text_names_in_its_order) {
  const std::vector<reports::property> suite = {{"y_and_r_match_the_exact_oracle", "differential"},
                                                {"dx_matches_the_exact_oracle", "differential"},
                                                {"every_access_stays_inside_the_operands", "contract"},
                                                {"memcheck", "sanitizer"}};
  // in the text's order, not the suite's; a property named twice once
  EXPECT_EQ(named_killers(suite, "simt: dx_matches_the_exact_oracle (dx[3]), then y_and_r_match_the_exact_oracle; "
                                 "cuda: dx_matches_the_exact_oracle"),
            "dx_matches_the_exact_oracle,y_and_r_match_the_exact_oracle");
  // whole words only: a longer name that contains a property's is not that property
  EXPECT_EQ(named_killers(suite, "y_and_r_match_the_exact_oracle_on_views and every_access_stays_inside_the_operands."),
            "every_access_stays_inside_the_operands");
  // a sanitizer pass is no property to run first; prose names none
  EXPECT_EQ(named_killers(suite, "memcheck on cuda"), "");
  EXPECT_EQ(named_killers(suite, "the differential forward on the strided path"), "");
}

}  // namespace
}  // namespace nc::mutants
