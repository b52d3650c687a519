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

// The serializer below must name every field of property_result and class_share: a field added
// there and not here would vanish from every isolated run (a worker sends its result through
// it). The sizes catch that on the one ABI they are known for (libstdc++ on x86-64); update
// to_json and property_result_from_json with them.
#if defined(__GLIBCXX__) && defined(__x86_64__)
static_assert(sizeof(class_share) == 96, "class_share changed: update to_json(property_result) and its reader");
static_assert(sizeof(property_result) == 344, "property_result changed: update to_json(property_result) and its reader");
#endif

json::value to_json(const property_result& r) {
  json::value v = json::object{};
  v.set("name", r.name);
  v.set("kind", family_name(r.family));
  v.set("judges_values", judges_values(r.family));
  v.set("verdict", verdict(r));
  v.set("failed", r.failed);
  v.set("distribution_short", r.distribution_short);
  v.set("cases", r.cases);
  v.set("planned", r.planned);
  v.set("seconds", r.seconds);
  v.set("max_error_in_bounds", r.max_error_in_bounds);  // null where not finite
  v.set("fixed_table_misses", r.fixed_table_misses);
  if (!r.skipped.empty()) v.set("skipped", r.skipped);
  if (r.failed) {
    v.set("cases_to_failure", r.cases + 1);
    v.set("seconds_to_failure", r.seconds);
    v.set("message", r.failure.substr(0, r.failure.find('\n')));
  }
  for (const auto& [key, text] : {std::pair<const char*, const std::string&>{"failure", r.failure},
                                  {"counterexample", r.counterexample}, {"reproduce", r.reproduce},
                                  {"case_file", r.case_file}, {"case_file_error", r.case_file_error},
                                  {"unsaved_case", r.unsaved_case}})
    if (!text.empty()) v.set(key, text);
  if (r.shrinks) v.set("shrinks", r.shrinks);
  json::value distribution = json::array{};
  for (const class_share& c : r.distribution) {
    json::value x = json::object{};
    x.set("dimension", c.dimension);
    x.set("class", c.cls);
    x.set("cases", c.count);
    x.set("share", c.share);
    if (c.min_share > 0) x.set("min_share", c.min_share);
    x.set("verdict", judged_name(c.judged));
    distribution.push(std::move(x));
  }
  v.set("distribution", std::move(distribution));
  return v;
}

property_result property_result_from_json(const json::value& v) {
  if (!v.is_object()) throw std::runtime_error("a property result is not a JSON object");
  property_result r;
  r.name = v["name"].as_string();
  const std::string family = v["kind"].as_string();
  bool known = false;
  for (int f = 0; f <= int(property_family::launch); ++f)  // launch: the enum's last
    if (family_name(property_family(f)) == family) r.family = property_family(f), known = true;
  if (!known) throw std::runtime_error("property result '" + r.name + "': unknown kind '" + family + "'");
  r.failed = v["failed"].as_bool();
  r.distribution_short = v["distribution_short"].as_bool();
  r.cases = std::int64_t(v["cases"].as_number());
  r.planned = std::int64_t(v["planned"].as_number());
  r.seconds = v["seconds"].as_number();
  r.max_error_in_bounds = v["max_error_in_bounds"].is_null() ? HUGE_VAL : v["max_error_in_bounds"].as_number();
  r.fixed_table_misses = std::int64_t(v["fixed_table_misses"].as_number());
  r.skipped = v.get_string("skipped");
  r.failure = v.get_string("failure");
  r.counterexample = v.get_string("counterexample");
  r.reproduce = v.get_string("reproduce");
  r.case_file = v.get_string("case_file");
  r.case_file_error = v.get_string("case_file_error");
  r.unsaved_case = v.get_string("unsaved_case");
  r.shrinks = std::int64_t(v.get_number("shrinks"));
  for (const json::value& x : v["distribution"].as_array()) {
    class_share c;
    c.dimension = x["dimension"].as_string();
    c.cls = x["class"].as_string();
    c.count = std::int64_t(x["cases"].as_number());
    c.share = x["share"].as_number();
    c.min_share = x.get_number("min_share");
    const std::string judged = x["verdict"].as_string();
    known = false;
    for (int j = 0; j <= int(class_share::verdict::reached_within_chance); ++j)
      if (judged == judged_name(class_share::verdict(j))) c.judged = class_share::verdict(j), known = true;
    if (!known) throw std::runtime_error("property result '" + r.name + "': unknown class verdict '" + judged + "'");
    r.distribution.push_back(std::move(c));
  }
  return r;
}

std::string to_json(const campaign_report& report) {
  json::value v = json::object{};
  v.set("schema", "normcheck-campaign");
  v.set("version", 1);
  v.set("command", report.command);
  v.set("started", report.started);
  v.set("backend", report.backend);
  v.set("machine", report.machine);
  v.set("kernel", json::object{{"path", report.kernel_path}, {"name", report.kernel_name}});
  v.set("seed", report.seed);
  v.set("case_scale", report.scale);
  v.set("seconds", report.seconds);
  v.set("cases", report.cases());
  v.set("cases_per_second", report.seconds > 0 ? double(report.cases()) / report.seconds : 0.0);
  v.set("passed", report.passed());
  v.set("capabilities", report.capabilities);
  json::value not_exercised = json::array{};
  for (const std::string& what : report.not_served) not_exercised.push(what);
  for (const property_result& r : report.properties)
    if (!r.skipped.empty()) not_exercised.push("property " + r.name + ": " + r.skipped);
  v.set("not_exercised", std::move(not_exercised));
  json::value properties = json::array{};
  for (const property_result& r : report.properties) {
    json::value p = to_json(r);
    if (r.failed) p.set("error", raised_by_kernel(report, r));
    properties.push(std::move(p));
  }
  v.set("properties", std::move(properties));
  return v.dump(2) + "\n";
}

std::string utc_now(const char* format) {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[64];
  std::strftime(text, sizeof text, format, &utc);
  return text;
}

std::string default_report_path() { return "reports/out/run-" + utc_now("%Y%m%d-%H%M%S") + ".json"; }

}  // namespace nc::harness
