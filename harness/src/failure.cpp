#include "normcheck/harness/failure.hpp"

#include <cmath>
#include <cstdio>

namespace nc::harness {

namespace {

std::string compose(const std::string& summary, const std::vector<mismatch>& first) {
  return first.empty() ? summary : summary + "\n" + format_mismatches(first);
}

}  // namespace

property_failure::property_failure(const std::string& summary, std::vector<mismatch> first)
    : std::runtime_error(compose(summary, first)), summary_(summary), first_(std::move(first)) {}

std::string format_mismatches(const std::vector<mismatch>& first) {
  std::string text = "  output        row    col    oracle (expected)               kernel        error        bound\n";
  char line[256];
  for (const mismatch& m : first) {
    std::snprintf(line, sizeof line, "  %-10s %6lld %6lld %20.12g %20.12g %12.4g %12.4g\n", m.output.c_str(),
                  static_cast<long long>(m.row), static_cast<long long>(m.col), m.expected, m.got,
                  std::fabs(m.got - m.expected), m.bound);
    text += line;
  }
  return text;
}

}  // namespace nc::harness
