// Isolation of kernel calls: a plugin under test runs in a forked worker process, so a
// segfault, abort, exit() of any code, or a hang inside it is a finding of the property that
// made the call, never the death of the harness.
//
// The parent forks one worker per property (and per replay, per device probe). Before each
// case the worker records the case in a shared memory region the parent mapped before the
// fork, and stamps a heartbeat there, as it does around every call into the plugin, whose name
// it records too (kernel.hpp's call_observer); progress and the final result travel over a
// pipe. When the worker dies before sending its result, or a plugin call (or the harness's work
// between two stamps) runs past NORMCHECK_CALL_TIMEOUT seconds (the watchdog then kills the
// worker's process group), the parent turns the case in flight into the property's
// counterexample and case file, names the call in flight, and goes on with a fresh worker.
//
// CUDA: a context does not survive fork, so the parent never initializes the device; every
// call that touches it, kernel::available() included, happens in a worker (a fresh context
// each). NORMCHECK_ISOLATION=off runs everything in-process, as before, for debugging.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <exception>
#include <thread>
#include <variant>
#include <vector>

#include "normcheck/harness/campaign.hpp"
#include "normcheck/harness/case.hpp"
#include "normcheck/kernel.hpp"

namespace nc::harness {

struct isolation_options {
  bool enabled = true;       ///< NORMCHECK_ISOLATION: on (default) or off
  double call_timeout = 60;  ///< NORMCHECK_CALL_TIMEOUT: seconds one plugin call may take in a worker
  /// the shared region that holds the case in flight; a larger case is recorded by its summary only
  std::size_t record_bytes = std::size_t(512) << 20;
};

/// NORMCHECK_ISOLATION (on | off, default on) and NORMCHECK_CALL_TIMEOUT (a number of seconds
/// > 0, default 60); throws std::invalid_argument naming the variable and the rule
isolation_options isolation_from_environment();

/// what the body running in a worker can do
class worker_link {
 public:
  /// records the case about to be checked (the case in flight if the worker dies) and
  /// restarts the watchdog's clock
  void record_case(const norm_case& c);
  /// restarts the watchdog's clock
  void heartbeat();
  /// sends a progress message (delivered to run_in_worker's on_progress)
  void send_progress(const std::string& payload);
  /// from now on every plugin call of this process restarts the watchdog's clock and is
  /// recorded as the call in flight (the worker does this before its body runs)
  void observe_calls();

  struct region;  // the shared memory layout (worker.cpp)
  worker_link(region* shared, int fd, std::size_t capacity) : shared_(shared), fd_(fd), capacity_(capacity) {}

 private:
  region* shared_;
  int fd_;
  std::size_t capacity_;
};

/// Inside a worker: ends it now, as a failure of the property it runs, with WHY as the verdict
/// and the case in flight as the counterexample (not shrunk). For a state no later case can be
/// trusted in, e.g. a device context lost to a sticky fault: the next property gets a fresh
/// worker, and so a fresh context. Outside a worker (NORMCHECK_ISOLATION=off) it throws
/// std::runtime_error, a harness error: the campaign cannot go on in this process.
[[noreturn]] void abandon_worker(const std::string& why);

/// in a worker about to die of a fault (a signal handler's last words: a read of an arena's
/// guard page, arena.hpp page_guard): what it saw, for worker_death::fault. Copies at most the
/// region's room, no allocation; a no-op outside a worker
void note_fault(const char* what);

/// how a worker ended without sending its result
struct worker_death {
  int signal = 0;          ///< the signal that killed it (0: it exited)
  int exit_status = -1;    ///< its exit status when it exited
  bool hang = false;       ///< the watchdog killed it
  double timeout = 0;      ///< the watchdog's limit, for the message
  std::string sent_error;  ///< the worker could not send its result (why), though it ended normally
  std::string abandoned;   ///< the worker gave up on purpose (why): abandon_worker
  std::optional<norm_case> in_flight;  ///< the case it was checking, when it fit the region
  std::string in_flight_summary;       ///< describe() of that case, or why there is none
  std::string call;                    ///< the plugin call in flight ("forward", ...), or empty
  std::string fault;                   ///< what the worker noted of its fault (note_fault), or empty

  /// "died by SIGSEGV (signal 11) in the plugin's forward", "exited with status 0 in the
  /// plugin's backward, before it finished (a plugin called exit()?)", "did not return from the
  /// plugin's forward within 60 s (NORMCHECK_CALL_TIMEOUT) and was killed (a hang)"
  std::string how() const;
  /// "the kernel's worker died by SIGSEGV (signal 11) while checking case <summary>"
  std::string verdict() const;
};

struct worker_result {
  std::optional<std::string> payload;  ///< what the body returned
  std::optional<worker_death> death;   ///< set instead when the worker died
};

/// runs body in a forked worker; the parent meanwhile delivers progress messages and runs the
/// watchdog. A body that throws makes run_in_worker throw std::runtime_error with its message
/// (a harness error, as it would be in-process).
worker_result run_in_worker(const std::function<std::string(worker_link&)>& body, const isolation_options& options,
                            const std::function<void(const std::string&)>& on_progress = {});

/// run_property in a worker. A death becomes a failed property: the verdict as its failure,
/// the case in flight as its counterexample and case file (write errors recorded, never thrown)
property_result run_property_isolated(const property& p, const kernel& k, const campaign_options& options,
                                      const isolation_options& isolation);

/// properties run at once, each in its own worker (isolation on; one at a time without it, in
/// this process). take(i) gives property i's result in the campaign's order, whichever finished
/// first; with one job it runs property i then. Progress comes to on_progress with the
/// property's index, one call at a time. stop() starts no property after those running.
class property_pool {
 public:
  property_pool(std::vector<const property*> selected, const kernel& k, campaign_options options,
                isolation_options isolation, std::size_t jobs,
                std::function<void(const progress&, std::size_t)> on_progress);
  ~property_pool();
  property_pool(const property_pool&) = delete;
  property_pool& operator=(const property_pool&) = delete;

  property_result take(std::size_t i);
  void stop();

 private:
  void work();
  property_result run(std::size_t i);

  std::vector<const property*> selected_;
  const kernel& k_;
  campaign_options options_;
  isolation_options isolation_;
  std::function<void(const progress&, std::size_t)> on_progress_;
  std::mutex mutex_;
  std::condition_variable done_;
  std::vector<std::optional<std::variant<property_result, std::exception_ptr>>> results_;
  std::size_t next_ = 0;
  bool stopped_ = false;
  std::vector<std::thread> threads_;
};

/// the machine a campaign ran on, for its reports: the plugin's device line (abi.h
/// nc_plugin.machine, asked in a worker for a device plugin), then the host's CPU, e.g.
/// "NVIDIA H100 80GB HBM3, cc 9.0, 132 SMs, driver 580.159.04, CUDA 13.0; host AMD EPYC 7B13, 16 cores"
std::string machine_line(const kernel& k, const isolation_options& isolation);

/// kernel::available() asked in a worker; throws std::runtime_error when the probe's worker dies
bool available_isolated(const kernel& k, const isolation_options& isolation);

/// select_backend with its device probe in a worker ("auto": cuda when its plugin loads and a
/// device answers, else simt)
kernel select_backend_isolated(const std::string& backend, const isolation_options& isolation,
                               std::string* why_not = nullptr);

/// what names the kernel under test: a program's flags, and the backend when nothing names one
struct kernel_choice {
  std::optional<std::string> kernel;   ///< --kernel PATH: a plugin
  std::optional<std::string> backend;  ///< --backend auto|cuda|simt: a shipped plugin
  std::string fallback = "auto";       ///< the backend when neither the flags nor the environment name one
};

/// the kernel under test, one rule for every program (the CLI's verbs, train, bench, the property
/// suite): --kernel loads a plugin, --backend picks a shipped plugin (both: a usage error); without
/// them NORMCHECK_KERNEL, then NORMCHECK_BACKEND, then the fallback. "auto" is cuda when its plugin
/// loads and a device answers (probed in a worker), else simt. Throws nc::usage_error for a backend
/// that is none, nc::skipped_error for cuda in a build without it. *said: what was chosen, a line
kernel resolve_kernel(const kernel_choice& choice, const isolation_options& isolation, std::string* said = nullptr);

/// the case file of a failure the worker could not report itself: written to
/// case_dir/NAME-SEED.case; on a write error returns "" and sets *error
std::string write_failure_case(const property& p, const kernel& k, const campaign_options& options,
                               const norm_case& c, const std::string& failure, std::string* error);

// what a worker sends, for the tests: every field, any bytes in a string. A result travels as
// the report's JSON (report.hpp to_json), a case as the binary wire format of worker.cpp
std::string encode_property_result(const property_result& r);
property_result decode_property_result(const std::string& bytes);
std::string encode_case(const norm_case& c);
norm_case decode_case(const std::string& bytes);

}  // namespace nc::harness
