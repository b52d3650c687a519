// normcheck: the command line. Every verb is in every build and answers --help; the verbs,
// their synopses and their help live in one table (verbs, below), which `normcheck help` prints.
//
//   normcheck run | check | replay | gradcheck | fuzz | mutants | exercise | train | bench
//
// Exit codes: normcheck/harness/exit_code.hpp (0 pass, 1 property failure, 2 survived mutant,
// 64 usage, 70 harness error, 77 skipped). Environment: normcheck/environment.hpp.
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <limits>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "normcheck/environment.hpp"
#include "normcheck/harness/campaign.hpp"
#include "normcheck/harness/case_file.hpp"
#include "normcheck/harness/exit_code.hpp"
#include "normcheck/harness/failure.hpp"
#include "normcheck/harness/options.hpp"
#include "normcheck/harness/report.hpp"
#include "normcheck/harness/worker.hpp"
#include "normcheck/oracles/gradcheck.hpp"

#include "mutants.hpp"
#include "normcheck/train/train.hpp"

#if __has_include("bench/bench.hpp") && defined(NORMCHECK_HAVE_BENCH)
#include "bench/bench.hpp"
#define NORMCHECK_CLI_BENCH 1
#endif

namespace {

using namespace nc::harness;

// the statuses of normcheck/harness/exit_code.hpp under short names
constexpr int pass = nc::exit_pass, property_failed = nc::exit_property_failed, usage = nc::exit_usage,
              harness_error = nc::exit_harness_error, skipped = nc::exit_skipped;

using nc::skipped_error;
using nc::usage_error;

// NORMCHECK_ISOLATION and NORMCHECK_CALL_TIMEOUT, read once in main
isolation_options isolation;

// a folder the campaign writes into, created now and probed with a temporary file: a path that
// cannot be written fails before any case runs, not at the first counterexample
void check_writable_folder(const std::string& option, const std::string& folder) {
  const std::filesystem::path dir(folder.empty() ? "." : folder);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw usage_error(option + " '" + folder + "': cannot create the folder (" + ec.message() +
                      "): must be a folder normcheck can write");
  const std::filesystem::path probe = dir / (".normcheck-probe-" + std::to_string(getpid()));
  bool written = false;
  {
    std::ofstream out(probe);
    out << "probe\n";
    written = bool(out.flush());
  }
  std::filesystem::remove(probe, ec);
  if (!written) throw usage_error(option + " '" + folder + "': cannot write a file there: must be a folder normcheck can write");
}

// a report file: its folder must be writable and the path no folder
void check_writable_file(const std::string& option, const std::string& file) {
  const std::filesystem::path path(file);
  std::error_code ec;
  if (file.empty() || std::filesystem::is_directory(path, ec))
    throw usage_error(option + " '" + file + "': must be a file path, not a folder");
  check_writable_folder(option + " (its folder)", path.parent_path().string());
}

// the options of one verb (argv[2..]): the one option parser (normcheck/harness/options.hpp)
nc::options verb_options(int argc, char** argv, std::vector<std::string> valued, std::vector<std::string> flags = {}) {
  return nc::options(argc, argv, 2, std::string("normcheck ") + argv[1], std::move(valued), std::move(flags));
}

std::uint64_t parse_seed(const std::string& text) {
  return nc::parse_integer("--seed", text, 0, std::numeric_limits<std::uint64_t>::max(), "[0, 2^64 - 1]");
}

// --epsilon: a float that is finite and >= 0, written exactly as the kernel will see it
float parse_epsilon(const std::string& text) {
  char* end = nullptr;
  const float v = std::strtof(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v < 0)
    throw usage_error("--epsilon '" + text + "': must be a finite number >= 0");
  return v;
}

double parse_scale(const std::string& text) { return nc::parse_number("--scale", text, 0, 1000, true); }

// the kernel under test: the one resolver's rule (worker.hpp resolve_kernel), said on stdout
nc::kernel choose_kernel(const nc::options& o, const std::string& fallback_backend = "auto") {
  std::string said;
  nc::kernel k = resolve_kernel({o.get("kernel"), o.get("backend"), fallback_backend}, isolation, &said);
  std::printf("%s\n", said.c_str());
  return k;
}

// one line of progress on a terminal, refreshed at most five times a second: the property, its
// cases, its rate and whether it has failed (a failing property shrinks its counterexample)
class progress_display {
 public:
  progress_display() : tty_(isatty(STDERR_FILENO) != 0) {}

  void operator()(const progress& p, std::size_t index, std::size_t count) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(tty_ ? 200 : 30000) && p.cases_done < p.cases_planned) return;
    last_ = now;
    std::fprintf(stderr, "%s[%zu/%zu] %-52s %6lld/%lld cases  %7.1f cases/s%s%s", tty_ ? "\r" : "", index + 1, count,
                 p.p->name.c_str(), static_cast<long long>(p.cases_done), static_cast<long long>(p.cases_planned),
                 p.seconds > 0 ? double(p.cases_done) / p.seconds : 0.0,
                 p.shrinks > 0 ? ("  FAILED, shrinking: " + std::to_string(p.shrinks) + " steps").c_str() : "",
                 tty_ ? "\033[K" : "\n");
  }

  void done() const {
    if (tty_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  bool tty_;
  std::chrono::steady_clock::time_point last_{};
};

// the path of this program, for reproduce lines a shell can paste (normcheck is rarely on PATH)
std::string program_path() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("normcheck") : self.string();
}

// a path as an absolute one, so a reproduce line works from any folder
std::string absolute_path(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path a = std::filesystem::absolute(path, ec);
  return ec ? path : a.lexically_normal().string();
}

// a kernel spec with its file absolute: a plugin path, FILE.py[:FUNCTION]; python:MODULE:FUNCTION
// names no file and stays as it is
std::string absolute_kernel_spec(const std::string& spec) {
  if (spec.rfind("python:", 0) == 0) return spec;
  const std::size_t py = spec.find(".py:");
  if (py != std::string::npos) return absolute_path(spec.substr(0, py + 3)) + spec.substr(py + 3);
  return absolute_path(spec);
}

struct campaign_output {
  std::optional<std::string> report_path;  ///< the JSON report, when one is asked for
  std::optional<std::string> junit_path;   ///< the JUnit XML report, when one is asked for
  bool verbose = false;                    ///< every distribution table, not only a failing property's
  bool first_failure = false;              ///< stop after the first property that fails
  std::optional<std::size_t> jobs;         ///< properties at once (--jobs; default: the cores on simt, 1 elsewhere)
};

// properties at once: --jobs, else every core on simt (the properties are CPU work there) and
// one on a device, whose memory the far-row and tall-grid properties fill
std::size_t jobs_of(const campaign_output& output, const nc::kernel& k) {
  if (output.jobs) return *output.jobs;
  return k.device_memory() ? 1 : std::max(1u, std::thread::hardware_concurrency());
}

int run_campaign(const std::string& command, const std::vector<const property*>& selected, const nc::kernel& k,
                 campaign_options options, const campaign_output& output) {
  const std::optional<std::string>& report_path = output.report_path;
  check_writable_folder("--case-dir", options.case_dir);
  if (report_path) check_writable_file(command == "run" ? "--report" : "--json", *report_path);
  if (output.junit_path) check_writable_file("--junit", *output.junit_path);
  if (!available_isolated(k, isolation)) {
    std::fprintf(stderr, "normcheck: no device for the %s backend\n", k.backend().c_str());
    return skipped;
  }
  campaign_report report;
  report.command = command;
  report.started = utc_now();
  report.backend = k.backend();
  report.kernel_path = k.path();
  report.kernel_name = k.name();
  report.machine = options.machine = machine_line(k, isolation);
  std::printf("machine: %s\n", report.machine.c_str());
  report.seed = options.seed;
  report.scale = options.scale;
  const nc::capabilities domain = domain_of(k, options);
  report.capabilities = domain.describe();
  report.not_served = domain.not_served();
  if (!domain.full()) std::printf("capabilities: %s\n", report.capabilities.c_str());
  // the plan counts the properties that will run: one the kernel cannot serve is skipped
  std::int64_t total_planned = 0;
  std::size_t runnable = 0;
  for (const property* p : selected)
    if (skip_reason(*p, k, options).empty()) total_planned += planned_cases(*p, options), ++runnable;
  std::printf("seed: %llu (--seed %llu reruns these cases); %zu properties (%zu skipped on this kernel), %lld cases\n",
              static_cast<unsigned long long>(options.seed), static_cast<unsigned long long>(options.seed),
              runnable, selected.size() - runnable, static_cast<long long>(total_planned));
  std::fflush(stdout);

  // what a reproduce line repeats besides --property, --kernel and --seed
  std::string repeat;
  if (!options.variant.empty()) {
    repeat += " --variant " + options.variant;
    std::printf("variant: %s\n", options.variant.c_str());
  }
  if (options.epsilon) repeat += " --epsilon " + std::to_string(*options.epsilon);
  if (options.cases > 0) repeat += " --cases " + std::to_string(options.cases);
  progress_display display;
  std::vector<std::string> reproduce_lines;  // a failing property's reproduce and replay lines, for --junit
  const auto start = std::chrono::steady_clock::now();
  // properties run side by side (each in its own worker); their results print in the campaign's order
  nc::harness::property_pool pool(selected, k, options, isolation, jobs_of(output, k),
                                  [&](const progress& p, std::size_t i) { display(p, i, selected.size()); });
  for (std::size_t i = 0; i < selected.size(); ++i) {
    property_result r = pool.take(i);
    display.done();
    reproduce_lines.emplace_back();
    if (r.failed) {
      std::printf("\nFAIL %s after %lld cases\n%s\ncounterexample (after %lld shrinks):\n%s", r.name.c_str(),
                  static_cast<long long>(r.cases), r.failure.c_str(), static_cast<long long>(r.shrinks),
                  r.counterexample.c_str());
      std::string& lines = reproduce_lines.back();
      lines = "reproduce: " + r.reproduce + (r.reproduce.empty() ? "" : " ") + program_path() + " check all --property " +
              r.name + " --kernel " + absolute_kernel_spec(k.path()) + " --seed " + std::to_string(options.seed) + repeat;
      if (!r.case_file.empty()) lines += "\nreplay:    " + program_path() + " replay " + absolute_path(r.case_file);
      std::printf("%s\n", lines.c_str());
      if (!r.case_file_error.empty())
        std::printf("the case file could NOT be written (%s); the case in full:\n%s", r.case_file_error.c_str(),
                    r.unsaved_case.c_str());
    }
    // quiet by default: a distribution table where something is wrong with it, or with --verbose
    if (output.verbose || r.failed || r.distribution_short)
      std::printf("\ndistribution of %s:\n%s", r.name.c_str(), format_distribution(r).c_str());
    std::fflush(stdout);
    report.properties.push_back(std::move(r));
    if (output.first_failure && report.properties.back().failed && i + 1 < selected.size()) {
      std::printf("\nstopped at the first failure (--first-failure): the %zu properties after it are not run\n",
                  selected.size() - i - 1);
      break;
    }
    // a device fault poisons the CUDA context: every later call would fail with it, so the
    // properties after this one would only repeat this one's failure
    // (isolated: each property has a fresh worker and context, so only a device that no fresh
    // context can use stops the campaign)
    if (report.properties.back().failed && i + 1 < selected.size() && (k.device_memory() || !isolation.enabled) &&
        !available_isolated(k, isolation)) {
      std::printf("\nthe %s device is unusable after that failure: the %zu properties after it are not run\n",
                  k.backend().c_str(), selected.size() - i - 1);
      break;
    }
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("\n%s", format_summary(report).c_str());
  const int verdict = report.passed() ? pass : property_failed;
  if (report_path) {
    // a report that cannot be written is a harness error, but never hides a property's failure
    std::error_code ec;
    const std::filesystem::path path(*report_path);
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
    std::ofstream out(path);
    out << to_json(report);
    if (!out.flush()) {
      std::fprintf(stderr, "normcheck: cannot write the report '%s'%s\n", report_path->c_str(),
                   verdict == pass ? "" : " (the exit status is the property failure's)");
      return verdict == pass ? harness_error : verdict;
    }
    std::printf("report: %s\n", report_path->c_str());
  }
  if (output.junit_path) {
    std::ofstream out(*output.junit_path);
    out << to_junit(report, reproduce_lines);
    if (!out.flush()) {
      std::fprintf(stderr, "normcheck: cannot write the JUnit report '%s'%s\n", output.junit_path->c_str(),
                   verdict == pass ? "" : " (the exit status is the property failure's)");
      return verdict == pass ? harness_error : verdict;
    }
    std::printf("junit: %s\n", output.junit_path->c_str());
  }
  return verdict;
}

// "rmsnorm, add_rmsnorm, ...": every variant's name
std::string variant_names() {
  std::string out;
  for (const nc::variant_info& v : nc::variants) out += (out.empty() ? "" : ", ") + std::string(v.name);
  return out;
}

// report.json -> report.add_rmsnorm.json: one report per variant of --variant all
std::string variant_report_path(const std::string& path, const std::string& variant) {
  const std::filesystem::path p(path);
  return (p.parent_path() / (p.stem().string() + "." + variant + p.extension().string())).string();
}

// --jobs N: properties at once, each in its own worker
std::optional<std::size_t> jobs_option(const nc::options& o) {
  if (auto jobs = o.get("jobs")) return std::size_t(nc::parse_integer("--jobs", *jobs, 1, 256));
  return std::nullopt;
}

campaign_options options_of(const nc::options& o) {
  campaign_options options;
  options.seed = o.get("seed") ? parse_seed(*o.get("seed")) : seed_from_environment();
  options.scale = case_scale_from_environment();
  options.shrink_seconds = shrink_seconds_from_environment();
  options.case_dir = o.get("case-dir").value_or(default_case_dir());
  if (auto e = o.get("epsilon")) options.epsilon = parse_epsilon(*e);
  else options.epsilon = epsilon_from_environment();
  if (auto v = o.get("variant")) {
    if (*v != "all" && !nc::is_variant_name(*v))
      throw usage_error("--variant '" + *v + "': must be all or a variant `normcheck variants` lists (" + variant_names() + ")");
    options.variant = *v;
  } else {
    options.variant = variant_from_environment();
  }
  return options;
}

// --variant all: the campaign once per variant the kernel declares, the worst verdict
int run_each_variant(const std::string& command, const std::vector<const property*>& selected, const nc::kernel& k,
                     campaign_options options, const campaign_output& output) {
  if (options.variant != "all") return run_campaign(command, selected, k, options, output);
  int worst = pass;
  for (const std::string& v : declared_variants(k)) {
    options.variant = v;
    std::printf("\n== variant %s\n", v.c_str());
    std::fflush(stdout);
    campaign_output each = output;
    if (each.report_path) each.report_path = variant_report_path(*each.report_path, v);
    if (each.junit_path) each.junit_path = variant_report_path(*each.junit_path, v);
    const int verdict = run_campaign(command + " --variant " + v, selected, k, options, each);
    if (verdict != pass && (worst == pass || verdict == property_failed)) worst = verdict;
  }
  return worst;
}

int command_run(int argc, char** argv) {
  const nc::options o = verb_options(argc, argv, {"backend", "kernel", "seed", "scale", "report", "case-dir", "epsilon", "mutant-cases",
                       "mutant-jobs", "mutant-budget", "junit", "jobs"},
                      {"verbose", "mutant-every-property"});
  o.no_positional("normcheck run");
  campaign_options options = options_of(o);
  if (auto scale = o.get("scale")) options.scale = parse_scale(*scale);
  const nc::kernel k = choose_kernel(o);
  std::vector<const property*> all;
  for (const property& p : all_properties()) all.push_back(&p);
  const int properties = run_campaign(
      "run", all, k, options,
      {o.get("report").value_or(default_report_path()), o.get("junit"), o.has("verbose"), false, jobs_option(o)});
  // the mutation campaign seeds bugs into the shipped kernels: it says nothing about a
  // user's --kernel, and a suite that fails its own baseline has nothing to measure
  if (o.get("kernel") || properties != pass) return properties;
  std::printf("\nmutation campaign on %s\n", k.backend().c_str());
  std::fflush(stdout);
  std::vector<std::string> args{"mutants", "--backend", k.backend(), "--seed", std::to_string(options.seed),
                                "--cases", o.get("mutant-cases").value_or("200"),
                                "--jobs", o.get("mutant-jobs").value_or("2"), "--out", "reports/out/mutants"};
  if (auto budget = o.get("mutant-budget")) args.insert(args.end(), {"--budget", *budget});
  // a verdict for each mutant: its suite stops at the first property that kills it, unless
  // the report should list every property that does
  if (!o.has("mutant-every-property")) args.push_back("--first-kill");
  std::vector<char*> argv_mutants;
  for (std::string& a : args) argv_mutants.push_back(a.data());
  return nc::mutants::run_main(int(argv_mutants.size()), argv_mutants.data());
}

// `check --sanitizer TOOL`: the same command again under compute-sanitizer (PATH, else the CUDA
// toolkit's), with NORMCHECK_SANITIZER=TOOL telling the campaign it runs there (the page-guard
// property runs on a device only under memcheck); a hazard it reports fails the campaign (exit 1)
[[noreturn]] void exec_under_sanitizer(const std::string& tool, int argc, char** argv) {
  std::string sanitizer;
  std::stringstream dirs(std::string(std::getenv("PATH") ? std::getenv("PATH") : "") + ":/usr/local/cuda/bin");
  for (std::string dir; sanitizer.empty() && std::getline(dirs, dir, ':');)
    if (access((dir + "/compute-sanitizer").c_str(), X_OK) == 0) sanitizer = dir + "/compute-sanitizer";
  if (sanitizer.empty())
    throw usage_error("--sanitizer " + tool + ": no compute-sanitizer on PATH or in /usr/local/cuda/bin");
  std::vector<std::string> args{sanitizer, "--tool", tool, "--error-exitcode", "1", "--print-limit", "20",
                                program_path()};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--sanitizer") ++i;
    else if (!a.starts_with("--sanitizer=")) args.push_back(a);
  }
  setenv("NORMCHECK_SANITIZER", tool.c_str(), 1);
  std::vector<char*> exec_args;
  for (std::string& a : args) exec_args.push_back(a.data());
  exec_args.push_back(nullptr);
  std::fflush(stdout);
  execv(exec_args[0], exec_args.data());
  throw std::runtime_error("cannot run " + sanitizer + ": " + std::strerror(errno));
}

int command_check(int argc, char** argv) {
  const nc::options o = verb_options(argc, argv, {"backend", "kernel", "cases", "seed", "case-dir", "property", "skip", "json", "epsilon", "variant",
                       "junit", "jobs", "sanitizer", "first"},
                      {"verbose", "first-failure"});
  if (auto tool = o.get("sanitizer")) {
    if (*tool != "memcheck" && *tool != "racecheck" && *tool != "synccheck" && *tool != "initcheck")
      throw usage_error("--sanitizer '" + *tool + "': must be memcheck, racecheck, synccheck or initcheck");
    const char* under = std::getenv("NORMCHECK_SANITIZER");
    if (under == nullptr || *tool != under) exec_under_sanitizer(*tool, argc, argv);
  }
  if (o.positional().size() != 1) throw usage_error("check takes one group: forward, backward, gamma or all");
  const std::string group = o.positional()[0];
  if (group != "forward" && group != "backward" && group != "gamma" && group != "all")
    throw usage_error("check '" + group + "': the group must be forward, backward, gamma or all");
  const auto only = o.get("property");
  if (only && find_property(*only) == nullptr) throw usage_error("--property '" + *only + "': no property has that name");
  // --skip A,B: properties left out of the group (an expensive one run on its own elsewhere)
  std::vector<std::string> skipped;
  if (auto skip = o.get("skip")) {
    std::stringstream names(*skip);
    for (std::string name; std::getline(names, name, ',');) {
      if (find_property(name) == nullptr)
        throw usage_error("--skip '" + name + "': no property has that name (a comma-separated list of names)");
      skipped.push_back(name);
    }
  }
  campaign_options options = options_of(o);
  if (auto cases = o.get("cases"))
    options.cases = std::int64_t(nc::parse_integer("--cases", *cases, 1, std::numeric_limits<int>::max()));
  std::vector<const property*> selected;
  for (const property& p : all_properties())
    for (const std::string& g : p.groups)
      if ((group == "all" || g == group) && (!only || p.name == *only) &&
          std::find(skipped.begin(), skipped.end(), p.name) == skipped.end()) {
        selected.push_back(&p);
        break;
      }
  if (selected.empty() && only) throw usage_error("--property '" + *only + "' is not in the group '" + group + "', or --skip names it");
  if (selected.empty()) throw usage_error("--skip leaves no property of the group '" + group + "'");
  if (auto first = o.get("first")) {
    std::vector<const property*> ordered;
    for (const std::string& name : nc::split_list(*first)) {
      const auto at = std::find_if(selected.begin(), selected.end(), [&](const property* p) { return p->name == name; });
      if (at == selected.end())
        throw usage_error("--first '" + name + "': no property of the selection has that name (a comma-separated list)");
      ordered.push_back(*at);
      selected.erase(at);
    }
    selected.insert(selected.begin(), ordered.begin(), ordered.end());
  }
  const nc::kernel k = choose_kernel(o);
  return run_each_variant("check " + group, selected, k, options,
                          {o.get("json"), o.get("junit"), o.has("verbose"), o.has("first-failure"), jobs_option(o)});
}

// runs <origin>_replay (built beside normcheck) on a fuzz regression's raw input: its exit status
// is the verdict (0: the input runs clean now, 1: it still fails)
int replay_fuzz_input(const std::string& case_path, const std::string& origin, const std::string& note) {
  std::printf("case: %s\nnote: %s\n", case_path.c_str(), note.c_str());
  if (origin.empty() || origin.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") != std::string::npos)
    throw std::runtime_error("the case file's origin '" + origin + "' names no fuzz target");
  const std::string input = case_path.size() > 5 && case_path.ends_with(".case")
                                ? case_path.substr(0, case_path.size() - 5)
                                : std::string();
  if (input.empty() || !std::filesystem::exists(input))
    throw std::runtime_error("the raw fuzz input of '" + case_path + "' (the same path without .case) is missing");
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path program = (ec ? std::filesystem::path(".") : self.parent_path()) / (origin + "_replay");
  if (!std::filesystem::exists(program))
    throw std::runtime_error("the fuzz target's replay program '" + program.string() + "' is not built");
  std::printf("replayed by %s %s\n", program.c_str(), input.c_str());
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    execl(program.c_str(), program.c_str(), input.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child) throw std::runtime_error("cannot run '" + program.string() + "'");
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    std::printf("pass: the fuzz input runs clean on this build's kernel\n");
    return pass;
  }
  std::printf("FAIL: the fuzz target's replay %s\n",
              WIFEXITED(status) ? ("exited with status " + std::to_string(WEXITSTATUS(status))).c_str()
                                : ("died by signal " + std::to_string(WTERMSIG(status))).c_str());
  return property_failed;
}

int command_replay(int argc, char** argv) {
  const nc::options o = verb_options(argc, argv, {"backend", "kernel"});
  if (o.positional().size() != 1) throw usage_error("replay takes one case file");
  // a fuzz regression outside the case format (its fuzz.note says so; its values may not even
  // parse) is replayed by its fuzz target's replay program, on the raw input beside the file
  {
    std::ifstream in(o.positional()[0]);
    std::map<std::string, std::string> keys;
    for (std::string line; std::getline(in, line);)
      for (const char* key : {"fuzz.note", "origin", "property"})
        if (line.rfind(std::string(key) + " = ", 0) == 0) keys[key] = line.substr(std::strlen(key) + 3);
    if (!keys["fuzz.note"].empty() && find_property(keys["property"]) == nullptr)
      return replay_fuzz_input(o.positional()[0], keys["origin"], keys["fuzz.note"]);
  }
  const case_file file = read_case_file(o.positional()[0]);
  const auto meta = [&](const std::string& key) {
    const auto it = file.metadata.find(key);
    return it == file.metadata.end() ? std::string() : it->second;
  };
  const property* p = find_property(meta("property"));
  if (p == nullptr)
    throw usage_error("the case file names no known property ('property = " + meta("property") + "')");
  // the kernel: --kernel or --backend, else the file's kernel if it still loads, else its backend
  std::optional<nc::kernel> k;
  if (o.get("kernel") || o.get("backend")) k = choose_kernel(o);
  else if (!meta("kernel").empty() && (std::filesystem::exists(meta("kernel")) || nc::kernel::is_python_spec(meta("kernel"))))
    k = nc::kernel::load(meta("kernel"));  // a Python kernel's spec (python:MODULE:FUNCTION) is no file
  else k = choose_kernel(o, meta("backend").empty() ? "auto" : meta("backend"));
  if (!available_isolated(*k, isolation)) {
    std::fprintf(stderr, "normcheck: no device for the %s backend\n", k->backend().c_str());
    return skipped;
  }
  std::printf("case: %s\nproperty: %s\nkernel: %s (%s) from %s\n", describe(file.value).c_str(), p->name.c_str(),
              k->name().c_str(), k->backend().c_str(), k->path().c_str());
  if (!meta("failure").empty()) std::printf("recorded failure: %s\n", meta("failure").c_str());
  // the check, in a worker unless isolation is off: its verdict's exit code, then its text
  const auto check = [&]() -> std::string {
    observation obs;
    char text[64];
    try {
      p->check(*k, file.value, obs);
    } catch (const property_failure& f) {
      return char(property_failed) + ("FAIL: " + f.summary() + "\nfirst mismatching elements:\n" +
                                      (f.first().empty() ? "  (none: the failure is not about elements)\n"
                                                         : format_mismatches(f.first())));
    } catch (const nc::contract_error& e) {
      return char(property_failed) + std::string("FAIL: the kernel rejected the case: ") + e.what() + "\n";
    } catch (const nc::kernel_error& e) {
      return char(property_failed) + std::string("FAIL: the kernel failed: ") + e.what() + "\n";
    }
    std::snprintf(text, sizeof text, "%g", obs.max_error_in_bounds);
    return char(pass) + std::string("pass: the case holds on this kernel (max error ") + text + " bounds)\n";
  };
  std::string outcome;
  if (isolation.enabled) {
    const worker_result w = run_in_worker(
        [&](worker_link& link) {
          link.record_case(file.value);
          return check();
        },
        isolation);
    if (!w.payload) {
      std::printf("FAIL: %s\n", w.death->verdict().c_str());
      return property_failed;
    }
    outcome = *w.payload;
  } else {
    outcome = check();
  }
  std::fputs(outcome.c_str() + 1, stdout);
  return outcome[0];
}

// the training integration lives in harness/train (normcheck::train), which parses its own options
int command_train(int argc, char** argv) { return nc::train::run_main(argc - 1, argv + 1); }

// the finite-difference gradcheck of oracles/: the analytic backwards of the exact oracle and of
// the document's reference against central differences of the exact forward at 50 digits, then
// the negative controls, each wrong formula of the document's list, which it must catch
int command_gradcheck(int argc, char** argv) {
  const nc::options o = verb_options(argc, argv, {"seed"}, {"verbose"});
  o.no_positional("normcheck gradcheck");
  namespace oracle = nc::oracle;
  const std::uint64_t seed = o.get("seed") ? parse_seed(*o.get("seed")) : seed_from_environment();
  const std::vector<oracle::gradcheck_case> cases = oracle::gradcheck_cases(seed);
  std::printf("seed: %llu (--seed %llu reruns these cases); %zu cases; a correct backward agrees to %g, a wrong one "
              "must miss by more than %g\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed), cases.size(),
              oracle::gradcheck_tolerance, oracle::gradcheck_caught);
  struct formula {
    const char* name;
    oracle::backward_formula f;
    bool correct;
  };
  const std::vector<formula> formulas = {
      {"the exact oracle's backward", oracle::exact_backward_formula(), true},
      {"the reference's manual backward", oracle::reference_backward_formula(), true},
      {"wrong: r^2 in place of r^3", oracle::mistaken_backward_formula({.r_squared = true}), false},
      {"wrong: mean(u*x) over BLOCK, not N", oracle::mistaken_backward_formula({.mean_over_block = true}), false},
      {"wrong: dgamma averaged over rows", oracle::mistaken_backward_formula({.dgamma_averaged = true}), false},
      {"wrong: epsilon dropped from r", oracle::mistaken_backward_formula({.epsilon_dropped = true}), false},
      {"wrong: second term of dx flipped", oracle::mistaken_backward_formula({.second_term_flipped = true}), false},
  };
  std::printf("%-38s %14s %14s  verdict\n", "backward", "worst dx", "worst dgamma");
  bool ok = true;
  // one row of the table: a formula's worst disagreement over the cases, and its verdict
  const auto judge = [&](const char* name, bool correct, const auto& check_case) {
    double dx = 0, dgamma = 0;
    for (const oracle::gradcheck_case& c : cases) {
      const oracle::gradcheck_report r = check_case(c);
      if (o.has("verbose"))
        std::printf("  %-36s %-32s %-13s dx %.3g  dgamma %.3g\n", name, r.name.c_str(),
                    r.mode == oracle::gradcheck_mode::full_jacobian ? "full Jacobian" : "projections",
                    r.dx_disagreement, r.dgamma_disagreement);
      dx = std::max(dx, r.dx_disagreement), dgamma = std::max(dgamma, r.dgamma_disagreement);
    }
    const double worst = std::max(dx, dgamma);
    const bool holds = correct ? worst <= oracle::gradcheck_tolerance : worst > oracle::gradcheck_caught;
    ok &= holds;
    std::printf("%-38s %14.3g %14.3g  %s\n", name, dx, dgamma,
                correct ? (holds ? "agrees" : "FAILED: disagrees") : (holds ? "caught" : "FAILED: not caught"));
  };
  for (const formula& f : formulas)
    judge(f.name, f.correct, [&](const oracle::gradcheck_case& c) { return oracle::gradcheck(c, f.f); });
  // the variants: the residual add and Gemma's offset, each correct and with its published mistakes
  struct variant_formula {
    const char* name;
    oracle::variant_backward_formula f;
    oracle::variant_of_check variant;
    bool correct;
  };
  const std::vector<variant_formula> variant_formulas = {
      {"add_rmsnorm", oracle::variant_backward(), {true, 0}, true},
      {"gemma_rmsnorm", oracle::variant_backward(), {false, 1}, true},
      {"add_gemma_rmsnorm", oracle::variant_backward(), {true, 1}, true},
      {"wrong: residual gradient dropped", oracle::variant_backward({.residual_gradient_dropped = true}), {true, 0}, false},
      {"wrong: offset dropped from dx", oracle::variant_backward({.offset_dropped = true}), {false, 1}, false},
      {"wrong: offset applied to dgamma", oracle::variant_backward({.offset_in_dgamma = true}), {false, 1}, false},
      {"wrong: x normalized, not x + residual", oracle::variant_backward({.unsummed_h = true}), {true, 0}, false},
  };
  for (const variant_formula& f : variant_formulas)
    judge(f.name, f.correct,
          [&](const oracle::gradcheck_case& c) { return oracle::variant_gradcheck(c, f.variant, f.f, {.seed = seed}); });
  std::printf("%s\n", ok ? "every correct backward agrees and every wrong one is caught"
                         : "FAILED: the gradcheck or the oracle's backward is wrong (an oracle bug)");
  return ok ? pass : property_failed;
}

// `normcheck fuzz`: every fuzz target built beside this program (<target>_replay) over its seed
// corpus and its regressions, on this build's kernel; the nightly campaign that grows them is
// corpus/nightly.sh
int command_fuzz(int argc, char** argv) {
  const nc::options o = verb_options(argc, argv, {"corpus", "target"});
  o.no_positional("normcheck fuzz");
  namespace fs = std::filesystem;
  const fs::path corpus = o.get("corpus").value_or("corpus");
  std::error_code ec;
  if (!fs::is_directory(corpus, ec))
    throw usage_error("--corpus '" + corpus.string() + "': must be the corpus folder (corpus/ of the repository)");
  const fs::path here = fs::path(program_path()).parent_path();
  std::vector<std::string> targets;
  for (const auto& entry : fs::directory_iterator(here, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with("_fuzzer_replay")) targets.push_back(name.substr(0, name.size() - 7));
  }
  std::sort(targets.begin(), targets.end());
  if (auto only = o.get("target")) {
    if (std::find(targets.begin(), targets.end(), *only) == targets.end())
      throw usage_error("--target '" + *only + "': no such fuzz target is built beside " + program_path());
    targets = {*only};
  }
  if (targets.empty()) throw std::runtime_error("no fuzz target's replay program is built beside " + program_path());
  int verdict = pass;
  for (const std::string& t : targets) {
    std::vector<std::string> args{(here / (t + "_replay")).string()};
    for (const fs::path& dir : {corpus / t, corpus / "regressions" / t})
      if (fs::is_directory(dir, ec)) args.push_back(dir.string());
    if (args.size() == 1) throw usage_error("--corpus '" + corpus.string() + "' holds no folder " + t);
    std::printf("fuzz target %s:", t.c_str());
    for (std::size_t i = 1; i < args.size(); ++i) std::printf(" %s", args[i].c_str());
    std::printf("\n");
    std::fflush(stdout);
    std::vector<char*> exec_args;
    for (std::string& a : args) exec_args.push_back(a.data());
    exec_args.push_back(nullptr);
    const pid_t child = fork();
    if (child == 0) {
      execv(exec_args[0], exec_args.data());
      _exit(127);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child) throw std::runtime_error("cannot run '" + args[0] + "'");
    const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    std::printf("%s: %s\n", t.c_str(), clean ? "every input runs clean" : "FAILED");
    if (!clean) verdict = property_failed;
  }
  return verdict;
}

#ifndef NORMCHECK_CLI_BENCH
const char* bench_help =
    "  The benchmark: the document's protocol (CUDA events around whole calls, 20 warm-up calls, median\n"
    "  of 50 samples of 20 calls), GB/s and % of the device copy measured in the same run. It needs a\n"
    "  cuda build (cmake --preset cuda) and a GPU; elsewhere it exits 77 (skipped).\n";
#endif

int command_bench(int argc, char** argv) {
#ifdef NORMCHECK_CLI_BENCH
  return nc::bench::run_main(argc - 2, argv + 2);
#else
  for (int i = 2; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::printf("usage: normcheck bench [options]\n%s", bench_help);
      return pass;
    }
  std::fprintf(stderr, "normcheck bench: needs a cuda build and a GPU (this build has no cuda backend)\n");
  return skipped;
#endif
}

int command_variants(int argc, char** argv) {
  const nc::options o = verb_options(argc, argv, {"backend", "kernel"}, {});
  o.no_positional("normcheck variants");
  const nc::kernel k = choose_kernel(o);
  std::printf("kernel: %s (%s)\n", k.name().c_str(), absolute_kernel_spec(k.path()).c_str());
  for (const nc::variant_info& v : nc::variants) {
    std::string declared;
    for (const nc_operation& op : k.capabilities().operations)
      if (nc::variant_of(op) == v.name) declared += std::string(declared.empty() ? "" : "; ") + nc::describe_operation(op);
    std::printf("\n%-18s %s\n%-18s ships in: %s\n%-18s %s\n", std::string(v.name).c_str(), std::string(v.formula).c_str(), "",
                std::string(v.stacks).c_str(), "", declared.empty() ? "not declared by this kernel" : ("declared: " + declared).c_str());
  }
  return pass;
}

int command_mutants(int argc, char** argv) { return nc::mutants::run_main(argc - 1, argv + 1); }
int command_exercise(int argc, char** argv) { return nc::mutants::exercise_main(argc - 1, argv + 1); }

// the verbs: name, synopsis, help (null: the verb answers --help itself), what runs it
struct verb {
  const char* name;
  const char* synopsis;
  const char* help;
  int (*run)(int argc, char** argv);
};

const verb verbs[] = {
    {"run", "normcheck run [--backend auto|cuda|simt] [--kernel PATH] [--seed S] [--scale X] [--report FILE] ...",
     "  [--case-dir DIR] [--epsilon E] [--junit FILE] [--mutant-cases N] [--mutant-jobs N] [--mutant-budget S]\n"
     "  [--mutant-every-property] [--jobs N] [--verbose]\n"
     "  The main job: every property on the kernel, then (for the shipped kernels) the mutation campaign,\n"
     "  each mutant's suite stopping at its first kill (--mutant-every-property: every property runs).\n"
     "  --jobs N: properties at once, each in its own worker (default: every core on simt, 1 on a GPU).\n"
     "  --report defaults to reports/out/run-<UTC time>.json; --scale multiplies every case count.\n",
     command_run},
    {"check", "normcheck check forward|backward|gamma|all [--backend auto|cuda|simt] [--kernel PATH] ...",
     "  [--cases N] [--seed S] [--case-dir DIR] [--property NAME] [--skip NAME,...] [--json FILE] [--epsilon E]\n"
     "  [--variant NAME|all] [--junit FILE] [--jobs N] [--verbose] [--first-failure] [--first NAME,...]\n"
     "  [--sanitizer TOOL]\n"
     "  The properties of one group. Cases are drawn inside what the kernel declares (abi.h); the summary\n"
     "  lists what was not exercised. --epsilon: every case with this epsilon (a kernel with one built in).\n"
     "  --variant NAME: every case of that variant (normcheck variants lists them; the kernel must declare\n"
     "  it); the properties of the plain operator only are then not exercised. --variant all: a campaign\n"
     "  per variant the kernel declares (a --json FILE gets the variant's name before its extension).\n"
     "  --junit FILE: JUnit XML for CI systems (a testcase per property; a failure carries the\n"
     "  counterexample and the reproduce line).\n"
     "  --verbose prints every property's distribution table (by default only a failing one's).\n"
     "  --first-failure stops after the first property that fails (the mutation runner's --first-kill).\n"
     "  --first NAME,...: these properties run first, in that order, the rest in the campaign's (the\n"
     "  mutation runner names a mutant's expected killer, so a suite that stops at its first failure\n"
     "  stops early; the verdicts are the same in any order).\n"
     "  --jobs N: properties at once, each in its own worker (default: every core on simt, 1 on a GPU);\n"
     "  their results print in the campaign's order.\n"
     "  --sanitizer memcheck|racecheck|synccheck|initcheck: the campaign under compute-sanitizer (a cuda\n"
     "  kernel); a hazard it reports fails it (exit 1). Under memcheck every_access_stays_inside_the_operands\n"
     "  runs on a device too (its operands between unallocated guard pages).\n",
     command_check},
    {"variants", "normcheck variants [--kernel PATH | --backend auto|cuda|simt]",
     "  Lists the variants (abi.h \"Variants\"): each one's formula, where it ships, and the operations the\n"
     "  kernel declares of it (the shipped kernels by default).\n",
     command_variants},
    {"replay", "normcheck replay FILE [--backend auto|cuda|simt] [--kernel PATH]",
     "  Re-runs a case file (a shrunk counterexample or a fuzz regression) and shows the first\n"
     "  mismatching elements; exit 0 when the case holds, 1 when it still fails.\n",
     command_replay},
    {"gradcheck", "normcheck gradcheck [--seed S] [--verbose]",
     "  The oracles' finite-difference gradcheck at 50 digits: the exact oracle's and the reference's\n"
     "  analytic backward against central differences of the exact forward, then the wrong formulas\n"
     "  (r^2 for r^3, mean over BLOCK, dgamma averaged, epsilon dropped, a flipped sign), each of\n"
     "  which it must catch. --verbose prints every case.\n",
     command_gradcheck},
    {"fuzz", "normcheck fuzz [--corpus DIR] [--target NAME]",
     "  Replays every fuzz target built beside normcheck over its seed corpus and its regressions\n"
     "  (DIR/<target>, DIR/regressions/<target>; DIR defaults to ./corpus). The nightly campaign that\n"
     "  fuzzes for a budget and grows the corpora is corpus/nightly.sh (corpus/README.md).\n",
     command_fuzz},
    {"mutants", "normcheck mutants [--backend simt|cuda] [--only ID] [--budget S] [--cases N] [--seed S] [--out DIR]",
     nullptr, command_mutants},
    {"exercise", "normcheck exercise [--backend simt|cuda]   (the document's divide-by-BLOCK exercise)", nullptr,
     command_exercise},
    {"train", "normcheck train [--kernel PATH | --backend B] [--dtype fp32|fp16|bf16] [--steps 100] ...", nullptr,
     command_train},
    {"bench", "normcheck bench [options]   (a cuda build on a GPU: the document's benchmark protocol)", nullptr,
     command_bench},
};

std::string usage_text() {
  std::string out = "usage:\n";
  for (const verb& v : verbs) out += "  " + std::string(v.synopsis) + "\n";
  out += "normcheck VERB --help says more of a verb.\n";
  out += std::string("exit codes: ") + nc::exit_codes_text + "\n";
  out += "kernel calls run in a worker process under a watchdog (a crash, exit() or hang is a failure of the\n"
         "property that made the call).\n";
  out += "environment:\n" + nc::describe_environment();
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  // A case places its operands in a fresh arena of up to some MiB and frees it after: glibc
  // would map and unmap each one (and return the heap's top to the system), so every case paid
  // page faults and zeroing (a third of a campaign's time on a host kernel). Freed memory stays
  // in the heap for the next case instead; the workers inherit this through fork.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  if (argc < 2) {
    std::fputs(usage_text().c_str(), stderr);
    return usage;
  }
  const std::string command = argv[1];
  try {
    if (command == "help" || command == "--help" || command == "-h") {
      std::fputs(usage_text().c_str(), stdout);
      return pass;
    }
    for (const verb& v : verbs) {
      if (command != v.name) continue;
      if (v.help != nullptr)
        for (int i = 2; i < argc; ++i)
          if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
            std::printf("usage: %s\n%s", v.synopsis, v.help);
            return pass;
          }
      isolation = isolation_from_environment();
      return v.run(argc, argv);
    }
    throw usage_error("unknown command '" + command + "'");
  } catch (const usage_error& e) {
    std::fprintf(stderr, "normcheck: %s\n%s", e.what(), usage_text().c_str());
    return usage;
  } catch (const skipped_error& e) {
    std::fprintf(stderr, "normcheck: %s\n", e.what());
    return skipped;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "normcheck: %s\n", e.what());
    return usage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "normcheck: %s\n", e.what());
    return harness_error;
  }
}
