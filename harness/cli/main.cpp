// normcheck: the command line.
//
//   normcheck run    [--backend auto|cuda|simt] [--kernel PATH] [--seed S] [--scale X]
//                    [--report FILE] [--case-dir DIR]
//   normcheck check  forward|backward|gamma|all [--backend …] [--kernel PATH] [--cases N]
//                    [--seed S] [--case-dir DIR] [--property NAME] [--json FILE]
//   normcheck replay FILE [--backend …] [--kernel PATH]
//   normcheck bench  …            (the benchmark, in builds with the cuda backend)
//
// Exit codes: 0 every property passed, 1 a property failed, 2 a mutant survived (the mutation
// campaign's), 64 a usage error, 70 the harness could not do its job (a plugin that does not
// load, an unreadable case file), 77 the backend asked for has no device.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <limits>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "normcheck/harness/campaign.hpp"
#include "normcheck/harness/case_file.hpp"
#include "normcheck/harness/failure.hpp"
#include "normcheck/harness/report.hpp"
#include "normcheck/harness/worker.hpp"

#include "mutants.hpp"
#include "normcheck/train/train.hpp"

#if __has_include("bench/bench.hpp") && defined(NORMCHECK_HAVE_BENCH)
#include "bench/bench.hpp"
#define NORMCHECK_CLI_BENCH 1
#endif

namespace {

using namespace nc::harness;

enum exit_code { pass = 0, property_failed = 1, mutant_survived = 2, usage = 64, harness_error = 70, no_device = 77 };

const char* usage_text =
    "usage:\n"
    "  normcheck run    [--backend auto|cuda|simt] [--kernel PATH] [--seed S] [--scale X]\n"
    "                   [--report FILE] [--case-dir DIR] [--epsilon E] [--mutant-cases N]\n"
    "                   [--mutant-jobs N] [--mutant-budget S]\n"
    "                   (the property campaign, then the mutation campaign on the shipped kernels)\n"
    "  normcheck check  forward|backward|gamma|all [--backend auto|cuda|simt] [--kernel PATH]\n"
    "                   [--cases N] [--seed S] [--case-dir DIR] [--property NAME] [--json FILE]\n"
    "                   [--epsilon E]   (every case with this epsilon: a kernel with one built in)\n"
    "  --kernel PATH defaults to $NORMCHECK_KERNEL when set; cases are drawn inside the capabilities\n"
    "  the plugin declares (abi.h), and the summary lists what was not exercised\n"
    "  normcheck replay FILE [--backend auto|cuda|simt] [--kernel PATH]\n"
    "  normcheck mutants [--backend simt|cuda] [--only ID] [--budget S] [--cases N] [--seed S] [--out DIR]\n"
    "  normcheck exercise   (the document's divide-by-BLOCK exercise at N = 257 and 256)\n"
    "  normcheck train  [--kernel PATH | --backend B] [--dtype fp32|fp16|bf16] [--steps 100] [--batch 32]\n"
    "                   [--hidden 257] [--seed S] [--out DIR]   (the document's training integration)\n"
#ifdef NORMCHECK_CLI_BENCH
    "  normcheck bench  [options]   (normcheck bench --help)\n"
#endif
    "exit codes: 0 pass, 1 property failure, 2 survived mutant, 64 usage error, 70 harness error, 77 no device\n"
    "kernel calls run in a worker process under a watchdog (a crash, exit() or hang is a failure of the\n"
    "property); NORMCHECK_CALL_TIMEOUT=S bounds a case (default 60 s), NORMCHECK_ISOLATION=off runs them\n"
    "in-process for debugging\n";

struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

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

// --name value options, each allowed once, only those a command takes
struct options_map {
  std::map<std::string, std::string> values;
  std::vector<std::string> positional;

  options_map(int argc, char** argv, int first, const std::vector<std::string>& allowed) {
    for (int i = first; i < argc; ++i) {
      const std::string a = argv[i];
      if (a.rfind("--", 0) != 0) {
        positional.push_back(a);
        continue;
      }
      bool known = false;
      for (const std::string& name : allowed) known |= a == "--" + name;
      if (!known) throw usage_error("unknown option '" + a + "' for this command");
      if (i + 1 >= argc) throw usage_error("option '" + a + "' needs a value");
      if (!values.emplace(a.substr(2), argv[++i]).second) throw usage_error("option '" + a + "' given twice");
    }
  }

  std::optional<std::string> get(const std::string& name) const {
    const auto it = values.find(name);
    return it == values.end() ? std::nullopt : std::optional(it->second);
  }
};

std::uint64_t parse_unsigned(const std::string& option, const std::string& text, bool positive) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])) || *end != '\0' || errno == ERANGE ||
      (positive && v == 0) || (positive && v > std::uint64_t(std::numeric_limits<std::int64_t>::max())))
    throw usage_error("--" + option + " '" + text + "': must be a " + (positive ? "positive" : "non-negative") +
                      " integer");
  return v;
}

// --epsilon: a float that is finite and >= 0, written exactly as the kernel will see it
float parse_epsilon(const std::string& text) {
  char* end = nullptr;
  const float v = std::strtof(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v < 0)
    throw usage_error("--epsilon '" + text + "': must be a finite number >= 0");
  return v;
}

double parse_scale(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v > 0) || v > 1000)
    throw usage_error("--scale '" + text + "': must be a number in (0, 1000]");
  return v;
}

// the kernel: --kernel PATH, else the shipped plugin of --backend (auto by default)
nc::kernel choose_kernel(const options_map& o, const std::string& fallback_backend = "auto") {
  const std::string backend = o.get("backend").value_or(fallback_backend);
  if (backend != "auto" && backend != "cuda" && backend != "simt")
    throw usage_error("--backend '" + backend + "': must be auto, cuda or simt");
  // --kernel, else NORMCHECK_KERNEL (unless --backend asks for a shipped plugin)
  std::optional<std::string> path = o.get("kernel");
  const char* from_environment = std::getenv("NORMCHECK_KERNEL");
  if (!path && !o.get("backend") && from_environment && *from_environment) path = from_environment;
  if (path) {
    if (o.get("backend") && o.get("kernel"))
      throw usage_error("--kernel and --backend exclude each other: a plugin has its backend");
    nc::kernel k = nc::kernel::load(*path);
    std::printf("kernel: %s (%s, backend %s, ABI version %u)%s\n", k.path().c_str(), k.name().c_str(),
                k.backend().c_str(), k.abi_version(), o.get("kernel") ? "" : " from NORMCHECK_KERNEL");
    return k;
  }
  std::string why_not;
  // the device is probed in a worker: a CUDA context made here would not survive the fork
  nc::kernel k = select_backend_isolated(backend, isolation, &why_not);
  std::printf("backend: %s (%s from %s)%s%s\n", k.backend().c_str(), k.name().c_str(), k.path().c_str(),
              backend == "auto" ? ", chosen by --backend auto" : "",
              why_not.empty() ? "" : ("; not cuda: " + why_not).c_str());
  return k;
}

// one line of progress on a terminal, refreshed at most five times a second
class progress_display {
 public:
  progress_display() : tty_(isatty(STDERR_FILENO) != 0) {}

  void operator()(const progress& p, std::size_t index, std::size_t count, std::int64_t failures) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(tty_ ? 200 : 30000) && p.cases_done < p.cases_planned) return;
    last_ = now;
    std::fprintf(stderr, "%s[%zu/%zu] %-52s %6lld/%lld cases  %7.1f cases/s  %lld failure(s)%s%s", tty_ ? "\r" : "",
                 index + 1, count, p.p->name.c_str(), static_cast<long long>(p.cases_done),
                 static_cast<long long>(p.cases_planned), p.seconds > 0 ? double(p.cases_done) / p.seconds : 0.0,
                 static_cast<long long>(failures),
                 p.shrinks > 0 ? ("  shrinking: " + std::to_string(p.shrinks) + " steps").c_str() : "",
                 tty_ ? "\033[K" : "\n");
  }

  void done() const {
    if (tty_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  bool tty_;
  std::chrono::steady_clock::time_point last_{};
};

int run_campaign(const std::string& command, const std::vector<const property*>& selected, const nc::kernel& k,
                 campaign_options options, const std::optional<std::string>& report_path, bool show_distributions) {
  check_writable_folder("--case-dir", options.case_dir);
  if (report_path) check_writable_file(command == "run" ? "--report" : "--json", *report_path);
  if (!available_isolated(k, isolation)) {
    std::fprintf(stderr, "normcheck: no device for the %s backend\n", k.backend().c_str());
    return no_device;
  }
  campaign_report report;
  report.command = command;
  report.started = utc_now();
  report.backend = k.backend();
  report.kernel_path = k.path();
  report.kernel_name = k.name();
  report.seed = options.seed;
  report.scale = options.scale;
  const nc::capabilities domain = domain_of(k, options);
  report.capabilities = domain.describe();
  report.not_served = domain.not_served();
  if (!domain.full()) std::printf("capabilities: %s\n", report.capabilities.c_str());
  std::int64_t total_planned = 0;
  for (const property* p : selected) total_planned += planned_cases(*p, options);
  std::printf("seed: %llu (--seed %llu reruns these cases); %zu properties, %lld cases\n",
              static_cast<unsigned long long>(options.seed), static_cast<unsigned long long>(options.seed),
              selected.size(), static_cast<long long>(total_planned));
  std::fflush(stdout);

  progress_display display;
  std::int64_t failures = 0;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < selected.size(); ++i) {
    options.on_progress = [&](const progress& p) { display(p, i, selected.size(), failures); };
    property_result r = run_property_isolated(*selected[i], k, options, isolation);
    display.done();
    failures += r.failed;
    if (r.failed) {
      std::printf("\nFAIL %s after %lld cases\n%s\ncounterexample (after %lld shrinks):\n%s", r.name.c_str(),
                  static_cast<long long>(r.cases), r.failure.c_str(), static_cast<long long>(r.shrinks),
                  r.counterexample.c_str());
      std::printf("reproduce: %s%snormcheck check all --property %s --kernel %s --seed %llu\n", r.reproduce.c_str(),
                  r.reproduce.empty() ? "" : " ", r.name.c_str(), k.path().c_str(),
                  static_cast<unsigned long long>(options.seed));
      if (!r.case_file.empty()) std::printf("replay:    normcheck replay %s\n", r.case_file.c_str());
      if (!r.case_file_error.empty())
        std::printf("the case file could NOT be written (%s); the case in full:\n%s", r.case_file_error.c_str(),
                    r.unsaved_case.c_str());
    }
    if (!r.failed && (show_distributions || r.distribution_short))
      std::printf("\ndistribution of %s:\n%s", r.name.c_str(), format_distribution(r).c_str());
    std::fflush(stdout);
    report.properties.push_back(std::move(r));
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
  if (report_path) {
    const std::filesystem::path path(*report_path);
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
    std::ofstream out(path);
    out << to_json(report);
    if (!out) throw std::runtime_error("cannot write the report '" + *report_path + "'");
    std::printf("report: %s\n", report_path->c_str());
  }
  return report.passed() ? pass : property_failed;
}

campaign_options options_of(const options_map& o) {
  campaign_options options;
  options.seed = o.get("seed") ? parse_unsigned("seed", *o.get("seed"), false) : seed_from_environment();
  options.scale = case_scale_from_environment();
  options.shrink_seconds = shrink_seconds_from_environment();
  options.case_dir = o.get("case-dir").value_or(default_case_dir());
  if (auto e = o.get("epsilon")) options.epsilon = parse_epsilon(*e);
  return options;
}

int command_run(int argc, char** argv) {
  const options_map o(argc, argv, 2, {"backend", "kernel", "seed", "scale", "report", "case-dir", "epsilon",
                                      "mutant-cases", "mutant-jobs", "mutant-budget"});
  if (!o.positional.empty()) throw usage_error("run takes no argument '" + o.positional[0] + "'");
  campaign_options options = options_of(o);
  if (auto scale = o.get("scale")) options.scale = parse_scale(*scale);
  const nc::kernel k = choose_kernel(o);
  std::vector<const property*> all;
  for (const property& p : all_properties()) all.push_back(&p);
  const int properties = run_campaign("run", all, k, options, o.get("report").value_or(default_report_path()), false);
  // the mutation campaign seeds bugs into the shipped kernels: it says nothing about a
  // user's --kernel, and a suite that fails its own baseline has nothing to measure
  if (o.get("kernel") || properties != pass) return properties;
  std::printf("\nmutation campaign on %s\n", k.backend().c_str());
  std::fflush(stdout);
  std::vector<std::string> args{"mutants", "--backend", k.backend(), "--seed", std::to_string(options.seed),
                                "--cases", o.get("mutant-cases").value_or("200"),
                                "--jobs", o.get("mutant-jobs").value_or("2"), "--out", "reports/out/mutants"};
  if (auto budget = o.get("mutant-budget")) args.insert(args.end(), {"--budget", *budget});
  std::vector<char*> argv_mutants;
  for (std::string& a : args) argv_mutants.push_back(a.data());
  return nc::mutants::run_main(int(argv_mutants.size()), argv_mutants.data());
}

int command_check(int argc, char** argv) {
  const options_map o(argc, argv, 2,
                      {"backend", "kernel", "cases", "seed", "case-dir", "property", "json", "epsilon"});
  if (o.positional.size() != 1) throw usage_error("check takes one group: forward, backward, gamma or all");
  const std::string group = o.positional[0];
  if (group != "forward" && group != "backward" && group != "gamma" && group != "all")
    throw usage_error("check '" + group + "': the group must be forward, backward, gamma or all");
  const auto only = o.get("property");
  if (only && find_property(*only) == nullptr) throw usage_error("--property '" + *only + "': no property has that name");
  campaign_options options = options_of(o);
  if (auto cases = o.get("cases")) {
    options.cases = std::int64_t(parse_unsigned("cases", *cases, true));
    if (options.cases > std::numeric_limits<int>::max())
      throw usage_error("--cases '" + *cases + "': must be at most " + std::to_string(std::numeric_limits<int>::max()));
  }
  std::vector<const property*> selected;
  for (const property& p : all_properties())
    for (const std::string& g : p.groups)
      if ((group == "all" || g == group) && (!only || p.name == *only)) {
        selected.push_back(&p);
        break;
      }
  if (selected.empty()) throw usage_error("--property '" + *only + "' is not in the group '" + group + "'");
  const nc::kernel k = choose_kernel(o);
  return run_campaign("check " + group, selected, k, options, o.get("json"), true);
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
  const options_map o(argc, argv, 2, {"backend", "kernel"});
  if (o.positional.size() != 1) throw usage_error("replay takes one case file");
  // a fuzz regression outside the case format (its fuzz.note says so; its values may not even
  // parse) is replayed by its fuzz target's replay program, on the raw input beside the file
  {
    std::ifstream in(o.positional[0]);
    std::map<std::string, std::string> keys;
    for (std::string line; std::getline(in, line);)
      for (const char* key : {"fuzz.note", "origin", "property"})
        if (line.rfind(std::string(key) + " = ", 0) == 0) keys[key] = line.substr(std::strlen(key) + 3);
    if (!keys["fuzz.note"].empty() && find_property(keys["property"]) == nullptr)
      return replay_fuzz_input(o.positional[0], keys["origin"], keys["fuzz.note"]);
  }
  const case_file file = read_case_file(o.positional[0]);
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
    return no_device;
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

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(usage_text, stderr);
    return usage;
  }
  const std::string command = argv[1];
  try {
    isolation = isolation_from_environment();
    if (command == "run") return command_run(argc, argv);
    if (command == "check") return command_check(argc, argv);
    if (command == "replay") return command_replay(argc, argv);
    if (command == "mutants") return nc::mutants::run_main(argc - 1, argv + 1);
    if (command == "exercise") return nc::mutants::exercise_main(argc - 1, argv + 1);
    if (command == "train") return command_train(argc, argv);
#ifdef NORMCHECK_CLI_BENCH
    if (command == "bench") return nc::bench::run_main(argc - 2, argv + 2);
#endif
    if (command == "help" || command == "--help" || command == "-h") {
      std::fputs(usage_text, stdout);
      return pass;
    }
    throw usage_error("unknown command '" + command + "'");
  } catch (const usage_error& e) {
    std::fprintf(stderr, "normcheck: %s\n%s", e.what(), usage_text);
    return usage;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "normcheck: %s\n", e.what());
    return usage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "normcheck: %s\n", e.what());
    return harness_error;
  }
}
