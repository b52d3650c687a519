// The exact oracle's bounds against plain fp32-accumulating kernels: no correct kernel may
// exceed its bound (error in bound units ≤ 1), and the slack (bound / actual error) is printed,
// since a slack bound is blind.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "fp32_kernel.hpp"
#include "normcheck/oracles/exact.hpp"
#include "test_support.hpp"

namespace nc::oracle {
namespace {

using testing::dx_order;
using testing::kernel_flavour;
using testing::rsqrt_flavour;
using testing::summation;

/// the measurements of one (dtype, output) pair
struct tally {
  std::vector<double> units;          ///< error / bound of every compared element
  std::vector<double> slack;          ///< bound / error where the error is above the oracle's rounding
  std::vector<double> case_tightest;  ///< per case and flavour: the smallest bound / error
  double max_units = 0;
  std::string worst;                  ///< where max_units was seen
  double max_case_slack = 0;
  std::string slackest;               ///< the case and flavour of the largest case slack
  std::int64_t skipped = 0;
};

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

double maximum(const std::vector<double>& v) { return v.empty() ? NAN : *std::max_element(v.begin(), v.end()); }

std::vector<kernel_flavour> all_flavours() {
  std::vector<kernel_flavour> out;
  for (summation s : {summation::sequential, summation::sequential_fma, summation::pairwise})
    for (rsqrt_flavour r : {rsqrt_flavour::one_over_sqrtf, rsqrt_flavour::two_ulp_low, rsqrt_flavour::two_ulp_high})
      for (bool reciprocal : {false, true})
        for (bool gamma_first : {false, true})
          for (dx_order o : {dx_order::x_times_c, dx_order::shipped, dx_order::abi, dx_order::reference,
                             dx_order::torch, dx_order::liger})
            // every dx order once with (x·r)·γ; x·(r·γ) with the two oldest, the forward is the same
            if (!gamma_first || o == dx_order::x_times_c || o == dx_order::shipped)
              out.push_back({s, r, reciprocal, gamma_first, o});
  return out;
}

/// adds one output's comparison to its tally
void measure(tally& t, const std::vector<double>& got, const std::vector<double>& oracle,
             const std::vector<double>& bound, const std::vector<bool>& in_domain, const std::string& where) {
  double tightest = HUGE_VAL;
  for (std::size_t k = 0; k < got.size(); ++k) {
    if (!in_domain[k]) {
      ++t.skipped;
      continue;
    }
    const double error = std::fabs(got[k] - oracle[k]);
    const double units = bound[k] > 0 ? error / bound[k] : (error == 0 ? 0 : HUGE_VAL);
    t.units.push_back(units);
    if (units > t.max_units) {
      t.max_units = units;
      t.worst = where + " element " + std::to_string(k) + ": got " + std::to_string(got[k]) + ", exact " +
                std::to_string(oracle[k]) + ", bound " + std::to_string(bound[k]);
    }
    // errors at the oracle's own resolution measure the oracle, not the bound: its last double ulp
    // on exactly representable results, its 10^-50 residue on exact cancellations to zero
    if (error > 0x1p-50 * std::fabs(oracle[k]) && error > 0x1p-80 * bound[k]) {
      t.slack.push_back(bound[k] / error);
      tightest = std::min(tightest, bound[k] / error);
    }
  }
  if (tightest < HUGE_VAL) {
    t.case_tightest.push_back(tightest);
    if (tightest > t.max_case_slack) {
      t.max_case_slack = tightest;
      t.slackest = where;
    }
  }
}

std::vector<bool> rows_mask(const std::vector<row_status>& rows, std::size_t per_row) {
  std::vector<bool> mask;
  for (const row_status& s : rows) mask.insert(mask.end(), per_row, s.in_domain());
  return mask;
}

TEST(bound_slack, no_correct_fp32_kernel_exceeds_the_bound_and_the_slack_is_printed) {
  std::mt19937_64 rng(testing::seed());
  std::map<std::pair<dtype, std::string>, tally> tallies;
  const std::vector<kernel_flavour> flavours = all_flavours();
  std::vector<testing::random_case> cases;
  for (int k = 0; k < 160; ++k) cases.push_back(testing::make_random_case(rng, 1 << 13));
  for (int k = 0; k < 300; ++k) cases.push_back(testing::make_random_case(rng, 1 << 10));
  std::map<std::string, int> reasons;
  for (const testing::random_case& c : cases) {
    const forward_result f = exact_forward(c.forward());
    const backward_result b = exact_backward(c.backward());
    for (const row_status& s : b.rows)
      if (!s.in_domain()) ++reasons[std::string(describe(s.reason)) + " | " + c.name.substr(c.name.find(',') + 1)];
    const auto width = static_cast<std::size_t>(c.n);
    for (const kernel_flavour& k : flavours) {
      const testing::kernel_output out = testing::run_kernel(c.forward(), c.backward(), k);
      const std::string where = c.name + ", " + testing::name_of(k.sum) + " sum, rsqrt " +
                                std::to_string(static_cast<int>(k.rsqrt)) + (k.mean_by_reciprocal ? ", ss*(1/N)" : "") +
                                (k.gamma_first ? ", x*(r*g)" : "") + ", dx " + testing::name_of(k.order);
      measure(tallies[{c.type, "y"}], out.y, f.y, f.y_bound, rows_mask(f.rows, width), where);
      measure(tallies[{c.type, "r"}], out.r, f.r, f.r_bound, rows_mask(f.rows, 1), where);
      measure(tallies[{c.type, "dx"}], out.dx, b.dx, b.dx_bound, rows_mask(b.rows, width), where);
      measure(tallies[{c.type, "dgamma"}], out.dgamma, b.dgamma, b.dgamma_bound, rows_mask(b.columns, 1), where);
    }
  }
  if (std::getenv("NORMCHECK_VERBOSE"))
    for (const auto& [reason, count] : reasons) std::printf("%4d rows out of the domain: %s\n", count, reason.c_str());
  std::printf("\n%d random cases x %zu correct fp32 kernel flavours\n", static_cast<int>(cases.size()), flavours.size());
  std::printf("slack = bound / actual error (errors above the oracle's resolution); units = actual error / bound\n");
  std::printf("%-5s | %-6s | %9s | %9s | %11s | %12s | %12s | %13s\n", "dtype", "output", "compared", "skipped",
              "max units", "median units", "median slack", "case slack");
  std::printf("%-5s | %-6s | %9s | %9s | %11s | %12s | %12s | %13s\n", "", "", "", "", "", "", "(elements)",
              "median / max");
  for (const auto& [key, t] : tallies) {
    std::printf("%-5s | %-6s | %9zu | %9lld | %11.4f | %12.4g | %12.4g | %6.3g / %.3g\n",
                std::string(name_of(key.first)).c_str(), key.second.c_str(), t.units.size(),
                static_cast<long long>(t.skipped), t.max_units, median(t.units), median(t.slack),
                median(t.case_tightest), maximum(t.case_tightest));
    if (std::getenv("NORMCHECK_VERBOSE")) std::printf("        slackest case: %s\n", t.slackest.c_str());
    EXPECT_LE(t.max_units, 1.0) << name_of(key.first) << " " << key.second << ": " << t.worst;
    EXPECT_FALSE(t.units.empty()) << name_of(key.first) << " " << key.second;
  }
}

}  // namespace
}  // namespace nc::oracle
