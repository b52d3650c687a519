#include "normcheck/mutation_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

namespace nc::reports {

const char* status_name(status s) {
  switch (s) {
    case status::killed: return "Killed";
    case status::survived: return "Survived";
    case status::timeout: return "Timeout";
    case status::runtime_error: return "RuntimeError";
    case status::compile_error: return "CompileError";
    case status::no_coverage: return "NoCoverage";
    case status::ignored: return "Ignored";
  }
  return "Ignored";
}

bool mutant::strict_kill() const {
  return result == status::killed && std::any_of(kills.begin(), kills.end(), [](const kill& k) { return k.strict(); });
}

std::optional<double> score::value() const {
  if (denominator() == 0) return std::nullopt;
  return 100.0 * (killed + timeout) / denominator();
}

std::optional<double> score::strict_value() const {
  if (denominator() == 0) return std::nullopt;
  return 100.0 * strict_killed / denominator();
}

score compute_score(const campaign& c) {
  score s;
  for (const mutant& m : c.mutants) {
    switch (m.result) {
      case status::killed: ++s.killed; break;
      case status::survived: ++s.survived; break;
      case status::timeout: ++s.timeout; break;
      case status::runtime_error: ++s.runtime_error; break;
      case status::compile_error: ++s.compile_error; break;
      case status::no_coverage: ++s.no_coverage; break;
      case status::ignored: ++s.ignored; break;
    }
    if (m.strict_kill()) ++s.strict_killed;
  }
  return s;
}

namespace {

position position_at(const std::string& source, std::size_t offset) {
  position p;
  for (std::size_t i = 0; i < offset && i < source.size(); ++i) {
    if (source[i] == '\n') ++p.line, p.column = 1;
    else ++p.column;
  }
  return p;
}

std::string percent(std::optional<double> v) {
  if (!v) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", *v);
  return buf;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s < 10 ? "%.2f s" : "%.1f s", s);
  return buf;
}

// a Markdown table cell: one line, pipes escaped
std::string cell(std::string s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|') out += "\\|";
    else if (ch == '\n') out += ' ';
    else out += ch;
  }
  return out;
}

std::string kill_names(const mutant& m) {
  std::string out;
  for (const kill& k : m.kills) {
    if (!out.empty()) out += ", ";
    out += k.property;
    if (k.error) out += " (fault)";
  }
  return out.empty() ? "–" : out;
}

// at most max_lines lines of text, marking what was cut
std::string head(const std::string& text, int max_lines) {
  std::size_t at = 0;
  for (int i = 0; i < max_lines; ++i) {
    at = text.find('\n', at);
    if (at == std::string::npos) return text;
    ++at;
  }
  return text.substr(0, at) + "…\n";
}

}  // namespace

location changed_region(const std::string& source, std::size_t offset, const std::string& search,
                        const std::string& replace, std::string& replacement) {
  std::size_t prefix = 0;
  while (prefix < search.size() && prefix < replace.size() && search[prefix] == replace[prefix]) ++prefix;
  std::size_t suffix = 0;
  while (suffix < search.size() - prefix && suffix < replace.size() - prefix &&
         search[search.size() - 1 - suffix] == replace[replace.size() - 1 - suffix])
    ++suffix;
  std::size_t begin = prefix, end = search.size() - suffix;
  if (begin == end) {
    // a pure insertion: show the whole line it lands in
    const std::size_t line_start = search.rfind('\n', begin == 0 ? 0 : begin - 1);
    begin = (line_start == std::string::npos || begin == 0) ? 0 : line_start + 1;
    const std::size_t line_end = search.find('\n', end);
    end = line_end == std::string::npos ? search.size() : line_end;
  }
  const std::size_t tail = search.size() - end;
  replacement = replace.substr(begin, replace.size() - tail - begin);
  return {position_at(source, offset + begin), position_at(source, offset + end)};
}

json::value stryker(const campaign& c) {
  using json::value;
  value report;
  report.set("$schema", "https://git.io/mutation-testing-schema");
  report.set("schemaVersion", "2");
  report.set("thresholds", value(json::object{{"high", 90}, {"low", 70}}));

  value files(json::object{});
  for (const auto& [path, text] : c.sources) {
    value f;
    f.set("language", "cpp");
    f.set("source", text);
    f.set("mutants", value(json::array{}));
    files.set(path, std::move(f));
  }
  for (const mutant& m : c.mutants) {
    value j;
    j.set("id", m.id);
    j.set("mutatorName", m.bug_class);
    std::string description = m.summary + ". Expected killer: " + m.expected_killer + ". Mirrors: " + m.mirrors;
    if (!m.needs_gpu.empty()) description += ". Needs a GPU: " + m.needs_gpu;
    j.set("description", description);
    j.set("replacement", m.replacement);
    j.set("location", value(json::object{{"start", value(json::object{{"line", m.where.start.line},
                                                                       {"column", m.where.start.column}})},
                                          {"end", value(json::object{{"line", m.where.end.line},
                                                                     {"column", m.where.end.column}})}}));
    j.set("status", status_name(m.result));
    j.set("statusReason", m.reason);
    value killed_by(json::array{});
    for (const kill& k : m.kills) killed_by.push(k.property);
    j.set("killedBy", std::move(killed_by));
    value covered_by(json::array{});
    for (const std::string& p : m.covered_by) covered_by.push(p);
    j.set("coveredBy", std::move(covered_by));
    j.set("testsCompleted", long(m.covered_by.size()));
    j.set("duration", std::round(m.seconds * 1000.0));
    value* f = files.find(m.file);
    if (f == nullptr) {
      value nf;
      nf.set("language", "cpp");
      nf.set("source", "");
      nf.set("mutants", value(json::array{}));
      f = &files.set(m.file, std::move(nf));
    }
    f->find("mutants")->push(std::move(j));
  }
  report.set("files", std::move(files));

  // the properties, one test file per kind
  value tests(json::object{});
  std::set<std::string> seen;
  for (const property& p : c.properties) {
    if (!seen.insert(p.name).second) continue;
    const std::string key = "properties/" + (p.kind.empty() ? std::string("other") : p.kind);
    value* t = tests.find(key);
    if (t == nullptr) t = &tests.set(key, value(json::object{{"tests", value(json::array{})}}));
    t->find("tests")->push(value(json::object{{"id", p.name}, {"name", p.name}}));
  }
  report.set("testFiles", std::move(tests));

  const score s = compute_score(c);
  value config;
  config.set("backend", c.backend);
  config.set("kernel", c.kernel);
  if (!c.machine.empty()) config.set("machine", c.machine);
  config.set("seed", c.seed);
  config.set("cases", c.cases);
  value schedules(json::array{});
  for (const auto& x : c.schedules) schedules.push(x);
  config.set("schedules", std::move(schedules));
  config.set("firstKill", c.first_kill);
  config.set("started", c.started);
  config.set("baselineSeconds", c.baseline_seconds);
  config.set("score", s.value() ? value(*s.value()) : value());
  config.set("strictScore", s.strict_value() ? value(*s.strict_value()) : value());
  report.set("config", std::move(config));
  report.set("framework", value(json::object{{"name", "normcheck mutants"}, {"version", "0.1.0"}}));
  return report;
}

std::string markdown(const campaign& c) {
  const score s = compute_score(c);
  std::ostringstream out;
  out << "# normcheck mutation report: " << c.backend << "\n\n";
  if (!c.machine.empty()) out << "Machine: " << c.machine << ".  \n";
  out << "Baseline: `" << c.kernel << "` passed " << c.properties.size() << " properties in "
      << seconds_text(c.baseline_seconds) << " (seed " << c.seed << ", cases "
      << (c.cases > 0 ? std::to_string(c.cases) : std::string("suite default"));
  if (!c.schedules.empty()) {
    out << ", simt schedules";
    for (const auto& x : c.schedules) out << " " << x;
  }
  out << (c.first_kill ? "). Each mutant's suite stopped at the first property that killed it (--first-kill): "
                         "a killed mutant lists that one.\n\n"
                       : "). Every property ran against every mutant.\n\n");
  out << "**Score " << percent(s.value()) << "** = (killed " << s.killed << " + timeout " << s.timeout
      << ") / (killed + timeout + survived " << s.survived << ").  \n";
  out << "**Strict score " << percent(s.strict_value()) << "** = " << s.strict_killed
      << " mutants killed by a wrong value from a differential or metamorphic property, of "
      << s.denominator() << ".\n";
  if (s.no_coverage + s.ignored + s.runtime_error + s.compile_error > 0) {
    out << "\nNot in the score: ";
    bool first = true;
    auto item = [&](int n, const char* what) {
      if (n == 0) return;
      out << (first ? "" : ", ") << n << " " << what;
      first = false;
    };
    item(s.no_coverage, "NoCoverage (unreachable on this backend, reason below)");
    item(s.ignored, "Ignored");
    item(s.runtime_error, "RuntimeError (the suite's process crashed)");
    item(s.compile_error, "CompileError");
    out << ".\n";
  }
  out << "\n| mutant | bug class | status | killing properties | cases to kill | time to kill |\n";
  out << "|---|---|---|---|---|---|\n";
  for (const mutant& m : c.mutants) {
    out << "| `" << m.id << "` | " << cell(m.bug_class) << " | " << status_name(m.result) << " | "
        << cell(kill_names(m)) << " | " << (m.cases_to_kill ? std::to_string(*m.cases_to_kill) : "–") << " | "
        << (m.seconds_to_kill ? seconds_text(*m.seconds_to_kill) : "–") << " |\n";
  }
  out << "\n\"(fault)\": the property failed on an error or fault of the kernel, not on a compared value; "
         "such kills do not count in the strict score. Cases and time to kill count the suite from its "
         "start to the first failing property's failure.\n";

  out << "\n## Mutants\n";
  for (const mutant& m : c.mutants) {
    out << "\n### `" << m.id << "`: " << status_name(m.result) << "\n\n";
    out << m.summary << " (`" << m.file << "` line " << m.where.start.line << ").  \n";
    out << "Bug class: " << m.bug_class << ". Expected killer: " << m.expected_killer << ".  \n";
    out << "Mirrors: " << m.mirrors << "\n";
    if (!m.reason.empty()) out << "\n```\n" << head(m.reason, 40) << (m.reason.back() == '\n' ? "" : "\n") << "```\n";
  }
  return out.str();
}

std::string html(const campaign& c, const std::string& elements_js) {
  const score s = compute_score(c);
  // "</script" inside the inlined bundle would end its element early
  std::string bundle = elements_js;
  for (std::size_t at = bundle.find("</script"); at != std::string::npos; at = bundle.find("</script", at + 2))
    bundle.replace(at, 2, "<\\/");
  const std::string title = "normcheck mutants (" + c.backend + ")";
  std::ostringstream out;
  out << "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" << title
      << "</title>\n<style>body{margin:0;font-family:sans-serif}"
         "#nc-summary{padding:.5em 1em;font-size:14px;background:#f4f4f5}</style>\n</head>\n<body>\n"
      << "<div id=\"nc-summary\">normcheck mutation report, backend " << c.backend << ": score "
      << percent(s.value()) << ", strict score " << percent(s.strict_value()) << " (" << c.mutants.size()
      << " mutants, " << c.properties.size() << " properties). Started " << c.started << ".</div>\n"
      << "<mutation-test-report-app title-postfix=\"" << title << "\"></mutation-test-report-app>\n"
      << "<script>\n" << bundle << "\n</script>\n"
      << "<script>\ndocument.querySelector('mutation-test-report-app').report = " << stryker(c).dump(-1)
      << ";\n</script>\n</body>\n</html>\n";
  return out.str();
}

std::vector<std::filesystem::path> write_reports(const campaign& c, const std::filesystem::path& dir,
                                                 const std::filesystem::path& elements_js) {
  std::filesystem::create_directories(dir);
  std::vector<std::filesystem::path> written;
  auto write = [&](const std::filesystem::path& p, const std::string& text) {
    std::ofstream f(p, std::ios::binary);
    f << text;
    if (!f) throw std::runtime_error("cannot write " + p.string());
    written.push_back(p);
  };
  write(dir / "mutation-report.json", stryker(c).dump(2) + "\n");
  write(dir / "mutation-report.md", markdown(c));
  std::ifstream js(elements_js, std::ios::binary);
  if (!elements_js.empty() && js) {
    std::ostringstream text;
    text << js.rdbuf();
    write(dir / "mutation-report.html", html(c, text.str()));
  }
  return written;
}

}  // namespace nc::reports
