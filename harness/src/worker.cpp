#include "normcheck/harness/worker.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <type_traits>

#include "normcheck/environment.hpp"
#include "normcheck/harness/case_file.hpp"
#include "normcheck/harness/exit_code.hpp"
#include "normcheck/harness/report.hpp"

namespace nc::harness {

// ---- the wire format: little-endian integers, doubles as their bits, strings as length + bytes

namespace {

class wire_writer {
 public:
  void u64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) out_ += char((v >> (8 * i)) & 0xff);
  }
  void i64(std::int64_t v) { u64(std::uint64_t(v)); }
  void f64(double v) { u64(std::bit_cast<std::uint64_t>(v)); }
  void str(const std::string& s) {
    u64(s.size());
    out_ += s;
  }
  void u32s(const std::vector<std::uint32_t>& v) {
    u64(v.size());
    const std::size_t at = out_.size();
    out_.resize(at + 4 * v.size());
    for (std::size_t i = 0; i < v.size(); ++i)
      for (int b = 0; b < 4; ++b) out_[at + 4 * i + b] = char((v[i] >> (8 * b)) & 0xff);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class wire_reader {
 public:
  explicit wire_reader(const std::string& in) : in_(in) {}
  std::uint64_t u64() {
    need(8);
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t(static_cast<unsigned char>(in_[at_ + i])) << (8 * i);
    at_ += 8;
    return v;
  }
  std::int64_t i64() { return std::int64_t(u64()); }
  double f64() { return std::bit_cast<double>(u64()); }
  std::string str() {
    const std::uint64_t n = u64();
    need(n);
    std::string s = in_.substr(at_, n);
    at_ += n;
    return s;
  }
  std::vector<std::uint32_t> u32s() {
    const std::uint64_t n = u64();
    if (n > (in_.size() - at_) / 4) fail();
    std::vector<std::uint32_t> v(n);
    for (std::size_t i = 0; i < n; ++i) {
      std::uint32_t x = 0;
      for (int b = 0; b < 4; ++b) x |= std::uint32_t(static_cast<unsigned char>(in_[at_ + 4 * i + b])) << (8 * b);
      v[i] = x;
    }
    at_ += 4 * n;
    return v;
  }
  void end() const {
    if (at_ != in_.size()) fail();
  }

 private:
  void need(std::uint64_t n) const {
    if (n > in_.size() - at_) fail();
  }
  [[noreturn]] void fail() const {
    throw std::runtime_error("a worker's message is malformed (at byte " + std::to_string(at_) + " of " +
                             std::to_string(in_.size()) + ")");
  }
  const std::string& in_;
  std::size_t at_ = 0;
};

void put_matrix(wire_writer& w, const matrix_layout& l) {
  w.i64(l.offset), w.i64(l.row_stride), w.i64(l.col_stride), w.i64(l.head_stride), w.i64(l.batch_stride);
}
void put_vector(wire_writer& w, const vector_layout& l) { w.i64(l.offset), w.i64(l.stride); }
matrix_layout get_matrix(wire_reader& r) {
  matrix_layout l;
  l.offset = r.i64(), l.row_stride = r.i64(), l.col_stride = r.i64(), l.head_stride = r.i64(), l.batch_stride = r.i64();
  return l;
}
vector_layout get_vector(wire_reader& r) {
  vector_layout l;
  l.offset = r.i64(), l.stride = r.i64();
  return l;
}

// bytes encode_case gives, without building it: the in-flight record checks the fit first
std::size_t encoded_size(const norm_case& c) {
  std::size_t bytes = 8 * (5 + 4 * 5 + 3 * 2) + 8 * (6 + 3 * 5) + 8 * (6 + 5);
  for (const auto* v : {&c.x, &c.gamma, &c.dy, &c.dy2, &c.residual, &c.residual_grad}) bytes += 8 + 4 * v->size();
  bytes += 8;
  for (const auto& [key, value] : c.parameters) bytes += 16 + key.size() + value.size();
  return bytes;
}

}  // namespace

std::string encode_case(const norm_case& c) {
  wire_writer w;
  w.i64(c.m), w.i64(c.n), w.u64(std::uint64_t(c.x_dtype)), w.u64(std::uint64_t(c.gamma_dtype));
  w.u64(std::bit_cast<std::uint32_t>(c.epsilon));
  for (const matrix_layout* l : {&c.layout.x, &c.layout.y, &c.layout.dy, &c.layout.dx}) put_matrix(w, *l);
  for (const vector_layout* l : {&c.layout.gamma, &c.layout.r, &c.layout.dgamma}) put_vector(w, *l);
  w.u32s(c.x), w.u32s(c.gamma), w.u32s(c.dy), w.u32s(c.dy2);
  w.u64(std::uint64_t(c.op.residual)), w.u64(c.op.in_place), w.u64(std::bit_cast<std::uint32_t>(c.op.weight_offset));
  w.u64(std::uint64_t(c.op.rows)), w.i64(c.heads), w.i64(c.tokens);
  for (const matrix_layout* l : {&c.layout.residual, &c.layout.residual_out, &c.layout.residual_grad}) put_matrix(w, *l);
  w.u32s(c.residual), w.u32s(c.residual_grad);
  w.u64(std::uint64_t(c.op.quant)), w.u64(std::uint64_t(c.op.scale)), w.u64(std::uint64_t(c.op.apply));
  w.i64(c.op.group), w.u64(std::bit_cast<std::uint32_t>(c.op.scale_floor)), w.u64(c.scale);
  put_matrix(w, c.layout.scale);
  w.u64(c.parameters.size());
  for (const auto& [key, value] : c.parameters) w.str(key), w.str(value);
  return w.take();
}

norm_case decode_case(const std::string& bytes) {
  wire_reader r(bytes);
  norm_case c;
  c.m = r.i64(), c.n = r.i64();
  c.x_dtype = nc_dtype(r.u64()), c.gamma_dtype = nc_dtype(r.u64());
  c.epsilon = std::bit_cast<float>(std::uint32_t(r.u64()));
  for (matrix_layout* l : {&c.layout.x, &c.layout.y, &c.layout.dy, &c.layout.dx}) *l = get_matrix(r);
  for (vector_layout* l : {&c.layout.gamma, &c.layout.r, &c.layout.dgamma}) *l = get_vector(r);
  c.x = r.u32s(), c.gamma = r.u32s(), c.dy = r.u32s(), c.dy2 = r.u32s();
  c.op.residual = nc_residual(r.u64()), c.op.in_place = std::uint32_t(r.u64());
  c.op.weight_offset = std::bit_cast<float>(std::uint32_t(r.u64()));
  c.op.rows = nc_rows(r.u64()), c.heads = r.i64(), c.tokens = r.i64();
  for (matrix_layout* l : {&c.layout.residual, &c.layout.residual_out, &c.layout.residual_grad}) *l = get_matrix(r);
  c.residual = r.u32s(), c.residual_grad = r.u32s();
  c.op.quant = nc_quant(r.u64()), c.op.scale = nc_scale(r.u64()), c.op.apply = nc_scale_apply(r.u64());
  c.op.group = std::int32_t(r.i64()), c.op.scale_floor = std::bit_cast<float>(std::uint32_t(r.u64()));
  c.scale = std::uint32_t(r.u64());
  c.layout.scale = get_matrix(r);
  const std::uint64_t count = r.u64();
  for (std::uint64_t i = 0; i < count; ++i) {
    std::string key = r.str();
    c.parameters[key] = r.str();
  }
  r.end();
  return c;
}

// a result travels as the report writes it (report.hpp): one serializer of a property's result
std::string encode_property_result(const property_result& p) { return to_json(p).dump(-1); }

property_result decode_property_result(const std::string& bytes) {
  return property_result_from_json(json::value::parse(bytes));
}

// ---- the environment

isolation_options isolation_from_environment() {
  isolation_options o;
  if (const char* text = std::getenv("NORMCHECK_ISOLATION"); text != nullptr && *text != '\0') {
    const std::string v = text;
    if (v == "on" || v == "1") o.enabled = true;
    else if (v == "off" || v == "0") o.enabled = false;
    else throw std::invalid_argument("NORMCHECK_ISOLATION = '" + v + "': must be on or off");
  }
  if (const char* text = std::getenv("NORMCHECK_CALL_TIMEOUT"); text != nullptr && *text != '\0') {
    char* end = nullptr;
    const double seconds = std::strtod(text, &end);
    if (*end != '\0' || !(seconds > 0) || !std::isfinite(seconds) || seconds > 86400)
      throw std::invalid_argument(std::string("NORMCHECK_CALL_TIMEOUT = '") + text +
                                  "': must be a number of seconds in (0, 86400]");
    o.call_timeout = seconds;
  }
  return o;
}

// ---- the shared region and the worker side

namespace {

using steady = std::chrono::steady_clock;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now().time_since_epoch()).count();
}

// a summary that always fits, for a case too large for the region
constexpr std::size_t summary_bytes = 4096;

enum class record_state : std::int64_t { none = 0, writing = 1, full = 2, summary_only = 3 };

}  // namespace

// lives at the start of the MAP_SHARED mapping; the case's bytes follow it. Only the worker
// writes, and the parent reads only after the worker is gone, so plain stores ordered by the
// state field suffice; the atomics keep the heartbeat readable while the worker runs.
struct worker_link::region {
  std::atomic<std::int64_t> heartbeat_ns;
  std::atomic<std::int64_t> state;
  std::atomic<std::int64_t> bytes;
  std::atomic<std::int64_t> cases_recorded;
  std::atomic<std::int64_t> in_case;  // 1 from record_case until the next progress message
  char call[32];                      // the plugin call in flight; empty between calls
  char fault[1024];                   // note_fault's text; empty unless the worker faulted
  char summary[summary_bytes];
};
static_assert(std::atomic<std::int64_t>::is_always_lock_free, "the heartbeat must work across processes");

namespace {
constexpr std::size_t data_offset = (sizeof(worker_link::region) + 63) / 64 * 64;
}

void worker_link::heartbeat() { shared_->heartbeat_ns.store(now_ns(), std::memory_order_relaxed); }

namespace {

// the region of the worker this process is, while it runs its body
worker_link::region* observed = nullptr;

// every plugin call restarts the watchdog's clock and is named in the region while it runs
void observe_call(const char* call) {
  worker_link::region* r = observed;
  if (r == nullptr) return;
  std::snprintf(r->call, sizeof r->call, "%s", call == nullptr ? "" : call);
  r->heartbeat_ns.store(now_ns(), std::memory_order_relaxed);
}

}  // namespace

void note_fault(const char* what) {
  worker_link::region* r = observed;
  if (r == nullptr) return;
  const std::size_t n = strnlen(what, sizeof r->fault - 1);
  std::memcpy(r->fault, what, n);
  r->fault[n] = '\0';
}

void worker_link::observe_calls() {
  observed = shared_;
  set_call_observer(&observe_call);
}

void worker_link::record_case(const norm_case& c) {
  shared_->state.store(std::int64_t(record_state::writing), std::memory_order_relaxed);
  const std::string summary = describe(c);
  const std::size_t s = std::min(summary.size(), summary_bytes - 1);
  std::memcpy(shared_->summary, summary.data(), s);
  shared_->summary[s] = '\0';
  char* data = reinterpret_cast<char*>(shared_) + data_offset;
  record_state done = record_state::summary_only;
  if (encoded_size(c) <= capacity_) {
    // the encoding is built once and copied: a case is checked against an exact oracle, which
    // costs far more than this copy
    const std::string bytes = encode_case(c);
    std::memcpy(data, bytes.data(), bytes.size());
    shared_->bytes.store(std::int64_t(bytes.size()), std::memory_order_relaxed);
    done = record_state::full;
  } else {
    shared_->bytes.store(std::int64_t(encoded_size(c)), std::memory_order_relaxed);
  }
  shared_->cases_recorded.fetch_add(1, std::memory_order_relaxed);
  shared_->in_case.store(1, std::memory_order_relaxed);
  shared_->state.store(std::int64_t(done), std::memory_order_release);
  heartbeat();
}

namespace {

enum message_kind : char { progress_message = 'p', result_message = 'r', error_message = 'e', abandon_message = 'a' };

// the pipe of the worker this process is, if it is one
int worker_fd = -1;

// all or nothing: false when the pipe is gone (the parent reads until the worker ends)
bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n, size -= std::size_t(n);
  }
  return true;
}

bool send_message(int fd, char kind, const std::string& payload) {
  std::string frame(1, kind);
  for (int i = 0; i < 8; ++i) frame += char((std::uint64_t(payload.size()) >> (8 * i)) & 0xff);
  frame += payload;
  return write_all(fd, frame.data(), frame.size());
}

}  // namespace

void worker_link::send_progress(const std::string& payload) {
  // the campaign reports progress once a case is done: a death after this is between cases
  shared_->in_case.store(0, std::memory_order_relaxed);
  heartbeat();
  send_message(fd_, progress_message, payload);
}

[[noreturn]] void abandon_worker(const std::string& why) {
  if (worker_fd < 0) throw std::runtime_error(why + " (with NORMCHECK_ISOLATION=off the campaign cannot go on)");
  send_message(worker_fd, abandon_message, why);
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(120);
}

// ---- deaths

namespace {

std::string signal_name(int sig) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
  if (const char* abbrev = sigabbrev_np(sig)) return std::string("SIG") + abbrev;
#endif
  return "signal";
}

std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", s);
  return text;
}

}  // namespace

std::string worker_death::how() const {
  if (!abandoned.empty()) return "stopped: " + abandoned;
  const std::string in = call.empty() ? "" : " in the plugin's " + call;
  if (hang)
    return (call.empty() ? "did not finish a case" : "did not return from the plugin's " + call) + " within " +
           seconds_text(timeout) + " s (NORMCHECK_CALL_TIMEOUT) and was killed (a hang)";
  if (signal != 0)
    return "died by " + signal_name(signal) + " (signal " + std::to_string(signal) + ")" + in + (fault.empty() ? "" : ": " + fault);
  if (!sent_error.empty()) return "could not send its result: " + sent_error;
  return "exited with status " + std::to_string(exit_status) + in + (in.empty() ? "" : ",") +
         " before it finished (a plugin called exit()?)";
}

std::string worker_death::verdict() const {
  return "the kernel's worker " + how() + " while checking case " + in_flight_summary;
}

// ---- the parent side

namespace {

// the worker's end: runs the body, sends what it returns, and never returns itself
[[noreturn]] void worker_main(const std::function<std::string(worker_link&)>& body, worker_link& link, int fd,
                              pid_t parent) {
  // a plugin's children (a compiler, a helper) die with the worker when the watchdog kills the group
  setpgid(0, 0);
  // ...and the worker, in a group of its own, dies with the harness: a mutation runner that
  // kills a timed-out `normcheck check` by its group would otherwise leave the worker running
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(122);
  worker_fd = fd;
  signal(SIGPIPE, SIG_IGN);
  // a crash is a finding with its case file; a core dump per crashing case would only fill the disk
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  int code = 0;
  try {
    link.heartbeat();
    link.observe_calls();
    const std::string payload = body(link);
    if (!send_message(fd, result_message, payload)) code = 121;
  } catch (const std::exception& e) {
    send_message(fd, error_message, e.what());
  } catch (...) {
    send_message(fd, error_message, "an exception that is not a std::exception");
  }
  // _exit: neither atexit handlers nor static destructors (a plugin's, a CUDA context's)
  // run in the worker; the parent owns stdout, which the worker has nothing buffered in
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(code);
}

class mapping {
 public:
  // the smaller of bytes and what the system grants, down to min_bytes
  mapping(std::size_t bytes, std::size_t min_bytes) : bytes_(bytes) {
    // MAP_NORESERVE: only the pages a case touches are ever backed; where the system still
    // refuses that much (strict overcommit), a smaller record, so larger cases give summaries
    for (;;) {
      ptr_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (ptr_ != MAP_FAILED || bytes_ / 4 < min_bytes) break;
      bytes_ /= 4;
    }
    if (ptr_ == MAP_FAILED)
      throw std::runtime_error(std::string("cannot map the worker's shared region: ") + std::strerror(errno));
  }
  ~mapping() { munmap(ptr_, bytes_); }
  mapping(const mapping&) = delete;
  mapping& operator=(const mapping&) = delete;
  void* get() const { return ptr_; }
  std::size_t size() const { return bytes_; }

 private:
  void* ptr_;
  std::size_t bytes_;
};

struct fd_guard {
  int fd = -1;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

worker_result run_in_worker(const std::function<std::string(worker_link&)>& body, const isolation_options& options,
                            const std::function<void(const std::string&)>& on_progress) {
  const mapping shared(data_offset + std::max<std::size_t>(options.record_bytes, 1 << 16), data_offset + (1 << 16));
  const std::size_t capacity = shared.size() - data_offset;
  auto* region = new (shared.get()) worker_link::region{};
  region->heartbeat_ns.store(now_ns());

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("cannot create the worker's pipe: ") + std::strerror(errno));
  fd_guard read_end{fds[0]}, write_end{fds[1]};

  // what stdio holds now would otherwise be written twice, once by a worker that exit()s
  std::fflush(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("cannot fork a worker: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    worker_link link(region, fds[1], capacity);
    worker_main(body, link, fds[1], parent);
  }
  setpgid(pid, pid);  // also here: the watchdog may need the group before the worker set it
  ::close(write_end.fd);
  write_end.fd = -1;
  fcntl(read_end.fd, F_SETFL, O_NONBLOCK);

  std::string buffer;
  std::optional<std::string> result, error, abandoned;
  bool eof = false, hang = false;
  std::optional<steady::time_point> result_at;
  const auto parse = [&] {
    for (;;) {
      if (buffer.size() < 9) return;
      std::uint64_t size = 0;
      for (int i = 0; i < 8; ++i) size |= std::uint64_t(static_cast<unsigned char>(buffer[1 + i])) << (8 * i);
      if (buffer.size() < 9 + size) return;
      std::string payload = buffer.substr(9, size);
      const char kind = buffer[0];
      buffer.erase(0, 9 + size);
      if (kind == progress_message) {
        if (on_progress) on_progress(payload);
      } else if (kind == result_message) {
        result = std::move(payload), result_at = steady::now();
      } else if (kind == error_message) {
        error = std::move(payload), result_at = steady::now();
      } else if (kind == abandon_message) {
        abandoned = std::move(payload);
      }
    }
  };
  const auto drain = [&] {
    char chunk[65536];
    for (;;) {
      const ssize_t n = ::read(read_end.fd, chunk, sizeof chunk);
      if (n > 0) {
        buffer.append(chunk, std::size_t(n));
        continue;
      }
      if (n == 0) eof = true;
      else if (errno == EINTR) continue;
      break;
    }
    parse();
  };
  const std::int64_t limit_ns = std::int64_t(options.call_timeout * 1e9);
  for (;;) {
    pollfd p{read_end.fd, POLLIN, 0};
    if (!eof) ::poll(&p, 1, 100);
    else ::usleep(20000);  // the pipe closed (a plugin closed descriptors?), the worker runs on
    drain();
    // look without reaping: while the worker is unreaped its pid, and so its group, is not reused
    siginfo_t info{};
    if (::waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) break;
    const bool stuck_after_result = result_at && steady::now() - *result_at > std::chrono::seconds(10);
    if (now_ns() - region->heartbeat_ns.load(std::memory_order_relaxed) > limit_ns || stuck_after_result) {
      if (!result && !error) hang = true;
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      break;
    }
  }
  ::kill(-pid, SIGKILL);  // whatever the worker left running in its group
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  drain();

  if (error) throw std::runtime_error(*error);
  worker_result out;
  if (result) {
    out.payload = std::move(result);
    return out;
  }
  worker_death d;
  d.hang = hang;
  d.timeout = options.call_timeout;
  if (abandoned) d.abandoned = *abandoned;
  if (!hang) {
    if (WIFSIGNALED(status)) d.signal = WTERMSIG(status);
    else if (WIFEXITED(status)) d.exit_status = WEXITSTATUS(status);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 121) d.sent_error = "its pipe to the harness was closed";
  }
  d.call = std::string(region->call, strnlen(region->call, sizeof region->call));
  d.fault = std::string(region->fault, strnlen(region->fault, sizeof region->fault));
  const auto state = record_state(region->state.load(std::memory_order_acquire));
  if (state == record_state::full) {
    try {
      d.in_flight = decode_case(std::string(reinterpret_cast<const char*>(shared.get()) + data_offset,
                                            std::size_t(region->bytes.load())));
      d.in_flight_summary = describe(*d.in_flight);
    } catch (const std::exception& e) {
      d.in_flight_summary = std::string(region->summary) + " (its record is unreadable: " + e.what() + ")";
    }
    if (region->in_case.load() == 0)
      d.in_flight_summary += " (between cases: that case, the last one checked, had finished)";
  } else if (state == record_state::summary_only) {
    d.in_flight_summary = std::string(region->summary) + " (" + std::to_string(region->bytes.load()) +
                          " bytes, too large for the in-flight record: no case file)";
  } else if (state == record_state::writing) {
    d.in_flight_summary = "(the worker died while recording it)";
  } else {
    d.in_flight_summary = "(none: it died before its first case)";
  }
  out.death = std::move(d);
  return out;
}

// ---- properties, probes, backends

std::string write_failure_case(const property& p, const kernel& k, const campaign_options& options,
                               const norm_case& c, const std::string& failure, std::string* error) {
  case_file file{c, {}};
  file.metadata = {{"origin", "property"},
                   {"property", p.name},
                   {"backend", k.backend()},
                   {"kernel", k.path()},
                   {"kernel_name", k.name()},
                   {"seed", std::to_string(options.seed)},
                   {"failure", failure.substr(0, failure.find('\n'))}};
  if (!options.machine.empty()) file.metadata["machine"] = options.machine;
  const std::string path = options.case_dir + "/" + p.name + "-" + std::to_string(options.seed) + ".case";
  try {
    write_case_file(path, file);
    return path;
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return "";
  }
}

namespace {

std::string encode_progress(const progress& p) {
  wire_writer w;
  w.i64(p.cases_done), w.i64(p.cases_planned), w.i64(p.shrinks), w.f64(p.seconds);
  return w.take();
}

progress decode_progress(const property& p, const std::string& bytes) {
  wire_reader r(bytes);
  progress g{&p, 0, 0, 0, 0};
  g.cases_done = r.i64(), g.cases_planned = r.i64(), g.shrinks = r.i64(), g.seconds = r.f64();
  r.end();
  return g;
}

}  // namespace

property_result run_property_isolated(const property& p, const kernel& k, const campaign_options& options,
                                      const isolation_options& isolation) {
  if (!isolation.enabled) return run_property(p, k, options);
  progress last{&p, 0, planned_cases(p, options), 0, 0};
  const auto start = steady::now();
  const worker_result w = run_in_worker(
      [&](worker_link& link) {
        campaign_options inner = options;
        inner.on_progress = [&link](const progress& g) { link.send_progress(encode_progress(g)); };
        inner.on_case = [&link](const norm_case& c) { link.record_case(c); };
        return encode_property_result(run_property(p, k, inner));
      },
      isolation,
      [&](const std::string& bytes) {
        last = decode_progress(p, bytes);
        if (options.on_progress) options.on_progress(last);
      });
  if (w.payload) return decode_property_result(*w.payload);

  const worker_death& d = *w.death;
  property_result r;
  r.name = p.name;
  r.family = p.family;
  r.planned = last.cases_planned;
  r.cases = last.cases_done;
  r.shrinks = last.shrinks;
  r.seconds = std::chrono::duration<double>(steady::now() - start).count();
  r.failed = true;
  r.failure = d.verdict();
  if (r.cases > 0) r.failure += "\n(" + std::to_string(r.cases) + " cases passed before it)";
  r.counterexample = d.in_flight_summary + "\n(not shrunk: a case that kills its worker is reported as it was drawn)\n";
  if (d.in_flight) {
    std::string error;
    r.case_file = write_failure_case(p, k, options, *d.in_flight, r.failure, &error);
    if (r.case_file.empty()) {
      r.case_file_error = error;
      case_file file{*d.in_flight, {{"property", p.name}, {"seed", std::to_string(options.seed)}}};
      r.unsaved_case = to_text(file);
    }
  }
  return r;
}

property_pool::property_pool(std::vector<const property*> selected, const kernel& k, campaign_options options,
                             isolation_options isolation, std::size_t jobs,
                             std::function<void(const progress&, std::size_t)> on_progress)
    : selected_(std::move(selected)),
      k_(k),
      options_(std::move(options)),
      isolation_(isolation),
      on_progress_(std::move(on_progress)),
      results_(selected_.size()) {
  // in-process properties share this process's state: one at a time
  if (!isolation_.enabled) jobs = 1;
  jobs = std::min(jobs, selected_.size());
  if (jobs > 1)
    for (std::size_t t = 0; t < jobs; ++t) threads_.emplace_back([this] { work(); });
}

property_pool::~property_pool() {
  stop();
  for (std::thread& t : threads_) t.join();
}

void property_pool::stop() {
  const std::lock_guard lock(mutex_);
  stopped_ = true;
}

property_result property_pool::run(std::size_t i) {
  campaign_options o = options_;
  o.on_progress = [this, i](const progress& p) {
    const std::lock_guard lock(mutex_);
    if (on_progress_) on_progress_(p, i);
  };
  return run_property_isolated(*selected_[i], k_, o, isolation_);
}

void property_pool::work() {
  for (;;) {
    std::size_t i = 0;
    {
      const std::lock_guard lock(mutex_);
      if (stopped_ || next_ == selected_.size()) return;
      i = next_++;
    }
    // a harness error reaches the caller from take(i), as it would without the pool
    std::variant<property_result, std::exception_ptr> r;
    try {
      r = run(i);
    } catch (...) {
      r = std::current_exception();
    }
    const std::lock_guard lock(mutex_);
    results_[i] = std::move(r);
    done_.notify_all();
  }
}

property_result property_pool::take(std::size_t i) {
  if (threads_.empty()) return run(i);
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return results_[i].has_value(); });
  if (auto* error = std::get_if<std::exception_ptr>(&*results_[i])) std::rethrow_exception(*error);
  return std::move(std::get<property_result>(*results_[i]));
}

namespace {

// "AMD EPYC 7B13, 2 cores": /proc/cpuinfo's model name and the cores this process may use
std::string host_cpu() {
  std::string model = "an unnamed CPU";
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      model = line.substr(line.find(':') + 1);
      model.erase(0, model.find_first_not_of(" \t"));
      break;
    }
  const unsigned cores = std::thread::hardware_concurrency();
  return model + ", " + std::to_string(cores) + (cores == 1 ? " core" : " cores");
}

}  // namespace

std::string machine_line(const kernel& k, const isolation_options& isolation) {
  std::string device;
  if (isolation.enabled && k.device_memory()) {
    const worker_result w = run_in_worker([&](worker_link&) { return k.machine(); }, isolation);
    device = w.payload ? *w.payload : "(its machine line's worker " + w.death->how() + ")";
  } else {
    device = k.machine();
  }
  return (device.empty() ? "" : device + "; ") + "host " + host_cpu();
}

bool available_isolated(const kernel& k, const isolation_options& isolation) {
  if (!isolation.enabled) return k.available();
  const worker_result w = run_in_worker([&](worker_link&) { return std::string(k.available() ? "1" : "0"); }, isolation);
  if (w.payload) return *w.payload == "1";
  throw std::runtime_error("kernel plugin '" + k.path() + "': asking whether its device is present (synchronize), " +
                           "its worker " + w.death->how());
}

kernel resolve_kernel(const kernel_choice& choice, const isolation_options& isolation, std::string* said) {
  if (choice.kernel && choice.backend)
    throw usage_error("--kernel and --backend exclude each other: a plugin has its backend");
  std::optional<std::string> path = choice.kernel;
  if (!path && !choice.backend) path = environment_value("NORMCHECK_KERNEL");
  if (path) {
    kernel k = kernel::load(*path);
    if (said)
      *said = "kernel: " + k.path() + " (" + k.name() + ", backend " + k.backend() + ", ABI version " +
              std::to_string(k.abi_version()) + ")" + (choice.kernel ? "" : " from NORMCHECK_KERNEL");
    return k;
  }
  const std::string backend = choice.backend.value_or(environment_value("NORMCHECK_BACKEND").value_or(choice.fallback));
  if (backend != "auto" && backend != "cuda" && backend != "simt")
    throw usage_error("--backend '" + backend + "' (or NORMCHECK_BACKEND): must be auto, cuda or simt");
  if (backend == "cuda" && !std::filesystem::exists(kernel::shipped_path("cuda")))
    throw skipped_error("the cuda backend needs a cuda build and a GPU (this build has no " +
                        kernel::shipped_path("cuda") + ")");
  std::string why_not;
  kernel k = select_backend_isolated(backend, isolation, &why_not);
  if (said)
    *said = "backend: " + k.backend() + " (" + k.name() + " from " + k.path() + ")" +
            (backend == "auto" ? ", chosen by --backend auto" : "") + (why_not.empty() ? "" : "; not cuda: " + why_not);
  return k;
}

kernel select_backend_isolated(const std::string& backend, const isolation_options& isolation, std::string* why_not) {
  if (!isolation.enabled) return select_backend(backend, why_not);
  if (backend == "simt" || backend == "cuda") return kernel::shipped(backend);
  try {
    kernel cuda = kernel::shipped("cuda");
    if (available_isolated(cuda, isolation)) return cuda;
    if (why_not) *why_not = "the cuda plugin loads but no CUDA device is present";
  } catch (const std::exception& e) {
    if (why_not) *why_not = e.what();
  }
  return kernel::shipped("simt");
}

}  // namespace nc::harness
