#include "normcheck/harness/report.hpp"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <iomanip>
#include <sstream>

namespace nc::harness {

std::int64_t campaign_report::cases() const {
  std::int64_t total = 0;
  for (const property_result& r : properties) total += r.cases;
  return total;
}

bool campaign_report::passed() const {
  for (const property_result& r : properties)
    if (!r.passed()) return false;
  return !nothing_ran();
}

bool campaign_report::nothing_ran() const {
  for (const property_result& r : properties)
    if (r.skipped.empty()) return false;
  return true;
}

namespace {

std::string verdict(const property_result& r) {
  if (!r.skipped.empty()) return "skipped";
  if (r.failed) return "FAIL";
  if (r.distribution_short) return "FAIL (distribution)";
  return "pass";
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (ch < 0x20) {
          char code[8];
          std::snprintf(code, sizeof code, "\\u%04x", ch);
          out += code;
        } else {
          out += char(ch);
        }
    }
  }
  return out + "\"";
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  std::ostringstream out;
  out << std::setprecision(9) << v;
  return out.str();
}

const char* judged_name(class_share::verdict v) {
  switch (v) {
    case class_share::verdict::reported: return "reported";
    case class_share::verdict::reached: return "reached";
    case class_share::verdict::below: return "below";
    case class_share::verdict::too_few_cases: return "too few cases";
    case class_share::verdict::reached_within_chance: return "below, within chance";
  }
  return "?";
}

}  // namespace

std::string format_summary(const campaign_report& report) {
  std::ostringstream out;
  out << std::left << std::setw(56) << "property" << std::right << std::setw(8) << "cases" << std::setw(14)
      << "max err/bound" << std::setw(13) << "table misses" << std::setw(9) << "seconds" << "  verdict\n";
  for (const property_result& r : report.properties)
    out << std::left << std::setw(56) << r.name << std::right << std::setw(8) << r.cases << std::setw(14)
        << std::setprecision(3) << r.max_error_in_bounds << std::setw(13) << r.fixed_table_misses << std::setw(9)
        << std::fixed << std::setprecision(1) << r.seconds << std::defaultfloat << "  " << verdict(r)
        << (r.skipped.empty() ? "" : " (" + r.skipped + ")") << "\n";
  out << "(max err/bound: the largest error in units of the exact oracle's per-element bound, a pass is <= 1;\n"
         " table misses: elements outside the document's fixed atol/rtol table where it cannot bind, reported only)\n";
  std::vector<std::string> skipped;
  for (const property_result& r : report.properties)
    if (!r.skipped.empty()) skipped.push_back(r.name);
  if (!report.not_served.empty() || !skipped.empty()) {
    out << "not exercised (the kernel declares " << report.capabilities << "):\n";
    for (const std::string& what : report.not_served) out << "  - " << what << ": never drawn\n";
    for (const std::string& name : skipped) out << "  - property " << name << ": skipped (see above)\n";
  }
  const double rate = report.seconds > 0 ? double(report.cases()) / report.seconds : 0.0;
  out << report.cases() << " cases in " << std::fixed << std::setprecision(1) << report.seconds << " s: "
      << std::setprecision(1) << rate << " cases/s; "
      << (report.nothing_ran()   ? "FAILED: every property was skipped, nothing was checked"
          : report.passed() ? "every property passed"
                            : "FAILED")
      << "\n";
  return out.str();
}

// what kind of claim a property makes, for the mutation scores: the strict score counts kills
// by differential and metamorphic properties only
std::string kind_of(const std::string& property) {
  const auto ends_with = [&](const char* tail) {
    const std::string t(tail);
    return property.size() >= t.size() && property.compare(property.size() - t.size(), t.size(), t) == 0;
  };
  if (ends_with("_match_the_exact_oracle") || ends_with("_matches_the_exact_oracle")) return "differential";
  if (property.rfind("invalid_calls", 0) == 0) return "contract";
  if (property.rfind("a_non_finite_row", 0) == 0) return "isolation";
  return "metamorphic";
}

// a failure the kernel raised (its error or fault) rather than a value the property compared:
// such failures start with the plugin's name, as nc::kernel's errors do
bool raised_by_kernel(const campaign_report& report, const property_result& r) {
  return !report.kernel_name.empty() && r.failure.rfind(report.kernel_name + " ", 0) == 0;
}

namespace {

// text for XML 1.0: the five entities escaped, control characters but tab and newline dropped
std::string xml(const std::string& text) {
  std::string out;
  for (const char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(ch) >= 0x20 || ch == '\n' || ch == '\t') out += ch;
    }
  }
  return out;
}

std::string seconds_text(double s) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(3) << s;
  return out.str();
}

}  // namespace

std::string to_junit(const campaign_report& report, const std::vector<std::string>& reproduce) {
  std::int64_t failures = 0, skipped = 0;
  for (const property_result& r : report.properties) failures += !r.passed() && r.skipped.empty(), skipped += !r.skipped.empty();
  const std::string suite = "normcheck " + report.command;
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<testsuites name=\"normcheck\" tests=\"" << report.properties.size() << "\" failures=\"" << failures
      << "\" skipped=\"" << skipped << "\" time=\"" << seconds_text(report.seconds) << "\">\n"
      << "  <testsuite name=\"" << xml(suite) << "\" tests=\"" << report.properties.size() << "\" failures=\""
      << failures << "\" errors=\"0\" skipped=\"" << skipped << "\" time=\"" << seconds_text(report.seconds)
      << "\" timestamp=\"" << xml(report.started) << "\">\n    <properties>\n";
  for (const auto& [name, value] :
       {std::pair<std::string, std::string>{"kernel", report.kernel_path}, {"kernel_name", report.kernel_name},
        {"backend", report.backend}, {"machine", report.machine}, {"seed", std::to_string(report.seed)},
        {"capabilities", report.capabilities}})
    out << "      <property name=\"" << name << "\" value=\"" << xml(value) << "\"/>\n";
  out << "    </properties>\n";
  for (std::size_t i = 0; i < report.properties.size(); ++i) {
    const property_result& r = report.properties[i];
    out << "    <testcase name=\"" << xml(r.name) << "\" classname=\"" << xml("normcheck." + report.backend)
        << "\" time=\"" << seconds_text(r.seconds) << "\"";
    if (!r.skipped.empty()) {
      out << ">\n      <skipped message=\"" << xml(r.skipped) << "\"/>\n    </testcase>\n";
    } else if (!r.passed()) {
      const std::string why = r.failed ? r.failure.substr(0, r.failure.find('\n'))
                                       : "an intended class of cases fell below its minimum share";
      std::string text = r.failure;
      if (!r.counterexample.empty()) text += "\ncounterexample (after " + std::to_string(r.shrinks) + " shrinks):\n" + r.counterexample;
      if (i < reproduce.size() && !reproduce[i].empty()) text += "\n" + reproduce[i];
      out << ">\n      <failure message=\"" << xml(why) << "\" type=\"" << (r.failed ? "property" : "distribution")
          << "\">" << xml(text) << "</failure>\n    </testcase>\n";
    } else {
      out << "/>\n";
    }
  }
  out << "  </testsuite>\n</testsuites>\n";
  return out.str();
}

std::string to_json(const campaign_report& report) {
  std::ostringstream out;
  out << "{\n  \"schema\": \"normcheck-campaign\",\n  \"version\": 1,\n"
      << "  \"command\": " << json_string(report.command) << ",\n"
      << "  \"started\": " << json_string(report.started) << ",\n"
      << "  \"backend\": " << json_string(report.backend) << ",\n"
      << "  \"machine\": " << json_string(report.machine) << ",\n"
      << "  \"kernel\": {\"path\": " << json_string(report.kernel_path) << ", \"name\": " << json_string(report.kernel_name)
      << "},\n"
      << "  \"seed\": " << report.seed << ",\n  \"case_scale\": " << json_number(report.scale) << ",\n"
      << "  \"seconds\": " << json_number(report.seconds) << ",\n  \"cases\": " << report.cases() << ",\n"
      << "  \"cases_per_second\": " << json_number(report.seconds > 0 ? double(report.cases()) / report.seconds : 0)
      << ",\n  \"passed\": " << (report.passed() ? "true" : "false")
      << ",\n  \"capabilities\": " << json_string(report.capabilities) << ",\n  \"not_exercised\": [";
  const char* separator = "";
  for (const std::string& what : report.not_served) out << separator << json_string(what), separator = ", ";
  for (const property_result& r : report.properties)
    if (!r.skipped.empty()) out << separator << json_string("property " + r.name + ": " + r.skipped), separator = ", ";
  out << "],\n  \"properties\": [";
  for (std::size_t i = 0; i < report.properties.size(); ++i) {
    const property_result& r = report.properties[i];
    out << (i ? "," : "") << "\n    {\"name\": " << json_string(r.name) << ", \"kind\": " << json_string(kind_of(r.name))
        << ", \"verdict\": " << json_string(verdict(r)) << ", \"failed\": " << (r.failed ? "true" : "false")
        << ", \"cases\": " << r.cases << ", \"planned\": " << r.planned << ", \"seconds\": " << json_number(r.seconds)
        << ", \"max_error_in_bounds\": " << json_number(r.max_error_in_bounds)
        << ", \"fixed_table_misses\": " << r.fixed_table_misses;
    if (!r.skipped.empty()) out << ", \"skipped\": " << json_string(r.skipped);
    if (r.failed)
      out << ", \"cases_to_failure\": " << r.cases + 1 << ", \"seconds_to_failure\": " << json_number(r.seconds)
          << ", \"error\": " << (raised_by_kernel(report, r) ? "true" : "false")
          << ", \"message\": " << json_string(r.failure.substr(0, r.failure.find('\n')))
          << ", \"failure\": " << json_string(r.failure) << ", \"counterexample\": " << json_string(r.counterexample)
          << ", \"reproduce\": " << json_string(r.reproduce) << ", \"case_file\": " << json_string(r.case_file)
          << ", \"shrinks\": " << r.shrinks;
    out << ",\n     \"distribution\": [";
    for (std::size_t k = 0; k < r.distribution.size(); ++k) {
      const class_share& c = r.distribution[k];
      out << (k ? ", " : "") << "{\"dimension\": " << json_string(c.dimension) << ", \"class\": " << json_string(c.cls)
          << ", \"cases\": " << c.count << ", \"share\": " << json_number(c.share);
      if (c.min_share > 0) out << ", \"min_share\": " << json_number(c.min_share);
      out << ", \"verdict\": " << json_string(judged_name(c.judged)) << "}";
    }
    out << "]}";
  }
  out << "\n  ]\n}\n";
  return out.str();
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string default_report_path() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%d-%H%M%S", &utc);
  return std::string("reports/out/run-") + text + ".json";
}

}  // namespace nc::harness
