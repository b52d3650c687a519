// normcheck mutants: the mutation campaign. A clean baseline first (the shipped plugin must
// pass the whole suite), then every mutant plugin in a fresh `normcheck check all` process
// with a timeout derived from the baseline; every property runs against every mutant.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "normcheck/harness/options.hpp"
#include "campaign.hpp"
#include "generated.hpp"
#include "mutants.hpp"
#include "normcheck/kernel.hpp"
#include "normcheck/mutation_report.hpp"
#include "paths.hpp"
#include "process.hpp"

namespace nc::mutants {

namespace fs = std::filesystem;
using reports::status;

namespace {

// the statuses of every program (normcheck/harness/exit_code.hpp) under the runner's names: the
// baseline failing is a property failure, a setup failure the harness's
constexpr int exit_ok = nc::exit_pass, exit_baseline = nc::exit_property_failed, exit_survived = nc::exit_mutant_survived,
              exit_usage = nc::exit_usage, exit_setup = nc::exit_harness_error, exit_skip = nc::exit_skipped;

const char* usage_text =
    "usage: normcheck mutants [options]\n"
    "  Runs the property suite (`normcheck check all`) against the shipped kernel, then against every\n"
    "  seeded mutant in its own process, and writes mutation-report.{json,md,html}.\n"
    "  --backend auto|simt|cuda   kernels to test (default auto: cuda when a device is present)\n"
    "  --only ID[,ID...]          these mutants only (repeatable)\n"
    "  --budget S                 start no mutant after S seconds; the rest are reported Ignored\n"
    "  --cases N                  cases per property, passed to normcheck check (default: its own)\n"
    "  --seed S                   the suite's seed, the same for the baseline and every mutant\n"
    "  --out DIR                  where reports and per-mutant logs go (default mutation-report)\n"
    "  --jobs N                   mutants tested at once, the baseline's properties N at a time (default 1)\n"
    "  --schedules LIST           simt fiber schedules (NORMCHECK_SIMT_SCHEDULE), comma separated;\n"
    "                             a mutant runs under the next one only while it survives (default 1)\n"
    "  --timeout-factor F         a mutant's timeout is F x the baseline's time x N (--jobs) + 30 s (default 5)\n"
    "  --timeout S                a fixed timeout per run instead\n"
    "  --run-gpu-only             also run the mutants that need a GPU on simt\n"
    "  --first-kill               a mutant's suite stops at the first property that kills it (a\n"
    "                             verdict for each mutant, not every property's: ctest -L mutation);\n"
    "                             the properties its catalog entry's expected_killer names run first\n"
    "  --sanitizer PATH|none      cuda: compute-sanitizer for the sanitizer passes (default: found on\n"
    "                             PATH or in /usr/local/cuda/bin); a survivor runs the suite again\n"
    "                             under racecheck (2 cases a property), then under memcheck (4 cases\n"
    "                             a property, operands between unallocated guard pages), each after\n"
    "                             a clean baseline there\n"
    "  --normcheck PATH           the normcheck CLI (default: this program or the one beside it)\n"
    "  --plugins DIR              plugins and lib/normcheck_mutants.json (default ../lib)\n"
    "  --list                     list the catalog (the --only mutants) and exit\n"
    "  --generated                the generated operators (mutants/generator) at every site of the kernel\n"
    "                             files in scope instead of the catalog, on simt: a mutant whose object\n"
    "                             code equals the original's is equivalent (Ignored, never run); results\n"
    "                             are cached by source hash under <build>/mutants/generated/cache; writes\n"
    "                             generated-summary.md beside the reports (default --out mutation-generated,\n"
    "                             --seed 1)\n"
    "  --limit N                  --generated: the N mutants of lowest hash of their id (a stated sample)\n"
    "  --only-file F[,F...]       --generated: the mutants of these files only (rmsnorm_forward.cuh, ...)\n"
    "  --operators C[,C...]       --generated: these operator classes only (arithmetic, relational,\n"
    "                             constant, index, statement, barrier, cast)\n"
    "  --no-cache                 --generated: build and run every mutant again (the caches are rewritten)\n";

struct options {
  std::string backend = "auto";
  std::vector<std::string> only;
  double budget = 0;
  long cases = 0;
  std::string seed;
  fs::path out = "mutation-report";
  int jobs = 1;
  std::vector<std::string> schedules{"1"};
  double timeout_factor = 5;
  double timeout = 0;
  bool run_gpu_only = false;
  bool first_kill = false;
  std::string sanitizer = "auto";
  bool list = false;
  fs::path cli, plugins;
  bool generated = false;
  generated_options gen;
  bool out_given = false;
};

using nc::usage_error;

options parse(int argc, char** argv) {
  const nc::options a(argc, argv, 1, "normcheck mutants",
                      {"backend", "budget", "cases", "seed", "out", "limit", "jobs", "schedules", "timeout-factor",
                       "timeout", "sanitizer", "normcheck", "plugins"},
                      {"generated", "no-cache", "run-gpu-only", "first-kill", "list"}, {"only", "only-file", "operators"});
  if (a.help()) throw usage_error("");
  a.no_positional("normcheck mutants");
  options o;
  const double forever = 1e9;
  o.backend = a.get("backend").value_or(o.backend);
  o.only = a.list("only");
  o.budget = a.number("budget", o.budget, 0, forever);
  o.cases = long(a.integer("cases", std::uint64_t(o.cases), 0, std::numeric_limits<int>::max()));
  o.seed = a.get("seed").value_or(o.seed);
  if (auto out = a.get("out")) o.out = *out, o.out_given = true;
  o.generated = a.has("generated");
  o.gen.limit = std::size_t(a.integer("limit", o.gen.limit, 0, std::numeric_limits<int>::max()));
  o.gen.files = a.list("only-file");
  o.gen.operators = a.list("operators");
  o.gen.cache = !a.has("no-cache");
  o.jobs = int(a.integer("jobs", std::uint64_t(o.jobs), 1, 256));
  if (auto schedules = a.get("schedules")) o.schedules = nc::split_list(*schedules);
  o.timeout_factor = a.number("timeout-factor", o.timeout_factor, 0, forever);
  o.timeout = a.number("timeout", o.timeout, 0, forever);
  o.run_gpu_only = a.has("run-gpu-only");
  o.first_kill = a.has("first-kill");
  o.sanitizer = a.get("sanitizer").value_or(o.sanitizer);
  o.cli = a.get("normcheck").value_or(o.cli);
  o.plugins = a.get("plugins").value_or(o.plugins);
  o.list = a.has("list");
  if (o.backend != "auto" && o.backend != "simt" && o.backend != "cuda")
    throw usage_error("--backend must be auto, simt or cuda, got '" + o.backend + "'");
  if (o.schedules.empty()) o.schedules = {"0"};
  if (o.generated) {
    if (o.backend == "cuda") throw usage_error("--generated runs on simt (--backend simt or auto)");
    o.backend = "simt";
    if (!o.out_given) o.out = "mutation-generated";
    if (o.seed.empty()) o.seed = "1";  // a fixed seed, so the verdict cache holds across runs
  } else if (o.gen.limit > 0 || !o.gen.files.empty() || !o.gen.operators.empty() || !o.gen.cache) {
    throw usage_error("--limit, --only-file, --operators and --no-cache go with --generated");
  }
  return o;
}

std::string now_iso() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string fixed(double v, int digits = 1) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// compute-sanitizer on PATH, else the CUDA toolkit's; "" when neither is there
std::string find_sanitizer() {
  std::vector<fs::path> places;
  if (const char* path = std::getenv("PATH"))
    for (const std::string& dir : nc::split_list(path, ':')) places.push_back(fs::path(dir) / "compute-sanitizer");
  places.push_back("/usr/local/cuda/bin/compute-sanitizer");
  for (const fs::path& p : places) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

// asked in a child process: `normcheck run` calls this after its property campaign, and the
// harness process never initializes the device (its kernel calls run in forked workers,
// harness/src/worker.cpp, which a CUDA context made here would not survive)
bool device_present(const fs::path& plugin) {
  try {
    const kernel k = kernel::load(plugin.string());
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid < 0) return k.available();
    if (pid == 0) _exit(k.available() ? 0 : 1);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  } catch (const std::exception&) {
    return false;
  }
}

// one pending or running suite run
struct job {
  std::size_t mutant;  // index into the campaign's mutants; npos for the baseline
  std::size_t schedule;
  fs::path dir, json;
  std::unique_ptr<child> process;
  double timeout = 0;
};

class campaign_runner {
 public:
  campaign_runner(options o, manifest m, generated_campaign* gen = nullptr)
      : o_(std::move(o)), m_(std::move(m)), gen_(gen) {}

  int run();

 private:
  options o_;
  manifest m_;
  std::string backend_;
  fs::path plugins_, cli_;
  reports::campaign c_;
  std::vector<std::vector<mutants::run>> runs_;  // per mutant, the runs done
  std::string sanitizer_;                        // compute-sanitizer, "" when there are no sanitizer passes
  std::vector<double> baseline_seconds_;         // the baseline's time on each pass
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  generated_campaign* gen_ = nullptr;  // --generated: its plugins, verdicts and caches

  fs::path shipped() const { return gen_ ? gen_->baseline_plugin() : shipped_plugin(plugins_, backend_); }
  fs::path plugin_of(const std::string& id) const {
    return gen_ ? gen_->plugin(id) : mutant_plugin(plugins_, id, backend_);
  }
  std::string suite_key() const;
  bool baseline_from_cache();

  bool simt() const { return backend_ == "simt"; }
  std::string schedule_name(std::size_t i) const { return simt() ? o_.schedules[i] : ""; }
  // the runs a mutant may get: one per simt schedule; on cuda the plain run, then the
  // racecheck and memcheck passes when a compute-sanitizer is there
  std::size_t passes() const { return simt() ? o_.schedules.size() : sanitizer_.empty() ? 1 : 3; }
  // the compute-sanitizer tool of a pass, "" for a plain one
  std::string sanitizer_tool(std::size_t pass) const {
    return simt() || pass == 0 ? "" : pass == 1 ? "racecheck" : "memcheck";
  }

  job start(std::size_t mutant, std::size_t schedule, const fs::path& plugin, const fs::path& dir, double timeout) {
    fs::create_directories(dir);
    job j{mutant, schedule, fs::absolute(dir), {}, nullptr, timeout};
    const std::string tool = sanitizer_tool(schedule);
    const std::string tag = simt() ? "schedule-" + o_.schedules[schedule] : !tool.empty() ? tool : "run";
    j.json = j.dir / (tag + ".json");
    std::error_code ec;
    fs::remove(j.json, ec);
    // the plugin names its backend: normcheck check takes --kernel without --backend
    // a mutant's suite --jobs 1: the runner's own --jobs runs suites side by side; the baseline
    // runs alone, its properties side by side
    const int jobs = mutant == SIZE_MAX ? o_.jobs : 1;
    std::vector<std::string> argv{cli_.string(), "check",    "all",   "--kernel", fs::absolute(plugin).string(),
                                  "--seed",      c_.seed,    "--case-dir", (j.dir / "cases").string(),
                                  "--json",      j.json.string(), "--jobs", std::to_string(jobs)};
    if (!tool.empty()) {
      // racecheck sees a shared-memory hazard whether or not the timing let it corrupt a value;
      // memcheck an access of a guard page (every_access_stays_inside_the_operands, which
      // NORMCHECK_SANITIZER=memcheck enables on a device) whether or not its value was used
      argv.insert(argv.begin(), {sanitizer_, "--tool", tool, "--error-exitcode", std::to_string(sanitizer_exit_code),
                                 "--print-limit", "4"});
      argv.insert(argv.end(), {"--cases", tool == "racecheck" ? "2" : "4"});
    } else if (o_.cases > 0) {
      argv.insert(argv.end(), {"--cases", std::to_string(o_.cases)});
    }
    if (o_.first_kill) {
      argv.push_back("--first-failure");
      if (mutant != SIZE_MAX)
        if (const std::string first = named_killers(c_.properties, c_.mutants[mutant].expected_killer); !first.empty())
          argv.insert(argv.end(), {"--first", first});
    }
    // a mutant may fail every property: each gets 5 s of shrinking, so the suite ends well
    // inside its timeout with a counterexample for each
    std::vector<std::pair<std::string, std::string>> env{{"NORMCHECK_SHRINK_SECONDS", "5"}};
    if (simt()) env.emplace_back("NORMCHECK_SIMT_SCHEDULE", o_.schedules[schedule]);
    if (!tool.empty()) env.emplace_back("NORMCHECK_SANITIZER", tool);
    j.process = std::make_unique<child>(argv, env, j.dir, j.dir / (tag + ".log"), timeout);
    return j;
  }

  mutants::run finish(job& j) {
    mutants::run r;
    r.schedule = schedule_name(j.schedule);
    r.sanitizer = sanitizer_tool(j.schedule);
    r.process = j.process->result();
    r.timeout_seconds = j.timeout;
    r.log_tail = tail_of(j.json.parent_path() / (j.json.stem().string() + ".log"));
    std::ifstream in(j.json, std::ios::binary);
    if (!in) {
      r.problem = "it wrote no " + j.json.filename().string();
      return r;
    }
    std::ostringstream text;
    text << in.rdbuf();
    try {
      r.suite = parse_suite(json::value::parse(text.str()));
      // relative case-file paths are relative to the run's folder
      for (auto& p : r.suite->properties)
        if (!p.counterexample.empty() && fs::path(p.counterexample).is_relative() &&
            fs::exists(j.dir / p.counterexample))
          p.counterexample = (j.dir / p.counterexample).string();
    } catch (const std::exception& e) {
      r.problem = std::string("its ") + j.json.filename().string() + " is not the expected suite result: " + e.what();
    }
    return r;
  }

  int baseline();
  void mutants();
  void print_mutant(std::size_t i) const;
};

int campaign_runner::baseline() {
  const fs::path plugin = shipped();
  c_.kernel = plugin.filename().string();
  std::printf("baseline: %s on %s, seed %s%s\n", plugin.string().c_str(), backend_.c_str(), c_.seed.c_str(),
              o_.cases > 0 ? (", " + std::to_string(o_.cases) + " cases per property").c_str() : "");
  std::fflush(stdout);
  if (!fs::exists(plugin)) {
    std::fprintf(stderr, "normcheck mutants: the shipped plugin %s is missing (is the build done?)\n", plugin.c_str());
    return exit_setup;
  }
  for (std::size_t s = 0; s < passes(); ++s) {
    job j = start(SIZE_MAX, s, plugin, o_.out / "baseline", o_.timeout > 0 ? o_.timeout : 3600);
    j.process->wait();
    mutants::run r = finish(j);
    const std::string where = !r.sanitizer.empty() ? " (under compute-sanitizer " + r.sanitizer + ")"
                              : r.schedule.empty() ? ""
                                                   : " (simt schedule " + r.schedule + ")";
    if (!r.suite || r.process.signal != 0 || r.process.timed_out) {
      std::fprintf(stderr,
                   "normcheck mutants: the baseline run%s did not produce a suite result (exit %d, signal %d%s): %s\n"
                   "log %s:\n%s\n",
                   where.c_str(), r.process.exit_code, r.process.signal, r.process.timed_out ? ", timed out" : "",
                   r.problem.c_str(), (j.dir / (j.json.stem().string() + ".log")).c_str(), r.log_tail.c_str());
      if (r.log_tail.find("--json") != std::string::npos)
        std::fprintf(stderr, "normcheck mutants: %s does not write the suite result: the runner needs "
                             "`normcheck check all --kernel PLUGIN --seed S --case-dir DIR --json FILE` "
                             "(the format is mutants/runner/README.md's)\n", cli_.c_str());
      return r.suite ? exit_baseline : exit_setup;
    }
    if (r.suite->any_failed() || r.process.exit_code != 0) {
      std::fprintf(stderr, "normcheck mutants: the BASELINE FAILS%s: the shipped kernel %s does not pass the suite, "
                           "so no mutant can be judged. Failing properties:\n", where.c_str(), c_.kernel.c_str());
      for (const auto& p : r.suite->properties)
        if (p.failed)
          std::fprintf(stderr, "  %s (%s): %s\n    %s\n", p.name.c_str(), p.kind.c_str(), p.message.c_str(),
                       p.counterexample.c_str());
      if (!r.suite->any_failed()) {
        if (!r.sanitizer.empty() && r.process.exit_code == sanitizer_exit_code)
          std::fprintf(stderr, "  compute-sanitizer %s reported hazards in the shipped kernel:\n%s\n",
                       r.sanitizer.c_str(), r.log_tail.c_str());
        else
          std::fprintf(stderr, "  (no property failed, but it exited %d)\n", r.process.exit_code);
      }
      return exit_baseline;
    }
    baseline_seconds_.push_back(r.process.seconds);
    if (!r.sanitizer.empty()) {
      std::printf("baseline%s clean: %.1f s\n", where.c_str(), r.process.seconds);
      std::fflush(stdout);
      continue;
    }
    c_.baseline_seconds = std::max(c_.baseline_seconds, r.process.seconds);
    if (c_.properties.empty())
      for (const auto& p : r.suite->properties) c_.properties.push_back({p.name, p.kind});
    if (c_.machine.empty()) c_.machine = r.suite->machine;
    long cases = 0;
    for (const auto& p : r.suite->properties) cases += p.cases;
    std::printf("baseline%s passed: %zu properties, %ld cases, %.1f s\n", where.c_str(), r.suite->properties.size(),
                cases, r.process.seconds);
    std::fflush(stdout);
  }
  if (gen_) {
    json::value v = json::object{};
    v.set("seconds", c_.baseline_seconds);
    v.set("machine", c_.machine);
    json::value props = json::array{};
    for (const auto& p : c_.properties) {
      json::value x = json::object{};
      x.set("name", p.name);
      x.set("kind", p.kind);
      props.push(std::move(x));
    }
    v.set("properties", std::move(props));
    gen_->store_baseline(v);
  }
  // the sanitizer passes are tests of the report too: the mutants they kill name them
  if (!sanitizer_.empty())
    for (const char* test : {racecheck_test, memcheck_test}) c_.properties.push_back({test, "sanitizer"});
  return exit_ok;
}

// what decides a generated mutant's verdict besides its plugin: the suite (the CLI's bytes) and
// the options the suites run with
std::string campaign_runner::suite_key() const {
  std::ifstream in(cli_, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  std::string key = hex_hash(fnv1a(bytes.str())) + "|seed " + o_.seed + "|cases " + std::to_string(o_.cases) +
                    "|first-kill " + (o_.first_kill ? "1" : "0") + "|timeout " + fixed(o_.timeout) + " " +
                    fixed(o_.timeout_factor) + "|jobs " + std::to_string(o_.jobs) + "|schedules";
  for (const auto& x : o_.schedules) key += " " + x;
  return hex_hash(fnv1a(key));
}

// --generated: the baseline's result when this suite already ran against this original
bool campaign_runner::baseline_from_cache() {
  if (!gen_) return false;
  const std::optional<json::value> v = gen_->cached_baseline();
  if (!v) return false;
  c_.baseline_seconds = (*v)["seconds"].as_number();
  c_.machine = v->get_string("machine");
  for (const json::value& p : (*v)["properties"].as_array())
    c_.properties.push_back({p["name"].as_string(), p["kind"].as_string()});
  std::printf("baseline: %s passed this suite before (cached): %zu properties, %.1f s\n", c_.kernel.c_str(),
              c_.properties.size(), c_.baseline_seconds);
  std::fflush(stdout);
  return true;
}

void campaign_runner::print_mutant(std::size_t i) const {
  const reports::mutant& m = c_.mutants[i];
  std::string detail;
  if (m.result == status::killed) {
    detail = "by " + m.kills.front().property;
    if (m.kills.size() > 1) detail += " (+" + std::to_string(m.kills.size() - 1) + ")";
    if (m.cases_to_kill) detail += " after " + std::to_string(*m.cases_to_kill) + " cases";
    if (m.seconds_to_kill) detail += ", " + fixed(*m.seconds_to_kill, 2) + " s";
    if (!m.strict_kill()) detail += " [not strict]";
  } else {
    const std::string first_line = m.reason.substr(0, m.reason.find('\n'));
    detail = first_line.size() > 110 ? first_line.substr(0, 110) + "…" : first_line;
  }
  std::printf("[%2zu/%zu] %-34s %-12s %s\n", i + 1, c_.mutants.size(), m.id.c_str(), reports::status_name(m.result),
              detail.c_str());
  std::fflush(stdout);
}

void campaign_runner::mutants() {
  // the baseline ran its properties --jobs at a time, a mutant's suite one at a time
  const double timeout = o_.timeout > 0 ? o_.timeout : o_.timeout_factor * c_.baseline_seconds * o_.jobs + 30;
  // a pass's timeout: its baseline's, as the plain run's
  const auto timeout_of = [&](std::size_t pass) {
    if (pass == 0 || simt()) return timeout;
    return o_.timeout > 0 ? o_.timeout : o_.timeout_factor * baseline_seconds_.at(pass) * o_.jobs + 30;
  };
  std::printf("mutants: %zu, timeout %.0f s each run, %d at a time\n", c_.mutants.size(), timeout, o_.jobs);
  for (std::size_t pass = 1; !simt() && pass < passes(); ++pass)
    std::printf("a survivor runs again under %s --tool %s (timeout %.0f s)\n", sanitizer_.c_str(),
                sanitizer_tool(pass).c_str(), timeout_of(pass));
  std::fflush(stdout);
  runs_.assign(c_.mutants.size(), {});
  std::deque<std::size_t> queue;
  for (std::size_t i = 0; i < c_.mutants.size(); ++i) {
    reports::mutant& d = c_.mutants[i];
    const mutant_spec& spec = *std::find_if(m_.mutants.begin(), m_.mutants.end(),
                                            [&](const mutant_spec& s) { return s.id == d.id; });
    const fs::path plugin = plugin_of(d.id);
    if (const reports::mutant* known = gen_ ? gen_->prejudged(d.id) : nullptr) {
      // equivalent, a compile error, or a verdict from the cache
      d.result = known->result;
      d.reason = known->reason;
      d.kills = known->kills;
      d.covered_by = known->covered_by;
      d.cases_to_kill = known->cases_to_kill;
      d.seconds_to_kill = known->seconds_to_kill;
      d.seconds = known->seconds;
      if (d.result != status::ignored) print_mutant(i);
    } else if (!spec.needs_gpu.empty() && simt() && !o_.run_gpu_only) {
      d.result = status::no_coverage;
      d.reason = "needs a GPU: " + spec.needs_gpu;
      print_mutant(i);
    } else if (!fs::exists(plugin)) {
      d.result = status::compile_error;
      d.reason = "no plugin " + plugin.string() + ": the build did not make it";
      // a cuda build makes its mutant plugins on request (mutants/CMakeLists.txt)
      if (backend_ == "cuda") d.reason += " (the cuda mutant plugins are built on request: cmake --build --preset cuda-mutants)";
      else d.reason += " (a cuda build makes its simt mutant plugins on request: cmake --build BUILD --target normcheck_mutant_plugins)";
      print_mutant(i);
    } else {
      queue.push_back(i);
    }
  }
  std::vector<job> active;
  while (!queue.empty() || !active.empty()) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    while (!queue.empty() && int(active.size()) < o_.jobs) {
      const std::size_t i = queue.front();
      queue.pop_front();
      if (o_.budget > 0 && elapsed > o_.budget) {
        c_.mutants[i].result = status::ignored;
        c_.mutants[i].reason = "not run: the campaign budget of " + fixed(o_.budget, 0) + " s was spent";
        print_mutant(i);
        continue;
      }
      const std::size_t s = runs_[i].size();
      active.push_back(start(i, s, plugin_of(c_.mutants[i].id),
                             o_.out / "mutants" / c_.mutants[i].id, timeout_of(s)));
    }
    bool progressed = false;
    for (std::size_t k = 0; k < active.size();) {
      if (!active[k].process->poll()) {
        ++k;
        continue;
      }
      progressed = true;
      job j = std::move(active[k]);
      active.erase(active.begin() + std::ptrdiff_t(k));
      const std::size_t i = j.mutant;
      runs_[i].push_back(finish(j));
      reports::mutant& d = c_.mutants[i];
      judge(d, runs_[i]);
      // a survivor runs again under the next schedule (cuda: under racecheck, then memcheck); a
      // verdict ends it
      if (d.result == status::survived && runs_[i].size() < passes()) {
        queue.push_front(i);
        continue;
      }
      d.seconds = 0;
      for (const auto& r : runs_[i]) d.seconds += r.process.seconds;
      if (gen_) gen_->store_verdict(d);
      print_mutant(i);
    }
    if (!progressed) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int campaign_runner::run() {
  plugins_ = o_.plugins.empty() ? default_plugin_dir() : o_.plugins;
  cli_ = o_.cli.empty() ? default_cli() : o_.cli;
  backend_ = o_.backend;
  if (backend_ == "auto") {
    const bool cuda_built = std::find(m_.backends.begin(), m_.backends.end(), "cuda") != m_.backends.end();
    backend_ = cuda_built && device_present(shipped_plugin(plugins_, "cuda")) ? "cuda" : "simt";
  } else if (backend_ == "cuda" && !device_present(shipped_plugin(plugins_, "cuda"))) {
    std::printf("normcheck mutants: no device for the cuda backend (or no cuda plugin in %s): skipped\n",
                plugins_.c_str());
    return exit_skip;
  }
  if (!fs::exists(cli_)) {
    std::fprintf(stderr, "normcheck mutants: the normcheck CLI %s does not exist (give --normcheck PATH)\n",
                 cli_.c_str());
    return exit_setup;
  }
  if (o_.seed.empty()) o_.seed = std::to_string(std::random_device{}() % 1000000000u);
  if (!simt() && o_.sanitizer != "none") {
    sanitizer_ = o_.sanitizer == "auto" ? find_sanitizer() : o_.sanitizer;
    if (sanitizer_.empty())
      std::printf("normcheck mutants: no compute-sanitizer on PATH or in /usr/local/cuda/bin: no sanitizer passes\n");
  }
  c_.backend = backend_;
  c_.seed = o_.seed;
  c_.cases = o_.cases;
  if (simt()) c_.schedules = o_.schedules;
  c_.first_kill = o_.first_kill;
  c_.started = now_iso();
  std::string repro = "normcheck mutants --backend " + backend_ + " --seed " + o_.seed;
  if (o_.cases > 0) repro += " --cases " + std::to_string(o_.cases);
  if (o_.first_kill) repro += " --first-kill";
  if (gen_) {
    repro += " --generated";
    if (o_.gen.limit > 0) repro += " --limit " + std::to_string(o_.gen.limit);
    for (std::size_t i = 0; i < o_.gen.files.size(); ++i) repro += (i ? "," : " --only-file ") + o_.gen.files[i];
    for (std::size_t i = 0; i < o_.gen.operators.size(); ++i) repro += (i ? "," : " --operators ") + o_.gen.operators[i];
  }
  // the mutants named, quoted: a generated id holds parentheses and a comma
  for (std::size_t i = 0; i < o_.only.size(); ++i) repro += (i ? "," : " --only '") + o_.only[i];
  if (!o_.only.empty()) repro += "'";
  if (simt()) {
    repro += " --schedules ";
    for (std::size_t i = 0; i < o_.schedules.size(); ++i) repro += (i ? "," : "") + o_.schedules[i];
  }
  std::printf("normcheck mutants: backend %s, %zu mutants; reproduce with: %s\n", backend_.c_str(),
              o_.only.empty() ? m_.mutants.size() : o_.only.size(), repro.c_str());
  std::fflush(stdout);

  for (const mutant_spec& s : m_.mutants)
    if (o_.only.empty() || std::find(o_.only.begin(), o_.only.end(), s.id) != o_.only.end())
      c_.mutants.push_back(describe(s, m_));
  for (const auto& [path, text] : m_.sources) c_.sources[path] = text;

  fs::create_directories(o_.out);
  if (gen_) {
    gen_->build(suite_key());
    c_.kernel = gen_->baseline_plugin().filename().string();
  }
  const bool all_known = gen_ && std::all_of(c_.mutants.begin(), c_.mutants.end(),
                                            [&](const reports::mutant& d) { return gen_->prejudged(d.id) != nullptr; });
  if (all_known) {
    std::printf("baseline: not needed: every mutant's verdict is known (equivalent, compile error or cached)\n");
    baseline_from_cache();
  } else if (!baseline_from_cache()) {
    if (const int rc = baseline(); rc != exit_ok) return rc;
  }
  mutants();

  std::vector<fs::path> written = reports::write_reports(c_, o_.out, default_elements_js());
  if (gen_) {
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const fs::path md = o_.out / "generated-summary.md";
    std::ofstream(md, std::ios::binary) << gen_->summary(c_, wall);
    written.push_back(md);
    const auto& f = gen_->figures();
    std::printf("\ngenerated: %zu sites, %zu mutants (of %zu in scope); %zu equivalent, %zu compile errors; "
                "wall %.1f s (build %.1f s, %zu compiled, %zu + %zu from the caches)\n",
                f.sites, f.mutants, f.mutants_in_scope, f.equivalent, f.compile_errors, wall, f.build_seconds,
                f.compiled, f.build_cached, f.verdicts_cached);
  }
  const reports::score s = reports::compute_score(c_);
  auto pct = [](std::optional<double> v) { return v ? fixed(*v) + "%" : std::string("n/a"); };
  std::printf("\nscore %s (killed %d + timeout %d of %d), strict score %s (%d oracle kills)", pct(s.value()).c_str(),
              s.killed, s.timeout, s.denominator(), pct(s.strict_value()).c_str(), s.strict_killed);
  if (s.no_coverage + s.ignored + s.runtime_error + s.compile_error > 0)
    std::printf("; not scored: %d NoCoverage, %d Ignored, %d RuntimeError, %d CompileError", s.no_coverage,
                s.ignored, s.runtime_error, s.compile_error);
  std::printf("\n");
  for (const fs::path& p : written) std::printf("report: %s\n", p.c_str());
  if (std::find_if(written.begin(), written.end(), [](const fs::path& p) { return p.extension() == ".html"; }) ==
      written.end())
    std::printf("no HTML report: %s is missing (npm install mutation-testing-elements)\n",
                default_elements_js().c_str());
  if (s.survived > 0) {
    std::printf("SURVIVED:");
    for (const auto& m : c_.mutants)
      if (m.result == status::survived) std::printf(" %s", m.id.c_str());
    std::printf("\n");
    return exit_survived;
  }
  if (s.compile_error > 0) return exit_setup;
  return exit_ok;
}

}  // namespace

int run_main(int argc, char** argv) {
  options o;
  try {
    o = parse(argc, argv);
  } catch (const usage_error& e) {
    if (*e.what()) std::fprintf(stderr, "normcheck mutants: %s\n", e.what());
    std::fprintf(*e.what() ? stderr : stdout, "%s", usage_text);
    return *e.what() ? exit_usage : exit_ok;
  }
  try {
    const fs::path plugins = o.plugins.empty() ? default_plugin_dir() : o.plugins;
    std::unique_ptr<generated_campaign> gen;
    manifest m;
    if (o.generated) {
      o.gen.ids = o.only;  // the selection itself: only these are built
      gen = std::make_unique<generated_campaign>(read_generated_config(plugins / "normcheck_generated.json"), o.gen,
                                                 o.out);
      m = gen->select();
    } else {
      m = read_manifest(plugins / "normcheck_mutants.json");
    }
    for (const std::string& id : o.only)
      if (std::none_of(m.mutants.begin(), m.mutants.end(), [&](const mutant_spec& s) { return s.id == id; })) {
        std::fprintf(stderr, "normcheck mutants: --only %s: no such mutant (--list shows the catalog)\n", id.c_str());
        return exit_usage;
      }
    if (o.list) {
      // the catalog, or the mutants --only names
      const auto listed = [&](const mutant_spec& s) {
        return o.only.empty() || std::find(o.only.begin(), o.only.end(), s.id) != o.only.end();
      };
      for (const mutant_spec& s : m.mutants)
        if (listed(s))
          std::printf("%-34s %-36s %s%s\n", s.id.c_str(), s.bug_class.c_str(), gen ? s.summary.c_str() : s.file.c_str(),
                      s.needs_gpu.empty() ? "" : "  [needs a GPU]");
      return exit_ok;
    }
    return campaign_runner(std::move(o), std::move(m), gen.get()).run();
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "normcheck mutants: %s\n", e.what());
    return exit_usage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "normcheck mutants: %s\n", e.what());
    return exit_setup;
  }
}

}  // namespace nc::mutants
