#include "process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace nc::mutants {

child::child(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env,
             const std::filesystem::path& cwd, const std::filesystem::path& log, double timeout_seconds) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const auto eq = entry.find('=');
    if (eq != std::string::npos) vars[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [k, v] : env) vars[k] = v;
  std::vector<std::string> env_text;
  for (const auto& [k, v] : vars) env_text.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_text) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  // case files a failing property writes land in the run's own folder
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group: the pid
  start_ = std::chrono::steady_clock::now();
  deadline_ = start_ + std::chrono::microseconds(static_cast<long long>(timeout_seconds * 1e6));
  const int rc = posix_spawn(&pid_, args[0], &actions, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
}

child::child(child&& other) noexcept
    : pid_(other.pid_), start_(other.start_), deadline_(other.deadline_), result_(other.result_), done_(other.done_) {
  other.pid_ = -1;
  other.done_ = true;
}

child::~child() {
  if (pid_ > 0 && !done_) {
    ::kill(-pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
}

bool child::poll() {
  if (done_) return true;
  // look without reaping: while the child is unreaped its pid, and so its process group id,
  // cannot be reused, so killing the group can only reach what it started
  siginfo_t info{};
  const int r = ::waitid(P_PID, id_t(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
  const bool running = r == 0 && info.si_pid == 0;
  const auto now = std::chrono::steady_clock::now();
  if (running && now < deadline_) return false;
  if (running) result_.timed_out = true;
  ::kill(-pid_, SIGKILL);  // the timed-out child, or what an ended child left running
  int status = 0;
  ::waitpid(pid_, &status, 0);
  if (WIFEXITED(status)) result_.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result_.signal = WTERMSIG(status), result_.exit_code = -1;
  result_.seconds = std::chrono::duration<double>(now - start_).count();
  done_ = true;
  return true;
}

process_result child::wait() {
  while (!poll()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return result_;
}

std::string tail_of(const std::filesystem::path& file, std::size_t max_bytes) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff from = size > std::streamoff(max_bytes) ? size - std::streamoff(max_bytes) : 0;
  in.seekg(from);
  std::string text(static_cast<std::size_t>(size - from), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  return (from > 0 ? "…" : "") + text;
}

}  // namespace nc::mutants
