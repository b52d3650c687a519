// Unit tests of the isolation machinery (harness/src/worker.cpp): the wire formats survive any
// bytes, a death keeps its counterexample when the case folder cannot be written, and the
// environment variables are validated. The misbehaving plugins' end-to-end tests are
// expect_verdict.sh's.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "normcheck/harness/campaign.hpp"
#include "normcheck/harness/worker.hpp"

namespace nc::harness {
namespace {

std::string every_byte() {
  std::string s;
  for (int i = 0; i < 256; ++i) s += char(i);
  return s + std::string("\0\0after nulls", 13);
}

TEST(worker, property_results_round_trip_with_any_bytes) {
  property_result r;
  r.name = "name " + every_byte();
  r.family = property_family::quantized;
  r.cases = 17, r.planned = 20, r.seconds = 1.25, r.max_error_in_bounds = 0.5, r.fixed_table_misses = 3;
  r.distribution.push_back({"dim" + every_byte(), "cls\n", 4, 0.2, 0.15, class_share::verdict::below});
  r.distribution.push_back({"", "", 0, 0, 0, class_share::verdict::too_few_cases});
  r.failed = true, r.distribution_short = true;
  r.failure = every_byte(), r.counterexample = "ce", r.reproduce = "RC_PARAMS=\"x\"", r.case_file = "f.case";
  r.shrinks = 9, r.skipped = "s", r.case_file_error = "e" + every_byte(), r.unsaved_case = "u";
  const property_result back = decode_property_result(encode_property_result(r));
  EXPECT_EQ(back.name, r.name);
  EXPECT_EQ(back.family, property_family::quantized);
  EXPECT_EQ(back.cases, 17);
  EXPECT_EQ(back.planned, 20);
  EXPECT_EQ(back.seconds, 1.25);
  EXPECT_EQ(back.max_error_in_bounds, 0.5);
  EXPECT_EQ(back.fixed_table_misses, 3);
  ASSERT_EQ(back.distribution.size(), 2u);
  EXPECT_EQ(back.distribution[0].dimension, r.distribution[0].dimension);
  EXPECT_EQ(back.distribution[0].cls, "cls\n");
  EXPECT_EQ(back.distribution[0].count, 4);
  EXPECT_EQ(back.distribution[0].min_share, 0.15);
  EXPECT_EQ(back.distribution[0].judged, class_share::verdict::below);
  EXPECT_EQ(back.distribution[1].judged, class_share::verdict::too_few_cases);
  EXPECT_TRUE(back.failed);
  EXPECT_TRUE(back.distribution_short);
  EXPECT_EQ(back.failure, r.failure);
  EXPECT_EQ(back.counterexample, "ce");
  EXPECT_EQ(back.reproduce, r.reproduce);
  EXPECT_EQ(back.case_file, "f.case");
  EXPECT_EQ(back.shrinks, 9);
  EXPECT_EQ(back.skipped, "s");
  EXPECT_EQ(back.case_file_error, r.case_file_error);
  EXPECT_EQ(back.unsaved_case, "u");
}

TEST(worker, a_truncated_message_is_an_error_not_a_crash) {
  const std::string bytes = encode_property_result(property_result{});
  for (std::size_t cut : {std::size_t(0), std::size_t(7), bytes.size() - 1})
    EXPECT_THROW(decode_property_result(bytes.substr(0, cut)), std::runtime_error);
  EXPECT_THROW(decode_property_result(bytes + "x"), std::runtime_error);
}

TEST(worker, cases_round_trip) {
  norm_case c;
  c.m = 2, c.n = 3, c.x_dtype = NC_F16, c.gamma_dtype = NC_F32, c.epsilon = 1e-5f;
  c.layout = contiguous_layouts(3);
  c.layout.x.col_stride = 2, c.layout.dgamma.offset = 5;
  c.x = {1, 2, 3, 4, 5, 0xffff}, c.gamma = {7, 8, 9}, c.dy = {0, 0, 0, 0, 0, 1}, c.dy2 = {};
  c.parameters = {{"row", "1"}, {every_byte(), every_byte()}};
  EXPECT_EQ(decode_case(encode_case(c)), c);
}

TEST(worker, a_death_in_a_folder_that_cannot_be_written_keeps_the_case) {
  const kernel k = kernel::load(NORMCHECK_SEGFAULT_PLUGIN);
  const property* p = find_property("y_and_r_match_the_exact_oracle");
  ASSERT_NE(p, nullptr);
  campaign_options options;
  options.seed = 1;
  options.cases = 3;
  options.case_dir = "/proc/self/no-such-folder";
  const property_result r = run_property_isolated(*p, k, options, isolation_options{});
  EXPECT_TRUE(r.failed);
  EXPECT_NE(r.failure.find("died by SIGSEGV (signal 11)"), std::string::npos) << r.failure;
  EXPECT_TRUE(r.case_file.empty());
  EXPECT_FALSE(r.case_file_error.empty());
  EXPECT_NE(r.unsaved_case.find("format = normcheck-case 1"), std::string::npos);
}

TEST(worker, a_kernel_failure_in_a_folder_that_cannot_be_written_keeps_the_case) {
  const kernel k = kernel::load(NORMCHECK_WRITES_NOTHING_PLUGIN);
  const property* p = find_property("y_and_r_match_the_exact_oracle");
  campaign_options options;
  options.seed = 1;
  options.cases = 3;
  options.shrink_seconds = 2;
  options.case_dir = "/proc/self/no-such-folder";
  const property_result r = run_property_isolated(*p, k, options, isolation_options{});
  EXPECT_TRUE(r.failed);
  EXPECT_TRUE(r.case_file.empty());
  EXPECT_FALSE(r.case_file_error.empty());
  EXPECT_NE(r.unsaved_case.find("format = normcheck-case 1"), std::string::npos);
}

TEST(worker, the_environment_is_validated_naming_the_variable) {
  setenv("NORMCHECK_CALL_TIMEOUT", "-1", 1);
  try {
    isolation_from_environment();
    ADD_FAILURE() << "a negative timeout was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("NORMCHECK_CALL_TIMEOUT = '-1'"), std::string::npos) << e.what();
  }
  setenv("NORMCHECK_CALL_TIMEOUT", "2.5", 1);
  EXPECT_EQ(isolation_from_environment().call_timeout, 2.5);
  unsetenv("NORMCHECK_CALL_TIMEOUT");
  setenv("NORMCHECK_ISOLATION", "maybe", 1);
  EXPECT_THROW(isolation_from_environment(), std::invalid_argument);
  setenv("NORMCHECK_ISOLATION", "off", 1);
  EXPECT_FALSE(isolation_from_environment().enabled);
  unsetenv("NORMCHECK_ISOLATION");
  EXPECT_TRUE(isolation_from_environment().enabled);
}

TEST(worker, a_body_that_throws_is_a_harness_error_in_the_parent) {
  EXPECT_THROW(run_in_worker([](worker_link&) -> std::string { throw std::logic_error("boom"); }, {}),
               std::runtime_error);
}

}  // namespace
}  // namespace nc::harness
