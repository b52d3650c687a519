// How a property says a case failed: a property_failure carrying a one-line summary and the
// first mismatching elements, which the campaign prints, writes into the case file, and
// which `normcheck replay` shows again.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace nc::harness {

/// one element where a kernel's output and what it should be disagree
struct mismatch {
  std::string output;  ///< "y", "r", "dx", "dgamma", or a derived quantity ("sum x*dx")
  std::int64_t row = 0;
  std::int64_t col = 0;  ///< 0 for per-row outputs (r) and the row index for dgamma's column
  double expected = 0;   ///< the oracle's value, or the value a metamorphic relation demands
  double got = 0;        ///< the kernel's
  double bound = 0;      ///< what |got - expected| may be: 0 where bits must match
};

/// thrown by a property body for a failing case (RapidCheck counts any exception as a failure)
class property_failure : public std::runtime_error {
 public:
  property_failure(const std::string& summary, std::vector<mismatch> first = {});
  const std::string& summary() const { return summary_; }
  const std::vector<mismatch>& first() const { return first_; }

 private:
  std::string summary_;
  std::vector<mismatch> first_;
};

/// the first mismatches as a table, one line each (index, expected, kernel, error, bound)
std::string format_mismatches(const std::vector<mismatch>& first);

/// how many mismatches a failure keeps
constexpr std::size_t kept_mismatches = 8;

}  // namespace nc::harness
