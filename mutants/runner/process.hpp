// One child process of the mutation runner: a fresh `normcheck check` per mutant, because a
// GPU fault poisons the CUDA context of the process it happens in.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace nc::mutants {

struct process_result {
  int exit_code = -1;   // the exit status, or -1 when killed by a signal
  int signal = 0;       // the signal that ended it, 0 if it exited
  bool timed_out = false;
  double seconds = 0;
};

/// A started child. Its stdout and stderr go to one log file; it runs in its own process
/// group, so a timeout kills it and whatever it started, and nothing else.
class child {
 public:
  /// Starts argv[0] (a path) in folder cwd (empty: this process's) with the parent's
  /// environment plus env (name, value) overrides.
  child(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env,
        const std::filesystem::path& cwd, const std::filesystem::path& log, double timeout_seconds);
  child(const child&) = delete;
  child& operator=(const child&) = delete;
  child(child&& other) noexcept;
  ~child();

  /// True once the child has ended (by itself or killed at its deadline); result() is then set.
  bool poll();
  /// Waits until the child ends.
  process_result wait();
  const process_result& result() const { return result_; }

 private:
  pid_t pid_ = -1;
  std::chrono::steady_clock::time_point start_, deadline_;
  process_result result_;
  bool done_ = false;
};

/// The last max_bytes of a file (a log), for an error message.
std::string tail_of(const std::filesystem::path& file, std::size_t max_bytes = 2000);

}  // namespace nc::mutants
