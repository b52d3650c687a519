#include "campaign.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace nc::mutants {

namespace {

const json::value& member(const json::value& o, const char* key, const char* where) {
  const json::value* v = o.find(key);
  if (v == nullptr) throw std::runtime_error(std::string(where) + ": missing field '" + key + "'");
  return *v;
}

std::string string_field(const json::value& o, const char* key, const char* where) {
  const json::value& v = member(o, key, where);
  if (!v.is_string()) throw std::runtime_error(std::string(where) + ": field '" + key + "' must be a string");
  return v.as_string();
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

}  // namespace

manifest parse_manifest(const json::value& doc) {
  manifest m;
  for (const json::value& b : doc["backends"].as_array()) m.backends.push_back(b.as_string());
  for (const json::value& e : doc["mutants"].as_array()) {
    mutant_spec s;
    s.id = string_field(e, "id", "manifest mutant");
    s.bug_class = e.get_string("bug_class");
    s.summary = e.get_string("summary");
    s.mirrors = e.get_string("mirrors");
    s.expected_killer = e.get_string("expected_killer");
    s.needs_gpu = e.get_string("needs_gpu");
    s.file = string_field(e, "file", "manifest mutant");
    s.catalog = e.get_string("catalog");
    for (const json::value& h : e["hunks"].as_array())
      s.hunks.push_back({std::size_t(h["offset"].as_number()), h["search"].as_string(), h["replace"].as_string()});
    m.mutants.push_back(std::move(s));
  }
  for (const auto& [path, text] : doc["sources"].as_object()) m.sources[path] = text.as_string();
  return m;
}

manifest read_manifest(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read the mutant manifest " + path.string() + " (is the build done?)");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_manifest(json::value::parse(text.str()));
}

bool suite_result::any_failed() const {
  return std::any_of(properties.begin(), properties.end(), [](const property_result& p) { return p.failed; });
}

suite_result parse_suite(const json::value& doc) {
  if (!doc.is_object()) throw std::runtime_error("suite result: not a JSON object");
  suite_result r;
  r.kernel = doc.get_string("kernel");
  r.backend = doc.get_string("backend");
  r.machine = doc.get_string("machine");
  const json::value& props = member(doc, "properties", "suite result");
  if (!props.is_array()) throw std::runtime_error("suite result: field 'properties' must be an array");
  for (const json::value& p : props.as_array()) {
    // a property the backend cannot run (it needs device memory) neither covers nor kills
    if (!p.get_string("skipped").empty()) continue;
    property_result x;
    x.name = string_field(p, "name", "suite result property");
    x.kind = p.get_string("kind");
    x.judges_values = p.get_bool("judges_values");
    x.cases = long(p.get_number("cases"));
    const json::value& failed = member(p, "failed", "suite result property");
    if (!failed.is_bool()) throw std::runtime_error("suite result property '" + x.name + "': 'failed' must be true or false");
    x.failed = failed.as_bool();
    x.cases_to_failure = long(p.get_number("cases_to_failure", double(x.cases)));
    x.seconds_to_failure = p.get_number("seconds_to_failure");
    x.seconds = p.get_number("seconds", -1);
    x.error = p.get_bool("error");
    // the case file when the suite wrote one, else the counterexample as text
    x.counterexample = p.get_string("case_file");
    if (x.counterexample.empty()) x.counterexample = p.get_string("counterexample");
    x.message = p.get_string("message");
    r.properties.push_back(std::move(x));
  }
  return r;
}

std::string counterexample_text(const std::string& counterexample) {
  if (counterexample.empty() || counterexample.size() > 4096 || counterexample.find('\n') != std::string::npos)
    return counterexample;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(counterexample, ec)) return counterexample;
  std::ifstream in(counterexample, std::ios::binary);
  std::string text(16384, '\0');
  in.read(text.data(), std::streamsize(text.size()));
  text.resize(std::size_t(in.gcount()));
  return "case file " + counterexample + ":\n" + text;
}

reports::mutant describe(const mutant_spec& spec, const manifest& m) {
  reports::mutant d;
  d.id = spec.id;
  d.bug_class = spec.bug_class;
  d.summary = spec.summary;
  d.mirrors = spec.mirrors;
  d.expected_killer = spec.expected_killer;
  d.needs_gpu = spec.needs_gpu;
  d.file = spec.file;
  const auto src = m.sources.find(spec.file);
  const std::string& source = src == m.sources.end() ? std::string() : src->second;
  if (!spec.hunks.empty()) {
    const hunk& h = spec.hunks.front();
    d.where = reports::changed_region(source, h.offset, h.search, h.replace, d.replacement);
    if (spec.hunks.size() > 1) {
      d.summary += " [sites: lines";
      for (const hunk& x : spec.hunks) {
        std::string ignored;
        d.summary += " " + std::to_string(reports::changed_region(source, x.offset, x.search, x.replace, ignored).start.line);
      }
      d.summary += "]";
    }
  }
  return d;
}

void judge(reports::mutant& d, const std::vector<run>& runs) {
  using reports::status;
  d.kills.clear();
  d.covered_by.clear();
  d.cases_to_kill.reset();
  d.seconds_to_kill.reset();
  std::set<std::string> killers, covered;
  std::string first_reason;
  for (const run& r : runs) {
    if (!r.suite) continue;
    if (!r.sanitizer.empty() && r.process.exit_code == sanitizer_exit_code && !r.process.timed_out) {
      // compute-sanitizer found a hazard: a kill by a tool, not by a compared value
      long cases = 0;
      for (const property_result& p : r.suite->properties) cases += p.cases;
      std::string hazard = "compute-sanitizer " + r.sanitizer + " reported a hazard";
      std::istringstream log(r.log_tail);
      for (std::string line; std::getline(log, line);)
        if (line.find("hazard") != std::string::npos || line.find("SUMMARY") != std::string::npos ||
            line.find("Invalid") != std::string::npos) {
          hazard = line.substr(line.find_first_not_of("= "));
          break;
        }
      const std::string test = "compute-sanitizer " + r.sanitizer;
      if (!d.cases_to_kill) {
        d.cases_to_kill = cases;
        d.seconds_to_kill = r.process.seconds;
        first_reason = "killed by " + test + " (a tool) on the suite's " + std::to_string(cases) + " cases: " + hazard +
                       "\n" + r.log_tail;
      }
      if (killers.insert(test).second) d.kills.push_back({test, "sanitizer", true, cases, r.process.seconds, "", hazard});
    }
    long cases_before = 0;
    double seconds_before = 0;
    bool timing_known = true;
    for (const property_result& p : r.suite->properties) {
      if (covered.insert(p.name).second) d.covered_by.push_back(p.name);
      if (!p.failed) {
        cases_before += p.cases;
        if (p.seconds < 0) timing_known = false;
        else seconds_before += p.seconds;
        continue;
      }
      if (!d.cases_to_kill) {
        // the suite's cases and seconds from its start to this first failure
        d.cases_to_kill = cases_before + p.cases_to_failure;
        d.seconds_to_kill = (timing_known ? seconds_before : 0) + p.seconds_to_failure;
        std::ostringstream why;
        why << "killed by " << p.name << " (" << (p.kind.empty() ? "?" : p.kind) << (p.error ? ", a fault" : "")
            << ") after " << p.cases_to_failure << " cases"
            << (r.schedule.empty() ? "" : " under simt schedule " + r.schedule) << ": " << p.message;
        const std::string cx = counterexample_text(p.counterexample);
        if (!cx.empty()) why << "\nfirst counterexample: " << cx;
        first_reason = why.str();
      }
      if (killers.insert(p.name).second)
        d.kills.push_back({p.name, p.kind, p.error, p.cases_to_failure, p.seconds_to_failure,
                           counterexample_text(p.counterexample), p.message, p.judges_values});
    }
  }
  if (!d.kills.empty()) {
    d.result = status::killed;
    d.reason = first_reason;
    if (d.kills.size() > 1) {
      d.reason += "\nalso killed by:";
      for (std::size_t i = 1; i < d.kills.size(); ++i) d.reason += " " + d.kills[i].property;
    }
    return;
  }
  for (const run& r : runs)
    if (r.process.timed_out) {
      d.result = status::timeout;
      d.reason = "no result within " + seconds_text(r.timeout_seconds) +
                 (r.schedule.empty() ? "" : " (simt schedule " + r.schedule + ")") +
                 ": the mutant hangs or is far slower than the shipped kernel";
      return;
    }
  for (const run& r : runs) {
    const bool crashed = r.process.signal != 0;
    if (crashed || !r.suite || r.process.exit_code != 0) {
      d.result = status::runtime_error;
      std::ostringstream why;
      if (crashed) why << "the suite's process died of signal " << r.process.signal;
      else why << "the suite's process exited " << r.process.exit_code;
      if (!r.problem.empty()) why << "; " << r.problem;
      else if (r.suite) why << " although no property failed";
      why << (r.schedule.empty() ? "" : " (simt schedule " + r.schedule + ")") << "\n" << r.log_tail;
      d.reason = why.str();
      return;
    }
  }
  d.result = status::survived;
  long cases = 0;
  for (const run& r : runs)
    for (const property_result& p : r.suite->properties) cases += p.cases;
  d.reason = "no property failed: " + std::to_string(d.covered_by.size()) + " properties, " + std::to_string(cases) +
             " cases in " + std::to_string(runs.size()) + " run(s). Expected killer: " + d.expected_killer;
}

std::string named_killers(const std::vector<reports::property>& properties, const std::string& expected_killer) {
  const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::vector<std::pair<std::size_t, std::string>> named;
  for (const auto& p : properties) {
    if (p.kind == "sanitizer") continue;
    for (std::size_t at = expected_killer.find(p.name); at != std::string::npos;
         at = expected_killer.find(p.name, at + 1)) {
      const std::size_t end = at + p.name.size();
      if ((at == 0 || !word(expected_killer[at - 1])) && (end == expected_killer.size() || !word(expected_killer[end]))) {
        named.emplace_back(at, p.name);
        break;
      }
    }
  }
  std::sort(named.begin(), named.end());
  std::string out;
  for (const auto& [at, name] : named) out += (out.empty() ? "" : ",") + name;
  return out;
}

}  // namespace nc::mutants
