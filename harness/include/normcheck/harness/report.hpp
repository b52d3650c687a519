// What a campaign leaves behind: the summary table it prints and the JSON report it writes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "normcheck/harness/campaign.hpp"
#include "normcheck/json.hpp"

namespace nc::harness {

struct campaign_report {
  std::string command;       ///< "run", "check all", ...
  std::string started;       ///< ISO 8601, UTC
  std::string backend, kernel_path, kernel_name;
  std::string machine;  ///< the device and the host CPU (worker.hpp machine_line)
  std::uint64_t seed = 0;
  double scale = 1.0;
  double seconds = 0;
  std::vector<property_result> properties;
  /// what the kernel declares it serves (capabilities::describe), and what of the contract
  /// the campaign therefore never exercised (capabilities::not_served; ε pinned by --epsilon)
  std::string capabilities;
  std::vector<std::string> not_served;

  std::int64_t cases() const;
  /// every property that ran passed, and at least one ran a case
  bool passed() const;
  /// no property ran a case (every one skipped): never a pass
  bool nothing_ran() const;
};

/// per property: cases, max error in bound units, fixed-table misses, seconds, verdict
std::string format_summary(const campaign_report& report);

/// the report as JSON (schema "normcheck-campaign", version 1)
std::string to_json(const campaign_report& report);

/// one property's result as JSON, every field: the one serializer of a result (the campaign
/// report writes it, an isolated worker sends it, the mutation runner reads it back); "kind" is
/// its family, "judges_values" whether a failure of it is a wrong value (property.hpp)
json::value to_json(const property_result& r);
/// throws std::runtime_error (json::parse_error) on a document that is not such a result
property_result property_result_from_json(const json::value& v);

/// the report as JUnit XML, for CI systems: a testsuite of the campaign (kernel, backend, seed,
/// variant as properties), a testcase per property (its seconds; a <failure> whose text is the
/// failure, the counterexample and reproduce[i], the property's reproduce and replay lines; a
/// <skipped> with the reason)
std::string to_junit(const campaign_report& report, const std::vector<std::string>& reproduce);

/// reports/out/run-<UTC date and time>.json under the current directory
std::string default_report_path();

/// now in UTC, as strftime's format writes it (default ISO 8601: 2026-12-07T06:30:00Z)
std::string utc_now(const char* format = "%Y-%m-%dT%H:%M:%SZ");

}  // namespace nc::harness
